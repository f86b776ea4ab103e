"""``cache ... --store URL``: the cache commands on the shared store (stats, export, import,
prune) and ``cache push``, which sends a local cache's verdicts up."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from types import TracebackType

from ..store.cache import CacheError, ImportLineError, VerdictCache, _parse_line, canonical_json
from ..store.postgres import PostgresStore


class StoreCommandError(CacheError):
    """A cache command that cannot run on a store as asked; the message says why."""


class StoreCommands:
    """One store (and the local cache beside it, for push and prune) for one command."""

    def __init__(self, url: str, directory: Path, warn: Callable[[str], None]) -> None:
        self.store = PostgresStore(url)
        self.where = self.store.where
        self.directory = directory
        self._warn = warn

    def __enter__(self) -> StoreCommands:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.store.close()

    def run(self, action: str) -> int:
        if action == "stats":
            self._stats()
        elif action == "push":
            self._push()
        elif action == "prune":
            self._prune()
        else:
            raise StoreCommandError(
                f"'cache {action}' does not act on a shared store: run it on a local cache "
                "(without --store, and with PROP_STORE unset)"
            )
        return 0

    def export_lines(self) -> Iterator[str]:
        """The store's verdicts as the local cache exports them: one sorted canonical line each."""
        for key, text in self.store.records():
            yield canonical_json({"key": key, "record": json.loads(text)}) + "\n"

    def import_lines(self, name: str, lines: list[str]) -> int:
        """Every line checked first; then insert-if-absent: the store keeps a verdict it has."""
        entries: dict[str, str] = {}
        for lineno, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                key, text = _parse_line(lineno, line.strip())
            except ImportLineError as error:
                raise StoreCommandError(f"{name}:{error.lineno}: {error.expected}") from None
            entries[key] = text
        new, standing = self.store.insert_many(entries)
        kept = sum(1 for key, text in entries.items() if standing.get(key) != text)
        print(
            f"imported {new} verdicts into {self.where}"
            + (
                f"; {kept} it already held differently were kept (the first stored wins)"
                if kept
                else ""
            )
        )
        return 0

    def _stats(self) -> None:
        stats = self.store.stats()
        print(f"store: {stats.where}")
        print(f"schema version: {stats.schema_version}")
        print(f"entries: {stats.entries}")
        print(f"size: {stats.size_bytes} bytes (rows)")
        if stats.models:
            print("models:")
            for model, count in stats.models.items():
                print(f"  {model}: {count}")
        else:
            print("models: -")
        print(f"oldest: {stats.oldest.isoformat() if stats.oldest else '-'}")
        print(f"newest: {stats.newest.isoformat() if stats.newest else '-'}")

    def _local(self) -> VerdictCache:
        cache = VerdictCache(self.directory, warn=self._warn)
        if not cache.exists:
            raise StoreCommandError(f"no verdict cache at {self.directory}")
        return cache

    def _push(self) -> None:
        with self._local() as cache:
            entries: dict[str, str] = {}
            for lineno, line in enumerate(cache.export_lines(), start=1):
                key, text = _parse_line(lineno, line.strip())
                entries[key] = text
            new, standing = self.store.insert_many(entries)
            differ = {key: text for key, text in standing.items() if entries.get(key) != text}
            if differ:
                # The store's verdict is the fleet's: this machine takes it too.
                cache.import_lines(
                    canonical_json({"key": key, "record": json.loads(text)})
                    for key, text in differ.items()
                )
        print(
            f"pushed {len(entries)} verdicts from {self.directory} to {self.where}: {new} new, "
            f"{len(entries) - new} already there"
            + (f" ({len(differ)} differently: the local cache took the store's)" if differ else "")
        )

    def _prune(self) -> None:
        with self._local() as cache:
            usage = cache.usage()
        if usage is None:
            raise StoreCommandError(
                f"no test run has recorded which verdicts it used in the verdict cache at "
                f"{self.directory}; prune on a store removes the verdicts those runs did not use "
                "(stored before the first of them started), so run the tests here first"
            )
        count = self.store.delete_unused(usage.keys, usage.since)
        print(
            f"pruned {count} verdicts not used by the {usage.runs} run(s) recorded in "
            f"{self.directory} since {usage.since.isoformat()} from {self.where}"
        )
