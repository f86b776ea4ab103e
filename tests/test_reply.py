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
        ("Here: " + reply(value=False) + "\nVERDICT: true", "check", "a JSON verdict besides"),
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
