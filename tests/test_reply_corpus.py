"""The strict reply contract against a corpus of the odd replies judges really send, plus
properties. The contract, entry by entry, is in test_reply.py.

The corpus was written for the lenient grammar this contract replaced: each entry keeps its
input, its id and what that grammar read from it. A reply the lenient grammar refused is still
refused; a reply it read is refused now, unless it keeps the contract (``KEEPS_CONTRACT``), and
then it gives the same verdict. Never a different one.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_propositions.errors import VerdictUnparsable
from pytest_propositions.judging.reply import ParsedReply, read_choices, read_reply
from pytest_propositions.scale import MAX_SCORE, MIN_SCORE

# Marks a corpus entry that the lenient grammar already refused.
UNPARSABLE: dict[str, Any] = {}

# The entries that keep the contract (one JSON object of exactly the schema's keys, in at most
# one code fence, or text ending with a VERDICT:/SCORE: line): read, with the same verdict.
# Every other entry is refused.
KEEPS_CONTRACT = frozenset(
    {
        "clean-check",
        "clean-score",
        "plain-score-prefix",
        "adv-verdict-label-false",
        "adv-final-line-false-after-true-words",
        "adv-final-line-low-score-after-high-numbers",
        "adv-fenced-full-object-false",
    }
)


def full(value: object, **fields: object) -> str:
    """A reply of exactly the schema's keys (what a schema-constrained judge sends)."""
    reply = {"reasoning": "r", "justification": "j", "value": value, "confidence": 0.5}
    reply.update(fields)
    return json.dumps(reply)


HTML_PAGE = (
    "<!DOCTYPE html>\n<html><head><title>502 Bad Gateway</title>"
    "<style>body { font-family: sans-serif; }</style></head>\n"
    "<body><h1>502 Bad Gateway</h1><p>nginx</p></body></html>"
)

CORPUS = [
    # --- well-formed and fenced ---------------------------------------------------------
    pytest.param(
        '{"reasoning": "r", "justification": "j", "value": true, "confidence": 0.9}',
        "check",
        {"value": True, "justification": "j", "reasoning": "r", "confidence": 0.9},
        id="clean-check",
    ),
    pytest.param(
        '{"reasoning": "r", "justification": "j", "value": 7, "confidence": 0.5}',
        "score",
        {"value": 7, "justification": "j", "reasoning": "r", "confidence": 0.5},
        id="clean-score",
    ),
    pytest.param(
        '```json\n{"value": false, "justification": "never asked"}\n```',
        "check",
        {"value": False, "justification": "never asked"},
        id="fenced-json",
    ),
    pytest.param(
        '```\n{"value": 4, "justification": "half"}\n```',
        "score",
        {"value": 4, "justification": "half"},
        id="fenced-no-language",
    ),
    pytest.param(
        'Sure! Here is my evaluation:\n{"value": true, "justification": "it greeted"}\n'
        "Hope it helps!",
        "check",
        {"value": True, "justification": "it greeted"},
        id="prose-around-json",
    ),
    pytest.param(
        'Looking at {the trace}, I conclude:\n```json\n{"value": 2, "justification": "x"}\n```',
        "score",
        {"value": 2, "justification": "x"},
        id="prose-braces-before-json",
    ),
    pytest.param(
        '[{"value": true, "justification": "listed"}]',
        "check",
        {"value": True, "justification": "listed"},
        id="object-in-array",
    ),
    pytest.param(
        '"{\\"value\\": false, \\"justification\\": \\"double-encoded\\"}"',
        "check",
        {"value": False, "justification": "double-encoded"},
        id="double-encoded-json-string",
    ),
    # --- broken JSON that is still recoverable -----------------------------------------
    pytest.param(
        '{"reasoning": "step 1\nstep 2", "justification": "a\tb", "value": true}',
        "check",
        {"value": True, "justification": "a\tb", "reasoning": "step 1\nstep 2"},
        id="raw-newline-and-tab-in-strings",
    ),
    pytest.param(
        '{"value": 6, "justification": "fine", "confidence": 0.7,}',
        "score",
        {"value": 6, "justification": "fine", "confidence": 0.7},
        id="trailing-comma",
    ),
    pytest.param(
        '{"value": true, "tags": ["a", "b",], "justification": "j",\n}',
        "check",
        {"value": True, "justification": "j"},
        id="trailing-commas-nested",
    ),
    pytest.param(
        "{'value': True, 'justification': 'it said \"hi\"', 'confidence': 0.6}",
        "check",
        {"value": True, "justification": 'it said "hi"', "confidence": 0.6},
        id="single-quoted-python-dict",
    ),
    pytest.param(
        "{'value': false, 'justification': 'json words,\nraw newline',}",
        "check",
        {"value": False, "justification": "json words,\nraw newline"},
        id="single-quoted-json-words",
    ),
    pytest.param(
        '{"Reasoning": "r", "Justification": "j", "Value": 8, "CONFIDENCE": "0.8"}',
        "score",
        {"value": 8, "justification": "j", "reasoning": "r", "confidence": 0.8},
        id="capitalised-keys",
    ),
    pytest.param(
        '{"verdict": {"value": true, "justification": "wrapped"}}',
        "check",
        {"value": True, "justification": "wrapped"},
        id="verdict-wrapper",
    ),
    pytest.param(
        '{"reasoning": "outer", "result": {"value": 3, "justification": "inner"}}',
        "score",
        {"value": 3, "justification": "inner", "reasoning": "outer"},
        id="result-wrapper-keeps-outer-reasoning",
    ),
    pytest.param(
        '{"score": 5, "explanation": "used the synonym keys"}',
        "score",
        {"value": 5, "justification": "used the synonym keys", "reasoning": ""},
        id="score-key-and-explanation",
    ),
    pytest.param(
        '{"value": true, "reason": "short reason"}',
        "check",
        {"value": True, "justification": "short reason", "reasoning": "", "confidence": None},
        id="reason-key-no-reasoning",
    ),
    pytest.param(
        '{"value": true}',
        "check",
        {"value": True, "justification": "", "reasoning": "", "confidence": None},
        id="value-only",
    ),
    pytest.param(
        '{"value": true, "justification": "Der Agent grüßte 👋 — «bien»", "reasoning": "日本語"}',
        "check",
        {"value": True, "justification": "Der Agent grüßte 👋 — «bien»", "reasoning": "日本語"},
        id="unicode-strings",
    ),
    pytest.param(
        '{"value": true, "justification": "the user wrote {not json}"}',
        "check",
        {"value": True, "justification": "the user wrote {not json}"},
        id="braces-inside-string",
    ),
    # --- check values --------------------------------------------------------------------
    pytest.param('{"value": "true"}', "check", {"value": True}, id="check-string-true"),
    pytest.param('{"value": "TRUE"}', "check", {"value": True}, id="check-string-TRUE"),
    pytest.param('{"value": "Yes"}', "check", {"value": True}, id="check-string-Yes"),
    pytest.param('{"value": "No."}', "check", {"value": False}, id="check-string-No-dot"),
    pytest.param('{"value": "negative"}', "check", {"value": False}, id="check-negative"),
    pytest.param(
        '{"value": "True, because it apologised"}',
        "check",
        {"value": True},
        id="check-string-starting-true",
    ),
    pytest.param('{"value": 1}', "check", UNPARSABLE, id="check-int-1-rejected"),
    pytest.param('{"value": 0}', "check", UNPARSABLE, id="check-int-0-rejected"),
    pytest.param('{"value": "true/false"}', "check", UNPARSABLE, id="check-both-words"),
    pytest.param('{"value": "Mostly true"}', "check", UNPARSABLE, id="check-mostly-true"),
    pytest.param('{"value": "partially"}', "check", UNPARSABLE, id="check-neither-word"),
    pytest.param('{"value": null}', "check", UNPARSABLE, id="check-null-value"),
    # --- score values --------------------------------------------------------------------
    pytest.param('{"value": "7"}', "score", {"value": 7}, id="score-string-7"),
    pytest.param('{"value": "7/9"}', "score", {"value": 7}, id="score-7-slash-9"),
    pytest.param('{"value": "7.0"}', "score", {"value": 7}, id="score-string-7.0"),
    pytest.param('{"value": 7.0}', "score", {"value": 7}, id="score-float-7.0"),
    pytest.param('{"value": "7 out of 9"}', "score", {"value": 7}, id="score-7-out-of-9"),
    pytest.param('{"value": "Score: 7"}', "score", {"value": 7}, id="score-prefixed"),
    pytest.param('{"value": 0}', "score", {"value": 0}, id="score-zero"),
    pytest.param('{"value": 9}', "score", {"value": 9}, id="score-nine"),
    pytest.param('{"value": 7.5}', "score", UNPARSABLE, id="score-7.5-rejected"),
    pytest.param('{"value": "7.5"}', "score", UNPARSABLE, id="score-string-7.5-rejected"),
    pytest.param('{"value": 10}', "score", UNPARSABLE, id="score-10-rejected"),
    pytest.param('{"value": -1}', "score", UNPARSABLE, id="score-minus-1-rejected"),
    pytest.param('{"value": "10/10"}', "score", UNPARSABLE, id="score-10-of-10-rejected"),
    pytest.param('{"value": "7/10"}', "score", UNPARSABLE, id="score-other-scale-rejected"),
    pytest.param('{"value": "7-8"}', "score", UNPARSABLE, id="score-range-rejected"),
    pytest.param('{"value": true}', "score", UNPARSABLE, id="score-bool-rejected"),
    pytest.param('{"value": "seven"}', "score", UNPARSABLE, id="score-word-rejected"),
    # --- confidence ----------------------------------------------------------------------
    pytest.param(
        '{"value": true, "confidence": "0.8"}', "check", {"confidence": 0.8}, id="conf-string"
    ),
    pytest.param(
        '{"value": true, "confidence": "85%"}', "check", {"confidence": 0.85}, id="conf-percent"
    ),
    pytest.param(
        '{"value": true, "confidence": 1.5}', "check", {"confidence": None}, id="conf-1.5-none"
    ),
    pytest.param(
        '{"value": true, "confidence": 85}', "check", {"confidence": None}, id="conf-85-none"
    ),
    pytest.param(
        '{"value": true, "confidence": "high"}', "check", {"confidence": None}, id="conf-word"
    ),
    pytest.param(
        '{"value": true, "confidence": 1}', "check", {"confidence": 1.0}, id="conf-int-one"
    ),
    # --- several objects -----------------------------------------------------------------
    pytest.param(
        '{"value": true, "justification": "first"}\n{"value": true, "justification": "second"}',
        "check",
        {"value": True, "justification": "first"},
        id="two-objects-agreeing-first-wins",
    ),
    pytest.param(
        '{"value": true, "justification": "a"} Actually, wait: {"value": false}',
        "check",
        UNPARSABLE,
        id="two-objects-contradicting",
    ),
    pytest.param(
        'Context: {"turns": 3}\nVerdict: {"value": 5, "justification": "ok"}',
        "score",
        {"value": 5, "justification": "ok"},
        id="non-verdict-object-skipped",
    ),
    pytest.param(
        '{"value": null, "score": 5}', "score", UNPARSABLE, id="null-value-not-masked-by-alias"
    ),
    # --- reasoning models ----------------------------------------------------------------
    pytest.param(
        '<think>Draft: {"value": false}. No wait, it did apologise.</think>\n'
        '{"value": true, "justification": "apologised"}',
        "check",
        {"value": True, "justification": "apologised"},
        id="think-block-drafts-ignored",
    ),
    pytest.param(
        "<think>\nThe agent was polite but slow.\n</think>\n\n6 - polite, slow",
        "score",
        {"value": 6, "justification": "polite, slow"},
        id="think-block-then-plain-score",
    ),
    # --- plain text ----------------------------------------------------------------------
    pytest.param(
        "True, because the agent confirmed the booking.",
        "check",
        {"value": True, "justification": "because the agent confirmed the booking."},
        id="plain-true-because",
    ),
    pytest.param("False", "check", {"value": False, "justification": ""}, id="plain-false"),
    pytest.param(
        "False — the agent never asked for the order number.",
        "check",
        {"value": False, "justification": "the agent never asked for the order number."},
        id="plain-false-em-dash",
    ),
    pytest.param("**Yes.**", "check", {"value": True}, id="plain-markdown-yes"),
    pytest.param(
        "**Yes.** The user was greeted by name.",
        "check",
        UNPARSABLE,
        id="plain-yes-then-prose-is-not-a-statement",
    ),
    pytest.param(
        "Verdict: False. It refused twice.",
        "check",
        {"value": False, "justification": "It refused twice."},
        id="plain-verdict-prefix",
    ),
    pytest.param(
        "3 - mostly false",
        "score",
        {"value": 3, "justification": "mostly false"},
        id="plain-score-dash",
    ),
    pytest.param(
        "7/9: clear and polite",
        "score",
        {"value": 7, "justification": "clear and polite"},
        id="plain-score-slash",
    ),
    pytest.param("Score: 8", "score", {"value": 8, "justification": ""}, id="plain-score-prefix"),
    pytest.param(
        "1. First, the agent greeted the user.", "score", UNPARSABLE, id="plain-numbered-list"
    ),
    pytest.param("Maybe true", "check", UNPARSABLE, id="plain-hedged"),
    pytest.param("Yes and no.", "check", UNPARSABLE, id="plain-yes-and-no"),
    pytest.param("I would give it a 7.", "score", UNPARSABLE, id="plain-score-not-leading"),
    # --- no verdict at all ---------------------------------------------------------------
    pytest.param(
        '{"reasoning": "r", "justification": "j", "confidence": 0.9}',
        "check",
        UNPARSABLE,
        id="missing-value",
    ),
    pytest.param("", "check", UNPARSABLE, id="empty-string"),
    pytest.param("   \n\t ", "score", UNPARSABLE, id="whitespace-only"),
    pytest.param(None, "check", UNPARSABLE, id="none"),
    pytest.param(
        "I'm sorry, but I can't help with that request.", "check", UNPARSABLE, id="refusal"
    ),
    pytest.param(HTML_PAGE, "score", UNPARSABLE, id="html-error-page"),
    pytest.param('{"value": tr', "check", UNPARSABLE, id="truncated-json"),
    pytest.param('{"reasoning": "the agent', "score", UNPARSABLE, id="truncated-before-value"),
    pytest.param(
        '```json\n{"value": true, "justification": "cut', "check", UNPARSABLE, id="truncated-fence"
    ),
]


# Replies that a first-cue reader turns into a wrong verdict. Each is either the verdict it
# really states or unparsable; never the other outcome, never a higher score than stated.
ADVERSARIAL = [
    # --- the issue's own examples --------------------------------------------------------
    pytest.param(
        "True to his persona, Oscar never mentions travel, so the claim is false.",
        "check",
        UNPARSABLE,
        id="adv-true-to-persona-then-false",
    ),
    pytest.param(
        "Positive thinking aside, the claim is false.",
        "check",
        UNPARSABLE,
        id="adv-positive-thinking-aside",
    ),
    pytest.param(
        "Yes, I can help with that. Let me analyze...", "check", UNPARSABLE, id="adv-yes-i-can-help"
    ),
    pytest.param(
        '{"value": "The claim is false: Oscar never mentions travel.", "justification": "j"}',
        "check",
        {"value": False},
        id="adv-json-value-sentence-false",
    ),
    pytest.param(
        '{"value": "True to form, the claim is false."}',
        "check",
        UNPARSABLE,
        id="adv-json-value-true-to-form",
    ),
    pytest.param(
        "9 out of the 12 events are irrelevant; I'd rate this a 2/9.",
        "score",
        UNPARSABLE,
        id="adv-9-out-of-12-then-2",
    ),
    # --- checks that state False ---------------------------------------------------------
    pytest.param("no.", "check", {"value": False}, id="adv-whole-no-dot"),
    pytest.param("`False`", "check", {"value": False}, id="adv-whole-false-backticks"),
    pytest.param("Verdict: false", "check", {"value": False}, id="adv-verdict-label-false"),
    pytest.param("The claim is false.", "check", {"value": False}, id="adv-claim-is-false"),
    pytest.param("The claim is not true.", "check", {"value": False}, id="adv-claim-is-not-true"),
    pytest.param(
        "Oscar never mentions travel, so the claim is false.",
        "check",
        {"value": False},
        id="adv-reasoning-then-claim-false",
    ),
    pytest.param(
        "The agent greeted nobody.\n\n**Verdict:** False",
        "check",
        {"value": False},
        id="adv-reasoning-then-bold-verdict",
    ),
    pytest.param(
        "## Verdict\nFalse\n\nOscar never travels.",
        "check",
        {"value": False, "justification": "Oscar never travels."},
        id="adv-markdown-heading-verdict",
    ),
    pytest.param("```\nFalse\n```", "check", {"value": False}, id="adv-fenced-plain-false"),
    pytest.param(
        "No problem! Here is my analysis of the trace.", "check", UNPARSABLE, id="adv-no-problem"
    ),
    pytest.param("Yes, the claim is false.", "check", UNPARSABLE, id="adv-yes-then-claim-false"),
    pytest.param("True. Actually, false.", "check", UNPARSABLE, id="adv-true-then-false"),
    pytest.param("True, No.", "check", UNPARSABLE, id="adv-true-then-standalone-no"),
    pytest.param(
        "True, but only for the first half of the trace.",
        "check",
        UNPARSABLE,
        id="adv-true-but-retracted",
    ),
    pytest.param(
        "It is not the case that the claim is true.",
        "check",
        UNPARSABLE,
        id="adv-negated-from-outside",
    ),
    pytest.param(
        "If Oscar had mentioned Rome, the claim is true. He did not.",
        "check",
        UNPARSABLE,
        id="adv-conditional-claim-true",
    ),
    pytest.param("Some would say the claim is true.", "check", UNPARSABLE, id="adv-reported-view"),
    pytest.param("The claim is not false.", "check", UNPARSABLE, id="adv-not-false"),
    pytest.param(
        "The claim is mostly true, but he never names a city.",
        "check",
        UNPARSABLE,
        id="adv-claim-mostly-true",
    ),
    pytest.param("Verdict: true/false", "check", UNPARSABLE, id="adv-verdict-both-words"),
    pytest.param(
        "Answer: no greeting happened, yet Ana replied.",
        "check",
        UNPARSABLE,
        id="adv-answer-no-as-determiner",
    ),
    pytest.param(
        "Verdict: True\nOn reflection, the claim is false.",
        "check",
        UNPARSABLE,
        id="adv-two-statements-disagree",
    ),
    pytest.param(
        'False.\n{"value": true, "justification": "greeted"}',
        "check",
        UNPARSABLE,
        id="adv-prose-contradicts-json",
    ),
    pytest.param(
        'Yes, here is my evaluation:\n```json\n{"value": false, "justification": "none"}\n```',
        "check",
        {"value": False},
        id="adv-yes-preamble-json-false",
    ),
    pytest.param(
        '{"value": "Yes, I can help with that."}', "check", UNPARSABLE, id="adv-json-value-yes-help"
    ),
    pytest.param(
        '{"value": "false", "justification": "True, he spoke, but never of travel."}',
        "check",
        {"value": False},
        id="adv-json-false-true-in-justification",
    ),
    # --- checks that state True ----------------------------------------------------------
    pytest.param("TRUE", "check", {"value": True}, id="adv-whole-true-caps"),
    pytest.param("Overall, the claim is true.", "check", {"value": True}, id="adv-overall-true"),
    pytest.param(
        "Ana greets Bob at once. Verdict: True.",
        "check",
        {"value": True},
        id="adv-reasoning-then-verdict-true",
    ),
    pytest.param("The answer is yes.", "check", {"value": True}, id="adv-the-answer-is-yes"),
    pytest.param(
        "No doubt about it: the claim is true.",
        "check",
        UNPARSABLE,
        id="adv-no-doubt-then-true",
    ),
    pytest.param(
        "False alarm aside, the claim is true.", "check", UNPARSABLE, id="adv-false-alarm-aside"
    ),
    # --- scores --------------------------------------------------------------------------
    pytest.param("7/9", "score", {"value": 7}, id="adv-whole-7-of-9"),
    pytest.param("Score: 6/9", "score", {"value": 6}, id="adv-score-label-6"),
    pytest.param("I'd rate this a 2/9.", "score", {"value": 2}, id="adv-rate-2-of-9"),
    pytest.param(
        "Ana greeted Bob. Score: 7/9", "score", {"value": 7}, id="adv-reasoning-then-score"
    ),
    pytest.param(
        "1. Greeted Bob.\n2. Left early.\nFinal score: 6/9",
        "score",
        {"value": 6},
        id="adv-numbered-reasoning-then-score",
    ),
    pytest.param("3 agents spoke. Score: 7/9", "score", UNPARSABLE, id="adv-leading-count"),
    pytest.param(
        "9/9 would be too generous. 2", "score", UNPARSABLE, id="adv-nine-then-standalone-2"
    ),
    pytest.param("Score: 7. Score: 3.", "score", UNPARSABLE, id="adv-two-scores-disagree"),
    pytest.param("Score: 8/10", "score", UNPARSABLE, id="adv-score-out-of-10"),
    pytest.param("Rating: 6 or 7", "score", UNPARSABLE, id="adv-rating-either"),
    pytest.param("If the agent had stayed, 8/9.", "score", UNPARSABLE, id="adv-conditional-score"),
    pytest.param("I would give it a 7.", "score", UNPARSABLE, id="adv-bare-number-in-prose"),
    pytest.param(
        'Score: 8/9\n{"value": 2, "justification": "weak"}',
        "score",
        UNPARSABLE,
        id="adv-prose-score-contradicts-json",
    ),
    pytest.param(
        '{"value": "9 out of the 12 events are off; 2/9"}',
        "score",
        UNPARSABLE,
        id="adv-json-value-9-out-of-12",
    ),
    pytest.param(
        '{"value": "2/9, since 9 events are irrelevant"}',
        "score",
        {"value": 2},
        id="adv-json-value-2-then-count",
    ),
    pytest.param(
        '{"value": 3, "justification": "9/9 would be too generous"}',
        "score",
        {"value": 3},
        id="adv-json-int-high-number-in-justification",
    ),
    pytest.param("Score: 7\nConfidence: 0.8", "score", {"value": 7}, id="adv-score-confidence"),
    # --- replies that keep the contract, verdict words and numbers around them ------------
    pytest.param(
        "True to his persona, Oscar never mentions travel; yes, he is quiet.\nVERDICT: false",
        "check",
        {
            "value": False,
            "justification": "True to his persona, Oscar never mentions travel; yes, he is quiet.",
        },
        id="adv-final-line-false-after-true-words",
    ),
    pytest.param(
        "9 out of the 12 events are irrelevant; 9/9 would be too generous.\nSCORE: 2",
        "score",
        {"value": 2},
        id="adv-final-line-low-score-after-high-numbers",
    ),
    pytest.param(
        "```json\n" + full(False, justification="True, he spoke, but never of travel.") + "\n```",
        "check",
        {"value": False, "justification": "True, he spoke, but never of travel."},
        id="adv-fenced-full-object-false",
    ),
]


@pytest.mark.parametrize(("text", "kind", "expected"), ADVERSARIAL)
def test_adversarial(text: str, kind: str, expected: dict[str, Any], request: Any) -> None:
    test_corpus(text, kind, expected, request)


def test_adversarial_corpus_is_large_enough() -> None:
    assert len(ADVERSARIAL) >= 40
    outcomes = {(p.values[1], p.id not in KEEPS_CONTRACT) for p in ADVERSARIAL}
    assert outcomes == {("check", True), ("check", False), ("score", True), ("score", False)}


@pytest.mark.parametrize(("text", "kind", "expected"), CORPUS)
def test_corpus(text: str | None, kind: str, expected: dict[str, Any], request: Any) -> None:
    entry = request.node.callspec.id
    if entry not in KEEPS_CONTRACT:
        with pytest.raises(VerdictUnparsable) as info:
            read_reply(text, kind)  # type: ignore[arg-type]
        assert info.value.raw_reply == (text or "")
        return
    parsed = read_reply(text, kind)  # type: ignore[arg-type]
    for field, want in expected.items():
        assert getattr(parsed, field) == want, field
    # True == 1 in Python, so check the type too: a check is a bool, a score never is.
    assert isinstance(parsed.value, bool) is (kind == "check")


def test_corpus_is_large_enough() -> None:
    assert len(CORPUS) >= 40


def test_an_entry_refused_before_is_never_kept() -> None:
    ids = {p.id for p in [*CORPUS, *ADVERSARIAL]}
    assert ids >= KEEPS_CONTRACT
    refused = {p.id for p in [*CORPUS, *ADVERSARIAL] if p.values[2] is UNPARSABLE}
    assert not refused & KEEPS_CONTRACT


# --- the error message -----------------------------------------------------------------------


def test_message_says_what_was_expected_and_quotes_the_reply() -> None:
    reply = "I'm sorry, I can't help with that. " * 40
    with pytest.raises(VerdictUnparsable) as info:
        read_reply(reply, "score")
    message = str(info.value)
    assert "keys reasoning, justification, value, confidence" in message and "0..9" in message
    assert "SCORE: 7" in message
    assert repr(reply[:200]) in message
    assert reply not in message  # truncated, with the full length stated
    assert f"{len(reply)} characters" in message
    assert info.value.raw_reply == reply


def test_message_names_the_bad_value() -> None:
    # The lenient grammar's inputs: each now lacks keys of the schema, and the message says so.
    with pytest.raises(VerdictUnparsable, match="missing reasoning, justification, confidence"):
        read_reply('{"value": 12}', "score")
    with pytest.raises(VerdictUnparsable, match="missing reasoning, value, confidence"):
        read_reply('{"justification": "j"}', "check")
    with pytest.raises(VerdictUnparsable, match="no reply"):
        read_reply(None, "check")
    # The bad value itself, in an object of the schema's keys.
    with pytest.raises(VerdictUnparsable, match=r"outside 0\.\.9"):
        read_reply(full(12), "score")


def test_unknown_kind_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="kind"):
        read_reply('{"value": true}', "rank")  # type: ignore[arg-type]


def test_parsed_reply_is_frozen() -> None:
    parsed = read_reply(full(True), "check")
    with pytest.raises(AttributeError):
        parsed.value = False  # type: ignore[misc]


# --- values the lenient grammar coerced: a value is a JSON boolean or integer, or refused ----
# (coerce_check and coerce_score are gone with that grammar; their inputs stay, as the value of
# an object of the schema's keys.)


@pytest.mark.parametrize(
    ("raw", "want"),
    [
        (True, True),
        (False, False),
        ("true", True),
        ("True", True),
        ("TRUE", True),
        ("yes", True),
        ("Yes.", True),
        ("positive", True),
        ("false", False),
        ("no", False),
        ("negative", False),
        ("  'False'  ", False),
        ("The claim is false because he never asked", False),
    ],
)
def test_a_check_value_the_lenient_grammar_accepted_is_read_only_as_a_json_boolean(
    raw: object, want: bool
) -> None:
    if type(raw) is bool:
        assert read_reply(full(raw), "check").value is want
        return
    with pytest.raises(VerdictUnparsable, match="not true or false"):
        read_reply(full(raw), "check")


@pytest.mark.parametrize(
    "raw",
    [
        1,
        0,
        1.0,
        None,
        [],
        {},
        "",
        "1",
        "y",
        "not true",
        "yes or no",
        "True or False",
        "Trueish",
        "No, the agent never said yes",
        "Yes, I can help with that",
        "True to form, the claim is false",
    ],
)
def test_a_check_value_the_lenient_grammar_rejected_is_refused(raw: object) -> None:
    with pytest.raises(VerdictUnparsable, match="not true or false"):
        read_reply(full(raw), "check")


@pytest.mark.parametrize(
    ("raw", "want"),
    [
        (7, 7),
        (7.0, 7),
        ("7", 7),
        (" 7 ", 7),
        ("7/9", 7),
        ("7 / 9", 7),
        ("7 out of 9", 7),
        ("Score: 7", 7),
        ("**Score:** 7", 7),
        ("7 - because", 7),
        ("7. Solid", 7),
        ("0", 0),
        ("9", 9),
        ("+3", 3),
    ],
)
def test_a_score_value_the_lenient_grammar_accepted_is_read_only_as_a_json_integer(
    raw: object, want: int
) -> None:
    if type(raw) is int:
        got = read_reply(full(raw), "score").value
        assert got == want and type(got) is int
        return
    with pytest.raises(VerdictUnparsable, match="not a whole number"):
        read_reply(full(raw), "score")


@pytest.mark.parametrize(
    "raw",
    [
        True,
        False,
        7.5,
        float("nan"),
        float("inf"),
        10,
        -1,
        "10",
        "-1",
        "10/10",
        "7/10",
        "7.5",
        "7,5",
        "7-8",
        "7 to 8",
        "70%",
        "7th",
        "seven",
        "",
        None,
        [7],
        "9" * 5000,
    ],
)
def test_a_score_value_the_lenient_grammar_rejected_is_refused(raw: object) -> None:
    with pytest.raises(VerdictUnparsable, match=r"not a whole number|outside 0\.\.9"):
        read_reply(full(raw), "score")


# --- properties ------------------------------------------------------------------------------


@given(
    value=st.integers(MIN_SCORE, MAX_SCORE),
    justification=st.text(),
    reasoning=st.text(),
    confidence=st.floats(0.0, 1.0),
)
def test_score_round_trips(
    value: int, justification: str, reasoning: str, confidence: float
) -> None:
    reply = json.dumps(
        {
            "reasoning": reasoning,
            "justification": justification,
            "value": value,
            "confidence": confidence,
        }
    )
    assert read_reply(reply, "score") == ParsedReply(
        value, justification.strip(), reasoning.strip(), confidence
    )


@given(value=st.booleans(), justification=st.text(), ascii_only=st.booleans())
def test_check_round_trips(value: bool, justification: str, ascii_only: bool) -> None:
    # The lenient grammar's input (prose before a fence, two of the four keys): refused.
    reply = json.dumps({"value": value, "justification": justification}, ensure_ascii=ascii_only)
    with pytest.raises(VerdictUnparsable):
        read_reply(f"Here you go:\n```json\n{reply}\n```", "check")
    # The contract's form of it: one fenced object of the schema's keys.
    reply = json.dumps(
        {"reasoning": "", "justification": justification, "value": value, "confidence": 1},
        ensure_ascii=ascii_only,
    )
    parsed = read_reply(f"```json\n{reply}\n```", "check")
    assert parsed.value is value
    assert parsed.justification == justification.strip()


@given(st.text())
def test_any_text_parses_or_raises_unparsable(text: str) -> None:
    for kind in ("check", "score"):
        try:
            parsed = read_reply(text, kind)  # type: ignore[arg-type]
        except VerdictUnparsable as exc:
            assert exc.raw_reply == text
        else:
            if kind == "check":
                assert isinstance(parsed.value, bool)
            else:
                assert not isinstance(parsed.value, bool)
                assert MIN_SCORE <= parsed.value <= MAX_SCORE


@given(st.from_regex(r"[\s{}\[\]\"',:0-9a-z\\]{0,80}", fullmatch=True))
def test_json_like_noise_parses_or_raises_unparsable(text: str) -> None:
    with contextlib.suppress(VerdictUnparsable):
        read_reply(text, "score")


def test_many_stray_braces_stay_cheap() -> None:
    text = "{" * 20_000 + '{"value": 1}'
    with pytest.raises(VerdictUnparsable):
        read_reply(text, "check")


# --- no reply stating "false" (or a low score) ever passes -----------------------------------

TRUEISH_PREFIXES = [
    "",
    "True to form, ",
    "True to his persona, Oscar stays quiet, so ",
    "Yes, ",
    "Yes. ",
    "Yes! I can help with that. ",
    "Positive thinking aside, ",
    "Positive: ",
    "9 out of 10 times, ",
    "True, ",
    "True.\n",
    "It is true that Oscar spoke, but ",
    "The answer is yes, I can help. ",
    "**True** to the persona, ",
    "Well, ",
]
FALSE_STATEMENTS = [
    "the claim is false.",
    "the claim is not true.",
    "the claim is incorrect.",
    "Verdict: False",
    "Verdict: **false**",
    "The verdict is false.",
    "Answer: no.",
    "False",
    "false.",
    "No.",
    # The contract's final line.
    "\nVERDICT: false",
    "\n**VERDICT: FALSE**",
]
TRUEISH_SUFFIXES = [
    "",
    " Yes, really.",
    " True story.",
    " Positive.",
    " It is true that he spoke.",
    " Yes",
    " (true to his persona)",
    "\n\nVerdict: true?",
    " 9 out of 9 agents agree.",
]


def _wrapped(text: str, wrapper: int) -> str:
    return [
        text,
        f"```\n{text}\n```",
        json.dumps({"value": text, "justification": "j"}),
        "Here it is: " + json.dumps({"value": text}),
        f"**{text}**",
        f"<think>The claim is true.</think>{text}",
        text + "\n" + json.dumps({"value": False}),
        text.upper(),
        json.dumps(json.dumps({"value": text})),
        # An object of the schema's keys saying false, with the text in its reasons.
        full(False, reasoning=text, justification=text),
        # ... and one whose value is the text.
        full(text),
    ][wrapper]


@given(
    prefix=st.sampled_from(TRUEISH_PREFIXES),
    statement=st.sampled_from(FALSE_STATEMENTS),
    suffix=st.sampled_from(TRUEISH_SUFFIXES),
    wrapper=st.integers(0, 10),
)
def test_a_reply_stating_false_never_parses_as_true(
    prefix: str, statement: str, suffix: str, wrapper: int
) -> None:
    reply = _wrapped(prefix + statement + suffix, wrapper)
    try:
        parsed = read_reply(reply, "check")
    except VerdictUnparsable:
        return
    assert parsed.value is False, reply


HIGH_NOISE_PREFIXES = [
    "",
    "9 out of the 12 events are irrelevant; ",
    "9/9 would be too generous. ",
    "Yes, ",
    "8 agents spoke. ",
    "9. ",
    "9 - ",
    "Rating: 9/9 for tone, but ",
    "Top marks (9) aside, ",
    "Out of 9 possible points, ",
]
LOW_SCORE_STATEMENTS = [
    "Score: 2/9",
    "2/9",
    "I'd rate this a 2/9.",
    "Rating: 2",
    "Final score: 2",
    "a score of 2 out of 9",
    "Verdict: 2/9",
    "**2**/9",
    # The contract's final line.
    "\nSCORE: 2",
    "\nScore: 2.",
]
HIGH_NOISE_SUFFIXES = ["", " 9/9 for effort.", " Not a 9.", " (9 events)", " 9", "\n9", "."]


@given(
    prefix=st.sampled_from(HIGH_NOISE_PREFIXES),
    statement=st.sampled_from(LOW_SCORE_STATEMENTS),
    suffix=st.sampled_from(HIGH_NOISE_SUFFIXES),
    wrapper=st.integers(0, 10),
)
def test_a_low_score_statement_never_parses_higher(
    prefix: str, statement: str, suffix: str, wrapper: int
) -> None:
    text = prefix + statement + suffix
    if wrapper == 6:
        reply = text + "\n" + json.dumps({"value": 2})
    elif wrapper == 9:
        reply = full(2, reasoning=text, justification=text)
    else:
        reply = _wrapped(text, wrapper)
    try:
        parsed = read_reply(reply, "score")
    except VerdictUnparsable:
        return
    assert parsed.value == 2, reply


# --- a key given twice is two answers, never last-key-wins -----------------------------------


@pytest.mark.parametrize(
    ("text", "kind", "reason"),
    [
        ('{"value": false, "justification": "no", "value": true}', "check", "'value' twice"),
        ('{"value": true, "justification": "yes", "value": false}', "check", "'value' twice"),
        ('{"value": false, "Value": true}', "check", "breaks the reply schema"),
        ('{"verdict": {"value": false, "value": true}}', "check", "'value' twice"),
        ('{"verdict": {"value": false}, "verdict": {"value": true}}', "check", "'verdict' twice"),
        ('{"value": true, "value": 1}', "check", "'value' twice"),
        ("{'value': False, 'value': True}", "check", "not one JSON object"),
        ('Here: {"value": false, "value": true,}', "check", "neither one JSON object"),
        ('{"value": 2, "justification": "weak", "value": 8}', "score", "'value' twice"),
        ("{'score': 2, 'score': 8}", "score", "not one JSON object"),
        # In an object of the schema's keys.
        (
            '{"reasoning": "r", "justification": "j", "value": false, "confidence": 0.5, '
            '"value": true}',
            "check",
            "'value' twice",
        ),
    ],
)
def test_a_repeated_verdict_key_is_contradicting_verdicts(
    text: str, kind: str, reason: str
) -> None:
    with pytest.raises(VerdictUnparsable, match=reason) as caught:
        read_reply(text, kind)  # type: ignore[arg-type]
    assert caught.value.raw_reply == text


def test_a_repeated_key_of_another_field_is_ambiguous_too() -> None:
    with pytest.raises(VerdictUnparsable, match="'confidence' twice"):
        read_reply('{"value": true, "confidence": 0.1, "confidence": 0.9}', "check")
    with pytest.raises(VerdictUnparsable, match="'justification' twice"):
        read_reply('{"value": true, "justification": "a", "justification": "b"}', "check")


def test_a_key_repeated_even_with_the_same_value_is_refused() -> None:
    # The lenient grammar read this as one verdict; the contract has each key once.
    with pytest.raises(VerdictUnparsable, match="'value' twice"):
        read_reply('{"value": true, "value": true, "justification": "j"}', "check")


# --- a verdict named under several keys: the schema has one verdict key ----------------------


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        # The four that passed before the lenient grammar checked them, read as "value" said.
        ('{"answer": false, "value": true}', "check"),
        ('{"verdict": {"value": false}, "value": true}', "check"),
        ('{"value": true, "Verdict": false}', "check"),
        ('{"value": true, "score": 0}', "check"),
        # Other verdict keys, any case, any depth, lists included.
        ('{"value": true, "HOLDS": false}', "check"),
        ('{"value": true, "holds": "no"}', "check"),
        ('{"value": true, "result": "False. He never travels."}', "check"),
        ('{"value": true, "details": {"inner": {"decision": false}}}', "check"),
        ('{"value": true, "evidence": [{"passed": false}]}', "check"),
        ('{"Verdict": {"Value": true, "Answer": false}}', "check"),
        ("{'value': True, 'is_true': False}", "check"),
        ('Verdict follows: {"value": true, "outcome": "no"}', "check"),
        # A number beside a check's boolean.
        ('{"value": true, "score": 9}', "check"),
        ('{"value": false, "score": 1}', "check"),
        ('{"value": true, "rating": "7/9"}', "check"),
        # A score: two scores that differ; a boolean is no score.
        ('{"value": 7, "score": 2}', "score"),
        ('{"score": 7, "rating": "2/9"}', "score"),
        ('{"value": 7, "details": {"grade": 3}}', "score"),
        ('{"value": 7, "holds": true}', "score"),
        ('{"value": 7, "result": 12}', "score"),
    ],
)
def test_verdict_keys_that_disagree_are_contradicting_verdicts(text: str, kind: str) -> None:
    with pytest.raises(VerdictUnparsable) as caught:
        read_reply(text, kind)  # type: ignore[arg-type]
    assert caught.value.raw_reply == text


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ('{"value": true, "result": "The claim does not hold."}', "check"),
        ('{"value": true, "verdict": "pass"}', "check"),
        ('{"verdict": {"value": true, "answer": ["yes", "no"]}}', "check"),
        ('{"value": 7, "rating": "good"}', "score"),
    ],
)
def test_a_verdict_key_beside_the_verdict_that_states_none_is_unparsable(
    text: str, kind: str
) -> None:
    with pytest.raises(VerdictUnparsable, match="breaks the reply schema"):
        read_reply(text, kind)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ('{"value": true, "answer": true, "Verdict": "True"}', "check"),
        ('{"verdict": {"value": false}, "value": false, "holds": "no"}', "check"),
        ('{"value": false, "score": 0}', "check"),
        ('{"value": 7, "score": 7, "rating": "7/9"}', "score"),
        ('{"value": true, "answer": null, "result": ""}', "check"),
        ('{"value": true, "evidence": [{"tool": "search", "result": "ok"}]}', "check"),
        # A second verdict key beside all of the schema's keys, agreeing or not.
        (full(True, verdict=True), "check"),
        (full(7, score=7), "score"),
    ],
)
def test_verdict_keys_that_agree_are_refused_too(text: str, kind: str) -> None:
    """The lenient grammar read these as one verdict; a key the schema lacks breaks it."""
    with pytest.raises(VerdictUnparsable, match="breaks the reply schema"):
        read_reply(text, kind)  # type: ignore[arg-type]


def test_several_choices_are_one_verdict_only_when_they_agree() -> None:
    # The lenient grammar's inputs: the first choice itself now breaks the schema.
    yes, no = '{"value": true}', '{"value": false}'
    for texts in ([yes], [yes, "True."], [yes, no], [no, yes], [yes, yes, no], [yes, ""]):
        with pytest.raises(VerdictUnparsable, match="breaks the reply schema"):
            read_choices(texts, "check")
    with pytest.raises(VerdictUnparsable, match="breaks the reply schema"):
        read_choices(['{"value": 7}', "7/9"], "score")
    # The same choices as the contract writes them.
    yes, no = full(True), full(False)
    assert read_choices([yes], "check").value is True
    assert read_choices([yes, "He asks.\nVERDICT: true"], "check").value is True
    for texts in ([yes, no], [no, yes], [yes, yes, no], [yes, ""], [yes, "I cannot say."]):
        with pytest.raises(VerdictUnparsable, match="choices whose verdicts disagree"):
            read_choices(texts, "check")
    assert read_choices([full(7), "SCORE: 7"], "score").value == 7
    for texts in ([full(7), "7/9"], [full(1), full(True)]):
        with pytest.raises(VerdictUnparsable, match="choices whose verdicts disagree"):
            read_choices(texts, "score")


@pytest.mark.parametrize(
    "confidence", ["1.5", "-0.2", "85", "1e3", '"150%"', '"-5%"', '"NaN"', "true", "1e400"]
)
def test_a_confidence_outside_0_to_1_is_refused_never_stored_as_given(confidence: str) -> None:
    # The lenient grammar read a verdict here and dropped the confidence; now refused.
    with pytest.raises(VerdictUnparsable):
        read_reply(f'{{"value": true, "confidence": {confidence}}}', "check")
    reply = full(True).replace('"confidence": 0.5', f'"confidence": {confidence}')
    with pytest.raises(VerdictUnparsable, match="not a number from 0 to 1"):
        read_reply(reply, "check")


@pytest.mark.parametrize(("confidence", "want"), [("0", 0.0), ("1", 1.0), ('"85%"', 0.85)])
def test_a_confidence_inside_0_to_1_is_kept(confidence: str, want: float) -> None:
    with pytest.raises(VerdictUnparsable):
        read_reply(f'{{"value": true, "confidence": {confidence}}}', "check")
    reply = full(True).replace('"confidence": 0.5', f'"confidence": {confidence}')
    if confidence.startswith('"'):  # "85%": a string, which only the lenient grammar read
        with pytest.raises(VerdictUnparsable, match="not a number from 0 to 1"):
            read_reply(reply, "check")
        return
    assert read_reply(reply, "check").confidence == want
