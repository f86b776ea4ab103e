"""Keeping credentials out of sight: the ``Secret`` wrapper, text and URL redaction, and a log
filter. Everything that may show an API key or an api_base's password goes through here."""

from __future__ import annotations

import logging
import re
from typing import Any

_SECRET_PATTERN = re.compile(r"(sk-[A-Za-z0-9_\-]{8,}|Bearer\s+[A-Za-z0-9_\-.]{8,})")
# "https://user:pass@host/v1": the credentials between the scheme and the "@".
_URL_USERINFO = re.compile(r"(?<=://)[^/?#@\s'\"]+@")
# "...?api_key=...&token=...": credentials in a query string.
_URL_QUERY_SECRET = re.compile(
    r"(?<=[?&])((?:api[_-]?key|key|token|access_token|auth|sig|signature|password)=)[^&#\s'\"]+",
    re.IGNORECASE,
)


def redact(text: str, secrets: tuple[str | Secret | None, ...] = ()) -> str:
    """Remove the given secrets, and anything that looks like a credential, from the text.

    Providers often quote the key back ("Incorrect API key provided: ..."), whatever its shape;
    URLs lose the user and password they carry.
    """
    for secret in secrets:
        value = secret.reveal() if isinstance(secret, Secret) else secret
        if value and len(value) >= 4:
            text = text.replace(value, "[redacted]")
    text = _URL_USERINFO.sub("[redacted]@", text)
    text = _URL_QUERY_SECRET.sub(r"\1[redacted]", text)
    return _SECRET_PATTERN.sub("[redacted]", text)


def redact_url(url: str | None) -> str | None:
    """The URL as it may be shown: no user, no password, no key in its query."""
    if url is None:
        return None
    return _URL_QUERY_SECRET.sub(r"\1[redacted]", _URL_USERINFO.sub("[redacted]@", url))


class RedactingFilter(logging.Filter):
    """Rewrites log records so that URL credentials and key-shaped strings never show.

    Other libraries log the request URL at DEBUG (the openai SDK does, user and password
    included); pytest shows captured logs in reports and writes them to --log-file.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if "@" in message or "sk-" in message or "key=" in message.lower():
            shown = redact(message)
            if shown != message:
                record.msg, record.args = shown, None
        return True


def hide_credentials_in_logs(handlers: list[logging.Handler], api_base: str | None) -> None:
    """Put a RedactingFilter on pytest's log handlers when the api_base carries credentials."""
    if api_base is None or redact_url(api_base) == api_base:
        return  # nothing to hide: no filter, no cost per log record
    for handler in handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter())


class Secret:
    """A credential that never shows itself: its repr and str are redacted, so a traceback
    with locals (``pytest -l``), a log line or a report cannot print it by accident.

    ``reveal()`` is called only where the value leaves for the provider.
    """

    __slots__ = ("_shown", "_value")

    def __init__(self, value: str, shown: str = "[redacted]") -> None:
        self._value = value
        self._shown = shown

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return f"Secret({self._shown!r})"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash((Secret, self._value))

    def __reduce__(self) -> Any:
        raise TypeError("a Secret is not pickled: it would be written out in the clear")


def url_credentials(api_base: Secret | None) -> tuple[Secret, ...]:
    """The user-and-password part of the URL and the password alone, to redact wherever seen."""
    if api_base is None:
        return ()
    found = re.search(r"://([^/?#@\s]+)@", api_base.reveal())
    if found is None:
        return ()
    userinfo = found.group(1)
    return (Secret(userinfo), Secret(userinfo.partition(":")[2]))
