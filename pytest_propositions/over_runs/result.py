"""A claim over runs, decided: each run's verdict (``RunVerdict``), the figures every report
shows (``RunsResult``, public) and the one verdict standing for the claim in the reports."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ..reports.runs_text import one_line, runs_text
from ..scale import MAX_SCORE, MIN_SCORE
from ..verdict import Usage, Verdict

if TYPE_CHECKING:
    from ..verdict import Kind
    from .rule import Rule

__all__ = ["RunVerdict", "RunsResult", "summary_verdict"]


@dataclass(frozen=True)
class RunVerdict:
    """One run's verdict (and, for a comparison, the control's run of the same number)."""

    run: int
    verdict: Verdict
    held: bool
    control: Verdict | None = None
    control_held: bool | None = None
    # With a referee: its verdict on this run when the run was drawn (None otherwise), and the
    # chance the run had of being drawn.
    referee: Verdict | None = None
    referee_held: bool | None = None
    fraction: float | None = None


Decision = Literal["pass", "fail", "inconclusive"]


@dataclass
class RunsResult:
    """A claim over runs, decided: the figures every report shows."""

    claim: str
    rule: Rule
    max_runs: int
    decision: Decision = "inconclusive"
    decided_by: str = ""
    runs: list[RunVerdict] = field(default_factory=list)
    estimate: float = math.nan
    lower: float = math.nan
    upper: float = math.nan
    control_estimate: float | None = None
    advice: str = ""
    stopped: str = ""

    @property
    def passed(self) -> bool:
        return self.decision == "pass"

    @property
    def runs_made(self) -> int:
        return len(self.runs)

    @property
    def runs_held(self) -> int:
        return sum(1 for run in self.runs if run.held)

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON data: what the reports and xdist carry."""
        rule = self.rule
        data: dict[str, Any] = {
            "claim": self.claim,
            "rule": rule.mode,
            "rule_text": rule.describe(),
            "kind": rule.kind,
            "bar": rule.bar,
            "threshold": rule.threshold,
            "confidence": rule.confidence,
            "decision": self.decision,
            "decided_by": self.decided_by,
            "max_runs": self.max_runs,
            "runs_made": self.runs_made,
            "runs_held": self.runs_held,
            "estimate": _rounded(self.estimate),
            "lower": _rounded(self.lower),
            "upper": _rounded(self.upper),
            "advice": self.advice,
            "stopped": self.stopped,
            "runs": [
                {
                    "run": run.run,
                    "held": run.held,
                    "verdict": run.verdict.as_dict(),
                    **(
                        {"control_held": run.control_held, "control": run.control.as_dict()}
                        if run.control is not None
                        else {}
                    ),
                    **(
                        {"referee_held": run.referee_held, "referee": run.referee.as_dict()}
                        if run.referee is not None
                        else {}
                    ),
                }
                for run in self.runs
            ],
        }
        data["main_judge"] = self.runs[0].verdict.model if self.runs else ""
        data["decision_about"] = "referee" if rule.referee is not None else "main judge"
        if rule.referee is not None:
            checked = [run for run in self.runs if run.referee is not None]
            data["referee"] = rule.referee
            data["referee_runs"] = len(checked)
            # Agreement on what the decision reads: held or not for a rate, the score for a mean.
            same = [
                run.referee_held == run.held
                if rule.mode != "mean"
                else run.referee is not None and run.referee.value == run.verdict.value
                for run in checked
            ]
            data["agreement"] = _rounded(sum(same) / len(same)) if same else None
        if self.control_estimate is not None:
            data["control_estimate"] = _rounded(self.control_estimate)
        return data

    def text(self) -> str:
        return runs_text(self.as_dict())


def _rounded(value: float) -> float | None:
    return None if math.isnan(value) else round(value, 4)


def summary_verdict(result: RunsResult) -> Verdict:
    """One verdict standing for the claim over runs, for the reports that list verdicts."""
    verdicts = (
        [run.verdict for run in result.runs]
        + [run.control for run in result.runs if run.control is not None]
        + [run.referee for run in result.runs if run.referee is not None]
    )
    # A rate (or every_run) decision is a True/False verdict, even about scored runs; a mean
    # score's stands as the mean, rounded down.
    kind: Kind = "score" if result.rule.on_scores else "check"
    if not result.rule.on_scores:
        value: bool | int = result.passed
    else:
        value = (
            0
            if math.isnan(result.estimate)
            else max(MIN_SCORE, min(MAX_SCORE, math.floor(result.estimate)))
        )
    costs = [v.cost_usd for v in verdicts if v.cost_usd is not None]
    data = result.as_dict()
    return Verdict(
        kind=kind,
        claim=result.claim,
        value=value,
        justification=one_line(data),
        reasoning=runs_text(data),
        model=verdicts[0].model if verdicts else "",
        cached=bool(verdicts) and all(v.cached for v in verdicts),
        usage=Usage(
            prompt_tokens=sum(v.usage.prompt_tokens for v in verdicts),
            completion_tokens=sum(v.usage.completion_tokens for v in verdicts),
        ),
        cost_usd=sum(costs) if costs else None,
        judge_seconds=sum(v.judge_seconds for v in verdicts),
    )
