"""The run's verdicts as JUnit XML: each claim's ``proposition[i].*`` properties, the run's
counts as testsuite properties, and a judge error written as an ``<error>``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from _pytest.junitxml import xml_key

from ..verdict import SCORE
from .counts import Calibrations, RunCounts, claim_counts, confidence_text, run_counts
from .runs_text import decision_about
from .summary import calibration_text
from .view import ClaimView, claim_view, in_source_order

if TYPE_CHECKING:
    from ..record import Outcome
    from ..runtime import Runtime
    from ..verdict import Verdict


def _flag(value: bool) -> str:
    return "true" if value else "false"


def _value(verdict: Verdict) -> str:
    return _flag(verdict.value) if isinstance(verdict.value, bool) else str(verdict.value)


def junit_properties(
    outcomes: Iterable[Outcome],
    start: int = 1,
    mode: str = "fail",
    calibrations: Calibrations | None = None,
) -> list[tuple[str, str]]:
    """``proposition[i].<field>`` properties, i counting a test's claims from 1 in the order of
    their lines (``in_source_order``: soft claims finish in any order).

    Fields: claim, kind, value, threshold (score claims), passed, result (passed, failed or
    inconclusive, in either outcome mode), confidence ("not given" when the judge gave
    none), model, cached, justification, and where a soft claim was made. A claim judged by a
    call (``check_proposition``...) has ``by_call`` (the call) and ``upheld`` instead of
    ``passed``, its result upheld/not upheld, and where it was called; ``made_by``, the
    library module that made it, when the test's own code did not (each note of the claim's
    view, ``reports.view``). Booleans are
    ``true``/``false``. Where the deciding judge was calibrated: judge_calibration (the text),
    judge_false_pass_upper and judge_false_fail_upper (fractions; "" when not measured).
    """
    properties: list[tuple[str, str]] = []
    for index, outcome in enumerate(in_source_order(list(outcomes)), start):
        found = claim_properties(claim_view(outcome, mode, calibrations))
        properties += [(f"proposition[{index}].{name}", text) for name, text in found]
    return properties


def claim_properties(view: ClaimView) -> list[tuple[str, str]]:
    """One claim's properties (unnumbered), each note of the view after its ``junit_after``."""
    verdict = view.verdict
    found = [("claim", verdict.claim), ("kind", verdict.kind), ("value", _value(verdict))]
    if view.threshold is not None:
        found.append(("threshold", str(view.threshold)))
    if not view.holds:
        found.append(("holds", "false"))
    if view.by_call is not None:
        found.append(("by_call", view.by_call))
        found.append(("upheld", _flag(view.passed)))
    else:
        found.append(("passed", _flag(view.passed)))
    found.append(("result", str(view.result)))
    found.append(("confidence", confidence_text(verdict.confidence, verdict.precondition_skipped)))
    found += [
        ("model", verdict.model),
        ("cached", _flag(verdict.cached)),
        ("justification", verdict.justification),
    ]
    placed: dict[str, int] = {}
    for how, text in view.notes():
        names = [name for name, _ in found]
        after = how.junit_after if how.junit_after in names else "justification"
        at = names.index(after) + 1 + placed.get(after, 0)
        placed[after] = placed.get(after, 0) + 1
        found.insert(at, (how.junit[0], text))
    if view.escalated_from is not None:
        found += escalation_properties(verdict, view.escalated_from)
    if view.runs is not None:
        found += runs_properties(view.runs)
    calibration = view.calibration
    if calibration is not None:
        found += [
            ("judge_calibration", calibration_text(calibration)),
            ("judge_false_pass_upper", _bound(calibration["false_pass_upper"])),
            ("judge_false_fail_upper", _bound(calibration["false_fail_upper"])),
        ]
    return found


def _cost_value(verdict: Verdict) -> str:
    return "not known" if verdict.cost_usd is None else f"{verdict.cost_usd:.6g}"


def escalation_properties(verdict: Verdict, main: Verdict) -> list[tuple[str, str]]:
    """An escalated claim's properties: the standing verdict's cost, then the main judge's
    verdict (``escalated_from.*``), which did not decide."""
    return [
        ("escalated", "true"),
        ("cost_usd", _cost_value(verdict)),
        ("escalated_from.model", main.model),
        ("escalated_from.value", _value(main)),
        ("escalated_from.cached", _flag(main.cached)),
        ("escalated_from.cost_usd", _cost_value(main)),
        ("escalated_from.justification", main.justification),
    ]


def _bound(value: float | None) -> str:
    return "" if value is None else f"{value:g}"


def junit_run_properties(counts: RunCounts, mode: str) -> list[tuple[str, str]]:
    """The run's counts as testsuite properties (``propositions.<count>``), as the terminal
    and the JSON report give them, and the outcome mode."""
    properties = [(f"propositions.{name}", str(n)) for name, n in claim_counts(counts).items()]
    return [("propositions.outcome", mode), *properties]


def add_junit_run_properties(config: Any, runtime: Runtime) -> None:
    """The run's counts as junitxml's testsuite properties, when a JUnit file is written."""
    xml = config.stash.get(xml_key, None)
    if xml is None:
        return
    counts = run_counts(runtime.record.outcomes, runtime.record.judge_errors, runtime.stats())
    for name, value in junit_run_properties(counts, runtime.settings.outcome):
        xml.add_global_property(name, value)


def runs_properties(runs: Mapping[str, Any]) -> list[tuple[str, str]]:
    """A claim over runs' figures as JUnit properties (``runs.made``, ``runs.rate``...)."""
    estimate = "mean" if runs["rule"] == "mean" else "rate"
    if runs["rule"] == "better_than" and runs["kind"] == SCORE:
        estimate = "mean"
    pairs = [
        ("runs.rule", str(runs["rule_text"])),
        ("runs.decision", str(runs["decision"])),
        ("runs.made", str(runs["runs_made"])),
        ("runs.held", str(runs["runs_held"])),
        (f"runs.{estimate}", str(runs["estimate"])),
        ("runs.lower", str(runs["lower"])),
        ("runs.upper", str(runs["upper"])),
        ("runs.confidence", str(runs["confidence"])),
        ("runs.decided_by", str(runs["decided_by"])),
    ]
    if runs.get("control_estimate") is not None:
        pairs.append(("runs.control", str(runs["control_estimate"])))
    pairs.append(("runs.decision_about", decision_about(runs)))
    if runs.get("referee"):
        refereed = [run for run in runs["runs"] if run.get("referee")]
        pairs += [
            ("runs.referee", str(runs["referee"])),
            ("runs.referee_runs", str(runs.get("referee_runs", len(refereed)))),
            ("runs.agreement", "" if runs.get("agreement") is None else str(runs["agreement"])),
            (
                "runs.referee_verdicts",
                "; ".join(
                    f"run {run['run']}: {run['referee']['value']} "
                    f"({'held' if run.get('referee_held') else 'did not hold'}), main judge "
                    f"{run['verdict']['value']}"
                    for run in refereed
                ),
            ),
        ]
    return pairs


def junit_failure_to_error(config: Any, report: Any) -> bool:
    """Turn the <failure> junitxml just recorded for this call report into an <error>.

    junitxml offers no hook for it, so this reaches into its writer; if a pytest version lays
    it out differently, the test stays a <failure> (a test of the suite watches for that).
    """
    try:
        xml = config.stash.get(xml_key, None)
        if xml is None:
            return False
        reporter = xml.node_reporter(report)
        for node in reversed(reporter.nodes):
            if node.tag == "failure":
                node.tag = "error"
                xml.stats["failure"] -= 1
                xml.stats["error"] += 1
                return True
    except (AttributeError, KeyError, TypeError):
        pass
    return False
