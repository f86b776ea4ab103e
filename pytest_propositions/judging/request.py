"""What the judge is asked and what it counts: one claim's request, how it is asked within
itself (``Turns``), and the run's judge stats.

The judge (judge.py) and its live half (live.py) both take these values; neither imports the
other's module for them.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, ClassVar, cast

if TYPE_CHECKING:
    from ..store.key_material import KeyMaterial
    from ..verdict import Kind
    from .prompts import Message

__all__ = ["JudgeRequest", "JudgeStats", "Turns"]


@dataclass(frozen=True)
class Turns:
    """How one request is asked within itself: the part of the asking policy
    (``claims.asking.Asking``) that judging/live.py carries out, kept here because judging sits
    below claims.

    The answer, then, with ``double_check``, a second turn asking the judge to check it; a turn
    whose reply cannot be read is asked again ``reasks`` times before the claim is a judge error.
    """

    double_check: bool = False
    reasks: int = 1

    @property
    def count(self) -> int:
        """The turns of the chat: the answer, and the double-check's."""
        return 2 if self.double_check else 1

    def most_calls(self) -> int:
        """The most judge calls the request costs: every turn's reply unparsable but its last."""
        return self.count * (1 + self.reasks)


@dataclass(frozen=True)
class JudgeRequest:
    """What the judge is asked for one claim; the judge keys it as a ``KeyMaterial`` (with the
    connection's identity and the sampling sent), so the claim's text and the test id are not in
    the key."""

    kind: Kind
    claim: str
    model: str
    messages: tuple[Message, ...]
    double_check: bool = False
    sample_index: int = 0
    test_id: str | None = None
    # A claim over runs' run number: each run is a draw of its own from the judge, so runs with
    # equal transcripts do not share one verdict (keyed from run 1; run 0 keys as before).
    run_index: int = 0

    @property
    def turns(self) -> Turns:
        """How the request is asked within itself (judging/live.py follows it)."""
        return Turns(self.double_check)

    @classmethod
    def asking(
        cls, material: KeyMaterial, *, claim: str, model: str, test_id: str | None = None
    ) -> JudgeRequest:
        """The request that asks ``material``'s question of ``model`` (``cache rejudge``): the
        judge keys it as ``material`` with that model's identity and sampling."""
        return cls(
            kind=material.kind,
            claim=claim,
            model=model,
            messages=cast("tuple[Message, ...]", material.messages),
            double_check=material.double_check,
            sample_index=material.sample_index,
            test_id=test_id,
            run_index=material.run_index,
        )


@dataclass(eq=False)
class JudgeStats:
    """Counts for the terminal summary; updated under a lock because claims may run in threads."""

    verdicts: int = 0
    cache_hits: int = 0
    judge_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    judge_seconds: float = 0.0
    dry_run_misses: int = 0
    # What the dry run's misses would send (estimated): their prompt tokens, their cost, and how
    # many had no price in the model table (their cost not in the sum).
    dry_run_prompt_tokens: int = 0
    dry_run_cost_usd: float = 0.0
    dry_run_unpriced: int = 0
    coalesced: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    #: The counters (every field but the lock), as workers send them to the controller and the
    #: JSON report writes them; set below, from the fields.
    COUNTERS: ClassVar[tuple[str, ...]] = ()


JudgeStats.COUNTERS = tuple(f.name for f in fields(JudgeStats) if f.name != "lock")
