"""The litellm path: every provider litellm knows, and any model when --prop-transport=litellm.

The only module that imports litellm (inside functions: a cached run never does). It sends the
transport's request body through ``litellm.acompletion``, and consults what litellm knows of a
model (the parameters it would refuse, the structured-output mode it takes) once per model.
"""

from __future__ import annotations

import os
import sys
import threading
from types import ModuleType
from typing import TYPE_CHECKING, Any

from . import families

if TYPE_CHECKING:
    from .families import Profile
    from .redaction import Secret

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
        import litellm  # waits, if another thread is still importing it

        litellm.suppress_debug_info = True
        if (
            litellm_model is not None
            and "openai.resources" not in sys.modules
            and _provider(litellm, litellm_model) in _OPENAI_SDK_PROVIDERS
        ):
            import openai.resources  # noqa: F401
    return litellm


def _provider(litellm: ModuleType, litellm_model: str) -> str | None:
    try:
        return str(litellm.get_llm_provider(litellm_model)[1])
    except Exception:  # an unknown model fails later, on the call, with the real message
        return None


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
        refusal = families.refusal_by_litellm(load_litellm(), profile.model, sampling)
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
        litellm = load_litellm()
        return await litellm.acompletion(
            model=profile.model,
            **body,
            timeout=self.timeout,
            max_retries=0,  # retries are ours, so they are counted and bounded in one place
            **_revealed(api_base=api_base, api_key=api_key),
        )

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
