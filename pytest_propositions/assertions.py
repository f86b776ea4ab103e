"""Claims as test assertions: the claim, its options and its expectation checked where they are
given, judged, compared, and failed with the verdict; and the fixtures' bodies."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal

import pytest

from .checks import check_claim
from .claims.claim_text import render_claim
from .claims.expectation import EXPECTATION_NAMES, Expectation, check_threshold
from .claims.options import ClaimOptions, with_own_options
from .claims.proposition import judge, target_list
from .claims.targets import as_target_list
from .errors import DryRunSkip, JudgeError, PropositionFailed
from .over_runs.keywords import is_runs
from .runtime import current
from .verdict import KINDS

if TYPE_CHECKING:
    from .over_runs.result import RunsResult
    from .over_runs.rule import Rule
    from .runtime import Runtime
    from .verdict import Verdict

_HOLDS = Expectation()


def claim_at_call(
    target: Any,
    claim: Any,
    options: Mapping[str, Any],
    where: str | None,
    *,
    up_front: bool = False,
    takes: Iterable[str] = (),
) -> tuple[Any, str, ClaimOptions]:
    """The target, the claim's text and its options, checked where the user gave them (the
    messages start with ``where`` when given; ``takes``: the call's own keyword names, which an
    unknown option's message lists with the options). A Proposition-shaped claim gives its text,
    options (under the call's) and target. ``up_front``: the claim is also rendered now with its
    variables (unless a precondition may skip it), for claims judged later; otherwise a mistake
    in its text is found where it is judged."""
    __tracebackhide__ = True
    target, claim, parsed = with_own_options(
        target, claim, ClaimOptions.parse(options, where, takes=takes), where
    )
    if not up_front:
        return target, check_claim(claim), parsed
    return target, validate_claim(claim, parsed, where), parsed


def validate_claim(claim: Any, options: ClaimOptions, where: str | None) -> str:
    """The claim is text and renders, with its claim_variables, to a claim: checked up front."""
    __tracebackhide__ = True
    try:
        check_claim(claim)
        # With a precondition the claim is rendered only if the precondition lets it be judged
        # (a false one needs no variables), so it is checked when it is judged.
        if options.precondition is None:
            render_claim(claim, options.claim_variables)
    except (TypeError, ValueError) as error:
        if where is None:
            raise
        raise type(error)(f"{where}: {error}") from None
    return str(claim)


def validate_target(target: Any, where: str) -> None:
    """The target can be rendered (its kind, its list structure): checked where it is given."""
    __tracebackhide__ = True
    try:
        as_target_list(target)
    except (TypeError, ValueError) as error:
        raise type(error)(f"{where}: {error}") from None


def resolve_threshold(argument: int | None, marker_value: int | None, session_default: int) -> int:
    """The argument, then the test's min_score mark, then --prop-min-score/ini/env, then 7."""
    __tracebackhide__ = True
    if argument is not None:
        return check_threshold(argument, "min_score")
    if marker_value is not None:
        return marker_value
    return session_default


def judge_claim(
    runtime: Runtime,
    target: Any,
    claim: str,
    *,
    kind: str,
    options: ClaimOptions | None = None,
    model: str | None = None,
    run_index: int = 0,
) -> Verdict:
    """Evaluate without asserting, neither confirmed nor escalated: the Verdict, whatever it
    says (``model``: another judge than the run's, a claim over runs' referee; ``run_index``: a
    claim over runs' run number)."""
    __tracebackhide__ = True
    if kind not in KINDS:
        raise ValueError(f"kind must be 'check' or 'score', got {kind!r}")
    options = options or ClaimOptions()
    targets = target_list(target)
    judged = judge(runtime, kind, claim, targets, options, model=model, run_index=run_index)
    return judged.verdict


def rule_of(
    target: Any,
    options: ClaimOptions,
    expectation: Expectation,
    where: str,
    *,
    runtime: Runtime | None = None,
    kind: Literal["check", "score"] | None = None,
) -> Rule | None:
    """The checked rule of a claim over runs, made once where the claim is made and handed
    down; None for an ordinary claim, which names neither a ``runs(...)`` target nor a runs
    keyword and so never loads the runs machinery (a test holds it: every claim asks). ``runtime``:
    whose settings (confidence, referee) apply; None: the current run's."""
    __tracebackhide__ = True
    if not options.rule_keywords and not is_runs(target):
        return None
    from .over_runs.rule import check_rule

    settings = (runtime or current()).settings if is_runs(target) else None
    return check_rule(target, options.rule_keywords, expectation, settings, where, kind=kind)


def judge_and_note(
    runtime: Runtime,
    target: Any,
    claim: str,
    expectation: Expectation,
    options: ClaimOptions,
    where: str | None = None,
    rule: Rule | None = None,
) -> tuple[Verdict, bool, Verdict | None]:
    """The claim judged and noted: its standing verdict, whether it passed, and the main
    judge's verdict when the claim was escalated (None otherwise).

    ``rule``: a claim over runs' rule, checked where the claim was made; a marker's claim,
    whose target is known only now, has its rule checked here.
    """
    __tracebackhide__ = True
    if rule is None:
        rule = rule_of(target, options, expectation, "claim", runtime=runtime)
    if rule is not None:
        # Claims over runs are never escalated: a referee (--prop-referee-model) checks them.
        noted = _judge_runs_and_note(runtime, target, claim, expectation, rule, options, where)
        return (*noted, None)
    try:
        targets = target_list(target)
        judged = judge(
            runtime, expectation.kind, claim, targets, options, expectation, assertion=True
        )
    except JudgeError as error:
        runtime.note_error(error)
        raise
    ok = expectation.passes(judged.verdict)
    runtime.note(judged.verdict, expectation, ok, where, escalated_from=judged.escalated_from)
    return judged.verdict, ok, judged.escalated_from


def _judge_runs_and_note(
    runtime: Runtime,
    target: Any,
    claim: str,
    expectation: Expectation,
    rule: Rule,
    options: ClaimOptions,
    where: str | None = None,
) -> tuple[Verdict, bool]:
    """A claim over many runs: decided by its rule, noted once with every run's verdict."""
    __tracebackhide__ = True
    from .over_runs.result import summary_verdict

    try:
        result = _decide_over_runs(runtime, target, claim, rule, options)
    except JudgeError as error:
        runtime.note_error(error)
        raise
    verdict = summary_verdict(result)
    runtime.note(verdict, expectation, result.passed, where, runs=result.as_dict())
    return verdict, result.passed


def assert_claim(
    runtime: Runtime,
    target: Any,
    claim: str,
    expectation: Expectation = _HOLDS,
    options: ClaimOptions | None = None,
    *,
    compare_scores: bool = False,
) -> Verdict:
    """Judge the claim and raise PropositionFailed unless it meets its expectation.

    A ``runs(...)`` target is a claim over many runs (``compare_scores``: ``better_than``
    compares mean scores); its rule is checked here, before any simulation.
    """
    __tracebackhide__ = True
    options = options or ClaimOptions()
    kind: Literal["score"] | None = "score" if compare_scores else None
    rule = rule_of(target, options, expectation, "claim", runtime=runtime, kind=kind)
    try:
        verdict, ok, main = judge_and_note(runtime, target, claim, expectation, options, rule=rule)
    except DryRunSkip as skip:
        pytest.skip(str(skip))
    except JudgeError as error:
        # The report should point at the user's line; the plugin's own frames add only noise.
        raise error.with_traceback(None) from None
    if not ok and runtime.settings.outcome != "report":
        # A claim over runs says its decision and figures (the summary verdict's justification).
        message = (
            verdict.justification
            if rule is not None
            else expectation.failure_message(verdict, main)
        )
        raise PropositionFailed(message, verdict, expectation.threshold, holds=expectation.holds)
    # --prop-outcome=report: the outcome is noted, and the summary lists it with its reasons.
    return verdict


# check_over_runs' own keyword names besides the options.
_OVER_RUNS_NAMES = ("min_score", "compare_scores", "runtime")


def check_over_runs(
    target: Any,
    claim: Any,
    *,
    min_score: int | None = None,
    compare_scores: bool = False,
    runtime: Runtime | None = None,
    **options: Any,
) -> RunsResult:
    """Decide a claim over many runs outside an assertion: a ``RunsResult`` with the figures
    (``passed``, ``decision``, ``estimate``, ``lower``, ``upper``, ``runs``); it does not raise
    on a failed or inconclusive claim.

    ``min_score=s`` alone asks for a mean score of at least s; with ``at_least=`` and the
    like, a run holds when it scores at least s. ``compare_scores=True`` makes
    ``better_than=`` compare mean scores instead of rates.
    """
    __tracebackhide__ = True
    run = runtime or current()
    where = "check_over_runs"
    target, claim, parsed = claim_at_call(
        target, claim, options, where, up_front=True, takes=_OVER_RUNS_NAMES
    )
    if not is_runs(target):
        raise TypeError(
            f"{where}: the target must be runs(simulate, max_runs=N), got {type(target).__name__}"
        )
    if min_score is not None:
        check_threshold(min_score, f"{where} min_score")
    kind: Literal["score"] | None = "score" if compare_scores else None
    rule = rule_of(target, parsed, Expectation(min_score), where, runtime=run, kind=kind)
    assert rule is not None
    return _decide_over_runs(run, target, claim, rule, parsed)


def _decide_over_runs(
    runtime: Runtime, target: Any, claim: str, rule: Rule, options: ClaimOptions
) -> RunsResult:
    """Simulate and judge the runs until the claim's (checked) rule decides; the result. Each
    run is judged as an ordinary claim with the claim's own options (``judge_claim``)."""
    __tracebackhide__ = True
    from .over_runs.scheduler import judge_over_runs

    def judge_run(run: int, run_target: Any, model: str | None) -> Verdict:
        return judge_claim(
            runtime,
            run_target,
            claim,
            kind=rule.kind,
            options=options,
            model=model,
            run_index=run,
        )

    return judge_over_runs(runtime, target, claim, rule, options.given(), judge_run)


# -- the fixtures' bodies (plugin.py holds only the fixtures themselves) ---------------------------


def assert_one(
    runtime: Runtime,
    target: Any,
    claim: Any,
    options: Mapping[str, Any],
    *,
    min_score: Any = None,
    max_score: Any = None,
    holds: Any = True,
) -> Verdict:
    """``assert_proposition(target, claim, ...)``: the claim, checked, asserted."""
    __tracebackhide__ = True
    where = "assert_proposition"
    expectation = Expectation.parse(min_score, max_score, holds, where)
    target, claim, parsed = claim_at_call(target, claim, options, where, takes=EXPECTATION_NAMES)
    return assert_claim(runtime, target, claim, expectation, parsed)


def assert_min_score(
    runtime: Runtime,
    target: Any,
    claim: Any,
    threshold: int | None,
    marker_value: int | None,
    options: Mapping[str, Any],
) -> Verdict:
    """``min_score(target, claim, threshold)``: the bar from the argument, the mark, the option."""
    __tracebackhide__ = True
    target, claim, parsed = claim_at_call(target, claim, options, "min_score", takes=["threshold"])
    if "better_than" in parsed.rule_keywords:
        # Over runs: mean scores compared with the control's; no bar is involved.
        if threshold is not None:
            raise TypeError(
                "min_score: better_than= compares mean scores; give no threshold with it"
            )
        return assert_claim(runtime, target, claim, _HOLDS, parsed, compare_scores=True)
    bar = resolve_threshold(threshold, marker_value, runtime.settings.min_score)
    return assert_claim(runtime, target, claim, Expectation(bar), parsed)


def judge_without_asserting(
    runtime: Runtime, target: Any, claim: Any, kind: str, options: Mapping[str, Any]
) -> Verdict:
    """``proposition_judge``: the verdict, noted for the reports, never asserted."""
    __tracebackhide__ = True
    target, claim, parsed = claim_at_call(
        target, claim, options, "proposition_judge", takes=["kind"]
    )
    try:
        verdict = judge_claim(runtime, target, claim, kind=kind, options=parsed)
    except JudgeError as error:
        runtime.note_error(error)
        raise error.with_traceback(None) from None
    runtime.note(verdict, _HOLDS, True)
    return verdict


__all__ = [
    "assert_claim",
    "assert_min_score",
    "assert_one",
    "check_over_runs",
    "claim_at_call",
    "judge_and_note",
    "judge_claim",
    "judge_without_asserting",
    "rule_of",
]
