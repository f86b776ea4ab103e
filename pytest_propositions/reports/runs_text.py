"""The text of a claim over runs, from its plain data (``RunsResult.as_dict``, what xdist and
the reports carry): the report, its figures in one line, whose verdicts it is about."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..checks import quote_claim, terminal_text
from ..scale import MAX_SCORE
from ..verdict import SCORE

__all__ = ["decision_about", "figures_line", "interval_confidence", "one_line", "runs_text"]

# How many runs of a failing claim the report quotes, with the judge's justification.
QUOTED_RUNS = 3


def _figure(data: Mapping[str, Any], name: str) -> str:
    value = data.get(name)
    if value is None:
        return "-"
    return f"{value:.2f}"


def interval_confidence(mode: str, confidence: float) -> float:
    """The confidence an interval of the report has at least: the bars that neither one-sided
    test (each wrong at most alpha) rejects, so at least ``1 - 2 alpha`` (a bound, like the
    tests' error rates, which are often well under alpha); every_run's one-sided bound
    [alpha ** (1/k), 1] keeps ``1 - alpha``."""
    return confidence if mode == "every_run" else 1.0 - 2.0 * (1.0 - confidence)


def figures_line(data: Mapping[str, Any]) -> str:
    """The figures in one line: runs made, and the rate with the runs that held, or the mean
    score, or the difference from the control, with its interval; every_run's runs only (it
    has no statistics, so neither confidence nor interval)."""
    made, held = data["runs_made"], data["runs_held"]
    # With a per-run bar (a score claim's threshold), a run holds when it reaches it.
    threshold = data.get("threshold")
    verb = "held" if threshold is None else f"scored at least {threshold}"
    if data["rule"] == "every_run":
        return f"{held} of {made} runs {verb}"
    confidence = f"{interval_confidence(data['rule'], data['confidence']) * 100:.4g}%"
    interval = f"[{_figure(data, 'lower')}, {_figure(data, 'upper')}]"
    if data["rule"] == "better_than":
        what = (
            f"{'mean score' if data['kind'] == SCORE else 'rate'} {_figure(data, 'estimate')} "
            f"vs control {_figure(data, 'control_estimate')}, difference"
        )
        return f"{made} pairs of runs; {what} in {interval} at {confidence}"
    mean = data["rule"] == "mean"
    what = (
        f"mean score {_figure(data, 'estimate')}/{MAX_SCORE}"
        if mean
        else f"rate {_figure(data, 'estimate')}"
    )
    if data.get("referee"):
        agreement = data.get("agreement")
        agreed = "-" if agreement is None else f"{agreement * 100:.0f}%"
        agreeing = f"the same score on {agreed}" if mean else f"agreeing on {agreed}"
        # A mean score reads each run's score: no run holds or fails by itself.
        runs = f"{made} runs judged by" if mean else f"{held} of {made} runs {verb} for"
        return (
            f"{runs} the main judge; referee {data['referee']} "
            f"judged {data['referee_runs']} of them ({agreeing}); the referee's {what}, "
            f"{confidence} interval {interval}"
        )
    if mean:
        return f"{what} over {made} runs, {confidence} interval {interval}"
    return f"{held} of {made} runs {verb}; {what}, {confidence} interval {interval}"


def decision_about(data: Mapping[str, Any]) -> str:
    """Whose verdicts the decision is about: the referee's (whatever the main judge's errors),
    or the main judge's (its errors go into the decision unaccounted for)."""
    main = f"the main judge {data['main_judge']}" if data.get("main_judge") else "the main judge"
    if data.get("referee"):
        return (
            f"the referee {data['referee']}'s verdicts ({main}'s, corrected on the runs the "
            "referee judged)"
        )
    return f"{main}'s verdicts (no referee: its errors are not accounted for)"


def _rule_terms(data: Mapping[str, Any]) -> str:
    """The rule's confidence and max_runs; every_run has no confidence (no statistics)."""
    if data["rule"] == "every_run":
        return f"max_runs {data['max_runs']}"
    return f"confidence {data['confidence'] * 100:g}%, max_runs {data['max_runs']}"


def runs_text(data: Mapping[str, Any]) -> str:
    """The report of a claim over runs: decision, figures, rule, and the runs against it."""
    label = {"pass": "PASSED", "fail": "FAILED", "inconclusive": "INCONCLUSIVE"}[data["decision"]]
    lines = [
        f"{label} over runs: {terminal_text(data['claim'])}",
        f"  rule: {data['rule_text']} ({_rule_terms(data)})",
        f"  figures: {figures_line(data)}",
        f"  decided by: {data['decided_by']}",
        f"  decision about: {decision_about(data)}",
    ]
    if data.get("stopped"):
        lines.append(f"  stopped: {data['stopped']}")
    if data.get("advice"):
        lines.append(f"  to decide it: {data['advice']}")
    # A run holding is against a claim that must be rare (at_most), else a run not holding.
    against = [run for run in data["runs"] if run["held"] == (data["rule"] == "at_most")]
    if data["decision"] != "pass" and against and data["rule"] != "better_than":
        shown = f"; the first {QUOTED_RUNS}" if len(against) > QUOTED_RUNS else ""
        lines.append(f"  runs against the claim ({len(against)}{shown}):")
        for run in against[:QUOTED_RUNS]:
            verdict = run["verdict"]
            why = " ".join(terminal_text(str(verdict.get("justification", ""))).split())
            why = why or "(none given)"
            lines.append(f"    run {run['run']}: {verdict['value']}: {why}")
    return "\n".join(lines)


def one_line(data: Mapping[str, Any]) -> str:
    """The exception's message."""
    claim = quote_claim(data["claim"])
    word = {"pass": "passed", "fail": "failed", "inconclusive": "is inconclusive"}[data["decision"]]
    return f"claim {claim} over runs {word}: {data['rule_text']}; {figures_line(data)}"
