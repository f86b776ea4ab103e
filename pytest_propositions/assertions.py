"""Claims as test assertions: pick the threshold, judge, compare, and fail with the verdict."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from .errors import JudgeError, PropositionFailed
from .parsing import MAX_SCORE, MIN_SCORE

if TYPE_CHECKING:
    from .runtime import Runtime
    from .verdict import Verdict


def validate_threshold(value: Any, where: str) -> int:
    """A score bar must be a whole number in range; the error says where it came from."""
    if isinstance(value, bool) or not isinstance(value, int) or not MIN_SCORE <= value <= MAX_SCORE:
        raise ValueError(
            f"{where}: expected a whole number from {MIN_SCORE} to {MAX_SCORE}, got {value!r}"
        )
    return value


def resolve_threshold(argument: int | None, marker_value: int | None, session_default: int) -> int:
    """The argument, then the test's min_score mark, then --prop-min-score/ini/env, then 7."""
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
) -> Verdict:
    """Evaluate without asserting: the Verdict, whatever it says."""
    from .proposition import Proposition

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
    return f"claim {verdict.claim!r} {outcome} (model {verdict.model or 'unknown'})"


def assert_claim(
    runtime: Runtime, target: Any, claim: str, *, threshold: int | None, **options: Any
) -> Verdict:
    """Judge the claim and raise PropositionFailed unless it holds (or scores at least threshold)."""
    __tracebackhide__ = True
    kind = "check" if threshold is None else "score"
    try:
        verdict = judge_claim(runtime, target, claim, kind=kind, **options)
    except JudgeError as error:
        runtime.note_error(error)
        # The report should point at the user's line; the plugin's own frames add only noise.
        raise error.with_traceback(None) from None
    ok = passes(verdict, threshold)
    runtime.note(verdict, threshold, ok)
    if not ok:
        raise PropositionFailed(failure_message(verdict, threshold), verdict, threshold)
    return verdict
