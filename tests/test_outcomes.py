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
    result.stdout.fnmatch_lines(["*a failed claim is reported and does not fail its test*"])
    assert letters_of(result) == ".nnJ", result.outlines
    result.stdout.fnmatch_lines(
        [
            "*= propositions: claims and the judge's verdicts =*",
            "FAILED      test_suite.py::test_false",
            "    claim:   Oscar writes a novel.",
            "    verdict: False (live), confidence 0.9",
            "    why:     No novel is mentioned.",
            "FAILED      test_suite.py::test_low",
            "    claim:   Oscar is cheerful.",
            "    verdict: 3/9 (minimum 7) (live), confidence 0.9",
            "    why:     He sounds flat.",
            "PASSED      test_suite.py::test_upheld",
            "    claim:   Oscar talks about travel.",
            "    verdict: True (live), confidence 0.9",
            "    why:     He names quiet cities.",
        ]
    )
    assert "PropositionFailed" not in result.stdout.str()
    result.stdout.fnmatch_lines(["propositions: 4 claims, 1 passed, 2 failed, 1 judge error, *"])

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
        "propositions: model openai/gpt-4.1-mini, cache off, outcome report (a failed claim is "
        "reported and does not fail its test)"
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


# -- issue 51 item 12: a claim's outcome in words, and counts that match the listing -------------

WORDS_SUITE = """
from pytest_propositions import check_proposition, runs

def never(**_):
    return False

def simulation(run):
    held = run % 10 < 8
    return f"Oscar says hello in run {run}. " + ("MARK-YES" if held else "He says nothing more.")

def test_expected_false_but_true(world, assert_proposition):
    assert_proposition(world, "Oscar talks about travel.", holds=False)

def test_expected_false_and_false(world, assert_proposition):
    assert_proposition(world, "Oscar writes a novel.", holds=False)

def test_precondition(world, assert_proposition):
    assert_proposition(world, "Oscar dances.", precondition=never)

def test_undecided(assert_proposition):
    assert_proposition(runs(simulation, max_runs=20), "Oscar states the price.", at_least=0.7)

def test_by_call(world):
    check_proposition(world, "Oscar writes a novel.")

def test_broken(world, assert_proposition):
    assert_proposition(world, "Brokenclaim: Oscar is calm.")
"""

LISTED = ("PASSED", "FAILED", "INCONCLUSIVE", "NOT UPHELD", "UPHELD", "JUDGE ERROR")


def listing_words(out: str) -> dict[str, list[str]]:
    """The verdict listing's words, each with the tests listed under it."""
    listing = out.split("propositions: claims and the judge's verdicts")[1].split(
        "\npropositions: "
    )[0]
    found: dict[str, list[str]] = {}
    for line in listing.splitlines():
        word = next((w for w in LISTED if re.match(rf"{w} +test_words\.py::", line)), None)
        if word is not None:
            found.setdefault(word, []).append(line.split("::")[1])
    return found


@pytest.mark.parametrize("mode", ["report", "fail"])
def test_each_claim_is_listed_as_passed_failed_or_inconclusive_and_counted_as_listed(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, inner_run: list[str], mode: str
) -> None:
    """A holds=False claim the judge upheld failed (not "NOT UPHELD ... verdict: True"), one it
    rejected passed, a claim over runs that decided neither way is inconclusive, and the
    summary counts each word of the listing, the claim whose precondition was false included."""
    pytest.importorskip("scipy.stats")
    script(judge_server)
    judge_server.default = verdict(False, justification="No price was stated in this run.")
    judge_server.on("MARK-YES", verdict(True, justification="He states the price."))
    judge_server.on("travel", verdict(True, justification="He talks about travel."))
    pytester.makepyfile(test_words=WORDS_SUITE)
    result = pytester.runpytest(*inner_run, f"--prop-outcome={mode}", "-vv", "--junitxml=j.xml")
    out = result.stdout.str()
    words = listing_words(out)
    assert words == {
        "FAILED": ["test_expected_false_but_true"],
        "PASSED": ["test_expected_false_and_false", "test_precondition"],
        "INCONCLUSIVE": ["test_undecided"],
        "NOT UPHELD": ["test_by_call"],
        "JUDGE ERROR": ["test_broken"],
    }, out
    result.stdout.fnmatch_lines(
        [
            "FAILED      test_words.py::test_expected_false_but_true",
            "    verdict: True (expected the claim not to hold) (live), confidence 0.9",
            "PASSED      test_words.py::test_precondition",
            "    verdict: not judged, the precondition was false",
            "INCONCLUSIVE  test_words.py::test_undecided",
            "    verdict: over runs: the claim holds in at least 0.7 of runs; 16 of 20 runs held*",
        ]
    )
    assert "NOT UPHELD  test_words.py::test_expected" not in out
    # The summary counts what the listing shows, word by word.
    result.stdout.fnmatch_lines(
        [
            "propositions: 6 claims, 2 passed, 1 failed, 1 inconclusive, 1 judge error, "
            "1 by call (0 upheld, 1 not upheld), 1 skipped by precondition, *"
        ]
    )
    suite = ET.parse(pytester.path / "j.xml").getroot().find("testsuite")
    assert suite is not None
    results = {
        case.attrib["name"]: {
            p.attrib["name"]: p.attrib["value"] for p in case.iter("property")
        }.get("proposition[1].result")
        for case in suite.iter("testcase")
    }
    assert results["test_expected_false_but_true"] == "failed"
    assert results["test_undecided"] == "inconclusive"
    assert results["test_by_call"] == "not upheld"


def test_the_counts_add_up_with_inconclusive_claims() -> None:
    from pytest_propositions.reports.counts import summary_line

    counts = RunCounts(4, 1, 1, 1, 0, 0, 3, 3, 0, 0.0, 0.0, inconclusive=1, judge_error_tests=1)
    assert summary_line(counts, "report").startswith(
        "propositions: 4 claims, 1 passed, 1 failed, 1 inconclusive, 1 judge error, 0 from cache"
    )


# -- issue 51 item 13: judge errors counted the same at test level and in the claims' summary ----

BOTH_SUITE = """
from pytest_propositions import JudgeError, check_proposition

def test_soft(world, expect_proposition):
    expect_proposition(world, "Oscar writes a novel.")
    expect_proposition(world, "Brokenclaim: Oscar is calm.")
    expect_proposition(world, "Brokenclaim: Oscar is quiet.")

def test_caught_then_false(world, assert_proposition):
    try:
        check_proposition(world, "Brokenclaim: Oscar is kind.")
    except JudgeError:
        pass
    assert_proposition(world, "Oscar writes a novel.")

def test_fine(world, assert_proposition):
    assert_proposition(world, "Oscar talks about travel.")
"""


def test_a_test_with_a_false_claim_and_a_judge_error_is_a_judge_error_as_the_summary_counts_it(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, inner_run: list[str]
) -> None:
    script(judge_server)
    pytester.makepyfile(test_both=BOTH_SUITE)
    result = pytester.runpytest(*inner_run, "-rA", "--junitxml=junit.xml")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    # pytest's line counts tests, the claims' summary judge errors and the tests they came in.
    assert_counts(result, passed=1, judge_errors=2)
    result.stdout.fnmatch_lines(["propositions: 6 claims, *, 3 judge errors in 2 tests, *"])
    # The false claim is still there: its failure is the crash line, with the judge errors.
    result.stdout.fnmatch_lines(
        [
            "JUDGE ERROR test_both.py::test_soft - PropositionFailed:*",
            "JUDGE ERROR test_both.py::test_caught_then_false - PropositionFailed:*",
        ]
    )
    result.stdout.fnmatch_lines(["FAILED: Oscar writes a novel.", "*judge error (caught)*"])
    _, cases = junit_results(pytester.path / "junit.xml")
    assert cases["test_soft"] == ["error"] and cases["test_caught_then_false"] == ["error"]
    suite = ET.parse(pytester.path / "junit.xml").getroot()
    messages = {case.attrib["name"]: case.find("error") for case in suite.iter("testcase")}
    error = messages["test_caught_then_false"]
    assert error is not None
    assert error.attrib["message"].startswith(
        "PropositionFailed: claim 'Oscar writes a novel.' judged False (+1 judge error)\n"
    )
