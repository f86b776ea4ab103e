"""The disk cache's maintenance, loaded only when asked for: the checks of a record on its way in
(a live verdict, an import line, a shared store's row), the export's line format, prune's and
stats' passes over every record, and the stand-ins for a cache that cannot be written or opened.

``cache.VerdictCache`` keeps the methods (``prune``, ``stats``, ``import_lines``...) and calls
these; nothing here imports it.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple

from ..checks import TOO_DEEP
from ..verdict import verdict_of_record
from .keys import KEY_PATTERN, _check_names, canonical_json
from .recorded import request_key
from .records import (
    META_KEYS,
    CacheReadOnlyError,
    ImportLineError,
    InvalidRecordError,
    RecordDamage,
    Usage,
    db_path,
    text_modes,
)


class CacheStats(NamedTuple):
    """What the cache holds, for ``cache stats`` and the terminal summary."""

    directory: Path
    models: dict[str, int]
    entries: int = 0
    size_bytes: int = 0
    oldest: datetime | None = None
    newest: datetime | None = None
    usage: Usage | None = None


def _parse_time(text: str) -> datetime:
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is None:
        raise ValueError("no time zone")
    return moment


def record_text(record: Any) -> str:
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
        check_kind(dict(record), None, "")
    except RecordDamage as damage:
        raise InvalidRecordError(str(damage)) from None
    return text


def stored_record(text: str, kind: str | None = None) -> dict[str, Any]:
    """A record's text as read from outside this machine (a shared store's row), checked as an
    import line is, and for the request's ``kind``; InvalidRecordError saying what is wrong."""
    try:
        record = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise InvalidRecordError(f"not JSON: {exc}") from None
    record_text(record)
    if kind is not None:
        try:
            check_kind(record, kind, "")
        except RecordDamage as damage:
            raise InvalidRecordError(str(damage)) from None
    return dict(record)


def verdict_keys(cache: Any) -> list[str]:
    """The verdict keys, sorted; reserved metadata keys are not verdicts."""
    return sorted(
        key for key in cache.iterkeys() if type(key) is str and KEY_PATTERN.fullmatch(key)
    )


def check_kind(record: dict[str, Any], kind: str | None, key: str) -> None:
    """RecordDamage unless ``record`` holds a readable verdict of the request's ``kind``.

    Without the request (maintenance: export, import, a store's rows), the kind of the request
    the record keeps stands in for it, so a verdict moved under another kind's key is found."""
    try:
        verdict = verdict_of_record(record, kind, key=key)
    except ValueError as error:
        raise RecordDamage(str(error)) from None
    if kind is None:
        asked = _kept_request_kind(record)
        if asked is not None and asked != verdict.kind:
            raise RecordDamage(
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


class ReadOnlyStore:
    """The part of ``diskcache.Cache`` that reading needs, over a database this process may not
    write (diskcache itself writes its settings on open). Absent tables read as empty."""

    def __init__(self, directory: Path) -> None:
        import sqlite3

        uri = db_path(directory).as_uri()
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
        raw_mode, text_mode = text_modes()
        mode, filename, value, stored_tag = rows[0]
        if mode == raw_mode:  # the text is in the row
            result = value
        elif mode == text_mode and isinstance(filename, str):  # a side file
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


class EmptyStore:
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


def tree_size(directory: Path) -> int:
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
        except RecursionError:
            errors.append(ImportLineError(lineno, TOO_DEEP))
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
        text = record_text(data["record"])
    except InvalidRecordError as exc:
        raise ImportLineError(lineno, f'bad "record": {exc}') from None
    _check_key(lineno, key, data["record"])
    return key, text


def _check_key(lineno: int, key: str, record: dict[str, Any]) -> None:
    """ImportLineError unless ``key`` is the key of the request ``record`` keeps.

    A key moved to another line's record (a bad merge of a committed export, a hand edit) would
    otherwise serve that record's verdict for another claim: a wrong pass on replay. A record
    that keeps no request cannot be checked, so it is refused too."""
    redo = (
        "export it again from the cache that recorded it, or let a run "
        "(--prop-cache=use) judge that claim again"
    )
    try:
        kept = request_key(record)
    except ValueError as exc:
        raise ImportLineError(
            lineno,
            f'its record\'s "request" cannot be read ({exc}), so its key cannot be '
            f"checked against it; {redo}",
        ) from None
    if kept is None:
        raise ImportLineError(
            lineno,
            'its record keeps no "request" (written by hand, or by a version before requests '
            "were kept), so its key cannot be checked against what was asked; " + redo,
        )
    if kept != key:
        raise ImportLineError(
            lineno,
            f"key {key} is not the key of the request its record keeps ({kept}): a key moved to "
            f"another record (a bad merge or an edit of the export?); {redo}",
        )


# -- passes over every record (VerdictCache runs them on its open diskcache) ------------------


def remove_unused(cache: Any, usage: Usage) -> int:
    """Prune's pass: delete the verdicts no run of ``usage`` used and that are older than its
    first run, and the usage record with them; returns how many verdicts went."""
    cutoff = usage.since.timestamp()
    doomed = []
    for key in verdict_keys(cache):
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


def count_records(records: Iterable[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """Stats' pass: entries, entries per model (most first), the recorded-time range."""
    models: dict[str, int] = {}
    oldest: datetime | None = None
    newest: datetime | None = None
    entries = 0
    for _key, record in records:
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
    return {
        "entries": entries,
        "models": dict(sorted(models.items(), key=lambda item: (-item[1], item[0]))),
        "oldest": oldest,
        "newest": newest,
    }


def write_entries(cache: Any, entries: Mapping[str, str], stamp: float) -> int:
    """An import's writes, as one transaction."""
    with cache.transact(retry=True):
        for key, text in entries.items():
            cache.set(key, text, tag=stamp, retry=True)
    return len(entries)


def remove_all(cache: Any) -> int:
    """Every verdict and the usage record; returns how many verdicts."""
    count = len(verdict_keys(cache))
    cache.clear(retry=True)
    return count
