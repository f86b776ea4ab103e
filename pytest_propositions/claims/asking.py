"""The one policy for asking a judge again (``Asking``): samples, ``double_check``,
``--prop-confirm``, escalation (``--prop-escalate-to``) and the re-ask of an unparsable reply,
built once per claim from its options and the run's settings, and followed by every claim's
judging; with the most judge calls it lets one claim cost (``Asking.most_judge_calls``).

What happens within one request (the double-check's turn, the re-ask) is carried out by
judging/live.py, below this wing: its part of the policy is the ``Turns`` of judging/request.py,
which ``Asking.turns`` gives. The transport's transient retries and its response-format fallback
are not asking again: they deliver one call (judging/transport.py).

A claim over runs' referee is not part of it: the rule names the referee, and its decider chooses
which runs it judges (over_runs/deciders.py).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import JudgeError
from ..judging.request import Turns
from ..verdict import Verdict, combine_samples
from .expectation import Expectation

if TYPE_CHECKING:
    from ..settings import Settings
    from .options import ClaimOptions

__all__ = ["Ask", "Asking"]

#: Asks the judge once: the model and the sample index (both in the cache key) to ask with.
Ask = Callable[[str, int], Verdict]


@dataclass(frozen=True)
class Asking:
    """How often, and whom, a claim's judge is asked.

    ``samples`` requests to ``model`` (indices from ``first_sample``, each keyed by its index):
    the majority or median stands, ties going against the expectation. Each request is asked in
    its ``turns``: double-checked within itself when ``double_check``, an unparsable reply asked
    again (judging/live.py carries them out).
    ``confirm`` more requests (the following indices) when a single answer is in doubt: failing,
    or a score within one point of its bar. Then, when the verdict is in doubt by
    ``escalate_within`` points, ``escalate_to`` is asked the same requests, and its verdict
    stands.
    """

    model: str
    double_check: bool = False
    samples: int = 1
    first_sample: int = 0
    confirm: int = 0
    escalate_to: str | None = None
    escalate_within: int = 1

    @classmethod
    def of(
        cls,
        options: ClaimOptions,
        settings: Settings,
        *,
        model: str | None = None,
        first_sample: int = 0,
        assertion: bool = False,
    ) -> Asking:
        """The claim's policy: its own ``samples`` (else ``--prop-samples``) and
        ``double_check``; an assertion's claim also confirms and escalates as the run says.
        ``model``: another judge than the run's (a claim over runs' referee)."""
        main = model or settings.judge_model(options.use_reasoning_model)
        samples = settings.samples if options.samples is None else options.samples
        if not assertion:
            return cls(main, options.double_check, samples, first_sample)
        stronger = settings.escalate_to
        return cls(
            main,
            options.double_check,
            samples,
            first_sample,
            # A sampled verdict has already been asked more than once.
            confirm=settings.confirm if samples == 1 else 0,
            escalate_to=None if stronger == main else stronger,
            escalate_within=settings.escalate_within,
        )

    @property
    def turns(self) -> Turns:
        """How each request is asked within itself: its turns and the re-ask of an unparsable
        reply (judging/live.py follows it)."""
        return Turns(self.double_check)

    def most_requests(self) -> int:
        """The most requests ``follow`` makes: the samples, the confirming ones, and the samples
        again to the stronger model."""
        escalated = self.samples if self.escalate_to is not None else 0
        return self.samples + self.confirm + escalated

    def most_judge_calls(self) -> int:
        """The most judge calls one claim can cost on a cache miss: every request at its most
        (``Turns.most_calls``). Each call is one delivery: the transport's transient retries and
        response-format fallback are not counted (docs/judges.md)."""
        return self.most_requests() * self.turns.most_calls()

    def follow(self, ask: Ask, expectation: Expectation) -> tuple[Verdict, Verdict | None]:
        """The standing verdict, and the main judge's when the claim was escalated (None
        otherwise). A failure to get the stronger model's verdict is a judge error, never a
        fall back to the main judge's verdict."""
        verdict = self._sampled(ask, self.model, expectation)
        if self.confirm and expectation.in_doubt(verdict, 1):
            start = self.first_sample + 1
            more = [ask(self.model, index) for index in range(start, start + self.confirm)]
            verdict = combine_samples([verdict, *more], expectation.holds)
        stronger = self.escalate_to
        if stronger is None or not expectation.in_doubt(verdict, self.escalate_within):
            return verdict, None
        try:
            return self._sampled(ask, stronger, expectation), verdict
        except JudgeError as error:
            failed = copy.copy(error)
            failed.args = (
                f"escalation to {stronger} failed, and the main judge's verdict "
                f"({verdict.value}) does not stand: {error}",
            )
            raise failed from None

    def _sampled(self, ask: Ask, model: str, expectation: Expectation) -> Verdict:
        if self.samples == 1:
            return ask(model, self.first_sample)
        indices = range(self.first_sample, self.first_sample + self.samples)
        answers = [ask(model, index) for index in indices]
        return combine_samples(answers, expectation.holds)
