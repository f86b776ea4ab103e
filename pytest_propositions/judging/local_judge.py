"""``LocalJudge``: what the core needs of a judge served on this machine, and the ``Connection``
the judge reaches it through.

The ``local`` wing (llama.cpp with a bundled model, ``local.engine``) implements it; the core
names the wing in one place only, ``runtime.connector``, which imports it on first use. Nothing
else here knows which engine serves the model.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from .endpoint import Connection, Watch

__all__ = ["LocalJudge", "managed_connection"]


class LocalJudge(Watch, Protocol):
    """A model server this process starts on the first real call and stops on close; watched
    while it answers (``Watch``: its progress, and stopping it when it has none)."""

    @property
    def identity(self) -> str:
        """What cache keys call the model: known without starting the server."""
        ...

    @property
    def litellm_model(self) -> str:
        """The model name litellm sends to the server's OpenAI-compatible endpoint."""
        ...

    @property
    def sampling(self) -> Mapping[str, Any]:
        """The sampling every request carries (and its cache key names)."""
        ...

    @property
    def grammar(self) -> bool:
        """Whether the server decodes under a grammar made from the response schema."""
        ...

    def context(self) -> int:
        """The window the server gives each request, in tokens (known without starting it)."""
        ...

    def start(self) -> tuple[str, str | None]:
        """Start the server if it is not up, wait until it answers; its (api_base, api_key)."""
        ...

    def stop(self) -> None:
        """Stop the server if it runs (a later ``start`` starts it again)."""
        ...


def managed_connection(judge: LocalJudge) -> Connection:
    """How the judge reaches a local model: started on the first cache miss, never before."""
    return Connection(
        identity=judge.identity,
        litellm_model=judge.litellm_model,
        start=judge.start,
        close=judge.stop,
        sampling=judge.sampling,
        grammar=judge.grammar,
        watch=judge,
        context=judge.context,
    )
