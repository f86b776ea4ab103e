"""The verdict cache: judge verdicts on disk, keyed by the fully rendered request.

It owns the record modes, the store that pytest-xdist workers share, damage recovery, and the
export/import/prune methods the CLI calls; their passes over every record are maintenance.py's,
what a cached claim reads (and diskcache itself) records.py's, the key rules keys.py's.
diskcache is imported only when the cache is first touched, so importing this module is cheap.
"""

from __future__ import annotations

import contextlib
import errno
import os
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from ..verdict import kind_problem
from .keys import CACHE_FORMAT, KEY_PATTERN, cache_key, canonical_json
from .records import (
    META_COMPLETE_RUN,
    META_KEYS,
    META_USAGE,
    CacheDamagedError,
    CacheDirectoryError,
    CacheError,
    CacheReadOnlyError,
    CacheWarning,
    ImportLineError,
    InvalidRecordError,
    NoUsageRecordedError,
    RecordDamage,
    Usage,
    db_path,
    open_database,
    read_record,
    read_usage,
)

if TYPE_CHECKING:
    from .maintenance import CacheStats

__all__ = [
    "CACHE_FORMAT",
    "CACHE_MODES",
    "UNSTORED_FULL",
    "CacheDamagedError",
    "CacheDirectoryError",
    "CacheError",
    "CacheMode",
    "CacheReadOnlyError",
    "CacheWarning",
    "ImportLineError",
    "InvalidRecordError",
    "NoUsageRecordedError",
    "Usage",
    "VerdictCache",
    "cache_key",
    "canonical_json",
    "unstored_lines",
]


CacheMode = Literal["use", "replay", "refresh", "off"]
CACHE_MODES: tuple[str, ...] = ("use", "replay", "refresh", "off")

_READ_MODES = frozenset({"use", "replay"})
_WRITE_MODES = frozenset({"use", "refresh"})


_T = TypeVar("_T")


# --- keys and records --------------------------------------------------------------------


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


#: Less room than this on the cache's disk makes an I/O error a full disk: sqlite grows its
#: shared-memory file in 32 KiB steps and says only "disk I/O error" when it cannot.
_FULL_BELOW = 2**20


def _free_bytes(directory: Path) -> int | None:
    """The room left for this user on the disk that holds ``directory`` (or would)."""
    if not hasattr(os, "statvfs"):
        return None
    for place in (directory, *directory.parents):
        try:
            found = os.statvfs(place)
        except OSError:
            continue
        return found.f_bavail * found.f_frsize
    return None


def _full_reason(exc: BaseException | None, directory: Path) -> str | None:
    """What was said, if a write failed because the disk (or the user's quota) is full:
    sqlite's SQLITE_FULL, ENOSPC or EDQUOT (here or in what caused it), or an I/O error of
    sqlite's on a disk with no room left."""
    for _ in range(4):
        if exc is None:
            return None
        text = str(exc.strerror or exc) if isinstance(exc, OSError) else str(exc)
        name = getattr(exc, "sqlite_errorname", None)
        if isinstance(name, str) and name.startswith("SQLITE_FULL"):
            return text
        if isinstance(name, str) and name.startswith("SQLITE_IOERR"):
            free = _free_bytes(directory)
            if free is not None and free < _FULL_BELOW:
                return f"{text}, with {free} bytes free there"
        if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
            return text
        exc = exc.__cause__ or exc.__context__
    return None


def _describe(exc: BaseException, directory: Path) -> str:
    """An error of the file system or of sqlite, a full disk called so."""
    reason = _full_reason(exc, directory)
    if reason is not None:
        return f"the disk is full ({reason})"
    return str(exc.strerror or exc) if isinstance(exc, OSError) else str(exc)


# --- what the summary says -------------------------------------------------------------------

#: The counter (``store_counts``) of verdicts judged but not stored because the disk is full.
UNSTORED_FULL = "cache_unstored_full"


def unstored_lines(counts: Mapping[str, float], where: object) -> list[str]:
    """The summary's line about verdicts the disk cache could not store, if there were any."""
    count = int(counts.get(UNSTORED_FULL, 0))
    if not count:
        return []
    verdicts = "1 verdict" if count == 1 else f"{count} verdicts"
    return [
        f"propositions: {verdicts} NOT stored in the verdict cache at {where}: the disk is full. "
        "They count in this run, and will be judged (and paid for) again next run: free space "
        "on that disk, or give another --prop-cache-dir"
    ]


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
        #: Verdicts judged but not stored because the disk is full (UNSTORED_FULL).
        self.unstored_full = 0
        #: What sqlite or the file system said when the disk turned out full.
        self._full: str | None = None
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
        """No shared store here (``base.VerdictStore``): only the verdicts a full disk could
        not take, if there were any."""
        with self._lock:
            return {UNSTORED_FULL: self.unstored_full} if self.unstored_full else {}

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
        try:
            self._write(key, text)
        except Exception as error:
            if not isinstance(error, OSError) and _full_reason(error, self.directory) is None:
                raise
            self._warn_once(
                "store-copy",
                f"cannot copy store verdicts to {self.directory}: "
                f"{_describe(error, self.directory)}",
            )

    @property
    def exists(self) -> bool:
        """Whether a cache database is there; reading a missing one must not create it."""
        try:
            return db_path(self.directory).is_file()
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
                    record = read_record(cache, key)
                    if record is not None and kind is not None:
                        problem = kind_problem(record, kind)
                        if problem is not None:
                            raise RecordDamage(problem)
                except RecordDamage as damage:
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
        from .maintenance import record_text  # records arrive from live judging and imports

        text = record_text(record)
        self.used_keys.add(key)
        if self.mode in _WRITE_MODES:
            if self.read_only:
                self._skip_write(None, judged=True)
                return record
            try:
                self._write(key, text)
            except CacheReadOnlyError as exc:
                self._skip_write(exc, judged=True)
            except Exception as exc:
                # A full disk must not lose a verdict that was paid for: it stands for this
                # run, is counted for the summary, and the run goes on.
                if _full_reason(exc, self.directory) is None:
                    raise
                self._skip_write(exc, judged=True)
        return record

    def _write(self, key: str, text: str) -> None:
        """Store one record's text. On a full disk, this thread's connection is dropped before
        the error is raised: sqlite may leave the failed transaction open, holding the write
        lock, and the next open of a disk still full reads only."""
        stamp = time.time()
        used: list[Any] = []

        def write(cache: Any) -> None:
            used.append(cache)
            cache.set(key, text, tag=stamp, retry=True)

        try:
            self._call(write, create=True)
        except Exception as exc:
            reason = _full_reason(exc, self.directory)
            if reason is not None:
                with self._lock:
                    self._full = self._full or reason
                    failed = used[-1] if used and used[-1] is self._cache else None
                    if failed is not None:
                        self._cache = None
                if failed is not None:
                    with contextlib.suppress(Exception):
                        failed.close()
            raise

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
                why = f": the disk is full ({self._full})" if self._full else ""
                raise CacheReadOnlyError(
                    f"the verdict cache at {self.directory} cannot be written{why}, and "
                    "--prop-cache=refresh exists to rewrite it; use --prop-cache=use or replay, "
                    "or give a writable --prop-cache-dir"
                )
            self._skip_write(None)

    def _skip_write(self, exc: BaseException | None, *, judged: bool = False) -> None:
        """A verdict (``judged``) or the writes to come are not stored: one warning says why."""
        if self._full is not None:
            if judged:
                with self._lock:
                    self.unstored_full += 1
            self._warn_once(
                "full",
                f"the verdict cache at {self.directory} cannot store new verdicts: the disk is "
                f"full ({self._full}). Its verdicts are read; verdicts judged now count in this "
                "run but are not stored (the summary says how many)",
            )
            return
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
                before = read_usage(cache)
                usage = Usage(
                    since=min(started_at, before.since) if before else started_at,
                    last_finished=now,
                    runs=(before.runs if before else 0) + 1,
                    keys=frozenset(keys | (before.keys if before else frozenset())),
                )
                cache.set(META_USAGE, usage.to_json(), retry=True)
                cache.delete(META_COMPLETE_RUN, retry=True)

        try:
            self._call(op, create=True)
        except CacheReadOnlyError:
            return
        except CacheDirectoryError as exc:
            # The end of a run is too late to fail it: say that prune will not know this run.
            self._warn_once(
                "usage", f"{exc}; this run's verdicts are not recorded for 'cache prune'"
            )
        except Exception as exc:
            if _full_reason(exc, self.directory) is None:
                raise
            self._warn_once(
                "usage",
                f"cannot write the verdict cache at {self.directory}: "
                f"{_describe(exc, self.directory)}; this "
                "run's verdicts are not recorded for 'cache prune'",
            )

    def usage(self) -> Usage | None:
        """What the runs since the last prune used, or None if no run recorded any."""
        return self._call(read_usage, create=False)

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
        from .maintenance import remove_unused

        return self._call(lambda cache: remove_unused(cache, usage), create=False) or 0, usage

    # -- maintenance (the work itself is maintenance.py's, loaded when asked for) --

    def stats(self) -> CacheStats:
        """Count entries, bytes, models and the recorded-time range."""
        from .maintenance import CacheStats, count_records, tree_size

        found = self._call(lambda cache: count_records(self._records(cache)), create=False)
        if found is None:
            return CacheStats(directory=self.directory, models={})
        return CacheStats(
            directory=self.directory,
            size_bytes=tree_size(self.directory),
            usage=self.usage(),
            **found,
        )

    def export_lines(self) -> Iterator[str]:
        """Yield one canonical JSON line (newline included) per verdict, sorted by key.

        The same cache exports byte-identical text, so an export can be committed and diffed.
        """
        from .maintenance import check_kind, verdict_keys

        keys = self._call(verdict_keys, create=False) or []
        for key in keys:
            try:
                record = self._call(_reader(key), create=False)
                if record is not None:
                    check_kind(record, None, key)
            except RecordDamage as damage:
                self._record_damaged(key, damage)
                continue
            if record is None:
                continue  # removed meanwhile
            yield canonical_json({"key": key, "record": record}) + "\n"

    def _records(self, cache: Any) -> Iterator[tuple[str, dict[str, Any]]]:
        from .maintenance import verdict_keys

        for key in verdict_keys(cache):
            try:
                record = read_record(cache, key)
            except RecordDamage as damage:
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
        from .maintenance import read_lines, write_entries

        entries, errors = read_lines(lines)
        if errors:
            if bad is None:
                raise errors[0]
            bad.extend(errors)
        if not entries:
            return 0
        stamp = time.time()
        return self._call(lambda cache: write_entries(cache, entries, stamp), create=True) or 0

    def clear(self) -> int:
        """Remove every verdict and the usage record; return how many verdicts."""
        from .maintenance import remove_all

        return self._call(remove_all, create=False) or 0

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
            for meta in META_KEYS:
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
            from .maintenance import EmptyStore

            self._warn_once("damaged", f"{exc}; every verdict is a miss")
            with self._lock:
                self._cache = EmptyStore()
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
                found = is_dir and db_path(directory).exists()
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
                self._note_empty_file(db_path(directory))
            try:
                self._cache = self._connect()
            except CacheDirectoryError as exc:
                if not found:
                    raise
                # Readable but not writable (a CI artifact mounted read-only, a full disk):
                # read it as is.
                self._cache = self._open_read_only(exc)
                if self._cache is None:
                    raise
                self.read_only = True
                self._full = _full_reason(exc, directory)
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
        from .maintenance import ReadOnlyStore

        try:
            store = ReadOnlyStore(self.directory)
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

        directory = self.directory
        try:
            directory.mkdir(parents=True, exist_ok=True)
            self._db_identity = _file_identity(db_path(directory))
            _refuse_foreign_database(db_path(directory))
            cache = open_database(directory)
            self._db_identity = _file_identity(db_path(directory))
        except sqlite3.Error as exc:
            if _is_corruption(exc):
                raise
            raise CacheDirectoryError(
                f"cannot open the verdict cache at {directory}: {_describe(exc, directory)}"
            ) from exc
        except OSError as exc:
            raise CacheDirectoryError(
                f"cannot create or open the verdict cache directory {directory}: "
                f"{_describe(exc, directory)}"
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
        db = db_path(directory)
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

    def _record_damaged(self, key: str, damage: RecordDamage) -> None:
        """A damaged record is a miss, with one warning naming it (and the next store fixes it)."""
        self.damaged[key] = str(damage)
        self._warn_once(
            f"record:{key}",
            f"the verdict cache at {self.directory} holds a damaged record {key[:16]} "
            f"({damage}); treating it as a miss",
        )


# --- helpers over an open diskcache ---------------------------------------------------------


def _reader(key: str) -> Callable[[Any], dict[str, Any] | None]:
    return lambda cache: read_record(cache, key)


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
