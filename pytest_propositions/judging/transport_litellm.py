"""The litellm path: every provider litellm knows, and any model when --prop-transport=litellm.

The only module that imports litellm (inside functions: a cached run never does). It sends the
transport's request body through ``litellm.acompletion``, and consults what litellm knows of a
model (the parameters it would refuse, the structured-output mode it takes) once per model.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
from collections.abc import Iterator
from types import ModuleType
from typing import TYPE_CHECKING, Any

from . import families

if TYPE_CHECKING:
    from ..redaction import Secret
    from .families import Profile

__all__ = ["LitellmPath", "load_litellm"]

# litellm sends these providers through the openai SDK, whose client imports its ~450 resource
# modules on first use. A wrong guess costs time, never correctness.
_OPENAI_SDK_PROVIDERS = frozenset({"openai", "azure", "text-completion-openai", "custom_openai"})
_IMPORT_LOCK = threading.Lock()


def load_litellm(litellm_model: str | None = None) -> ModuleType:
    """Import litellm on demand, without letting it fetch its price map from the network.

    With ``litellm_model``, the client code that model's provider needs is imported too, here
    (before the clock of the first call starts, and off the shared event loop) rather than by
    the first request.
    """
    with _IMPORT_LOCK:
        if "litellm" not in sys.modules:
            os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
            with _host_loggers_kept():
                import litellm
        import litellm  # waits, if another thread is still importing it

        litellm.suppress_debug_info = True
        if (
            litellm_model is not None
            and "openai.resources" not in sys.modules
            and _provider(litellm, litellm_model) in _OPENAI_SDK_PROVIDERS
        ):
            import openai.resources  # noqa: F401
    return litellm


# Loggers whose level importing litellm sets (it silences httpx's request lines, for one).
_LOGGERS_LITELLM_RETUNES = ("httpx", "apscheduler.executors.default", "apscheduler.scheduler")
# litellm's own loggers: they write to a stderr handler of their own at any level the root allows.
_LITELLM_LOGGERS = ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy")


@contextlib.contextmanager
def _host_loggers_kept() -> Iterator[None]:
    """Import litellm without it retuning the host's loggers, and keep its own chatter quiet.

    litellm sets other libraries' logger levels at import; the user's logging must behave the
    same whether or not a claim needed litellm. Its own loggers are held at WARNING unless the
    user asked for more with ``LITELLM_LOG`` (otherwise ``--log-level=DEBUG`` floods the output
    with its request dumps).
    """
    kept = {name: logging.getLogger(name).level for name in _LOGGERS_LITELLM_RETUNES}
    try:
        yield
    finally:
        for name, level in kept.items():
            logging.getLogger(name).setLevel(level)
        if "LITELLM_LOG" not in os.environ:
            for name in _LITELLM_LOGGERS:
                own = logging.getLogger(name)
                if own.level == logging.NOTSET:
                    own.setLevel(logging.WARNING)


def _provider(litellm: ModuleType, litellm_model: str) -> str | None:
    try:
        return str(litellm.get_llm_provider(litellm_model)[1])
    except Exception:  # an unknown model fails later, on the call, with the real message
        return None


class AttemptTimeout(Exception):
    """The whole attempt outlasted --prop-timeout (the transport retries it as a timeout)."""

    transient = True


class LitellmPath:
    """Calls through litellm; what litellm knows of a model is asked once per model."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self._refusals: dict[tuple[str, tuple[str, ...]], str | None] = {}
        self._lock = threading.Lock()

    def first_mode(self, profile: Profile, modes: tuple[str, ...]) -> str:
        litellm = load_litellm(profile.model)
        return families.first_response_mode(litellm, profile.model, modes)

    def refusal(self, profile: Profile, sampling: dict[str, Any]) -> str | None:
        """Why litellm would refuse to send these parameters to this model, or None."""
        key = (profile.model, tuple(sorted(sampling)))
        with self._lock:
            if key in self._refusals:
                return self._refusals[key]
        reason = families.refusal_by_litellm(load_litellm(), profile.model, sampling)
        refusal = (
            None if reason is None else f"litellm refused the request before sending it: {reason}"
        )
        with self._lock:
            self._refusals[key] = refusal
        return refusal

    async def send(
        self,
        profile: Profile,
        body: dict[str, Any],
        api_base: Secret | None,
        api_key: Secret | None,
    ) -> Any:
        """One call; the deadline covers all of it, whatever litellm's client does per read.

        What this path cannot bound: the reply's size (litellm reads the body whole, inflated,
        before handing it over), nor see a key a body repeats (it parses the JSON itself).
        """
        import asyncio

        litellm = load_litellm()
        try:
            async with asyncio.timeout(self.timeout):
                return await litellm.acompletion(
                    model=profile.model,
                    **body,
                    timeout=self.timeout,
                    max_retries=0,  # retries are ours, so they are counted and bounded here
                    **({"api_version": profile.api_version} if profile.api_version else {}),
                    **_revealed(api_base=api_base, api_key=api_key),
                )
        except TimeoutError as error:
            raise AttemptTimeout(
                f"Request timed out after {self.timeout:g}s (--prop-timeout bounds the whole "
                "attempt)"
            ) from error

    async def aclose(self) -> None:
        """litellm keeps its own clients; nothing of ours to close."""

    @property
    def open(self) -> bool:
        return False


def completion_cost(response: Any) -> float | None:
    """litellm's price of a response it did not price itself."""
    litellm = load_litellm()
    try:
        cost = litellm.completion_cost(completion_response=response)
    except Exception:
        return None
    try:
        return float(cost) if cost else None
    except (TypeError, ValueError):
        return None


def _revealed(*, api_base: Secret | None, api_key: Secret | None) -> dict[str, str]:
    """The endpoint's keyword arguments in the clear, built inside the call expression only."""
    revealed: dict[str, str] = {}
    if api_base is not None and api_base.reveal():
        revealed["api_base"] = api_base.reveal()
    if api_key is not None and api_key.reveal():
        revealed["api_key"] = api_key.reveal()
    return revealed
