"""The litellm path: every provider litellm knows, and any model when --prop-transport=litellm.

The only module that imports litellm and the openai SDK (inside functions: a cached run never
does). It sends the transport's request body through ``litellm.acompletion``, consults what
litellm knows of a model (the parameters it would refuse, the structured-output mode it takes)
once per model, and turns litellm's exceptions into the transport's ``Fault`` by one table.
"""

from __future__ import annotations

import contextlib
import errno
import importlib.util
import json
import logging
import os
import socket
import sys
import threading
from collections.abc import Iterator
from types import ModuleType
from typing import TYPE_CHECKING, Any

from ..redaction import Secret, url_credentials
from . import families
from .faults import (
    TRANSIENT,
    Fault,
    FaultKind,
    causes,
    kind_of_status,
    overflows_window,
    rejects_format,
    retry_after_seconds,
    shown_detail,
)

if TYPE_CHECKING:
    from .families import Profile

__all__ = ["LitellmPath", "fault_of", "load_litellm"]

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
        names = _names(litellm, litellm_model) if litellm_model is not None else None
        if names is not None and names[1] in _OPENAI_SDK_PROVIDERS:
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


def _names(litellm: ModuleType, model: str) -> tuple[str, str] | None:
    """litellm's name for the model and its provider; None for a provider litellm does not
    know (the call itself then fails, with litellm's message)."""
    try:
        name, provider, *_ = litellm.get_llm_provider(model)
    except Exception:
        return None
    return str(name), str(provider)


def refusal_by_litellm(litellm: ModuleType, model: str, parameters: dict[str, Any]) -> str | None:
    """Why litellm would refuse to send these parameters to ``model``, or None.

    litellm lists the OpenAI parameters each provider and model takes; a parameter missing
    from that list is refused before anything is sent. Saying so up front names the
    parameter and where it came from (the model-family table, which the cache key records).
    """
    names = _names(litellm, model)
    if names is None:
        return None
    name, provider = names
    try:
        supported = litellm.get_supported_openai_params(model=name, custom_llm_provider=provider)
    except Exception:
        return None
    if not supported:
        return None
    missing = [parameter for parameter in parameters if parameter not in supported]
    if not missing:
        return None
    return (
        f"litellm reports that {model} takes no {', '.join(missing)}, which the model-family "
        f"table of pytest-propositions sends to the {families.family_of(model).name} family"
    )


# litellm's bundled model map (what it reads with LITELLM_LOCAL_MODEL_COST_MAP): the names it
# routes without a provider prefix. Read as data, so that a run's start can tell a name no
# provider serves without importing litellm (seconds).
_MODEL_MAP = "model_prices_and_context_window_backup.json"


def named_in_litellms_map(model: str) -> bool | None:
    """Whether litellm's bundled model map names ``model``; None when it cannot be read
    (litellm missing, another layout): then only the first live call can tell."""
    spec = importlib.util.find_spec("litellm")  # finds the package, does not import it
    folders = spec.submodule_search_locations if spec is not None else None
    if not folders:
        return None
    try:
        with open(os.path.join(next(iter(folders)), _MODEL_MAP), encoding="utf-8") as handle:
            names = json.load(handle)
    except (OSError, ValueError):
        return None
    return isinstance(names, dict) and model in names


def unrouted_by_litellm(litellm: ModuleType, model: str, api_base: str | None) -> str | None:
    """Why litellm cannot send a request for ``model`` to any provider, or None.

    litellm routes a name by its provider prefix (``openai/``, ``anthropic/``...); a name
    without one only when it is in litellm's model map (``claude-3-5-haiku-20241022``), matches
    one of its rules for new models, or ``api_base`` is a provider's address it knows. Any
    other name (``my-model`` for a self-hosted server) fails before a request is made, with
    an HTTP 400 that no server sent: asked here, before the first call, it is said once.
    """
    prefix, slash, _ = model.partition("/")
    if slash and prefix in litellm.provider_list:
        return None  # a provider named: litellm routes it (and some providers sign in here)
    try:
        litellm.get_llm_provider(model=model, api_base=api_base)
    except Exception as error:
        text = str(error)
        if _NO_PROVIDER in text.lower():
            return shown_detail(text, url_credentials(api_base))
    return None


def first_response_mode(litellm: ModuleType, model: str, modes: tuple[str, ...]) -> str:
    """The structured-output mode to try first, from what litellm knows of the model.

    Only a model in litellm's map is moved down: for one it does not know, litellm answers
    "no" to everything, and the provider's own refusal is the better guide.
    """
    names = _names(litellm, model)
    if names is None:
        return modes[0]
    name, provider = names
    try:
        litellm.get_model_info(model=name, custom_llm_provider=provider)
        supported = litellm.get_supported_openai_params(model=name, custom_llm_provider=provider)
        schema = bool(litellm.supports_response_schema(model=name, custom_llm_provider=provider))
    except Exception:  # not in the map
        return modes[0]
    if supported is not None and "response_format" not in supported:
        return modes[-1]
    return modes[0] if schema else modes[1]


class LitellmPath:
    """Calls through litellm; what litellm knows of a model is asked once per model."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self._refusals: dict[tuple[str, tuple[str, ...]], str | None] = {}
        self._unrouted: dict[tuple[str, str], str | None] = {}
        self._lock = threading.Lock()

    def first_response_mode(self, profile: Profile, modes: tuple[str, ...]) -> str:
        """The structured-output mode the response-format fallback starts at."""
        return first_response_mode(load_litellm(profile.model), profile.model, modes)

    def unrouted(self, profile: Profile, api_base: str | None) -> str | None:
        """litellm's words when it can name no provider for this model, or None; asked once
        per model and endpoint."""
        key = (profile.model, api_base or "")
        with self._lock:
            if key in self._unrouted:
                return self._unrouted[key]
        reason = unrouted_by_litellm(load_litellm(), profile.model, api_base)
        with self._lock:
            self._unrouted[key] = reason
        return reason

    def refusal(self, profile: Profile, sampling: dict[str, Any]) -> str | None:
        """Why litellm would refuse to send these parameters to this model, or None."""
        key = (profile.model, tuple(sorted(sampling)))
        with self._lock:
            if key in self._refusals:
                return self._refusals[key]
        reason = refusal_by_litellm(load_litellm(), profile.model, sampling)
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
        """One call. What this path cannot bound: the reply's size (litellm reads the body
        whole, inflated, before handing it over), nor see a key a body repeats (it parses the
        JSON itself)."""
        litellm = load_litellm()
        try:
            return await litellm.acompletion(
                model=profile.model,
                **body,
                timeout=self.timeout,
                max_retries=0,  # transient retries are the transport's, counted and bounded there
                **({"api_version": profile.api_version} if profile.api_version else {}),
                **_revealed(api_base=api_base, api_key=api_key),
            )
        except Exception as error:
            # Read litellm's error here and let it go: its text and its traceback's frames may
            # quote the key. Raised outside the handler, the fault chains nothing.
            fault = fault_of(error, (api_key, *url_credentials(api_base)))
        raise fault

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


# -- litellm's exceptions, as faults ---------------------------------------------------------------

# litellm's exception classes, the most specific first (litellm.UnsupportedParamsError is a
# BadRequestError; litellm.Timeout an openai APIConnectionError), and the fault each one is.
# Any other litellm.APIError is read by its status.
_KINDS: tuple[tuple[str, FaultKind], ...] = (
    ("UnsupportedParamsError", "client_refused"),
    ("ContextWindowExceededError", "context_overflow"),
    ("AuthenticationError", "auth"),
    ("PermissionDeniedError", "auth"),
    ("NotFoundError", "not_found"),
    ("RateLimitError", "rate_limited"),
    ("Timeout", "timeout"),
    ("APIConnectionError", "connection"),
    ("BadRequestError", "bad_request"),
    ("UnprocessableEntityError", "bad_request"),
    ("ServiceUnavailableError", "server"),
    ("InternalServerError", "server"),
    ("BadGatewayError", "server"),
    ("APIResponseValidationError", "invalid_response"),
)

# The faults in which no HTTP status came from the server, whatever status litellm gives them
# (a made-up 500 for a refused or dropped connection, a 408 for its own timeout, a 400 for a
# parameter it refuses to send): a user searching their server's logs would find nothing.
_NO_STATUS: frozenset[FaultKind] = frozenset(
    {
        "client_refused",
        "format_refused",
        "no_provider",
        "missing_key",
        "refused_connection",
        "connection",
        "timeout",
        "invalid_response",
    }
)

# What litellm and the openai SDK say, in words only, when the client had no key to send
# (litellm reports it as a 500, but retrying cannot help) ...
_MISSING_KEY = (
    "missing credentials",
    "api_key client option must be set",
    "no api key",
    "api key not found",
    "missing api key",
)
# ... when it knows no provider for the model's name (it sends nothing, and reports a 400) ...
_NO_PROVIDER = "llm provider not provided"
# ... and for an HTTP 200 whose body is JSON but not a chat completion.
_INVALID_RESPONSE = ("invalid response object", "returned 'choices' that is not")
# The operating system's reasons nothing could be reached: no listener, no route, no such name.
_UNREACHABLE = frozenset({errno.ECONNREFUSED, errno.EHOSTUNREACH, errno.ENETUNREACH})


def fault_of(error: BaseException, secrets: tuple[Secret | None, ...] = ()) -> Fault:
    """The fault a litellm call raised, its detail redacted of ``secrets``: litellm's class
    says the kind (``_KINDS``), refined where litellm blurs what happened (a refused connection
    or a missing key reported as a 500, a refused response_format inside a 400 or a 500)."""
    chain = causes(error)
    texts = " ".join(str(link).lower() for link in chain)
    raw_status = getattr(error, "status_code", None)
    raw_status = raw_status if isinstance(raw_status, int) else None
    kind = _class_kind(error, raw_status)
    if kind == "client_refused":
        kind = "format_refused" if rejects_format(None, str(error)) else kind
    elif _NO_PROVIDER in texts:
        kind = "no_provider"
    elif rejects_format(raw_status, str(error)):
        kind = "format_rejected"
    elif kind == "bad_request" and overflows_window(raw_status, texts):
        kind = "context_overflow"
    elif "credentials encoded in url" in texts:
        kind = "url_credentials"
    elif any(_unreachable(link) for link in chain):
        kind = "refused_connection"
    elif any(marker in texts for marker in _MISSING_KEY):
        kind = "missing_key"
    elif kind in TRANSIENT and any(marker in texts for marker in _INVALID_RESPONSE):
        kind = "invalid_response"
    status = _sent_status(chain, kind, raw_status)
    retry_after = _retry_after(chain) if kind in TRANSIENT else None
    return Fault(kind, shown_detail(str(error), secrets), status, retry_after)


def _class_kind(error: BaseException, status: int | None) -> FaultKind:
    litellm = sys.modules.get("litellm")
    if litellm is not None:
        for name, kind in _KINDS:
            if isinstance(error, getattr(litellm, name)):
                return kind
    if status is not None:
        return kind_of_status(status)
    return "bad_request"


def _unreachable(link: BaseException) -> bool:
    return isinstance(link, ConnectionRefusedError | socket.gaierror) or (
        isinstance(link, OSError) and link.errno in _UNREACHABLE
    )


def _retry_after(chain: list[BaseException]) -> float | None:
    """The Retry-After of the response the server sent (a 429, a 503), which the openai SDK's
    status errors, and litellm's subclasses of them, keep."""
    import openai

    for link in chain:
        if isinstance(link, openai.APIStatusError):
            # litellm's own refusals (UnsupportedParamsError) are status errors without one.
            response = getattr(link, "response", None)
            headers = getattr(response, "headers", None)
            return None if headers is None else retry_after_seconds(headers.get("retry-after"))
    return None


def _sent_status(chain: list[BaseException], kind: FaultKind, status: int | None) -> int | None:
    """The HTTP status the server really sent: the openai SDK's own error holds it (litellm's
    classes, its subclasses, may hold one made up)."""
    if kind in ("client_refused", "format_refused"):
        return None
    for link in chain:
        if type(link).__module__.split(".")[0] == "openai":
            sent = getattr(link, "status_code", None)
            return sent if isinstance(sent, int) else None
    from litellm.llms.openai.common_utils import OpenAIError

    if kind in _NO_STATUS or any(isinstance(link, OpenAIError) for link in chain):
        return None  # litellm's own OpenAIError: it read no valid response, whatever it says
    return status
