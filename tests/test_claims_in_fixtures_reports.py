"""A claim that fails in a fixture's setup or teardown gets the report's ``proposition`` section,
as one failing in the test body does: the claim, the verdict, the justification."""

from __future__ import annotations

import pytest

from tests.support.judge_server import ScriptedJudge, verdict
from tests.support.outcomes import assert_counts

pytest_plugins = ["pytester"]

IN_FIXTURES = """
import pytest


@pytest.fixture
def judged_in_setup(world, assert_proposition):
    assert_proposition(world, "Oscar writes a novel.")
    yield


@pytest.fixture
def judged_in_teardown(world, assert_proposition):
    yield
    assert_proposition(world, "Oscar paints a fresco.")


def test_setup(judged_in_setup):
    pass


def test_teardown(judged_in_teardown, world, assert_proposition):
    assert_proposition(world, "Oscar talks about travel.")


def test_body_and_teardown(judged_in_teardown, world, assert_proposition):
    assert_proposition(world, "Oscar writes a novel.")
"""


def entry(result: pytest.RunResult, title: str) -> list[str]:
    """The lines of one test's entry among pytest's failures or errors, from its title line
    (``___ title ___``) to the next title or section."""
    lines = result.outlines
    start = next(i for i, line in enumerate(lines) if line.strip("_") == title)
    end = next(
        (i for i in range(start + 1, len(lines)) if lines[i].startswith(("___", "==="))),
        len(lines),
    )
    return lines[start:end]


def test_a_claim_failing_in_a_fixture_setup_or_teardown_gets_the_proposition_section(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, inner_run: list[str]
) -> None:
    judge_server.default = verdict(True, justification="He names quiet cities.")
    judge_server.on("novel", verdict(False, justification="No novel is mentioned."))
    judge_server.on("fresco", verdict(False, justification="He paints nothing."))
    pytester.makepyfile(test_fixtures=IN_FIXTURES)
    result = pytester.runpytest(*inner_run, "-rfE", "-vv")
    assert_counts(result, passed=1, failed=1, errors=3)
    setup = entry(result, " ERROR at setup of test_setup ")
    pytest.LineMatcher(setup).fnmatch_lines(
        [
            "E   *PropositionFailed: claim 'Oscar writes a novel.' judged False*",
            "*- proposition -*",
            "FAILED: Oscar writes a novel.",
            "  verdict: False*",
            "  justification:",
            "    No novel is mentioned.",
        ]
    )
    teardown = entry(result, " ERROR at teardown of test_teardown ")
    pytest.LineMatcher(teardown).fnmatch_lines(
        [
            "E   *PropositionFailed: claim 'Oscar paints a fresco.' judged False*",
            "*- proposition -*",
            "FAILED: Oscar paints a fresco.",
            "  verdict: False*",
            "  justification:",
            "    He paints nothing.",
            # The body's claim passed; it is shown with the claim that failed.
            "PASSED: Oscar talks about travel.",
        ]
    )
    # A body that failed showed its claim in the failure's section; the teardown's section
    # shows only the claim made after it.
    failure = "\n".join(entry(result, " test_body_and_teardown "))
    after = "\n".join(entry(result, " ERROR at teardown of test_body_and_teardown "))
    assert "FAILED: Oscar writes a novel." in failure
    assert "Oscar paints a fresco." not in failure
    assert "FAILED: Oscar paints a fresco." in after
    assert "Oscar writes a novel." not in after
    # The short summary names the claim, in every phase (-vv: lines not cut to the width).
    short = [line for line in result.outlines if line.startswith("ERROR test_fixtures.py::")]
    assert len(short) == 3, result.outlines
    assert all(" - PropositionFailed: claim 'Oscar " in line for line in short), short
