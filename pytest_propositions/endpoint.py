"""How the judge reaches a model: an endpoint, possibly a managed server started on demand.

A module of its own so that the engines that provide endpoints (the local judge) need not import
the judge that uses them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Connection"]


@dataclass(frozen=True)
class Connection:
    """How litellm reaches a model. Credentials live here only, never in keys, records or logs."""

    identity: str  # what the cache key names: the model, or the local model file's checksum
    litellm_model: str
    api_base: str | None = None
    api_key: str | None = None
    # For a managed server: start it on the first real call; returns (api_base, api_key).
    start: Callable[[], tuple[str, str | None]] | None = None
    close: Callable[[], None] | None = None
    # Sampling parameters the endpoint requires (the local judge: greedy with a fixed seed); they
    # replace the judge's defaults in the request and in its cache key.
    sampling: Mapping[str, Any] | None = None
    # The endpoint decodes under a grammar made from the response schema (llama.cpp): it gets the
    # bounded schema, whose length caps stop a small model from writing until its context ends.
    grammar: bool = False

    def endpoint(self) -> tuple[str | None, str | None]:
        if self.start is not None:
            return self.start()
        return self.api_base, self.api_key
