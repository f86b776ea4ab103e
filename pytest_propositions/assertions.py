"""Claims as test assertions: pick the threshold, judge, compare, and fail with the verdict."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pytest

from .checks import check_claim, check_flag, quote_claim
from .errors import DryRunSkip, JudgeError, PropositionFailed
from .many_runs import RUNS_OPTION_NAMES, check_rule, is_runs, split_options
from .proposition import (
    Proposition,
    check_additional_context,
    choose_target,
    claim_and_options,
    is_proposition_like,
    render_claim,
)
from .scale import MAX_SCORE, MIN_SCORE
from .targets import as_target_list

if TYPE_CHECKING:
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


FLAG_OPTIONS = ("include_personas", "double_check", "use_reasoning_model")


def validate_options(options: Mapping[str, Any], where: str) -> None:
    """Names and types of the keyword options; "false" is not False, so no truthiness."""
    __tracebackhide__ = True
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
        if value is not None and value < 1:
            raise ValueError(f"{name} must be a positive whole number or None, got {value!r}")
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


def soft_claim(
    target: Any, claim: Any, min_score: Any, options: Mapping[str, Any], origin: str
) -> PendingClaim:
    """A claim to judge later, checked now, so a mistake raises at the line that made it."""
    __tracebackhide__ = True
    validate_options(options, origin)
    if min_score is not None:
        validate_threshold(min_score, f"{origin} min_score")
    validate_claim(claim, options, origin)
    rule_options, _ = split_options(options)
    # A claim over runs is checked now too (its rule); its runs are simulated when judged.
    if check_rule(target, rule_options, min_score, 0.95, origin) is None:
        validate_target(target, origin)
    return PendingClaim(target, claim, min_score, dict(options), origin)


def batch_items(claims: Any) -> list[tuple[Any, int | None]]:
    """``assert_propositions``' claims: each a claim, or a (claim, min_score) pair."""
    __tracebackhide__ = True
    __tracebackhide__ = True
    expected = (
        "assert_propositions: claims must be a non-empty list of claims (strings or "
        "Proposition objects) or (claim, min_score) pairs"
    )
    if isinstance(claims, Mapping):
        raise TypeError(
            f"{expected}, got a {type(claims).__name__}; its values would be ignored, so it is "
            "refused: write [(claim, min_score), ...], e.g. list(claims.items())"
        )
    if (
        isinstance(claims, str | bytes)
        or is_proposition_like(claims)
        or not isinstance(claims, list | tuple)
        or not claims
    ):
        shown = type(claims).__name__ if claims else repr(claims)
        raise TypeError(f"{expected}, got {shown}")
    items: list[tuple[Any, int | None]] = []
    for index, item in enumerate(claims):
        if isinstance(item, str) or is_proposition_like(item):
            items.append((item, None))
        elif (
            isinstance(item, tuple | list)
            and len(item) == 2
            and (isinstance(item[0], str) or is_proposition_like(item[0]))
        ):
            claim, threshold = item
            if threshold is not None:
                text = claim if isinstance(claim, str) else claim.claim
                validate_threshold(
                    threshold, f"assert_propositions min_score for {quote_claim(text)}"
                )
            items.append((claim, threshold))
        else:
            raise TypeError(
                f"assert_propositions: item #{index} must be a claim (str) or a "
                f"(claim, min_score) pair, got {type(item).__name__} {_short(item)} (a "
                "Proposition object also counts as a claim)"
            )
    return items


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:79] + "…"


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
) -> Verdict:
    """Evaluate without asserting: the Verdict, whatever it says."""
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
    )
    return proposition.evaluate(
        kind,  # type: ignore[arg-type]
        additional_context=additional_context,
        claim_variables=claim_variables,
        samples=runtime.settings.samples if samples is None else samples,
        sample_index=sample_index,
        runtime=runtime,
    )


def passes(verdict: Verdict, threshold: int | None) -> bool:
    if verdict.kind == "check":
        return verdict.value is True
    assert threshold is not None
    return int(verdict.value) >= threshold


def failure_message(verdict: Verdict, threshold: int | None) -> str:
    """One line for the exception; the report section carries the rest."""
    if verdict.kind == "check":
        outcome = "judged False"
    else:
        outcome = f"scored {verdict.value}/{MAX_SCORE}, below the minimum of {threshold}"
    votes = f", votes {list(verdict.votes)}" if verdict.votes else ""
    claim = quote_claim(verdict.claim)
    return f"claim {claim} {outcome} (model {verdict.model or 'unknown'}{votes})"


def _judge_and_note(
    runtime: Runtime,
    target: Any,
    claim: str,
    threshold: int | None,
    options: Mapping[str, Any],
    compare_scores: bool = False,
) -> tuple[Verdict, bool]:
    __tracebackhide__ = True
    if is_runs(target) or any(name in options for name in RUNS_OPTION_NAMES):
        return _judge_runs_and_note(runtime, target, claim, threshold, options, compare_scores)
    kind = "check" if threshold is None else "score"
    try:
        verdict = judge_claim(runtime, target, claim, kind=kind, **options)
        verdict = _confirmed(runtime, verdict, threshold, target, claim, kind, options)
    except JudgeError as error:
        runtime.note_error(error)
        raise
    ok = passes(verdict, threshold)
    runtime.note(verdict, threshold, ok)
    return verdict, ok


def _judge_runs_and_note(
    runtime: Runtime,
    target: Any,
    claim: str,
    threshold: int | None,
    options: Mapping[str, Any],
    compare_scores: bool,
) -> tuple[Verdict, bool]:
    """A claim over many runs: decided by its rule, noted once with every run's verdict."""
    __tracebackhide__ = True
    from .many_runs import judge_over_runs, summary_verdict

    rule_options, rest = split_options(options)
    rule = check_rule(
        target,
        rule_options,
        threshold,
        runtime.settings.confidence,
        "claim",
        kind="score" if compare_scores else None,
    )
    assert rule is not None
    try:
        result = judge_over_runs(runtime, target, claim, rule, rest)
    except JudgeError as error:
        runtime.note_error(error)
        raise
    verdict = summary_verdict(result)
    runtime.note(verdict, threshold, result.passed, runs=result.as_dict())
    return verdict, result.passed


def needs_confirmation(verdict: Verdict, threshold: int | None) -> bool:
    """A failing verdict, or a score within one point of its bar, is worth asking again."""
    if verdict.precondition_skipped or verdict.votes:
        return False
    if verdict.kind == "check" or threshold is None:
        return verdict.value is not True
    return abs(int(verdict.value) - threshold) <= 1


def _confirmed(
    runtime: Runtime,
    verdict: Verdict,
    threshold: int | None,
    target: Any,
    claim: str,
    kind: str,
    options: Mapping[str, Any],
) -> Verdict:
    """--prop-confirm=N: one call first, and N more only when the first one is in doubt."""
    extra = runtime.settings.confirm
    # A sampled verdict (it has votes) has already been asked more than once.
    if not extra or not needs_confirmation(verdict, threshold):
        return verdict
    from .verdict import combine_samples

    more = [
        judge_claim(runtime, target, claim, kind=kind, **{**options, "samples": 1}, sample_index=i)
        for i in range(1, extra + 1)
    ]
    return combine_samples([verdict, *more])


def assert_claim(
    runtime: Runtime,
    target: Any,
    claim: str,
    *,
    threshold: int | None,
    compare_scores: bool = False,
    **options: Any,
) -> Verdict:
    """Judge the claim and raise PropositionFailed unless it holds (or scores at least threshold).

    A ``runs(...)`` target is a claim over many runs (``compare_scores``: ``better_than``
    compares mean scores); its rule is checked here, before any simulation.
    """
    __tracebackhide__ = True
    rule_options, _ = split_options(options)
    check_rule(
        target,
        rule_options,
        threshold,
        runtime.settings.confidence,
        "claim",
        kind="score" if compare_scores else None,
    )
    try:
        verdict, ok = _judge_and_note(runtime, target, claim, threshold, options, compare_scores)
    except DryRunSkip as skip:
        pytest.skip(str(skip))
    except JudgeError as error:
        # The report should point at the user's line; the plugin's own frames add only noise.
        raise error.with_traceback(None) from None
    if not ok and runtime.settings.outcome != "report":
        # A claim over runs says its decision and figures (the summary verdict's justification).
        message = verdict.justification if is_runs(target) else failure_message(verdict, threshold)
        raise PropositionFailed(message, verdict, threshold)
    # --prop-outcome=report: the outcome is noted, and the summary lists it with its reasons.
    return verdict


@dataclass(frozen=True)
class PendingClaim:
    """A claim judged after the test body: a soft claim or a ``proposition`` marker."""

    target: Any
    claim: str
    threshold: int | None
    options: Mapping[str, Any] = field(default_factory=dict)
    origin: str = "expect_proposition"


@dataclass
class _Result:
    claim: PendingClaim
    verdict: Verdict | None = None
    passed: bool = False
    error: JudgeError | None = None
    skipped: str | None = None
    # A mistake of the call site found while judging (a precondition returning None...).
    invalid: Exception | None = None


def judge_pending(runtime: Runtime, pending: list[PendingClaim]) -> list[Verdict]:
    """Judge every pending claim, concurrently, and fail once with all the failures."""
    __tracebackhide__ = True
    if not pending:
        return []
    test_id = runtime.current_test

    def run(item: PendingClaim) -> _Result:
        runtime.current_test = test_id
        result = _Result(item)
        try:
            result.verdict, result.passed = _judge_and_note(
                runtime, item.target, item.claim, item.threshold, item.options
            )
        except DryRunSkip as skip:
            result.skipped = str(skip)
        except JudgeError as error:
            result.error = error
        except Exception as error:  # a bad claim must not cancel its siblings' verdicts
            result.invalid = error
        return result

    workers = min(runtime.settings.concurrency, len(pending))
    if workers == 1:
        results = [run(item) for item in pending]
    else:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="prop-judge") as pool:
            results = list(pool.map(run, pending))
    failed = [r for r in results if r.verdict is not None and not r.passed]
    errors = [r for r in results if r.error is not None]
    skipped = [r for r in results if r.skipped is not None]
    invalid = [r for r in results if r.invalid is not None]
    if invalid:
        _raise_invalid(invalid, len(results), len(failed), len(errors))
    if failed and runtime.settings.outcome != "report":
        first = failed[0]
        assert first.verdict is not None
        summary = "; ".join(quote_claim(r.claim.claim) for r in failed)
        extra = f" ({len(errors)} more could not be judged)" if errors else ""
        raise PropositionFailed(
            f"{len(failed)} of {len(results)} claims checked after the test failed: {summary}{extra}",
            first.verdict,
            first.claim.threshold,
        )
    if errors:
        first_error = errors[0].error
        assert first_error is not None
        if len(errors) > 1:
            raise type(first_error)(
                f"{len(errors)} of {len(results)} claims could not be judged; first: {first_error}"
            ).with_traceback(None) from None
        raise first_error.with_traceback(None) from None
    if skipped:
        pytest.skip(f"{len(skipped)} claim(s) not cached; dry run: {skipped[0].skipped}")
    return [r.verdict for r in results if r.verdict is not None]


def _raise_invalid(invalid: list[_Result], total: int, failed: int, errors: int) -> None:
    """The first call-site mistake among judged-later claims, with what became of the others."""
    __tracebackhide__ = True
    first = invalid[0]
    error = first.invalid
    assert error is not None
    others = []
    if len(invalid) > 1:
        others.append(f"{len(invalid) - 1} more invalid")
    if failed:
        others.append(f"{failed} failed")
    if errors:
        others.append(f"{errors} could not be judged")
    rest = f"; of the other claims: {', '.join(others)}" if others else ""
    message = f"{first.claim.origin} claim {quote_claim(first.claim.claim)}: {error}{rest}"
    try:
        replacement = type(error)(message)
    except Exception:
        raise error.with_traceback(None) from None
    raise replacement.with_traceback(None) from None


def check_over_runs(
    target: Any,
    claim: Any,
    *,
    min_score: int | None = None,
    compare_scores: bool = False,
    runtime: Runtime | None = None,
    **options: Any,
) -> Any:
    """Decide a claim over many runs outside an assertion: a ``RunsResult`` with the figures
    (``passed``, ``decision``, ``estimate``, ``lower``, ``upper``, ``runs``); it does not raise
    on a failed or inconclusive claim.

    ``min_score=s`` alone asks for a mean score of at least s; with ``at_least=`` and the
    like, a run holds when it scores at least s. ``compare_scores=True`` makes
    ``better_than=`` compare mean scores instead of rates.
    """
    __tracebackhide__ = True
    from . import runtime as runtime_module
    from .many_runs import judge_over_runs

    run = runtime or runtime_module.current()
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
    rule_options, rest = split_options(options)
    rule = check_rule(
        target,
        rule_options,
        min_score,
        run.settings.confidence,
        "check_over_runs",
        kind="score" if compare_scores else None,
    )
    assert rule is not None
    return judge_over_runs(run, target, claim, rule, rest)
