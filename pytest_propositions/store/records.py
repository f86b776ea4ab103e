"""What the disk cache keeps and how it fails (the one module that imports diskcache): its error types, the usage record prune reads,
the reserved keys, and reading one verdict record back (damage is an error, never a quiet miss).

Every cached claim needs these; what only maintenance needs (export, import, prune, stats, the
checks of a record on its way in) is ``maintenance.py``'s, loaded when it is asked for.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

from .keys import canonical_json


def db_path(directory: Path) -> Path:
    """The sqlite file diskcache keeps in the directory (its own constant, read from it, not
    copied); the file's presence is what "a cache exists" means."""
    from diskcache.core import DBNAME

    name: str = DBNAME
    return directory / name


# diskcache evicts past 1 GB by default; a verdict must never vanish silently.
_SETTINGS: dict[str, Any] = {
    "size_limit": 2**62,
    "eviction_policy": "none",
    "cull_limit": 0,
    "statistics": 0,
    "tag_index": 0,
    # Keep records inside cache.db (not side files) so the database alone is the whole cache.
    "disk_min_file_size": 2**22,
}


def open_database(directory: Path) -> Any:
    """diskcache's Cache over ``directory``, with the settings above (diskcache is untyped)."""
    import diskcache

    return diskcache.Cache(str(directory), **_SETTINGS)


def text_modes() -> tuple[int, int]:
    """diskcache's codes for a value kept in its row as is, and as text (MODE_RAW, MODE_TEXT)."""
    from diskcache.core import MODE_RAW, MODE_TEXT

    return MODE_RAW, MODE_TEXT


# Reserved keys: never 64 hex digits, so they cannot collide with a verdict key.
META_USAGE = "meta:usage"


# Written before usage was gathered over runs (one run's keys); still read, as one run.
META_COMPLETE_RUN = "meta:complete-run"


META_KEYS = (META_USAGE, META_COMPLETE_RUN)


class CacheError(Exception):
    """Base of the errors the verdict cache raises on purpose."""


class CacheDirectoryError(CacheError, OSError):
    """The cache directory cannot be created, opened or moved; the message names the path."""


class CacheDamagedError(CacheDirectoryError):
    """The cache is damaged and could not be moved aside (say, a read-only directory)."""


class CacheReadOnlyError(CacheDirectoryError):
    """The cache can be read but not written: a read-only directory or database file."""


class InvalidRecordError(CacheError, ValueError):
    """A record to store is not a valid verdict record; the message says what was expected."""


class ImportLineError(CacheError, ValueError):
    """A line of an import is malformed; nothing of that import was written."""

    def __init__(self, lineno: int, expected: str) -> None:
        super().__init__(f"line {lineno}: {expected}")
        self.lineno = lineno
        self.expected = expected


class NoUsageRecordedError(CacheError):
    """Prune was asked for, but no run has said which verdicts it used since the last prune."""


class CacheWarning(UserWarning):
    """The cache was damaged and rebuilt; the run goes on with the verdicts judged again."""


class Usage(NamedTuple):
    """Which verdicts the finished runs since the last prune used: what prune keeps. (This and
    CacheStats are named tuples: every run that reads the cache defines them, and a dataclass
    costs several times more to define.)"""

    since: datetime  # when the first of those runs started
    last_finished: datetime
    runs: int
    keys: frozenset[str]

    def to_json(self) -> str:
        return canonical_json(
            {
                "since": self.since.timestamp(),
                "last_finished": self.last_finished.timestamp(),
                "runs": self.runs,
                "keys": sorted(self.keys),
            }
        )

    @classmethod
    def from_json(cls, text: str) -> Usage:
        data = json.loads(text)
        return cls(
            since=datetime.fromtimestamp(float(data["since"]), UTC),
            last_finished=datetime.fromtimestamp(float(data["last_finished"]), UTC),
            runs=int(data["runs"]),
            keys=frozenset(str(key) for key in data["keys"]),
        )

    @classmethod
    def from_complete_run(cls, text: str) -> Usage:
        """An older version's record of one complete run (it kept no start time)."""
        data = json.loads(text)
        ended = datetime.fromtimestamp(float(data["timestamp"]), UTC)
        keys = frozenset(str(key) for key in data["keys"])
        return cls(since=ended, last_finished=ended, runs=1, keys=keys)


def read_usage(cache: Any) -> Usage | None:
    """The usage record, or an older complete-run record read as one run; None if neither."""
    for meta, read in (
        (META_USAGE, Usage.from_json),
        (META_COMPLETE_RUN, Usage.from_complete_run),
    ):
        text = cache.get(meta)
        if isinstance(text, str):
            try:
                return read(text)
            except (ValueError, KeyError, TypeError):
                return None  # damaged bookkeeping: as if no run had recorded usage
    return None


class RecordDamage(Exception):
    """One stored record cannot be read back as a verdict record; the message says why."""


def read_record(cache: Any, key: str) -> dict[str, Any] | None:
    """The record stored under ``key``, None if there is none; RecordDamage if unreadable.

    diskcache keeps a large record in a side file: a garbled one fails to decode, a deleted
    one reads as absent although its row is still there. Both are damage, not a quiet miss.
    """
    try:
        text = cache.get(key)
    except (UnicodeDecodeError, OSError) as exc:
        raise RecordDamage(f"its side file cannot be read: {exc}") from None
    if text is None:
        if key in cache:
            raise RecordDamage("its side file is missing")
        return None
    if type(text) is not str:
        raise RecordDamage(f"expected JSON text, found {type(text).__name__}")
    try:
        record = json.loads(text)
    except ValueError as exc:
        raise RecordDamage(f"not JSON: {exc}") from None
    if type(record) is not dict:
        raise RecordDamage(f"expected a JSON object, found {type(record).__name__}")
    return record
