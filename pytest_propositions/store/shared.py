"""``SharedStore``: what the run and the store commands need of a verdict store that every
machine of a fleet shares, and the one place that opens one.

PostgreSQL (``store.postgres``, the optional ``[postgres]`` extra) implements it; nothing else
in the package names that module: a run, a report or a command reaches it through
``open_shared_store`` and ``describe_store`` here, which import it on first use, so a run
without ``--prop-store`` never loads it. Its errors are ``store.errors``' ``StoreError`` family.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from .postgres import StoreStats

__all__ = ["SharedStore", "describe_store", "open_shared_store"]


class SharedStore(Protocol):
    """Verdict records as JSON text by cache key, shared by every machine; the first record
    stored for a key is the fleet's. A failure raises ``StoreUnavailable`` (never reached) or
    ``StoreLost`` (reached once, gone now)."""

    @property
    def where(self) -> str:
        """The store as messages name it, never with a password."""
        ...

    def connect(self) -> None:
        """Reach the store now (creating or migrating what it keeps)."""

    def get(self, key: str) -> str | None:
        """The record stored for ``key``, or None."""

    def insert(self, key: str, text: str) -> str:
        """Store ``text`` under ``key`` unless a record is there; the record that stands."""

    def upsert(self, key: str, text: str) -> str:
        """Store ``text`` under ``key``, replacing a record there."""

    def insert_many(self, items: Mapping[str, str]) -> tuple[int, dict[str, str]]:
        """Insert-if-absent for each pair: how many were new, and the record standing per key."""

    def replace_many(self, items: Mapping[str, str]) -> int:
        """Store each pair, replacing what is there; how many rows were added or changed."""

    def delete_records(self, rows: Mapping[str, str]) -> int:
        """Remove each row whose record is still the text given; how many were removed."""

    def delete_unused(self, used: Iterable[str], stored_before: datetime) -> int:
        """Remove records not in ``used`` stored before ``stored_before``; how many."""

    def records(self) -> Iterator[tuple[str, str]]:
        """Every (key, record text), sorted by key."""

    def stats(self) -> StoreStats:
        """What the store holds, for ``cache stats --store``."""

    def close(self) -> None: ...


def open_shared_store(url: str, *, query_timeout: float) -> SharedStore:
    """The store at ``url`` (a PostgreSQL URL); nothing is reached before its first call."""
    from .postgres import PostgresStore

    return PostgresStore(url, query_timeout=query_timeout)


def describe_store(url: str) -> str:
    """The store at ``url`` as messages name it: its address, never its password."""
    from .postgres import describe_store as described

    return described(url)
