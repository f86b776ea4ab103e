"""What a judge call needs to reach a model: its identity, litellm's name for it, and where it is.

The engines that provide endpoints (the local judge) build a ``Connection``; the transport talks
to it; neither needs the judge that orchestrates them. A managed server also gives a ``Watch``:
how far it is with the call it answers, which the transport's deadline reads.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..errors import JudgeUnavailable
from ..redaction import Secret, redact_url, url_credentials
from . import families

__all__ = [
    "KEY_VARIABLE",
    "OWN_KEY_VARIABLE",
    "Connection",
    "Progress",
    "Watch",
    "credentials",
    "hosted_connection",
    "key_variable",
    "provider_key_variables",
]

# Which variable holds a judge's key, said here only (messages name them from here too).
#: Any judge's key, before the provider's own variables.
KEY_VARIABLE = "PROP_API_KEY"
#: The key of a referee or an escalation model that has a server of its own
#: (--prop-referee-api-base, --prop-escalate-api-base); else the main judge's.
OWN_KEY_VARIABLE = {"referee": "PROP_REFEREE_API_KEY", "escalation": "PROP_ESCALATE_API_KEY"}


@dataclass(frozen=True)
class Progress:
    """What a managed server says of its work at one moment: ``sign`` changes whenever it has
    moved on (a prompt read, a token written, another request taken up); ``tokens``, the tokens
    the reply in progress has so far (None when it writes none)."""

    sign: Hashable
    tokens: int | None = None


class Watch(Protocol):
    """A managed server on this machine, watched while it answers (``local.engine``): the
    transport's deadline for it is a time without progress, not a time in all."""

    def progress(self) -> Progress | None:
        """How far the server is now; None when it does not say within a moment. A server
        process that has exited raises ``JudgeUnavailable``, with what its log says."""
        ...

    def hung(self, message: str) -> str:
        """Stop the server, which made no progress, and remember why (later calls fail at once
        instead of waiting again); the message to raise, with what its log says."""
        ...


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
    # For a managed server on this machine: judged by its progress while it answers.
    watch: Watch | None = field(default=None, repr=False, compare=False)
    # Sampling parameters the endpoint requires (the local judge: greedy with a fixed seed); they
    # replace the judge's defaults in the request and in its cache key.
    sampling: Mapping[str, Any] | None = None
    # The endpoint decodes under a grammar made from the response schema (llama.cpp): it gets the
    # bounded schema, whose length caps stop a small model from writing until its context ends.
    grammar: bool = False
    # Azure OpenAI's api-version query parameter; not part of the cache key (like the api base).
    api_version: str | None = None
    # For a managed server: the window it serves each request, in tokens (read when first asked,
    # from its settings or its model file); else the model table says, where it knows the model.
    context: Callable[[], int] | None = field(default=None, repr=False, compare=False)

    def __repr__(self) -> str:
        return (
            f"Connection(identity={self.identity!r}, litellm_model={self.litellm_model!r}, "
            f"api_base={redact_url(self.api_base)!r}, "
            f"api_key={'[redacted]' if self.api_key else None!r})"
        )

    def profile(self, transport: str) -> families.Profile:
        """The model's profile under ``--prop-transport``: what the judge sends it and which
        path its calls take. A transport the model cannot take is a judge error."""
        return families.profile_of(self.litellm_model, transport, self.api_version)

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


def hosted_connection(
    model: str,
    api_base: str | None,
    *,
    api_version: str | None = None,
    key_env: str | None = None,
    api_key: str | None = None,
) -> Connection:
    """A provider's model (or a self-hosted OpenAI-compatible server at ``api_base``), the key
    read from PROP_API_KEY, else from ``key_env`` when given (the variable a reference-library
    config.ini's provider reads); without either litellm reads the provider's own variable.
    ``api_key``, when given, wins over both (a referee's own key)."""
    api_key = api_key or os.environ.get(KEY_VARIABLE) or None
    if api_key is None and key_env is not None:
        api_key = os.environ.get(key_env) or None
        missing = _missing_endpoint(model, api_base, api_key, key_env)
        if missing is not None:
            # Found on the first live call only: a replay needs neither endpoint nor key.
            return Connection(model, model, api_version=api_version, start=missing)
    if api_key is None and api_base and model.startswith("openai/"):
        # Self-hosted OpenAI-compatible servers rarely need a key, but the client insists.
        api_key = os.environ.get(key_variable(model)) or "no-key-needed"
    return Connection(model, model, api_base, api_key, api_version=api_version)


def _missing_endpoint(
    model: str, api_base: str | None, api_key: str | None, key_env: str
) -> Callable[[], tuple[str, str | None]] | None:
    # Only a run whose config.ini names an Azure judge gets here: a cached run never loads the
    # reader of config.ini (tests/test_cache_plugin.py holds it).
    from ..reference_config import AZURE_ENDPOINT_ENV

    problems = []
    if not api_base:
        problems.append(f"{AZURE_ENDPOINT_ENV} is not set (or give --prop-api-base)")
    if not api_key:
        problems.append(
            f"{key_env} is not set (or give {KEY_VARIABLE}); the reference library would sign in "
            "with Entra ID instead, which this plugin does not do"
        )
    if not problems:
        return None
    message = (
        f"config.ini names the Azure judge {model}, but " + "; and ".join(problems) + ". Or name "
        "another judge with --prop-model, which wins over config.ini"
    )

    def refuse() -> tuple[str, str | None]:
        raise JudgeUnavailable(message)

    return refuse


def credentials(
    api_key: str | Secret | None, api_base: str | Secret | None, model: str
) -> tuple[str | Secret | None, ...]:
    """What redaction must know of a call to ``model``: its key, its api_base's user and
    password, and the keys the provider's own variables hold, which the paths read when
    PROP_API_KEY and config.ini give none (litellm reads ``{PROVIDER}_API_KEY`` for the
    providers it alone knows)."""
    names = {
        name
        for keys in (row.key for row in families.OPENAI_COMPATIBLE_PROVIDERS.values())
        for name in keys
    }
    names.update(provider_key_variables(model))
    provider = tuple(os.environ.get(name) for name in sorted(names))
    return (api_key, *url_credentials(api_base), *provider)


def provider_key_variables(model: str) -> tuple[str, ...]:
    """The provider's own variables the paths read ``model``'s key from, in order, when
    PROP_API_KEY gives none: an OpenAI-compatible provider's, else litellm's
    ``{PROVIDER}_API_KEY`` (OpenAI's for a name without a provider)."""
    provider, _ = families.provider_of(model)
    if provider is not None:
        return families.OPENAI_COMPATIBLE_PROVIDERS[provider].key
    return ((model.split("/", 1)[0].upper() if "/" in model else "OPENAI") + "_API_KEY",)


def key_variable(model: str) -> str:
    """The provider's variable a message tells the user to set for ``model``'s key."""
    return provider_key_variables(model)[0]
