"""The judge a project configured for the reference simulation library already chose: the
``[OpenAI]`` section of its ``config.ini``, read as option values that plugin settings override.

The reference library reads its packaged defaults, then a ``config.ini`` in the working
directory. A project migrating from it keeps its judge model (and its Azure deployment) there,
so when no ``--prop-model`` is set (flag, environment or ini) that file names the judge.
"""

from __future__ import annotations

import configparser
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = ["FILE_NAME", "ReferenceConfig", "ReferenceConfigError", "find_reference_config"]

FILE_NAME = "config.ini"
SECTION = "OpenAI"
API_TYPES = ("openai", "azure")
# The reference library's packaged defaults (release 0.6.0) for what a project's file may omit.
DEFAULT_MODEL = "gpt-5-mini"
DEFAULT_REASONING_MODEL = "o3-mini"
DEFAULT_AZURE_API_VERSION = "2024-12-01-preview"
# Where the reference library reads its Azure endpoint and key (its Azure client).
AZURE_ENDPOINT_ENV = "AZURE_OPENAI_ENDPOINT"
AZURE_KEY_ENV = "AZURE_OPENAI_KEY"
# Honoured by the OpenAI SDK the reference library's OpenAI client is built on.
OPENAI_BASE_URL_ENV = "OPENAI_BASE_URL"


class ReferenceConfigError(ValueError):
    """A ``config.ini`` for the reference library that cannot name a judge; says which key."""


@dataclass(frozen=True)
class ReferenceConfig:
    """What the ``[OpenAI]`` section says about the judge."""

    path: Path
    api_type: str
    model: str
    reasoning_model: str
    azure_api_version: str | None = None
    timeout: str | None = None
    max_attempts: str | None = None
    reasoning_effort: str | None = None

    @property
    def provider(self) -> str:
        return "azure" if self.api_type == "azure" else "openai"

    def option_values(self, env: Mapping[str, str]) -> dict[str, tuple[str, str]]:
        """Raw values of the plugin's options, each with the key it came from (for messages)."""
        where = f"{self.path.name} [{SECTION}]"
        values: dict[str, tuple[str, str]] = {
            "model": (f"{self.provider}/{self.model}", f"{where} MODEL"),
            "reasoning_model": (
                f"{self.provider}/{self.reasoning_model}",
                f"{where} REASONING_MODEL",
            ),
        }
        if self.timeout is not None:
            values["timeout"] = (self.timeout, f"{where} TIMEOUT")
        if self.max_attempts is not None:
            values["retries"] = (_retries(self.max_attempts, where), f"{where} MAX_ATTEMPTS")
        if self.reasoning_effort is not None:
            values["reasoning_effort"] = (self.reasoning_effort, f"{where} REASONING_EFFORT")
        if self.api_type == "azure":
            values["api_version"] = (
                self.azure_api_version or DEFAULT_AZURE_API_VERSION,
                f"{where} AZURE_API_VERSION",
            )
            endpoint = env.get(AZURE_ENDPOINT_ENV, "").strip()
            if endpoint:
                values["api_base"] = (endpoint, f"environment variable {AZURE_ENDPOINT_ENV}")
        else:
            base = env.get(OPENAI_BASE_URL_ENV, "").strip()
            if base:
                values["api_base"] = (base, f"environment variable {OPENAI_BASE_URL_ENV}")
        return values

    def describe(self) -> str:
        """How the header names where the judge came from."""
        if self.api_type == "azure":
            version = self.azure_api_version or DEFAULT_AZURE_API_VERSION
            return f"{self.path.name} (Azure OpenAI, api-version {version})"
        return self.path.name


def _retries(max_attempts: str, where: str) -> str:
    """The reference counts attempts (the first one included); the plugin counts retries."""
    try:
        attempts = float(max_attempts)
    except ValueError:
        raise ReferenceConfigError(
            f"{where} MAX_ATTEMPTS: expected a whole number, got {max_attempts!r}"
        ) from None
    if not attempts.is_integer() or attempts < 1:
        raise ReferenceConfigError(
            f"{where} MAX_ATTEMPTS: expected a whole number of at least 1, got {max_attempts!r}"
        )
    return str(int(attempts) - 1)


def read_reference_config(path: Path) -> ReferenceConfig | None:
    """The file's ``[OpenAI]`` section, or None if it has none (another tool's config.ini)."""
    parser = configparser.ConfigParser(interpolation=None)
    try:
        with path.open(encoding="utf-8") as handle:
            parser.read_file(handle)
    except (OSError, UnicodeDecodeError, configparser.Error) as error:
        raise ReferenceConfigError(f"{path}: cannot be read as an ini file ({error})") from None
    if not parser.has_section(SECTION):
        return None
    section = parser[SECTION]
    where = f"{path.name} [{SECTION}]"

    def value(key: str) -> str | None:
        raw = section.get(key)
        return raw.strip() if raw is not None and raw.strip() else None

    api_type = (value("API_TYPE") or "openai").lower()
    if api_type not in API_TYPES:
        raise ReferenceConfigError(
            f"{where} API_TYPE={api_type}: this plugin can judge with openai or azure from "
            "config.ini; for another provider, name the judge with --prop-model (or "
            "PROP_MODEL, or prop_model in the pytest ini), which wins over config.ini"
        )
    effort = value("REASONING_EFFORT")
    return ReferenceConfig(
        path=path,
        api_type=api_type,
        model=value("MODEL") or DEFAULT_MODEL,
        reasoning_model=value("REASONING_MODEL") or DEFAULT_REASONING_MODEL,
        azure_api_version=value("AZURE_API_VERSION"),
        timeout=value("TIMEOUT"),
        max_attempts=value("MAX_ATTEMPTS"),
        reasoning_effort=effort.lower() if effort else None,
    )


def find_reference_config(folders: Iterable[Path]) -> ReferenceConfig | None:
    """The first of the folders' ``config.ini`` files that has an ``[OpenAI]`` section."""
    seen: set[Path] = set()
    for folder in folders:
        path = (folder / FILE_NAME).resolve()
        if path in seen or not path.is_file():
            continue
        seen.add(path)
        found = read_reference_config(path)
        if found is not None:
            return found
    return None
