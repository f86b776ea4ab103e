"""Issue 48, items 4 and 12: a judge error is never a pass, even one the code under test caught.

A claim made by call (``check_proposition``, ``Proposition.check``...) whose judge fails raises
a ``JudgeError``; a test that catches it (a try/except, TinyTroupe's parallel ``world.run()``
logging an agent's error and carrying on) is reported as a judge error, the run exits non-zero
and its summary names the test, in one process and under pytest-xdist. And a live call that
failed is a judge call made: the summary never says the judge was not called after one.
"""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.support.judge_server import ScriptedJudge, status, verdict
from tests.support.outcomes import assert_counts
from tests.support.tinytroupe_like import install

pytest_plugins = ["pytester"]

REPOSITORY = Path(__file__).resolve().parents[1]
SPREADS = {"one-process": [], "xdist": ["-p", "xdist", "-n", "2"]}
XDIST = pytest.mark.slow  # a pytest subprocess on two xdist workers


def run(pytester: pytest.Pytester, spread: str, *args: str) -> pytest.RunResult:
    """One inner run: in this process, or in a subprocess with two xdist workers."""
    if spread == "xdist":
        return pytester.runpytest_subprocess(*args, *SPREADS[spread])
    return pytester.runpytest(*args)


CAUGHT_SUITE = """
from pytest_propositions import JudgeError, check_proposition


def test_caught(world):
    try:
        check_proposition(world, "Oscar is broken.")
    except JudgeError:
        pass  # the code under test carries on


def test_fine(world, assert_proposition):
    assert_proposition(world, "Oscar is an architect.")
"""


@pytest.mark.parametrize(
    ("spread", "mode"),
    [
        ("one-process", "fail"),
        ("one-process", "report"),
        pytest.param("xdist", "fail", marks=XDIST),
    ],
)
def test_a_judge_error_the_test_caught_fails_the_run_and_names_the_test(
    pytester: pytest.Pytester,
    judge_server: ScriptedJudge,
    inner_run: list[str],
    spread: str,
    mode: str,
) -> None:
    judge_server.on("Oscar is broken.", status(500, "Scripted: the judge is down"))
    judge_server.on("Oscar is an architect.", verdict(True, "He designs towers."))
    pytester.makepyfile(test_caught=CAUGHT_SUITE)
    result = run(
        pytester,
        spread,
        *inner_run,
        f"--prop-outcome={mode}",
        "--junitxml=junit.xml",
        "--prop-report=report.json",
    )
    # Under --prop-outcome=report too: that mode reports claims not upheld, never judge errors.
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert_counts(result, passed=1, judge_errors=1)
    result.stdout.fnmatch_lines(
        [
            "propositions: 2 claims, 1 * 1 judge error, *",
            "propositions: 1 judge error was caught by the code under test, which fails the run "
            "(a judge error is never a pass): test_caught.py::test_caught",
            "JUDGE ERROR test_caught.py::test_caught - caught by the test: JudgeUn*",
        ]
    )
    result.stdout.fnmatch_lines(["JudgeUnavailable: *Scripted: the judge is down*"])
    # JUnit: the test case is an <error> (as a raised judge error is), its message the error.
    suite = ET.parse(pytester.path / "junit.xml").getroot().find("testsuite")
    assert suite is not None
    assert (suite.attrib["errors"], suite.attrib["failures"]) == ("1", "0")
    errors = {
        case.attrib["name"]: error.attrib["message"]
        for case in suite.iter("testcase")
        for error in case.iter("error")
    }
    assert list(errors) == ["test_caught"]
    assert errors["test_caught"].startswith("caught by the test: JudgeUnavailable: ")
    # JSON: the judge error, under its test, marked as one the test caught.
    report = json.loads((pytester.path / "report.json").read_text(encoding="utf-8"))
    [error] = report["judge_errors"]
    assert error["test_id"] == "test_caught.py::test_caught" and error["caught"] is True
    assert error["error"].startswith("JudgeUnavailable: ")


LATE_AND_SKIPPED_SUITE = """
import threading

import pytest

from pytest_propositions import JudgeError, Proposition, check_proposition

made = threading.Event()
release = threading.Event()
thread = None


def hold(target, additional_context, claim_variables):
    made.set()  # the claim is made while test_a runs...
    release.wait()  # ...and judged once test_b runs
    return True


def judge_quietly(claim):
    try:
        claim.check()
    except JudgeError:
        pass


def test_a(world):
    global thread
    claim = Proposition("Oscar is broken.", world, precondition_function=hold)
    thread = threading.Thread(target=judge_quietly, args=(claim,))
    thread.start()
    made.wait()


def test_b(world):
    release.set()
    thread.join()


def test_skipped_for_it(world):
    try:
        check_proposition(world, "Oscar is broken.")
    except JudgeError:
        pytest.skip("the judge is down")
"""


def test_a_judge_error_no_failing_report_shows_still_fails_the_run(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, inner_run: list[str]
) -> None:
    """One judged after its test ended (a thread left running), one its test skipped for."""
    judge_server.on("Oscar is broken.", status(500, "Scripted: the judge is down"))
    pytester.makepyfile(test_late=LATE_AND_SKIPPED_SUITE)
    result = pytester.runpytest(*inner_run)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert_counts(result, passed=2, skipped=1)
    result.stdout.fnmatch_lines(
        [
            "propositions: 1 judge error was caught by the code under test, which fails the run "
            "(a judge error is never a pass): test_late.py::test_skipped_for_it",
            "propositions: a judge error came after its test's report was made (from a thread "
            "left running), which fails the run (a judge error is never a pass): "
            "test_late.py::test_a",
        ]
    )


# -- TinyTroupe's own code catching the judge error ---------------------------------------------

TINYTROUPE_CONFTEST = """
import pytest

from tinytroupe.agent import TinyPerson
from tinytroupe.environment import TinyWorld


@pytest.fixture
def focus_group():
    oscar = TinyPerson("Oscar", {"occupation": {"title": "Architect"}, "age": 30})
    world = TinyWorld("Focus group", [oscar])
    oscar.listen("Tell me about your travel preferences.")
    return world
"""

TINYTROUPE_SUITE = """
def test_the_world_runs(focus_group, route_tinytroupe_propositions):
    focus_group.run(1)  # TinyTroupe logs the agent's judge error and carries on
    assert [agent.actions_count for agent in focus_group.agents] == [0]


def test_other(focus_group):
    pass
"""


@pytest.mark.parametrize("spread", ["one-process", pytest.param("xdist", marks=XDIST)])
def test_a_judge_error_tinytroupes_parallel_run_logged_fails_the_run(
    pytester: pytest.Pytester,
    tmp_path_factory: pytest.TempPathFactory,
    judge_server: ScriptedJudge,
    inner_run: list[str],
    monkeypatch: pytest.MonkeyPatch,
    spread: str,
) -> None:
    folder = install(tmp_path_factory.mktemp("installed"))
    pytester.syspathinsert(folder)
    # xdist's workers are processes of their own: the stand-in and its support module, found.
    paths = [str(folder), str(REPOSITORY), os.environ.get("PYTHONPATH", "")]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(path for path in paths if path))
    judge_server.on("fits the agent's persona exactly", status(500, "Scripted: the judge is down"))
    pytester.makeconftest(TINYTROUPE_CONFTEST)
    pytester.makepyfile(test_world=TINYTROUPE_SUITE)
    result = run(pytester, spread, *inner_run, "--junitxml=junit.xml")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert_counts(result, passed=1, judge_errors=1)
    result.stdout.fnmatch_lines(
        [
            "*Agent Oscar generated an exception: the judge *",  # TinyTroupe's own log line
            "propositions: 1 judge error was caught by the code under test, which fails the run "
            "(a judge error is never a pass): test_world.py::test_the_world_runs",
        ]
    )
    suite = ET.parse(pytester.path / "junit.xml").getroot().find("testsuite")
    assert suite is not None and suite.attrib["errors"] == "1"


# -- item 12: a live call that failed is a call made -------------------------------------------

CACHED_AND_FAILING_SUITE = """
def test_cached(world, assert_proposition):
    assert_proposition(world, "Oscar is an architect.")


def test_failing(world, assert_proposition):
    assert_proposition(world, "Oscar is broken.")
"""


@pytest.mark.parametrize("spread", ["one-process", pytest.param("xdist", marks=XDIST)])
def test_a_live_call_that_failed_counts_as_a_judge_call(
    pytester: pytest.Pytester,
    judge_server: ScriptedJudge,
    inner_run: list[str],
    spread: str,
) -> None:
    judge_server.on("Oscar is an architect.", verdict(True, "He designs towers."))
    judge_server.on("Oscar is broken.", status(500, "Scripted: the judge is down"))
    pytester.makepyfile(test_calls=CACHED_AND_FAILING_SUITE)
    cache = [
        *(argument for argument in inner_run if not argument.startswith("--prop-cache=")),
        "--prop-cache=use",
        f"--prop-cache-dir={pytester.path / 'verdicts'}",
    ]
    pytester.runpytest(*cache, "-k", "cached").assert_outcomes(passed=1)
    judge_server.clear_requests()

    result = run(pytester, spread, *cache, "--prop-report=report.json")
    assert_counts(result, passed=1, judge_errors=1)
    assert len(judge_server.requests) == 1  # the failing claim's one call (no retries)
    result.stdout.fnmatch_lines(
        ["propositions: 2 claims, *, 1 from cache, 0 judged live, 1 judge call, *"]
    )
    result.stdout.no_fnmatch_line("*the judge was not called*")
    report = json.loads((pytester.path / "report.json").read_text(encoding="utf-8"))
    assert report["summary"]["judge_calls"] == 1
