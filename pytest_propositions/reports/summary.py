"""Verdicts in the terminal's words: the failure section, the short summary, the verdict
listing, the -v table of lowest scores, a judge's measured error, and the failure of a test
that caught a judge error. The HTML page and JUnit use its words for a value, a provenance, a
cost and a calibration.

The run's counts and one-line texts are in ``counts``, JUnit properties in ``junit``, the JSON
report and xdist's records in ``json_report``.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Mapping, Sequence
from contextlib import suppress
from typing import TYPE_CHECKING, Any

from _pytest._code.code import ReprEntryNative, ReprExceptionInfo, ReprFileLocation, ReprTraceback

from ..checks import plural, quote_claim, terminal_text
from ..scale import MAX_SCORE
from ..verdict import CHECK, SCORE
from .counts import Calibrations, confidence_text, outcome_result
from .runs_text import figures_line, runs_text
from .view import ClaimView, by_test_in_source_order, claim_view, in_source_order

if TYPE_CHECKING:
    from ..record import FiledJudgeError, Outcome
    from ..verdict import Verdict

SECTION_TITLE = "proposition"


def _indent(text: str) -> str:
    """A judge's text under its heading: one line, escaped (``terminal_text``), indented."""
    return textwrap.indent(terminal_text(text.strip()) or "(none given)", "    ")


def provenance(verdict: Verdict, cached: str = "from the cache") -> str:
    """Where a verdict came from; the HTML page says "cached" where the terminal says more."""
    if verdict.precondition_skipped:
        return "not judged (precondition false)"
    if verdict.cached:
        return f"{cached}, recorded {verdict.recorded_at or 'at an unknown time'}"
    return f"judged live in {verdict.judge_seconds:.2f}s"


def describe_value(
    verdict: Verdict,
    threshold: int | None,
    holds: bool = True,
    by_call: str | None = None,
    *,
    page: bool = False,
) -> str:
    """A verdict's value and what was expected of it; ``page``: the HTML page's words."""
    if by_call is not None:
        return call_value_text(verdict.kind, verdict.value, threshold, by_call)
    if verdict.kind == CHECK:
        return f"{verdict.value} (expected {'True' if holds else 'the claim not to hold'})"
    if not page:
        bar = (
            f"minimum {threshold}"
            if holds
            else f"maximum {threshold}: expected the claim not to hold"
        )
        return f"{verdict.value}/{MAX_SCORE} ({bar})"
    if threshold is None:
        return f"{verdict.value}/{MAX_SCORE}"
    bar = f"minimum {threshold}" if holds else f"maximum {threshold}, expected not to hold"
    return f"{verdict.value}/{MAX_SCORE}, {bar}"


def call_value_text(kind: str, value: object, threshold: int | None, by_call: str) -> str:
    """The verdict of a claim judged by a call: what it was, by which call, and that no
    expectation was asserted (the test's own code decides what it means)."""
    if kind == CHECK:
        return f"{value} (by {by_call}, not asserted)"
    return f"{value}/{MAX_SCORE} (by {by_call}, not asserted; upheld at {threshold} or more)"


# -- the judge's measured error (calibration.py's view of a calibration, plain data) -----------


def _percent(value: float) -> str:
    return f"{value * 100:.1f}%"


def _error_side(view: Mapping[str, Any], side: str, bounded: bool) -> str:
    """One error rate: "false pass ≤ 6.9%" (bounded) or "false pass 2/88 = 2.3% (≤ 6.9%)"."""
    rate, upper = view[f"{side}_rate"], view[f"{side}_upper"]
    passes = side == "false_pass"
    errors, trials, what = (
        ("false_passes", "negatives", "false") if passes else ("false_fails", "positives", "true")
    )
    name = side.replace("_", " ")
    if view[trials] == 0:
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


def outcome_text(
    outcome: Outcome,
    mode: str = "fail",
    reasoning: bool = False,
    calibrations: Calibrations | None = None,
) -> str:
    return claim_text(claim_view(outcome, mode, calibrations), reasoning)


def claim_text(view: ClaimView, reasoning: bool = False) -> str:
    """A claim in the failure section: its result and value, each note of its view, then the
    judge's words (a claim over runs: its figures)."""
    calibration = view.calibration
    if view.runs is not None:
        text = runs_text(view.runs)
        if calibration is not None:
            text += f"\n  judge's measured error: {calibration_text(calibration)}"
        return text
    verdict = view.verdict
    value = describe_value(verdict, view.threshold, view.holds, view.by_call)
    lines = [
        f"{str(view.result).upper()}: {terminal_text(verdict.claim)}",
        f"  {'verdict' if verdict.kind == CHECK else 'score'}: {value}",
    ]
    lines += [f"  {how.label}: {how.text(value)}" for how, value in view.notes()]
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
    lines += escalation_lines(view)
    return "\n".join(lines)


def cost(verdict: Verdict) -> str:
    """What judging a verdict cost; a cached one says it was paid when it was recorded."""
    if verdict.cost_usd is None:
        return "not known"
    return f"${verdict.cost_usd:.6f}" + (" (when recorded)" if verdict.cached else "")


def cost_text(verdict: Verdict) -> str:
    return f"cost {cost(verdict)}"


def escalation_lines(view: ClaimView) -> list[str]:
    """An escalated claim: the stronger model's verdict stood; the main judge's, and each cost."""
    main = view.escalated_from
    if main is None:
        return []
    verdict = view.verdict
    said = describe_value(main, view.threshold, view.holds)
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
    verbose: bool = True,
) -> str:
    """Every claim of a failed test, the test's own before those libraries made, failing ones
    first, each group in the order of the claims' lines (``in_source_order``), each with its
    justification (and the judge's reasoning under -vv), and the judge's measured error where it
    was calibrated. Not ``verbose`` (no -v), a claim that passed takes one line: a test of 200
    soft claims shows its failing ones, not 1,400 lines of passing ones."""
    ordered = sorted(
        enumerate(in_source_order(list(outcomes))),
        key=lambda pair: (pair[1].made_by is not None, pair[1].passed, pair[0]),
    )
    full = [outcome for _, outcome in ordered if verbose or not outcome.passed]
    brief = [outcome for _, outcome in ordered if not verbose and outcome.passed]
    texts = [outcome_text(outcome, mode, reasoning, calibrations) for outcome in full]
    if brief:
        lines = [passed_line(claim_view(outcome, mode)) for outcome in brief]
        lines.append(
            f"({plural(len(brief), 'claim')} passed, one line each: -v shows them in full)"
        )
        texts.append("\n".join(lines))
    return "\n\n".join(texts)


def passed_line(view: ClaimView) -> str:
    """A claim that passed (or was upheld), in one line: its word, the claim, its value, its
    line and the notes the verdict listing shows (who made it, when not the test)."""
    verdict = view.verdict
    if view.runs is not None:
        value = f"over runs: {figures_line(view.runs)}"
    elif verdict.precondition_skipped:
        value = "not judged, the precondition was false"
    elif verdict.kind == CHECK and view.holds and view.by_call is None:
        value = str(verdict.value)
    else:
        value = describe_value(verdict, view.threshold, view.holds, view.by_call, page=True)
    where = f"; {view.where}" if view.where else ""
    notes = "".join(f"; {how.label}: {how.text(text)}" for how, text in view.notes() if how.listed)
    return f"{str(view.result).upper()}: {terminal_text(verdict.claim)} ({value}{where}{notes})"


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
    if verdict.kind == CHECK:
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


def caught_judge_error_repr(item: Any, errors: Sequence[str]) -> ReprExceptionInfo:
    """The failure of a test phase that passed though its code caught a judge error (each of
    ``errors`` a "Class: message" line): never a pass. The crash line (pytest's short summary,
    JUnit's message) names the first error; the text, each one."""
    more = f" (+{plural(len(errors) - 1, 'more judge error')})" if len(errors) > 1 else ""
    message = f"caught by the test{more}: {errors[0]}"
    lines = [
        f"The test's own code caught {plural(len(errors), 'judge error')} (a try/except, or a "
        "library that logs it and carries on).\n",
        "A judge error is never a pass: the test is reported as a judge error.\n",
        "\n",
        *(f"{error}\n" for error in errors),
    ]
    path, line, _ = item.location
    return ReprExceptionInfo(
        reprtraceback=ReprTraceback([ReprEntryNative(lines)], None, "native"),
        reprcrash=ReprFileLocation(path, (line or 0) + 1, message),
    )


def with_judge_errors_noted(report: Any, errors: int) -> None:
    """A phase that failed for another reason and had judge errors too: its crash line (pytest's
    short summary, JUnit's message) says so after the failure's own words."""
    with suppress(AttributeError):
        crash = report.longrepr.reprcrash
        head, newline, rest = crash.message.partition("\n")
        crash.message = f"{head} (+{plural(errors, 'judge error')}){newline}{rest}"


def justification_line(verdict: Verdict) -> str:
    """The judge's justification as the crash message's second line: JUnit's ``<failure
    message>`` is the whole crash message, and many CI viewers show nothing else (pytest's short
    summary shows the first line only, except on CI and under -vv)."""
    words = terminal_text(" ".join(verdict.justification.split())) or "(none given)"
    return f"judge's justification: {words}"


def short_failure(report: Any, error: Any) -> None:
    """Put the claim in the short summary's line: pytest takes it from the crash message,
    which otherwise starts with the exception's whole module path; the judge's justification
    follows on a line of its own."""
    text = getattr(error, "short", None) or short_failure_text(
        error.verdict, error.threshold, holds=getattr(error, "holds", True)
    )
    with suppress(AttributeError):
        report.longrepr.reprcrash.message = (
            f"PropositionFailed: {text}\n{justification_line(error.verdict)}"
        )


def by_call_short_failure(report: Any, outcomes: Sequence[Outcome]) -> None:
    """A test whose own assert failed: its short summary line (and JUnit's message) names the
    first claim by call that was not upheld, the judge's justification on the next line. After
    a bare ``assert False`` (``assert check_proposition(...)``) the claim comes first, so a
    narrow terminal still shows it; after any other assert it follows pytest's words. A claim
    a library's code made (an Intervention's precondition) is not the test's: it is never
    named here."""
    not_upheld = [
        o for o in outcomes if o.by_call is not None and not o.passed and o.made_by is None
    ]
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
        crash.message = f"{head}\n{justification_line(first.verdict)}{newline}{rest}"


def verdict_listing(
    outcomes: Iterable[Outcome],
    mode: str = "fail",
    reasoning: bool = False,
    judge_errors: Iterable[FiledJudgeError] = (),
) -> list[str]:
    """Every claim of the run with the judge's justification, by test id, each test's claims in
    the order of their lines and then its judge errors: each under the word the summary's counts
    use (passed, failed, inconclusive, by call upheld or not upheld, judge error), so the
    listing and the counts agree.

    What --prop-outcome=report shows instead of failures (and -vv always, with the reasoning).
    """
    errors: dict[str, list[str]] = {}
    for error in judge_errors:
        errors.setdefault(error.test_id or "", []).append(error.message)
    lines: list[str] = []
    ordered = by_test_in_source_order(outcomes)
    for index, outcome in enumerate(ordered):
        lines += _listed(claim_view(outcome, mode), reasoning)
        test = outcome.test_id or ""
        if index + 1 == len(ordered) or (ordered[index + 1].test_id or "") != test:
            lines += _listed_errors(test, errors.pop(test, []))
    for test in sorted(errors):
        lines += _listed_errors(test, errors[test])
    return lines


def _listed_errors(test: str, messages: Sequence[str]) -> list[str]:
    lines: list[str] = []
    for message in messages:
        lines.append(f"{'JUDGE ERROR':<10}  {test or '-'}")
        lines.extend(
            textwrap.wrap(
                " ".join(terminal_text(message).split()),
                width=96,
                initial_indent="    error:   ",
                subsequent_indent=" " * 13,
            )
        )
    return lines


def _listed(view: ClaimView, reasoning: bool) -> list[str]:
    """One claim of the verdict listing: its word and test, the claim, the verdict, the why."""
    verdict = view.verdict
    label = str(view.result).upper()
    lines = [f"{label:<10}  {view.test_id or '-'}", f"    claim:   {terminal_text(verdict.claim)}"]
    if view.runs is not None:
        runs = view.runs
        value = f"over runs: {runs['rule_text']}; {figures_line(runs)}"
    elif verdict.precondition_skipped:
        value = "not judged, the precondition was false"
    else:
        if verdict.kind == CHECK and view.holds and view.by_call is None:
            value = str(verdict.value)
        else:
            value = describe_value(verdict, view.threshold, view.holds, view.by_call)
        value += " (cached)" if verdict.cached else " (live)"
        value += f", confidence {confidence_text(verdict.confidence)}"
    lines.append(f"    verdict: {value}")
    lines += [f"    {how.label}: {how.text(value)}" for how, value in view.notes() if how.listed]
    main = view.escalated_from
    if main is not None:
        lines.append(
            f"    escalated: {verdict.model} decided ({cost_text(verdict)}); the main judge "
            f"{main.model} said {describe_value(main, view.threshold, view.holds)} "
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
        (outcome for outcome in outcomes if outcome.verdict.kind == SCORE),
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
    word = outcome_result(outcome)
    return "FAILED" if word == "failed" else word
