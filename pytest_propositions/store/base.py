"""``VerdictStore``: what every place that keeps verdicts gives the judge and the run; and
``Closing``, what makes each of them (and a store command) a context manager.

The disk cache (``cache.VerdictCache``) implements it, and so does the shared tier over it
(``tiered.SharedVerdictCache``); a new place to keep verdicts implements it too.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, Self

if TYPE_CHECKING:
    from ..settings import CacheMode


class RecordedVerdicts(Protocol):
    """What is read of the disk cache on this machine beside the judge's traffic (the disk
    cache, ``cache.VerdictCache``, is one): here, below it, so this seam imports no store."""

    def records(self, *, verdicts: bool = True) -> Iterator[tuple[str, dict[str, Any]]]:
        """Every (key, record) holding a readable verdict, sorted by key."""


class VerdictStore(Protocol):
    """Verdict records by cache key, in one of the cache modes."""

    @property
    def mode(self) -> CacheMode:
        """use, replay, refresh or off: whether records are read and written."""

    @property
    def used_keys(self) -> set[str]:
        """The keys this process read or stored (a run tells ``cache prune`` to keep them)."""

    @property
    def disk(self) -> RecordedVerdicts:
        """The disk cache on this machine (itself, for the disk cache): what a replay miss is
        explained from."""

    def get(self, key: str, kind: str | None = None) -> dict[str, Any] | None:
        """The stored record for ``key``, or None; a record of the other kind is a miss."""

    def put(self, key: str, record: Mapping[str, Any]) -> Mapping[str, Any]:
        """Store a checked record; returns the record that stands for ``key`` (another
        process's, when a shared store already held one)."""

    def prepare_write(self) -> None:
        """Before a paid call: raise if its verdict could not be stored."""

    def record_usage(self, used: Iterable[str], started_at: datetime) -> None:
        """Note the keys a finished run used, for ``cache prune``."""

    def store_counts(self) -> dict[str, int]:
        """A shared store's counters for the summary (none for the disk cache alone)."""

    def close(self) -> None: ...


class Closing:
    """What ``with`` closes on the way out: a cache, a store, a command's connection."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
