"""Red team, replies: judges answering in every bad shape, over real HTTP with an on-disk cache.

For each reply the outcome is pinned down: the exact JudgeError subclass, a fragment of its
message (which also names the model and the claim), nothing cached, no pass. The bad inputs at
the call site are in test_red_team_inputs.py.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_propositions import (
    JudgeError,
    JudgeReplyInvalid,
    JudgeUnavailable,
    Proposition,
    VerdictUnparsable,
)
from pytest_propositions import runtime as runtime_module
from pytest_propositions.runtime import Runtime
from pytest_propositions.settings import Settings
from pytest_propositions.store.cache import VerdictCache
from tests.conftest import on_paths
from tests.support.active_run import active
from tests.support.judge_server import (
    Reply,
    ScriptedJudge,
    Text,
    VerdictReply,
    choices,
    gzip_bomb,
    gzipped,
    malformed_body,
    no_choices,
    null_message,
    raw_content,
    redirect,
    refusal,
    repeated_key,
    text,
    trickle,
    verdict,
    wrong_shape,
)
from tests.support.outcomes import assert_counts

pytest_plugins = ["pytester"]

MODEL = "openai/judge-model"
CLAIM = "Oscar mentions his travel preferences."
TARGET = "Oscar acts: [TALK] I like quiet cities."

HTML_PAGE = "<!DOCTYPE html><html><body><h1>502 Bad Gateway</h1></body></html>"
DEEP_LIST = '{"value": true, "justification": ' + "[" * 400 + "]" * 400 + "}"
DEEP_OBJECT = '{"value": true, "justification": ' + '{"a": ' * 300 + "1" + "}" * 300 + "}"
SCHEMA_OBJECT = '{"reasoning": "r", "justification": "j", "value": true, "confidence": 0.5}'
TOO_DEEP_TO_LOAD = '{"value": true, "justification": ' + "[" * 5000 + "]" * 5000 + "}"

UNPARSABLE = VerdictUnparsable
INVALID = JudgeReplyInvalid
UNAVAILABLE = JudgeUnavailable

# (reply, kind, error type, message fragment, requests the judge receives with retries=1)
CASES = [
    # --- prose that a first-cue reader turns into a pass ---------------------------------
    pytest.param(
        text("True to his persona, Oscar never mentions travel, so the claim is false."),
        "check",
        UNPARSABLE,
        "neither one JSON object",
        2,
        id="true-to-his-persona",
    ),
    pytest.param(
        text("Positive thinking aside, the claim is false."),
        "check",
        UNPARSABLE,
        "neither one JSON object",
        2,
        id="positive-thinking-aside",
    ),
    pytest.param(
        text("Yes, I can help with that. Let me analyze..."),
        "check",
        UNPARSABLE,
        "neither one JSON object",
        2,
        id="yes-i-can-help",
    ),
    pytest.param(
        text("No problem! Here is my analysis of the trace."),
        "check",
        UNPARSABLE,
        "neither one JSON object",
        2,
        id="no-problem",
    ),
    pytest.param(
        text("**Yes.** Oscar talks about cities."),
        "check",
        UNPARSABLE,
        "neither one JSON object",
        2,
        id="yes-then-prose",
    ),
    pytest.param(
        text("True. Actually, false."),
        "check",
        UNPARSABLE,
        "neither one JSON object",
        2,
        id="true-then-false",
    ),
    pytest.param(
        text("True, No."), "check", UNPARSABLE, "neither one JSON object", 2, id="true-comma-no"
    ),
    pytest.param(
        text("True, but only for the first half."),
        "check",
        UNPARSABLE,
        "neither one JSON object",
        2,
        id="true-but",
    ),
    pytest.param(
        text("It is not the case that the claim is true."),
        "check",
        UNPARSABLE,
        "neither one JSON object",
        2,
        id="negated-from-outside",
    ),
    pytest.param(
        text("If Oscar had named a city, the claim is true."),
        "check",
        UNPARSABLE,
        "neither one JSON object",
        2,
        id="conditional",
    ),
    pytest.param(
        text("The claim is not false."),
        "check",
        UNPARSABLE,
        "neither one JSON object",
        2,
        id="not-false",
    ),
    pytest.param(
        text("Verdict: true/false"),
        "check",
        UNPARSABLE,
        "neither one JSON object",
        2,
        id="verdict-both-words",
    ),
    pytest.param(
        verdict("True to form, the claim is false."),
        "check",
        UNPARSABLE,
        "not true or false",
        2,
        id="json-value-sentence-with-both-cues",
    ),
    pytest.param(
        verdict("yes or no"),
        "check",
        UNPARSABLE,
        "not true or false",
        2,
        id="json-value-yes-or-no",
    ),
    pytest.param(
        text('False.\n{"value": true, "justification": "he mentions cities"}'),
        "check",
        UNPARSABLE,
        "neither one JSON object",
        2,
        id="prose-contradicts-json",
    ),
    pytest.param(
        text('{"value": true, "justification": "a"} Wait: {"value": false}'),
        "check",
        UNPARSABLE,
        "not one JSON object",
        2,
        id="two-json-objects-disagree",
    ),
    pytest.param(verdict(1), "check", UNPARSABLE, "not true or false", 2, id="check-int-1"),
    pytest.param(verdict(None), "check", UNPARSABLE, "not true or false", 2, id="null-value"),
    # --- a verdict before a closing think tag that does not open the reply -----------------
    # (issue 48: the tag hid everything before it, so the second verdict passed)
    pytest.param(
        text("VERDICT: false\nOscar quotes a literal </think> tag.\nVERDICT: true"),
        "check",
        UNPARSABLE,
        "more than once",
        2,
        id="verdict-then-literal-think-tag",
    ),
    pytest.param(
        text('My answer: {"value": false}\n</think>\n' + SCHEMA_OBJECT),
        "check",
        UNPARSABLE,
        "neither one JSON object",
        2,
        id="json-value-then-think-tag",
    ),
    pytest.param(
        text("SCORE: 2\n</think>\nSCORE: 9"),
        "score",
        UNPARSABLE,
        "more than once",
        2,
        id="score-then-think-tag",
    ),
    # --- an earlier verdict in another spelling (issue 48: each passed) --------------------
    *(
        pytest.param(
            text(f"{earlier}\nOscar says he likes quiet cities.\n{final}"),
            kind,
            UNPARSABLE,
            "more than once",
            2,
            id=name,
        )
        for earlier, kind, final, name in [
            ("**Verdict:** false", "check", "VERDICT: true", "bold-verdict-earlier"),
            ("VERDICT : false", "check", "VERDICT: true", "space-before-colon-earlier"),
            ("**Score:** 2", "score", "SCORE: 9", "bold-score-earlier"),
            ("Score 2 of 9", "score", "SCORE: 9", "score-2-of-9-earlier"),
            ("V\u0415RDICT: false", "check", "VERDICT: true", "cyrillic-e-earlier"),
            ("VERDICT:\u00a0false", "check", "VERDICT: true", "no-break-space-earlier"),
            ("VERDICT\uff1a false", "check", "VERDICT: true", "fullwidth-colon-earlier"),
        ]
    ),
    # --- no verdict at all ---------------------------------------------------------------
    pytest.param(
        refusal("I can't help with that."), "check", UNPARSABLE, "refused", 2, id="refusal"
    ),
    pytest.param(text(""), "check", UNPARSABLE, "empty", 2, id="empty-content"),
    pytest.param(text(None), "check", UNPARSABLE, "empty", 2, id="null-content"),
    pytest.param(
        text("<think>The claim is true.</think>"),
        "check",
        UNPARSABLE,
        "empty",
        2,
        id="only-a-think-block",
    ),
    pytest.param(
        text(HTML_PAGE),
        "score",
        UNPARSABLE,
        "neither one JSON object",
        2,
        id="html-page-as-content",
    ),
    pytest.param(
        text('{"value": tr'), "check", UNPARSABLE, "not one JSON object", 2, id="truncated"
    ),
    # --- scores --------------------------------------------------------------------------
    pytest.param(
        text("9 out of the 12 events are irrelevant; I'd rate this a 2/9."),
        "score",
        UNPARSABLE,
        "neither one JSON object",
        2,
        id="nine-out-of-twelve",
    ),
    pytest.param(
        text("3 agents spoke. Score: 7/9"),
        "score",
        UNPARSABLE,
        "neither one JSON object",
        2,
        id="leading-count",
    ),
    pytest.param(
        text("9/9 would be too generous. 2"),
        "score",
        UNPARSABLE,
        "neither one JSON object",
        2,
        id="nine-then-standalone-two",
    ),
    pytest.param(
        text("Score: 8/10"), "score", UNPARSABLE, "neither one JSON object", 2, id="out-of-ten"
    ),
    pytest.param(
        text("Rating: 6 or 7"), "score", UNPARSABLE, "neither one JSON object", 2, id="either-score"
    ),
    pytest.param(
        text("If the agent had stayed, 8/9."),
        "score",
        UNPARSABLE,
        "neither one JSON object",
        2,
        id="conditional-score",
    ),
    pytest.param(
        text('Score: 8/9\n{"value": 2, "justification": "weak"}'),
        "score",
        UNPARSABLE,
        "neither one JSON object",
        2,
        id="prose-score-contradicts-json",
    ),
    pytest.param(
        text("1. First, the agent greeted the user."),
        "score",
        UNPARSABLE,
        "neither one JSON object",
        2,
        id="numbered-list",
    ),
    pytest.param(verdict(10), "score", UNPARSABLE, "outside 0..9", 2, id="score-10"),
    # A key given twice is two answers: never last-key-wins (nor first-key-wins).
    pytest.param(
        text('{"value": false, "justification": "It never happens.", "value": true}'),
        "check",
        UNPARSABLE,
        "'value' twice",
        2,
        id="repeated-value-key",
    ),
    pytest.param(
        text('{"value": 1, "justification": "weak", "confidence": 0.9, "value": 9}'),
        "score",
        UNPARSABLE,
        "'value' twice",
        2,
        id="repeated-score-key",
    ),
    # A verdict named under several keys that disagree: each passed once, read as "value" said.
    pytest.param(
        text('{"answer": false, "value": true}'),
        "check",
        UNPARSABLE,
        "breaks the reply schema",
        2,
        id="answer-and-value-disagree",
    ),
    pytest.param(
        text('{"verdict": {"value": false}, "value": true}'),
        "check",
        UNPARSABLE,
        "breaks the reply schema",
        2,
        id="nested-verdict-disagrees",
    ),
    pytest.param(
        text('{"value": true, "Verdict": false}'),
        "check",
        UNPARSABLE,
        "breaks the reply schema",
        2,
        id="capitalised-verdict-disagrees",
    ),
    pytest.param(
        text('{"value": true, "score": 0}'),
        "check",
        UNPARSABLE,
        "breaks the reply schema",
        2,
        id="check-with-score-0",
    ),
    pytest.param(
        text('{"value": 8, "justification": "good", "score": 2}'),
        "score",
        UNPARSABLE,
        "breaks the reply schema",
        2,
        id="two-scores-disagree",
    ),
    # Two choices in one response (a server ignoring n=1) that disagree: neither is the answer.
    pytest.param(
        choices(verdict(True).content(), verdict(False).content()),
        "check",
        UNPARSABLE,
        "choices whose verdicts disagree",
        2,
        id="two-choices-disagree",
    ),
    pytest.param(
        choices(verdict(False).content(), verdict(True).content(), verdict(False).content()),
        "check",
        UNPARSABLE,
        "choices whose verdicts disagree",
        2,
        id="three-choices-one-disagrees",
    ),
    pytest.param(verdict(7.5), "score", UNPARSABLE, "not a whole number", 2, id="score-7.5"),
    pytest.param(verdict(True), "score", UNPARSABLE, "not a whole number", 2, id="score-boolean"),
    # --- replies that break the plumbing -------------------------------------------------
    # Without the schema's other keys, the lenient grammar's plumbing cases break the schema
    # before their text is looked at; in a schema object, the plumbing error stands.
    pytest.param(
        raw_content(json.dumps('{"value": true, "justification": "\\ud800"}')),
        "check",
        UNPARSABLE,
        "breaks the reply schema",
        2,
        id="surrogate-escape-in-justification",
    ),
    pytest.param(
        raw_content(json.dumps(SCHEMA_OBJECT.replace('"j"', '"\\ud800"'))),
        "check",
        INVALID,
        "unpaired surrogate",
        2,
        id="surrogate-escape-in-a-schema-object",
    ),
    pytest.param(
        raw_content('"{\\"value\\": true, \\"justification\\": \\"x \\ud83d y\\"}"'),
        "check",
        INVALID,
        "unpaired surrogate",
        2,
        id="lone-surrogate-in-content",
    ),
    pytest.param(
        text(DEEP_LIST),
        "check",
        UNPARSABLE,
        "breaks the reply schema",
        2,
        id="justification-400-deep",
    ),
    pytest.param(
        text(DEEP_OBJECT),
        "check",
        UNPARSABLE,
        "breaks the reply schema",
        2,
        id="justification-object-300-deep",
    ),
    pytest.param(
        text(SCHEMA_OBJECT.replace('"j"', "[" * 400 + "]" * 400)),
        "check",
        UNPARSABLE,
        "'justification' is a list, not a string",
        2,
        id="justification-400-deep-in-a-schema-object",
    ),
    pytest.param(text(TOO_DEEP_TO_LOAD), "score", INVALID, "nested", 2, id="json-5000-deep"),
    pytest.param(no_choices(), "check", INVALID, "no message", 2, id="empty-choices"),
    pytest.param(
        null_message(), "check", UNAVAILABLE, "not a chat completion", 2, id="null-message"
    ),
    pytest.param(
        wrong_shape({"id": "x", "object": "chat.completion", "choices": None}),
        "check",
        UNAVAILABLE,
        "not a chat completion",
        2,
        id="choices-null",
    ),
    pytest.param(malformed_body(), "score", UNAVAILABLE, "after 2 attempts", 2, id="html-body"),
]


@pytest.fixture
def cache_dir(tmp_path: Path) -> Path:
    return tmp_path / "verdicts"


@pytest.fixture
def transport_path(both_paths: str) -> str:
    """Every case here is tried through litellm and through the light path."""
    return both_paths


@pytest.fixture
def runtime(
    judge_server: ScriptedJudge,
    cache_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    transport_path: str,
) -> Iterator[Runtime]:
    """The scripted judge, a real cache folder in "use" mode, one retry."""
    monkeypatch.setenv("PROP_API_KEY", "test-key-not-real")
    settings = Settings(
        model=MODEL,
        api_base=judge_server.base_url,
        cache="use",
        retries=1,
        transport=transport_path,
    )
    runtime = Runtime(settings, cache_dir=cache_dir)
    with active(runtime):
        yield runtime


def cached_entries(cache_dir: Path) -> int:
    with VerdictCache(cache_dir) as cache:
        return len(cache)


def test_there_are_enough_cases() -> None:
    assert len(CASES) >= 35


def read_alike_on_both_paths(case: Any) -> bool:
    """A whole reply whose content is ordinary text: both paths hand the same string to the one
    reader of verdicts, so the case takes one path; any other shape of reply takes both."""
    reply = case.values[0]
    if isinstance(reply, VerdictReply):
        return True
    return isinstance(reply, Text) and bool(reply.content) and reply.finish_reason == "stop"


@pytest.mark.parametrize(
    ("reply", "kind", "expected", "fragment", "requests", "both_paths"),
    on_paths(CASES, both=lambda case: not read_alike_on_both_paths(case)),
)
def test_a_bad_reply_is_a_judge_error_never_a_pass(
    judge_server: ScriptedJudge,
    runtime: Runtime,
    cache_dir: Path,
    reply: Reply,
    kind: str,
    expected: type[JudgeError],
    fragment: str,
    requests: int,
) -> None:
    judge_server.default = reply
    proposition = Proposition(CLAIM, TARGET)
    outcome: Any = None
    with pytest.raises(JudgeError) as caught:
        outcome = proposition.check() if kind == "check" else proposition.score()
    assert outcome is None  # no verdict came back, let alone a pass
    error = caught.value
    assert type(error) is expected, repr(error)
    assert not isinstance(error, AssertionError)
    message = str(error)
    assert fragment in message
    assert MODEL in message and CLAIM in message
    assert error.__cause__ is None and (error.__context__ is None or error.__suppress_context__)
    message.encode("utf-8")  # the message itself can always be printed and stored
    if isinstance(error, VerdictUnparsable):
        error.raw_reply.encode("utf-8")
    assert len(judge_server.requests) == requests
    assert cached_entries(cache_dir) == 0
    assert proposition.verdict is None


def judged(judge_server: ScriptedJudge, cache_dir: Path, kind: str, **settings: Any) -> JudgeError:
    """The judge error one claim raises against the scripted judge (in a Runtime of its own)."""
    runtime = Runtime(
        Settings(model=MODEL, api_base=judge_server.base_url, cache="use", **settings),
        cache_dir=cache_dir,
    )
    runtime_module.activate(runtime)
    proposition = Proposition(CLAIM, TARGET)
    try:
        with pytest.raises(JudgeError) as caught:
            proposition.check() if kind == "check" else proposition.score()
    finally:
        runtime_module.deactivate(runtime)
        runtime.close()
    assert proposition.verdict is None
    assert cached_entries(cache_dir) == 0
    error = caught.value
    assert MODEL in str(error) and CLAIM in str(error)
    return error


# (reply, error type, message fragment, requests the judge receives with retries=1)
LIGHT_PATH_CASES = [
    # Any key given twice in the chat completion: a JSON parser keeps the last one silently.
    pytest.param(
        repeated_key("content", verdict(False).content(), verdict(True).content()),
        INVALID,
        "gives 'content' more than once",
        2,
        id="two-contents",
    ),
    pytest.param(
        repeated_key("model", "judge-model", "other-model"),
        INVALID,
        "gives 'model' more than once",
        2,
        id="two-models",
    ),
    # A redirect, its body a passing verdict: never followed, never read, never retried.
    pytest.param(
        redirect(302, "http://127.0.0.1:9/v1/chat/completions"),
        UNAVAILABLE,
        "redirect (HTTP 302 to http://127.0.0.1:9/v1/chat/completions), which is not followed",
        1,
        id="302",
    ),
    pytest.param(
        redirect(307, "https://user:Pa55/word@elsewhere.invalid/v1"),
        UNAVAILABLE,
        "redirect (HTTP 307 to https://[redacted]@elsewhere.invalid/v1)",
        1,
        id="307-with-credentials",
    ),
    pytest.param(
        redirect(301, "/v2/chat/completions", verdict(False)),
        UNAVAILABLE,
        "HTTP 301 to /v2/chat/completions",
        1,
        id="301-relative",
    ),
    # Larger than the 1 MiB cap once decompressed: stopped while read, so a bomb is never
    # inflated (200 MiB of blanks in about 200 KB of gzip).
    pytest.param(
        verdict(True, justification="x" * (2 * 1024 * 1024)),
        UNAVAILABLE,
        "larger than 1048576 bytes (decompressed)",
        1,
        id="two-mib-justification",
    ),
    pytest.param(
        gzip_bomb(200 * 1024 * 1024),
        UNAVAILABLE,
        "larger than 1048576 bytes (decompressed)",
        1,
        id="gzip-bomb",
    ),
]


@pytest.mark.parametrize(("reply", "expected", "fragment", "requests"), LIGHT_PATH_CASES)
def test_a_hostile_http_response_is_a_judge_error_on_the_light_path(
    judge_server: ScriptedJudge,
    cache_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    reply: Reply,
    expected: type[JudgeError],
    fragment: str,
    requests: int,
) -> None:
    monkeypatch.setenv("PROP_API_KEY", "test-key-not-real")
    judge_server.default = reply
    error = judged(judge_server, cache_dir, "check", retries=1, transport="openai")
    assert type(error) is expected, repr(error)
    assert fragment in str(error)
    assert len(judge_server.requests) == requests


def test_the_reply_cap_is_an_option_and_a_gzipped_reply_is_read(
    judge_server: ScriptedJudge, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PROP_API_KEY", "test-key-not-real")
    judge_server.default = gzipped(verdict(False, justification="x" * 5000))
    error = judged(judge_server, cache_dir, "check", transport="openai", max_reply_bytes=4096)
    assert "larger than 4096 bytes (decompressed)" in str(error)
    assert "--prop-max-reply-bytes" in str(error)
    # Under the cap, the same gzipped reply is the verdict.
    settings = Settings(
        model=MODEL,
        api_base=judge_server.base_url,
        cache="off",
        transport="openai",
        max_reply_bytes=64 * 1024,
    )
    runtime = Runtime(settings, cache_dir=cache_dir)
    with active(runtime):
        verdict_read = Proposition(CLAIM, TARGET).check()
    assert verdict_read is False
    assert judge_server.requests[-1].headers["accept-encoding"] == "gzip, deflate"


def test_the_timeout_bounds_a_whole_attempt_on_both_paths(
    judge_server: ScriptedJudge, cache_dir: Path, transport_path: str
) -> None:
    # A reply trickled one byte every 0.5 s (minutes in all, were it read to the end): each
    # attempt ends at --prop-timeout, though no single read ever waits that long.
    judge_server.default = trickle(0.5)
    error = judged(
        judge_server, cache_dir, "check", retries=1, timeout=2.0, transport=transport_path
    )
    assert type(error) is JudgeUnavailable
    assert "timed out after 2s" in str(error)
    assert "after 2 attempts" in str(error)
    assert len(judge_server.requests) == 2


def test_bad_replies_are_counted_as_judge_errors_in_the_summary(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, inner_run: list[str]
) -> None:
    judge_server.on("Oscar mentions travel.", no_choices())
    judge_server.on(
        "Oscar likes cities.", raw_content(json.dumps('{"value": true, "reasoning": "\\udfff"}'))
    )
    judge_server.on("Oscar is calm.", text("9 out of the 12 events are calm; 2/9."))
    judge_server.on(
        "Oscar likes museums.",
        raw_content(json.dumps(SCHEMA_OBJECT.replace('"r"', '"\\udfff"'))),
    )
    judge_server.default = verdict(True)
    pytester.makepyfile(
        """
        def test_no_choices(world, assert_proposition):
            assert_proposition(world, "Oscar mentions travel.")

        def test_surrogate(world, assert_proposition):
            assert_proposition(world, "Oscar likes cities.")

        def test_nine_out_of_twelve(world, min_score):
            min_score(world, "Oscar is calm.", 7)

        def test_surrogate_in_a_schema_object(world, assert_proposition):
            assert_proposition(world, "Oscar likes museums.")

        def test_fine(world, assert_proposition):
            assert_proposition(world, "Oscar is an architect.")
        """
    )
    cache_dir = pytester.path / "verdicts"
    result = pytester.runpytest(
        *inner_run, "--prop-cache=use", f"--prop-cache-dir={cache_dir}", "-p", "no:randomly"
    )
    assert_counts(result, passed=1, judge_errors=4)
    result.stdout.fnmatch_lines(
        [
            "*JudgeReplyInvalid: the judge's response holds no message*",
            "*VerdictUnparsable: Unparsable judge reply: *breaks the reply schema*",
            "*VerdictUnparsable: Unparsable judge reply: *neither one JSON object*",
            "*JudgeReplyInvalid: Invalid judge reply: *unpaired surrogate*",
            "propositions: *4 judge errors*",
        ]
    )
    with VerdictCache(cache_dir) as cache:
        assert len(cache) == 1  # only the good verdict
