"""The bundled examples: on the stand-in judge they report instead of failing (so a first run
teaches and exits 0), with any other judge they are an ordinary pass/fail suite."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support.judge_server import ScriptedJudge, verdict
from tests.support.outcomes import assert_counts, outcome_counts

pytest_plugins = ["pytester"]

EXAMPLES = Path(__file__).resolve().parent.parent / "conftest_examples"
REPORT_MODE = "outcome report (a failed claim is reported and does not fail its test)"


@pytest.fixture
def examples(pytester: pytest.Pytester, inner_run: list[str]) -> list[str]:
    """The examples copied into the inner project; the scripted judge's arguments."""
    shutil.copytree(EXAMPLES, pytester.path / "conftest_examples")
    return inner_run


def header(result: pytest.RunResult) -> str:
    [line] = [line for line in result.outlines if line.startswith("propositions: model")]
    return line


def test_report_mode_is_on_only_for_the_stand_in_judge(
    pytester: pytest.Pytester, examples: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # --collect-only: which settings the run would use, with no judge needed.
    stand_in = pytester.runpytest("conftest_examples", "--collect-only", "-p", "no:cacheprovider")
    assert "a tiny stand-in" in header(stand_in) and REPORT_MODE in header(stand_in)
    for chosen in (["--prop-model=openai/gpt-4.1-mini"], ["--prop-outcome=fail"]):
        result = pytester.runpytest("conftest_examples", "--collect-only", *chosen)
        assert REPORT_MODE not in header(result), chosen
    monkeypatch.setenv("PROP_LOCAL_MODEL", "/models/a-real-judge.gguf")
    own_model = pytester.runpytest("conftest_examples", "--collect-only")
    assert REPORT_MODE not in header(own_model)


def test_with_a_real_judge_the_examples_pass_and_fail(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, examples: list[str]
) -> None:
    judge_server.on("How true is the claim", verdict(8))
    judge_server.on("mention cats", verdict(False, justification="Nobody says cats."))
    result = pytester.runpytest("conftest_examples", *examples)
    counts = outcome_counts(result)
    assert counts["failed"] == 1 and counts["passed"] >= 10 and counts["not_upheld"] == 0
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_reported_claims_a_listing_and_then_the_cache(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, examples: list[str]
) -> None:
    # What a newcomer sees on the stand-in judge, with the scripted judge in its place.
    judge_server.on("How true is the claim", verdict(3, justification="Hardly."))
    judge_server.default = verdict(True, justification="It says so.")
    cached = [*examples, "--prop-cache=use", f"--prop-cache-dir={pytester.path / 'v'}"]
    first = pytester.runpytest("conftest_examples", *cached, "--prop-outcome=report")
    assert first.ret == pytest.ExitCode.OK
    counts = outcome_counts(first)
    assert counts["not_upheld"] >= 2 and counts["passed"] >= 5 and counts["failed"] == 0
    first.stdout.fnmatch_lines(
        [
            "*= propositions: claims and the judge's verdicts =*",
            "FAILED      *",
            "*why:     Hardly.",
        ]
    )
    second = pytester.runpytest("conftest_examples", *cached, "--prop-outcome=report")
    assert_counts(second, **{k: v for k, v in counts.items() if v})
    second.stdout.fnmatch_lines(["propositions: every verdict (*) came from the cache; *"])
