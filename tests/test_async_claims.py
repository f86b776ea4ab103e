"""Claims in async code (issue 51): in an ``async def`` test the claim fixtures return a coroutine
that judges in a worker thread when awaited, so claims gathered are judged at once while the event
loop goes on; a claim never awaited fails its test naming its line, never a silent pass. Tested
under pytest-asyncio (auto and strict modes) and anyio's plugin (asyncio, and trio where it
installs), soft claims included, under ``-n 2`` too; and the Python API's awaited twins."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import threading
import time
from collections.abc import Iterator

import pytest

from pytest_propositions import (
    Proposition,
    acheck_over_runs,
    acheck_proposition,
    acompute_score,
    runs,
)
from pytest_propositions.runtime import Runtime
from pytest_propositions.settings import Settings
from tests.support.active_run import active
from tests.support.judge_server import RecordedRequest, Reply, ScriptedJudge, echo_fn, verdict

SCORE_QUESTION = "How true is the claim"
HAS_TRIO = importlib.util.find_spec("trio") is not None
# Both come with the test extra; an environment installed before they joined it skips, saying so.
NEEDS_PYTEST_ASYNCIO = pytest.mark.skipif(
    importlib.util.find_spec("pytest_asyncio") is None,
    reason="pytest-asyncio is not installed here (the test extra has it)",
)
TRIO = pytest.param(
    "trio",
    marks=pytest.mark.skipif(
        not HAS_TRIO, reason="trio is not installed here (the test extra has it)"
    ),
)


class InFlight:
    """The scripted judge's answers, counting the requests in flight at once. With ``together``,
    each request waits (up to 10 s) until that many are in flight, so a test that sends them
    concurrently sees them all at once, and one that sends them one by one sees one at a time
    (and waits). A claim whose text holds WRONG is judged false (a score: 2), others true (8)."""

    def __init__(self, together: int | None = None) -> None:
        self.most = 0
        self.claims: list[str] = []
        self._now = 0
        self._lock = threading.Lock()
        self._together = threading.Barrier(together, timeout=10) if together else None

    def __call__(self, request: RecordedRequest) -> Reply:
        with self._lock:
            self._now += 1
            self.most = max(self.most, self._now)
            self.claims.append(request.text)
        try:
            if self._together is not None:
                # Broken: they never were all in flight at once, which ``most`` says.
                with contextlib.suppress(threading.BrokenBarrierError):
                    self._together.wait()
            time.sleep(0.2)  # the judge's latency, while the others are in flight
        finally:
            with self._lock:
                self._now -= 1
        score = SCORE_QUESTION in request.text
        holds = "WRONG" not in request.text
        return verdict((8 if holds else 2) if score else holds)


@pytest.fixture
def judged(
    pytester: pytest.Pytester, inner_run: list[str], monkeypatch: pytest.MonkeyPatch
) -> list[str]:
    """An inner project with pytest-asyncio let in (run it with ``ASYNCIO``, or without it with
    ``NO_ASYNCIO``), anyio's plugin as always, and the arguments of ``inner_run``."""
    monkeypatch.setenv("PYTEST_ADDOPTS", "")
    return inner_run


# pytest-asyncio, quiet about the loop scope of async fixtures; anyio's plugin alone.
ASYNCIO = ["-o", "asyncio_default_fixture_loop_scope=function"]
NO_ASYNCIO = ["-p", "no:asyncio"]


GATHERED = """
import asyncio
import pytest

{marker}
async def test_gathered(world, assert_proposition, min_score, assert_propositions):
    first, second, score, batch = await asyncio.gather(
        assert_proposition(world, "Oscar likes cities."),
        assert_proposition(world, "Oscar likes museums.", holds=True),
        min_score(world, "Oscar is calm.", 5),
        assert_propositions(world, ["Oscar is kind."]),
    )
    assert first.value is True and second.value is True
    assert score.value == 8 and batch[0].value is True
"""


@pytest.mark.parametrize(
    ("mode", "marker"), [("strict", "@pytest.mark.asyncio"), ("auto", "")], ids=["strict", "auto"]
)
@NEEDS_PYTEST_ASYNCIO
def test_gathered_claims_are_judged_at_once_under_pytest_asyncio(
    pytester: pytest.Pytester,
    judge_server: ScriptedJudge,
    judged: list[str],
    mode: str,
    marker: str,
) -> None:
    server = InFlight(together=4)
    judge_server.default = echo_fn(server)
    pytester.makepyfile(GATHERED.format(marker=marker))
    cache = [f"--prop-cache-dir={pytester.path / 'verdicts'}"]
    mode_set = [*ASYNCIO, "-o", f"asyncio_mode={mode}"]
    result = pytester.runpytest(*judged, *mode_set, "--prop-cache=use", *cache)
    result.assert_outcomes(passed=1)
    # The four claims were at the judge together: none waited for another's verdict.
    assert server.most == 4
    # Stored by the worker threads: a replay judges nothing and passes the same.
    replay = pytester.runpytest(*judged, *mode_set, "--prop-cache=replay", *cache)
    replay.assert_outcomes(passed=1)
    assert len(judge_server.requests) == 4


ANYIO = """
import anyio
import pytest

@pytest.fixture(params={backends})
def anyio_backend(request):
    return request.param

@pytest.mark.anyio
async def test_four_claims(world, assert_proposition, min_score, assert_propositions):
    verdicts = {{}}

    async def keep(name, claim):
        verdicts[name] = await claim

    async with anyio.create_task_group() as claims:
        claims.start_soon(keep, "first", assert_proposition(world, "Oscar likes cities."))
        claims.start_soon(keep, "second", assert_proposition(world, "Oscar likes museums."))
        claims.start_soon(keep, "score", min_score(world, "Oscar is calm.", 5))
        claims.start_soon(keep, "batch", assert_propositions(world, ["Oscar is kind."]))
    assert verdicts["first"].value is True and verdicts["score"].value == 8
    assert verdicts["batch"][0].value is True

@pytest.mark.anyio
async def test_one_false_claim(world, assert_proposition):
    await assert_proposition(world, "Oscar is WRONG about cities.")

@pytest.mark.anyio
async def test_a_blocking_call(world):
    from pytest_propositions import Proposition

    # Blocks the loop, as before; under trio too (the judge's own loop is asyncio's).
    assert Proposition("Oscar likes blocking calls.").check(world) is True
"""


@pytest.mark.parametrize("backend", ["asyncio", TRIO])
def test_claims_judged_together_under_anyio(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, judged: list[str], backend: str
) -> None:
    server = InFlight(together=4)
    judge_server.default = echo_fn(server)
    pytester.makepyfile(ANYIO.format(backends=[backend]))
    result = pytester.runpytest(*judged, *NO_ASYNCIO, "-k", "test_four_claims")
    result.assert_outcomes(passed=1)
    assert server.most == 4
    judge_server.default = echo_fn(InFlight())
    failing = pytester.runpytest(*judged, *NO_ASYNCIO, "-k", "test_one_false_claim")
    failing.assert_outcomes(failed=1)
    # As in a sync test: the traceback's line is the claim's, the error the verdict's.
    failing.stdout.fnmatch_lines(
        [
            '>       await assert_proposition(world, "Oscar is WRONG about cities.")',
            "E       pytest_propositions.errors.PropositionFailed: claim 'Oscar is WRONG*",
        ]
    )
    blocking = pytester.runpytest(*judged, *NO_ASYNCIO, "-k", "test_a_blocking_call")
    blocking.assert_outcomes(passed=1)


NOT_AWAITED = """
import asyncio
import pytest
from pytest_propositions import Proposition


def claim_in_a_helper(world, assert_proposition):
    assert_proposition(world, "Oscar likes helpers.")


@pytest.mark.asyncio
async def test_not_awaited(world, assert_proposition):
    assert_proposition(world, "Oscar likes cities.")


@pytest.mark.asyncio
async def test_made_by_a_sync_helper(world, assert_proposition):
    claim_in_a_helper(world, assert_proposition)


@pytest.mark.asyncio
async def test_a_twin_not_awaited_is_no_pass(world):
    assert Proposition("Oscar likes twins.").acheck(world)


@pytest.mark.asyncio
async def test_tasks_left_running(world, min_score, assert_propositions):
    asyncio.create_task(assert_propositions(world, ["Oscar is kind."]))
    await asyncio.sleep(0)  # the task starts: its claim goes to the judge
    asyncio.ensure_future(min_score(world, "Oscar is calm.", 5))  # never started


@pytest.mark.asyncio
async def test_failing_and_not_awaited(world, assert_proposition):
    assert_proposition(world, "Oscar likes parks.")
    assert 1 == 2


@pytest.fixture
def checked_world(world, assert_proposition):
    assert assert_proposition(world, "Oscar likes fixtures.").value is True
    return world


@pytest.mark.asyncio
async def test_a_sync_fixture_judges_now(checked_world):
    pass


def test_a_sync_test_judges_now(world, assert_proposition):
    assert assert_proposition(world, "Oscar likes sync tests.").value is True


@pytest.mark.asyncio
async def test_checked_now_in_async_code_too(world, assert_proposition):
    with pytest.raises(TypeError, match="hold"):
        assert_proposition(world, "Oscar likes cities.", hold=False)
"""


@NEEDS_PYTEST_ASYNCIO
def test_a_claim_never_awaited_fails_its_test_naming_its_line(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, judged: list[str]
) -> None:
    server = InFlight()
    judge_server.default = echo_fn(server)
    pytester.makepyfile(test_claims=NOT_AWAITED)
    result = pytester.runpytest(*judged, *ASYNCIO, "-rf")
    result.assert_outcomes(passed=3, failed=5)
    never = "was never awaited, so it was not judged: in async code a claim returns an awaitable"
    result.stdout.fnmatch_lines(
        [
            f"test_claims.py:12: assert_proposition('Oscar likes cities.') {never}*",
            # The helper's line: the claim was made there, and nobody awaited it.
            f"test_claims.py:7: assert_proposition('Oscar likes helpers.') {never}*",
            f"test_claims.py:22: Proposition.acheck('Oscar likes twins.') {never}*",
        ],
        consecutive=False,
    )
    # Tasks that nobody awaited: judged or not, their outcome reached nobody.
    left = "was still being awaited when its test ended (a task nobody awaited?)"
    result.stdout.fnmatch_lines(
        [
            f"test_claims.py:27: assert_propositions(1 claim) {left}*",
            "test_claims.py:29: min_score('Oscar is calm.') was *awaited*",
        ]
    )
    # A test that failed already keeps its error, with a note naming the claim.
    result.stdout.fnmatch_lines(
        [
            "E       assert 1 == 2",
            f"E       test_claims.py:34: assert_proposition('Oscar likes parks.') {never}*",
        ]
    )
    # Only what was awaited (the sync fixture's and test's claims, the tasks') reached the judge.
    judged_claims = [c for c in server.claims if "Oscar likes" in c]
    assert not any(
        name in claim
        for claim in judged_claims
        for name in ("likes cities.", "likes helpers.", "likes twins.", "likes parks.")
    )
    assert any("likes fixtures." in c for c in judged_claims)
    assert any("likes sync tests." in c for c in judged_claims)
    # Python's own "never awaited" warning would only repeat the failure, later.
    assert "RuntimeWarning" not in result.stdout.str() + result.stderr.str()


ANYIO_ON = """
@pytest.fixture
def anyio_backend():
    return "{backend}"

@pytest.mark.anyio"""
SOFT = """
import pytest

{marker}
async def test_soft(world, expect_proposition):
    expect_proposition(world, "Oscar likes cities.")
    expect_proposition(world, "Oscar is WRONG about museums.")
"""


@pytest.mark.parametrize(
    ("plugin", "marker"),
    [
        pytest.param("asyncio", "@pytest.mark.asyncio", id="pytest-asyncio"),
        pytest.param("anyio-asyncio", ANYIO_ON.format(backend="asyncio"), id="anyio-asyncio"),
        pytest.param(
            "anyio-trio",
            ANYIO_ON.format(backend="trio"),
            marks=pytest.mark.skipif(
                not HAS_TRIO, reason="trio is not installed here (the test extra has it)"
            ),
            id="anyio-trio",
        ),
    ],
)
@NEEDS_PYTEST_ASYNCIO
def test_soft_claims_in_async_tests_are_judged_after_the_body(
    pytester: pytest.Pytester,
    judge_server: ScriptedJudge,
    judged: list[str],
    plugin: str,
    marker: str,
) -> None:
    judge_server.default = echo_fn(InFlight())
    pytester.makepyfile(SOFT.format(marker=marker))
    result = pytester.runpytest(*judged, *ASYNCIO)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*1 of 2 claims checked after the test failed: 'Oscar is WRONG about museums.'*"]
    )
    assert len(judge_server.requests) == 2


@pytest.mark.slow
@NEEDS_PYTEST_ASYNCIO
def test_async_claims_under_xdist(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, judged: list[str]
) -> None:
    judge_server.default = echo_fn(InFlight())
    pytester.makepyfile(
        test_gathered=GATHERED.format(marker="@pytest.mark.asyncio"),
        test_claims=NOT_AWAITED,
        test_soft=SOFT.format(marker=ANYIO_ON.format(backend="asyncio")),
    )
    result = pytester.runpytest_subprocess(*judged, *ASYNCIO, "-n", "2")
    result.assert_outcomes(passed=4, failed=6)
    result.stdout.fnmatch_lines(
        ["*test_claims.py:12: assert_proposition('Oscar likes cities.') was never awaited*"]
    )


# -- the Python API's awaited twins ---------------------------------------------------------------

TEST_ID = "test_agent.py::test_booking"
TARGET = "Oscar: I love quiet cities with museums."


@pytest.fixture
def run(judge_server: ScriptedJudge, monkeypatch: pytest.MonkeyPatch) -> Iterator[Runtime]:
    """A run of its own, active, judged by the scripted server, with a test running."""
    monkeypatch.setenv("PROP_API_KEY", "test-key-not-real")
    settings = Settings(model="openai/judge-model", api_base=judge_server.base_url, cache="off")
    runtime = Runtime(settings)
    runtime.current_test = TEST_ID
    with active(runtime):
        yield runtime


def test_the_api_twins_judge_at_once_and_are_noted_at_the_callers_line(
    judge_server: ScriptedJudge, run: Runtime
) -> None:
    server = InFlight(together=5)
    judge_server.default = echo_fn(server)
    proposition = Proposition("Oscar likes museums.", TARGET)

    async def agent_checks() -> list[object]:
        return await asyncio.gather(
            proposition.acheck(),
            Proposition("Oscar is calm.").ascore(TARGET, return_full_response=True),
            Proposition("Oscar is WRONG about parks.").aevaluate("check", TARGET),
            acheck_proposition(TARGET, "Oscar likes cities."),
            acompute_score(TARGET, claim="Oscar is kind."),
        )

    checked, scored, evaluated, one_call, one_score = asyncio.run(agent_checks())
    assert server.most == 5
    assert checked is True and proposition.value is True
    assert isinstance(scored, dict) and scored["value"] == 8
    assert evaluated.value is False  # type: ignore[attr-defined]
    assert one_call is True and one_score == 8
    # Filed as their sync forms' calls, made at this file's lines (not a worker thread's).
    outcomes = run.record.outcomes_of(TEST_ID)
    assert sorted(str(o.by_call) for o in outcomes) == [
        "Proposition.check",
        "Proposition.evaluate",
        "Proposition.score",
        "check_proposition",
        "compute_score",
    ]
    assert {str(o.where).rpartition(":")[0] for o in outcomes} == {"tests/test_async_claims.py"}


def test_an_api_twin_made_outside_a_loop_is_awaited_in_one(run: Runtime) -> None:
    twin = Proposition("Oscar likes museums.").acheck(TARGET)  # no loop runs here
    assert asyncio.run(twin) is True  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="no target"):
        asyncio.run(Proposition("Oscar likes museums.").acheck())


def test_a_claim_over_runs_awaited(run: Runtime) -> None:
    def simulate(run_index: int) -> str:
        return f"Oscar: I love quiet cities (run {run_index})."

    result = asyncio.run(
        acheck_over_runs(runs(simulate, max_runs=30), "Oscar likes cities.", at_least=0.5)
    )
    assert result.passed is True
    assert 0 < len(result.runs) <= 30
