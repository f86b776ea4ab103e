"""What the verdict stores raise on purpose, and the warning a damaged cache gives; users import
them from ``store.cache``."""

from __future__ import annotations


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
