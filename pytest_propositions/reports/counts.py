"""The run's counts and the lines every run with claims prints: the header's judge line, the
summary's counts, the all-from-cache and dry-run lines, and which calibrated judges decided.

Kept apart from the longer reports (``summary``, ``junit``, ``json_report``) so that a run whose
claims all pass loads only this at its end.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..checks import plural
from ..settings import cache_mode

if TYPE_CHECKING:
    from ..judging.judge import JudgeStats
    from ..record import Outcome
    from ..settings import Settings


# A claim's result words: an asserted claim's, then a claim by call's (which fails nothing).
PASSED, FAILED, INCONCLUSIVE = "passed", "failed", "inconclusive"
UPHELD, NOT_UPHELD = "upheld", "not upheld"


def result_word(passed: bool, outcome: str = "fail") -> str:
    """An asserted claim's result as every report words it: passed or failed, in either outcome
    mode (--prop-outcome=report changes what a failed claim does to its test, not what the claim
    is); ``outcome`` is kept for callers that pass it."""
    return PASSED if passed else FAILED


#: What the reports ask for a judge's calibration: its error view by judge identity, or None.
Calibrations = Callable[[str], Mapping[str, Any] | None]


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
    upheld or not upheld; an asserted claim passed or failed, whatever the outcome mode."""
    if by_call is not None:
        return UPHELD if passed else NOT_UPHELD
    return result_word(passed)


def outcome_result(outcome: Outcome) -> str:
    """The result word of a claim as the listing, the counts and every report give it: a claim
    over runs that neither passed nor failed within its runs is inconclusive (it fails its test
    all the same), not failed."""
    runs = outcome.runs
    if runs is not None and outcome.by_call is None and runs.get("decision") == "inconclusive":
        return INCONCLUSIVE
    return claim_result(outcome.passed, outcome.by_call)


@dataclass(frozen=True)
class RunCounts:
    """The run's claims, counted once for every report (terminal, JSON, HTML, JUnit).

    ``claims`` is every claim the run tried to judge: ``passed + failed + inconclusive +
    by_call + judge_errors``, where ``passed``, ``failed`` and ``inconclusive`` (a claim over
    runs that decided neither way) count the claims asserted (the fixtures', the markers'), each
    under the word the verdict listing gives it, and ``by_call`` those judged by calls of the
    reference library's API in a test (``check_proposition``...), ``by_call_upheld +
    by_call_not_upheld`` of them, which fail nothing. A claim with a verdict got it in one of
    three ways: ``skipped_by_precondition + from_cache + judged_live == passed + failed +
    inconclusive + by_call`` (a claim whose precondition was false is counted under the result
    it is listed with, and apart as skipped). ``judge_error_tests`` counts the tests the judge
    errors came in: what pytest's last line counts as judge errors (a test with any judge error
    is one, whatever else failed in it).
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
    inconclusive: int = 0
    judge_error_tests: int = 0


def run_counts(
    outcomes: Iterable[Outcome], judge_errors: Iterable[object], stats: JudgeStats
) -> RunCounts:
    verdicts = list(outcomes)
    skipped = sum(1 for o in verdicts if o.verdict.precondition_skipped)
    cached = sum(1 for o in verdicts if o.verdict.cached and not o.verdict.precondition_skipped)
    by_call = [o for o in verdicts if o.by_call is not None]
    upheld = sum(1 for o in by_call if o.passed)
    results = Counter(outcome_result(o) for o in verdicts if o.by_call is None)
    failed, inconclusive = results[FAILED], results[INCONCLUSIVE]
    errors = list(judge_errors)
    tests = {error[0] if isinstance(error, tuple) else None for error in errors}
    escalated = [(o.verdict, o.escalated_from) for o in verdicts if o.escalated_from is not None]
    changed = sum(1 for stood, main in escalated if stood.value != main.value)
    return RunCounts(
        claims=len(verdicts) + len(errors),
        passed=results[PASSED],
        failed=failed,
        judge_errors=len(errors),
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
        inconclusive=inconclusive,
        judge_error_tests=len(tests),
    )


def claim_counts(counts: RunCounts) -> dict[str, int]:
    """The counts of claims and of judge calls, in order: JUnit's properties, the JSON summary."""
    skip = ("tokens", "cost_usd", "judge_seconds")
    return {f.name: getattr(counts, f.name) for f in fields(counts) if f.name not in skip}


def count_parts(counts: RunCounts, outcome: str = "fail") -> list[str]:
    """The counts as the terminal and the HTML page both word them: each claim under the word
    the verdict listing gives it (``outcome_result``), in either outcome mode; the judge errors
    with the tests they came in when that differs (pytest's last line counts those tests)."""
    errors = plural(counts.judge_errors, "judge error")
    if 0 < counts.judge_error_tests != counts.judge_errors:
        errors += f" in {plural(counts.judge_error_tests, 'test')}"
    parts = [
        plural(counts.claims, "claim"),
        f"{counts.passed} {PASSED}",
        f"{counts.failed} {FAILED}",
    ]
    if counts.inconclusive:
        # Claims over runs that decided neither way: shown when there are some.
        parts.append(f"{counts.inconclusive} {INCONCLUSIVE}")
    parts.append(errors)
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
    """The run's counts, worded as the verdict listing words each claim."""
    parts = [
        *count_parts(counts, outcome),
        plural(counts.tokens, "token"),
        f"${counts.cost_usd:.4f}",
        f"{counts.judge_seconds:.1f}s judging",
    ]
    return "propositions: " + ", ".join(parts)


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
        if not cache_mode(settings.cache).uses_cache
        else f"{settings.cache} ({cache_place or 'no folder'})"
    )
    line = f"propositions: model {judge_description(settings)}, cache {cache}"
    if settings.escalate_to:
        line += f", escalating to {settings.escalate_to}"
    if settings.outcome == "report":
        line += ", outcome report (a failed claim is reported and does not fail its test)"
    return line


def all_cached_line(counts: RunCounts) -> str | None:
    """Said plainly when no verdict of the run needed the judge: the cache at work."""
    if counts.from_cache and not counts.judged_live and not counts.judge_calls:
        return (
            f"propositions: every verdict ({counts.from_cache}) came from the cache; "
            "the judge was not called"
        )
    return None


def after_its_test_line(outcomes: Iterable[Outcome]) -> str | None:
    """Claims judged after the test that made them ended (a thread it left running): each is
    filed under that test, whose report was already made, so the summary names them."""
    late = [outcome for outcome in outcomes if outcome.after_its_test]
    if not late:
        return None
    tests = sorted({outcome.test_id or "" for outcome in late})
    verb, whose = ("was", "its") if len(late) == 1 else ("were", "their")
    test = "test" if len(tests) == 1 else "tests"
    return (
        f"propositions: {plural(len(late), 'claim')} by call {verb} judged after {whose} {test} "
        f"ended (from a thread left running): {', '.join(tests)}"
    )


def caught_judge_errors_line(caught: Mapping[str, int]) -> str | None:
    """Judge errors the code under test caught (a try/except, a library that logs and carries
    on): never a pass, so they fail the run; the tests that caught them, by node id."""
    if not caught:
        return None
    count = sum(caught.values())
    verb = "was" if count == 1 else "were"
    return (
        f"propositions: {plural(count, 'judge error')} {verb} caught by the code under test, "
        f"which fails the run (a judge error is never a pass): {', '.join(sorted(caught))}"
    )


def unshown_judge_errors_line(tests: Sequence[str]) -> str | None:
    """Judge errors no report of their test shows (judged after it ended, from a thread left
    running): they fail the run all the same; their tests, by node id."""
    if not tests:
        return None
    names = ", ".join(test or "(outside a test)" for test in tests)
    what = "a judge error came after its test's report was made"
    if len(tests) > 1:
        what = "judge errors came after their tests' reports were made"
    return (
        f"propositions: {what} (from a thread left running), which fails the run (a judge error "
        f"is never a pass): {names}"
    )


def dry_run_line(
    misses: int, prompt_tokens: int = 0, cost_usd: float = 0.0, unpriced: int = 0
) -> str:
    """What a dry run would judge: at least ``misses`` claims (a test stops at its first
    uncached hard claim, so the claims after it were never looked up), their estimated prompt
    tokens and cost (``unpriced``: claims whose model has no price, left out of the cost)."""
    if not misses:
        return "propositions: dry run, no claim would be judged (every verdict is cached)"
    if unpriced >= misses:
        cost = "cost not known (no price for the model in litellm's table)"
    else:
        cost = f"about ${cost_usd:.4f}"
        if unpriced:
            cost += f" not counting {plural(unpriced, 'claim')} to a model with no known price"
    return (
        f"propositions: dry run, at least {plural(misses, 'claim')} would be judged (no cached "
        f"verdict): about {prompt_tokens:,} prompt tokens, {cost} (estimated). At least: a test "
        "stops at its first uncached hard claim, so the claims after it are not counted"
    )


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
