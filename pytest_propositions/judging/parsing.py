"""Turn a judge's reply into a verdict: lenient about the format, strict about the meaning.

Judges fence, wrap, single-quote and otherwise mangle the JSON they are asked for; refusing all
of that would make runs flaky for no gain.  The meaning is never guessed, though: a wrong pass
is the worst outcome, so anything that could be read two ways raises ``VerdictUnparsable``
(the judge is asked once more; nothing is cached).  The grammar, which the tests pin down:

Format (lenient)
* A leading <think>...</think> block is dropped; a reply that is a JSON string, or one fenced
  code block, is read from its inside.
* JSON: every outermost object in the text, strict JSON first, then with raw newlines escaped
  and trailing commas dropped, then as a Python literal.  The value is "value" (or "verdict",
  "answer", "result", "score"), possibly in one wrapper object such as {"verdict": {...}}.
  Several objects must agree.  Prose around the JSON is allowed, but an explicit verdict
  statement in it (below) that differs from the JSON's value raises.
* Every key that names a verdict, at any depth of an object (lists included) and in any case:
  "value", "verdict", "answer", "result", "score", "holds", "rating", "grade", "decision",
  "conclusion", "judgment", "outcome", "truth", "is_true", "passes", "passed", "correct",
  "is_correct". Each must agree with the verdict read, or the reply holds contradicting
  verdicts and raises (``{"answer": false, "value": true}``, ``{"verdict": {"value": false},
  "value": true}``). A value is read with the claim's rules, widened only to see disagreement:
  for a check, a number can only be placed without knowing its scale when it is 0 (false on
  every scale); any other number (1 may mean true, or a low score) disagrees with both
  verdicts, so ``{"value": true, "score": 0}`` and ``{"value": true, "score": 9}`` both raise;
  for a score, a boolean disagrees with every score (the threshold is not the judge's). A value
  that reads as no verdict at all (prose, a list) raises where it sits in the verdict's own
  object or one of its wrappers, and is ignored deeper down (a judge quoting a tool call's
  ``"result": "ok"`` as evidence). Null and "" are absent.
* An object that gives one key twice with different values (``{"value": false, "value":
  true}``, or "value" and "Value") is never read last-key-wins or first-key-wins: it holds
  contradicting answers, and raises like two disagreeing objects do; so does a Python-literal
  dict that repeats a key.
* Justification/reasoning synonyms ("explanation", "reason", "rationale"; "analysis",
  "thoughts", "thinking"); missing ones become "".  Confidence is advisory: a number or numeric
  string in [0, 1] is kept, "85%" becomes 0.85, anything else becomes None.

Meaning (strict): a check
* JSON true/false.  Numbers (even 1 and 0) are rejected.
* Free text (a whole reply with no JSON verdict, or a JSON value that is a string) is read by
  one rule, never by its first cue.  It is a verdict when it is
  - the whole answer: one of true/false/yes/no/positive/negative, decorated at most with
    markdown, quotes and a final "." or "!" ("True", "no.", "**Yes.**"); or
  - holds explicit verdict statements, all agreeing:
    - an opening "True"/"False" closed by punctuation, a dash or "because" ("False - the agent
      never asked."), unless the next word takes it back ("True, but ...", "True, or not");
    - a label: "Verdict:", "Answer:", "Conclusion:", "Value:", "Result:" (or "the verdict is")
      followed by true/false/yes/no standing alone ("Verdict: false.");
    - "the claim (proposition, statement) is [not] true/false/correct/incorrect", led in at
      most by a connective ("so", "overall", "I think"); one that is negated from outside
      ("it is not the case that the claim is true"), conditional ("if ...") or "not false"
      raises;
  and no cue points the other way: the first word of the text if it is a verdict word ("True
  to his persona, ... the claim is false" and "Positive thinking aside, ..." both raise), the
  words true/false anywhere outside a statement, and any verdict word standing alone as a
  clause ("True, No.").
* So "Yes, I can help with that." and "No problem! ..." are not verdicts: yes/no/positive/
  negative count only as the whole answer or after a label.

Meaning (strict): a score
* JSON int, or a whole float (7.0); booleans, 7.5, and anything outside MIN_SCORE..MAX_SCORE
  raise; nothing is ever clamped or rounded.
* Free text is a score when it is the whole answer ("7", "7/9", "7 out of 9", "**7**.") or holds
  explicit score statements, all agreeing: an opening number closed by punctuation or a dash
  ("7/9: clear"; in a whole reply "1. First, ..." is a numbered list, not a score), a label
  ("Score: 6/9", "Rating: 6", "score of 6", "Verdict: 6"), or any "N/9" / "N out of 9".
  A stated scale must be /9 ("7/10" raises), ranges ("7-8", "7 or 8") and non-whole numbers
  raise, a statement under a condition ("if ...") raises, and no cue may disagree: a leading
  number that is not a statement ("9 out of the 12 events ... 2/9" raises) or a whole number
  standing alone as a clause ("9/9 is too generous. 2").
"""

from __future__ import annotations

import ast
import json
import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, NoReturn

from ..errors import JudgeReplyInvalid, VerdictUnparsable

if TYPE_CHECKING:
    from ..verdict import Kind

__all__ = [
    "MAX_SCORE",
    "MIN_SCORE",
    "ParsedReply",
    "coerce_check",
    "coerce_score",
    "parse_choices",
    "parse_reply",
]

from ..scale import MAX_SCORE, MIN_SCORE

_VALUE_KEYS = ("value", "verdict", "answer", "result", "score")
# Keys that name a verdict: the ones read above, and more that a judge may add beside them.
# None of the extra ones is read as the verdict; each must agree with it (see the module doc).
_VERDICT_KEYS = frozenset(
    (
        *_VALUE_KEYS,
        "holds",
        "rating",
        "grade",
        "decision",
        "conclusion",
        "judgment",
        "judgement",
        "outcome",
        "truth",
        "truth_value",
        "is_true",
        "passes",
        "passed",
        "pass",
        "correct",
        "is_correct",
    )
)
_JUSTIFICATION_KEYS = ("justification", "explanation", "reason", "rationale")
_REASONING_KEYS = ("reasoning", "analysis", "thoughts", "thinking", "chain_of_thought")
_CONFIDENCE_KEYS = ("confidence",)

_QUOTE_LIMIT = 200
# Bounds the work on pathological replies (thousands of stray braces) while staying deterministic.
_MAX_OBJECT_ATTEMPTS = 64
_MAX_WRAPPER_DEPTH = 3
# A verdict object is two or three levels deep; hundreds is a broken (or hostile) judge.
_MAX_NESTING = 32

_CONFIDENCE_TEXT = re.compile(r"\s*(\d*\.?\d+)\s*(%?)\s*\Z")
_WORD = re.compile(r"[a-z]+")
# A whole reply fenced as a code block: ```\nTrue\n``` is read as its inside.
_FENCE = re.compile(r"\A```[A-Za-z]*[ \t]*\n?(.*?)\n?```\Z", re.DOTALL)
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
    """Extract the verdict from a judge reply, or raise VerdictUnparsable saying what was wrong.

    A reply that breaks the plumbing rather than the grammar (text with an unpaired surrogate,
    nesting too deep to walk) raises its subclass ``JudgeReplyInvalid``.
    """
    if kind not in ("check", "score"):
        raise ValueError(f"kind must be 'check' or 'score', not {kind!r}")
    raw = text or ""
    if text is None:
        _fail("the judge returned no reply (None)", kind, raw)
    if not text.strip():
        _fail("the reply is empty", kind, raw)
    if _has_lone_surrogate(text):
        _fail_invalid(
            "the reply holds an unpaired surrogate, which no text encoding can store", raw
        )
    try:
        parsed = _parse(text, kind, raw)
    except RecursionError:
        _fail_invalid("the reply is nested too deeply to read", raw)
    texts = (parsed.justification, parsed.reasoning)
    if any(_has_lone_surrogate(part) for part in texts):
        _fail_invalid(
            "the reply's text holds an unpaired surrogate escape (such as \\ud800), which no "
            "text encoding can store",
            raw,
        )
    return parsed


def parse_choices(texts: Sequence[str], kind: Kind) -> ParsedReply:
    """The verdict of a response's choices: the first one's, when every other one agrees.

    A response should hold one choice; one holding several is read as one answer only when
    each gives the same verdict, since picking one of disagreeing answers would be a guess.
    """
    first = parse_reply(texts[0], kind)
    for index, other in enumerate(texts[1:], start=2):
        try:
            value: bool | int | str = parse_reply(other, kind).value
        except VerdictUnparsable:
            value = "no verdict"
        if value != first.value or type(value) is not type(first.value):
            _fail(
                f"the response holds {len(texts)} choices whose verdicts disagree: the first "
                f"says {first.value!r}, choice {index} {value!r}",
                kind,
                texts[0],
            )
    return first


class _RepeatedKey(Exception):
    """An object in the reply gives one key twice, with different values."""

    def __init__(self, key: str, values: list[object]) -> None:
        super().__init__(key)
        self.key = key
        self.values = values


def _same(values: list[object]) -> bool:
    shown = {json.dumps(value, sort_keys=True, default=repr) for value in values}
    return len(shown) == 1


def _check_pairs(pairs: Sequence[tuple[object, object]]) -> None:
    """Raise _RepeatedKey if a key (compared as the parser reads keys) has two values."""
    seen: dict[str, list[object]] = {}
    for key, value in pairs:
        seen.setdefault(_normalise_key(key), []).append(value)
    for key, values in seen.items():
        if len(values) > 1 and not _same(values):
            raise _RepeatedKey(key, values)


def _pairs_hook(pairs: list[tuple[str, object]]) -> dict[str, object]:
    _check_pairs(pairs)
    return dict(pairs)


def _check_literal_keys(text: str) -> None:
    """The same check for a Python literal, which ``ast.literal_eval`` reads last-key-wins."""
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            pairs: list[tuple[object, object]] = []
            for key, value in zip(node.keys, node.values, strict=True):
                if isinstance(key, ast.Constant):
                    try:
                        pairs.append((key.value, ast.literal_eval(value)))
                    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                        pairs.append((key.value, ast.dump(value)))
            _check_pairs(pairs)


def _parse(text: str, kind: Kind, raw: str) -> ParsedReply:
    try:
        return _parse_unambiguous(text, kind, raw)
    except _RepeatedKey as repeated:
        shown = ", ".join(_short(value) for value in repeated.values)
        verdicts = "verdicts" if repeated.key in _VALUE_KEYS else "answers"
        _fail(
            f"the reply holds contradicting {verdicts}: its JSON gives {repeated.key!r} more "
            f"than once ({shown})",
            kind,
            raw,
        )


def _parse_unambiguous(text: str, kind: Kind, raw: str) -> ParsedReply:
    body = _unwrap_json_string(_THINK_BLOCK.sub("", text))

    found: list[tuple[bool | int, list[dict[str, object]]]] = []
    spans: list[tuple[int, int]] = []
    saw_object = False
    for start, end, obj in _json_objects(body):
        saw_object = True
        spans.append((start, end))
        depth = _nesting(obj)
        if depth > _MAX_NESTING:
            _fail_invalid(f"the reply's JSON is nested {depth} levels deep", raw)
        levels = _verdict_path(obj, 0)
        if levels is None:
            continue
        path = [normalised for normalised, _ in levels]
        raw_value = next(path[0][key] for key in _VALUE_KEYS if key in path[0])
        try:
            value = _coerce(raw_value, kind)
        except ValueError as exc:
            _fail(f"the JSON value is unusable: {exc}", kind, raw)
        _check_verdict_keys(obj, {id(original) for _, original in levels}, value, kind, raw)
        found.append((value, path))

    if found:
        value, path = found[0]
        if any(other != value for other, _ in found[1:]):
            shown = ", ".join(repr(v) for v, _ in found)
            _fail(f"the reply holds contradicting verdicts ({shown})", kind, raw)
        _check_prose_agrees(body, spans, value, kind, raw)
        return ParsedReply(
            value=value,
            justification=_as_text(_first_present(path, _JUSTIFICATION_KEYS)),
            reasoning=_as_text(_first_present(path, _REASONING_KEYS)),
            confidence=_coerce_confidence(_first_present(path, _CONFIDENCE_KEYS)),
        )

    if "{" in body and _too_deep_to_load(body):
        _fail_invalid(f"the reply's JSON is nested more than {_MAX_NESTING} levels deep", raw)
    try:
        return _parse_plain(body, kind)
    except ValueError as exc:
        reason = "the JSON object has no 'value'" if saw_object else f"no JSON object, and {exc}"
        _fail(reason, kind, raw)


def _has_lone_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _nesting(value: object) -> int:
    """How deeply containers nest in a loaded value; iterative, so any depth is safe."""
    deepest = 0
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Mapping):
            children: Sequence[object] = list(item.values())
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        if deepest > _MAX_NESTING:
            return deepest
        stack.extend((child, depth + 1) for child in children)
    return deepest


def _scan(text: str, start: int, quotes: str) -> Iterator[tuple[int, str, str]]:
    """Each character of ``text`` from ``start``, with where it stands: ``"out"`` of any quoted
    string, ``"in"`` one (its quotes included), or ``"escaped"`` (after a backslash in one).
    The one quote-aware reading of a reply, for matching braces, measuring depth and rewriting."""
    quote = ""
    escaped = False
    for index in range(start, len(text)):
        char = text[index]
        if quote:
            if escaped:
                escaped = False
                yield index, char, "escaped"
                continue
            if char == "\\":
                escaped = True
            elif char == quote:
                quote = ""
            yield index, char, "in"
        elif char in quotes:
            quote = char
            yield index, char, "in"
        else:
            yield index, char, "out"


def _unquoted(text: str, start: int, quotes: str) -> Iterator[tuple[int, str]]:
    """Each character of ``text`` from ``start`` that stands outside a quoted string."""
    return ((index, char) for index, char, where in _scan(text, start, quotes) if where == "out")


def _too_deep_to_load(text: str) -> bool:
    """Whether brackets outside strings nest past the limit (json gives up with RecursionError)."""
    depth = 0
    for _, char in _unquoted(text, 0, '"'):
        if char in "{[":
            depth += 1
            if depth > _MAX_NESTING:
                return True
        elif char in "}]":
            depth = max(0, depth - 1)
    return False


def _check_prose_agrees(
    body: str, spans: list[tuple[int, int]], value: bool | int, kind: Kind, raw: str
) -> None:
    """Prose around the JSON may be anything but a different verdict ("False. {...true...}")."""
    pieces: list[str] = []
    position = 0
    for start, end in spans:
        pieces.append(body[position:start])
        position = end
    pieces.append(body[position:])
    prose = "\n".join(piece for piece in pieces if piece.strip())
    if not prose.strip():
        return
    try:
        stated = {s.value for s in _statements(prose, kind, plain=True, qualified="skip")}
    except ValueError as exc:
        _fail(f"the text around the JSON states an unusable verdict: {exc}", kind, raw)
    others = stated - {value}
    if others:
        shown = ", ".join(repr(other) for other in sorted(others, key=_order))
        _fail(f"the JSON says {value!r} but the text around it says {shown}", kind, raw)


def coerce_check(value: object) -> bool:
    """A check's value as a bool; strict, since a misread True would pass a failing claim."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        verdict = _read_prose(value, "check", plain=False)[0]
        assert isinstance(verdict, bool)
        return verdict
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
        score = _read_prose(value, "score", plain=False)[0]
        assert not isinstance(score, bool)
        return score
    raise ValueError(f"{_short(value)} is not a score")


# --- value coercion -------------------------------------------------------------------------


def _coerce(value: object, kind: Kind) -> bool | int:
    return coerce_check(value) if kind == "check" else coerce_score(value)


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


def _json_objects(text: str) -> list[tuple[int, int, Mapping[object, object]]]:
    """Every outermost parseable ``{...}`` in ``text``, left to right, with where it lies."""
    objects: list[tuple[int, int, Mapping[object, object]]] = []
    start = text.find("{")
    attempts = 0
    while start != -1 and attempts < _MAX_OBJECT_ATTEMPTS:
        attempts += 1
        end = _matching_brace(text, start)
        loaded = _load_object(text[start : end + 1]) if end is not None else None
        if end is not None and loaded is not None:
            objects.append((start, end + 1, loaded))
            start = text.find("{", end + 1)
        else:
            # Not an object here; one may still start inside (prose braces, a broken wrapper).
            start = text.find("{", start + 1)
    return objects


def _matching_brace(text: str, start: int) -> int | None:
    """Index of the brace closing the one at ``start``, skipping quoted strings of either kind."""
    depth = 0
    for index, char in _unquoted(text, start, "\"'"):
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return index
    return None


def _load_object(candidate: str) -> Mapping[object, object] | None:
    """Strict JSON first, then repaired JSON, then a Python literal as the last resort."""
    loaders: Sequence[Callable[[], object]] = (
        lambda: json.loads(candidate, strict=False, object_pairs_hook=_pairs_hook),
        lambda: json.loads(
            _rewrite(candidate, python=False), strict=False, object_pairs_hook=_pairs_hook
        ),
        lambda: _literal(_rewrite(candidate, python=True)),
    )
    for load in loaders:
        try:
            loaded = load()
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        if isinstance(loaded, dict):
            return loaded
    return None


def _literal(text: str) -> object:
    loaded = ast.literal_eval(text)
    if isinstance(loaded, dict):
        _check_literal_keys(text)
    return loaded


_CONTROL_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_PYTHON_WORDS = {"true": "True", "false": "False", "null": "None"}


def _rewrite(text: str, *, python: bool) -> str:
    """Drop trailing commas and escape raw control characters inside strings.

    With ``python`` also spell JSON's true/false/null the Python way, so a single-quoted
    dict that mixes both styles still loads through ``ast.literal_eval``.
    """
    out: list[str] = []
    word: list[str] = []
    for index, char, where in _scan(text, 0, "\"'"):
        if where == "out" and (char.isalpha() or char == "_" or (word and char.isalnum())):
            word.append(char)
            continue
        if word:
            spelled = "".join(word)
            out.append(_PYTHON_WORDS.get(spelled, spelled) if python else spelled)
            word.clear()
        if where == "in":
            out.append(_CONTROL_ESCAPES.get(char, char))
        elif where == "out" and char == ",":
            ahead = index + 1
            while ahead < len(text) and text[ahead].isspace():
                ahead += 1
            if ahead < len(text) and text[ahead] in "}]":
                continue  # a trailing comma
            out.append(char)
        else:
            out.append(char)
    if word:
        spelled = "".join(word)
        out.append(_PYTHON_WORDS.get(spelled, spelled) if python else spelled)
    return "".join(out)


def _verdict_path(
    obj: Mapping[object, object], depth: int
) -> list[tuple[dict[str, object], Mapping[object, object]]] | None:
    """The dict holding the value, followed by its wrappers (each with its keys normalised,
    and as loaded); None if there is no single one."""
    normalised = {_normalise_key(key): item for key, item in reversed(list(obj.items()))}
    if any(key in normalised and not _is_mapping(normalised[key]) for key in _VALUE_KEYS):
        return [(normalised, obj)]
    if depth >= _MAX_WRAPPER_DEPTH:
        return None
    inner = [
        path
        for item in normalised.values()
        if isinstance(item, Mapping) and (path := _verdict_path(item, depth + 1)) is not None
    ]
    if len(inner) != 1:
        return None
    return [*inner[0], (normalised, obj)]


class _Unplaced:
    """A verdict that cannot be placed on the claim's scale: it agrees with no verdict."""

    def __repr__(self) -> str:
        return "a value on an unknown scale"


_UNPLACED = _Unplaced()


def _reading(item: object, kind: Kind) -> bool | int | _Unplaced | None:
    """What a value under a verdict key says, to compare with the verdict read; None: no verdict.

    Wider than the reading of the verdict itself (a number beside a check's true/false is
    read, to see whether it disagrees), never used to read the verdict.
    """
    if isinstance(item, bool):
        return item if kind == "check" else _UNPLACED
    if isinstance(item, int | float):
        if kind == "score":
            try:
                return coerce_score(item)
            except ValueError:
                return _UNPLACED
        return False if item == 0 else _UNPLACED
    if isinstance(item, str):
        try:
            return _coerce(item, kind)
        except ValueError:
            pass
        if kind == "check":
            try:
                score = coerce_score(item)
            except ValueError:
                return None
            return False if score == 0 else _UNPLACED
        try:
            return _UNPLACED if isinstance(coerce_check(item), bool) else None
        except ValueError:
            return None
    return None


def _check_verdict_keys(
    obj: Mapping[object, object], strict: set[int], value: bool | int, kind: Kind, raw: str
) -> None:
    """Raise if any key naming a verdict, anywhere in ``obj``, says something else than ``value``.

    ``strict``: the ids of the verdict's own object and its wrappers, where a verdict key
    holding no verdict at all is unparsable too.
    """
    stack: list[object] = [obj]
    while stack:
        item = stack.pop()
        if isinstance(item, list | tuple):
            stack.extend(item)
            continue
        if not isinstance(item, Mapping):
            continue
        for key, child in item.items():
            name = _normalise_key(key)
            if isinstance(child, Mapping | list | tuple):
                stack.append(child)
                if not (name in _VERDICT_KEYS and isinstance(child, list | tuple)):
                    continue
            if name not in _VERDICT_KEYS or child is None or child == "":
                continue
            reading = _reading(child, kind)
            if reading is None:
                if id(item) in strict:
                    _fail(
                        f"the reply names its verdict under {key!r} too, as {_short(child)}, "
                        "which states no verdict",
                        kind,
                        raw,
                    )
                continue
            if isinstance(reading, _Unplaced) or reading != value:
                _fail(
                    f"the reply holds contradicting verdicts: its verdict is {value!r} but "
                    f"{key!r} says {_short(child)}",
                    kind,
                    raw,
                )


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


# --- prose: the strict grammar --------------------------------------------------------------

# Markdown, quotes and brackets that may decorate a verdict without changing it.
_OPEN_DECOR = "[\\s*_`#>\"'\u201c\u201d\u2018\u2019(\\[]*"
_CLOSE_DECOR = "[*_`\"'\u201c\u201d\u2018\u2019)\\]]*"
_END_DECOR = "[\\s.!*_`\"'\u201c\u201d\u2018\u2019)\\]]*\\Z"
# What may follow a verdict for it to stand alone: the end, punctuation, a dash, "because".
_STANDS_ALONE = r"(?=\s*(?:\Z|[.,;:!\n(\u2013\u2014]|-(?:\s|\Z))|\s+(?:because|since|as|given)\b)"
_CHECK_WORDS = {
    "true": True,
    "yes": True,
    "positive": True,
    "correct": True,
    "accurate": True,
    "false": False,
    "no": False,
    "negative": False,
    "incorrect": False,
    "inaccurate": False,
}
_WHOLE_CHECK = re.compile(
    _OPEN_DECOR + r"(true|false|yes|no|positive|negative)" + _CLOSE_DECOR + _END_DECOR,
    re.IGNORECASE,
)
_FIRST_WORD = re.compile(_OPEN_DECOR + r"([A-Za-z]+)\b")
_OPENING_CHECK = re.compile(
    _OPEN_DECOR + r"(true|false)\b" + _CLOSE_DECOR + _STANDS_ALONE, re.IGNORECASE
)
_LABELLED_CHECK = re.compile(
    r"\b(?P<label>verdict|answer|conclusion|value|result)\b[*_`]*[ \t]*"
    r"(?P<sep>[:=]|\n|is\b)[\s*_`\"'\u201c\u201d\u2018\u2019]*"
    r"(?P<word>true|false|yes|no)\b" + _CLOSE_DECOR + _STANDS_ALONE,
    re.IGNORECASE,
)
_CLAIM_CHECK = re.compile(
    r"\b(?:the|this)\s+(?:claim|proposition|statement)\s+(?:is|was)\s+(?P<neg>not\s+)?"
    r"[*_`\"'\u201c\u201d\u2018\u2019]*"
    r"(?P<word>true|false|correct|incorrect|accurate|inaccurate)\b" + _CLOSE_DECOR + _STANDS_ALONE,
    re.IGNORECASE,
)
# After an opening True/False, a clause that takes it back: "True, but only in part".
_RETRACTING = frozenset(
    {
        "but",
        "although",
        "though",
        "however",
        "except",
        "partially",
        "partly",
        "mostly",
        "somewhat",
        "not",
        "or",
        "nor",
        "maybe",
        "perhaps",
        "probably",
        "unless",
        "if",
    }
)
# Only these may lead into "the claim is X" within its clause; anything else may negate it
# ("it is not the case that the claim is true") or report someone else's view.
_CLAIM_LEAD_IN = re.compile(
    r"(?:\s*(?:and|so|thus|hence|therefore|overall|consequently|accordingly|ultimately|finally"
    r"|in\s+(?:conclusion|short|summary|sum)|all\s+in\s+all|as\s+a\s+result"
    r"|(?:which|this|that)\s+means(?:\s+that)?"
    r"|i\s+(?:think|believe|conclude|find)(?:\s+that)?|we\s+(?:can\s+)?conclude(?:\s+that)?"
    r"|it\s+follows\s+that)\b)*[\s*_`\"'\u201c\u201d\u2018\u2019]*\Z",
    re.IGNORECASE,
)
_CONDITIONAL = re.compile(
    r"\b(?:if|unless|whether|suppose|supposing|assuming|otherwise)\b", re.IGNORECASE
)
_CLAUSE_START = re.compile(r"[,;:.!?\n(\u2013\u2014]")
_SENTENCE_START = re.compile(r"[.!?\n]")
_BARE_CHECK_WORD = re.compile(r"\b(true|false)\b", re.IGNORECASE)
_AT_CLAUSE_START = r"(?:\A|(?<=[,;:.!?\n(\u2013\u2014])(?<!\d[.,]))"
# A verdict word that is a clause of its own ("True, No."): a cue wherever it stands.
_STANDALONE_CHECK = re.compile(
    _AT_CLAUSE_START
    + _OPEN_DECOR
    + r"(true|false|yes|no|positive|negative)\b"
    + _CLOSE_DECOR
    + _STANDS_ALONE,
    re.IGNORECASE,
)

_NUMBER = r"[+-]?\d+(?:\.\d+)?"
_SCALE = r"(?:\s*(?:/|out\s+of)\s*(?P<scale>\d+(?:\.\d+)?))?"
_SCORE_SEPARATOR = r"(?=\s*(?:\Z|[.,;:!)\n(\u2013\u2014]|-(?:\s|\Z)))"
_WHOLE_SCORE = re.compile(
    _OPEN_DECOR + r"(?P<num>" + _NUMBER + ")" + _CLOSE_DECOR + _SCALE + _CLOSE_DECOR + _END_DECOR,
    re.IGNORECASE,
)
_OPENING_NUMBER = re.compile(
    _OPEN_DECOR + r"(?P<num>" + _NUMBER + r")(?![\d])" + _CLOSE_DECOR + _SCALE, re.IGNORECASE
)
_LABELLED_SCORE = re.compile(
    r"\b(?:(?P<soft>score|rating|grade)|(?:verdict|answer|value|result))\b[*_`]*[ \t]*"
    r"(?P<sep>[:=]|\n|is\b|of\b)?[\s*_`\"'\u201c\u201d\u2018\u2019]*"
    r"(?:(?:is|of)\s+)?(?:an?\s+)?"
    r"(?P<num>" + _NUMBER + r")(?![\d])" + _CLOSE_DECOR + _SCALE,
    re.IGNORECASE,
)
_SCALED_SCORE = re.compile(
    r"(?<![\d./])(?P<num>\d+)[*_`]*\s*(?:/|out\s+of)\s*(?P<scale>9)(?!\d|\.\d|/\d)", re.IGNORECASE
)
_SCORE_RANGE_AFTER = re.compile(r"\s*(?:-|\u2013|\u2014|to\b|or\b|and\b)\s*[+-]?\d", re.IGNORECASE)
# A whole number that is a clause of its own ("... too generous. 2"): a cue wherever it stands.
_STANDALONE_NUMBER = re.compile(
    _AT_CLAUSE_START + _OPEN_DECOR + r"(?P<num>[+-]?\d+)(?![\d]|\.\d)" + _CLOSE_DECOR
)
_CONFIDENCE_BEFORE = re.compile(r"confidence\W*\Z", re.IGNORECASE)
_LIST_ITEM_AFTER = re.compile(r"[.)][ \t]*[^\s\d]")
_NOT_WHOLE_AFTER = re.compile(r"[.,]\d|[A-Za-z%]")
_REST_JUNK = re.compile(r"""^[\s.,;:!?\-\u2013\u2014*_)\]"'`]+""")


@dataclass(frozen=True)
class _Statement:
    start: int
    end: int
    value: bool | int


def _read_prose(text: str, kind: Kind, *, plain: bool) -> tuple[bool | int, str]:
    """The verdict a piece of free text states, and its justification; raises ValueError.

    ``plain`` is a whole reply; otherwise ``text`` is a JSON value, where a leading number
    followed by "." is the score rather than a numbered list.
    """
    whole = (_WHOLE_CHECK if kind == "check" else _WHOLE_SCORE).match(text)
    if whole is not None:
        if kind == "check":
            return _CHECK_WORDS[whole.group(1).lower()], ""
        return _score_at(text, whole, plain=plain, opening=True), ""
    statements = _statements(text, kind, plain=plain, qualified="raise")
    cues = _cues(text, kind, statements, plain=plain)
    values = {statement.value for statement in statements} | cues
    if not statements:
        if cues:
            raise ValueError(f"{_short(text)} states no verdict, only verdict words in passing")
        raise ValueError(f"{_short(text)} states no verdict")
    if len(values) > 1:
        shown = " and ".join(repr(value) for value in sorted(values, key=_order))
        raise ValueError(f"{_short(text)} holds cues for more than one verdict ({shown})")
    first = min(statements, key=lambda statement: statement.start)
    decoration = re.match(_OPEN_DECOR, text)
    opening = first.start <= (decoration.end() if decoration else 0)
    rest = _REST_JUNK.sub("", text[first.end :]).strip() if opening else text.strip()
    return first.value, rest


def _order(value: bool | int) -> tuple[bool, int]:
    return isinstance(value, bool), int(value)


def _statements(text: str, kind: Kind, *, plain: bool, qualified: str) -> list[_Statement]:
    """Every explicit verdict statement in ``text``.

    A statement that is qualified (negated, conditional, taken back) raises when ``qualified``
    is "raise", and is skipped otherwise (prose around a JSON verdict).
    """
    found: list[_Statement] = []

    def reject(reason: str) -> None:
        if qualified == "raise":
            raise ValueError(f"{_short(text)} {reason}")

    if kind == "check":
        opening = _OPENING_CHECK.match(text)
        if opening is not None:
            after = _WORD.match(_REST_JUNK.sub("", text[opening.end() :]).lower())
            if after is not None and after.group(0) in _RETRACTING:
                reject(f"takes its verdict back ({after.group(0)!r})")
            else:
                found.append(
                    _Statement(
                        opening.start(1), opening.end(), _CHECK_WORDS[opening.group(1).lower()]
                    )
                )
        for match in _LABELLED_CHECK.finditer(text):
            if match.group("sep").lower() == "is" and match.group("label").lower() not in (
                "verdict",
                "answer",
                "conclusion",
            ):
                continue
            if _is_conditional(text, match.start()):
                reject("states its verdict under a condition")
                continue
            found.append(
                _Statement(match.start(), match.end(), _CHECK_WORDS[match.group("word").lower()])
            )
        for match in _CLAIM_CHECK.finditer(text):
            value = _CHECK_WORDS[match.group("word").lower()]
            if match.group("neg"):
                if not value:
                    reject("negates a negative verdict")
                    continue
                value = False
            clause = _CLAUSE_START.split(text[: match.start()])[-1]
            if _CLAIM_LEAD_IN.match(clause) is None or _is_conditional(text, match.start()):
                reject("qualifies its verdict statement")
                continue
            found.append(_Statement(match.start(), match.end(), value))
        return found

    opening = _OPENING_NUMBER.match(text)
    if opening is not None and re.match(_SCORE_SEPARATOR, text[opening.end() :]):
        list_like = (
            plain
            and opening.group("scale") is None
            and _LIST_ITEM_AFTER.match(text, opening.end()) is not None
        )
        if not list_like:
            score = _score_at(text, opening, plain=plain, opening=True)
            found.append(_Statement(opening.start("num"), opening.end(), score))
    for pattern in (_LABELLED_SCORE, _SCALED_SCORE):
        for match in pattern.finditer(text):
            if pattern is _LABELLED_SCORE and not (match.group("soft") or match.group("sep")):
                continue
            if match.group("scale") is None and _NOT_WHOLE_AFTER.match(text, match.end()):
                continue  # "score of 7th", "value: 12abc": not a number standing for a score
            if _is_conditional(text, match.start()):
                reject("states its score under a condition")
                continue
            found.append(
                _Statement(
                    match.start(), match.end(), _score_at(text, match, plain=plain, opening=False)
                )
            )
    return found


def _cues(text: str, kind: Kind, statements: list[_Statement], *, plain: bool) -> set[bool | int]:
    """Verdicts the text hints at outside its statements: they must not disagree with them."""
    cues: set[bool | int] = set()
    covered = [(statement.start, statement.end) for statement in statements]

    def outside(position: int) -> bool:
        return not any(start <= position < end for start, end in covered)

    if kind == "check":
        first = _FIRST_WORD.match(text)
        if first is not None and first.group(1).lower() in _CHECK_WORDS and outside(first.start(1)):
            cues.add(_CHECK_WORDS[first.group(1).lower()])
        for pattern in (_BARE_CHECK_WORD, _STANDALONE_CHECK):
            for match in pattern.finditer(text):
                if outside(match.start(1)):
                    cues.add(_CHECK_WORDS[match.group(1).lower()])
        return cues
    for match in _STANDALONE_NUMBER.finditer(text):
        if (
            outside(match.start("num"))
            and re.match(_SCORE_SEPARATOR, text[match.end() :])
            and not (plain and _LIST_ITEM_AFTER.match(text, match.end()))
            and not _CONFIDENCE_BEFORE.search(text[: match.start()])
        ):
            cues.add(int(match.group("num")))
    opening = _OPENING_NUMBER.match(text)
    if opening is not None and outside(opening.start("num")):
        list_like = plain and _LIST_ITEM_AFTER.match(text, opening.end()) is not None
        if not list_like:
            # "9 out of the 12 events ...": a number that is not clearly the score.
            number = opening.group("num")
            cues.add(int(float(number)) if _is_whole(number) else -1)
    return cues


def _is_whole(number: str) -> bool:
    try:
        return float(number).is_integer()
    except ValueError:
        return False


def _is_conditional(text: str, position: int) -> bool:
    sentence = _SENTENCE_START.split(text[:position])[-1]
    return _CONDITIONAL.search(sentence) is not None


def _score_at(text: str, match: re.Match[str], *, plain: bool, opening: bool) -> int:
    """The score a match names; raises on other scales, ranges and non-whole numbers."""
    scale = match.group("scale")
    number = match.group("num")
    if scale is not None and float(scale) != MAX_SCORE:
        raise ValueError(f"{_short(text)} is on a scale other than /{MAX_SCORE}")
    if _SCORE_RANGE_AFTER.match(text, match.end()):
        raise ValueError(f"{_short(text)} looks like a range, not one score")
    if scale is None and re.match(r",\d", text[match.end("num") :]):
        raise ValueError(
            f"{number}{text[match.end('num') : match.end('num') + 2]} is not a whole number"
        )
    if not _is_whole(number):
        raise ValueError(f"{number} is not a whole number")
    return _in_range(int(float(number)))


# --- plain text and errors ------------------------------------------------------------------


def _parse_plain(text: str, kind: Kind) -> ParsedReply:
    """A reply with no JSON verdict: the strict prose grammar decides (see the module doc)."""
    stripped = _FENCE.sub(r"\1", text.strip()).strip()
    if stripped[:1] in ("{", "[") or stripped.startswith("```"):
        raise ValueError("the text starts like JSON but is malformed or cut short")
    if stripped.startswith("<"):
        raise ValueError("it is markup (an HTML page?), not a verdict")
    value, rest = _read_prose(stripped, kind, plain=True)
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


def _fail_invalid(reason: str, raw: str) -> NoReturn:
    raise JudgeReplyInvalid(
        f"Invalid judge reply: {reason}; received {_quote(raw)}.", raw_reply=_printable(raw)
    )


def _printable(text: str) -> str:
    """The text with unpaired surrogates replaced, so the error itself can be shown and stored."""
    return text.encode("utf-8", "replace").decode("utf-8")


def _fail(reason: str, kind: Kind, raw: str) -> NoReturn:
    raise VerdictUnparsable(
        f"Unparsable judge reply: {reason}. Expected {_expected(kind)}; received {_quote(raw)}.",
        raw_reply=raw,
    )
