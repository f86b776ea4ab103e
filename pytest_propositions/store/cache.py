"""The verdict cache: judge verdicts on disk, keyed by the fully rendered request.

It owns the judge's reads and writes as the cache mode allows them (``settings.cache_mode`` says
what each mode does), what a read-only or full disk means for them, the usage record that prune
keeps, and export, import, prune, stats and clear. The database under it (diskcache, damage) is
database.py's, the record cache_record.py's, the keys keys.py's.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..settings import CACHE_MODES, CacheMode, cache_mode
from .base import Closing
from .cache_record import (
    RecordDamage,
    export_line,
    kind_problem,
    read_lines,
    read_record,
    record_text,
    recorded_time,
    verdict_of_record,
)
from .database import Database, describe, full_reason
from .errors import (
    CacheDamagedError,
    CacheDirectoryError,
    CacheError,
    CacheReadOnlyError,
    CacheWarning,
    ImportLineError,
    InvalidRecordError,
    NoUsageRecordedError,
)
from .keys import CACHE_FORMAT, KEY_PATTERN, cache_key, canonical_json

__all__ = [
    "CACHE_FORMAT",
    "CACHE_MODES",
    "UNSTORED_FULL",
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
    "unstored_lines",
]


# Reserved keys: never 64 hex digits, so they cannot collide with a verdict key.
META_USAGE = "meta:usage"
# Written before usage was gathered over runs (one run's keys); still read, as one run.
META_COMPLETE_RUN = "meta:complete-run"
META_KEYS = (META_USAGE, META_COMPLETE_RUN)

#: The counter (``store_counts``) of verdicts judged but not stored because the disk is full.
UNSTORED_FULL = "cache_unstored_full"


@dataclass(frozen=True)
class Usage:
    """Which verdicts the finished runs since the last prune used: what prune keeps."""

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


def _moment(value: Any) -> datetime:
    return datetime.fromtimestamp(float(value), UTC)


def _read_usage(cache: Any) -> Usage | None:
    """The usage record, or an older version's record of one complete run (it kept no start
    time) read as one run; None if neither."""
    try:
        text = cache.get(META_USAGE)
        if isinstance(text, str):
            data = json.loads(text)
            since, last = _moment(data["since"]), _moment(data["last_finished"])
            runs = int(data["runs"])
        else:
            text = cache.get(META_COMPLETE_RUN)
            if not isinstance(text, str):
                return None
            data = json.loads(text)
            since = last = _moment(data["timestamp"])
            runs = 1
        keys = frozenset(str(key) for key in data["keys"])
    except (ValueError, KeyError, TypeError):
        return None  # damaged bookkeeping: as if no run had recorded usage
    return Usage(since=since, last_finished=last, runs=runs, keys=keys)


@dataclass(frozen=True)
class CacheStats:
    """What the cache holds, for ``cache stats`` and the terminal summary."""

    directory: Path
    models: dict[str, int]
    entries: int = 0
    size_bytes: int = 0
    oldest: datetime | None = None
    newest: datetime | None = None
    usage: Usage | None = None


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


def _verdict_keys(cache: Any) -> list[str]:
    """The verdict keys, sorted; reserved metadata keys are not verdicts."""
    return sorted(
        key for key in cache.iterkeys() if type(key) is str and KEY_PATTERN.fullmatch(key)
    )


def _tree_size(directory: Path) -> int:
    """Bytes on disk, WAL included: what the user would have to copy or delete."""
    total = 0
    for root, _dirs, files in os.walk(directory):
        for name in files:
            with contextlib.suppress(OSError):  # removed meanwhile
                total += os.path.getsize(os.path.join(root, name))
    return total


class VerdictCache(Closing):
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
        cache_mode(mode)  # ValueError naming the modes
        self.directory: Path = Path(directory).expanduser().absolute()
        self.mode: CacheMode = mode
        self.hits = 0
        self.misses = 0
        self.used_keys: set[str] = set()
        self._warn = warn
        self._warned_about: set[str] = set()
        #: Records found damaged (key -> what is wrong); each was warned about once and missed.
        self.damaged: dict[str, str] = {}
        #: Verdicts judged but not stored because the disk is full (UNSTORED_FULL).
        self.unstored_full = 0
        self._lock = threading.RLock()
        self._db = Database(self.directory, self.warn_once)

    def __repr__(self) -> str:
        return f"VerdictCache({str(self.directory)!r}, mode={self.mode!r})"

    @property
    def disk(self) -> VerdictCache:
        """This cache (``base.VerdictStore``: the disk cache behind a store)."""
        return self

    @property
    def exists(self) -> bool:
        """Whether a cache database is there; reading a missing one must not create it."""
        return self._db.exists

    def store_counts(self) -> dict[str, int]:
        """No shared store here (``base.VerdictStore``): only the verdicts a full disk could
        not take, if there were any."""
        with self._lock:
            return {UNSTORED_FULL: self.unstored_full} if self.unstored_full else {}

    # -- the judge's traffic (hot path) --

    def get(self, key: str, kind: str | None = None) -> dict[str, Any] | None:
        """The stored record for ``key``, or None; hits + misses counts every call.

        With the request's ``kind`` (the judge's reads), the record comes as its kind, time and
        verdict (``cache_record.lean_record``: only what the verdict needs is decoded), and a
        record that holds no readable verdict of that kind is damage: one warning naming it,
        and a miss."""
        cache = self._db.open_for_reading() if cache_mode(self.mode).reads else None
        record = None
        if cache is not None:
            try:
                # The request is not read: the judge reads a verdict of the request's kind.
                record = read_record(cache, key, verdict_only=kind is not None)
                problem = None if record is None or kind is None else kind_problem(record, kind)
                if problem is not None:
                    raise RecordDamage(problem)
            except RecordDamage as damage:
                record = None
                self._record_damaged(key, damage)
            except Exception as exc:
                self._db.recover(cache, exc)
        with self._lock:
            if record is None:
                self.misses += 1
                return None
            self.hits += 1
        self.used_keys.add(key)
        return record

    def put(self, key: str, record: Mapping[str, Any]) -> Mapping[str, Any]:
        """Store ``record`` under ``key`` (use/refresh); validated in every mode.

        Returns the record that stands for ``key``: here the one given; a shared store's may be
        another process's (``tiered.SharedVerdictCache``, ``base.VerdictStore``)."""
        if not isinstance(key, str) or not KEY_PATTERN.fullmatch(key):
            raise ValueError(f"expected a cache key from cache_key(), got {key!r}")
        text = record_text(record)
        self.used_keys.add(key)
        if cache_mode(self.mode).writes:
            if self._db.read_only:
                self._skip_write(None, judged=True)
                return record
            try:
                self._db.write(key, text, time.time())
            except CacheReadOnlyError as exc:
                self._skip_write(exc, judged=True)
            except Exception as exc:
                # A full disk must not lose a verdict that was paid for: it stands for this
                # run, is counted for the summary, and the run goes on.
                if full_reason(exc, self.directory) is None:
                    raise
                self._skip_write(exc, judged=True)
        return record

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
        if self._db.read_only:
            return
        try:
            self._db.write(key, text, time.time())
        except Exception as error:
            if not isinstance(error, OSError) and full_reason(error, self.directory) is None:
                raise
            self.warn_once(
                "store-copy",
                f"cannot copy store verdicts to {self.directory}: "
                f"{describe(error, self.directory)}",
            )

    def prepare_write(self) -> None:
        """Before a live (paid) judge call: make sure its verdict can be stored.

        Raises CacheDirectoryError when the cache cannot be created or written, so nothing is
        judged only to be thrown away. A cache that can be read but not written (a read-only
        mount) is allowed in "use" mode: its verdicts are served, new ones are not stored, and
        one warning says so.
        """
        if not cache_mode(self.mode).writes:
            return
        if not self._db.read_only:
            with contextlib.suppress(CacheReadOnlyError):
                self._db.open(create=True)
        if self._db.read_only:
            if cache_mode(self.mode).replaces:
                full = self._db.full
                why = f": the disk is full ({full})" if full else ""
                raise CacheReadOnlyError(
                    f"the verdict cache at {self.directory} cannot be written{why}, and "
                    "--prop-cache=refresh exists to rewrite it; use --prop-cache=use or replay, "
                    "or give a writable --prop-cache-dir"
                )
            self._skip_write(None)

    def _skip_write(self, exc: BaseException | None, *, judged: bool = False) -> None:
        """A verdict (``judged``) or the writes to come are not stored: one warning says why."""
        full = self._db.full
        if full is not None:
            if judged:
                with self._lock:
                    self.unstored_full += 1
            self.warn_once(
                "full",
                f"the verdict cache at {self.directory} cannot store new verdicts: the disk is "
                f"full ({full}). Its verdicts are read; verdicts judged now count in this "
                "run but are not stored (the summary says how many)",
            )
            return
        reason = f" ({exc})" if exc is not None else ""
        self.warn_once(
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

        A no-op in a mode that does not write ("off", "replay": the cache is left as it was) and
        on a read-only cache (prune cannot run there anyway).
        """
        keys = {key for key in used if isinstance(key, str)}
        if not cache_mode(self.mode).writes or self._db.read_only:
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
                cache.set(META_USAGE, usage.to_json(), retry=True)
                cache.delete(META_COMPLETE_RUN, retry=True)

        try:
            self._db.call(op, create=True)
        except CacheReadOnlyError:
            return
        except CacheDirectoryError as exc:
            # The end of a run is too late to fail it: say that prune will not know this run.
            self.warn_once(
                "usage", f"{exc}; this run's verdicts are not recorded for 'cache prune'"
            )
        except Exception as exc:
            if full_reason(exc, self.directory) is None:
                raise
            self.warn_once(
                "usage",
                f"cannot write the verdict cache at {self.directory}: "
                f"{describe(exc, self.directory)}; this "
                "run's verdicts are not recorded for 'cache prune'",
            )

    def usage(self) -> Usage | None:
        """What the runs since the last prune used, or None if no run recorded any."""
        return self._db.call(_read_usage, create=False)

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

        def remove_unused(cache: Any) -> int:
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
                for meta in META_KEYS:
                    cache.delete(meta, retry=True)
            return len(doomed)

        return self._db.call(remove_unused, create=False) or 0, usage

    # -- maintenance --

    def stats(self) -> CacheStats:
        """Count entries, bytes, models and the recorded-time range."""
        models: dict[str, int] = {}
        moments = []
        entries = 0
        for _key, record in self.records(verdicts=False):
            entries += 1
            model = str(record.get("model", "?"))
            models[model] = models.get(model, 0) + 1
            with contextlib.suppress(ValueError):
                moments.append(recorded_time(str(record.get("recorded_at"))))
        return CacheStats(
            directory=self.directory,
            models=dict(sorted(models.items(), key=lambda item: (-item[1], item[0]))),
            entries=entries,
            size_bytes=_tree_size(self.directory),
            oldest=min(moments, default=None),
            newest=max(moments, default=None),
            usage=self.usage(),
        )

    def records(self, *, verdicts: bool = True) -> Iterator[tuple[str, dict[str, Any]]]:
        """Every (key, record) holding a readable verdict, sorted by key; damage is noted in
        ``damaged`` (with one warning each) and passed over. Without ``verdicts``, every record
        that reads back as JSON, whatever its verdict (what stats counts)."""
        for key in self._db.call(_verdict_keys, create=False) or []:
            try:
                record = self._db.call(functools.partial(read_record, key=key), create=False)
                if record is not None and verdicts:
                    verdict_of_record(record, key=key)
            except RecordDamage as damage:
                self._record_damaged(key, damage)
                continue
            if record is not None:  # else removed meanwhile
                yield key, record

    def export_lines(self) -> Iterator[str]:
        """Yield one canonical JSON line (newline included) per verdict, sorted by key.

        The same cache exports byte-identical text, so an export can be committed and diffed.
        """
        for key, record in self.records():
            yield export_line(key, record)

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

        def write_entries(cache: Any) -> int:
            with cache.transact(retry=True):
                for key, text in entries.items():
                    cache.set(key, text, tag=stamp, retry=True)
            return len(entries)

        return self._db.call(write_entries, create=True) or 0

    def clear(self) -> int:
        """Remove every verdict and the usage record; return how many verdicts."""

        def remove_all(cache: Any) -> int:
            count = len(_verdict_keys(cache))
            cache.clear(retry=True)
            return count

        return self._db.call(remove_all, create=False) or 0

    def close(self) -> None:
        """Close this thread's database connection; the next call opens it again."""
        self._db.close()

    def __len__(self) -> int:
        def op(cache: Any) -> int:
            return len(cache) - sum(1 for meta in META_KEYS if meta in cache)

        return self._db.call(op, create=False) or 0

    # -- telling the user --

    def warn_once(self, topic: str, message: str) -> bool:
        """Tell the user ``message``, the first time ``topic`` comes up; whether it was told."""
        with self._lock:
            if topic in self._warned_about:
                return False
            self._warned_about.add(topic)
        if self._warn is not None:
            self._warn(message)
        else:
            warnings.warn(message, CacheWarning, stacklevel=2)
        return True

    def _record_damaged(self, key: str, damage: RecordDamage) -> None:
        """A damaged record is a miss, with one warning naming it (and the next store fixes it)."""
        self.damaged[key] = str(damage)
        self.warn_once(
            f"record:{key}",
            f"the verdict cache at {self.directory} holds a damaged record {key[:16]} "
            f"({damage}); treating it as a miss",
        )
