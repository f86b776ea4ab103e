"""Claims as test assertions: pick the threshold, judge, compare, and fail with the verdict."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal

import pytest

from .checks import check_claim, check_flag, quote_claim
from .claims.proposition import (
    Proposition,
    check_additional_context,
    check_timestamps,
    choose_target,
    claim_and_options,
    render_claim,
)
from .claims.targets import as_target_list
from .errors import DryRunSkip, JudgeError, PropositionFailed
from .over_runs.keywords import RUNS_OPTION_NAMES, is_runs, split_options
from .runtime import current
from .scale import MAX_SCORE, MIN_SCORE

if TYPE_CHECKING:
    from .over_runs.result import RunsResult
    from .over_runs.rule import Rule
    from .runtime import Runtime
    from .verdict import Verdict

# The keyword options every claim-making fixture and marker accepts.
OPTION_NAMES = frozenset(
    {
        "claim_variables",
        "additional_context",
        "first_n",
        "last_n",
        "include_personas",
        "double_check",
        "use_reasoning_model",
        "precondition",
        "samples",
        "timestamps",
    }
)


def validate_threshold(value: Any, where: str) -> int:
    """A score bar must be a whole number in range; the error says where it came from."""
    __tracebackhide__ = True
    if isinstance(value, bool) or not isinstance(value, int) or not MIN_SCORE <= value <= MAX_SCORE:
        raise ValueError(
            f"{where}: expected a whole number from {MIN_SCORE} to {MAX_SCORE}, got {value!r}"
        )
    return value


def expectation(min_score: Any, max_score: Any, holds: Any, where: str) -> tuple[int | None, bool]:
    """What a claim must do, as (threshold, holds): a check that holds (None, True) or does not
    (None, False); a score of at least N (N, True) or at most N (N, False)."""
    __tracebackhide__ = True
    try:
        check_flag(holds, "holds")
    except TypeError as error:
        raise TypeError(f"{where}: {error}") from None
    if min_score is not None and max_score is not None:
        raise TypeError(
            f"{where}: give min_score (the score must reach it) or max_score (the score must "
            "not exceed it), not both"
        )
    if not holds and min_score is not None:
        raise TypeError(
            f"{where}: holds=False with min_score is ambiguous; for a score that must stay low, "
            "write max_score=N (the score must be at most N)"
        )
    if not holds and max_score is not None:
        raise TypeError(
            f"{where}: max_score already says the claim must not hold; drop holds=False"
        )
    if max_score is not None:
        return validate_threshold(max_score, f"{where} max_score"), False
    if min_score is not None:
        return validate_threshold(min_score, f"{where} min_score"), True
    return None, bool(holds)


FLAG_OPTIONS = ("include_personas", "double_check", "use_reasoning_model")


def validate_options(options: Mapping[str, Any], where: str) -> None:
    """Names and types of the keyword options; "false" is not False, so no truthiness."""
    __tracebackhide__ = True
    if not options:
        return  # the commonest call gives none
    # Claims over runs' keywords (at_least=...) are checked with their target (check_rule).
    unknown = sorted(set(options) - OPTION_NAMES - RUNS_OPTION_NAMES)
    if unknown:
        raise TypeError(
            f"{where}: unknown option(s) {', '.join(unknown)}; expected some of "
            f"{', '.join(sorted(OPTION_NAMES))}"
        )
    try:
        _check_option_values(options)
    except (TypeError, ValueError) as error:
        raise type(error)(f"{where}: {error}") from None


def _check_option_values(options: Mapping[str, Any]) -> None:
    __tracebackhide__ = True
    for name in FLAG_OPTIONS:
        if name in options:
            check_flag(options[name], name)
    variables = options.get("claim_variables")
    if variables is not None and not isinstance(variables, Mapping):
        raise TypeError(f"claim_variables must be a dict, got {type(variables).__name__}")
    check_additional_context(options.get("additional_context"))
    precondition = options.get("precondition")
    if precondition is not None and not callable(precondition):
        raise TypeError(f"precondition must be callable, got {type(precondition).__name__}")
    for name in ("first_n", "last_n"):
        value = options.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise TypeError(f"{name} must be a whole number or None, got {value!r}")
        if value is not None and value < 0:
            raise ValueError(
                f"{name} must be a whole number of at least 0, or None, got {value!r} (0 means "
                "what it means to the reference library: first_n=0 shows no event from the "
                "start, last_n=0 shows every event)"
            )
    check_timestamps(options.get("timestamps"))
    samples = options.get("samples")
    if samples is not None and (isinstance(samples, bool) or not isinstance(samples, int)):
        raise TypeError(f"samples must be a whole number, got {samples!r}")
    if samples is not None and samples < 1:
        raise ValueError(f"samples must be a whole number of at least 1, got {samples!r}")


def validate_claim(claim: Any, options: Mapping[str, Any], where: str) -> str:
    """The claim is text and renders, with its claim_variables, to a claim: checked up front."""
    __tracebackhide__ = True
    try:
        check_claim(claim)
        # With a precondition the claim is rendered only if the precondition lets it be judged
        # (a false one needs no variables), so it is checked when it is judged.
        if options.get("precondition") is None:
            render_claim(claim, options.get("claim_variables"))
    except (TypeError, ValueError) as error:
        raise type(error)(f"{where}: {error}") from None
    return str(claim)


def validate_target(target: Any, where: str) -> None:
    """The target can be rendered (its kind, its list structure): checked where it is given."""
    __tracebackhide__ = True
    try:
        as_target_list(target)
    except (TypeError, ValueError) as error:
        raise type(error)(f"{where}: {error}") from None


def normalise_claim(
    target: Any, claim: Any, options: Mapping[str, Any]
) -> tuple[Any, Any, dict[str, Any]]:
    """A Proposition-shaped claim becomes its text, its options under the call's, and its target.

    The fixtures and markers call this once, where the user passed the claim; a plain claim
    comes back as given (its checks are the caller's).
    """
    text, merged, own = claim_and_options(claim, options)
    return choose_target(target, own), text, merged


def resolve_threshold(argument: int | None, marker_value: int | None, session_default: int) -> int:
    """The argument, then the test's min_score mark, then --prop-min-score/ini/env, then 7."""
    __tracebackhide__ = True
    if argument is not None:
        return validate_threshold(argument, "min_score")
    if marker_value is not None:
        return marker_value
    return session_default


def judge_claim(
    runtime: Runtime,
    target: Any,
    claim: str,
    *,
    kind: str,
    claim_variables: Mapping[str, Any] | None = None,
    additional_context: str | None = None,
    first_n: int | None = None,
    last_n: int | None = None,
    include_personas: bool = False,
    double_check: bool = False,
    use_reasoning_model: bool = False,
    precondition: Callable[..., Any] | None = None,
    samples: int | None = None,
    sample_index: int = 0,
    timestamps: str | None = None,
    model: str | None = None,
    holds: bool = True,
    run_index: int = 0,
) -> Verdict:
    """Evaluate without asserting: the Verdict, whatever it says (``model``: another judge than
    the run's, the escalation model or a claim over runs' referee; ``holds``: which way the
    claim faces, for ties between samples; ``run_index``: a claim over runs' run number)."""
    __tracebackhide__ = True
    if kind not in ("check", "score"):
        raise ValueError(f"kind must be 'check' or 'score', got {kind!r}")
    proposition = Proposition(
        claim,
        target,
        include_personas=include_personas,
        first_n=first_n,
        last_n=last_n,
        double_check=double_check,
        use_reasoning_model=use_reasoning_model,
        precondition_function=precondition,
        timestamps=timestamps,
    )
    # Noted by the caller (an assertion, a claim over runs), with its expectation: not as a call.
    return proposition.evaluate(
        kind,  # type: ignore[arg-type]
        additional_context=additional_context,
        claim_variables=claim_variables,
        samples=runtime.settings.samples if samples is None else samples,
        sample_index=sample_index,
        runtime=runtime,
        model=model,
        noted_as=None,
        holds=holds,
        run_index=run_index,
    )


def passes(verdict: Verdict, threshold: int | None, holds: bool = True) -> bool:
    if verdict.kind == "check":
        return verdict.value is holds
    assert threshold is not None
    if holds:
        return int(verdict.value) >= threshold
    return int(verdict.value) <= threshold


def failure_message(
    verdict: Verdict,
    threshold: int | None,
    holds: bool = True,
    escalated_from: Verdict | None = None,
) -> str:
    """One line for the exception; the report section carries the rest."""
    if verdict.kind == "check" and holds:
        outcome = "judged False"
    elif verdict.kind == "check":
        outcome = "judged True; expected the claim not to hold"
    elif holds:
        outcome = f"scored {verdict.value}/{MAX_SCORE}, below the minimum of {threshold}"
    else:
        outcome = (
            f"scored {verdict.value}/{MAX_SCORE}, above the maximum of {threshold}; expected "
            "the claim not to hold"
        )
    votes = f", votes {list(verdict.votes)}" if verdict.votes else ""
    claim = quote_claim(verdict.claim)
    escalated = (
        f", escalated from {escalated_from.model or 'the main judge'}'s {escalated_from.value}"
        if escalated_from is not None
        else ""
    )
    message = f"claim {claim} {outcome} (model {verdict.model or 'unknown'}{votes}{escalated})"
    if not holds:
        # The judge's reasons are what a reader needs when a claim that must not hold did.
        message += f"; the judge: {quote_claim(verdict.justification, 300)}"
    return message


def rule_of(
    target: Any,
    options: Mapping[str, Any],
    threshold: int | None,
    where: str,
    *,
    runtime: Runtime | None = None,
    kind: Literal["check", "score"] | None = None,
    holds: bool = True,
) -> Rule | None:
    """The checked rule of a claim over runs, made once where the claim is made and handed
    down; None for an ordinary claim, which names neither a ``runs(...)`` target nor a runs
    keyword and so never loads the runs machinery. ``runtime``: whose settings (confidence,
    referee) apply; None: the current run's."""
    __tracebackhide__ = True
    rule_options = split_options(options)[0] if options else {}
    if not rule_options and not is_runs(target):
        return None
    from .over_runs.rule import check_rule

    settings = (runtime or current()).settings if is_runs(target) else None
    return check_rule(target, rule_options, threshold, settings, where, kind=kind, holds=holds)


def judge_and_note(
    runtime: Runtime,
    target: Any,
    claim: str,
    threshold: int | None,
    options: Mapping[str, Any],
    holds: bool = True,
    where: str | None = None,
    rule: Rule | None = None,
) -> tuple[Verdict, bool, Verdict | None]:
    """The claim judged and noted: its standing verdict, whether it passed, and the main
    judge's verdict when the claim was escalated (None otherwise).

    ``rule``: a claim over runs' rule, checked where the claim was made; a marker's claim,
    whose target is known only now, has its rule checked here.
    """
    __tracebackhide__ = True
    if rule is None and (is_runs(target) or any(name in options for name in RUNS_OPTION_NAMES)):
        rule = rule_of(target, options, threshold, "claim", runtime=runtime)
    if rule is not None:
        # Claims over runs are never escalated: a referee (--prop-referee-model) checks them.
        return (
            *_judge_runs_and_note(runtime, target, claim, rule, threshold, options, where),
            None,
        )
    kind = "check" if threshold is None else "score"
    try:
        verdict = judge_claim(runtime, target, claim, kind=kind, holds=holds, **options)
        verdict = _confirmed(runtime, verdict, threshold, target, claim, kind, options, holds)
        main, verdict = _escalated(runtime, verdict, threshold, target, claim, kind, options, holds)
    except JudgeError as error:
        runtime.note_error(error)
        raise
    ok = passes(verdict, threshold, holds)
    runtime.note(verdict, threshold, ok, holds, where, escalated_from=main)
    return verdict, ok, main


def _judge_runs_and_note(
    runtime: Runtime,
    target: Any,
    claim: str,
    rule: Rule,
    threshold: int | None,
    options: Mapping[str, Any],
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
    runtime.note(verdict, threshold, result.passed, True, where, runs=result.as_dict())
    return verdict, result.passed


def needs_confirmation(verdict: Verdict, threshold: int | None, holds: bool = True) -> bool:
    """A failing verdict (however far a score is from its bar), or a passing score within one
    point of its bar, is worth asking again."""
    if verdict.precondition_skipped or verdict.votes:
        return False
    if not passes(verdict, threshold, holds):
        return True
    return (
        verdict.kind == "score"
        and threshold is not None
        and abs(int(verdict.value) - threshold) <= 1
    )


def needs_escalation(
    verdict: Verdict, threshold: int | None, holds: bool = True, within: int = 1
) -> bool:
    """Whether the stronger model (--prop-escalate-to) judges the claim again: when the main
    judge's verdict would fail the claim (a check that does not come out as expected, a score
    on the wrong side of its bar, however far), or a score is within ``within`` points of its
    bar (min_score and max_score alike), passing or not. A claim whose precondition was false
    was not judged, so there is nothing to escalate."""
    if verdict.precondition_skipped:
        return False
    if not passes(verdict, threshold, holds):
        return True
    return (
        verdict.kind == "score"
        and threshold is not None
        and (abs(int(verdict.value) - threshold) <= within)
    )


def _escalated(
    runtime: Runtime,
    verdict: Verdict,
    threshold: int | None,
    target: Any,
    claim: str,
    kind: str,
    options: Mapping[str, Any],
    holds: bool = True,
) -> tuple[Verdict | None, Verdict]:
    """(the main judge's verdict, the standing one) after --prop-escalate-to: the stronger
    model's verdict stands when the main one was in doubt; (None, verdict) when not escalated.

    The stronger model is asked the same request (prompt, double check, samples), so its
    verdict is cached under its own key. A failure to get it is a judge error, never a fall back
    to the main judge's verdict.
    """
    settings = runtime.settings
    stronger = settings.escalate_to
    main_model = settings.judge_model(bool(options.get("use_reasoning_model", False)))
    if (
        stronger is None
        or stronger == main_model
        or not needs_escalation(verdict, threshold, holds, settings.escalate_within)
    ):
        return None, verdict
    try:
        standing = judge_claim(
            runtime, target, claim, kind=kind, model=stronger, holds=holds, **options
        )
    except JudgeError as error:
        import copy

        failed = copy.copy(error)
        failed.args = (
            f"escalation to {stronger} failed, and the main judge's verdict "
            f"({verdict.value}) does not stand: {error}",
        )
        raise failed from None
    return verdict, standing


def _confirmed(
    runtime: Runtime,
    verdict: Verdict,
    threshold: int | None,
    target: Any,
    claim: str,
    kind: str,
    options: Mapping[str, Any],
    holds: bool = True,
) -> Verdict:
    """--prop-confirm=N: one call first, and N more only when the first one is in doubt."""
    extra = runtime.settings.confirm
    # A sampled verdict (it has votes) has already been asked more than once.
    if not extra or not needs_confirmation(verdict, threshold, holds):
        return verdict
    from .verdict import combine_samples

    more = [
        judge_claim(runtime, target, claim, kind=kind, **{**options, "samples": 1}, sample_index=i)
        for i in range(1, extra + 1)
    ]
    return combine_samples([verdict, *more], holds)


def assert_claim(
    runtime: Runtime,
    target: Any,
    claim: str,
    *,
    threshold: int | None,
    holds: bool = True,
    compare_scores: bool = False,
    **options: Any,
) -> Verdict:
    """Judge the claim and raise PropositionFailed unless it meets its expectation: it holds
    (scores at least threshold), or with ``holds=False`` it does not (scores at most threshold).

    A ``runs(...)`` target is a claim over many runs (``compare_scores``: ``better_than``
    compares mean scores); its rule is checked here, before any simulation.
    """
    __tracebackhide__ = True
    rule = rule_of(
        target,
        options,
        threshold,
        "claim",
        runtime=runtime,
        kind="score" if compare_scores else None,
        holds=holds,
    )
    try:
        verdict, ok, main = judge_and_note(
            runtime, target, claim, threshold, options, holds, rule=rule
        )
    except DryRunSkip as skip:
        pytest.skip(str(skip))
    except JudgeError as error:
        # The report should point at the user's line; the plugin's own frames add only noise.
        raise error.with_traceback(None) from None
    if not ok and runtime.settings.outcome != "report":
        # A claim over runs says its decision and figures (the summary verdict's justification).
        message = (
            verdict.justification
            if is_runs(target)
            else failure_message(verdict, threshold, holds, main)
        )
        raise PropositionFailed(message, verdict, threshold, holds=holds)
    # --prop-outcome=report: the outcome is noted, and the summary lists it with its reasons.
    return verdict


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
    target, claim, options = normalise_claim(target, claim, options)
    validate_options(options, "check_over_runs")
    validate_claim(claim, options, "check_over_runs")
    if not is_runs(target):
        raise TypeError(
            "check_over_runs: the target must be runs(simulate, max_runs=N), got "
            f"{type(target).__name__}"
        )
    if min_score is not None:
        validate_threshold(min_score, "check_over_runs min_score")
    kind: Literal["score"] | None = "score" if compare_scores else None
    rule = rule_of(target, options, min_score, "check_over_runs", runtime=run, kind=kind)
    assert rule is not None
    return _decide_over_runs(run, target, claim, rule, options)


def _decide_over_runs(
    runtime: Runtime, target: Any, claim: str, rule: Rule, options: Mapping[str, Any]
) -> RunsResult:
    """Simulate and judge the runs until the claim's (checked) rule decides; the result. Each
    run is judged as an ordinary claim with the claim's own options (``judge_claim``)."""
    __tracebackhide__ = True
    from .over_runs.scheduler import judge_over_runs

    rest = split_options(options)[1]

    def judge_run(run: int, run_target: Any, model: str | None) -> Verdict:
        return judge_claim(
            runtime, run_target, claim, kind=rule.kind, model=model, run_index=run, **rest
        )

    return judge_over_runs(runtime, target, claim, rule, rest, judge_run)


# -- the fixtures' bodies (plugin.py holds only the fixtures themselves) ---------------------------


def assert_min_score(
    runtime: Runtime,
    target: Any,
    claim: Any,
    threshold: int | None,
    marker_value: int | None,
    options: dict[str, Any],
) -> Verdict:
    """``min_score(target, claim, threshold)``: the bar from the argument, the mark, the option."""
    __tracebackhide__ = True
    # A proposition object's own options are checked like the call's, which win over them.
    target, claim, options = normalise_claim(target, claim, options)
    validate_options(options, "min_score")
    if "better_than" in options:
        # Over runs: mean scores compared with the control's; no bar is involved.
        if threshold is not None:
            raise TypeError(
                "min_score: better_than= compares mean scores; give no threshold with it"
            )
        return assert_claim(runtime, target, claim, threshold=None, compare_scores=True, **options)
    bar = resolve_threshold(threshold, marker_value, runtime.settings.min_score)
    return assert_claim(runtime, target, claim, threshold=bar, **options)


def judge_without_asserting(
    runtime: Runtime, target: Any, claim: Any, kind: str, options: dict[str, Any]
) -> Verdict:
    """``proposition_judge``: the verdict, noted for the reports, never asserted."""
    __tracebackhide__ = True
    # A proposition object's own options are checked like the call's, which win over them.
    target, claim, options = normalise_claim(target, claim, options)
    validate_options(options, "proposition_judge")
    try:
        verdict = judge_claim(runtime, target, claim, kind=kind, **options)
    except JudgeError as error:
        runtime.note_error(error)
        raise error.with_traceback(None) from None
    runtime.note(verdict, None, True)
    return verdict
