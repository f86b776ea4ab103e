"""Two levels of verdicts: this machine's disk cache first, the fleet's shared store second.

A local miss asks the store, and a store hit is copied to disk; a new verdict goes to the store
first (the first one stored wins, fleet-wide) and then to disk, so both hold the same verdict.
A store lost mid-run leaves verdicts on disk only, counted, to be pushed later.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from ..settings import CacheMode, cache_mode
from .cache import VerdictCache
from .cache_record import record_text, stored_record
from .errors import NOTHING_JUDGED, InvalidRecordError, StoreError, StoreLost, StoreUnavailable
from .shared import SharedStore

__all__ = [
    "STORE_COUNTERS",
    "SharedVerdictCache",
    "push_command",
    "repair_command",
    "store_summary",
]

_T = TypeVar("_T")

#: The counters the summary shows; xdist workers send them to the controller (session.py).
STORE_COUNTERS = (
    "store_hits",
    "store_shared",
    "store_races",
    "store_unshared",
    "store_unreplaced",
    "store_damaged",
)


def push_command(where: str, *, replace: bool = False) -> str:
    """The command that sends verdicts the store did not get; the store named without secrets.
    ``replace``: the owner's, which replaces the stored verdicts with this machine's."""
    flag = " --replace" if replace else ""
    return f"python -m pytest_propositions cache push{flag} --store {where}"


def repair_command(where: str) -> str:
    """The owner's command that removes a store's damaged rows."""
    return f"python -m pytest_propositions cache repair --store {where}"


class SharedVerdictCache:
    """The disk cache first, then a :class:`~.shared.SharedStore`: a ``base.VerdictStore`` made of the
    two (it holds a :class:`VerdictCache`, ``disk``, rather than extending one)."""

    def __init__(
        self,
        directory: str | os.PathLike[str],
        mode: CacheMode = "use",
        *,
        store: SharedStore,
        warn: Callable[[str], None] | None = None,
    ) -> None:
        self.disk = VerdictCache(directory, mode, warn=warn)
        self.store = store
        #: What the store served, took, and did not (STORE_COUNTERS), for the summary.
        self.counts = dict.fromkeys(STORE_COUNTERS, 0)
        self._reached = False
        self._failed: StoreError | None = None
        self._lost: str | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"SharedVerdictCache({str(self.directory)!r}, mode={self.mode!r}, {self.store!r})"

    @property
    def mode(self) -> CacheMode:
        return self.disk.mode

    @property
    def used_keys(self) -> set[str]:
        return self.disk.used_keys

    @property
    def directory(self) -> Path:
        return self.disk.directory

    def store_counts(self) -> dict[str, int]:
        with self._lock:
            return {**self.counts, **self.disk.store_counts()}

    def record_usage(self, used: Iterable[str], started_at: datetime) -> None:
        self.disk.record_usage(used, started_at)

    # -- the judge's traffic --

    def get(self, key: str, kind: str | None = None) -> dict[str, Any] | None:
        record = self.disk.get(key, kind)
        if record is not None or not cache_mode(self.mode).reads:
            return record
        text = self._on_store(self.store.get, key)
        if text is None:
            return None
        try:
            record = stored_record(text, kind)
        except InvalidRecordError as problem:
            self._store_damaged(key, str(problem))
            return None
        self.disk.served_elsewhere(key)
        self._count("store_hits")
        if cache_mode(self.mode).writes:
            # A copy on disk: the next run on this machine needs no round trip for it.
            self.disk.keep_copy(key, record)
        return record

    def prepare_write(self) -> None:
        """Before a paid call: the disk cache must take the verdict, and the store (if not
        lost) must be reachable; a store that never answered stops here, before the judge."""
        self.disk.prepare_write()
        if cache_mode(self.mode).writes and not self._reached:
            self._on_store(self.store.connect)

    def put(self, key: str, record: Mapping[str, Any]) -> Mapping[str, Any]:
        """Store ``record`` in the store, then on disk; returns the record that stands.

        When another process stored a verdict for ``key`` first, that one stands: it is what
        this process keeps and uses, so every machine reports the same verdict. A damaged row
        there is left as it is (the owner's 'cache repair' removes it): this verdict stands
        here and is kept on disk, so this machine pays for it once.
        """
        text = record_text(record)
        standing: Mapping[str, Any] = record
        if cache_mode(self.mode).writes:
            write = self.store.upsert if cache_mode(self.mode).replaces else self.store.insert
            stored = self._on_store(write, key, text, writing=True)
            damaged = False
            if stored is not None and stored != text:
                try:
                    standing = stored_record(stored, str(record.get("kind") or "") or None)
                except InvalidRecordError as problem:
                    damaged = True
                    self._store_damaged(key, str(problem))
            if stored is None:
                replaced = cache_mode(self.mode).replaces
                self._count("store_unreplaced" if replaced else "store_unshared")
            elif stored == text:
                self._count("store_shared")
            elif not damaged:
                self._count("store_races")
        self.disk.put(key, standing)
        return standing

    def close(self) -> None:
        self.disk.close()
        self.store.close()

    # -- the store's faults --

    def _on_store(self, call: Callable[..., _T], *args: Any, writing: bool = False) -> _T | None:
        """A call to the store. The first contact failing is an error for this claim and every
        later one (no judge is paid); once reached, losing it means working locally (None)."""
        if self._failed is not None:
            raise type(self._failed)(str(self._failed)) from None
        if self._lost is not None:
            return None
        try:
            result = call(*args)
        except StoreError as error:
            if not self._reached:
                if isinstance(error, StoreLost):
                    # Silent or dropped before it ever answered a claim: as if unreachable, so
                    # the run stops here rather than fail every claim the same way.
                    error = StoreUnavailable(f"{error}{NOTHING_JUDGED}")
                self._failed = error
                raise error.with_traceback(None) from None
            if isinstance(error, StoreLost) or writing:
                self._mark_lost(str(error), refused=not isinstance(error, StoreLost))
                return None
            raise error.with_traceback(None) from None
        self._reached = True
        return result

    def _mark_lost(self, reason: str, *, refused: bool = False) -> None:
        with self._lock:
            self._lost = self._lost or reason
        where = self.store.where
        if cache_mode(self.mode).replaces:
            what = "refused the refreshed verdict" if refused else "is lost"
            message = (
                f"{reason}. The store {what}: verdicts refreshed from now on replace those of "
                "the local cache only, and the store keeps its own. Its owner (a role that may "
                f"UPDATE) replaces them with this machine's: '{push_command(where, replace=True)}'"
            )
        else:
            message = (
                f"{reason}. Verdicts judged from now on are kept in the local cache only; the "
                f"summary says how many were not shared: send them with '{push_command(where)}'"
            )
        self.disk.warn_once("store-lost", message)

    def _store_damaged(self, key: str, problem: str) -> None:
        """A row that is no verdict of this request: named once, a miss, never overwritten."""
        if self.disk.warn_once(
            f"store-row:{key}",
            f"the verdict store {self.store.where} holds a damaged record {key} "
            f"({problem[:300]}); treating it as a miss: a verdict judged here is kept in the "
            f"local cache, and the row is left as it is. Its owner removes damaged rows "
            f"with '{repair_command(self.store.where)}'; 'cache push' then refills them",
        ):
            self._count("store_damaged")

    def _count(self, name: str) -> None:
        with self._lock:
            self.counts[name] += 1


def store_summary(counts: Mapping[str, float], where: str) -> list[str]:
    """The summary's lines about the store: what it served and took, and what it did not get."""
    hits, shared, races, unshared, unreplaced, damaged = (
        int(counts.get(name, 0)) for name in STORE_COUNTERS
    )
    lines = [
        f"propositions: verdict store {where}: {hits} read from it, {shared} stored in it, "
        f"{races} judged elsewhere first (their stored verdict was used)"
    ]
    if unshared:
        lines.append(
            f"propositions: {unshared} verdict{'s' if unshared != 1 else ''} NOT shared (the "
            "store was lost or refused them); they are in the local cache: send them with "
            f"'{push_command(where)}'"
        )
    if unreplaced:
        lines.append(
            f"propositions: {unreplaced} refreshed verdict{'s' if unreplaced != 1 else ''} NOT "
            "written to the store (it was lost or refused the update); they are in the local "
            f"cache: the store's owner replaces the stored ones with "
            f"'{push_command(where, replace=True)}'"
        )
    if damaged:
        lines.append(
            f"propositions: {damaged} damaged record{'s' if damaged != 1 else ''} in the store "
            "(named above) were not used; their claims were judged here and kept in the local "
            f"cache. The store's owner removes them with '{repair_command(where)}', then "
            f"'{push_command(where)}' refills them"
        )
    return lines
