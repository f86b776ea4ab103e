"""What the verdict stores raise on purpose, and the warning a damaged cache gives; users import
them from ``store.cache`` (the shared store's, from ``store.postgres`` too: every implementation
of ``shared.SharedStore`` raises these)."""

from __future__ import annotations

from ..errors import CacheUnusable


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


#: How a store that could not be used before any claim was judged ends its message.
NOTHING_JUDGED = ". Nothing was judged: check the server, or run without --prop-store"


class StoreError(CacheUnusable, CacheError):
    """The verdict store cannot be used as asked; the message names it without its password.

    A judge error (never a pass): a claim whose verdict cannot be read or kept is not judged.
    """


class StoreUnavailable(StoreError):
    """The store cannot be reached or refused the login, at its first use in the run.

    ``stops_run``: the plugin stops the session at the first such error, so no judge is paid
    for verdicts the fleet could not share.
    """

    stops_run = True


class StoreLost(StoreError):
    """The store answered earlier in the run and no longer does (a connection dropped)."""
