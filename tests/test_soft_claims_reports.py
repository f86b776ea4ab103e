"""Soft claims and what a failing test says about them: judged even when the body raised, the
line that made a failing claim, and the claim itself in pytest's short summary."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from typing import Any

import pytest

from tests.support.judge_server import ScriptedJudge, delay, verdict
from tests.support.outcomes import assert_counts

pytest_plugins = ["pytester"]


def script(judge: ScriptedJudge) -> None:
    judge.default = verdict(True, justification="He names quiet cities.")
    judge.on("novel", verdict(False, justification="No novel is mentioned."))


@pytest.mark.parametrize(
    "raising",
    [
        pytest.param("assert 1 == 2, 'the plain assert'", id="failing-assert"),
        pytest.param("raise RuntimeError('the simulation broke')", id="any-error"),
        pytest.param(
            "expect_proposition(world, 'Oscar is calm.', min_score=42)", id="bad-soft-claim"
        ),
    ],
)
def test_soft_claims_made_before_an_exception_are_judged_and_reported(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, inner_run: list[str], raising: str
) -> None:
    script(judge_server)
    pytester.makepyfile(
        test_body=f"""
        def test_body(world, expect_proposition):
            expect_proposition(world, "Oscar talks about travel.")
            expect_proposition(world, "Oscar writes a novel.")
            {raising}
        """
    )
    result = pytester.runpytest(*inner_run, "--prop-report=report.json")
    assert_counts(result, failed=1)
    # Both claims were judged, though the body never reached its end.
    assert len(judge_server.requests) == 2
    report = json.loads((pytester.path / "report.json").read_text(encoding="utf-8"))
    judged = {r["verdict"]["claim"]: r["passed"] for r in report["verdicts"]}
    assert judged == {"Oscar talks about travel.": True, "Oscar writes a novel.": False}
    out = result.stdout.str()
    # The test's failure shows the body's exception and what became of the soft claims.
    first_line = raising.split("(")[0].split()[0]
    assert first_line in out
    result.stdout.fnmatch_lines(
        [
            "*2 soft claims made before this error were judged too, 1 failed*",
            "*- proposition -*",
            "FAILED: Oscar writes a novel.",
            "*claimed at: test_body.py:3",
            "PASSED: Oscar talks about travel. (True; test_body.py:2)",
        ]
    )
    assert "No novel is mentioned." in out


def test_a_pytest_skip_in_the_body_judges_nothing(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, inner_run: list[str]
) -> None:
    script(judge_server)
    pytester.makepyfile(
        """
        import pytest

        def test_body(world, expect_proposition):
            expect_proposition(world, "Oscar talks about travel.")
            pytest.skip("not today")
        """
    )
    result = pytester.runpytest(*inner_run)
    assert_counts(result, skipped=1)
    assert judge_server.requests == []


def test_report_mode_says_not_upheld_after_a_body_error(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, inner_run: list[str]
) -> None:
    script(judge_server)
    pytester.makepyfile(
        """
        def test_body(world, expect_proposition):
            expect_proposition(world, "Oscar writes a novel.")
            assert False
        """
    )
    result = pytester.runpytest(*inner_run, "--prop-outcome=report")
    assert_counts(result, failed=1)
    result.stdout.fnmatch_lines(["*1 soft claim made before this error was judged too, 1 failed*"])


def test_a_failing_soft_claim_points_at_its_line_and_the_short_summary_shows_it(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, inner_run: list[str]
) -> None:
    script(judge_server)
    long_claim = "Oscar writes a novel about " + "a long journey through quiet cities, " * 4
    pytester.makepyfile(
        test_where=f"""
        def test_soft(world, expect_proposition):
            expect_proposition(world, "Oscar talks about travel.")
            expect_proposition(world, {long_claim!r})
        """
    )
    result = pytester.runpytest(*inner_run, "-rf", "--junitxml=junit.xml")
    assert_counts(result, failed=1)
    out = result.stdout.str()
    assert "All traceback entries are hidden" not in out
    # The traceback is the test's own line, as for a plain assert.
    result.stdout.fnmatch_lines(
        [
            ">       expect_proposition(world, *",
            "E       pytest_propositions.errors.PropositionFailed: 1 of 2 claims checked after "
            "the test failed: 'Oscar writes a novel about*' (test_where.py:3)",
            "test_where.py:3: PropositionFailed",
        ]
    )
    # The short summary leads with the claim (cut short), not the exception's module path.
    short = [line for line in result.outlines if line.startswith("FAILED test_where.py")]
    assert len(short) == 1, result.outlines
    assert "pytest_propositions.errors" not in short[0]
    assert short[0].startswith("FAILED test_where.py::test_soft - PropositionFailed: claim 'Osc")
    # The verbose short summary is whole: the claim is shortened, with the line that made it.
    verbose = pytester.runpytest(*inner_run, "-rf", "-vv")
    verbose.stdout.fnmatch_lines(
        [
            "FAILED test_where.py::test_soft - PropositionFailed: claim 'Oscar writes a novel "
            "about a long journey*…' judged False at test_where.py:3"
        ]
    )
    junit = (pytester.path / "junit.xml").read_text(encoding="utf-8")
    # Soft claims are judged concurrently, and numbered in the order of their lines.
    assert 'name="proposition[2].claimed_at" value="test_where.py:3"' in junit


def test_a_failing_assert_proposition_keeps_the_claim_in_the_short_summary(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, inner_run: list[str]
) -> None:
    judge_server.default = verdict(2, justification="No novel.")
    pytester.makepyfile(
        test_hard="""
        def test_hard(world, min_score):
            min_score(world, "Oscar writes a novel.", 7)
        """
    )
    result = pytester.runpytest(*inner_run, "-rf", "-vv")
    result.stdout.fnmatch_lines(
        [
            "FAILED test_hard.py::test_hard - PropositionFailed: claim 'Oscar writes a novel.' "
            "scored 2/9, minimum 7"
        ]
    )


# -- issue 51 item 15: soft claims in the order of their lines; passed ones in one line ----------

ORDER_SUITE = """
def test_many(world, expect_proposition):
    expect_proposition(world, "Slowest: Oscar talks.")
    expect_proposition(world, "Slower: Oscar writes a novel.")
    expect_proposition(world, "Slow: Oscar is calm.")
    expect_proposition(world, "Oscar is an architect.")
"""


def junit_claims(path: Any) -> list[str]:
    root = ET.parse(path).getroot()
    found = {
        p.attrib["name"]: p.attrib["value"]
        for p in root.iter("property")
        if p.attrib["name"].endswith(".claim")
    }
    return [found[f"proposition[{i}].claim"] for i in range(1, len(found) + 1)]


def test_soft_claims_are_listed_in_the_order_of_their_lines_and_passed_ones_take_one_line(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, inner_run: list[str]
) -> None:
    """The first claims finish last (their judge is slower): the section and JUnit still list
    them line by line; a passed claim is one line unless -v."""
    judge_server.default = verdict(True, justification="He does.")
    judge_server.on("Slowest", delay(0.6, verdict(True, justification="He talks.")))
    judge_server.on("Slower", delay(0.4, verdict(False, justification="No novel.")))
    judge_server.on("Slow:", delay(0.2, verdict(True, justification="He is calm.")))
    pytester.makepyfile(test_order=ORDER_SUITE)
    result = pytester.runpytest(*inner_run, "--junitxml=junit.xml")
    assert_counts(result, failed=1)
    section = result.stdout.str().split("- proposition -")[1].split("generated xml")[0]
    assert section.count("\n  justification:") == 1  # the failed claim's only
    result.stdout.fnmatch_lines(
        [
            "FAILED: Slower: Oscar writes a novel.",
            "*claimed at: test_order.py:3",
            "*No novel.",
            "PASSED: Slowest: Oscar talks. (True; test_order.py:2)",
            "PASSED: Slow: Oscar is calm. (True; test_order.py:4)",
            "PASSED: Oscar is an architect. (True; test_order.py:5)",
            "(3 claims passed, one line each: -v shows them in full)",
        ]
    )
    lines = ["Slowest: Oscar talks.", "Slower: Oscar writes a novel.", "Slow: Oscar is calm."]
    assert junit_claims(pytester.path / "junit.xml") == [*lines, "Oscar is an architect."]

    verbose = pytester.runpytest(*inner_run, "-v")
    verbose.stdout.fnmatch_lines(
        [
            "FAILED: Slower: Oscar writes a novel.",
            "PASSED: Slowest: Oscar talks.",
            "*claimed at: test_order.py:2",
            "PASSED: Slow: Oscar is calm.",
            "PASSED: Oscar is an architect.",
        ]
    )
    assert "one line each" not in verbose.stdout.str()
