"""How the judge reaches a model: an endpoint, possibly a managed server started on demand.

A module of its own so that the engines that provide endpoints (the local judge) need not import
the judge that uses them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Connection", "Secret", "redact_url"]

# "https://user:pass@host/v1": the credentials between the scheme and the "@".
_URL_USERINFO = re.compile(r"(?<=://)[^/?#@\s'\"]+@")
# "...?api_key=...&token=...": credentials in a query string.
_URL_QUERY_SECRET = re.compile(
    r"(?<=[?&])((?:api[_-]?key|key|token|access_token|auth|sig|signature|password)=)[^&#\s'\"]+",
    re.IGNORECASE,
)


def redact_url(url: str | None) -> str | None:
    """The URL as it may be shown: no user, no password, no key in its query."""
    if url is None:
        return None
    return _URL_QUERY_SECRET.sub(r"\1[redacted]", _URL_USERINFO.sub("[redacted]@", url))


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


@dataclass(frozen=True)
class Connection:
    """How litellm reaches a model. Credentials live here only, never in keys, records or logs;
    its repr shows neither the key nor the user and password an api_base URL may carry."""

    identity: str  # what the cache key names: the model, or the local model file's checksum
    litellm_model: str
    api_base: str | None = field(default=None, repr=False)
    api_key: str | None = field(default=None, repr=False)
    # For a managed server: start it on the first real call; returns (api_base, api_key).
    start: Callable[[], tuple[str, str | None]] | None = field(default=None, repr=False)
    close: Callable[[], None] | None = field(default=None, repr=False)
    # Sampling parameters the endpoint requires (the local judge: greedy with a fixed seed); they
    # replace the judge's defaults in the request and in its cache key.
    sampling: Mapping[str, Any] | None = None
    # The endpoint decodes under a grammar made from the response schema (llama.cpp): it gets the
    # bounded schema, whose length caps stop a small model from writing until its context ends.
    grammar: bool = False

    def __repr__(self) -> str:
        return (
            f"Connection(identity={self.identity!r}, litellm_model={self.litellm_model!r}, "
            f"api_base={redact_url(self.api_base)!r}, "
            f"api_key={'[redacted]' if self.api_key else None!r})"
        )

    @property
    def shown_base(self) -> str | None:
        """The api_base as messages may show it."""
        return redact_url(self.api_base)

    def endpoint(self) -> tuple[str | None, str | None]:
        if self.start is not None:
            return self.start()
        return self.api_base, self.api_key

    def secret_endpoint(self) -> tuple[Secret | None, Secret | None]:
        """The endpoint with both parts wrapped, for code whose frames a traceback may show."""
        api_base, api_key = self.endpoint()
        return (
            None if api_base is None else Secret(api_base, shown=redact_url(api_base) or ""),
            None if api_key is None else Secret(api_key),
        )
