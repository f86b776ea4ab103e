"""The strict reply contract: one JSON object of the schema, or one explicit final line."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_propositions.errors import JudgeReplyInvalid, VerdictUnparsable
from pytest_propositions.judging.reply import (
    REPLY_KEYS,
    ParsedReply,
    final_line_instruction,
    read_choices,
    read_reply,
    reply_schema,
    strip_thinking,
    verdict_stated_in,
)


def reply(**fields: Any) -> str:
    full = {"reasoning": "r", "justification": "j", "value": True, "confidence": 0.9}
    full.update(fields)
    return json.dumps({k: v for k, v in full.items() if v is not _DROP})


_DROP = object()


def test_the_keys_read_are_the_keys_the_request_asks_for() -> None:
    for kind in ("check", "score"):
        schema = reply_schema(kind)  # type: ignore[arg-type]
        assert tuple(schema["properties"]) == REPLY_KEYS
        assert tuple(schema["required"]) == REPLY_KEYS
        assert schema["additionalProperties"] is False


@pytest.mark.parametrize(
    ("text", "kind", "expected"),
    [
        (reply(), "check", ParsedReply(True, "j", "r", 0.9)),
        (reply(value=False, confidence=0), "check", ParsedReply(False, "j", "r", 0.0)),
        (reply(value=7, confidence=1), "score", ParsedReply(7, "j", "r", 1.0)),
        (reply(value=0), "score", ParsedReply(0, "j", "r", 0.9)),
        ("```json\n" + reply(value=4) + "\n```", "score", ParsedReply(4, "j", "r", 0.9)),
        ("```\n" + reply(value=False) + "\n```", "check", ParsedReply(False, "j", "r", 0.9)),
        ("  \n" + reply() + "\n\n", "check", ParsedReply(True, "j", "r", 0.9)),
        (
            "Oscar names Lisbon twice.\nVERDICT: true",
            "check",
            ParsedReply(True, "Oscar names Lisbon twice.", "", None),
        ),
        (
            "He never asks.\n\n**VERDICT: FALSE**",
            "check",
            ParsedReply(False, "He never asks.", "", None),
        ),
        ("Mostly calm.\nSCORE: 6", "score", ParsedReply(6, "Mostly calm.", "", None)),
        ("SCORE: 9.", "score", ParsedReply(9, "", "", None)),
    ],
)
def test_a_reply_that_keeps_the_contract_is_read(
    text: str, kind: str, expected: ParsedReply
) -> None:
    assert read_reply(text, kind) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "kind", "reason"),
    [
        (None, "check", "no reply"),
        ("   ", "check", "empty"),
        (reply(confidence=_DROP), "check", "missing confidence"),
        (reply(verdict=True), "check", "keys the schema does not have: verdict"),
        (reply(score=9, value=3), "score", "keys the schema does not have: score"),
        (
            '{"reasoning": "r", "justification": "j", "value": false, "value": true, '
            '"confidence": 0.5}',
            "check",
            "'value' twice",
        ),
        (reply(value=1), "check", "not true or false"),
        (reply(value="true"), "check", "not true or false"),
        (reply(value=7.0), "score", "not a whole number"),
        (reply(value="7"), "score", "not a whole number"),
        (reply(value=True), "score", "not a whole number"),
        (reply(value=10), "score", "outside 0..9"),
        (reply(value=-1), "score", "outside 0..9"),
        (reply(confidence=1.5), "check", "not a number from 0 to 1"),
        (reply(confidence="high"), "check", "not a number from 0 to 1"),
        (reply(confidence=True), "check", "not a number from 0 to 1"),
        (reply(justification=None), "check", "'justification' is null"),
        (reply(reasoning=["a"]), "check", "'reasoning' is a list"),
        ('{"reasoning": "r", "justification": "j", "value": true', "check", "not one JSON object"),
        ("[" + reply() + "]", "check", "neither one JSON object"),
        ("Sure! " + reply(), "check", "neither one JSON object"),
        (reply() + "\nHope it helps!", "check", "not one JSON object"),
        ("True", "check", "neither one JSON object"),
        ("Yes.", "check", "neither one JSON object"),
        ("7/9", "score", "neither one JSON object"),
        ("VERDICT: true\nOn reflection:\nVERDICT: false", "check", "more than once"),
        ("VERDICT: true\nVERDICT: true", "check", "more than once"),
        ("VERDICT: true\nbecause he asks.", "check", "neither one JSON object"),
        ("Here: " + reply(value=False) + "\nVERDICT: true", "check", "more than once"),
        ("SCORE: 12", "score", "outside 0..9"),
        ("VERDICT: true", "score", "neither one JSON object"),
        ("SCORE: 7", "check", "neither one JSON object"),
        ("<html><body>502 Bad Gateway</body></html>", "check", "neither one JSON object"),
    ],
)
def test_anything_else_is_unparsable_and_says_why(text: str | None, kind: str, reason: str) -> None:
    with pytest.raises(VerdictUnparsable) as info:
        read_reply(text, kind)  # type: ignore[arg-type]
    assert type(info.value) is VerdictUnparsable
    assert reason in str(info.value)
    assert "Expected one JSON object with exactly the keys" in str(info.value)


def test_text_no_encoding_can_store_is_an_invalid_reply() -> None:
    with pytest.raises(JudgeReplyInvalid, match="unpaired surrogate"):
        read_reply("He asks \udc80.\nVERDICT: true", "check")
    with pytest.raises(JudgeReplyInvalid, match="unpaired surrogate escape"):
        read_reply(reply(justification="\ud800"), "check")
    with pytest.raises(JudgeReplyInvalid, match="nested too deeply"):
        read_reply('{"value": ' + "[" * 100_000 + "]" * 100_000 + "}", "check")


def test_choices_must_agree() -> None:
    assert read_choices([reply(), reply(justification="other")], "check").justification == "j"
    with pytest.raises(VerdictUnparsable, match="choices whose verdicts disagree"):
        read_choices([reply(), reply(value=False)], "check")
    with pytest.raises(VerdictUnparsable, match="choice 2 'no verdict'"):
        read_choices([reply(), "maybe"], "check")


def test_the_prompt_names_the_final_line_the_reader_reads() -> None:
    assert "VERDICT: true or VERDICT: false" in final_line_instruction("check")
    assert "SCORE: N" in final_line_instruction("score")


@given(
    value=st.one_of(st.booleans(), st.integers(-3, 12), st.floats(), st.text(max_size=3)),
    confidence=st.one_of(st.floats(), st.integers(-1, 2), st.none()),
    extra=st.dictionaries(st.text(max_size=8), st.integers(), max_size=2),
)
def test_a_verdict_read_always_has_the_schema_s_kind_and_range(
    value: object, confidence: object, extra: dict[str, int]
) -> None:
    """Whatever the object holds, a verdict comes back only when it is exactly of the schema."""
    for kind in ("check", "score"):
        text = json.dumps(
            {
                "reasoning": "r",
                "justification": "j",
                "value": value,
                "confidence": confidence,
                **extra,
            }
        )
        try:
            parsed = read_reply(text, kind)  # type: ignore[arg-type]
        except VerdictUnparsable:
            continue
        assert not (set(extra) - set(REPLY_KEYS))
        if kind == "check":
            assert type(parsed.value) is bool
        else:
            assert type(parsed.value) is int and 0 <= parsed.value <= 9
        assert parsed.confidence is not None and 0 <= parsed.confidence <= 1


# -- a reply that reads two ways: an earlier verdict in any spelling (issue 48) ----------------

EARLIER_STATEMENTS = [
    # emphasis, spaces before the colon, other separators
    pytest.param("**Verdict:** false", id="bold-label"),
    pytest.param("VERDICT : false", id="space-before-colon"),
    pytest.param("Verdict - false", id="dash"),
    pytest.param("Verdict \u2014 false", id="em-dash"),
    pytest.param("verdict = no", id="equals-no"),
    pytest.param("Verdict: No, he never travels.", id="no-comma"),
    pytest.param("verdict: yes", id="yes"),
    pytest.param("Verdict: FAIL", id="fail"),
    pytest.param("**Score:** 2", id="bold-score"),
    pytest.param("Score 2 of 9", id="score-2-of-9"),
    pytest.param("score: 2/9", id="score-2-slash-9"),
    pytest.param("SCORE : 2", id="score-space-before-colon"),
    pytest.param("__Score__: 2", id="underscore-emphasis"),
    pytest.param("`SCORE: 2`", id="backticks"),
    pytest.param("> **VERDICT:** FALSE", id="quoted-bold"),
    pytest.param("- Score: 2", id="list-item"),
    pytest.param("Ana greets him. Verdict: false.", id="mid-line"),
    pytest.param("The verdict is false.", id="verdict-is"),
    pytest.param("My score would be 2.", id="score-would-be"),
    pytest.param("It gets a score of 2.", id="score-of"),
    # look-alike letters and other forms of the same characters
    pytest.param("V\u0415RDICT: false", id="cyrillic-E"),
    pytest.param("V\u0395RDICT: false", id="greek-Epsilon"),
    pytest.param("S\u0421ORE: 2", id="cyrillic-C"),
    pytest.param("SC\u039fRE: 2", id="greek-Omicron"),
    pytest.param("VERDICT: f\u0430lse", id="cyrillic-a-in-the-value"),
    pytest.param("\u1d20\u1d07\u0280\u1d05\u026a\u1d04\u1d1b: false", id="small-capitals"),
    pytest.param(
        "\uff36\uff25\uff32\uff24\uff29\uff23\uff34\uff1a \uff46\uff41\uff4c\uff53\uff45",
        id="fullwidth",
    ),
    pytest.param(
        "\U0001d415\U0001d404\U0001d411\U0001d403\U0001d408\U0001d402\U0001d413: false",
        id="math-bold",
    ),
    pytest.param("VER\u200bDICT: false", id="zero-width-space"),
    pytest.param("Ve\u0301rdict: false", id="combining-accent"),
    pytest.param("VERDICT:\u00a0false", id="no-break-space"),
    pytest.param("VERDICT:\u2003false", id="em-space"),
    pytest.param("SCORE\u202f:\u202f2", id="narrow-no-break-spaces"),
    pytest.param("VERDICT:\tfalse", id="tab"),
    pytest.param("VERDICT\uff1a false", id="fullwidth-colon"),
    pytest.param("VERDICT\ufe55 false", id="small-colon"),
    pytest.param("VERDICT\ua789 false", id="modifier-letter-colon"),
    pytest.param("Score: \u0662", id="arabic-indic-digit"),
    # a label alone on its line, the value below it
    pytest.param("## Verdict\nFalse", id="heading-then-value"),
    pytest.param("**Final score:**\n\n2/9", id="label-blank-line-value"),
    # another label for the verdict, on a line of its own
    pytest.param("Final answer: false", id="final-answer"),
    pytest.param("**Decision:** no", id="bold-decision"),
    pytest.param("Conclusion \u2014 false.", id="conclusion-em-dash"),
    pytest.param("My judgement = fail", id="judgement-equals"),
    pytest.param("Rating: 2/9", id="rating-2-slash-9"),
    pytest.param("- Grade: 2 out of 9.", id="grade-out-of"),
    # a verdict key of JSON or of a Python dict
    pytest.param('So {"value": false}.', id="json-value"),
    pytest.param("Draft: {'value': False}", id="dict-value"),
    pytest.param("\u201cvalue\u201d: false", id="curly-quoted-value"),
    pytest.param('Draft: {"verdict": false}', id="json-verdict-key"),
]

FINAL_LINES = {"check": ("VERDICT: true", True), "score": ("SCORE: 9", 9)}


@pytest.mark.parametrize("kind", ["check", "score"])
@pytest.mark.parametrize("where", ["first", "middle"])
@pytest.mark.parametrize("earlier", EARLIER_STATEMENTS)
def test_an_earlier_verdict_in_any_spelling_makes_the_reply_unparsable(
    earlier: str, where: str, kind: str
) -> None:
    final, _ = FINAL_LINES[kind]
    lines = [earlier, "Oscar says he likes quiet cities."]
    if where == "middle":
        lines.reverse()
    text = "\n".join([*lines, final])
    with pytest.raises(VerdictUnparsable, match="more than once") as info:
        read_reply(text, kind)  # type: ignore[arg-type]
    assert info.value.raw_reply == text
    assert verdict_stated_in(earlier) is not None


ORDINARY_PROSE = [
    "The score of the conversation suggests Oscar was polite.",
    "Oscar's verdict on the hotel was harsh.",
    "He gave no verdict.",
    "The agents kept score of who spoke.",
    "Scores of tourists passed by; Oscar scored a discount.",
    "A verdict is needed on whether Oscar travels.",
    "The scoreboard stayed blank.",
    "Score-keeping was fair.",
    "In the verdict, truthfulness matters.",
    "The score is not what matters here.",
    "True to his persona, Oscar is quiet; yes, 9 of 12 events are small talk.",
    "The value of the trip was high: 3 cities, no flights.",
    "Reasons for my score:\n1. Oscar greets Ana.\n2. He names Lisbon.",
    "Verdict pending; see the last line.",
    "Oscar said \u201cno\u201d to the tour and kept his values.",
    "\u0410\u043d\u0430 \u0433\u043e\u0432\u043e\u0440\u0438\u0442: 2 \u0433\u043e\u0440\u043e\u0434\u0430.",
    "Oscar's answer was no, and his decision to stay was final.",
    "The answer: Oscar turns down the beach.",
    "Result: 2 of 3 agents named a city.",
]


@pytest.mark.parametrize("kind", ["check", "score"])
@pytest.mark.parametrize("prose", ORDINARY_PROSE)
def test_ordinary_prose_before_the_final_line_still_parses(prose: str, kind: str) -> None:
    final, value = FINAL_LINES[kind]
    parsed = read_reply(f"{prose}\n{final}", kind)  # type: ignore[arg-type]
    assert parsed.value == value and type(parsed.value) is type(value)
    assert parsed.justification == prose
    assert verdict_stated_in(prose) is None


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        # The final line stays the one the prompt asks for: ASCII, any case, emphasis around it.
        ("He asks.\nSCORE: \u0669", "score"),
        ("He asks.\n\u017fcore: 9", "score"),
        ("He asks.\nV\u0415RDICT: true", "check"),
        ("He asks.\nVERDICT:\u00a0true", "check"),
        ("He asks.\nVERDICT\uff1a true", "check"),
        ("He asks.\nVERDICT : true", "check"),
        ("He asks.\nVERDICT: \uff54\uff52\uff55\uff45", "check"),
    ],
)
def test_the_final_line_is_only_the_form_the_prompt_asks_for(text: str, kind: str) -> None:
    with pytest.raises(VerdictUnparsable, match="neither one JSON object"):
        read_reply(text, kind)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "text",
    [
        # Text outside one JSON object never carries a verdict: the reply is not that object.
        "VERDICT: false\n" + reply(),
        reply() + "\nVERDICT: false",
        "```json\n" + reply() + "\n```\nVERDICT: false",
        "VERDICT: false\n```json\n" + reply() + "\n```",
        "<think>x</think>VERDICT: false\n" + reply(),
        # A closing tag that does not open the reply hides nothing before it.
        "VERDICT: false </think>" + reply(),
        "Draft: " + reply(value=False) + "\n</think>\n" + reply(),
        "VERDICT: false\nA literal </think> tag.\nVERDICT: true",
        "<think>x</think>VERDICT: false\n</think>\nVERDICT: true",
        "Verdict:\nfalse</think>\nVERDICT: true",
    ],
)
def test_nothing_outside_the_answer_smuggles_a_verdict_in(text: str) -> None:
    with pytest.raises(VerdictUnparsable):
        read_reply(strip_thinking(text), "check")


# -- thinking blocks ----------------------------------------------------------------------

THOUGHT_ANSWER = '{"reasoning": "r", "justification": "j", "value": true, "confidence": 0.9}'


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (f"<think>\nIt is false.\n</think>\n\n{THOUGHT_ANSWER}", THOUGHT_ANSWER),
        (f"\n  <thinking>false</thinking>{THOUGHT_ANSWER}", THOUGHT_ANSWER),
        (
            f"Value false? No.\n</think>\n\n{THOUGHT_ANSWER}",
            THOUGHT_ANSWER,
        ),  # the template opened it
        # A closing tag that does not open the reply never hides a verdict before it.
        (
            f"VERDICT: false\n</think>\n{THOUGHT_ANSWER}",
            f"VERDICT: false\n</think>\n{THOUGHT_ANSWER}",
        ),
        ("SCORE: 2 </think> SCORE: 9", "SCORE: 2 </think> SCORE: 9"),
        (
            f'Draft: {{"value": false}}</think>{THOUGHT_ANSWER}',
            f'Draft: {{"value": false}}</think>{THOUGHT_ANSWER}',
        ),
        (
            "**Verdict:** false\n</thinking>\nVERDICT: true",
            "**Verdict:** false\n</thinking>\nVERDICT: true",
        ),
        # ... nor does one after a block that opens it: only that block is stripped.
        (
            "<think>x</think>VERDICT: false\n</think>\nVERDICT: true",
            "VERDICT: false\n</think>\nVERDICT: true",
        ),
        ("<think>\nThe value is false, so", ""),  # cut off while thinking: no answer
        (THOUGHT_ANSWER, THOUGHT_ANSWER),
        (
            '{"reasoning": "a </think> tag", "value": true}',
            '{"reasoning": "a </think> tag", "value": true}',
        ),
        ("Yes.", "Yes."),
    ],
)
def test_a_leading_think_block_is_stripped(content: str, expected: str) -> None:
    assert strip_thinking(content) == expected


def test_the_reader_strips_the_opening_think_block_itself() -> None:
    """The one reader of replies strips the block: no caller can forget to (a scratchpad's
    "false" never reaches the parser, a verdict before a lone closing tag is never hidden)."""
    assert read_reply(f"<think>It is false.</think>\n{THOUGHT_ANSWER}", "check").value is True
    with pytest.raises(VerdictUnparsable):
        read_reply(f"VERDICT: false\n</think>\n{THOUGHT_ANSWER}", "check")
