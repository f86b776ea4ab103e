"""What a claim must do (``Expectation``), parsed once where the claim is made: whether a
verdict passes, the failure message, which way ties between samples go, and when a verdict is in
enough doubt to ask again (``--prop-confirm``, ``--prop-escalate-to``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..checks import at_site, check_flag, quote_claim
from ..scale import MAX_SCORE, MIN_SCORE
from ..verdict import CHECK, SCORE, Kind, Verdict, passes_bar

__all__ = ["EXPECTATION_NAMES", "HOLDS", "Expectation", "check_threshold"]

#: The keyword names of ``Expectation.parse``: what a call site that takes an expectation takes
#: besides the options (an unknown option's message lists them).
EXPECTATION_NAMES = ("min_score", "max_score", "holds")


def check_threshold(value: Any, where: str) -> int:
    """A score bar must be a whole number in range; the error says where it came from."""
    __tracebackhide__ = True
    if isinstance(value, bool) or not isinstance(value, int) or not MIN_SCORE <= value <= MAX_SCORE:
        raise ValueError(
            f"{at_site(where)}expected a whole number from {MIN_SCORE} to {MAX_SCORE}, got {value!r}"
        )
    return value


@dataclass(frozen=True)
class Expectation:
    """A check that holds (no threshold, ``holds``) or does not (``holds=False``); a score of
    at least ``threshold`` (``holds``) or at most it (``holds=False``, written ``max_score``)."""

    threshold: int | None = None
    holds: bool = True

    @classmethod
    def parse(cls, min_score: Any, max_score: Any, holds: Any, where: str | None) -> Expectation:
        """The expectation a call site gives with ``min_score``, ``max_score`` and ``holds``;
        every message starts with ``where`` when given."""
        __tracebackhide__ = True
        if min_score is None and max_score is None and holds is True:
            return HOLDS  # the commonest call gives none
        at = at_site(where)
        try:
            check_flag(holds, "holds")
        except TypeError as error:
            raise TypeError(f"{at}{error}") from None
        if min_score is not None and max_score is not None:
            raise TypeError(
                f"{at}give min_score (the score must reach it) or max_score (the score "
                "must not exceed it), not both"
            )
        if not holds and min_score is not None:
            raise TypeError(
                f"{at}holds=False with min_score is ambiguous; for a score that must stay "
                "low, write max_score=N (the score must be at most N)"
            )
        if not holds and max_score is not None:
            raise TypeError(f"{at}max_score already says the claim must not hold; drop holds=False")
        named = f"{where} " if where else ""
        if max_score is not None:
            return cls(check_threshold(max_score, f"{named}max_score"), False)
        if min_score is not None:
            return cls(check_threshold(min_score, f"{named}min_score"), True)
        return cls(None, holds)

    @property
    def kind(self) -> Kind:
        return CHECK if self.threshold is None else SCORE

    def passes(self, verdict: Verdict) -> bool:
        return passes_bar(verdict.kind, verdict.value, self.threshold, self.holds)

    def in_doubt(self, verdict: Verdict, within: int) -> bool:
        """A verdict that would fail the claim (a check that does not come out as expected, a
        score on the wrong side of its bar, however far), or a score within ``within`` points of
        its bar (min_score and max_score alike), passing or not. A claim whose precondition was
        false was not judged: nothing to doubt."""
        if verdict.precondition_skipped:
            return False
        if not self.passes(verdict):
            return True
        return (
            verdict.kind == SCORE
            and self.threshold is not None
            and abs(int(verdict.value) - self.threshold) <= within
        )

    def failure_message(self, verdict: Verdict, escalated_from: Verdict | None = None) -> str:
        """One line for the exception; the report section carries the rest."""
        threshold = self.threshold
        if verdict.kind == CHECK and self.holds:
            outcome = "judged False"
        elif verdict.kind == CHECK:
            outcome = "judged True; expected the claim not to hold"
        elif self.holds:
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
        if not self.holds:
            # The judge's reasons are what a reader needs when a claim that must not hold did.
            message += f"; the judge: {quote_claim(verdict.justification, 300)}"
        return message


#: A check that must hold: what a claim expects when it is given no expectation.
HOLDS = Expectation()
