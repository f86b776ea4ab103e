"""What the judge is asked and what it counts: one claim's request, and the run's judge stats.

The judge (judge.py) and its live half (live.py) both take these values; neither imports the
other's module for them.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, NamedTuple

from . import families
from .families import TEMPERATURE

if TYPE_CHECKING:
    from ..verdict import Kind
    from .prompts import Message

__all__ = ["JudgeRequest", "JudgeStats"]


class JudgeRequest(NamedTuple):
    """Everything that decides a verdict; all of it but the test id goes into the cache key.
    (A named tuple: one is made for every claim, and a dataclass costs more to make and define.)"""

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
    def temperature(self) -> float:
        """The temperature of a model that takes one; what is sent is ``sampling``'s choice."""
        return TEMPERATURE[self.kind]

    def sampling(self, model: str, reasoning_effort: str | None) -> dict[str, Any]:
        """The sampling parameters sent to ``model`` (the litellm name) for this request."""
        return families.sampling(model, self.kind, reasoning_effort)


class JudgeStats:
    """Counts for the terminal summary; updated under a lock because claims may run in threads.
    (A plain class: every cached run defines it, and a dataclass costs more to define.)"""

    #: The counters, as workers send them to the controller and the JSON report writes them.
    COUNTERS = (
        "verdicts",
        "cache_hits",
        "judge_calls",
        "prompt_tokens",
        "completion_tokens",
        "cost_usd",
        "judge_seconds",
        "dry_run_misses",
        "coalesced",
    )

    def __init__(self) -> None:
        self.verdicts = 0
        self.cache_hits = 0
        self.judge_calls = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.cost_usd = 0.0
        self.judge_seconds = 0.0
        self.dry_run_misses = 0
        self.coalesced = 0
        self.lock = threading.Lock()

    def __repr__(self) -> str:
        counts = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.COUNTERS)
        return f"JudgeStats({counts})"
