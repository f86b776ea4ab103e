"""``cache ... --store URL``: the cache commands on the shared store (stats, export, import,
prune, repair) and ``cache push``, which sends a local cache's verdicts up."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ..store.base import Closing
from ..store.cache import CacheError, InvalidRecordError, VerdictCache
from ..store.cache_record import export_line, read_lines, stored_record
from ..store.shared import open_shared_store
from ..store.tiered import push_command, repair_command


class StoreCommandError(CacheError):
    """A cache command that cannot run on a store as asked; the message says why."""


class StoreCommands(Closing):
    """One store (and the local cache beside it, for push and prune) for one command."""

    def __init__(
        self, url: str, directory: Path, warn: Callable[[str], None], query_timeout: float
    ) -> None:
        self.store = open_shared_store(url, query_timeout=query_timeout)
        self.where = self.store.where
        self.directory = directory
        self._warn = warn
        #: Damaged rows found (key -> what is wrong); each was named in a warning.
        self.damaged: dict[str, str] = {}

    def close(self) -> None:
        self.store.close()

    def run(self, action: str, *, replace: bool = False) -> int:
        if action == "stats":
            self._stats()
        elif action == "push":
            return self._push(replace=replace)
        elif action == "repair":
            return self._repair()
        elif action == "prune":
            self._prune()
        else:
            raise StoreCommandError(
                f"'cache {action}' does not act on a shared store: run it on a local cache "
                "(without --store, and with PROP_STORE unset)"
            )
        return 0

    def export_lines(self) -> Iterator[str]:
        """The store's verdicts as the local cache exports them: one sorted canonical line each.

        A damaged row is named in a warning and left out (``damaged`` says which)."""
        for key, _text, record in self._checked_rows():
            if record is not None:
                yield export_line(key, record)

    def _checked_rows(self) -> Iterator[tuple[str, str, dict[str, Any] | None]]:
        """Each row of the store, sorted by key, with its record; None for a damaged one, which
        is named in a warning."""
        for key, text in self.store.records():
            try:
                record: dict[str, Any] | None = stored_record(text)
            except InvalidRecordError as problem:
                self._damaged_row(key, str(problem))
                record = None
            yield key, text, record

    def import_lines(self, name: str, lines: list[str]) -> int:
        """Every line checked; the good ones inserted if absent (the store keeps a verdict it
        has), each bad one named. Exit code 1 when a line was bad."""
        entries, bad = read_lines(lines)
        for error in bad:
            self._warn(f"{name}:{error.lineno}: {error.expected}; this line was not imported")
        new, standing = self.store.insert_many(entries)
        kept = sum(1 for key, text in entries.items() if standing.get(key) != text)
        print(
            f"imported {new} verdicts into {self.where}"
            + (
                f"; {kept} it already held differently were kept (the first stored wins)"
                if kept
                else ""
            )
            + (f"; {len(bad)} bad line(s) of {name} left out" if bad else "")
        )
        return 1 if bad else 0

    def _damaged_row(self, key: str, problem: str) -> None:
        self.damaged[key] = problem
        self._warn(f"the verdict store {self.where} holds a damaged record {key} ({problem[:300]})")

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

    def _push(self, *, replace: bool) -> int:
        """This machine's verdicts up: what the store lacks is added, and the local cache is
        never changed. ``replace`` (the owner's): the store takes this machine's verdicts."""
        with self._local() as cache:
            entries, bad = read_lines(cache.export_lines())
            for error in bad:
                self._warn(
                    f"a record of the verdict cache at {self.directory} was not pushed: "
                    f"{error.expected}"
                )
            local_damage = len(cache.damaged) + len(bad)
        if replace:
            changed = self.store.replace_many(entries)
            print(
                f"pushed {len(entries)} verdicts from {self.directory} to {self.where}, "
                f"replacing what it held: {changed} added or replaced, "
                f"{len(entries) - changed} already the same"
            )
            return 1 if local_damage else 0
        new, standing = self.store.insert_many(entries)
        differ = damaged = 0
        for key, text in sorted(standing.items()):
            if text == entries[key]:
                continue
            try:
                theirs = stored_record(text)
            except InvalidRecordError as problem:
                damaged += 1
                self._damaged_row(key, str(problem))
                continue
            mine = json.loads(entries[key])
            if theirs["verdict"]["value"] != mine["verdict"]["value"]:
                differ += 1
        notes = []
        if differ:
            notes.append(
                f"{differ} with a different value: the store's stands for the fleet, this "
                f"machine keeps its own; the store's owner makes this machine's the fleet's with "
                f"'{push_command(self.where, replace=True)}'"
            )
        if damaged:
            notes.append(
                f"{damaged} damaged in the store (named above), left as they are: its owner "
                f"removes them with '{repair_command(self.where)}', then push again"
            )
        print(
            f"pushed {len(entries)} verdicts from {self.directory} to {self.where}: {new} new, "
            f"{len(entries) - new} already there; the local cache is unchanged"
            + "".join(f"\n  {note}" for note in notes)
        )
        return 1 if damaged or local_damage else 0

    def _repair(self) -> int:
        """Remove the store's damaged rows (the owner's: the role needs DELETE); a run or
        'cache push' then stores good verdicts in their place."""
        found = {key: text for key, text, record in self._checked_rows() if record is None}
        removed = self.store.delete_records(found)
        print(
            f"removed {removed} damaged record(s) from {self.where}"
            + (
                f" ({len(found) - removed} changed meanwhile and were left)"
                if removed < len(found)
                else ""
            )
            + (
                "; 'cache push' or the next run stores good verdicts in their place"
                if removed
                else ""
            )
        )
        self.damaged.clear()  # removed: no longer an incomplete result
        return 0

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
