"""The reply contract: the JSON schema every request sends, and reading a judge's reply by it
strictly: one JSON object of that schema, or, from a judge that cannot write JSON, one explicit
final line.

A lenient reader is where contradicting replies slip through, and a wrong pass is the worst
outcome this plugin can produce; so the meaning of a reply is never guessed:

* A reasoning model's thinking block is removed first (by the model's profile), then one code
  fence around the whole reply.
* A reply that starts with ``{`` is one JSON object with exactly the schema's keys
  (``reasoning``, ``justification``, ``value``, ``confidence``): a key missing, an extra key
  (a second verdict key included), a key given twice, or a value of the wrong kind is a schema
  violation. A check's value is a JSON boolean; a score's a JSON integer from MIN_SCORE to
  MAX_SCORE (not 7.0, not "7"); the confidence a number from 0 to 1.
* Any other reply must end with the line the prompt asks for, ``VERDICT: true`` or
  ``VERDICT: false`` for a check, ``SCORE: N`` for a score; the text before it is the
  justification. Another such line earlier in the reply, or a JSON ``"value"`` in it, is a
  second verdict: unparsable.

Anything else raises ``VerdictUnparsable``; the judge is asked once more, and nothing is cached.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn

from ..errors import JudgeReplyInvalid, VerdictUnparsable
from ..scale import MAX_SCORE, MIN_SCORE

if TYPE_CHECKING:
    from ..verdict import Kind

#: The keys of the reply schema every request sends (reply_schema).
REPLY_KEYS = ("reasoning", "justification", "value", "confidence")
# Caps on the reply's text in JSON mode, where the endpoint enforces the schema (reply_schema).
REASONING_MAX_CHARS = 800
JUSTIFICATION_MAX_CHARS = 500

_QUOTE_LIMIT = 200
# One code fence around the whole reply, with an optional language tag.
_FENCE = re.compile(r"\A```[A-Za-z0-9_-]*[ \t]*\n(.*?)\n?```\Z", re.DOTALL)
# A JSON "value" key in text that ends with a verdict line: two verdicts, which may disagree.
_JSON_VALUE = re.compile(r'"value"\s*:')
_FINAL_LINE = {
    "check": re.compile(r"VERDICT:[ \t]*(true|false)[ \t]*\.?", re.IGNORECASE),
    "score": re.compile(r"SCORE:[ \t]*(\d+)[ \t]*\.?", re.IGNORECASE),
}


@dataclass(frozen=True)
class ParsedReply:
    """A judge reply reduced to what a Verdict needs; its value is already checked."""

    value: bool | int
    justification: str
    reasoning: str
    confidence: float | None


def final_line_instruction(kind: Kind) -> str:
    """What the prompt tells a judge that cannot write JSON (the reader's other form)."""
    line = "VERDICT: true or VERDICT: false" if kind == "check" else "SCORE: N"
    return f"If you cannot write JSON, give your reasons and end with one final line: {line}."


def reply_schema(kind: Kind, *, bounded: bool = False) -> dict[str, Any]:
    """JSON schema of the reply; the value's type and range depend on the kind of claim.

    ``bounded`` caps the text fields: grammar-constrained servers (llama.cpp) enforce it, which
    keeps a small local model from writing until its context runs out.
    """
    value: dict[str, Any] = (
        {"type": "boolean"}
        if kind == "check"
        else {"type": "integer", "minimum": MIN_SCORE, "maximum": MAX_SCORE}
    )
    reasoning: dict[str, Any] = {"type": "string"}
    justification: dict[str, Any] = {"type": "string"}
    confidence: dict[str, Any] = {"type": "number", "minimum": 0, "maximum": 1}
    if bounded:
        # llama.cpp's grammar ignores minimum/maximum but enforces an enum (a confidence out of
        # 0..1, which a small model writes, breaks the reply contract).
        if kind == "score":
            value["enum"] = list(range(MIN_SCORE, MAX_SCORE + 1))
        confidence["enum"] = [tenths / 10 for tenths in range(11)]
        reasoning["maxLength"] = REASONING_MAX_CHARS
        justification["maxLength"] = JUSTIFICATION_MAX_CHARS
    return {
        "type": "object",
        "properties": {
            "reasoning": reasoning,
            "justification": justification,
            "value": value,
            "confidence": confidence,
        },
        "required": list(REPLY_KEYS),
        "additionalProperties": False,
    }


def read_choices(texts: Sequence[str], kind: Kind) -> ParsedReply:
    """The verdict of a response's choices: the first one's, when every other one agrees (picking
    one of disagreeing answers would be a guess)."""
    first = read_reply(texts[0], kind)
    for index, other in enumerate(texts[1:], start=2):
        try:
            value: bool | int | str = read_reply(other, kind).value
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


def read_reply(text: str | None, kind: Kind) -> ParsedReply:
    """The verdict in one reply, or ``VerdictUnparsable`` saying what broke the contract
    (``JudgeReplyInvalid`` for text no encoding can store, or JSON nested too deep to read)."""
    if kind not in ("check", "score"):
        raise ValueError(f"kind must be 'check' or 'score', not {kind!r}")
    raw = text or ""
    if not raw.strip():
        _fail("the judge returned no reply" if text is None else "the reply is empty", kind, raw)
    if _has_lone_surrogate(raw):
        _fail_invalid(
            "the reply holds an unpaired surrogate, which no text encoding can store", raw
        )
    stripped = raw.strip()
    fenced = _FENCE.match(stripped)
    if fenced is not None:
        stripped = fenced.group(1).strip()
    if stripped.startswith("{"):
        parsed = _read_object(stripped, kind, raw)
    else:
        parsed = _read_final_line(stripped, kind, raw)
    if _has_lone_surrogate(parsed.justification) or _has_lone_surrogate(parsed.reasoning):
        _fail_invalid(
            "the reply's text holds an unpaired surrogate escape (such as \\ud800), which no "
            "text encoding can store",
            raw,
        )
    return parsed


def _read_object(text: str, kind: Kind, raw: str) -> ParsedReply:
    try:
        data = json.loads(text, object_pairs_hook=_no_repeated_keys)
    except _RepeatedKeyError as error:
        _fail(f"the JSON object gives the key {error.key!r} twice", kind, raw)
    except RecursionError:
        _fail_invalid("the reply is nested too deeply to read", raw)
    except ValueError as error:
        _fail(f"the reply is not one JSON object ({error})", kind, raw)
    if not isinstance(data, dict):
        _fail("the reply is not one JSON object", kind, raw)
    missing = [key for key in REPLY_KEYS if key not in data]
    extra = sorted(key for key in data if key not in REPLY_KEYS)
    if missing or extra:
        problems = []
        if missing:
            problems.append(f"missing {', '.join(missing)}")
        if extra:
            problems.append(f"keys the schema does not have: {', '.join(extra)}")
        _fail(f"the JSON object breaks the reply schema ({'; '.join(problems)})", kind, raw)
    for key in ("reasoning", "justification"):
        if not isinstance(data[key], str):
            _fail(f"{key!r} is {_kind_of(data[key])}, not a string", kind, raw)
    confidence = data["confidence"]
    if (
        isinstance(confidence, bool)
        or not isinstance(confidence, int | float)
        or not math.isfinite(confidence)
        or not 0 <= confidence <= 1
    ):
        _fail(f"'confidence' is {_short(confidence)}, not a number from 0 to 1", kind, raw)
    return ParsedReply(
        value=_checked_value(data["value"], kind, raw),
        justification=data["justification"].strip(),
        reasoning=data["reasoning"].strip(),
        confidence=float(confidence),
    )


def _checked_value(value: object, kind: Kind, raw: str) -> bool | int:
    if kind == "check":
        if not isinstance(value, bool):
            _fail(f"'value' is {_short(value)}, not true or false", kind, raw)
        return value
    if isinstance(value, bool) or not isinstance(value, int):
        _fail(f"'value' is {_short(value)}, not a whole number", kind, raw)
    if not MIN_SCORE <= value <= MAX_SCORE:
        _fail(f"'value' is {value}, outside {MIN_SCORE}..{MAX_SCORE}", kind, raw)
    return value


def _read_final_line(text: str, kind: Kind, raw: str) -> ParsedReply:
    lines = text.splitlines()
    pattern = _FINAL_LINE[kind]
    last = pattern.fullmatch(lines[-1].strip().strip("*_`").strip()) if lines else None
    if last is None:
        _fail("it is neither one JSON object nor text ending with the verdict line", kind, raw)
    if any(pattern.search(line) for line in lines[:-1]):
        _fail("it gives a verdict line more than once", kind, raw)
    if _JSON_VALUE.search(text):
        _fail("it holds a JSON verdict besides its verdict line", kind, raw)
    value: bool | int
    if kind == "check":
        value = last.group(1).lower() == "true"
    else:
        value = int(last.group(1))
        if not MIN_SCORE <= value <= MAX_SCORE:
            _fail(f"its score {value} is outside {MIN_SCORE}..{MAX_SCORE}", kind, raw)
    justification = "\n".join(lines[:-1]).strip()
    return ParsedReply(value=value, justification=justification, reasoning="", confidence=None)


class _RepeatedKeyError(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _no_repeated_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    data: dict[str, object] = {}
    for key, value in pairs:
        if key in data:
            raise _RepeatedKeyError(key)
        data[key] = value
    return data


def _kind_of(value: object) -> str:
    return "null" if value is None else f"a {type(value).__name__}"


def _has_lone_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _expected(kind: Kind) -> str:
    value = "true or false" if kind == "check" else f"an integer {MIN_SCORE}..{MAX_SCORE}"
    line = "VERDICT: true" if kind == "check" else "SCORE: 7"
    return (
        f"one JSON object with exactly the keys {', '.join(REPLY_KEYS)} (value: {value}), or "
        f"text ending with a line such as {line!r}"
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


def printable(text: str) -> str:
    """The text with unpaired surrogates replaced, so an error quoting it can be shown and stored."""
    return text.encode("utf-8", "replace").decode("utf-8")


def _fail_invalid(reason: str, raw: str) -> NoReturn:
    raise JudgeReplyInvalid(
        f"Invalid judge reply: {reason}; received {_quote(printable(raw))}.",
        raw_reply=printable(raw),
    )


def _fail(reason: str, kind: Kind, raw: str) -> NoReturn:
    raise VerdictUnparsable(
        f"Unparsable judge reply: {reason}. Expected {_expected(kind)}; received {_quote(raw)}.",
        raw_reply=raw,
    )
