"""The reply contract: the JSON schema every request sends, and reading a judge's reply by it
strictly: one JSON object of that schema, or, from a judge that cannot write JSON, one explicit
final line.

A lenient reader is where contradicting replies slip through, and a wrong pass is the worst
outcome this plugin can produce; so the meaning of a reply is never guessed:

* A reasoning model's thinking block that opens the reply is removed first
  (``strip_thinking``), then one code fence around the whole reply.
* A reply that starts with ``{`` is one JSON object with exactly the schema's keys
  (``reasoning``, ``justification``, ``value``, ``confidence``): a key missing, an extra key
  (a second verdict key included), a key given twice, or a value of the wrong kind is a schema
  violation. A check's value is a JSON boolean; a score's a JSON integer from MIN_SCORE to
  MAX_SCORE (not 7.0, not "7"); the confidence a number from 0 to 1.
* Any other reply must end with the line the prompt asks for, ``VERDICT: true`` or
  ``VERDICT: false`` for a check, ``SCORE: N`` for a score (ASCII, any case, emphasis around it
  allowed); the text before it is the justification. An earlier line that states a verdict or a
  score in any spelling (``verdict_stated_in``), or a JSON ``"value"`` key in the text, is a
  second verdict: unparsable.

Anything else raises ``VerdictUnparsable``; the judge is asked once more, and nothing is cached.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn

from ..errors import JudgeReplyInvalid, VerdictUnparsable
from ..scale import MAX_SCORE, MIN_SCORE
from ..verdict import CHECK, KINDS, SCORE

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
# The final line is ASCII: re.IGNORECASE alone would take a long s for an s and \d an
# Arabic-Indic digit for a digit.
_FINAL_LINE = {
    "check": re.compile(r"VERDICT:[ \t]*(true|false)[ \t]*\.?", re.IGNORECASE | re.ASCII),
    "score": re.compile(r"SCORE:[ \t]*(\d+)[ \t]*\.?", re.IGNORECASE | re.ASCII),
}

# -- a verdict stated before the final line ---------------------------------------------------
# Text is compared in a normal form: compatibility forms unfolded (fullwidth letters and colons,
# no-break and other spaces), accents and zero-width characters dropped, look-alike letters
# mapped to Latin ones, case folded. The look-alikes are the Cyrillic, Greek and small-capital
# letters drawn like a Latin letter (case matters: a Greek capital nu is an N, its small letter
# a v).
_LOOK_ALIKES = str.maketrans(
    {
        look_alike: latin
        for latin, look_alikes in {
            "a": (
                "\N{CYRILLIC SMALL LETTER A}\N{CYRILLIC CAPITAL LETTER A}"
                "\N{GREEK SMALL LETTER ALPHA}\N{GREEK CAPITAL LETTER ALPHA}"
                "\N{LATIN LETTER SMALL CAPITAL A}"
            ),
            "b": "\N{CYRILLIC CAPITAL LETTER VE}\N{GREEK CAPITAL LETTER BETA}",
            "c": (
                "\N{CYRILLIC SMALL LETTER ES}\N{CYRILLIC CAPITAL LETTER ES}"
                "\N{GREEK SMALL LETTER FINAL SIGMA}"
                "\N{LATIN LETTER SMALL CAPITAL C}"
            ),
            "d": "\N{CYRILLIC SMALL LETTER KOMI DE}\N{LATIN LETTER SMALL CAPITAL D}",
            "e": (
                "\N{CYRILLIC SMALL LETTER IE}\N{CYRILLIC CAPITAL LETTER IE}"
                "\N{GREEK SMALL LETTER EPSILON}\N{GREEK CAPITAL LETTER EPSILON}"
                "\N{LATIN LETTER SMALL CAPITAL E}"
            ),
            "f": "\N{LATIN LETTER SMALL CAPITAL F}",
            "h": (
                "\N{CYRILLIC SMALL LETTER SHHA}\N{CYRILLIC CAPITAL LETTER EN}"
                "\N{GREEK CAPITAL LETTER ETA}"
            ),
            "i": (
                "\N{CYRILLIC SMALL LETTER BYELORUSSIAN-UKRAINIAN I}"
                "\N{CYRILLIC CAPITAL LETTER BYELORUSSIAN-UKRAINIAN I}\N{GREEK SMALL LETTER IOTA}"
                "\N{GREEK CAPITAL LETTER IOTA}\N{LATIN SMALL LETTER DOTLESS I}"
                "\N{LATIN LETTER SMALL CAPITAL I}"
            ),
            "j": (
                "\N{CYRILLIC SMALL LETTER JE}\N{CYRILLIC CAPITAL LETTER JE}\N{GREEK LETTER YOT}"
                "\N{GREEK CAPITAL LETTER YOT}"
            ),
            "k": (
                "\N{CYRILLIC SMALL LETTER KA}\N{CYRILLIC CAPITAL LETTER KA}"
                "\N{GREEK SMALL LETTER KAPPA}\N{GREEK CAPITAL LETTER KAPPA}"
            ),
            "l": (
                "\N{CYRILLIC SMALL LETTER PALOCHKA}\N{CYRILLIC LETTER PALOCHKA}"
                "\N{LATIN LETTER SMALL CAPITAL L}"
            ),
            "m": (
                "\N{CYRILLIC SMALL LETTER EM}\N{CYRILLIC CAPITAL LETTER EM}"
                "\N{GREEK CAPITAL LETTER MU}"
            ),
            "n": (
                "\N{GREEK SMALL LETTER ETA}\N{GREEK CAPITAL LETTER NU}"
                "\N{LATIN LETTER SMALL CAPITAL N}"
            ),
            "o": (
                "\N{CYRILLIC SMALL LETTER O}\N{CYRILLIC CAPITAL LETTER O}"
                "\N{GREEK SMALL LETTER OMICRON}\N{GREEK CAPITAL LETTER OMICRON}"
                "\N{LATIN LETTER SMALL CAPITAL O}"
            ),
            "p": (
                "\N{CYRILLIC SMALL LETTER ER}\N{CYRILLIC CAPITAL LETTER ER}"
                "\N{GREEK SMALL LETTER RHO}\N{GREEK CAPITAL LETTER RHO}"
            ),
            "r": "\N{CYRILLIC SMALL LETTER GHE}\N{LATIN LETTER SMALL CAPITAL R}",
            "s": (
                "\N{CYRILLIC SMALL LETTER DZE}\N{CYRILLIC CAPITAL LETTER DZE}"
                "\N{LATIN LETTER SMALL CAPITAL S}"
            ),
            "t": (
                "\N{CYRILLIC SMALL LETTER TE}\N{CYRILLIC CAPITAL LETTER TE}"
                "\N{GREEK SMALL LETTER TAU}\N{GREEK CAPITAL LETTER TAU}"
                "\N{LATIN LETTER SMALL CAPITAL T}"
            ),
            "u": (
                "\N{GREEK SMALL LETTER UPSILON}\N{GREEK SMALL LETTER MU}"
                "\N{LATIN LETTER SMALL CAPITAL U}"
            ),
            "v": (
                "\N{CYRILLIC SMALL LETTER IZHITSA}\N{CYRILLIC CAPITAL LETTER IZHITSA}"
                "\N{GREEK SMALL LETTER NU}\N{LATIN LETTER SMALL CAPITAL V}"
            ),
            "w": "\N{CYRILLIC SMALL LETTER WE}\N{CYRILLIC CAPITAL LETTER WE}",
            "x": (
                "\N{CYRILLIC SMALL LETTER HA}\N{CYRILLIC CAPITAL LETTER HA}"
                "\N{GREEK SMALL LETTER CHI}\N{GREEK CAPITAL LETTER CHI}"
            ),
            "y": (
                "\N{CYRILLIC SMALL LETTER U}\N{CYRILLIC CAPITAL LETTER U}"
                "\N{CYRILLIC SMALL LETTER STRAIGHT U}\N{CYRILLIC CAPITAL LETTER STRAIGHT U}"
                "\N{GREEK SMALL LETTER GAMMA}\N{GREEK CAPITAL LETTER UPSILON}"
                "\N{LATIN LETTER SMALL CAPITAL Y}"
            ),
            "z": "\N{GREEK CAPITAL LETTER ZETA}",
            # colons that are letters to a regular expression, and curly quotes
            ":": "\ua789\u02f8\u02d0\ua4fd",
            '"': "\u201c\u201d\u201e\u2018\u2019\u201a\u00ab\u00bb",
            " ": "_",  # markdown emphasis, which \w would take for part of a word
        }.items()
        for look_alike in look_alikes
    }
)
_DROPPED = frozenset({"Mn", "Me", "Cf"})  # accents, enclosing marks, zero-width and format
_KEY = r"(?<!\w)(?:verdict|score)(?!\w)"
_VALUE = r"(?:true|false|yes|no|pass(?:ed)?|fail(?:ed)?|\d+)(?!\w)"
_STATEMENT = (
    # "VERDICT : false", "**Score:** 2", "Score 2 of 9", "Verdict - false", "the score is 2"
    rf"{_KEY}[^\w\n]*(?:(?:is|was|of|be|would|should|will|must)[^\w\n]+){{0,2}}{_VALUE}"
    # "## Verdict" or "**Score:**" alone on its line, the value opening a line below it
    rf"|^[^\w\n]*(?:(?:final|overall|my|the|our)[^\w\n]+)?{_KEY}[^\w\n]*\n[^\w]*{_VALUE}"
    # another label for the verdict, a line of its own: "Final answer: false", "Decision - no"
    r"|^[^\w\n]*(?:(?:final|overall|my|the|our)[^\w\n]+)?(?:answer|decision|conclusion|result"
    rf"|judge?ment|rating|grade|outcome|assessment)[^\w\n]*[:=\-\u2013\u2014][^\w\n]*{_VALUE}"
    r"(?:[^\w\n]*(?:out[^\w\n]+)?(?:of|/)[^\w\n]*\d+)?[^\w\n]*$"
    # a key of JSON or of a Python dict: '"value": ...', "'verdict':"
    r'|"(?:value|verdict|score)"[^\w]*:'
    r"|'(?:value|verdict|score)'[^\w]*:"
)


@dataclass(frozen=True)
class ParsedReply:
    """A judge reply reduced to what a Verdict needs; its value is already checked."""

    value: bool | int
    justification: str
    reasoning: str
    confidence: float | None


def final_line_instruction(kind: Kind) -> str:
    """What the prompt tells a judge that cannot write JSON (the reader's other form)."""
    line = "VERDICT: true or VERDICT: false" if kind == CHECK else "SCORE: N"
    return f"If you cannot write JSON, give your reasons and end with one final line: {line}."


def reply_schema(kind: Kind, *, bounded: bool = False) -> dict[str, Any]:
    """JSON schema of the reply; the value's type and range depend on the kind of claim.

    ``bounded`` caps the text fields: grammar-constrained servers (llama.cpp) enforce it, which
    keeps a small local model from writing until its context runs out.
    """
    value: dict[str, Any] = (
        {"type": "boolean"}
        if kind == CHECK
        else {"type": "integer", "minimum": MIN_SCORE, "maximum": MAX_SCORE}
    )
    reasoning: dict[str, Any] = {"type": "string"}
    justification: dict[str, Any] = {"type": "string"}
    confidence: dict[str, Any] = {"type": "number", "minimum": 0, "maximum": 1}
    if bounded:
        # llama.cpp's grammar ignores minimum/maximum but enforces an enum (a confidence out of
        # 0..1, which a small model writes, breaks the reply contract).
        if kind == SCORE:
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
    if kind not in KINDS:
        raise ValueError(f"kind must be 'check' or 'score', not {kind!r}")
    raw = text or ""
    answer = strip_thinking(raw)  # what the parser reads; errors quote the whole reply
    if not answer.strip():
        _fail("the judge returned no reply" if text is None else "the reply is empty", kind, raw)
    if _has_lone_surrogate(raw):
        _fail_invalid(
            "the reply holds an unpaired surrogate, which no text encoding can store", raw
        )
    stripped = answer.strip()
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
    if kind == CHECK:
        if not isinstance(value, bool):
            _fail(f"'value' is {_short(value)}, not true or false", kind, raw)
        return value
    if isinstance(value, bool) or not isinstance(value, int):
        _fail(f"'value' is {_short(value)}, not a whole number", kind, raw)
    if not MIN_SCORE <= value <= MAX_SCORE:
        _fail(f"'value' is {value}, outside {MIN_SCORE}..{MAX_SCORE}", kind, raw)
    return value


def verdict_stated_in(text: str) -> str | None:
    """The first line of ``text`` that states a verdict or a score, in any spelling, or None.

    A line states one when it says verdict or score followed by a value (true, false, yes, no,
    pass, fail or a number): ``**Verdict:** false``, ``VERDICT : false``, ``Score 2 of 9``,
    ``score: 2/9``, ``Verdict - false``, ``the score is 2``, with any emphasis, spaces or colon,
    a Cyrillic E in VERDICT; when a line is only another label and a value (``Final answer:
    false``, ``Decision - no``); or when it holds a JSON or dict key ``"value"``, ``"verdict"``
    or ``"score"``. "The score of the conversation suggests ..." states none, nor does "Oscar's
    answer was no".
    """
    lines = text.splitlines()
    normal = "\n".join(_normal_form(line) for line in lines)
    found = re.search(_STATEMENT, normal, re.MULTILINE)
    if found is None:
        return None
    first = normal.count("\n", 0, found.start())
    return "\n".join(lines[first : first + 1 + found.group().count("\n")])


def _normal_form(line: str) -> str:
    if line.isascii():
        return line.replace("_", " ").lower()
    unfolded = unicodedata.normalize("NFKD", line)
    kept = "".join(c for c in unfolded if unicodedata.category(c) not in _DROPPED)
    return kept.translate(_LOOK_ALIKES).casefold()


def _read_final_line(text: str, kind: Kind, raw: str) -> ParsedReply:
    lines = text.splitlines()
    pattern = _FINAL_LINE[kind]
    last = pattern.fullmatch(lines[-1].strip().strip("*_`").strip()) if lines else None
    if last is None:
        _fail("it is neither one JSON object nor text ending with the verdict line", kind, raw)
    earlier = verdict_stated_in("\n".join(lines[:-1]))
    if earlier is not None:
        _fail(
            f"it states a verdict or a score more than once ({_short(earlier)} before its "
            "final line), so it reads two ways",
            kind,
            raw,
        )
    value: bool | int
    if kind == CHECK:
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
    value = "true or false" if kind == CHECK else f"an integer {MIN_SCORE}..{MAX_SCORE}"
    line = "VERDICT: true" if kind == CHECK else "SCORE: 7"
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


# -- thinking blocks -----------------------------------------------------------------------------------

_OPENED_THINKING = r"(?s)\A\s*<(think|thinking)>(.*?)</\1>\s*"
_UNCLOSED_THINKING = r"\A\s*<(think|thinking)>"
_CLOSING = r"</(think|thinking)>\s*"


def strip_thinking(content: str) -> str:
    """The reply without the ``<think>`` block that opens it, which local reasoning models write
    first.

    The block is the model's scratchpad, not its answer: words like "false" in it must not
    reach the parser. It is stripped only where it opens the reply: a ``</think>`` further on
    never hides what came before it (an answer, then a literal tag quoted from the trajectory,
    then a second answer). Three shapes are seen: the whole block; only its end, when the chat
    template opened it (DeepSeek-R1's does); and a block never closed, when the model ran out
    of tokens while thinking, which leaves no answer at all (the empty string, unparsable).

    A lone closing tag is taken for the end of a block the template opened only when the text
    before it states no verdict or score in any spelling (``verdict_stated_in``) and does
    not start like an answer (JSON or a code fence). Otherwise the reply is left whole, and the
    reader, seeing that verdict before the final one (or an answer that is not one JSON object),
    refuses it: text before such a tag that states a verdict may be the answer itself.
    """
    opened = re.match(_OPENED_THINKING, content)
    if opened is not None:
        return content[opened.end() :]
    if re.match(_UNCLOSED_THINKING, content):
        return ""
    closing = re.search(_CLOSING, content)
    if closing is None:
        return content
    before = content[: closing.start()]
    if before.lstrip().startswith(("{", "`")) or verdict_stated_in(before) is not None:
        return content
    return content[closing.end() :]
