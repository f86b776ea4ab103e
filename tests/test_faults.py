"""The fault matrix: every way the judge can fail, over real HTTP, with a real on-disk cache.

For each fault the tests pin down the exception (always a JudgeError, never an AssertionError),
what its message tells the user to fix, how many requests reached the server, that nothing was
cached, and that once the fault clears the same claim is judged and cached exactly once.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_propositions import (
    JudgeError,
    JudgeUnavailable,
    Proposition,
    VerdictMissing,
    VerdictUnparsable,
)
from pytest_propositions import runtime as runtime_module
from pytest_propositions.local.ports import free_loopback_port
from pytest_propositions.runtime import Runtime
from pytest_propositions.settings import Settings
from pytest_propositions.store.cache import VerdictCache
from tests.conftest import LIGHT_PATH
from tests.support.judge_server import (
    Reply,
    ScriptedJudge,
    delay,
    disconnect,
    malformed_body,
    refusal,
    sequence,
    status,
    text,
    verdict,
    wrong_shape,
)
from tests.support.outcomes import assert_counts

pytest_plugins = ["pytester"]

MODEL = "openai/judge-model"
API_KEY = "test-key-not-real"
CLAIM = "Ana greets someone."
TARGET = "Ana acts: [TALK] hello"

StartRuntime = Callable[..., Runtime]


@pytest.fixture
def transport_path(both_paths: str) -> str:
    """Every test here runs through litellm and through the light path."""
    return both_paths


# --------------------------------------------------------------------------- fixtures and helpers


@pytest.fixture
def cache_dir(tmp_path: Path) -> Path:
    return tmp_path / "cache"


@pytest.fixture
def start_runtime(
    cache_dir: Path, monkeypatch: pytest.MonkeyPatch, transport_path: str
) -> Iterator[StartRuntime]:
    """Build and activate runtimes that share one cache folder; all are closed afterwards."""
    monkeypatch.setenv("PROP_API_KEY", API_KEY)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    started: list[Runtime] = []

    def start(api_base: str, **overrides: Any) -> Runtime:
        options: dict[str, Any] = {
            "model": MODEL,
            "api_base": api_base,
            "cache": "use",
            "retries": 2,
            "timeout": 10.0,
            "transport": transport_path,
        }
        options.update(overrides)
        runtime = Runtime(Settings(**options), cache_dir=cache_dir)
        runtime_module.activate(runtime)
        started.append(runtime)
        return runtime

    try:
        yield start
    finally:
        for runtime in reversed(started):
            runtime_module.deactivate(runtime)
            runtime.close()


@pytest.fixture
def runtime(judge_server: ScriptedJudge, start_runtime: StartRuntime) -> Runtime:
    """The usual setup: the scripted judge, cache "use", retries=2, timeout 10s."""
    return start_runtime(judge_server.base_url)


def cached_entries(cache_dir: Path) -> int:
    """Verdicts on disk, read through a separate handle (as another process would)."""
    with VerdictCache(cache_dir) as cache:
        return len(cache)


def check() -> Any:
    return Proposition(CLAIM, TARGET).check()


def judge_error(expected: type[JudgeError], call: Callable[[], Any]) -> JudgeError:
    """Run ``call``, expecting exactly this judge error, never a (subclass of) AssertionError."""
    with pytest.raises(JudgeError) as caught:
        call()
    error = caught.value
    assert type(error) is expected, f"expected {expected.__name__}, got {error!r}"
    assert not isinstance(error, AssertionError)
    # The provider's exception (whose traceback shows the call arguments) is never shown.
    assert error.__cause__ is None
    assert error.__context__ is None or error.__suppress_context__
    return error


def assert_recovers(judge_server: ScriptedJudge, cache_dir: Path) -> None:
    """With the fault cleared, the same claim is judged live once and cached once."""
    judge_server.reset()
    judge_server.default = verdict(True)
    proposition = Proposition(CLAIM, TARGET)
    assert proposition.check() is True
    assert proposition.verdict is not None and proposition.verdict.cached is False
    assert len(judge_server.requests) == 1
    assert cached_entries(cache_dir) == 1


def retry_logs(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        record.getMessage()
        for record in caplog.records
        if record.name == "pytest_propositions" and "retry" in record.getMessage()
    ]


# --------------------------------------------------------------------------- transient faults


def test_rate_limit_then_success_is_retried_and_cached_once(
    judge_server: ScriptedJudge,
    runtime: Runtime,
    cache_dir: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="pytest_propositions")
    judge_server.default = sequence(status(429, "slow down", "rate_limit_error"), verdict(True))

    assert check() is True
    assert len(judge_server.requests) == 2
    assert len(retry_logs(caplog)) == 1
    assert cached_entries(cache_dir) == 1
    assert runtime.judge.stats.judge_calls == 1  # one answer, though it took two requests

    judge_server.clear_requests()
    assert check() is True
    assert judge_server.requests == []  # served from the cache


@pytest.mark.parametrize(("draw", "expected"), [("low", [0.0, 0.0]), ("high", [0.25, 0.5])])
def test_backoff_is_full_jitter_up_to_an_exponential_bound(
    judge_server: ScriptedJudge,
    runtime: Runtime,
    monkeypatch: pytest.MonkeyPatch,
    draw: str,
    expected: list[float],
) -> None:
    """Each wait is drawn from 0 up to 0.25 s, 0.5 s, ... (capped): machines that failed
    together do not retry together. The draw is pinned here to each end of its range."""
    import random

    monkeypatch.setattr(random, "uniform", lambda low, high: low if draw == "low" else high)
    waits: list[float] = []
    runtime.judge.transport._sleep = waits.append
    trouble = status(500, "upstream trouble", error_type="server_error")
    judge_server.default = sequence(trouble, trouble, verdict(True))

    assert check() is True
    assert waits == expected


@pytest.mark.parametrize(
    ("code", "error_type"),
    [
        (500, "server_error"),
        (502, "server_error"),
        (503, "server_error"),
        (500, "invalid_request_error"),
    ],
    ids=["500", "502", "503", "500-invalid_request_error"],
)
def test_server_errors_until_the_retry_budget_runs_out(
    judge_server: ScriptedJudge,
    runtime: Runtime,
    cache_dir: Path,
    caplog: pytest.LogCaptureFixture,
    code: int,
    error_type: str,
) -> None:
    # A 5xx is the server's trouble whatever its body says (litellm 1.106 mapped a 500 naming
    # invalid_request_error to BadRequestError, 1.110 to InternalServerError): always retried.
    caplog.set_level(logging.INFO, logger="pytest_propositions")
    judge_server.default = status(code, f"upstream trouble {code}", error_type=error_type)

    error = judge_error(JudgeUnavailable, check)
    assert isinstance(error, JudgeUnavailable)
    message = str(error)
    assert MODEL in message
    assert f"HTTP {code}" in message
    assert "after 3 attempts" in message
    assert "--prop-retries" in message
    assert error.status == code
    assert error.format_rejected is False
    assert len(judge_server.requests) == 3  # retries + 1
    assert len(retry_logs(caplog)) == 2
    assert cached_entries(cache_dir) == 0

    assert_recovers(judge_server, cache_dir)


def test_reply_slower_than_the_timeout_is_retried_then_names_the_timeout_setting(
    judge_server: ScriptedJudge, start_runtime: StartRuntime, cache_dir: Path
) -> None:
    start_runtime(judge_server.base_url, timeout=1.0)
    judge_server.default = delay(3, verdict(True))

    started = time.monotonic()
    error = judge_error(JudgeUnavailable, check)
    elapsed = time.monotonic() - started

    message = str(error)
    assert MODEL in message
    assert "Timeout" in message  # litellm's Timeout: the client gave up, the server never answered
    assert "after 3 attempts" in message
    assert "--prop-timeout" in message
    assert len(judge_server.requests) == 3
    # Each attempt waited for the full timeout (the backoffs between them are drawn at random
    # from 0 up, see test_backoff_is_full_jitter_up_to_an_exponential_bound).
    assert elapsed >= 3 * 1.0
    assert cached_entries(cache_dir) == 0

    assert_recovers(judge_server, cache_dir)


def test_connection_refused_fails_at_once_and_names_the_url(
    judge_server: ScriptedJudge,
    start_runtime: StartRuntime,
    cache_dir: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="pytest_propositions")
    url = f"http://127.0.0.1:{free_loopback_port()}/v1"
    start_runtime(url)

    error = judge_error(JudgeUnavailable, check)
    message = str(error)
    assert "cannot connect" in message
    assert url in message
    assert MODEL in message
    assert "--prop-api-base" in message
    assert "attempts" not in message
    assert retry_logs(caplog) == []  # refused is final: no retry, no backoff
    assert cached_entries(cache_dir) == 0

    # Pointed at a live server (same cache folder, same key), the claim is judged and cached.
    start_runtime(judge_server.base_url)
    assert_recovers(judge_server, cache_dir)


@pytest.mark.parametrize(
    ("reply", "detail"),
    [(malformed_body(), "invalid response"), (wrong_shape(), "choices")],
    ids=["not-json", "wrong-shape"],
)
def test_a_broken_response_body_is_treated_as_transient(
    judge_server: ScriptedJudge, runtime: Runtime, cache_dir: Path, reply: Reply, detail: str
) -> None:
    # litellm raises InternalServerError (500) for both: a proxy or gateway hiccup, so retried.
    judge_server.default = reply

    error = judge_error(JudgeUnavailable, check)
    message = str(error)
    assert MODEL in message
    assert "after 3 attempts" in message
    assert detail in message
    assert len(judge_server.requests) == 3
    assert cached_entries(cache_dir) == 0

    assert_recovers(judge_server, cache_dir)


def test_dropped_connection_is_transient(
    judge_server: ScriptedJudge, runtime: Runtime, cache_dir: Path
) -> None:
    judge_server.default = disconnect()

    error = judge_error(JudgeUnavailable, check)
    message = str(error)
    assert MODEL in message
    assert "after 3 attempts" in message
    assert "cannot connect" not in message  # the server was reached; it hung up
    assert len(judge_server.requests) == 3
    assert cached_entries(cache_dir) == 0

    assert_recovers(judge_server, cache_dir)


@pytest.mark.parametrize("fault", ["not-json", "wrong-shape", "dropped", "timed-out", "refused"])
def test_a_fault_without_an_http_error_status_does_not_claim_one(
    judge_server: ScriptedJudge, start_runtime: StartRuntime, fault: str
) -> None:
    # litellm reports these with a made-up status_code (500; 408 for its client-side Timeout),
    # yet the server answered 200 (not-json, wrong-shape) or sent no response at all. Retrying
    # them is right; telling the user "HTTP 500" or "HTTP 408" sends them to the wrong logs.
    if fault == "refused":
        start_runtime(f"http://127.0.0.1:{free_loopback_port()}/v1", retries=0)
    else:
        start_runtime(judge_server.base_url, retries=0, timeout=0.5)
        replies: dict[str, Reply] = {
            "not-json": malformed_body(),
            "wrong-shape": wrong_shape(),
            "dropped": disconnect(),
            "timed-out": delay(3, verdict(True)),
        }
        judge_server.default = replies[fault]

    error = judge_error(JudgeUnavailable, check)
    assert isinstance(error, JudgeUnavailable)
    assert "HTTP " not in str(error)
    assert error.status is None


# --------------------------------------------------------------------------- replies without a verdict


def test_reply_of_the_wrong_schema_is_asked_once_more_then_unparsable(
    judge_server: ScriptedJudge, runtime: Runtime, cache_dir: Path
) -> None:
    judge_server.default = text('{"answer": "maybe"}')

    error = judge_error(VerdictUnparsable, check)
    assert isinstance(error, VerdictUnparsable)
    assert error.raw_reply == '{"answer": "maybe"}'
    assert MODEL in str(error)
    assert CLAIM in str(error)
    assert len(judge_server.requests) == 2
    assert cached_entries(cache_dir) == 0

    assert_recovers(judge_server, cache_dir)


def test_refusal_is_unparsable_after_one_retry(
    judge_server: ScriptedJudge, runtime: Runtime, cache_dir: Path
) -> None:
    judge_server.default = refusal("I won't")

    error = judge_error(VerdictUnparsable, check)
    assert isinstance(error, VerdictUnparsable)
    assert "refused" in str(error)
    assert "I won't" in str(error)
    assert MODEL in str(error)
    assert error.raw_reply == "I won't"
    assert len(judge_server.requests) == 2
    assert cached_entries(cache_dir) == 0

    assert_recovers(judge_server, cache_dir)


def test_unparsable_then_valid_is_cached_once_and_then_served_from_the_cache(
    judge_server: ScriptedJudge, runtime: Runtime, cache_dir: Path
) -> None:
    judge_server.default = sequence(text("hmm"), verdict(False))

    assert check() is False
    assert len(judge_server.requests) == 2
    assert cached_entries(cache_dir) == 1

    judge_server.clear_requests()
    proposition = Proposition(CLAIM, TARGET)
    assert proposition.check() is False
    assert judge_server.requests == []
    assert proposition.verdict is not None
    assert proposition.verdict.cached is True
    assert proposition.verdict.recorded_at
    assert runtime.judge.stats.cache_hits == 1
    assert cached_entries(cache_dir) == 1


def test_score_out_of_range_twice_is_unparsable_and_not_cached(
    judge_server: ScriptedJudge, runtime: Runtime, cache_dir: Path
) -> None:
    judge_server.default = verdict(12)

    error = judge_error(VerdictUnparsable, lambda: Proposition(CLAIM, TARGET).score())
    assert isinstance(error, VerdictUnparsable)
    assert "12" in str(error)
    assert '"value": 12' in error.raw_reply
    assert len(judge_server.requests) == 2
    assert cached_entries(cache_dir) == 0

    judge_server.reset()
    judge_server.default = verdict(7)
    assert Proposition(CLAIM, TARGET).score() == 7
    assert len(judge_server.requests) == 1
    assert cached_entries(cache_dir) == 1


# --------------------------------------------------------------------------- structured-output fallback


@pytest.mark.parametrize("retries", [2, 0])
@pytest.mark.parametrize("rejection", [500, 400], ids=["llama.cpp-500", "azure-400"])
def test_json_schema_rejection_falls_back_without_spending_retries(
    judge_server: ScriptedJudge,
    start_runtime: StartRuntime,
    cache_dir: Path,
    rejection: int,
    retries: int,
) -> None:
    start_runtime(judge_server.base_url, retries=retries)
    judge_server.reject_json_schema = rejection

    assert check() is True
    formats = [r.response_format for r in judge_server.requests]
    assert [f["type"] if f else None for f in formats] == ["json_schema", "json_object"]
    assert formats[1] is not None and formats[1]["schema"]["required"] == [
        "reasoning",
        "justification",
        "value",
        "confidence",
    ]
    assert cached_entries(cache_dir) == 1

    # The fallback is remembered: another claim goes straight to json_object.
    judge_server.clear_requests()
    assert Proposition("Ana says hello.", TARGET).check() is True
    [request] = judge_server.requests
    assert request.response_format is not None
    assert request.response_format["type"] == "json_object"
    assert cached_entries(cache_dir) == 2


# --------------------------------------------------------------------------- final client errors


def test_rejected_credentials_name_the_key_setting(
    judge_server: ScriptedJudge, runtime: Runtime, cache_dir: Path
) -> None:
    judge_server.default = status(401, "Invalid authentication", "authentication_error")

    error = judge_error(JudgeUnavailable, check)
    message = str(error)
    assert "OPENAI_API_KEY" in message
    assert "PROP_API_KEY" in message
    assert "HTTP 401" in message
    assert MODEL in message
    assert API_KEY not in message
    assert len(judge_server.requests) == 1  # never retried
    assert judge_server.requests[0].headers["authorization"] == f"Bearer {API_KEY}"
    assert cached_entries(cache_dir) == 0

    assert_recovers(judge_server, cache_dir)


def test_a_key_echoed_by_the_provider_never_reaches_the_message(
    judge_server: ScriptedJudge, runtime: Runtime
) -> None:
    # Providers quote the key they were given ("Incorrect API key provided: ..."); keys that do
    # not look like "sk-..." (Azure, self-hosted, PROP_API_KEY=anything) must be hidden too.
    judge_server.default = status(
        401, f"Incorrect API key provided: {API_KEY}", "authentication_error"
    )

    error = judge_error(JudgeUnavailable, check)
    assert "PROP_API_KEY" in str(error)
    assert API_KEY not in str(error)


def test_unknown_model_names_the_model_setting(
    judge_server: ScriptedJudge, runtime: Runtime, cache_dir: Path
) -> None:
    judge_server.default = status(
        404, "The model `judge-model` does not exist", "invalid_request_error"
    )

    error = judge_error(JudgeUnavailable, check)
    message = str(error)
    assert "--prop-model" in message
    assert "HTTP 404" in message
    assert MODEL in message
    assert isinstance(error, JudgeUnavailable) and error.status == 404
    assert len(judge_server.requests) == 1
    assert cached_entries(cache_dir) == 0

    assert_recovers(judge_server, cache_dir)


def test_other_bad_request_is_final_and_names_the_settings(
    judge_server: ScriptedJudge, runtime: Runtime, cache_dir: Path
) -> None:
    # (Issue 50: a request over the window, which this test used as its example, is a fault of
    # its own now, with its own advice: tests/test_windows.py.)
    judge_server.default = status(
        400,
        "Unrecognized request argument supplied: top_k (unrecognized argument)",
        "invalid_request_error",
    )

    error = judge_error(JudgeUnavailable, check)
    message = str(error)
    assert "HTTP 400" in message
    assert "unrecognized argument" in message
    assert "--prop-model" in message
    assert "--prop-api-base" in message
    assert MODEL in message
    assert isinstance(error, JudgeUnavailable)
    assert error.status == 400 and error.format_rejected is False
    assert len(judge_server.requests) == 1
    assert cached_entries(cache_dir) == 0

    assert_recovers(judge_server, cache_dir)


# --------------------------------------------------------------------------- replay


@pytest.mark.parametrize("both_paths", [LIGHT_PATH])  # no call: no path to differ
def test_replay_with_an_empty_cache_never_calls_the_judge(
    judge_server: ScriptedJudge, start_runtime: StartRuntime, cache_dir: Path
) -> None:
    replay = start_runtime(judge_server.base_url, cache="replay")

    error = judge_error(VerdictMissing, check)
    assert isinstance(error, VerdictMissing)
    assert CLAIM in str(error)
    assert "--prop-cache=replay" in str(error)
    assert len(error.key) == 64
    assert judge_server.requests == []
    assert cached_entries(cache_dir) == 0
    assert not cache_dir.exists()  # a replay miss does not even create the folder

    # Recorded with "use", the same claim then replays without reaching the judge.
    start_runtime(judge_server.base_url)
    assert_recovers(judge_server, cache_dir)
    runtime_module.deactivate(replay)
    runtime_module.activate(replay)
    judge_server.clear_requests()
    proposition = Proposition(CLAIM, TARGET)
    assert proposition.check() is True
    assert proposition.verdict is not None and proposition.verdict.cached is True
    assert proposition.verdict.key == error.key
    assert judge_server.requests == []


# --------------------------------------------------------------------------- inside a pytest run


class ReportRecorder:
    """A plugin for the inner run: keeps its test reports and the exceptions behind failures."""

    def __init__(self) -> None:
        self.reports: list[pytest.TestReport] = []
        self.exceptions: list[BaseException] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.reports.append(report)

    def pytest_exception_interact(
        self, node: pytest.Item, call: pytest.CallInfo[Any], report: pytest.TestReport
    ) -> None:
        if call.excinfo is not None:
            self.exceptions.append(call.excinfo.value)


def test_a_judge_error_in_a_pytest_run_is_a_failure_with_its_own_section(
    pytester: pytest.Pytester,
    judge_server: ScriptedJudge,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.setenv("PROP_API_KEY", API_KEY)
    for name in ("PROP_MODEL", "PROP_CACHE", "PROP_CACHE_DIR", "PROP_RETRIES", "PROP_API_BASE"):
        monkeypatch.delenv(name, raising=False)
    judge_server.default = status(503, "provider down")
    inner_cache = tmp_path / "inner-cache"
    pytester.makepyfile(
        f"""
        def test_greets(assert_proposition):
            assert_proposition({TARGET!r}, {CLAIM!r})
        """
    )
    recorder = ReportRecorder()
    result = pytester.runpytest_inprocess(
        f"--prop-model={MODEL}",
        f"--prop-api-base={judge_server.base_url}",
        f"--prop-cache-dir={inner_cache}",
        "--prop-cache=use",
        "--prop-retries=1",
        "-p",
        "no:cacheprovider",
        plugins=[recorder],
    )

    assert_counts(result, judge_errors=1)
    [failed] = [report for report in recorder.reports if report.failed]
    assert failed.when == "call"
    assert failed.propositions_judge_error == "JudgeUnavailable"
    sections = dict(failed.sections)
    assert "proposition judge error" in sections
    assert sections["proposition judge error"].startswith("JudgeUnavailable: ")
    assert "HTTP 503" in sections["proposition judge error"]
    [exception] = recorder.exceptions
    assert type(exception) is JudgeUnavailable
    assert not isinstance(exception, AssertionError)
    result.stdout.fnmatch_lines(
        [
            "*- proposition judge error -*",
            "JudgeUnavailable: the judge (model openai/judge-model*HTTP 503*",
            "propositions: 1 claim, 0 passed, 0 failed, 1 judge error,*",
        ]
    )
    assert len(judge_server.requests) == 2  # --prop-retries=1
    assert cached_entries(inner_cache) == 0
