"""How each model family must be asked (which sampling parameters it takes) and each
OpenAI-compatible provider reached (where its base URL and key are read from).

The cache key records the sampling parameters that are sent, so what is sent must be known on a
cached run, where litellm is never imported. The decision is therefore a pure function of the
model's name (the table below) and of ``--prop-reasoning-effort``:

- OpenAI reasoning models (o1, o3, o4 and their variants; gpt-5 and later except the
  ``gpt-5-chat`` models) get no temperature, which leaves them at the only value they accept,
  and the reasoning effort when one is set and the model takes that level;
- every other model gets the temperatures the judge has always used (check 0.5, score 1.0), so
  the keys of verdicts recorded before this table existed are unchanged.

litellm's own knowledge is consulted only on a live call, once it is imported anyway (by
``transport_litellm``). It may refine how the reply is asked for (the structured-output mode, which is not part of the key), but never what the key
records: when litellm knows that a model cannot take a parameter the table chose, the call is
refused with a message saying so, rather than sending something other than what the key says.
A test checks the table against every OpenAI and Azure chat model in litellm's map.
"""

from __future__ import annotations

import ipaddress
import re
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from ..errors import JudgeUnavailable
from ..settings import DEFAULT_MODEL, REASONING_EFFORTS, Settings
from ..verdict import CHECK, SCORE, Kind

# What the judge sends to a model that takes a temperature (the names are claim kinds).
TEMPERATURE: dict[str, float] = {CHECK: 0.5, SCORE: 1.0}
FOLLOW_UP_TEMPERATURE = 0.7

# Patterns are compiled at first use (re keeps them): most runs ask about one model, if any.
_O_SERIES = r"^o[1-9](?:-|$)"
_GPT_VERSION = r"^gpt-(\d)(?:\.(\d+))?(?=[.-]|$)"  # not gpt-35-turbo
_O_EFFORTS = frozenset({"low", "medium", "high"})


@dataclass(frozen=True)
class Family:
    """What a model family accepts: ``efforts`` is empty when it takes no reasoning effort."""

    name: str
    temperature: bool
    efforts: frozenset[str] = frozenset()


STANDARD = Family("standard", temperature=True)


def base_name(model: str) -> str:
    """The model's own name, without provider or deployment prefixes: ``o3-mini`` for
    ``openrouter/openai/o3-mini``."""
    return model.rsplit("/", 1)[-1].strip().lower()


def family_of(model: str) -> Family:
    """The family a model name belongs to; ``STANDARD`` for every name the table does not know."""
    name = base_name(model)
    if re.match(_O_SERIES, name):
        if name.startswith(("o1-mini", "o1-preview")):
            return Family("openai-reasoning", temperature=False)  # these take no effort either
        return Family("openai-reasoning", temperature=False, efforts=_O_EFFORTS)
    version = re.match(_GPT_VERSION, name)
    if version is not None and int(version.group(1)) >= 5 and not name.startswith("gpt-5-chat"):
        if "search" in name:  # the search variants take neither
            return Family("openai-reasoning", temperature=False)
        if (int(version.group(1)), int(version.group(2) or 0)) == (5, 0):
            return Family(
                "openai-reasoning", temperature=False, efforts=frozenset(REASONING_EFFORTS)
            )
        return Family("openai-reasoning", temperature=False, efforts=_O_EFFORTS)
    return STANDARD


@dataclass(frozen=True)
class ProviderVariables:
    """Where an OpenAI-compatible provider's base URL and key are read from when the options do
    not say (the variables litellm reads too); messages name the first of each."""

    base: tuple[str, ...]
    key: tuple[str, ...]


# Providers whose chat endpoint speaks OpenAI's wire format, reached by the light path (plain
# HTTP) unless --prop-transport=litellm: a new one is one row here. A name without a provider
# prefix is OpenAI's when it looks like one of OpenAI's chat models (litellm's own reading).
# Which variable holds a key, PROP_API_KEY first, is endpoint.py's rule; the rows are its data.
OPENAI_COMPATIBLE_PROVIDERS: dict[str, ProviderVariables] = {
    "openai": ProviderVariables(("OPENAI_BASE_URL", "OPENAI_API_BASE"), ("OPENAI_API_KEY",)),
    "azure": ProviderVariables(
        ("AZURE_API_BASE", "AZURE_OPENAI_ENDPOINT"), ("AZURE_API_KEY", "AZURE_OPENAI_API_KEY")
    ),
    "custom_openai": ProviderVariables(("OPENAI_BASE_URL", "OPENAI_API_BASE"), ("OPENAI_API_KEY",)),
    "hosted_vllm": ProviderVariables(("HOSTED_VLLM_API_BASE",), ("HOSTED_VLLM_API_KEY",)),
    "lm_studio": ProviderVariables(("LM_STUDIO_API_BASE",), ("LM_STUDIO_API_KEY",)),
}
OPENAI_COMPATIBLE = frozenset(OPENAI_COMPATIBLE_PROVIDERS)
_BARE_OPENAI = r"^(gpt-|chatgpt-|o[1-9](?:-|$))"


def provider_of(model: str) -> tuple[str | None, str]:
    """The provider a litellm model name names, and the model's name on the wire.

    ``(None, model)`` when the name is not one of an OpenAI-compatible provider's: litellm knows
    hundreds of providers, and only it can read those names.
    """
    prefix, slash, rest = model.partition("/")
    if slash and prefix in OPENAI_COMPATIBLE:
        return prefix, rest
    if not slash and re.match(_BARE_OPENAI, model.lower()):
        return "openai", model
    return None, model


def _self_hosted(url: str) -> bool:
    """A server on loopback or a private address: none of the hosted providers litellm knows by
    their address."""
    host = urllib.parse.urlsplit(url if "//" in url else f"//{url}").hostname or ""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private


def unnamed_providers(
    settings: Settings, named_by_litellm: Callable[[str], bool | None]
) -> list[str]:
    """Each judge sent to a self-hosted server (``--prop-api-base``, or a referee's or an
    escalation model's own, on loopback or a private address) under a name with no provider
    prefix that is no OpenAI model's and that litellm does not know by name
    (``named_by_litellm``: True, False, or None when it cannot tell): litellm would find no
    provider for it at the first live claim and send nothing. Told at a run's start, without
    litellm. Conservative: a name litellm may route (in its map, a Claude model's, a Replicate
    version's, a hosted provider's address it may know) is left to the first live call."""
    judges = (
        ("--prop-model", settings.model, settings.api_base, "--prop-api-base"),
        ("--prop-reasoning-model", settings.reasoning_model, settings.api_base, "--prop-api-base"),
        (
            "--prop-referee-model",
            settings.referee_model,
            settings.referee_api_base or settings.api_base,
            "--prop-referee-api-base" if settings.referee_api_base else "--prop-api-base",
        ),
        (
            "--prop-escalate-to",
            settings.escalate_to,
            settings.escalate_api_base or settings.api_base,
            "--prop-escalate-api-base" if settings.escalate_api_base else "--prop-api-base",
        ),
    )
    found = []
    for flag, model, base, base_flag in judges:
        if not model or not base or model == DEFAULT_MODEL or provider_of(model)[0] is not None:
            continue
        if "/" in model or ":" in model or "claude" in model.lower():
            continue  # a provider named, or a name litellm routes by a rule of its own
        if not _self_hosted(base) or named_by_litellm(model) is not False:
            continue
        found.append(
            f"{flag}={model} names no provider, and {base_flag} sends it to a server: "
            f"for an OpenAI-compatible server write {flag}=openai/{model}; for another "
            "provider, prefix the name with it as litellm does (anthropic/..., ollama/...)"
        )
    return found


@dataclass(frozen=True)
class Profile:
    """Everything the judge and both transports need to know about one model, resolved once per
    connection from its name: its family (what it is sent), its provider and wire name, and the
    path its calls take. A pure function of names, so cached runs build it without litellm."""

    model: str  # the connection's litellm name
    family: Family
    provider: str | None  # an OpenAI-compatible provider, or None (litellm's to know)
    wire_model: str
    path: Literal["litellm", "openai"]
    # Azure's API version chosen by the user (--prop-api-version, a reference config.ini);
    # None: the environment's, else the transports' default.
    api_version: str | None = None

    def sampling(self, kind: Kind, reasoning_effort: str | None) -> dict[str, Any]:
        """The sampling parameters sent for a claim of ``kind``; the key records them."""
        return _parameters(self.model, self.family, TEMPERATURE[kind], reasoning_effort)

    def follow_up_sampling(self, reasoning_effort: str | None) -> dict[str, Any]:
        return _parameters(self.model, self.family, FOLLOW_UP_TEMPERATURE, reasoning_effort)

    def effort_ignored(self, reasoning_effort: str | None) -> bool:
        return reasoning_effort is not None and not self.family.efforts


def profile_of(model: str, transport: str = "auto", api_version: str | None = None) -> Profile:
    """The profile of ``model`` (a litellm name) under ``--prop-transport``; a transport the
    model cannot take is a judge error."""
    provider, wire_model = provider_of(model)
    if transport == "openai" and provider is None:
        raise JudgeUnavailable(
            f"--prop-transport=openai cannot reach {model}: only OpenAI-compatible providers "
            f"({', '.join(sorted(OPENAI_COMPATIBLE))}, or a bare OpenAI model name) take the "
            "light path; use --prop-transport=auto or litellm, or, for an OpenAI-compatible "
            f"server, write the model as openai/{model}"
        )
    path: Literal["litellm", "openai"] = (
        "openai" if provider is not None and transport != "litellm" else "litellm"
    )
    return Profile(model, family_of(model), provider, wire_model, path, api_version)


class UnsupportedEffort(ValueError):
    """The model takes a reasoning effort, but not the level that was asked for."""


def sampling(model: str, kind: Kind, reasoning_effort: str | None) -> dict[str, Any]:
    """The sampling parameters sent to ``model`` for a claim of ``kind``; the key records them.

    A reasoning effort is left out for models that take none (see ``Profile.effort_ignored``).
    """
    return _parameters(model, family_of(model), TEMPERATURE[kind], reasoning_effort)


def follow_up_sampling(model: str, reasoning_effort: str | None) -> dict[str, Any]:
    """The sampling parameters of a free-text follow-up question (never cached)."""
    return _parameters(model, family_of(model), FOLLOW_UP_TEMPERATURE, reasoning_effort)


def _parameters(
    model: str, family: Family, temperature: float, reasoning_effort: str | None
) -> dict[str, Any]:
    parameters: dict[str, Any] = {}
    if family.temperature:
        parameters["temperature"] = temperature
    if reasoning_effort is not None and family.efforts:
        if reasoning_effort not in family.efforts:
            raise UnsupportedEffort(
                f"--prop-reasoning-effort={reasoning_effort} is not a level {model} takes; "
                f"it takes {', '.join(e for e in REASONING_EFFORTS if e in family.efforts)}"
            )
        parameters["reasoning_effort"] = reasoning_effort
    return parameters
