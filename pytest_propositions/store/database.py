"""The disk cache's database, the one module that imports diskcache: opening it (a read never
creates it; one that cannot be written is read as is), telling damage and a full disk from other
errors, and moving a damaged one aside.

diskcache is imported when the database is first opened, so importing this module is cheap.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from .errors import CacheDamagedError, CacheDirectoryError, CacheReadOnlyError
from .location import DATABASE_FILE, folder_problem

_T = TypeVar("_T")

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

#: Less room than this on the cache's disk makes an I/O error a full disk: sqlite grows its
#: shared-memory file in 32 KiB steps and says only "disk I/O error" when it cannot.
_FULL_BELOW = 2**20


def db_path(directory: Path) -> Path:
    """The sqlite file diskcache keeps in the directory; the file's presence is what "a cache
    exists" means."""
    return directory / DATABASE_FILE


# --- what an error means -------------------------------------------------------------------------


def is_corruption(exc: BaseException) -> bool:
    """True for sqlite's "this file is damaged" errors, not for locks or permissions."""
    name = getattr(exc, "sqlite_errorname", None)
    if isinstance(name, str) and name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")):
        return True
    if type(exc).__module__ != "sqlite3":
        return False
    message = str(exc)
    return "malformed" in message or "not a database" in message


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


def full_reason(exc: BaseException | None, directory: Path) -> str | None:
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


def describe(exc: BaseException, directory: Path) -> str:
    """An error of the file system or of sqlite, a full disk called so."""
    reason = full_reason(exc, directory)
    if reason is not None:
        return f"the disk is full ({reason})"
    return str(exc.strerror or exc) if isinstance(exc, OSError) else str(exc)


def _file_identity(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def _refuse_foreign_database(db: Path) -> None:
    """A database with tables but none of diskcache's is not a verdict cache: it is damage
    (moved aside, never altered). An empty file or one with no table yet is a new cache."""
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


# --- stand-ins for diskcache.Cache -----------------------------------------------------------------


class EmptyStore:
    """Stands in for a damaged cache that could not be moved aside: nothing to read."""

    refusal = "the verdict cache is damaged and cannot be written"

    def get(self, key: str, default: Any = None, tag: bool = False) -> Any:
        return (default, None) if tag else default

    def __contains__(self, key: object) -> bool:
        return False

    def __len__(self) -> int:
        return 0

    def iterkeys(self) -> list[Any]:
        return []

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise CacheReadOnlyError(self.refusal)

    set = delete = clear = transact = _refuse

    def close(self) -> None:
        return None


class ReadOnlyStore(EmptyStore):
    """The part of ``diskcache.Cache`` that reading needs, over a database this process may not
    write (diskcache itself writes its settings on open). Absent tables read as empty."""

    def __init__(self, directory: Path) -> None:
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
        self.refusal = f"the verdict cache at {directory} is read-only"
        self._db = connection
        self._directory = directory
        self._lock = threading.Lock()

    def _rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        with self._lock:
            try:
                return self._db.execute(sql, params).fetchall()
            except sqlite3.OperationalError as exc:
                if "no such table" in str(exc):
                    return []
                raise

    def get(self, key: str, default: Any = None, tag: bool = False) -> Any:
        from diskcache.core import MODE_RAW, MODE_TEXT

        rows = self._rows(
            "SELECT mode, filename, value, tag FROM Cache WHERE key = ? AND raw = 1", (key,)
        )
        if not rows:
            return (default, None) if tag else default
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

    def close(self) -> None:
        with self._lock:
            self._db.close()


# --- the database ----------------------------------------------------------------------------------


class Database:
    """The diskcache database in one directory, shared by many processes; ``handle`` is the open
    ``diskcache.Cache`` (or a stand-in above), None until first needed.

    ``warn_once(topic, message)`` tells the user, once per topic, what went wrong and what was
    done about it; the run goes on."""

    def __init__(self, directory: Path, warn_once: Callable[[str, str], object]) -> None:
        self.directory = directory
        self.handle: Any = None  # diskcache is untyped
        #: True once the cache turned out readable but not writable; writes are then skipped.
        self.read_only = False
        #: What sqlite or the file system said when the disk turned out full.
        self.full: str | None = None
        self._warn_once = warn_once
        self._lock = threading.RLock()
        self._identity: tuple[int, int] | None = None

    @property
    def exists(self) -> bool:
        """Whether a cache database is there; reading a missing one must not create it."""
        try:
            return db_path(self.directory).is_file()
        except OSError as exc:
            raise CacheDirectoryError(
                f"cannot read the verdict cache at {self.directory}: {exc.strerror or exc}"
            ) from exc

    def call(self, op: Callable[[Any], _T], *, create: bool) -> _T | None:
        """Run ``op`` on the open cache; None if there is none and ``create`` is false."""
        cache = self.open(create=create)
        if cache is None:
            return None
        try:
            return op(cache)
        except Exception as exc:
            self.recover(cache, exc)  # re-raised unless damage, which is moved aside
        try:
            cache = self.open(create=create)
            return None if cache is None else op(cache)
        except Exception as exc:
            if is_corruption(exc):
                raise CacheDirectoryError(
                    f"the verdict cache at {self.directory} was rebuilt after damage and "
                    f"failed again: {exc}"
                ) from exc
            raise

    def write(self, key: str, text: str, stamp: float) -> None:
        """Store one record's text. On a full disk, this thread's connection is dropped before
        the error is raised: sqlite may leave the failed transaction open, holding the write
        lock, and the next open of a disk still full reads only."""
        used: list[Any] = []

        def write(cache: Any) -> None:
            used.append(cache)
            cache.set(key, text, tag=stamp, retry=True)

        try:
            self.call(write, create=True)
        except Exception as exc:
            reason = full_reason(exc, self.directory)
            if reason is not None:
                with self._lock:
                    self.full = self.full or reason
                    failed = used[-1] if used and used[-1] is self.handle else None
                    if failed is not None:
                        self.handle = None
                if failed is not None:
                    with contextlib.suppress(Exception):
                        failed.close()
            raise

    def open_for_reading(self) -> Any:
        """Open to read: a cache that cannot be written is read without writing; a damaged one
        that cannot be moved aside is a warning and an empty cache, never an error."""
        handle = self.handle  # open: every read after the first (set and cleared under the lock)
        if handle is not None:
            return handle
        try:
            return self.open(create=False)
        except CacheDamagedError as exc:
            self._warn_once("damaged", f"{exc}; every verdict is a miss")
            with self._lock:
                self.handle = EmptyStore()
                self.read_only = True
            return self.handle

    def open(self, *, create: bool) -> Any:
        """The open diskcache, opening it on first use; None if absent and not ``create``."""
        with self._lock:
            if self.handle is not None:
                return self.handle
            directory = self.directory
            problem = folder_problem(directory)
            if problem is not None:
                raise CacheDirectoryError(problem)
            found = db_path(directory).is_file()
            if not found and not create:
                return None
            if found and not create:
                self._note_empty_file(db_path(directory))
            try:
                self.handle = self._connect()
            except CacheDirectoryError as exc:
                if not found:
                    raise
                # Readable but not writable (a CI artifact mounted read-only, a full disk):
                # read it as is.
                self.handle = self._open_read_only(exc)
                if self.handle is None:
                    raise
                self.read_only = True
                self.full = full_reason(exc, directory)
                if create:
                    raise CacheReadOnlyError(
                        f"cannot write the verdict cache at {directory}: {exc}"
                    ) from exc
                return self.handle
            except Exception as exc:
                if not is_corruption(exc):
                    raise
                self._quarantine(exc, self._identity)
                try:
                    self.handle = self._connect()
                except Exception as again:
                    if not is_corruption(again):
                        raise
                    raise CacheDamagedError(
                        f"the verdict cache at {directory} is damaged and could not be "
                        f"rebuilt: {again}"
                    ) from again
            return self.handle

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
            store = ReadOnlyStore(self.directory)
        except Exception as exc:
            if is_corruption(exc):
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
        import diskcache

        directory = self.directory
        try:
            directory.mkdir(parents=True, exist_ok=True)
            self._identity = _file_identity(db_path(directory))
            _refuse_foreign_database(db_path(directory))
            cache = diskcache.Cache(str(directory), **_SETTINGS)
            self._identity = _file_identity(db_path(directory))
        except sqlite3.Error as exc:
            if is_corruption(exc):
                raise
            raise CacheDirectoryError(
                f"cannot open the verdict cache at {directory}: {describe(exc, directory)}"
            ) from exc
        except OSError as exc:
            raise CacheDirectoryError(
                f"cannot create or open the verdict cache directory {directory}: "
                f"{describe(exc, directory)}"
            ) from exc
        return cache

    def recover(self, failed: Any, exc: Exception) -> None:
        """Re-raise ``exc`` unless it is damage; then move the damage aside once."""
        if not is_corruption(exc):
            raise exc
        with self._lock:
            if self.handle is not failed:
                return  # another thread already recovered
            self.handle = None
            with contextlib.suppress(Exception):  # a damaged connection may fail to close
                failed.close()
            self._quarantine(exc, self._identity)

    def _quarantine(self, exc: Exception, seen: tuple[int, int] | None) -> None:
        """Move the damaged directory to ``<dir>.corrupt-<n>``, keeping the user's data."""
        directory = self.directory
        current = _file_identity(db_path(directory))
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
        self._identity = None
        self._warn_once(
            "quarantine",
            f"the verdict cache at {directory} is damaged ({exc}); moved it to {target} and "
            "started an empty cache, so its verdicts will be judged again",
        )

    def close(self) -> None:
        """Close this thread's database connection; the next call opens it again."""
        with self._lock:
            cache, self.handle = self.handle, None
        if cache is not None:
            cache.close()
