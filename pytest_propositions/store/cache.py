"""The verdict cache: judge verdicts on disk, keyed by the fully rendered request.

It owns the record modes, the store that pytest-xdist workers share, damage recovery, and the
export/import/prune maintenance the CLI exposes; the key rules are keys.py's.
diskcache is imported only when the cache is first touched, so importing this module is cheap.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, NamedTuple, TypeVar

from ..verdict import kind_problem, verdict_of_record
from .keys import CACHE_FORMAT, KEY_PATTERN, _check_names, cache_key, canonical_json

__all__ = [
    "CACHE_FORMAT",
    "CACHE_MODES",
    "CacheDamagedError",
    "CacheDirectoryError",
    "CacheError",
    "CacheMode",
    "CacheReadOnlyError",
    "CacheStats",
    "CacheWarning",
    "ImportLineError",
    "InvalidRecordError",
    "NoUsageRecordedError",
    "Usage",
    "VerdictCache",
    "cache_key",
    "canonical_json",
]


CacheMode = Literal["use", "replay", "refresh", "off"]
CACHE_MODES: tuple[str, ...] = ("use", "replay", "refresh", "off")

_READ_MODES = frozenset({"use", "replay"})
_WRITE_MODES = frozenset({"use", "refresh"})


def _db_path(directory: Path) -> Path:
    """The sqlite file diskcache keeps in the directory (its own constant, read from it, not
    copied); the file's presence is what "a cache exists" means."""
    from diskcache.core import DBNAME

    name: str = DBNAME
    return directory / name


# Reserved keys: never 64 hex digits, so they cannot collide with a verdict key.
_META_USAGE = "meta:usage"
# Written before usage was gathered over runs (one run's keys); still read, as one run.
_META_COMPLETE_RUN = "meta:complete-run"
_META_KEYS = (_META_USAGE, _META_COMPLETE_RUN)


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

_T = TypeVar("_T")


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


class CacheStats(NamedTuple):
    """What the cache holds, for ``cache stats`` and the terminal summary."""

    directory: Path
    models: dict[str, int]
    entries: int = 0
    size_bytes: int = 0
    oldest: datetime | None = None
    newest: datetime | None = None
    usage: Usage | None = None


# --- keys and records --------------------------------------------------------------------


def _parse_time(text: str) -> datetime:
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is None:
        raise ValueError("no time zone")
    return moment


def _record_text(record: Any) -> str:
    """Validate a verdict record and return its canonical JSON text."""
    if not isinstance(record, Mapping):
        raise InvalidRecordError(f"expected a JSON object, got {type(record).__name__}")
    model = record.get("model")
    if not isinstance(model, str) or not model:
        raise InvalidRecordError('expected "model" to be a non-empty string')
    recorded_at = record.get("recorded_at")
    if not isinstance(recorded_at, str):
        raise InvalidRecordError('expected "recorded_at" to be an ISO-8601 UTC time string')
    try:
        _parse_time(recorded_at)
    except ValueError:
        raise InvalidRecordError(
            f'expected "recorded_at" to be an ISO-8601 time with a zone, got {recorded_at!r}'
        ) from None
    try:
        text = canonical_json(dict(record))
        text.encode("utf-8")  # sqlite stores UTF-8: a lone surrogate would fail there instead
    except (TypeError, ValueError) as exc:
        raise InvalidRecordError(f"expected a JSON-serializable record: {exc}") from None
    try:
        _check_names(record, "", "verdict record")
    except ValueError as exc:
        raise InvalidRecordError(str(exc)) from None
    # pydantic is loaded here: records arrive only from live judging and imports.
    from ..verdict import check_stored_verdict

    try:
        check_stored_verdict(record.get("verdict"))
    except ValueError as exc:
        raise InvalidRecordError(f'bad "verdict": {exc}') from None
    try:
        _check_kind(dict(record), None, "")
    except _RecordDamage as damage:
        raise InvalidRecordError(str(damage)) from None
    return text


def stored_record(text: str, kind: str | None = None) -> dict[str, Any]:
    """A record's text as read from outside this machine (a shared store's row), checked as an
    import line is, and for the request's ``kind``; InvalidRecordError saying what is wrong."""
    try:
        record = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise InvalidRecordError(f"not JSON: {exc}") from None
    _record_text(record)
    if kind is not None:
        try:
            _check_kind(record, kind, "")
        except _RecordDamage as damage:
            raise InvalidRecordError(str(damage)) from None
    return dict(record)


# --- damage --------------------------------------------------------------------------------


def _is_corruption(exc: BaseException) -> bool:
    """True for sqlite's "this file is damaged" errors, not for locks or permissions."""
    name = getattr(exc, "sqlite_errorname", None)
    if isinstance(name, str) and name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")):
        return True
    if type(exc).__module__ != "sqlite3":
        return False
    message = str(exc)
    return "malformed" in message or "not a database" in message


def _file_identity(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


# --- the cache -----------------------------------------------------------------------------


class VerdictCache:
    """Verdict records in a diskcache directory that many processes share.

    The mode governs ``get``/``put`` only, the judge's traffic; the maintenance methods
    (``prune``, ``clear``, ``import_lines``...) act whatever the mode. Reads never create the
    directory; only writes do.
    """

    def __init__(
        self,
        directory: str | os.PathLike[str],
        mode: CacheMode = "use",
        *,
        warn: Callable[[str], None] | None = None,
    ) -> None:
        if mode not in CACHE_MODES:
            raise ValueError(f"cache mode must be one of {', '.join(CACHE_MODES)}; got {mode!r}")
        self.directory: Path = Path(directory).expanduser().absolute()
        self.mode: CacheMode = mode
        self.hits = 0
        self.misses = 0
        self.used_keys: set[str] = set()
        self._warn = warn
        self._warned = False
        self._warned_about: set[str] = set()
        #: Records found damaged (key -> what is wrong); each was warned about once and missed.
        self.damaged: dict[str, str] = {}
        #: True once the cache turned out readable but not writable; writes are then skipped.
        self.read_only = False
        self._lock = threading.RLock()
        self._cache: Any = None  # a diskcache.Cache once opened; diskcache is untyped
        self._db_identity: tuple[int, int] | None = None

    def __repr__(self) -> str:
        return f"VerdictCache({str(self.directory)!r}, mode={self.mode!r})"

    @property
    def disk(self) -> VerdictCache:
        """This cache (``base.VerdictStore``: the disk cache behind a store)."""
        return self

    def store_counts(self) -> dict[str, int]:
        """No shared store here (``base.VerdictStore``)."""
        return {}

    def served_elsewhere(self, key: str) -> None:
        """A miss here that a shared store served: counted as a hit, and the key as used."""
        with self._lock:
            self.hits += 1
            self.misses -= 1
        self.used_keys.add(key)

    def keep_copy(self, key: str, record: Mapping[str, Any]) -> None:
        """A copy of a record another store served (and checked), so the next run needs no
        round trip for it; a cache that cannot be written says so once."""
        text = canonical_json(record)
        if self.read_only:
            return
        stamp = time.time()
        try:
            self._call(lambda c: c.set(key, text, tag=stamp, retry=True), create=True)
        except OSError as error:
            self._warn_once(
                "store-copy", f"cannot copy store verdicts to {self.directory}: {error}"
            )

    @property
    def exists(self) -> bool:
        """Whether a cache database is there; reading a missing one must not create it."""
        try:
            return _db_path(self.directory).is_file()
        except OSError as exc:
            raise CacheDirectoryError(
                f"cannot read the verdict cache at {self.directory}: {exc.strerror or exc}"
            ) from exc

    # -- the judge's traffic (hot path) --

    def get(self, key: str, kind: str | None = None) -> dict[str, Any] | None:
        """The stored record for ``key``, or None; hits + misses counts every call.

        With the request's ``kind``, a record that holds no readable verdict of that kind is
        damage: one warning naming it, and a miss."""
        if self.mode in _READ_MODES:
            cache = self._cache
            if cache is None:
                cache = self._open_for_reading()
            if cache is not None:
                record = None
                try:
                    record = _read_record(cache, key)
                    if record is not None and kind is not None:
                        problem = kind_problem(record, kind)
                        if problem is not None:
                            raise _RecordDamage(problem)
                except _RecordDamage as damage:
                    record = None
                    self._record_damaged(key, damage)
                except Exception as exc:
                    self._recover(cache, exc)
                if record is not None:
                    with self._lock:
                        self.hits += 1
                    self.used_keys.add(key)
                    return record
        with self._lock:
            self.misses += 1
        return None

    def put(self, key: str, record: Mapping[str, Any]) -> Mapping[str, Any]:
        """Store ``record`` under ``key`` (use/refresh); validated in every mode.

        Returns the record that stands for ``key``: here the one given; a shared store's may be
        another process's (``tiered.SharedVerdictCache``, ``base.VerdictStore``)."""
        if not isinstance(key, str) or not KEY_PATTERN.fullmatch(key):
            raise ValueError(f"expected a cache key from cache_key(), got {key!r}")
        text = _record_text(record)
        self.used_keys.add(key)
        if self.mode in _WRITE_MODES:
            if self.read_only:
                self._skip_write(None)
                return record
            stamp = time.time()
            try:
                self._call(lambda c: c.set(key, text, tag=stamp, retry=True), create=True)
            except CacheReadOnlyError as exc:
                self._skip_write(exc)
        return record

    def prepare_write(self) -> None:
        """Before a live (paid) judge call: make sure its verdict can be stored.

        Raises CacheDirectoryError when the cache cannot be created or written, so nothing is
        judged only to be thrown away. A cache that can be read but not written (a read-only
        mount) is allowed in "use" mode: its verdicts are served, new ones are not stored, and
        one warning says so.
        """
        if self.mode not in _WRITE_MODES:
            return
        if not self.read_only:
            with contextlib.suppress(CacheReadOnlyError):
                self._open(create=True)
        if self.read_only:
            if self.mode == "refresh":
                raise CacheReadOnlyError(
                    f"the verdict cache at {self.directory} cannot be written, and "
                    "--prop-cache=refresh exists to rewrite it; use --prop-cache=use or replay, "
                    "or give a writable --prop-cache-dir"
                )
            self._skip_write(None)

    def _skip_write(self, exc: BaseException | None) -> None:
        reason = f" ({exc})" if exc is not None else ""
        self._warn_once(
            "read-only",
            f"the verdict cache at {self.directory} is read-only{reason}: its verdicts are "
            "read, but new verdicts are not stored and will be judged again next run",
        )

    def mark_used(self, key: str) -> None:
        """Count ``key`` as still needed, so prune keeps it."""
        self.used_keys.add(key)

    # -- usage and pruning --

    def record_usage(self, used: Iterable[str], started_at: datetime) -> None:
        """Add one finished run's verdict keys to the usage that prune keeps.

        A no-op in "off" mode (the cache is not touched at all) and on a read-only cache (prune
        cannot run there anyway).
        """
        keys = {key for key in used if isinstance(key, str)}
        if self.mode == "off" or (self.mode == "replay" and not self.exists) or self.read_only:
            return
        now = datetime.now(UTC)

        def op(cache: Any) -> None:
            with cache.transact(retry=True):  # runs finishing together both count
                before = _read_usage(cache)
                usage = Usage(
                    since=min(started_at, before.since) if before else started_at,
                    last_finished=now,
                    runs=(before.runs if before else 0) + 1,
                    keys=frozenset(keys | (before.keys if before else frozenset())),
                )
                cache.set(_META_USAGE, usage.to_json(), retry=True)
                cache.delete(_META_COMPLETE_RUN, retry=True)

        try:
            self._call(op, create=True)
        except CacheReadOnlyError:
            return
        except CacheDirectoryError as exc:
            # The end of a run is too late to fail it: say that prune will not know this run.
            self._warn_once(
                "usage", f"{exc}; this run's verdicts are not recorded for 'cache prune'"
            )

    def usage(self) -> Usage | None:
        """What the runs since the last prune used, or None if no run recorded any."""
        return self._call(_read_usage, create=False)

    def prune(self) -> tuple[int, Usage]:
        """Remove the verdicts that no run since the last prune used; start the count afresh.

        Verdicts stored after the first of those runs started are kept: none of those runs
        could have used them, so they say nothing about whether they are stale. Returns how
        many were removed, and the usage that decided.
        """
        usage = self.usage()
        if usage is None:
            raise NoUsageRecordedError(
                f"no test run has recorded which verdicts it used in the verdict cache at "
                f"{self.directory} since it was created or last pruned; prune keeps what those "
                "runs used, so without one it would remove every verdict. Run the tests whose "
                "verdicts you want to keep (any selection, every shard), then prune."
            )
        cutoff = usage.since.timestamp()

        def op(cache: Any) -> int:
            doomed = []
            for key in _verdict_keys(cache):
                if key in usage.keys:
                    continue
                try:
                    value, stored = cache.get(key, tag=True)
                except (UnicodeDecodeError, OSError):
                    doomed.append(key)  # a damaged record no run used
                    continue
                if value is None:
                    continue
                if isinstance(stored, int | float) and stored > cutoff:
                    continue
                doomed.append(key)
            with cache.transact(retry=True):
                for key in doomed:
                    cache.delete(key, retry=True)
                for meta in _META_KEYS:
                    cache.delete(meta, retry=True)
            return len(doomed)

        return self._call(op, create=False) or 0, usage

    # -- maintenance --

    def stats(self) -> CacheStats:
        """Count entries, bytes, models and the recorded-time range."""

        def op(cache: Any) -> tuple[int, dict[str, int], datetime | None, datetime | None]:
            models: dict[str, int] = {}
            oldest: datetime | None = None
            newest: datetime | None = None
            entries = 0
            for _key, record in self._records(cache):
                entries += 1
                model = str(record.get("model", "?"))
                models[model] = models.get(model, 0) + 1
                try:
                    moment = _parse_time(str(record.get("recorded_at")))
                except ValueError:
                    continue
                if oldest is None or moment < oldest:
                    oldest = moment
                if newest is None or moment > newest:
                    newest = moment
            return entries, models, oldest, newest

        found = self._call(op, create=False)
        if found is None:
            return CacheStats(directory=self.directory, models={})
        entries, models, oldest, newest = found
        return CacheStats(
            directory=self.directory,
            entries=entries,
            size_bytes=_tree_size(self.directory),
            models=dict(sorted(models.items(), key=lambda item: (-item[1], item[0]))),
            oldest=oldest,
            newest=newest,
            usage=self.usage(),
        )

    def export_lines(self) -> Iterator[str]:
        """Yield one canonical JSON line (newline included) per verdict, sorted by key.

        The same cache exports byte-identical text, so an export can be committed and diffed.
        """
        keys = self._call(_verdict_keys, create=False) or []
        for key in keys:
            try:
                record = self._call(_reader(key), create=False)
                if record is not None:
                    _check_kind(record, None, key)
            except _RecordDamage as damage:
                self._record_damaged(key, damage)
                continue
            if record is None:
                continue  # removed meanwhile
            yield canonical_json({"key": key, "record": record}) + "\n"

    def _records(self, cache: Any) -> Iterator[tuple[str, dict[str, Any]]]:
        for key in _verdict_keys(cache):
            try:
                record = _read_record(cache, key)
            except _RecordDamage as damage:
                self._record_damaged(key, damage)
                continue
            if record is not None:
                yield key, record

    def import_lines(
        self, lines: Iterable[str], *, bad: list[ImportLineError] | None = None
    ) -> int:
        """Merge exported lines (the file wins on a shared key); return how many were written.

        Every line is checked before anything is written, and the writes are one transaction.
        Without ``bad``, a bad line leaves the cache as it was (ImportLineError); with it, the
        good lines are written and each bad one is added to ``bad``.
        """
        entries, errors = read_lines(lines)
        if errors:
            if bad is None:
                raise errors[0]
            bad.extend(errors)
        if not entries:
            return 0
        stamp = time.time()

        def op(cache: Any) -> int:
            with cache.transact(retry=True):
                for key, text in entries.items():
                    cache.set(key, text, tag=stamp, retry=True)
            return len(entries)

        return self._call(op, create=True) or 0

    def clear(self) -> int:
        """Remove every verdict and the usage record; return how many verdicts."""

        def op(cache: Any) -> int:
            count = len(_verdict_keys(cache))
            cache.clear(retry=True)
            return count

        return self._call(op, create=False) or 0

    def close(self) -> None:
        """Close this thread's database connection; the next call opens it again."""
        with self._lock:
            cache, self._cache = self._cache, None
        if cache is not None:
            cache.close()

    def __enter__(self) -> VerdictCache:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __len__(self) -> int:
        def op(cache: Any) -> int:
            count = len(cache)
            for meta in _META_KEYS:
                if meta in cache:
                    count -= 1
            return int(count)

        return self._call(op, create=False) or 0

    # -- opening, and recovering from damage --

    def _call(self, op: Callable[[Any], _T], *, create: bool) -> _T | None:
        """Run ``op`` on the open cache; None if there is none and ``create`` is false."""
        cache = self._cache
        if cache is None:
            cache = self._open(create=create)
            if cache is None:
                return None
        try:
            return op(cache)
        except Exception as exc:
            self._recover(cache, exc)
        cache = self._open(create=create)
        if cache is None:
            return None
        try:
            return op(cache)
        except Exception as exc:
            if _is_corruption(exc):
                raise CacheDirectoryError(
                    f"the verdict cache at {self.directory} was rebuilt after damage and "
                    f"failed again: {exc}"
                ) from exc
            raise

    def _open_for_reading(self) -> Any:
        """Open to read: a cache that cannot be written is read without writing; a damaged one
        that cannot be moved aside is a warning and an empty cache, never an error."""
        try:
            return self._open(create=False)
        except CacheDamagedError as exc:
            self._warn_once("damaged", f"{exc}; every verdict is a miss")
            with self._lock:
                self._cache = _EmptyStore()
                self.read_only = True
            return self._cache

    def _open(self, *, create: bool) -> Any:
        """The open diskcache, opening it on first use; None if absent and not ``create``."""
        with self._lock:
            if self._cache is not None:
                return self._cache
            directory = self.directory
            try:
                is_dir, present = directory.is_dir(), directory.exists()
                found = is_dir and _db_path(directory).exists()
            except OSError as exc:
                raise CacheDirectoryError(
                    f"cannot read the verdict cache at {directory}: {exc.strerror or exc}"
                ) from exc
            if present and not is_dir:
                raise CacheDirectoryError(
                    f"cannot use {directory} as the verdict cache: it exists and is not a directory"
                )
            if not found and not create:
                return None
            if found and not create:
                self._note_empty_file(_db_path(directory))
            try:
                self._cache = self._connect()
            except CacheDirectoryError as exc:
                if not found:
                    raise
                # Readable but not writable (a CI artifact mounted read-only): read it as is.
                self._cache = self._open_read_only(exc)
                if self._cache is None:
                    raise
                self.read_only = True
                if create:
                    raise CacheReadOnlyError(
                        f"cannot write the verdict cache at {directory}: {exc}"
                    ) from exc
                return self._cache
            except Exception as exc:
                if not _is_corruption(exc):
                    raise
                self._quarantine(exc, self._db_identity)
                try:
                    self._cache = self._connect()
                except Exception as again:
                    if not _is_corruption(again):
                        raise
                    raise CacheDamagedError(
                        f"the verdict cache at {directory} is damaged and could not be "
                        f"rebuilt: {again}"
                    ) from again
            return self._cache

    def _note_empty_file(self, db: Path) -> None:
        # sqlite reads an empty file as an empty database, so nothing is lost, but a cache
        # that was expected to hold verdicts deserves a word before every claim misses.
        with contextlib.suppress(OSError):
            if db.stat().st_size == 0:
                self._warn_once(
                    "empty", f"the verdict cache at {self.directory} is an empty file: no verdicts"
                )

    def _open_read_only(self, cause: Exception) -> Any:
        """A read-only view of the database, or None if even reading fails."""
        try:
            store = _ReadOnlyStore(self.directory)
        except Exception as exc:
            if _is_corruption(exc):
                raise CacheDamagedError(
                    f"the verdict cache at {self.directory} is damaged ({exc}) and cannot be "
                    f"moved aside ({cause})"
                ) from exc
            return None
        if not store.has_table:
            self._warn_once(
                "empty",
                f"the verdict cache at {self.directory} holds no verdict table (an empty or "
                "foreign database); every verdict is a miss",
            )
        return store

    def _connect(self) -> Any:
        import sqlite3

        import diskcache

        directory = self.directory
        try:
            directory.mkdir(parents=True, exist_ok=True)
            self._db_identity = _file_identity(_db_path(directory))
            _refuse_foreign_database(_db_path(directory))
            cache = diskcache.Cache(str(directory), **_SETTINGS)
            self._db_identity = _file_identity(_db_path(directory))
        except sqlite3.Error as exc:
            if _is_corruption(exc):
                raise
            raise CacheDirectoryError(
                f"cannot open the verdict cache at {directory}: {exc}"
            ) from exc
        except OSError as exc:
            raise CacheDirectoryError(
                f"cannot create or open the verdict cache directory {directory}: "
                f"{exc.strerror or exc}"
            ) from exc
        return cache

    def _recover(self, failed: Any, exc: Exception) -> None:
        """Re-raise ``exc`` unless it is damage; then move the damage aside once."""
        if not _is_corruption(exc):
            raise exc
        with self._lock:
            if self._cache is not failed:
                return  # another thread already recovered
            self._cache = None
            with contextlib.suppress(Exception):  # a damaged connection may fail to close
                failed.close()
            self._quarantine(exc, self._db_identity)

    def _quarantine(self, exc: Exception, seen: tuple[int, int] | None) -> None:
        """Move the damaged directory to ``<dir>.corrupt-<n>``, keeping the user's data."""
        directory = self.directory
        db = _db_path(directory)
        current = _file_identity(db)
        if seen is not None and current != seen:
            return  # another process already moved it aside and started afresh
        number = 1
        while True:
            target = directory.with_name(f"{directory.name}.corrupt-{number}")
            if not target.exists():
                try:
                    os.rename(directory, target)
                    break
                except FileNotFoundError:
                    return  # another process moved it first
                except OSError as error:
                    if not target.exists():
                        raise CacheDamagedError(
                            f"the verdict cache at {directory} is damaged ({exc}) and could "
                            f"not be moved aside to {target}: {error.strerror or error}"
                        ) from error
            number += 1
        message = (
            f"the verdict cache at {directory} is damaged ({exc}); moved it to {target} and "
            "started an empty cache, so its verdicts will be judged again"
        )
        self._db_identity = None
        if self._warned:
            return
        self._warned = True
        self._emit(message)

    def _emit(self, message: str) -> None:
        if self._warn is not None:
            self._warn(message)
        else:
            warnings.warn(message, CacheWarning, stacklevel=3)

    def _warn_once(self, topic: str, message: str) -> None:
        with self._lock:
            if topic in self._warned_about:
                return
            self._warned_about.add(topic)
        self._emit(message)

    def _record_damaged(self, key: str, damage: _RecordDamage) -> None:
        """A damaged record is a miss, with one warning naming it (and the next store fixes it)."""
        self.damaged[key] = str(damage)
        self._warn_once(
            f"record:{key}",
            f"the verdict cache at {self.directory} holds a damaged record {key[:16]} "
            f"({damage}); treating it as a miss",
        )


# --- helpers over an open diskcache ---------------------------------------------------------


def _read_usage(cache: Any) -> Usage | None:
    """The usage record, or an older complete-run record read as one run; None if neither."""
    for meta, read in (
        (_META_USAGE, Usage.from_json),
        (_META_COMPLETE_RUN, Usage.from_complete_run),
    ):
        text = cache.get(meta)
        if isinstance(text, str):
            try:
                return read(text)
            except (ValueError, KeyError, TypeError):
                return None  # damaged bookkeeping: as if no run had recorded usage
    return None


def _verdict_keys(cache: Any) -> list[str]:
    """The verdict keys, sorted; reserved metadata keys are not verdicts."""
    return sorted(
        key for key in cache.iterkeys() if type(key) is str and KEY_PATTERN.fullmatch(key)
    )


class _RecordDamage(Exception):
    """One stored record cannot be read back as a verdict record; the message says why."""


def _read_record(cache: Any, key: str) -> dict[str, Any] | None:
    """The record stored under ``key``, None if there is none; _RecordDamage if unreadable.

    diskcache keeps a large record in a side file: a garbled one fails to decode, a deleted
    one reads as absent although its row is still there. Both are damage, not a quiet miss.
    """
    try:
        text = cache.get(key)
    except (UnicodeDecodeError, OSError) as exc:
        raise _RecordDamage(f"its side file cannot be read: {exc}") from None
    if text is None:
        if key in cache:
            raise _RecordDamage("its side file is missing")
        return None
    if type(text) is not str:
        raise _RecordDamage(f"expected JSON text, found {type(text).__name__}")
    try:
        record = json.loads(text)
    except ValueError as exc:
        raise _RecordDamage(f"not JSON: {exc}") from None
    if type(record) is not dict:
        raise _RecordDamage(f"expected a JSON object, found {type(record).__name__}")
    return record


def _check_kind(record: dict[str, Any], kind: str | None, key: str) -> None:
    """_RecordDamage unless ``record`` holds a readable verdict of the request's ``kind``.

    Without the request (maintenance: export, import, a store's rows), the kind of the request
    the record keeps stands in for it, so a verdict moved under another kind's key is found."""
    try:
        verdict = verdict_of_record(record, kind, key=key)
    except ValueError as error:
        raise _RecordDamage(str(error)) from None
    if kind is None:
        asked = _kept_request_kind(record)
        if asked is not None and asked != verdict.kind:
            raise _RecordDamage(
                f"a {verdict.kind} verdict for a {str(asked)[:20]!r} request (its 'request' field)"
            )


def _kept_request_kind(record: dict[str, Any]) -> object:
    """The kind in the request a record keeps (recorded.py packs it); None if it keeps none."""
    import base64
    import zlib

    stored = record.get("request")
    if not isinstance(stored, dict) or stored.get("encoding") != "zlib+base64":
        return None
    try:
        material = json.loads(zlib.decompress(base64.b64decode(str(stored.get("data")))))
    except (ValueError, zlib.error, RecursionError):
        return None
    return material.get("kind") if isinstance(material, dict) else None


def _reader(key: str) -> Callable[[Any], dict[str, Any] | None]:
    return lambda cache: _read_record(cache, key)


def _refuse_foreign_database(db: Path) -> None:
    """A database with tables but none of diskcache's is not a verdict cache: it is damage
    (moved aside, never altered). An empty file or one with no table yet is a new cache."""
    import sqlite3

    try:
        if db.stat().st_size == 0:
            return
        connection = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)
    except (OSError, sqlite3.Error):
        return
    try:
        names = {row[0] for row in connection.execute("SELECT name FROM sqlite_master")}
    except sqlite3.Error:
        return  # damage of another kind: diskcache's open finds it
    finally:
        connection.close()
    if names and not names & {"Cache", "Settings"}:
        raise sqlite3.DatabaseError(
            f"file is not a database of verdicts (its tables: {', '.join(sorted(names))})"
        )


class _ReadOnlyStore:
    """The part of ``diskcache.Cache`` that reading needs, over a database this process may not
    write (diskcache itself writes its settings on open). Absent tables read as empty."""

    def __init__(self, directory: Path) -> None:
        import sqlite3

        uri = _db_path(directory).as_uri()
        connection = sqlite3.connect(f"{uri}?mode=ro", uri=True, check_same_thread=False)
        try:
            connection.execute("SELECT count(*) FROM sqlite_master").fetchall()
        except sqlite3.OperationalError:
            # A WAL database in a directory that cannot hold its -shm file: nobody writes
            # there, so it can be read as an immutable file.
            connection.close()
            connection = sqlite3.connect(f"{uri}?immutable=1", uri=True, check_same_thread=False)
            connection.execute("SELECT count(*) FROM sqlite_master").fetchall()
        tables = connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        self.has_table = "Cache" in {row[0] for row in tables}
        self._db = connection
        self._directory = directory
        self._lock = threading.Lock()

    def _rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        import sqlite3

        with self._lock:
            try:
                return self._db.execute(sql, params).fetchall()
            except sqlite3.OperationalError as exc:
                if "no such table" in str(exc):
                    return []
                raise

    def get(self, key: str, default: Any = None, tag: bool = False) -> Any:
        rows = self._rows(
            "SELECT mode, filename, value, tag FROM Cache WHERE key = ? AND raw = 1", (key,)
        )
        if not rows:
            return (default, None) if tag else default
        from diskcache.core import MODE_RAW, MODE_TEXT

        mode, filename, value, stored_tag = rows[0]
        if mode == MODE_RAW:  # the text is in the row
            result = value
        elif mode == MODE_TEXT and isinstance(filename, str):  # a side file
            try:
                with open(self._directory / filename, encoding="utf-8") as handle:
                    result = handle.read()
            except FileNotFoundError:
                result = default
        else:
            result = default
        return (result, stored_tag) if tag else result

    def __contains__(self, key: object) -> bool:
        return bool(self._rows("SELECT 1 FROM Cache WHERE key = ? AND raw = 1", (key,)))

    def __len__(self) -> int:
        rows = self._rows("SELECT count(*) FROM Cache")
        return int(rows[0][0]) if rows else 0

    def iterkeys(self) -> list[Any]:
        return [row[0] for row in self._rows("SELECT key FROM Cache WHERE raw = 1 ORDER BY key")]

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise CacheReadOnlyError(f"the verdict cache at {self._directory} is read-only")

    set = delete = clear = transact = _refuse

    def close(self) -> None:
        with self._lock:
            self._db.close()


class _EmptyStore:
    """Stands in for a damaged cache that could not be moved aside: nothing to read."""

    def get(self, key: str, default: Any = None, tag: bool = False) -> Any:
        return (default, None) if tag else default

    def __contains__(self, key: object) -> bool:
        return False

    def __len__(self) -> int:
        return 0

    def iterkeys(self) -> list[Any]:
        return []

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise CacheReadOnlyError("the verdict cache is damaged and cannot be written")

    set = delete = clear = transact = _refuse

    def close(self) -> None:
        return None


def _tree_size(directory: Path) -> int:
    """Bytes on disk, WAL included: what the user would have to copy or delete."""
    total = 0
    for root, _dirs, files in os.walk(directory):
        for name in files:
            with contextlib.suppress(OSError):  # removed meanwhile
                total += os.path.getsize(os.path.join(root, name))
    return total


def read_lines(lines: Iterable[str]) -> tuple[dict[str, str], list[ImportLineError]]:
    """Export lines checked: each good line's key and record text, and each bad line's error.

    A key given again with another record is a bad line (the first one is kept)."""
    entries: dict[str, str] = {}
    first_seen: dict[str, int] = {}
    errors: list[ImportLineError] = []
    for lineno, line in enumerate(lines, start=1):
        stripped = line.strip()
        if not stripped:
            continue
        try:
            key, text = _parse_line(lineno, stripped)
        except ImportLineError as error:
            errors.append(error)
            continue
        if key in entries and entries[key] != text:
            errors.append(
                ImportLineError(
                    lineno,
                    f"one record per key, but key {key} already had a different record "
                    f"on line {first_seen[key]}",
                )
            )
            continue
        entries[key] = text
        first_seen.setdefault(key, lineno)
    return entries, errors


def _parse_line(lineno: int, line: str) -> tuple[str, str]:
    """Check one export line; return its key and the record's canonical text."""
    shape = 'a JSON object {"key": "<sha256 hex>", "record": {...}}'
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ImportLineError(
            lineno, f"expected {shape}; not valid JSON ({exc.msg} at column {exc.colno})"
        ) from None
    if not isinstance(data, dict) or set(data) != {"key", "record"}:
        raise ImportLineError(lineno, f"expected {shape} with exactly those two fields")
    key = data["key"]
    if not isinstance(key, str) or not KEY_PATTERN.fullmatch(key):
        raise ImportLineError(
            lineno, f'expected "key" to be a sha256 hex digest (64 lowercase hex), got {key!r}'
        )
    try:
        text = _record_text(data["record"])
    except InvalidRecordError as exc:
        raise ImportLineError(lineno, f'bad "record": {exc}') from None
    return key, text
