"""The text of a claim over runs (issue 42, item 10): a mean score reports the mean and the runs,
not runs that "held"; every_run shows neither a confidence nor an interval; a claim that cannot
pass says so plainly. Pinned on the plain data the reports read, and on the rule's check."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_propositions.claims.expectation import Expectation
from pytest_propositions.over_runs.rule import check_rule
from pytest_propositions.over_runs.target import runs
from pytest_propositions.reports.runs_text import figures_line, one_line, runs_text
from pytest_propositions.settings import Settings

BASE: dict[str, Any] = {
    "claim": "Ana stays in character.",
    "rule": "mean",
    "rule_text": "the mean score is at least 6",
    "kind": "score",
    "bar": 6.0,
    "threshold": None,
    "confidence": 0.95,
    "decision": "pass",
    "decided_by": "after 16 runs the evidence ...",
    "max_runs": 40,
    "runs_made": 16,
    "runs_held": 16,
    "estimate": 7.5,
    "lower": 6.2,
    "upper": 8.8,
    "advice": "",
    "stopped": "",
    "runs": [],
    "main_judge": "openai/judge-model",
}


def test_a_mean_score_reports_the_mean_and_the_runs_not_runs_held() -> None:
    line = figures_line(BASE)
    assert line == "mean score 7.50/9 over 16 runs, 90% interval [6.20, 8.80]"
    assert one_line(BASE) == (
        "claim 'Ana stays in character.' over runs passed: the mean score is at least 6; "
        "mean score 7.50/9 over 16 runs, 90% interval [6.20, 8.80]"
    )
    assert "held" not in runs_text(BASE)


def test_a_refereed_mean_score_reports_the_runs_judged_and_the_same_scores() -> None:
    data = {**BASE, "referee": "openai/referee", "referee_runs": 4, "agreement": 0.5}
    assert figures_line(data) == (
        "16 runs judged by the main judge; referee openai/referee judged 4 of them (the same "
        "score on 50%); the referee's mean score 7.50/9, 90% interval [6.20, 8.80]"
    )


def test_a_rate_of_runs_reaching_a_score_says_so() -> None:
    data = {
        **BASE,
        "rule": "at_least",
        "rule_text": "the claim scores at least 7 in at least 0.4 of runs",
        "threshold": 7,
        "runs_held": 12,
        "estimate": 0.75,
        "lower": 0.45,
        "upper": 0.93,
    }
    assert (
        figures_line(data)
        == "12 of 16 runs scored at least 7; rate 0.75, 90% interval [0.45, 0.93]"
    )
    plain = {**data, "threshold": None, "kind": "check"}
    assert figures_line(plain) == "12 of 16 runs held; rate 0.75, 90% interval [0.45, 0.93]"


def test_every_run_shows_neither_a_confidence_nor_an_interval() -> None:
    data = {
        **BASE,
        "rule": "every_run",
        "rule_text": "the claim holds in every run",
        "kind": "check",
        "runs_made": 8,
        "runs_held": 7,
        "decision": "fail",
        "decided_by": "run 7 did not hold (every run must)",
        "estimate": 0.875,
        "lower": 0.6,
        "upper": 0.98,
        "runs": [{"run": 7, "held": False, "verdict": {"value": False, "justification": "No."}}],
    }
    assert runs_text(data).splitlines() == [
        "FAILED over runs: Ana stays in character.",
        "  rule: the claim holds in every run (max_runs 40)",
        "  figures: 7 of 8 runs held",
        "  decided by: run 7 did not hold (every run must)",
        "  decision about: the main judge openai/judge-model's verdicts (no referee: its errors "
        "are not accounted for)",
        "  runs against the claim (1):",
        "    run 7: False: No.",
    ]
    assert one_line(data) == (
        "claim 'Ana stays in character.' over runs failed: the claim holds in every run; "
        "7 of 8 runs held"
    )
    # A mean of 9 is decided as every_run: the same, in scores.
    nine = {
        **data,
        "rule_text": "the mean score is at least 9: every run must score 9",
        "kind": "score",
        "threshold": 9,
    }
    assert figures_line(nine) == "7 of 8 runs scored at least 9"
    for text in (runs_text(nine), one_line(nine)):
        assert "interval" not in text and "confidence" not in text and "%" not in text


_HOLDS = Expectation()


def _refusal(options: dict[str, Any], expectation: Expectation = _HOLDS, max_runs: int = 5) -> str:
    settings = Settings()
    with pytest.raises(ValueError) as raised:
        check_rule(runs(str, max_runs=max_runs), options, expectation, settings, "claim")
    return str(raised.value)


@pytest.mark.parametrize(
    ("options", "expectation", "max_runs", "message"),
    [
        (
            {"at_most": 0.05},
            Expectation(),
            40,
            "claim: this claim cannot pass within max_runs=40: even if no run held, showing at "
            "95% confidence that the claim holds in at most 0.05 of runs takes 74 runs; give "
            "max_runs=74 or more",
        ),
        (
            {"at_least": 0.8, "confidence": 0.99},
            Expectation(),
            30,
            "claim: this claim cannot pass within max_runs=30: even if every run held, showing "
            "at 99% confidence that the claim holds in at least 0.8 of runs takes 31 runs; give "
            "max_runs=31 or more",
        ),
        (
            {"at_least": 0.8},
            Expectation(7),
            5,
            "claim: this claim cannot pass within max_runs=5: even if every run scored at least "
            "7, showing at 95% confidence that the claim scores at least 7 in at least 0.8 of "
            "runs takes *",
        ),
        (
            {},
            Expectation(8),
            2,
            "claim: this claim cannot pass within max_runs=2: even if every run scored 9, "
            "showing at 95% confidence that the mean score is at least 8 takes *",
        ),
        (
            {"at_least": 0.5, "referee": "m"},
            Expectation(),
            8,
            "claim: this claim cannot pass within max_runs=8: even if every run held (by the "
            "main judge and referee m alike), showing at 95% confidence that the claim holds in "
            "at least 0.5 of runs takes 9 runs; give max_runs=9 or more",
        ),
    ],
)
def test_a_claim_that_cannot_pass_says_why_plainly(
    options: dict[str, Any], expectation: Expectation, max_runs: int, message: str
) -> None:
    from fnmatch import fnmatchcase

    text = _refusal(options, expectation, max_runs)
    assert fnmatchcase(text, message), text


def test_a_comparison_that_cannot_pass_names_the_control() -> None:
    control = runs(str, max_runs=3)
    text = _refusal({"better_than": control}, max_runs=3)
    assert text.startswith(
        "claim: this claim cannot pass within max_runs=3: even if every run held and no "
        "control run did, showing at 95% confidence that the rate is higher than the control's "
        "takes "
    ), text
