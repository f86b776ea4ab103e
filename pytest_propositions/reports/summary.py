"""From verdicts to reports: the failure section, the summary and its table, the header, JUnit
properties, the JSON report (and the records xdist workers send to the controller).
"""

from __future__ import annotations

import json
import os
import textwrap
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from ..checks import terminal_text
from ..scale import MAX_SCORE

if TYPE_CHECKING:
    from ..judging.judge import JudgeStats
    from ..record import Outcome
    from ..runtime import Runtime
    from ..settings import Settings
    from ..verdict import Verdict

SECTION_TITLE = "proposition"


def _indent(text: str) -> str:
    """A judge's text under its heading: one line, escaped (``terminal_text``), indented."""
    return textwrap.indent(terminal_text(text.strip()) or "(none given)", "    ")


def provenance(verdict: Verdict) -> str:
    if verdict.precondition_skipped:
        return "not judged (precondition false)"
    if verdict.cached:
        return f"from the cache, recorded {verdict.recorded_at or 'at an unknown time'}"
    return f"judged live in {verdict.judge_seconds:.2f}s"


def describe_value(
    verdict: Verdict, threshold: int | None, holds: bool = True, by_call: str | None = None
) -> str:
    if by_call is not None:
        return call_value_text(verdict.kind, verdict.value, threshold, by_call)
    if verdict.kind == "check":
        return f"{verdict.value} (expected {'True' if holds else 'the claim not to hold'})"
    bar = (
        f"minimum {threshold}" if holds else f"maximum {threshold}: expected the claim not to hold"
    )
    return f"{verdict.value}/{MAX_SCORE} ({bar})"


def call_value_text(kind: str, value: object, threshold: int | None, by_call: str) -> str:
    """The verdict of a claim judged by a call: what it was, by which call, and that no
    expectation was asserted (the test's own code decides what it means)."""
    if kind == "check":
        return f"{value} (by {by_call}, not asserted)"
    return f"{value}/{MAX_SCORE} (by {by_call}, not asserted; upheld at {threshold} or more)"


def plural(count: int, word: str, words: str | None = None) -> str:
    """``1 claim``, ``2 claims``: every count a report writes goes through here."""
    return f"{count} {word if count == 1 else (words or word + 's')}"


def confidence_text(confidence: float | None, precondition_skipped: bool = False) -> str:
    """The confidence as the judge gave it (never rounded to a made-up 0.00), or "not given".

    A claim whose precondition was false had no judge; the verdict's confidence of 1 (kept for
    the reference library's API) is not the judge's.
    """
    if precondition_skipped:
        return "not given (not judged: the precondition was false)"
    if confidence is None:
        return "not given"
    return f"{confidence:.4g}"


def result_word(passed: bool, outcome: str = "fail") -> str:
    """A claim's result as every report words it; under --prop-outcome=report, "not upheld"."""
    if outcome == "report":
        return "upheld" if passed else "not upheld"
    return "passed" if passed else "failed"


# -- the judge's measured error (calibration.py's view of a calibration, plain data) -----------

#: What the reports ask for a judge's calibration: its error view by judge identity, or None.
Calibrations = Callable[[str], Mapping[str, Any] | None]


def _percent(value: float) -> str:
    return f"{value * 100:.1f}%"


def _error_side(view: Mapping[str, Any], side: str, bounded: bool) -> str:
    """One error rate: "false pass ≤ 6.9%" (bounded) or "false pass 2/88 = 2.3% (≤ 6.9%)"."""
    rate, upper = view[f"{side}_rate"], view[f"{side}_upper"]
    errors, trials = {
        "false_pass": ("false_passes", "negatives"),
        "false_fail": ("false_fails", "positives"),
    }[side]
    name = side.replace("_", " ")
    if view[trials] == 0:
        what = "false" if side == "false_pass" else "true"
        return f"{name} not measured (no {what} claims labeled)"
    if upper is None:
        return f"{name} {_percent(rate)} (no bound: calibrate again to record the counts)"
    if bounded:
        return f"{name} ≤ {_percent(upper)}"
    return f"{name} {view[errors]}/{view[trials]} = {_percent(rate)} (≤ {_percent(upper)})"


def calibration_line(view: Mapping[str, Any], model: str | None = None) -> str:
    """The run's line: "judge X calibrated: false pass ≤ a%, false fail ≤ b% (n labeled claims)"."""
    name = model or view["model"] or view["identity"]
    day = str(view.get("recorded_at") or "")[:10] or "unknown date"
    return (
        f"judge {name} calibrated: {_error_side(view, 'false_pass', True)}, "
        f"{_error_side(view, 'false_fail', True)} ({plural(int(view['items']), 'labeled claim')}; "
        f"{view['confidence'] * 100:g}% upper bounds; balanced accuracy "
        f"{view['balanced_accuracy']:.2f}, {day})"
    )


def calibration_text(view: Mapping[str, Any]) -> str:
    """A claim's line: the judge's measured error rates, their counts and upper bounds."""
    day = str(view.get("recorded_at") or "")[:10] or "unknown date"
    return (
        f"{_error_side(view, 'false_pass', False)}, {_error_side(view, 'false_fail', False)}; "
        f"{view['confidence'] * 100:g}% upper bounds, calibrated on "
        f"{plural(int(view['items']), 'labeled claim')}, {day}"
    )


def decision_judge(outcome: Outcome) -> str:
    """The identity of the judge whose verdicts decided a claim: a claim over runs with a
    referee is decided on the referee's verdicts; a claim with a false precondition on none."""
    verdict = outcome.verdict
    if verdict.precondition_skipped:
        return ""
    if outcome.runs is not None and outcome.runs.get("referee"):
        for run in outcome.runs.get("runs", []):
            if run.get("referee"):
                return str(run["referee"].get("model") or "")
        return ""
    return verdict.model


def claim_calibration(
    outcome: Outcome, calibrations: Calibrations | None
) -> Mapping[str, Any] | None:
    """The calibration of the judge that decided this claim, where one was recorded."""
    if calibrations is None:
        return None
    judge = decision_judge(outcome)
    return calibrations(judge) if judge else None


def run_calibrations(
    outcomes: Iterable[Outcome], calibrations: Calibrations | None
) -> dict[str, Mapping[str, Any]]:
    """Each calibrated judge that decided a claim of the run, by identity, sorted."""
    found: dict[str, Mapping[str, Any]] = {}
    for outcome in outcomes:
        view = claim_calibration(outcome, calibrations)
        if view is not None:
            found[decision_judge(outcome)] = view
    return dict(sorted(found.items()))


def claim_result(passed: bool, by_call: str | None, outcome: str = "fail") -> str:
    """One claim's result word: a claim judged by a call (``by_call``) fails nothing, so it is
    upheld or not upheld whatever the outcome mode."""
    return result_word(passed, "report" if by_call is not None else outcome)


def outcome_text(
    outcome: Outcome,
    mode: str = "fail",
    reasoning: bool = False,
    calibrations: Calibrations | None = None,
) -> str:
    calibration = claim_calibration(outcome, calibrations)
    if outcome.runs is not None:
        from ..over_runs.many_runs import runs_text

        text = runs_text(outcome.runs)
        if calibration is not None:
            text += f"\n  judge's measured error: {calibration_text(calibration)}"
        return text
    verdict = outcome.verdict
    label = claim_result(outcome.passed, outcome.by_call, mode).upper()
    value = describe_value(verdict, outcome.threshold, outcome.holds, outcome.by_call)
    lines = [
        f"{label}: {terminal_text(verdict.claim)}",
        f"  {'verdict' if verdict.kind == 'check' else 'score'}: {value}",
    ]
    if outcome.where:
        lines.append(f"  claimed at: {outcome.where}")
    lines.append(
        f"  confidence: {confidence_text(verdict.confidence, verdict.precondition_skipped)}"
    )
    if verdict.votes:
        lines.append(f"  votes: {', '.join(str(vote) for vote in verdict.votes)}")
    if verdict.revised_from is not None:
        lines.append(f"  revised on double check from: {verdict.revised_from}")
    lines.append(f"  model: {verdict.model or 'none'}; {provenance(verdict)}")
    if calibration is not None:
        lines.append(f"  judge's measured error: {calibration_text(calibration)}")
    if verdict.key:
        lines.append(f"  key: {verdict.key[:16]}")
    lines.append("  justification:")
    lines.append(_indent(verdict.justification))
    if reasoning:
        lines.append("  reasoning:")
        lines.append(_indent(verdict.reasoning))
    lines += escalation_lines(outcome)
    return "\n".join(lines)


def cost_text(verdict: Verdict) -> str:
    """What judging a verdict cost; a cached one says it was paid when it was recorded."""
    if verdict.cost_usd is None:
        return "cost not known"
    return f"cost ${verdict.cost_usd:.6f}" + (" (when recorded)" if verdict.cached else "")


def escalation_lines(outcome: Outcome) -> list[str]:
    """An escalated claim: the stronger model's verdict stood; the main judge's, and each cost."""
    main = outcome.escalated_from
    if main is None:
        return []
    verdict = outcome.verdict
    said = describe_value(main, outcome.threshold, outcome.holds)
    return [
        f"  escalated: {verdict.model}'s verdict stands; {cost_text(verdict)}",
        f"  main judge: {main.model or 'none'} said {said}; {provenance(main)}; {cost_text(main)}"
        + (f"; key {main.key[:16]}" if main.key else ""),
        "  main judge's justification:",
        _indent(main.justification),
    ]


RUNS_SECTION_TITLE = "proposition over runs"


def runs_sections(
    outcomes: Iterable[Outcome], calibrations: Calibrations | None = None
) -> list[tuple[str, str]]:
    """A report section for each claim over runs (a passing test shows them under -rA)."""
    return [
        (RUNS_SECTION_TITLE, outcome_text(o, calibrations=calibrations))
        for o in outcomes
        if o.runs is not None
    ]


def failure_section(
    outcomes: Iterable[Outcome],
    mode: str = "fail",
    reasoning: bool = False,
    calibrations: Calibrations | None = None,
) -> str:
    """Every claim of a failed test, failing ones first, each with its justification (and the
    judge's reasoning under -vv), and the judge's measured error where it was calibrated."""
    ordered = sorted(outcomes, key=lambda outcome: outcome.passed)
    return "\n\n".join(outcome_text(outcome, mode, reasoning, calibrations) for outcome in ordered)


class RunCounts(NamedTuple):
    """The run's claims, counted once for every report (terminal, JSON, HTML, JUnit).

    ``claims`` is every claim the run tried to judge: ``passed + failed + by_call +
    judge_errors``, where ``passed`` and ``failed`` count the claims asserted (the fixtures',
    the markers') and ``by_call`` those judged by calls of the reference library's API in a
    test (``check_proposition``...), ``by_call_upheld + by_call_not_upheld`` of them, which
    fail nothing. A claim with a verdict got it in one of three ways:
    ``skipped_by_precondition + from_cache + judged_live == passed + failed + by_call``.
    ``judge_calls``, tokens and cost count requests (a claim with ``samples=3`` makes three).
    ``escalated`` counts the claims the stronger model decided (``--prop-escalate-to``),
    ``escalated_changed`` those of them where its verdict differs from the main judge's.
    """

    claims: int
    passed: int
    failed: int
    judge_errors: int
    skipped_by_precondition: int
    from_cache: int
    judged_live: int
    judge_calls: int
    tokens: int
    cost_usd: float
    judge_seconds: float
    by_call: int = 0
    by_call_upheld: int = 0
    by_call_not_upheld: int = 0
    escalated: int = 0
    escalated_changed: int = 0


def run_counts(
    outcomes: Iterable[Outcome], judge_errors: Iterable[object], stats: JudgeStats
) -> RunCounts:
    verdicts = [outcome for outcome in outcomes]
    skipped = sum(1 for o in verdicts if o.verdict.precondition_skipped)
    cached = sum(1 for o in verdicts if o.verdict.cached and not o.verdict.precondition_skipped)
    by_call = [o for o in verdicts if o.by_call is not None]
    upheld = sum(1 for o in by_call if o.passed)
    failed = sum(1 for o in verdicts if not o.passed and o.by_call is None)
    errors = sum(1 for _ in judge_errors)
    escalated = [(o.verdict, o.escalated_from) for o in verdicts if o.escalated_from is not None]
    changed = sum(1 for stood, main in escalated if stood.value != main.value)
    return RunCounts(
        claims=len(verdicts) + errors,
        passed=len(verdicts) - len(by_call) - failed,
        failed=failed,
        judge_errors=errors,
        skipped_by_precondition=skipped,
        from_cache=cached,
        judged_live=len(verdicts) - skipped - cached,
        judge_calls=int(stats.judge_calls),
        tokens=int(stats.prompt_tokens + stats.completion_tokens),
        cost_usd=float(stats.cost_usd),
        judge_seconds=float(stats.judge_seconds),
        by_call=len(by_call),
        by_call_upheld=upheld,
        by_call_not_upheld=len(by_call) - upheld,
        escalated=len(escalated),
        escalated_changed=changed,
    )


def count_parts(counts: RunCounts, outcome: str = "fail") -> list[str]:
    """The counts as the terminal and the HTML page both word them."""
    parts = [
        plural(counts.claims, "claim"),
        f"{counts.passed} {result_word(True, outcome)}",
        f"{counts.failed} {result_word(False, outcome)}",
        plural(counts.judge_errors, "judge error"),
    ]
    if counts.by_call:
        # Claims judged by check_proposition and the like: shown when there are some.
        parts.append(
            f"{counts.by_call} by call ({counts.by_call_upheld} upheld, "
            f"{counts.by_call_not_upheld} not upheld)"
        )
    if counts.escalated:
        # Claims the stronger model decided (--prop-escalate-to): shown when there are some.
        parts.append(f"{counts.escalated} escalated ({counts.escalated_changed} changed)")
    if counts.skipped_by_precondition:
        parts.append(f"{counts.skipped_by_precondition} skipped by precondition")
    parts += [
        f"{counts.from_cache} from cache",
        f"{counts.judged_live} judged live",
        plural(counts.judge_calls, "judge call"),
    ]
    return parts


def summary_line(counts: RunCounts, outcome: str = "fail") -> str:
    """The run's counts; under --prop-outcome=report a claim the judge rejected is "not upheld"."""
    parts = [
        *count_parts(counts, outcome),
        plural(counts.tokens, "token"),
        f"${counts.cost_usd:.4f}",
        f"{counts.judge_seconds:.1f}s judging",
    ]
    return "propositions: " + ", ".join(parts)


# How much of a claim the short summary (-rf, -rA) quotes.
SHORT_CLAIM = 60


def short_failure_text(
    verdict: Verdict,
    threshold: int | None,
    where: str | None = None,
    more: int = 0,
    holds: bool = True,
) -> str:
    """One line for pytest's short summary: the claim first, shortened, then what the judge said."""
    from ..checks import quote_claim

    if verdict.kind == "check":
        said = f"judged {verdict.value}"
    else:
        bar = f"minimum {threshold}" if holds else f"maximum {threshold}"
        said = f"scored {verdict.value}/{MAX_SCORE}, {bar}"
    if not holds:
        said += ", expected not to hold"
    text = f"claim {quote_claim(verdict.claim, SHORT_CLAIM)} {said}"
    if where:
        text += f" at {where}"
    if more:
        text += f" (+{plural(more, 'more claim')} failed)"
    return text


def short_failure(report: Any, error: Any) -> None:
    """Put the claim in the short summary's line: pytest takes it from the crash message,
    which otherwise starts with the exception's whole module path."""
    text = getattr(error, "short", None) or short_failure_text(
        error.verdict, error.threshold, holds=getattr(error, "holds", True)
    )
    with suppress(AttributeError):
        report.longrepr.reprcrash.message = f"PropositionFailed: {text}"


def by_call_short_failure(report: Any, outcomes: Sequence[Outcome]) -> None:
    """A test whose own assert failed: its short summary line (and JUnit's message) names the
    first claim by call that was not upheld. After a bare ``assert False`` (``assert
    check_proposition(...)``) the claim comes first, so a narrow terminal still shows it;
    after any other assert it follows pytest's words."""
    not_upheld = [o for o in outcomes if o.by_call is not None and not o.passed]
    if not not_upheld:
        return
    first = not_upheld[0]
    more = f"; +{len(not_upheld) - 1} more" if len(not_upheld) > 1 else ""
    note = f"{short_failure_text(first.verdict, first.threshold)} (by {first.by_call}{more})"
    with suppress(AttributeError):
        crash = report.longrepr.reprcrash
        head, newline, rest = crash.message.partition("\n")
        if head.removeprefix("AssertionError: ") == "assert False":
            head = f"AssertionError: {note}: assert False"
        else:
            head = f"{head} [not upheld: {note}]"
        crash.message = head + newline + rest


# The judge `--prop-model=local` runs unless --prop-local-model names another file.
STAND_IN_MODEL = "SmolLM2-135M-Instruct"


def judge_description(settings: Settings) -> str:
    """The judge as the header names it; the bundled tiny model says it is a stand-in."""
    if settings.judge_source:
        return f"{settings.model} from {settings.judge_source}"
    if settings.model != "local":
        return settings.model
    if settings.local_model:
        return f"local ({Path(settings.local_model).name})"
    return (
        f"local ({STAND_IN_MODEL}, a tiny stand-in for trying the plugin; pick a real judge "
        "with --prop-model=...)"
    )


def header_line(settings: Settings, cache_place: str | None) -> str:
    """One line: the judge, the cache, and report mode when it is on."""
    cache = (
        settings.cache
        if settings.cache == "off"
        else f"{settings.cache} ({cache_place or 'no folder'})"
    )
    line = f"propositions: model {judge_description(settings)}, cache {cache}"
    if settings.escalate_to:
        line += f", escalating to {settings.escalate_to}"
    if settings.outcome == "report":
        line += ", outcome report (claims not upheld are reported, not failed)"
    return line


def all_cached_line(counts: RunCounts) -> str | None:
    """Said plainly when no verdict of the run needed the judge: the cache at work."""
    if counts.from_cache and not counts.judged_live and not counts.judge_calls:
        return (
            f"propositions: every verdict ({counts.from_cache}) came from the cache; "
            "the judge was not called"
        )
    return None


def verdict_listing(
    outcomes: Iterable[Outcome], mode: str = "fail", reasoning: bool = False
) -> list[str]:
    """Every claim of the run, upheld or not, with the judge's justification, by test id.

    What --prop-outcome=report shows instead of failures (and -vv always, with the reasoning).
    """
    ordered = sorted(outcomes, key=lambda outcome: outcome.test_id or "")
    lines: list[str] = []
    for outcome in ordered:
        verdict = outcome.verdict
        label = claim_result(outcome.passed, outcome.by_call, mode).upper()
        lines.append(f"{label:<10}  {outcome.test_id or '-'}")
        lines.append(f"    claim:   {terminal_text(verdict.claim)}")
        if verdict.precondition_skipped:
            value = "not judged, the precondition was false"
        else:
            if verdict.kind == "check" and outcome.holds and outcome.by_call is None:
                value = str(verdict.value)
            else:
                value = describe_value(verdict, outcome.threshold, outcome.holds, outcome.by_call)
            value += " (cached)" if verdict.cached else " (live)"
            value += f", confidence {confidence_text(verdict.confidence)}"
        lines.append(f"    verdict: {value}")
        main = outcome.escalated_from
        if main is not None:
            lines.append(
                f"    escalated: {verdict.model} decided ({cost_text(verdict)}); the main judge "
                f"{main.model} said {describe_value(main, outcome.threshold, outcome.holds)} "
                f"({'cached' if main.cached else 'live'}, {cost_text(main)})"
            )
        texts = [("why:", verdict.justification)]
        if reasoning and not verdict.precondition_skipped:
            texts.append(("reasoning:", verdict.reasoning))
        for name, text in texts:
            words = " ".join(terminal_text(text).split()) or "(none given)"
            lines.extend(
                textwrap.wrap(
                    words,
                    width=96,
                    initial_indent=f"    {name} ".ljust(13),
                    subsequent_indent=" " * 13,
                )
            )
    return lines


def dry_run_line(misses: int) -> str:
    return f"propositions: dry run, {plural(misses, 'claim')} would be judged (no cached verdict)"


# -- the -v table ---------------------------------------------------------------------------------

TABLE_ROWS = 10
TABLE_WIDTH = 100
_TEST_COLUMN_MAX = 50
_CLAIM_COLUMN_MIN = 20


def _clip(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: max(width - 3, 0)] + "..."


def lowest_scores_table(
    outcomes: Iterable[Outcome], rows: int = TABLE_ROWS, width: int = TABLE_WIDTH
) -> list[str]:
    """The lowest score verdicts of the run, lowest first, one line each; empty without scores.

    Ties are ordered by test id and claim, so the table does not depend on xdist's scheduling.
    """
    scores = sorted(
        (outcome for outcome in outcomes if outcome.verdict.kind == "score"),
        key=lambda outcome: (
            int(outcome.verdict.value),
            outcome.test_id or "",
            outcome.verdict.claim,
        ),
    )
    if not scores:
        return []
    shown = scores[:rows]
    test_width = min(max(len(outcome.test_id or "-") for outcome in shown), _TEST_COLUMN_MAX)
    test_width = max(test_width, len("test"))
    results = [_table_result(outcome) for outcome in shown]
    result_width = max(len("result"), *(len(result) for result in results))
    lines = [
        f"propositions: lowest scores ({len(shown)} of {len(scores)})",
        f"{'score':>5}  {'min':>3}  {'result':<{result_width}}  {'test':<{test_width}}  claim",
    ]
    for outcome, result in zip(shown, results, strict=True):
        score = f"{outcome.verdict.value}/{MAX_SCORE}"
        bar = "-" if outcome.threshold is None else str(outcome.threshold)
        test = outcome.test_id or "-"
        if len(test) > _TEST_COLUMN_MAX:
            # The test's own name is at the end of its id; keep that part.
            test = "..." + test[-(_TEST_COLUMN_MAX - 3) :]
        prefix = f"{score:>5}  {bar:>3}  {result:<{result_width}}  {test:<{test_width}}  "
        room = max(width - len(prefix), _CLAIM_COLUMN_MIN)
        main = outcome.escalated_from
        # An escalated score says so first: the main judge's score did not decide.
        note = "" if main is None else f"[escalated from {main.value}] "
        lines.append(prefix + _clip(note + terminal_text(outcome.verdict.claim), room))
    return lines


def _table_result(outcome: Outcome) -> str:
    if outcome.by_call is not None:
        return "upheld" if outcome.passed else "not upheld"
    return "passed" if outcome.passed else "FAILED"


# -- JUnit XML --------------------------------------------------------------------------------------


def _flag(value: bool) -> str:
    return "true" if value else "false"


def junit_properties(
    outcomes: Iterable[Outcome],
    start: int = 1,
    mode: str = "fail",
    calibrations: Calibrations | None = None,
) -> list[tuple[str, str]]:
    """``proposition[i].<field>`` properties, i counting a test's claims from 1 in judging order.

    Fields: claim, kind, value, threshold (score claims), passed, result (passed/failed, or
    upheld/not upheld under --prop-outcome=report), confidence ("not given" when the judge gave
    none), model, cached, justification, and where a soft claim was made. A claim judged by a
    call (``check_proposition``...) has ``by_call`` (the call) and ``upheld`` instead of
    ``passed``, its result upheld/not upheld, and where it was called. Booleans are
    ``true``/``false``. Where the deciding judge was calibrated: judge_calibration (the text),
    judge_false_pass_upper and judge_false_fail_upper (fractions; "" when not measured).
    """
    properties: list[tuple[str, str]] = []
    for index, outcome in enumerate(outcomes, start):
        verdict = outcome.verdict
        value = _flag(verdict.value) if isinstance(verdict.value, bool) else str(verdict.value)
        fields: list[tuple[str, str]] = [
            ("claim", verdict.claim),
            ("kind", verdict.kind),
            ("value", value),
        ]
        if outcome.threshold is not None:
            fields.append(("threshold", str(outcome.threshold)))
        if not outcome.holds:
            fields.append(("holds", "false"))
        if outcome.by_call is not None:
            fields.append(("by_call", outcome.by_call))
            fields.append(("upheld", _flag(outcome.passed)))
        else:
            fields.append(("passed", _flag(outcome.passed)))
        fields.append(("result", claim_result(outcome.passed, outcome.by_call, mode)))
        fields.append(
            ("confidence", confidence_text(verdict.confidence, verdict.precondition_skipped))
        )
        fields += [
            ("model", verdict.model),
            ("cached", _flag(verdict.cached)),
            ("justification", verdict.justification),
        ]
        if outcome.where:
            fields.append(("claimed_at", outcome.where))
        if outcome.escalated_from is not None:
            fields += escalation_properties(verdict, outcome.escalated_from)
        if outcome.runs is not None:
            fields += runs_properties(outcome.runs)
        calibration = claim_calibration(outcome, calibrations)
        if calibration is not None:
            fields += [
                ("judge_calibration", calibration_text(calibration)),
                ("judge_false_pass_upper", _bound(calibration["false_pass_upper"])),
                ("judge_false_fail_upper", _bound(calibration["false_fail_upper"])),
            ]
        properties += [(f"proposition[{index}].{name}", text) for name, text in fields]
    return properties


def _cost_value(verdict: Verdict) -> str:
    return "not known" if verdict.cost_usd is None else f"{verdict.cost_usd:.6g}"


def escalation_properties(verdict: Verdict, main: Verdict) -> list[tuple[str, str]]:
    """An escalated claim's properties: the standing verdict's cost, then the main judge's
    verdict (``escalated_from.*``), which did not decide."""
    value = _flag(main.value) if isinstance(main.value, bool) else str(main.value)
    return [
        ("escalated", "true"),
        ("cost_usd", _cost_value(verdict)),
        ("escalated_from.model", main.model),
        ("escalated_from.value", value),
        ("escalated_from.cached", _flag(main.cached)),
        ("escalated_from.cost_usd", _cost_value(main)),
        ("escalated_from.justification", main.justification),
    ]


def _bound(value: float | None) -> str:
    return "" if value is None else f"{value:g}"


def junit_run_properties(counts: RunCounts, mode: str) -> list[tuple[str, str]]:
    """The run's counts as testsuite properties (``propositions.<count>``), as the terminal
    and the JSON report give them, and the outcome mode."""
    properties = [("propositions.outcome", mode)]
    for name in (
        "claims",
        "passed",
        "failed",
        "judge_errors",
        "skipped_by_precondition",
        "from_cache",
        "judged_live",
        "judge_calls",
        "by_call",
        "by_call_upheld",
        "by_call_not_upheld",
        "escalated",
        "escalated_changed",
    ):
        properties.append((f"propositions.{name}", str(getattr(counts, name))))
    return properties


def add_junit_run_properties(config: Any, runtime: Runtime) -> None:
    """The run's counts as junitxml's testsuite properties, when a JUnit file is written."""
    try:
        from _pytest.junitxml import xml_key
    except ImportError:
        return
    xml = config.stash.get(xml_key, None)
    if xml is None:
        return
    counts = run_counts(runtime.record.outcomes, runtime.record.judge_errors, runtime.stats())
    for name, value in junit_run_properties(counts, runtime.settings.outcome):
        xml.add_global_property(name, value)


def runs_properties(runs: Mapping[str, Any]) -> list[tuple[str, str]]:
    """A claim over runs' figures as JUnit properties (``runs.made``, ``runs.rate``...)."""
    estimate = "mean" if runs["rule"] == "mean" else "rate"
    if runs["rule"] == "better_than" and runs["kind"] == "score":
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


def decision_about(runs: Mapping[str, Any]) -> str:
    """Whose verdicts a claim over runs was decided on: the referee's, or the main judge's."""
    from ..over_runs.many_runs import decision_about as about

    return about(runs)


def junit_failure_to_error(config: Any, report: Any) -> bool:
    """Turn the <failure> junitxml just recorded for this call report into an <error>.

    junitxml offers no hook for it, so this reaches into its writer; if a pytest version lays
    it out differently, the test stays a <failure> (a test of the suite watches for that).
    """
    try:
        from _pytest.junitxml import xml_key

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
    except (ImportError, AttributeError, KeyError, TypeError):
        pass
    return False


# -- records: the JSON report, and what xdist workers send the controller -------------------------


def outcome_record(outcome: Outcome) -> dict[str, Any]:
    """An outcome as plain JSON data (execnet and json both carry it)."""
    record = {
        "test_id": outcome.test_id,
        "threshold": outcome.threshold,
        "holds": outcome.holds,
        "passed": outcome.passed,
        "where": outcome.where,
        "verdict": outcome.verdict.as_dict(),
    }
    if outcome.runs is not None:
        record["runs"] = outcome.runs
    if outcome.escalated_from is not None:
        # The main judge's verdict; "verdict" is the stronger model's, which decided.
        record["escalated_from"] = outcome.escalated_from.as_dict()
    if outcome.by_call is not None:
        record["by_call"] = outcome.by_call
    return record


def calibrated_record(outcome: Outcome, calibrations: Calibrations | None) -> dict[str, Any]:
    """An outcome's record, naming (``judge_calibration``) the calibrated judge that decided it."""
    record = outcome_record(outcome)
    if claim_calibration(outcome, calibrations) is not None:
        record["judge_calibration"] = decision_judge(outcome)
    return record


def outcome_from_record(record: Mapping[str, Any]) -> Outcome:
    from ..record import Outcome
    from ..verdict import Verdict

    return Outcome(
        test_id=record["test_id"],
        verdict=Verdict.from_dict(record["verdict"]),
        threshold=record["threshold"],
        passed=bool(record["passed"]),
        holds=record.get("holds", True) is not False,
        where=record.get("where"),
        runs=record.get("runs"),
        escalated_from=(
            Verdict.from_dict(record["escalated_from"]) if record.get("escalated_from") else None
        ),
        by_call=record.get("by_call"),
    )


def stats_record(stats: JudgeStats) -> dict[str, float]:
    from ..record import stat_names

    return {name: getattr(stats, name) for name in stat_names()}


def record_order(record: Mapping[str, Any]) -> tuple[str, str, str, str]:
    verdict = record["verdict"]
    # The whole record breaks ties, so identical claims in one test sort the same every run.
    return (
        record["test_id"] or "",
        verdict["claim"],
        verdict["kind"],
        json.dumps(record, sort_keys=True),
    )


def json_report(
    settings: Settings,
    stats: JudgeStats,
    outcomes: Iterable[Outcome],
    judge_errors: Iterable[tuple[str | None, str]],
    calibrations: Calibrations | None = None,
) -> dict[str, Any]:
    """Every verdict of the run with its test id, sorted by test id then claim, and the counts.

    Where the judge deciding a claim was calibrated, its record has ``judge_calibration`` (that
    judge's identity, a key of the report's ``calibrations``: measured rates, counts, bounds).

    The summary's claim counts are the terminal's (``RunCounts``); ``verdicts``, ``cache_hits``
    and ``judge_calls`` count judge requests. Under --prop-outcome=report each record's
    ``result`` says "upheld" or "not upheld", as it always does for a claim judged by a call
    (its record names the call in ``by_call``).
    """
    from .._version import __version__

    outcomes = list(outcomes)
    errors = sorted(judge_errors, key=lambda error: (error[0] or "", error[1]))
    counts = run_counts(outcomes, errors, stats)
    mode = settings.outcome
    verdicts = sorted(
        (
            {
                **calibrated_record(outcome, calibrations),
                "result": claim_result(outcome.passed, outcome.by_call, mode),
            }
            for outcome in outcomes
        ),
        key=record_order,
    )
    return {
        "plugin_version": __version__,
        "model": settings.model,
        "cache_mode": settings.cache,
        "outcome": mode,
        "summary": {
            "claims": counts.claims,
            "passed": counts.passed,
            "failed": counts.failed,
            "judge_errors": counts.judge_errors,
            "skipped_by_precondition": counts.skipped_by_precondition,
            "from_cache": counts.from_cache,
            "judged_live": counts.judged_live,
            "by_call": counts.by_call,
            "by_call_upheld": counts.by_call_upheld,
            "by_call_not_upheld": counts.by_call_not_upheld,
            "escalated": counts.escalated,
            "escalated_changed": counts.escalated_changed,
            "verdicts": stats.verdicts,
            "cache_hits": stats.cache_hits,
            "judge_calls": stats.judge_calls,
            "prompt_tokens": stats.prompt_tokens,
            "completion_tokens": stats.completion_tokens,
            "cost_usd": round(stats.cost_usd, 6),
            "judge_seconds": round(stats.judge_seconds, 3),
            "dry_run_misses": stats.dry_run_misses,
        },
        "verdicts": verdicts,
        "judge_errors": [{"test_id": test_id, "error": error} for test_id, error in errors],
        "calibrations": {
            judge: dict(view) for judge, view in run_calibrations(outcomes, calibrations).items()
        },
    }


def report_path(configured: str, base: Path) -> Path:
    """Where ``--prop-report`` writes, relative to ``base``; ValueError if that is a folder."""
    path = base / Path(configured).expanduser()
    if path.is_dir():
        raise ValueError(
            f"--prop-report: {configured!r} is a directory; give a file name, e.g. "
            f"{str(Path(configured) / 'propositions.json')!r}"
        )
    return path


def write_json_report(path: Path, payload: Mapping[str, Any]) -> None:
    """Write the report whole or not at all: a temporary file beside it, then a rename."""
    write_text_atomically(path, json.dumps(payload, indent=2, ensure_ascii=False) + "\n")


def write_text_atomically(path: Path, text: str) -> None:
    """A report file appears whole or not at all: a temporary file beside it, then a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex}.tmp")
    try:
        # os.open with 0o666 lets the umask decide the mode, as for any file the user writes.
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(temporary, path)
    except BaseException:
        with suppress(OSError):
            temporary.unlink()
        raise


def save_json_report(runtime: Runtime, base: Path) -> str | None:
    """Write the run's ``--prop-report``; a message saying what went wrong, or None."""
    configured = runtime.settings.report
    if not configured:
        return None
    try:
        path = report_path(configured, base)
        payload = json_report(
            runtime.settings,
            runtime.stats(),
            runtime.record.outcomes,
            runtime.record.judge_errors,
            runtime.record.calibrations,
        )
        write_json_report(path, payload)
    except ValueError as error:
        return str(error)
    except OSError as error:
        return f"--prop-report: cannot write {configured!r}: {error}"
    return None
