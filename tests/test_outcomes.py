"""Outcomes of their own: a judge error is not a failure (progress letter, word, summary count,
JUnit <error>), and --prop-outcome=report shows claims the judge did not uphold instead of
failing on them. Also the header naming a stand-in judge, the all-cached line, and judging time
that leaves out waiting for a free slot."""

from __future__ import annotations

import dataclasses
import re
import threading
import time
import types
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from pytest_propositions.judging.endpoint import Connection
from pytest_propositions.judging.judge import Judge, JudgeRequest
from pytest_propositions.reports.counts import RunCounts, all_cached_line, header_line
from pytest_propositions.settings import Settings
from tests.support.judge_server import ScriptedJudge, delay, status, verdict
from tests.support.outcomes import assert_counts

pytest_plugins = ["pytester"]

SUITE = """
def test_upheld(world, assert_proposition):
    assert_proposition(world, "Oscar talks about travel.")

def test_false(world, assert_proposition):
    assert_proposition(world, "Oscar writes a novel.")

def test_low(world, min_score):
    min_score(world, "Oscar is cheerful.", 7)

def test_broken(world, assert_proposition):
    assert_proposition(world, "Brokenclaim: Oscar is calm.")
"""


def script(judge: ScriptedJudge) -> None:
    judge.default = verdict(True, justification="He names quiet cities.")
    judge.on("novel", verdict(False, justification="No novel is mentioned."))
    judge.on("cheerful", verdict(3, justification="He sounds flat."))
    judge.on("Brokenclaim", status(401, "Scripted: invalid API key", "authentication_error"))


def junit_results(path: Path) -> tuple[dict[str, str], dict[str, list[str]]]:
    """The testsuite's counts, and each test case's result elements by name."""
    suite = ET.parse(path).getroot().find("testsuite")
    assert suite is not None
    cases = {
        case.attrib["name"]: [child.tag for child in case if child.tag != "properties"]
        for case in suite.iter("testcase")
    }
    return dict(suite.attrib), cases


def letters_of(result: pytest.RunResult) -> str:
    """The result letters after the file name. A progress line may split them: the rest then
    follow on a line of their own (indented or not), or after the file name written again."""
    rows = [
        re.fullmatch(r"(?:test_suite\.py)?\s*([.FJnsExX]+)(?:\s+\[\s*\d+%\])?", line)
        for line in result.outlines
    ]
    return "".join(row.group(1) for row in rows if row is not None)


def test_the_letters_are_read_across_a_progress_line() -> None:
    """On a loaded machine the progress line can come between two letters; pytest then writes
    the rest on an indented line, without the file name."""
    split = [
        "test_suite.py .F",
        "propositions: judging 1 claim with openai/judge-model, the oldest for 1.2s",
        "    FJ                                                      [100%]",
    ]
    again = ["test_suite.py .", "propositions: judging ...", "test_suite.py FFJ [100%]"]
    assert letters_of(types.SimpleNamespace(outlines=split)) == ".FFJ"  # type: ignore[arg-type]
    assert letters_of(types.SimpleNamespace(outlines=again)) == ".FFJ"  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "xdist",
    [False, pytest.param(True, marks=pytest.mark.slow)],  # slow: xdist workers in a subprocess
    ids=["one-process", "xdist"],
)
def test_a_judge_error_is_its_own_outcome_and_a_junit_error(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, inner_run: list[str], xdist: bool
) -> None:
    script(judge_server)
    pytester.makepyfile(test_suite=SUITE)
    spread = ["-p", "xdist", "-n", "2"] if xdist else []
    result = pytester.runpytest_subprocess(*inner_run, *spread, "--junitxml=junit.xml")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert_counts(result, passed=1, failed=2, judge_errors=1)
    result.stdout.re_match_lines([r"^=+ 2 failed, 1 passed, 1 judge error in .*=+$"])
    # pytest's failure sections and short summary still show it, with its own word.
    result.stdout.fnmatch_lines(
        ["*_ test_broken _*", "*JudgeUnavailable*", "*- proposition judge error -*"]
    )
    result.stdout.fnmatch_lines(["JUDGE ERROR test_suite.py::test_broken - *"])
    if not xdist:
        assert letters_of(result) == ".FFJ", result.outlines
    else:
        # Workers finish in any order; all four letters are there.
        assert sorted(letters_of(result)) == sorted(".FFJ"), result.outlines
    attributes, cases = junit_results(pytester.path / "junit.xml")
    assert cases["test_broken"] == ["error"]
    assert cases["test_false"] == ["failure"] and cases["test_low"] == ["failure"]
    assert cases["test_upheld"] == []
    assert (attributes["errors"], attributes["failures"], attributes["tests"]) == ("1", "2", "4")


def test_the_judge_error_word_in_verbose_mode_and_plural_counts(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, inner_run: list[str]
) -> None:
    judge_server.default = status(401, "Scripted: invalid API key", "authentication_error")
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.parametrize("n", [1, 2])
        def test_claim(world, assert_proposition, n):
            assert_proposition(world, f"Oscar is calm ({n}).")
        """
    )
    result = pytester.runpytest(*inner_run, "-v")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*test_claim?1? JUDGE ERROR*", "*test_claim?2? JUDGE ERROR*"])
    result.stdout.re_match_lines([r"^=+ (.*, )?2 judge errors in .*=+$"])


def test_report_mode_lists_every_claim_and_fails_only_on_judge_errors(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, inner_run: list[str]
) -> None:
    script(judge_server)
    pytester.makepyfile(test_suite=SUITE)
    result = pytester.runpytest(*inner_run, "--prop-outcome=report")
    # A judge that could not answer still fails the run.
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert_counts(result, passed=1, not_upheld=2, judge_errors=1)
    result.stdout.fnmatch_lines(["*claims not upheld are reported, not failed*"])
    assert letters_of(result) == ".nnJ", result.outlines
    result.stdout.fnmatch_lines(
        [
            "*= propositions: claims and the judge's verdicts =*",
            "NOT UPHELD  test_suite.py::test_false",
            "    claim:   Oscar writes a novel.",
            "    verdict: False (live), confidence 0.9",
            "    why:     No novel is mentioned.",
            "NOT UPHELD  test_suite.py::test_low",
            "    claim:   Oscar is cheerful.",
            "    verdict: 3/9 (minimum 7) (live), confidence 0.9",
            "    why:     He sounds flat.",
            "UPHELD      test_suite.py::test_upheld",
            "    claim:   Oscar talks about travel.",
            "    verdict: True (live), confidence 0.9",
            "    why:     He names quiet cities.",
        ]
    )
    assert "PropositionFailed" not in result.stdout.str()
    result.stdout.fnmatch_lines(
        ["propositions: 4 claims, 1 upheld, 2 not upheld, 1 judge error, *"]
    )

    # Without the judge error the run passes; without the option the same claims fail.
    passing = pytester.runpytest(*inner_run, "--prop-outcome=report", "-k", "not broken")
    assert passing.ret == pytest.ExitCode.OK
    assert_counts(passing, passed=1, not_upheld=2)
    strict = pytester.runpytest(*inner_run, "-k", "not broken")
    assert_counts(strict, passed=1, failed=2)
    assert "claims and the judge's verdicts" not in strict.stdout.str()


def test_report_mode_is_an_ini_option_and_a_bad_value_is_a_usage_error(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, inner_run: list[str]
) -> None:
    script(judge_server)
    pytester.makepyfile(test_suite=SUITE)
    pytester.makeini("[pytest]\nprop_outcome = report\n")
    result = pytester.runpytest(*inner_run, "-k", "false")
    assert_counts(result, not_upheld=1)
    bad = pytester.runpytest(*inner_run, "--prop-outcome=pass")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["*--prop-outcome*expected one of fail, report, got 'pass'*"])


def test_very_verbose_lists_the_claims_in_fail_mode_too(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, inner_run: list[str]
) -> None:
    script(judge_server)
    pytester.makepyfile(test_suite=SUITE)
    result = pytester.runpytest(*inner_run, "-vv", "-k", "upheld or false")
    assert_counts(result, passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "FAILED      test_suite.py::test_false",
            "*why:*",
            "PASSED      test_suite.py::test_upheld",
        ]
    )


def test_the_header_names_a_stand_in_judge_on_one_line() -> None:
    local = header_line(Settings(), "/tmp/cache")
    assert "\n" not in local
    assert local == (
        "propositions: model local (SmolLM2-135M-Instruct, a tiny stand-in for trying the "
        "plugin; pick a real judge with --prop-model=...), cache use (/tmp/cache)"
    )
    own_file = header_line(Settings(local_model="/models/qwen-7b.gguf"), None)
    assert own_file == "propositions: model local (qwen-7b.gguf), cache use (no folder)"
    real = header_line(Settings(model="openai/gpt-4.1-mini", cache="off", outcome="report"), None)
    assert real == (
        "propositions: model openai/gpt-4.1-mini, cache off, outcome report (claims not upheld "
        "are reported, not failed)"
    )


def test_the_all_cached_line_only_when_no_verdict_needed_the_judge() -> None:
    def counts(cached: int, live: int, calls: int) -> RunCounts:
        claims = cached + live
        return RunCounts(claims, claims, 0, 0, 0, cached, live, calls, 0, 0.0, 0.0)

    assert all_cached_line(counts(12, 0, 0)) == (
        "propositions: every verdict (12) came from the cache; the judge was not called"
    )
    assert all_cached_line(counts(11, 1, 1)) is None
    assert all_cached_line(counts(0, 0, 0)) is None


def test_a_second_run_says_every_verdict_came_from_the_cache(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, inner_run: list[str]
) -> None:
    script(judge_server)
    pytester.makepyfile(test_suite=SUITE)
    cached = [*inner_run, "--prop-cache=use", f"--prop-cache-dir={pytester.path / 'v'}"]
    first = pytester.runpytest(*cached, "-k", "not broken")
    assert "came from the cache" not in first.stdout.str()
    second = pytester.runpytest(*cached, "-k", "not broken")
    second.stdout.fnmatch_lines(
        ["propositions: every verdict (3) came from the cache; the judge was not called"]
    )


def test_judging_time_leaves_out_waiting_for_a_free_slot(
    judge_server: ScriptedJudge, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A managed local server takes one call at a time: the second claim queues behind the first.
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    judge_server.default = delay(1.0, verdict(True))
    base_url = judge_server.base_url

    def managed(model: str) -> Connection:
        return Connection("managed-test", "openai/judge-model", start=lambda: (base_url, "no-key"))

    judge = Judge(dataclasses.replace(Settings(), retries=0), cache=None, connect=managed)
    verdicts: list[Any] = []

    def ask(claim: str) -> None:
        message = {"role": "user", "content": claim}
        verdicts.append(judge.evaluate(JudgeRequest("check", claim, "local", (message,))))

    judge.evaluate(JudgeRequest("check", "warm up", "local", ({"role": "user", "content": "w"},)))
    threads = [threading.Thread(target=ask, args=(f"claim {n}",)) for n in (1, 2)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - started
    judge.close()
    assert len(verdicts) == 2
    # The calls held the one slot in turn, so their judging times fit in the wall time; counting
    # the queue, the second would add the first's whole second again.
    total = sum(v.judge_seconds for v in verdicts)
    assert wall >= 2.0
    assert total < wall + 0.5, (total, wall, [v.judge_seconds for v in verdicts])
