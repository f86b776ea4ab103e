"""The reply's envelope: a reply the provider marks incomplete, filtered or failed is never a
verdict, however well its text reads (issue 48); and bodies no reader can take (nested past any
parser's depth, a gzip stream cut short or followed by junk) are judge errors, never tracebacks.

Every reply here is a real provider's body, recorded by a public project's test cassette
(``tests/data/provider_replies``, SOURCES.md there), served by the scripted judge over real HTTP
on the provider's own route, with the judge's text put where the provider wrote its reply. The
text always reads as a passing verdict: only the envelope says it is not one.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_propositions import (
    JudgeError,
    JudgeReplyIncomplete,
    JudgeUnavailable,
    Proposition,
    VerdictUnparsable,
)
from pytest_propositions import runtime as runtime_module
from pytest_propositions.runtime import Runtime
from pytest_propositions.settings import Settings
from pytest_propositions.store.cache import VerdictCache
from tests.support.judge_server import (
    PROVIDER_REPLIES,
    Reply,
    ScriptedJudge,
    deep_beside,
    gzipped,
    recorded,
    verdict,
)
from tests.support.outcomes import assert_counts

pytest_plugins = ["pytester"]

MODEL = "openai/judge-model"
CLAIM = "Ana greets the visitors."
TARGET = "Ana acts: [THINK] I will wait for them to speak first."

# The reply: it reads as a pass, but the provider cut it at its output limit.
CHECK = "The recording shows Ana greeting.\nVERDICT: true"
SCORE = "The recording shows Ana greeting warmly.\nSCORE: 9"
JSON_CHECK = json.dumps(
    {
        "reasoning": "She greets them.",
        "justification": "Ana greets.",
        "value": True,
        "confidence": 1,
    }
)

INCOMPLETE = JudgeReplyIncomplete
CUT = "was cut short (finish_reason 'length'"
FILTERED = "stopped by the provider's content filter"
FAILED = "the provider reports an error"

# (reply, kind, fragment of the message) on the OpenAI-compatible route, both paths.
OPENAI_CASES = [
    pytest.param(recorded("openai_length", text=CHECK), "check", CUT, id="gpt-4o-length-check"),
    pytest.param(recorded("openai_length", text=SCORE), "score", CUT, id="gpt-4o-length-score"),
    pytest.param(
        recorded("openai_length", text=JSON_CHECK), "check", CUT, id="gpt-4o-length-whole-json"
    ),
    pytest.param(
        recorded("openai_stop", "openai_length", text=CHECK),
        "check",
        CUT,
        id="second-choice-cut",
    ),
    pytest.param(
        recorded("openrouter_claude_length", text=CHECK),
        "check",
        CUT,
        id="openrouter-claude-length",
    ),
    pytest.param(
        recorded("openrouter_gemini_max_tokens", text=CHECK),
        "check",
        "cut short (finish_reason 'MAX_TOKENS', mapped to 'length')",
        id="openrouter-gemini-max-tokens",
    ),
    # OpenAI's other ends of a reply, on its recorded stop body.
    pytest.param(
        recorded("openai_stop", text=CHECK, in_choice={"finish_reason": "content_filter"}),
        "check",
        FILTERED,
        id="content-filter",
    ),
    pytest.param(
        recorded("openai_stop", text=CHECK, in_choice={"finish_reason": "tool_calls"}),
        "check",
        "is a tool call (finish_reason 'tool_calls')",
        id="tool-calls",
    ),
    # OpenRouter's word for a provider failing mid-answer (litellm maps it to "stop").
    pytest.param(
        recorded("openai_stop", text=CHECK, in_choice={"finish_reason": "error"}),
        "score",
        "failed: the provider reports an error (finish_reason 'error'",
        id="finish-reason-error",
    ),
    pytest.param(
        recorded(
            "openai_stop",
            text=SCORE,
            in_choice={"error": {"code": 502, "message": "Upstream provider failed"}},
        ),
        "score",
        "error: 'Upstream provider failed'",
        id="error-in-the-choice",
    ),
    # vLLM's word for a request it gave up (litellm maps an unknown word to "stop").
    pytest.param(
        recorded("openai_stop", text=CHECK, in_choice={"finish_reason": "abort"}),
        "check",
        "did not end normally (finish_reason 'abort'",
        id="unknown-reason",
    ),
]

# (model, recorded body, kind, fragment) on the provider's own route, through litellm.
PROVIDER_CASES = [
    pytest.param(
        "anthropic/claude-3-5-haiku-20241022",
        "anthropic_max_tokens",
        "check",
        CUT,
        id="anthropic-max-tokens-check",
    ),
    pytest.param(
        "anthropic/claude-3-5-haiku-20241022",
        "anthropic_max_tokens",
        "score",
        CUT,
        id="anthropic-max-tokens-score",
    ),
    pytest.param(
        "gemini/gemini-2.5-flash",
        "gemini_max_tokens",
        "check",
        "cut short (finish_reason 'MAX_TOKENS', mapped to 'length')",
        id="gemini-max-tokens",
    ),
    pytest.param(
        "gemini/gemini-2.5-flash",
        "gemini_safety",
        "check",
        "content filter (finish_reason 'content_filter')",
        id="gemini-safety",
    ),
]


@pytest.fixture
def transport_path(both_paths: str) -> str:
    return both_paths


@pytest.fixture
def cache_dir(tmp_path: Path) -> Path:
    return tmp_path / "verdicts"


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROP_API_KEY", "test-key-not-real")


@pytest.fixture
def judging(judge_server: ScriptedJudge, cache_dir: Path) -> Iterator[Any]:
    """Judge one claim against the scripted judge in a Runtime of its own, the cache in "use"
    mode on disk and one retry: the claim's outcome, or the judge error it raised."""
    runtimes: list[Runtime] = []

    def judge(kind: str, model: str = MODEL, **settings: Any) -> Any:
        api_base = judge_server.base_url if model == MODEL else judge_server.url
        runtime = Runtime(
            Settings(model=model, api_base=api_base, cache="use", retries=1, **settings),
            cache_dir=cache_dir,
        )
        runtimes.append(runtime)
        runtime_module.activate(runtime)
        proposition = Proposition(CLAIM, TARGET)
        try:
            return proposition.check() if kind == "check" else proposition.score()
        except JudgeError as error:
            assert proposition.verdict is None
            return error
        finally:
            runtime_module.deactivate(runtime)

    yield judge
    for runtime in runtimes:
        runtime.close()


def cached_entries(cache_dir: Path) -> int:
    with VerdictCache(cache_dir) as cache:
        return len(cache)


def assert_never_a_verdict(
    error: Any, expected: type[JudgeError], fragment: str, cache_dir: Path, model: str = MODEL
) -> None:
    assert type(error) is expected, repr(error)
    message = str(error)
    assert fragment in message
    assert model in message and CLAIM in message
    assert error.__cause__ is None
    assert cached_entries(cache_dir) == 0


@pytest.mark.parametrize(("reply", "kind", "fragment"), OPENAI_CASES)
def test_a_reply_the_provider_did_not_finish_is_never_a_verdict(
    judge_server: ScriptedJudge,
    judging: Any,
    cache_dir: Path,
    transport_path: str,
    reply: Reply,
    kind: str,
    fragment: str,
) -> None:
    judge_server.default = reply
    error = judging(kind, transport=transport_path)
    assert_never_a_verdict(error, INCOMPLETE, fragment, cache_dir)
    assert error.raw_reply in (CHECK, SCORE, JSON_CHECK)
    # Asked once more, like any reply that is not a verdict, then raised.
    assert len(judge_server.requests) == 2


@pytest.mark.parametrize(("model", "name", "kind", "fragment"), PROVIDER_CASES)
def test_anthropic_and_gemini_replies_cut_or_filtered_are_never_a_verdict(
    judge_server: ScriptedJudge,
    judging: Any,
    cache_dir: Path,
    model: str,
    name: str,
    kind: str,
    fragment: str,
) -> None:
    judge_server.default = recorded(name, text=SCORE if kind == "score" else CHECK)
    error = judging(kind, model=model)
    assert_never_a_verdict(error, INCOMPLETE, fragment, cache_dir, model)
    assert len(judge_server.requests) == 2
    route = "/messages" if model.startswith("anthropic/") else ":generateContent"
    assert all(request.path.endswith(route) for request in judge_server.requests)


@pytest.mark.parametrize(
    ("model", "name"),
    [
        ("openai/judge-model", "openai_stop"),
        ("anthropic/claude-3-5-haiku-20241022", "anthropic_end_turn"),
        ("gemini/gemini-2.5-flash", "gemini_stop"),
    ],
)
def test_a_reply_that_ends_normally_is_a_verdict(
    judge_server: ScriptedJudge, judging: Any, cache_dir: Path, model: str, name: str
) -> None:
    # The same text in each provider's recorded normal stop (OpenAI's "stop", Anthropic's
    # "end_turn", Gemini's "STOP") is the verdict, and it is cached.
    judge_server.default = recorded(name, text=CHECK)
    assert judging("check", model=model) is True
    assert cached_entries(cache_dir) == 1


def test_a_missing_finish_reason_is_a_whole_reply(
    judge_server: ScriptedJudge, judging: Any, cache_dir: Path, transport_path: str
) -> None:
    # Some OpenAI-compatible servers send no finish_reason (null); litellm reads it as "stop".
    judge_server.default = recorded("openai_stop", text=CHECK, in_choice={"finish_reason": None})
    assert judging("check", transport=transport_path) is True
    assert cached_entries(cache_dir) == 1


def test_an_error_object_beside_the_choices_is_never_a_verdict(
    judge_server: ScriptedJudge, judging: Any, cache_dir: Path, transport_path: str
) -> None:
    # An HTTP 200 whose body holds a passing choice and an error beside it.
    judge_server.default = recorded(
        "openai_stop",
        text=CHECK,
        beside={"error": {"code": 502, "message": "Upstream provider failed"}},
    )
    error = judging("check", transport=transport_path)
    if transport_path == "openai":
        assert_never_a_verdict(error, INCOMPLETE, "error: 'Upstream provider failed'", cache_dir)
    else:  # litellm raises its own error for the body (retried as a server error)
        assert_never_a_verdict(error, JudgeUnavailable, "Upstream provider failed", cache_dir)
    assert len(judge_server.requests) == 2


@pytest.mark.parametrize("kind", ["check", "score"])
def test_a_recorded_refusal_beside_a_passing_text_is_never_a_verdict(
    judge_server: ScriptedJudge, judging: Any, cache_dir: Path, transport_path: str, kind: str
) -> None:
    # OpenAI's real refusal body (a normal "stop"), with a passing text put beside the refusal:
    # the refusal decides, on both paths (litellm keeps it among provider-specific fields).
    judge_server.default = recorded("openai_refusal", text=SCORE if kind == "score" else CHECK)
    error = judging(kind, transport=transport_path)
    assert_never_a_verdict(
        error,
        VerdictUnparsable,
        "the judge refused to answer: I'm very sorry, but I can't assist with that request.",
        cache_dir,
    )
    assert error.raw_reply == "I'm very sorry, but I can't assist with that request."
    assert len(judge_server.requests) == 2


def test_a_cut_reply_fails_every_kind_of_claim_in_a_run(
    pytester: pytest.Pytester,
    judge_server: ScriptedJudge,
    inner_run: list[str],
    transport_path: str,
) -> None:
    # A check, a score and a claim expected not to hold, each answered in the words that would
    # pass it, each cut at the output limit: three judge errors, no pass.
    judge_server.on("Ana greets.", recorded("openai_length", text=CHECK))
    judge_server.on("Ana is warm.", recorded("openai_length", text=SCORE))
    judge_server.on(
        "Ana leaves.", recorded("openai_length", text="Ana never leaves.\nVERDICT: false")
    )
    pytester.makepyfile(
        """
        def test_check(world, assert_proposition):
            assert_proposition(world, "Ana greets.")

        def test_score(world, min_score):
            min_score(world, "Ana is warm.", 7)

        def test_does_not_hold(world, assert_proposition):
            assert_proposition(world, "Ana leaves.", holds=False)
        """
    )
    result = pytester.runpytest(*inner_run, "-p", "no:randomly")
    assert_counts(result, judge_errors=3)
    result.stdout.fnmatch_lines(["*JudgeReplyIncomplete: the judge's reply was cut short*"])
    assert result.ret != 0


def test_a_body_nested_past_any_reader_is_a_judge_error(
    judge_server: ScriptedJudge, judging: Any, cache_dir: Path, transport_path: str
) -> None:
    # A passing verdict, and beside its message a value 100,000 lists deep.
    judge_server.default = deep_beside(100_000)
    error = judging("check", transport=transport_path)
    assert isinstance(error, JudgeError), repr(error)
    assert cached_entries(cache_dir) == 0
    if transport_path == "openai":
        assert type(error) is JudgeUnavailable
        assert "nests values deeper than a JSON reader can walk" in str(error)


@pytest.mark.parametrize(
    ("cut", "junk", "fragment"),
    [
        pytest.param(4, b"", "stream is cut short", id="no-length"),
        pytest.param(8, b"", "stream is cut short", id="no-trailer"),
        pytest.param(0, b"junk", "goes on after its gzip stream ends", id="trailing-junk"),
        pytest.param(0, b"\x00" * 16, "goes on after its gzip stream ends", id="trailing-zeros"),
    ],
)
def test_a_broken_gzip_body_is_refused_on_the_light_path(
    judge_server: ScriptedJudge, judging: Any, cache_dir: Path, cut: int, junk: bytes, fragment: str
) -> None:
    # The body itself is whole JSON holding a passing verdict: only the gzip stream is broken.
    judge_server.default = gzipped(verdict(True), cut=cut, junk=junk)
    error = judging("check", transport="openai")
    assert_never_a_verdict(error, JudgeUnavailable, fragment, cache_dir)


def test_every_recorded_body_keeps_its_source() -> None:
    sources = (PROVIDER_REPLIES / "SOURCES.md").read_text(encoding="utf-8")
    for body in sorted(PROVIDER_REPLIES.glob("*.json")):
        assert f"`{body.name}`" in sources, body.name
