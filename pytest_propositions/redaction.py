"""Keeping credentials out of sight: the ``Secret`` wrapper, text and URL redaction, the secret
values known to this process, and a log filter. Everything that may show an API key, an
api_base's password or the store's password goes through here: replies, and what is stored or
shown of a request (plain data, and reprs pytest cut short)."""

from __future__ import annotations

import functools
import logging
import re
import threading
from collections.abc import Iterable, Mapping
from typing import Any, overload
from urllib.parse import unquote

# Patterns as text, compiled by re at their first use (and kept in its cache): every pytest run
# imports this module for its log filter, and most never redact anything.
_SECRET_PATTERN = r"(sk-[A-Za-z0-9_\-]{8,}|Bearer\s+[A-Za-z0-9_\-.]{8,})"
# "https://user:pass@host/v1": the credentials, from the scheme to the URL's LAST "@", whether
# or not a URL parser would read it so: an unencoded password may hold "/", "?", "#" and "@".
_URL_USERINFO = r"(?<=://)[^\s'\"<>`]*@"
# Secrets this long are replaced wherever they appear; shorter ones only where they sit in a
# URL's credentials or query, or in an authorization header (elsewhere they are ordinary words).
LONG_SECRET = 8
_SHORT_SECRET_PLACES = (
    r"(?i)((?:authorization|api[-_]?key|x-api-key|password|passwd|token)[\"']?\s*[:=]\s*[\"']?"
    r"(?:(?:bearer|basic|token)\s+)?|bearer\s+)"
)

# The secret values this process holds (judge keys, passwords): replaced in every text redact()
# sees, so a reply quoting one cannot carry it into the cache, a report or a log.
_known: frozenset[str] = frozenset()
_known_lock = threading.Lock()


def remember_secrets(*values: str | Secret | None) -> None:
    """Add secret values to those replaced wherever the plugin writes text (the value as given,
    and percent-decoded when it differs: a server may quote either)."""
    global _known
    found: set[str] = set()
    for value in values:
        text = value.reveal() if isinstance(value, Secret) else value
        if text:
            found.update(v for v in (text, unquote(text)) if v.strip())
    if found - _known:
        with _known_lock:
            _known = _known | found


@functools.lru_cache(maxsize=8)
def _longest_first(values: frozenset[str]) -> tuple[str, ...]:
    """The values longest first: a URL's user-and-password goes whole before its password
    alone. Kept per set, since every text a claim files is redacted against the same one."""
    return tuple(sorted(values, key=len, reverse=True))


def _replace_values(text: str, values: frozenset[str]) -> str:
    for value in _longest_first(values):
        if value not in text:
            continue
        if len(value) >= LONG_SECRET:
            text = text.replace(value, "[redacted]")
        else:
            pattern = _SHORT_SECRET_PLACES + re.escape(value) + r"(?![\w\-.~+/=])"
            text = re.sub(pattern, r"\1[redacted]", text)
    return text


# "...?api_key=...&token=...": credentials in a query string.
_URL_QUERY_SECRET = (
    r"(?i)(?<=[?&])((?:api[_-]?key|key|token|access_token|auth|sig|signature|password)=)"
    r"[^&#\s'\"]+"
)


def redact(text: str, secrets: tuple[str | Secret | None, ...] = ()) -> str:
    """Remove the given secrets, and anything that looks like a credential, from the text.

    Providers often quote the key back ("Incorrect API key provided: ..."), whatever its shape,
    and so may a judge's successful reply; URLs lose the user and password they carry. The
    secrets given and those remembered (:func:`remember_secrets`) are replaced: those of
    ``LONG_SECRET`` characters or more everywhere, shorter ones in URLs and headers.
    """
    text = redact_values(text, secrets)
    text = re.sub(_URL_USERINFO, "[redacted]@", text)
    text = re.sub(_URL_QUERY_SECRET, r"\1[redacted]", text)
    return re.sub(_SECRET_PATTERN, "[redacted]", text)


def redact_values(text: str, secrets: Iterable[str | Secret | None] = ()) -> str:
    """Only the secret values (given and remembered) replaced: for text the plugin builds
    itself, such as a URL it describes with the user shown."""
    if not secrets:
        return _replace_values(text, _known)
    given = (secret.reveal() if isinstance(secret, Secret) else secret for secret in secrets)
    return _replace_values(text, frozenset(value for value in given if value) | _known)


def redact_data(value: Any) -> Any:
    """Plain data (what a request, a record or a report holds: dicts, lists, strings) with the
    remembered secrets replaced in every string, as :func:`redact_values` replaces them; the
    value itself when there is nothing to replace.

    For what the plugin stores or shows of a claim's request (its messages, the claim, the
    context): a key the judged trace quotes, or a claim variable holding it, is written nowhere.
    The cache key is computed from the request as it was sent, before this."""
    if not _known:
        return value
    if isinstance(value, str):
        return redact_values(value)
    if isinstance(value, Mapping):
        return {name: redact_data(item) for name, item in value.items()}
    if isinstance(value, list):
        return [redact_data(item) for item in value]
    if isinstance(value, tuple):
        return tuple(redact_data(item) for item in value)
    return value


def any_secret_known() -> bool:
    """Whether any secret was remembered: with none, no text needs looking at."""
    return bool(_known)


def any_secret_in(texts: Iterable[str]) -> bool:
    """Whether a remembered secret occurs in any of the texts. When none does, ``redact_values``
    and ``redact_data`` give every one of them back as it is: a check that costs a search per
    secret, for a claim's record whose texts hold no secret (nearly all of them)."""
    known = _known
    if not known:
        return False
    joined = "\x00".join(texts)  # a secret found across two texts is only a needless redaction
    return any(value in joined for value in known)


# A piece of a secret this long, cut by an ellipsis, is redacted in reprs (shorter pieces say
# nothing: "sk-" is every key's start).
_CUT_PIECE = 4


def redact_repr(text: str) -> str:
    """Text made of reprs that may have been cut short (pytest's ``-l`` locals and assertion
    details keep each end of a long value, joined by "..."): the remembered secrets replaced,
    and so is a piece of one left at the cut, at either side of the ellipsis."""
    text = redact_values(text)
    if "..." not in text and "…" not in text:
        return text
    for value in _longest_first(_known):
        if len(value) < LONG_SECRET:
            continue
        starts = "|".join(re.escape(value[:n]) for n in range(len(value) - 1, _CUT_PIECE - 1, -1))
        ends = "|".join(re.escape(value[-n:]) for n in range(len(value) - 1, _CUT_PIECE - 1, -1))
        text = re.sub(rf"(?:{starts})(?=\.\.\.|…)", "[redacted]", text)
        text = re.sub(rf"(?:(?<=\.\.\.)|(?<=…))(?:{ends})", "[redacted]", text)
    return text


@overload
def redact_url(url: str, *, mask: str = ...) -> str: ...
@overload
def redact_url(url: None, *, mask: str = ...) -> None: ...
@overload
def redact_url(url: str | None, *, mask: str = ...) -> str | None: ...
def redact_url(url: str | None, *, mask: str = "[redacted]@") -> str | None:
    """The URL as it may be shown: no user, no password, no key in its query; every message,
    repr and store description that shows a URL takes it from here. The user and password
    (read as ``url_credentials`` reads them) give way to ``mask``; ``""`` drops them (to read
    the rest as a driver would)."""
    if url is None:
        return None
    head, userinfo, rest = _userinfo(url)
    shown = head + mask + rest if userinfo else url
    return re.sub(_URL_QUERY_SECRET, r"\1[redacted]", shown)


class RedactingFilter(logging.Filter):
    """Rewrites log records so that URL credentials and key-shaped strings never show.

    Other libraries log the request URL at DEBUG (the openai SDK does, user and password
    included); pytest shows captured logs in reports and writes them to --log-file.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        suspect = "@" in message or "sk-" in message or "key=" in message.lower()
        if suspect or any(value in message for value in _known):
            shown = redact(message)
            if shown != message:
                record.msg, record.args = shown, None
        return True


def hide_credentials_in_logs(handlers: list[logging.Handler]) -> None:
    """Put a RedactingFilter on pytest's log handlers: a key or password may reach a log line
    (a client's DEBUG request line, a reply quoted by a warning) whatever the settings."""
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


def url_credentials(url: Secret | str | None) -> tuple[Secret, ...]:
    """The user-and-password part of the URL and the password alone, to redact wherever seen.

    Read as the masker reads it (up to the URL's last "@"), not as a parser would: a password
    holding "/" or "@" makes parsers read it as a host or a path, and it is still a password.
    """
    if url is None:
        return ()
    text = url.reveal() if isinstance(url, Secret) else url
    _, userinfo, _rest = _userinfo(text.strip())
    if not userinfo:
        return ()
    password = userinfo.partition(":")[2]
    return (Secret(userinfo), Secret(password)) if password else (Secret(userinfo),)


def _userinfo(url: str) -> tuple[str, str, str]:
    """The URL in three: up to its "://", its user and password (up to its last "@", which is
    where the credentials end whatever a parser reads), and the rest; ``(url, "", "")`` when it
    holds none."""
    head, sep, rest = url.partition("://")
    userinfo, at, after = rest.rpartition("@")
    if not sep or not at or not userinfo:
        return url, "", ""
    return head + sep, userinfo, after
