"""Soft claims made after the test body (in a fixture's teardown, from a thread a fixture joins
at teardown) are judged at the end of the test's teardown, and a failing one fails it; one made
after its test was judged is an error at the call, never dropped."""

from __future__ import annotations

import json

import pytest

from tests.support.judge_server import ScriptedJudge, verdict
from tests.support.outcomes import assert_counts

pytest_plugins = ["pytester"]


def script(judge: ScriptedJudge) -> None:
    judge.default = verdict(True, justification="He names quiet cities.")
    judge.on("novel", verdict(False, justification="No novel is mentioned."))


AFTER_THE_BODY = """
import threading

import pytest


@pytest.fixture
def closing_claims(world, expect_proposition):
    yield
    # After the body: the soft claims are made in this fixture's teardown.
    expect_proposition(world, "Oscar talks about travel.")
    expect_proposition(world, "Oscar writes a novel.")


class Workers:
    # Threads the test starts; they run once the body has returned, and are joined at teardown.

    def __init__(self):
        self.go = threading.Event()
        self.threads = []

    def start(self, work):
        def run():
            self.go.wait()
            work()

        thread = threading.Thread(target=run)
        thread.start()
        self.threads.append(thread)


@pytest.fixture
def workers():
    started = Workers()
    yield started
    started.go.set()
    for thread in started.threads:
        thread.join()


def test_in_a_fixture_teardown(closing_claims):
    pass


def test_from_a_thread_joined_at_teardown(workers, world, expect_proposition):
    workers.start(lambda: expect_proposition(world, "Oscar writes a novel."))
"""


@pytest.mark.parametrize(
    "xdist",
    [False, pytest.param(True, marks=pytest.mark.slow)],  # slow: xdist workers in a subprocess
    ids=["one-process", "xdist"],
)
def test_soft_claims_made_after_the_body_are_judged_and_fail_the_teardown(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, inner_run: list[str], xdist: bool
) -> None:
    script(judge_server)
    pytester.makepyfile(test_after=AFTER_THE_BODY)
    spread = ["-p", "xdist", "-n", "2"] if xdist else []
    run = pytester.runpytest_subprocess if xdist else pytester.runpytest
    result = run(*inner_run, *spread, "-rA", "--prop-report=report.json")
    # Each test passes its body, and fails at teardown: a wrong pass is never the outcome.
    assert_counts(result, passed=2, errors=2)
    failure = (
        "E   *PropositionFailed: 1 of {} checked after the test failed: 'Oscar writes a novel.'"
    )
    result.stdout.fnmatch_lines(
        [
            "*ERROR at teardown of test_in_a_fixture_teardown*",
            failure.format("2 claims") + " (test_after.py:11)",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*ERROR at teardown of test_from_a_thread_joined_at_teardown*",
            failure.format("1 claim") + " (test_after.py:45)",
        ]
    )
    # The teardown's error shows the claims' section, the judge's justification in it.
    result.stdout.fnmatch_lines(["*- proposition -*", "FAILED: Oscar writes a novel."])
    assert "No novel is mentioned." in result.stdout.str()
    report = json.loads((pytester.path / "report.json").read_text(encoding="utf-8"))
    judged = sorted(
        (r["test_id"].split("::")[1], r["verdict"]["claim"], r["passed"])
        for r in report["verdicts"]
    )
    assert judged == [
        ("test_from_a_thread_joined_at_teardown", "Oscar writes a novel.", False),
        ("test_in_a_fixture_teardown", "Oscar talks about travel.", True),
        ("test_in_a_fixture_teardown", "Oscar writes a novel.", False),
    ]


def test_a_soft_claim_made_after_its_test_ended_is_an_error_at_the_call(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, inner_run: list[str]
) -> None:
    script(judge_server)
    pytester.makepyfile(
        test_late="""
        import threading

        go = threading.Event()
        raised = []
        thread = None


        def test_starts_a_thread_it_never_joins(world, expect_proposition):
            global thread

            def late():
                go.wait()
                try:
                    expect_proposition(world, "Oscar writes a novel.")
                except Exception as error:
                    raised.append(error)

            thread = threading.Thread(target=late)
            thread.start()


        def test_next():
            go.set()
            thread.join()
            [error] = raised
            assert isinstance(error, RuntimeError)
            assert "made after its test test_late.py::test_starts_a_thread_it_never_joins" in str(error)
            assert "could be neither judged nor reported" in str(error)
        """
    )
    result = pytester.runpytest(*inner_run)
    assert_counts(result, passed=2)
    assert judge_server.requests == []
