"""Turn a judge's reply into a verdict: lenient about the format, strict about the value.

Small local models and chat providers fence, wrap, single-quote and otherwise mangle the JSON
they are asked for; refusing all of that would make runs flaky for no gain.  The value itself
is never guessed, though: an ambiguous, non-whole or out-of-range verdict raises, because a
retry is cheaper than a wrong pass.

Decisions on the ambiguous cases (the tests pin each one down):

* A check is a JSON boolean, or a string whose first word is true/yes/positive or
  false/no/negative ("True, because ...").  Numbers (even 1 and 0) are rejected, and so is a
  leading clause that also holds the opposite word or a hedge ("true/false", "yes or no",
  "mostly true", "not true").
* A score is an int, a whole float (7.0), or a string that starts with one ("7", "7/9",
  "7 out of 9", "Score: 7").  A stated scale must be /9 ("7/10" is rejected: the number means
  something else there).  Ranges ("7-8"), non-whole numbers (7.5), booleans and anything
  outside MIN_SCORE..MAX_SCORE raise; nothing is ever clamped.
* Confidence is advisory, so a bad one costs no retry: a number or numeric string in [0, 1]
  is kept, "85%" becomes 0.85, and anything else (1.5, 85, "high", a boolean) becomes None.
* Several JSON objects carrying a value: the first one is used, but only if every one of them
  agrees; a judge that contradicts itself gets a retry.
* Missing justification/reasoning become "", after trying the usual synonyms
  ("explanation", "reason", "rationale"; "analysis", "thoughts", "thinking").  The value may
  also be spelt "verdict", "answer", "result" or "score" when "value" is absent, and it may sit
  in one nested wrapper object such as {"verdict": {...}}.
* A leading <think>...</think> block (reasoning models) is dropped before anything else.
* Plain text is accepted only when it starts with the verdict ("False - the agent ...",
  "7/9: ..."); the rest becomes the justification.  A plain-text score that looks like a
  numbered list item ("1. First, ...") is rejected.  A reply that starts with "No," is read as
  False: a refusal phrased that way cannot be told apart from a verdict.
"""

from __future__ import annotations

import ast
import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, NoReturn

from .errors import VerdictUnparsable

if TYPE_CHECKING:
    from .verdict import Kind

__all__ = [
    "MAX_SCORE",
    "MIN_SCORE",
    "ParsedReply",
    "coerce_check",
    "coerce_score",
    "parse_reply",
]

from .scale import MAX_SCORE, MIN_SCORE

_TRUE_WORDS = frozenset({"true", "yes", "positive"})
_FALSE_WORDS = frozenset({"false", "no", "negative"})
# Words that make a leading clause too vague to read as a verdict.
_HEDGES = frozenset(
    {"or", "not", "maybe", "partially", "partly", "mostly", "somewhat", "unclear", "unsure"}
)

_VALUE_KEYS = ("value", "verdict", "answer", "result", "score")
_JUSTIFICATION_KEYS = ("justification", "explanation", "reason", "rationale")
_REASONING_KEYS = ("reasoning", "analysis", "thoughts", "thinking", "chain_of_thought")
_CONFIDENCE_KEYS = ("confidence",)

_QUOTE_LIMIT = 200
# Bounds the work on pathological replies (thousands of stray braces) while staying deterministic.
_MAX_OBJECT_ATTEMPTS = 64
_MAX_WRAPPER_DEPTH = 3

_LEADING_JUNK = r"""[\s*"'`_#>(\[]*"""
_CHECK_LEAD = re.compile(
    _LEADING_JUNK
    + r"""(?:(?:answer|verdict|value|result)\s*[:=]\s*[*"'`]*\s*)?"""
    + r"([A-Za-z]+)\b",
    re.IGNORECASE,
)
_SCORE_LEAD = re.compile(
    _LEADING_JUNK
    + r"""(?P<prefix>(?:score|rating|value|verdict|answer)\s*(?:is\s*)?[:=]?\s*[*"'`]*\s*)?"""
    + r"(?P<num>[+-]?\d+(?:\.\d+)?)"
    + r"""(?:\s*[*"'`]*\s*(?:/|out\s+of)\s*(?P<scale>\d+(?:\.\d+)?))?"""
    + r"(?![A-Za-z0-9%]|[.,]\d)",
    re.IGNORECASE,
)
_SCORE_RANGE_AFTER = re.compile(r"\s*(?:-|\u2013|\u2014|to\b|or\b|and\b)\s*[+-]?\d", re.IGNORECASE)
_LIST_ITEM_AFTER = re.compile(r"[.)][ \t]*\S")
_CLAUSE_END = re.compile(r"[.,;:!?\n\u2013\u2014()]|\s-\s")
_REST_JUNK = re.compile(r"""^[\s.,;:!?\-\u2013\u2014*_)\]"'`]+""")
_CONFIDENCE_TEXT = re.compile(r"\s*(\d*\.?\d+)\s*(%?)\s*\Z")
_WORD = re.compile(r"[a-z]+")
# Reasoning models (Qwen3, DeepSeek-R1) think aloud first; drafts in there are not the verdict.
_THINK_BLOCK = re.compile(r"<(think|thinking|reasoning)>.*?</\1>", re.DOTALL | re.IGNORECASE)


@dataclass(frozen=True)
class ParsedReply:
    """A judge reply reduced to what a Verdict needs; its value is already checked."""

    value: bool | int
    justification: str
    reasoning: str
    confidence: float | None


def parse_reply(text: str | None, kind: Kind) -> ParsedReply:
    """Extract the verdict from a judge reply, or raise VerdictUnparsable saying what was wrong."""
    if kind not in ("check", "score"):
        raise ValueError(f"kind must be 'check' or 'score', not {kind!r}")
    raw = text or ""
    if text is None:
        _fail("the judge returned no reply (None)", kind, raw)
    if not text.strip():
        _fail("the reply is empty", kind, raw)
    body = _unwrap_json_string(_THINK_BLOCK.sub("", text))

    found: list[tuple[bool | int, list[dict[str, object]]]] = []
    saw_object = False
    for obj in _json_objects(body):
        saw_object = True
        path = _verdict_path(obj, 0)
        if path is None:
            continue
        raw_value = next(path[0][key] for key in _VALUE_KEYS if key in path[0])
        try:
            value = _coerce(raw_value, kind)
        except ValueError as exc:
            _fail(f"the JSON value is unusable: {exc}", kind, raw)
        found.append((value, path))

    if found:
        value, path = found[0]
        if any(other != value for other, _ in found[1:]):
            shown = ", ".join(repr(v) for v, _ in found)
            _fail(f"the reply holds contradicting verdicts ({shown})", kind, raw)
        return ParsedReply(
            value=value,
            justification=_as_text(_first_present(path, _JUSTIFICATION_KEYS)),
            reasoning=_as_text(_first_present(path, _REASONING_KEYS)),
            confidence=_coerce_confidence(_first_present(path, _CONFIDENCE_KEYS)),
        )

    try:
        return _parse_plain(body, kind)
    except ValueError as exc:
        reason = "the JSON object has no 'value'" if saw_object else f"no JSON object, and {exc}"
        _fail(reason, kind, raw)


def coerce_check(value: object) -> bool:
    """A check's value as a bool; strict, since a misread True would pass a failing claim."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return _match_check(value)[0]
    raise ValueError(f"{_short(value)} is not true or false")


def coerce_score(value: object) -> int:
    """A score's value as an int in MIN_SCORE..MAX_SCORE; never clamped, never rounded."""
    if isinstance(value, bool):  # bool is an int subclass; True is not a score of 1
        raise ValueError(f"{value!r} is a boolean, not a score")
    if isinstance(value, int):
        return _in_range(value)
    if isinstance(value, float):
        if not math.isfinite(value) or not value.is_integer():
            raise ValueError(f"{value!r} is not a whole number")
        return _in_range(int(value))
    if isinstance(value, str):
        return _match_score(value, plain=False)[0]
    raise ValueError(f"{_short(value)} is not a score")


# --- value coercion -------------------------------------------------------------------------


def _coerce(value: object, kind: Kind) -> bool | int:
    return coerce_check(value) if kind == "check" else coerce_score(value)


def _match_check(text: str) -> tuple[bool, int]:
    """The verdict word leading ``text`` and where it ends; raises when absent or hedged."""
    match = _CHECK_LEAD.match(text)
    if match is None:
        raise ValueError(f"{_short(text)} does not start with true or false")
    word = match.group(1).lower()
    if word in _TRUE_WORDS:
        verdict = True
    elif word in _FALSE_WORDS:
        verdict = False
    else:
        raise ValueError(f"{_short(text)} does not start with true or false")
    clause = _CLAUSE_END.split(text[match.start(1) :], maxsplit=1)[0]
    opposite = _FALSE_WORDS if verdict else _TRUE_WORDS
    if set(_WORD.findall(clause.lower())) & (opposite | _HEDGES):
        raise ValueError(f"{_short(text)} is ambiguous")
    return verdict, match.end()


def _match_score(text: str, *, plain: bool) -> tuple[int, int]:
    """The score leading ``text`` and where it ends; raises on ranges, other scales, list items."""
    match = _SCORE_LEAD.match(text)
    if match is None:
        raise ValueError(f"{_short(text)} does not start with a whole number")
    scale = match.group("scale")
    if scale is not None and float(scale) != MAX_SCORE:
        raise ValueError(f"{_short(text)} is on a scale other than /{MAX_SCORE}")
    if _SCORE_RANGE_AFTER.match(text, match.end()):
        raise ValueError(f"{_short(text)} looks like a range, not one score")
    if (
        plain
        and scale is None
        and match.group("prefix") is None
        and _LIST_ITEM_AFTER.match(text, match.end())
    ):
        raise ValueError(f"{_short(text)} looks like a numbered list, not a score")
    number = match.group("num")
    if "." in number:
        as_float = float(number)
        if not as_float.is_integer():
            raise ValueError(f"{number} is not a whole number")
        score = int(as_float)
    else:
        score = int(number)
    return _in_range(score), match.end()


def _in_range(score: int) -> int:
    if not MIN_SCORE <= score <= MAX_SCORE:
        raise ValueError(f"{score} is outside {MIN_SCORE}..{MAX_SCORE}")
    return score


def _coerce_confidence(value: object) -> float | None:
    """Confidence in [0, 1], or None: it is advisory, so a bad one is dropped, never retried."""
    if isinstance(value, bool):
        return None
    try:
        if isinstance(value, int | float):
            number = float(value)
        elif isinstance(value, str):
            match = _CONFIDENCE_TEXT.match(value)
            if match is None:
                return None
            number = float(match.group(1)) / (100 if match.group(2) else 1)
        else:
            return None
    except OverflowError:
        return None
    if not math.isfinite(number) or not 0.0 <= number <= 1.0:
        return None
    return number


# --- finding the JSON -----------------------------------------------------------------------


def _unwrap_json_string(text: str) -> str:
    """A reply that is itself a JSON string (double-encoded JSON) is parsed from its content."""
    try:
        decoded = json.loads(text)
    except (ValueError, RecursionError):
        return text
    return decoded if isinstance(decoded, str) else text


def _json_objects(text: str) -> list[Mapping[object, object]]:
    """Every outermost parseable ``{...}`` in ``text``, left to right."""
    objects: list[Mapping[object, object]] = []
    start = text.find("{")
    attempts = 0
    while start != -1 and attempts < _MAX_OBJECT_ATTEMPTS:
        attempts += 1
        end = _matching_brace(text, start)
        loaded = _load_object(text[start : end + 1]) if end is not None else None
        if end is not None and loaded is not None:
            objects.append(loaded)
            start = text.find("{", end + 1)
        else:
            # Not an object here; one may still start inside (prose braces, a broken wrapper).
            start = text.find("{", start + 1)
    return objects


def _matching_brace(text: str, start: int) -> int | None:
    """Index of the brace closing the one at ``start``, skipping quoted strings of either kind."""
    depth = 0
    quote = ""
    escaped = False
    for index in range(start, len(text)):
        char = text[index]
        if quote:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == quote:
                quote = ""
        elif char in "\"'":
            quote = char
        elif char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return index
    return None


def _load_object(candidate: str) -> Mapping[object, object] | None:
    """Strict JSON first, then repaired JSON, then a Python literal as the last resort."""
    loaders: Sequence[Callable[[], object]] = (
        lambda: json.loads(candidate, strict=False),
        lambda: json.loads(_rewrite(candidate, python=False), strict=False),
        lambda: ast.literal_eval(_rewrite(candidate, python=True)),
    )
    for load in loaders:
        try:
            loaded = load()
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        if isinstance(loaded, dict):
            return loaded
    return None


def _rewrite(text: str, *, python: bool) -> str:
    """Drop trailing commas and escape raw control characters inside strings.

    With ``python`` also spell JSON's true/false/null the Python way, so a single-quoted
    dict that mixes both styles still loads through ``ast.literal_eval``.
    """
    out: list[str] = []
    quote = ""
    escaped = False
    index = 0
    length = len(text)
    while index < length:
        char = text[index]
        if quote:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == quote:
                quote = ""
            elif char in "\n\r\t":
                char = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}[char]
            out.append(char)
            index += 1
        elif char in "\"'":
            quote = char
            out.append(char)
            index += 1
        elif char == ",":
            ahead = index + 1
            while ahead < length and text[ahead].isspace():
                ahead += 1
            if ahead >= length or text[ahead] not in "}]":
                out.append(char)
            index += 1
        elif char.isalpha() or char == "_":
            end = index
            while end < length and (text[end].isalnum() or text[end] == "_"):
                end += 1
            word = text[index:end]
            if python:
                word = {"true": "True", "false": "False", "null": "None"}.get(word, word)
            out.append(word)
            index = end
        else:
            out.append(char)
            index += 1
    return "".join(out)


def _verdict_path(obj: Mapping[object, object], depth: int) -> list[dict[str, object]] | None:
    """The dict holding the value, followed by its wrappers; None if there is no single one."""
    normalised = {_normalise_key(key): item for key, item in reversed(list(obj.items()))}
    if any(key in normalised and not _is_mapping(normalised[key]) for key in _VALUE_KEYS):
        return [normalised]
    if depth >= _MAX_WRAPPER_DEPTH:
        return None
    inner = [
        path
        for item in normalised.values()
        if isinstance(item, Mapping) and (path := _verdict_path(item, depth + 1)) is not None
    ]
    if len(inner) != 1:
        return None
    return [*inner[0], normalised]


def _normalise_key(key: object) -> str:
    return str(key).strip().lower().replace(" ", "_").replace("-", "_")


def _is_mapping(value: object) -> bool:
    return isinstance(value, Mapping)


def _first_present(path: Sequence[Mapping[str, object]], keys: Sequence[str]) -> object:
    """The first non-null, non-object entry under ``keys``, innermost dict first."""
    for mapping in path:
        for key in keys:
            item = mapping.get(key)
            if item is not None and not isinstance(item, Mapping):
                return item
    return None


def _as_text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, list | tuple):
        return " ".join(part for part in (_as_text(item) for item in value) if part)
    return str(value)


# --- plain text and errors ------------------------------------------------------------------


def _parse_plain(text: str, kind: Kind) -> ParsedReply:
    """A reply with no JSON that starts with its verdict; the rest is the justification."""
    stripped = text.strip()
    if stripped[:1] in ("{", "[") or stripped.startswith("```"):
        raise ValueError("the text starts like JSON but is malformed or cut short")
    if stripped.startswith("<"):
        raise ValueError("it is markup (an HTML page?), not a verdict")
    value: bool | int
    if kind == "check":
        value, end = _match_check(stripped)
    else:
        value, end = _match_score(stripped, plain=True)
    rest = _REST_JUNK.sub("", stripped[end:]).strip()
    return ParsedReply(value=value, justification=rest, reasoning="", confidence=None)


def _expected(kind: Kind) -> str:
    if kind == "check":
        return (
            'a JSON object like {"value": true or false, "justification": "..."}, '
            "or text starting with True or False"
        )
    return (
        f'a JSON object like {{"value": <integer {MIN_SCORE}..{MAX_SCORE}>, '
        f'"justification": "..."}}, or text starting with a score such as "7/{MAX_SCORE}"'
    )


def _short(value: object) -> str:
    shown = repr(value)
    return shown if len(shown) <= 60 else shown[:57] + "..."


def _quote(text: str) -> str:
    if not text:
        return "an empty reply"
    if len(text) <= _QUOTE_LIMIT:
        return repr(text)
    return f"{text[:_QUOTE_LIMIT]!r}... ({len(text)} characters in all)"


def _fail(reason: str, kind: Kind, raw: str) -> NoReturn:
    raise VerdictUnparsable(
        f"Unparsable judge reply: {reason}. Expected {_expected(kind)}; received {_quote(raw)}.",
        raw_reply=raw,
    )
