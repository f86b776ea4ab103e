"""The ``proposition`` marker and soft claims: what is judged after a test body, and checks on it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pytest

from .assertions import (
    PendingClaim,
    expectation,
    judge_pending,
    validate_claim,
    validate_options,
    validate_threshold,
)
from .claims.proposition import claim_and_options, is_proposition_like
from .session import SOFT_CLAIMS_KEY

if TYPE_CHECKING:
    from .runtime import Runtime


@dataclass(frozen=True)
class MarkerClaim:
    claim: str
    target: str
    threshold: int | None
    options: dict[str, Any] = field(default_factory=dict)
    # False: the claim must not hold (a score: must be at most the threshold).
    holds: bool = True


def min_score_marker(node: pytest.Item) -> int | None:
    """The test's ``@pytest.mark.min_score(N)``, checked; a bad one is a usage error."""
    marker = node.get_closest_marker("min_score")
    if marker is None:
        return None
    where = f"{node.nodeid}: @pytest.mark.min_score"
    if len(marker.args) != 1 or marker.kwargs:
        raise pytest.UsageError(
            f"{where} takes exactly one argument, the minimum score, got "
            f"args={marker.args!r} kwargs={marker.kwargs!r}"
        )
    try:
        return validate_threshold(marker.args[0], where)
    except ValueError as error:
        raise pytest.UsageError(str(error)) from None


# Marker arguments that say what the claim must do, as opposed to options for the judge.
_EXPECTATION_KEYS = ("target", "min_score", "max_score", "holds")


def marker_claims(item: pytest.Item) -> list[MarkerClaim]:
    """The test's ``proposition`` markers, checked; a bad one is a usage error naming the test."""
    claims = []
    for marker in item.iter_markers("proposition"):
        where = f"{item.nodeid}: @pytest.mark.proposition"
        kwargs = dict(marker.kwargs)
        args = list(marker.args)
        if len(args) > 1:
            raise pytest.UsageError(
                f"{where} takes one positional argument, the claim; pass target= and options by name"
            )
        claim = args[0] if args else kwargs.pop("claim", None)
        own_targets: list[Any] | None = None
        if is_proposition_like(claim):
            # A Proposition-shaped claim: its options under the marker's; validated below.
            overrides = {k: v for k, v in kwargs.items() if k not in _EXPECTATION_KEYS}
            claim, options, own_targets = claim_and_options(claim, overrides)
            kwargs = {**{k: kwargs[k] for k in _EXPECTATION_KEYS if k in kwargs}, **options}
        if own_targets:
            raise pytest.UsageError(
                f"{where}: the proposition has its own target(s); a marker judges the fixture "
                "named by target=, so pass a proposition created without a target"
            )
        target = kwargs.pop("target", None)
        if not isinstance(target, str) or not target.isidentifier():
            raise pytest.UsageError(
                f"{where}: target= must name a fixture (a string such as target='world'), got {target!r}"
            )
        min_score = kwargs.pop("min_score", None)
        max_score = kwargs.pop("max_score", None)
        holds = kwargs.pop("holds", True)
        try:
            threshold, expected = expectation(min_score, max_score, holds, where)
            validate_options(kwargs, where)
            # The claim renders now (variables, partials, blank text), not after the body.
            validate_claim(claim, kwargs, where)
        except (TypeError, ValueError) as error:
            raise pytest.UsageError(str(error)) from None
        claims.append(MarkerClaim(claim, target, threshold, kwargs, expected))
    return claims


def pending_for(item: pytest.Item) -> list[PendingClaim]:
    """Soft claims gathered during the body, then marker claims against their fixtures' values."""
    pending: list[PendingClaim] = []
    if SOFT_CLAIMS_KEY in item.stash:
        soft = item.stash[SOFT_CLAIMS_KEY]
        pending.extend(soft)
    funcargs: dict[str, Any] = getattr(item, "funcargs", {})
    for claim in marker_claims(item):
        if claim.target not in funcargs:
            raise pytest.UsageError(
                f"{item.nodeid}: @pytest.mark.proposition target {claim.target!r} is not a fixture "
                "available to this test"
            )
        pending.append(
            PendingClaim(
                funcargs[claim.target],
                claim.claim,
                claim.threshold,
                claim.options,
                "marker",
                claim.holds,
            )
        )
    return pending


def judge_after_body(runtime: Runtime, item: pytest.Item) -> None:
    """The test body returned: judge its soft claims and markers, failing once with every failure."""
    __tracebackhide__ = True
    try:
        judge_pending(runtime, pending_for(item))
    finally:
        # The claims hold their targets and the test's frame: let them go with the test.
        if SOFT_CLAIMS_KEY in item.stash:
            del item.stash[SOFT_CLAIMS_KEY]


def judge_soft_claims_after(runtime: Runtime, item: pytest.Item, error: BaseException) -> None:
    """The test body raised: still judge the soft claims made before, as pytest reports every
    failure it can, and add what they came to to the error (their verdicts go in the report's
    "proposition" section). Marker claims are not judged: the body did not finish.
    """
    pending: list[PendingClaim] = item.stash[SOFT_CLAIMS_KEY]
    del item.stash[SOFT_CLAIMS_KEY]
    if not pending:
        return
    before = len(runtime.record.outcomes_of(item.nodeid))
    outcome = ""
    try:
        judge_pending(runtime, pending)
    except pytest.skip.Exception as skip:
        outcome = f": not judged ({skip.msg})"
    except Exception as soft:
        outcome = f": {type(soft).__name__}: {soft}"
    judged = runtime.record.outcomes_of(item.nodeid, start=before)
    failed = sum(1 for judged_claim in judged if not judged_claim.passed)
    word = "not upheld" if runtime.settings.outcome == "report" else "failed"
    count = (
        "1 soft claim made before this error was"
        if len(pending) == 1
        else (f"{len(pending)} soft claims made before this error were")
    )
    error.add_note(
        f"{count} judged too, {failed} {word}"
        f" (their verdicts are in the 'proposition' section){outcome}"
    )
