"""What a failed call to the judge was, as one value: the fault both transport paths raise.

The plain-HTTP path builds a ``Fault`` from the response it got (or did not get); the litellm
path maps litellm's exception classes to one in its table. The transport retries, falls back or
stops on the fault's ``kind`` alone, and never reads the text of a provider's error: the
``detail`` is only shown, redacted of every secret.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Literal

from ..redaction import Secret, redact

__all__ = [
    "RUN_WIDE",
    "TRANSIENT",
    "Fault",
    "FaultKind",
    "causes",
    "kind_of_status",
    "overflows_window",
    "rejects_format",
    "retry_after_seconds",
    "shown_detail",
]

FaultKind = Literal[
    "auth",  # 401, 403: the credentials were rejected
    "missing_key",  # no key to send, so nothing was sent
    "bad_request",  # any other 4xx, or a request the path could not make: fails at once
    "context_overflow",  # the request is longer than the model's window: fails at once
    "not_found",  # 404: the server does not know the model
    "format_rejected",  # the server refused the response_format: the next mode is tried
    "format_refused",  # litellm refused the response_format before sending anything
    "client_refused",  # litellm refused another parameter before sending anything
    "no_provider",  # litellm knows no provider for the model's name, so nothing was sent
    "url_credentials",  # a user and password inside the endpoint's URL
    "refused_reply",  # a reply the client will not read (a redirect, a bomb): fails at once
    "refused_connection",  # nothing listens there, or the name does not resolve
    "rate_limited",  # 429
    "conflict",  # 409
    "timeout",  # 408, or no answer within --prop-timeout
    "server",  # 5xx
    "connection",  # dropped or broken mid-answer
    "invalid_response",  # HTTP 200, but not a chat completion
]

#: The kinds worth another attempt (with backoff): the same request may well succeed.
TRANSIENT: frozenset[FaultKind] = frozenset(
    {"rate_limited", "conflict", "timeout", "server", "connection", "invalid_response"}
)

#: The kinds no later claim can escape, whatever it asks: the run stops at the first, said once.
RUN_WIDE: frozenset[FaultKind] = frozenset({"no_provider"})

# The kind of fault in the message the user sees after the last attempt.
_LABELS: dict[FaultKind, str] = {
    "rate_limited": "rate limited",
    "conflict": "conflict",
    "timeout": "Timeout",
    "server": "server error",
    "connection": "connection error",
    "invalid_response": "invalid response",
}

# The same, as the cause of a retry ("attempt 2 of 4 after a timeout").
_CAUSES: dict[FaultKind, str] = {
    "rate_limited": "a rate limit",
    "conflict": "a conflict",
    "timeout": "a timeout",
    "server": "a server error",
    "connection": "a connection error",
    "invalid_response": "an invalid response",
}

# litellm pastes a whole Python traceback into some messages: only the part before is shown.
_TRACEBACK = "Traceback (most recent call last)"
_DETAIL_CHARS = 500


@dataclass(eq=False)
class Fault(Exception):
    """A failed call: its ``kind``, the HTTP status the server really sent (None when none was
    received, or when the client refused before sending), the seconds a ``Retry-After`` asked
    for, and the ``detail`` a message may show.

    Raised by the paths; the transport keeps a copy without the traceback and the chained
    provider errors (their frames may hold the key), so ``pytest -l`` has nothing secret to show.
    """

    kind: FaultKind
    detail: str
    status: int | None = None
    retry_after: float | None = None

    def __post_init__(self) -> None:
        super().__init__(self.detail)

    def __reduce__(self) -> tuple[type[Fault], tuple[object, ...]]:
        return type(self), (self.kind, self.detail, self.status, self.retry_after)

    @property
    def transient(self) -> bool:
        """Worth another attempt."""
        return self.kind in TRANSIENT

    @property
    def stops_run(self) -> bool:
        """Every later claim would fail the same way: the run stops at the first."""
        return self.kind in RUN_WIDE

    @property
    def label(self) -> str:
        """What went wrong, in the words of the message after the last attempt."""
        return _LABELS.get(self.kind, self.kind.replace("_", " "))

    @property
    def cause(self) -> str:
        """What went wrong, as the reason for another attempt: "a timeout", "a server error
        (HTTP 503)"."""
        said = _CAUSES.get(self.kind, self.label)
        return said + (f" (HTTP {self.status})" if self.status and self.kind != "timeout" else "")

    def bare(self, secrets: tuple[Secret | None, ...] = ()) -> Fault:
        """This fault alone, its detail redacted of ``secrets`` and of every remembered one:
        no traceback, no chained error."""
        return dataclasses.replace(self, detail=shown_detail(self.detail, secrets))


def shown_detail(text: str, secrets: tuple[Secret | None, ...] = ()) -> str:
    """A provider's error text as a message may show it: redacted, without a pasted traceback,
    and not too long."""
    return redact(text.split(_TRACEBACK, 1)[0].rstrip(), secrets)[:_DETAIL_CHARS]


def kind_of_status(status: int) -> FaultKind:
    """The fault an HTTP error status means (a response in hand, not a 2xx)."""
    if status in (401, 403):
        return "auth"
    if status == 404:
        return "not_found"
    if status == 408:
        return "timeout"
    if status == 409:
        return "conflict"
    if status == 429:
        return "rate_limited"
    if status >= 500:
        return "server"
    return "bad_request"


def rejects_format(status: int | None, message: str) -> bool:
    """Whether a provider's error is its refusal of our ``response_format`` (llama.cpp says so
    with a 500, Azure with a 400): read once, where the error arrives."""
    text = message.lower()
    return (status is None or status in (400, 422, 500, 501)) and any(
        name in text for name in ("response_format", "json_schema", "json_object")
    )


# How providers name a request longer than the model's window: the code or type of OpenAI's
# error (and Azure's), of llama.cpp server's and litellm's class; and the words OpenAI's message
# has said it in since 2023, which litellm reads too (so both paths read the same body alike).
_OVERFLOW_MARKS = (
    "context_length_exceeded",
    "exceed_context_size_error",
    "contextwindowexceeded",
    "maximum context length is",
)


def overflows_window(status: int | None, message: str) -> bool:
    """Whether a provider's error says the request is over the model's window (OpenAI's HTTP
    400 ``context_length_exceeded``, llama.cpp's ``exceed_context_size_error``): read once,
    where the error arrives."""
    text = message.lower()
    return (status is None or 400 <= status < 500) and any(mark in text for mark in _OVERFLOW_MARKS)


def retry_after_seconds(value: str | None) -> float | None:
    """A ``Retry-After`` header's seconds; None when absent, negative, or a date (not read)."""
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None
    return seconds if seconds >= 0 else None


def causes(error: BaseException) -> list[BaseException]:
    """The error and what caused it, at most ten links: litellm wraps the openai SDK's error,
    which wraps httpx's, which wraps the operating system's."""
    chain: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and current not in chain and len(chain) < 10:
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain
