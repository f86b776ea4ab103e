"""Talking to an endpoint: one request shape and one reading of faults, over two paths.

An OpenAI-compatible endpoint (OpenAI, Azure OpenAI, the local judge, any --prop-api-base) is
asked over plain HTTP (``transport_http``); every other provider through litellm
(``transport_litellm``), which ``--prop-transport=litellm`` forces for every model. Both read the
model's one ``Profile`` (resolved once per connection) and are sent the same body: the
structured-output mode (and the per-model fallback when a provider rejects one), the sampling
parameters as given. Here, shared by both: retries with backoff on transient faults, a bound on
calls in flight, an error the user can act on for every other fault, and reading what a
response holds (the reply text or refusal, the tokens used, the cost).
"""

from __future__ import annotations

import contextvars
import inspect
import logging
import os
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import JudgeReplyInvalid, JudgeUnavailable
from ..redaction import Secret, redact, remember_secrets, url_credentials
from ..scale import MAX_SCORE, MIN_SCORE
from . import families

if TYPE_CHECKING:
    import asyncio

    from ..settings import Settings
    from ..verdict import Kind
    from .endpoint import Connection
    from .families import Profile
    from .prompts import Message

logger = logging.getLogger("pytest_propositions")

# Structured-output strategies, best first. A provider that rejects one moves the model to the
# next for the rest of the run; the prompt always describes the schema, so every mode works.
RESPONSE_MODES = ("json_schema", "json_object", "text")

# Caps on the reply's text in JSON mode (see reply_schema).
REASONING_MAX_CHARS = 800
JUSTIFICATION_MAX_CHARS = 500

# The seconds a live verdict's calls waited for a free slot (the semaphore below): queueing for
# a managed local server, which answers one call at a time, is not judging. The judge sets a list
# here for each verdict and subtracts what the calls add to it.
queue_waits: contextvars.ContextVar[list[float] | None] = contextvars.ContextVar(
    "prop_queue_waits", default=None
)
_BACKOFF_SECONDS = 0.25
_BACKOFF_CAP_SECONDS = 8.0


class _Transient(Exception):
    """A fault worth another attempt, as retries see it: the fault as read, never the provider's
    error (whose text may quote the key)."""

    def __init__(self, fault: _Fault) -> None:
        super().__init__(fault.type_name)
        self.fault = fault


def _transient_fault(state: Any) -> _Fault:
    outcome = state.outcome
    error = outcome.exception() if outcome is not None else None
    assert isinstance(error, _Transient)
    return error.fault


class TransportPath(Protocol):
    """What each path to a model provides (``transport_http.HttpPath``,
    ``transport_litellm.LitellmPath``): the first response mode, its refusal of a request
    before sending it (a sentence, or None: the light path refuses nothing), one call, and
    closing what it holds. ``Transport`` asks these of whichever path a model takes."""

    def first_mode(self, profile: Profile, modes: tuple[str, ...]) -> str: ...

    def refusal(self, profile: Profile, sampling: dict[str, Any]) -> str | None: ...

    async def send(
        self,
        profile: Profile,
        body: dict[str, Any],
        api_base: Secret | None,
        api_key: Secret | None,
    ) -> Any: ...

    async def aclose(self) -> None: ...

    @property
    def open(self) -> bool: ...


def reply_schema(kind: Kind, *, bounded: bool = False) -> dict[str, Any]:
    """JSON schema of the reply; the value's type and range depend on the kind of claim.

    ``bounded`` caps the text fields: grammar-constrained servers (llama.cpp) enforce it, which
    keeps a small local model from writing until its context runs out.
    """
    value: dict[str, Any] = (
        {"type": "boolean"}
        if kind == "check"
        else {"type": "integer", "minimum": MIN_SCORE, "maximum": MAX_SCORE}
    )
    reasoning: dict[str, Any] = {"type": "string"}
    justification: dict[str, Any] = {"type": "string"}
    confidence: dict[str, Any] = {"type": "number", "minimum": 0, "maximum": 1}
    if bounded:
        # llama.cpp's grammar ignores minimum/maximum but enforces an enum (a confidence out of
        # 0..1, which a small model writes, breaks the reply contract).
        if kind == "score":
            value["enum"] = list(range(MIN_SCORE, MAX_SCORE + 1))
        confidence["enum"] = [tenths / 10 for tenths in range(11)]
        reasoning["maxLength"] = REASONING_MAX_CHARS
        justification["maxLength"] = JUSTIFICATION_MAX_CHARS
    return {
        "type": "object",
        "properties": {
            "reasoning": reasoning,
            "justification": justification,
            "value": value,
            "confidence": confidence,
        },
        "required": ["reasoning", "justification", "value", "confidence"],
        "additionalProperties": False,
    }


def response_format(mode: str, kind: Kind, *, grammar: bool = False) -> dict[str, Any] | None:
    """The request's ``response_format``; ``grammar``: the endpoint enforces the schema while
    decoding (llama.cpp), so the bounded schema is sent in ``json_schema`` mode too."""
    if mode == "json_schema":
        return {
            "type": "json_schema",
            "json_schema": {
                "name": f"{kind}_verdict",
                "schema": reply_schema(kind, bounded=grammar),
                "strict": True,
            },
        }
    if mode == "json_object":
        # llama.cpp's server constrains generation with this schema; others ignore the extra key.
        return {"type": "json_object", "schema": reply_schema(kind, bounded=True)}
    return None


def _status(error: BaseException) -> int | None:
    status = getattr(error, "status_code", None)
    return status if isinstance(status, int) else None


def _is_format_rejection(error: BaseException) -> bool:
    """A provider refusing our response_format: llama.cpp says so with a 500, Azure with a 400."""
    status = _status(error)
    message = str(error).lower()
    return (status is None or status in (400, 422, 500, 501)) and (
        "response_format" in message or "json_schema" in message or "json_object" in message
    )


def _chain(error: BaseException) -> list[BaseException]:
    """The error and what caused it: litellm wraps a refused connection in a generic 500."""
    seen: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and current not in seen and len(seen) < 10:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def _is_connection_refused(error: BaseException) -> bool:
    for link in _chain(error):
        message = str(link).lower()
        if type(link).__name__ == "ConnectError" or any(
            marker in message
            for marker in (
                "connection refused",
                "connect call failed",
                "name or service not known",
                "nodename nor servname",
                "no route to host",
            )
        ):
            return True
    return False


_MISSING_KEY_MARKERS = (
    "missing credentials",
    "api_key client option must be set",
    "no api key",
    "api key not found",
    "missing api key",
)


def _is_missing_key(error: BaseException) -> bool:
    """The client had no key to send: litellm reports that as a 500, but retrying cannot help."""
    return any(
        marker in str(link).lower() for link in _chain(error) for marker in _MISSING_KEY_MARKERS
    )


def _is_transient(error: BaseException) -> bool:
    if getattr(error, "transient", None) is True:  # the light path says so itself
        return True
    status = _status(error)
    if status is not None:
        return status in (408, 409, 429) or status >= 500
    name = type(error).__name__.lower()
    return "timeout" in name or "connection" in name


def _provider_keys(profile: families.Profile) -> tuple[str | None, ...]:
    """The keys the provider's own variables hold, which the paths read when PROP_API_KEY and
    config.ini give none (litellm reads ``{PROVIDER}_API_KEY`` for the providers it alone knows)."""
    names = {name for _, keys in families.PROVIDER_ENV.values() for name in keys}
    prefix = profile.model.split("/", 1)[0].upper() if "/" in profile.model else "OPENAI"
    names.add(f"{prefix}_API_KEY")
    return tuple(os.environ.get(name) for name in sorted(names))


def _credentials_in_url(connection: Connection) -> str:
    shown_base = connection.shown_base
    where = f"model {connection.identity}" + (f" at {shown_base}" if shown_base else "")
    return (
        f"the judge ({where}) cannot be called with a user and password inside "
        "--prop-api-base: the HTTP client refuses to send them along with the API key. "
        "Remove them from the URL and give the key with PROP_API_KEY."
    )


def _key_hint(model: str) -> str:
    provider = model.split("/", 1)[0].upper() if "/" in model else "OPENAI"
    return f"{provider}_API_KEY (or PROP_API_KEY)"


def _received_status(error: BaseException) -> int | None:
    """The HTTP status the server really sent, if any.

    litellm makes up a 500 for a refused or dropped connection, a 408 for its own client-side
    timeout and a 400 for a parameter it refuses to send; a user searching their server's logs
    for those would find nothing.
    """
    if families.is_client_side_refusal(error):
        return None
    for link in _chain(error):
        if type(link).__module__.split(".")[0] == "openai":
            status = getattr(link, "status_code", None)
            return status if isinstance(status, int) else None
    for link in _chain(error):
        name = type(link).__name__
        if name == "OpenAIError" or "timeout" in name.lower():
            return None
    return _status(error)


class Transport:
    """Sends completions to endpoints, remembering per model which response mode works, and
    bounding the calls in flight; shared by every claim of a run."""

    def __init__(
        self,
        settings: Settings,
        profile: Callable[[Connection], Profile],
        sleep: Callable[[float], object] | None = None,
    ) -> None:
        self.settings = settings
        self._profile = profile
        self._sleep = sleep
        self._modes: dict[str, int] = {}
        self._paths: dict[str, TransportPath] = {}
        self._semaphores: dict[str, asyncio.Semaphore] = {}
        self._lock = threading.Lock()

    def profile(self, connection: Connection) -> Profile:
        """The model's profile: what the judge sends it, how its replies are read, and which
        path its calls take (the judge's, resolved once per model)."""
        return self._profile(connection)

    def _path(self, profile: Profile) -> TransportPath:
        with self._lock:
            path = self._paths.get(profile.path)
            if path is None:
                if profile.path == "litellm":
                    from .transport_litellm import LitellmPath

                    path = LitellmPath(self.settings.timeout)
                else:
                    from .transport_http import HttpPath

                    path = HttpPath(self.settings.timeout, self.settings.max_reply_bytes)
                self._paths[profile.path] = path
            return path

    def prepare(self, connection: Connection) -> None:
        """Before a model's first live call, in the calling thread (never on the shared event
        loop, which the imports would stall): its path's imports, and its first response mode."""
        profile = self.profile(connection)
        with self._lock:
            if connection.litellm_model in self._modes:
                return
        mode = self._path(profile).first_mode(profile, RESPONSE_MODES)
        with self._lock:
            self._modes.setdefault(connection.litellm_model, RESPONSE_MODES.index(mode))

    def mode(self, connection: Connection) -> str:
        """The structured-output mode this model is at now (fallbacks only move it down)."""
        return RESPONSE_MODES[self._modes.get(connection.litellm_model, 0)]

    @property
    def open(self) -> bool:
        """Whether a path holds something (a pooled HTTP client) that ``aclose`` must release."""
        with self._lock:
            return any(path.open for path in self._paths.values())

    async def aclose(self) -> None:
        with self._lock:
            paths = list(self._paths.values())
        for path in paths:
            await path.aclose()

    async def complete_with_fallback(
        self,
        connection: Connection,
        messages: list[Message],
        *,
        sampling: dict[str, Any],
        kind: Kind,
        mode: str,
    ) -> Any:
        """A completion in ``mode``, or in the next mode for good if the provider rejects it."""
        while True:
            try:
                return await self.complete(
                    connection, messages, sampling=sampling, mode=mode, kind=kind
                )
            except JudgeUnavailable as error:
                if not error.format_rejected or mode == RESPONSE_MODES[-1]:
                    raise
                index = RESPONSE_MODES.index(mode) + 1
                logger.info(
                    "%s rejected response_format %s; using %s from now on",
                    connection.identity,
                    mode,
                    RESPONSE_MODES[index],
                )
                with self._lock:
                    self._modes[connection.litellm_model] = max(
                        index, self._modes.get(connection.litellm_model, 0)
                    )
                mode = RESPONSE_MODES[index]

    async def complete(
        self,
        connection: Connection,
        messages: list[Message],
        *,
        sampling: dict[str, Any],
        mode: str,
        kind: Kind = "check",
    ) -> Any:
        """One completion, with retries on transient errors; other errors name what to fix.

        The request body is built here, once, for either path; the semaphore bounds how many
        calls are in flight.
        """
        profile = self.profile(connection)
        path = self._path(profile)
        refusal = path.refusal(profile, sampling)
        if refusal is not None:
            raise JudgeUnavailable(
                f"{refusal}; no request reached the server (model {connection.identity}). "
                "Please report this model."
            )
        body: dict[str, Any] = {"messages": messages, **sampling}
        fmt = response_format(mode, kind, grammar=connection.grammar)
        if fmt is not None:
            body["response_format"] = fmt
        # Starting a managed local server blocks; keep it off the event loop.
        import asyncio

        # The endpoint stays wrapped (Secret) in this frame, which a traceback with locals
        # shows; the paths reveal it only inside their call expression.
        if connection.start is None:
            api_base, api_key = connection.secret_endpoint()
        else:
            api_base, api_key = await asyncio.to_thread(connection.secret_endpoint)
        # Whatever the judge (or a proxy) says back may quote these: its reply is redacted of them.
        remember_secrets(api_key, *url_credentials(api_base), *_provider_keys(profile))
        if url_credentials(api_base):
            # Refused before any client parses the URL: a password holding "/", "?", "#" or
            # "@" is misread as a port or a path, and the parser's error quotes the pieces.
            raise JudgeUnavailable(_credentials_in_url(connection), status=None)
        attempts = self.settings.retries + 1
        secrets = (api_key, *url_credentials(api_base))

        async def attempt(number: int) -> Any:
            try:
                queued = time.perf_counter()
                async with self._semaphore(connection):
                    waits = queue_waits.get()
                    if waits is not None:
                        waits.append(time.perf_counter() - queued)
                    return await path.send(profile, body, api_base, api_key)
            except Exception as error:
                # Read the provider's error here and let it go: its text (and its traceback's
                # frames) may quote the key, so no frame shown later may hold it.
                fault = _Fault.read(error, secrets)
            # Outside the handler, so nothing raised from here chains the provider's error.
            self._raise_if_final(fault, connection, number, attempts)
            raise _Transient(fault)

        return await self._with_retries(attempt, attempts, connection)

    async def _with_retries(
        self, attempt: Callable[[int], Awaitable[Any]], attempts: int, connection: Connection
    ) -> Any:
        """``attempt`` until it answers; a transient fault waits first. The wait is drawn at
        random up to an exponential bound ("full jitter": 0.25 s, 0.5 s, ... at most 8 s), so a
        fleet whose judge hiccupped does not retry in lockstep; a server's Retry-After (a 429,
        a 503) is the least it waits. tenacity (imported on a live call only) runs the loop."""
        import asyncio

        from tenacity import (
            AsyncRetrying,
            RetryCallState,
            retry_if_exception_type,
            stop_after_attempt,
            wait_random_exponential,
        )

        jitter = wait_random_exponential(multiplier=_BACKOFF_SECONDS, max=_BACKOFF_CAP_SECONDS)

        def wait(state: RetryCallState) -> float:
            delay = float(jitter(state))
            fault = _transient_fault(state)
            if fault.retry_after is not None:  # the server said how long
                delay = max(delay, min(fault.retry_after, _BACKOFF_CAP_SECONDS))
            return delay

        def log(state: RetryCallState) -> None:
            logger.info(
                "judge call to %s failed (%s); retry %d of %d in %.2fs",
                connection.identity,
                _transient_fault(state).type_name,
                state.attempt_number,
                attempts - 1,
                state.upcoming_sleep,
            )

        async def pause(delay: float) -> None:
            result = (self._sleep or asyncio.sleep)(delay)
            if inspect.isawaitable(result):
                await result

        retrying = AsyncRetrying(
            stop=stop_after_attempt(attempts),
            wait=wait,
            retry=retry_if_exception_type(_Transient),
            before_sleep=log,
            sleep=pause,
            reraise=True,
        )
        async for trial in retrying:
            with trial:
                return await attempt(trial.retry_state.attempt_number - 1)
        raise AssertionError("unreachable")  # pragma: no cover

    def _semaphore(self, connection: Connection) -> asyncio.Semaphore:
        """--prop-concurrency calls at once per model; one for a managed local server.

        llama.cpp's server answers one request at a time, so queueing more there only lets
        their timeouts run out.
        """
        import asyncio

        with self._lock:
            semaphore = self._semaphores.get(connection.litellm_model)
            if semaphore is None:
                size = 1 if connection.start is not None else self.settings.concurrency
                semaphore = self._semaphores[connection.litellm_model] = asyncio.Semaphore(size)
            return semaphore

    def _raise_if_final(
        self, fault: _Fault, connection: Connection, attempt: int, attempts: int
    ) -> None:
        """Raise the error the user sees, unless the fault is transient and tries remain.

        The advice fits the cause: only a transient fault suggests more retries or time.
        """
        shown_base = connection.shown_base
        where = f"model {connection.identity}" + (f" at {shown_base}" if shown_base else "")
        status = fault.status
        detail = fault.detail
        client_side = fault.client_side
        if fault.own_words:  # a reply the light path would not read: a redirect, a bomb
            raise JudgeUnavailable(f"the judge ({where}) {detail}.", status=status)
        if fault.format_rejected:
            raise JudgeUnavailable(
                (
                    f"litellm refused the structured-output request before sending it ({where}): "
                    f"{detail}; no request reached the server"
                    if client_side
                    else f"{where} rejected the structured-output request: {detail}"
                ),
                status=status,
                format_rejected=True,
            )
        if client_side:
            raise JudgeUnavailable(
                f"litellm refused the request before sending it ({where}): {detail}; no request "
                "reached the server. Check --prop-model and --prop-reasoning-effort (setting "
                "litellm.drop_params would send other parameters than the cache key records).",
                status=None,
            )
        if fault.url_credentials:
            raise JudgeUnavailable(_credentials_in_url(connection), status=status)
        if fault.refused:
            raise JudgeUnavailable(
                f"cannot connect to the judge ({where}); is the server running? "
                f"Check --prop-api-base. Detail: {detail}",
                status=status,
            )
        if fault.missing_key:
            raise JudgeUnavailable(
                f"no API key for the judge ({where}): set {_key_hint(connection.litellm_model)}, "
                "or choose another model with --prop-model (--prop-model=local needs no key)",
                status=status,
            )
        if fault.auth:
            raise JudgeUnavailable(
                f"the judge ({where}) rejected the credentials (HTTP {status}): set "
                f"{_key_hint(connection.litellm_model)}. Detail: {detail}",
                status=status,
            )
        if fault.not_found:
            raise JudgeUnavailable(
                f"the judge ({where}) does not know this model (HTTP 404): check --prop-model "
                f"and --prop-api-base. Detail: {detail}",
                status=status,
            )
        if not fault.transient:
            raise JudgeUnavailable(
                f"the judge ({where}) rejected the request"
                + (f" (HTTP {status})" if status else "")
                + f": {detail}. Check --prop-model and --prop-api-base.",
                status=status,
            )
        if attempt + 1 >= attempts:
            tries = f"{attempts} attempt" + ("s" if attempts > 1 else "")
            if fault.invalid_response:
                # The server answered, but not with a chat completion: more tries will not help.
                raise JudgeUnavailable(
                    f"the judge ({where}) answered with a response that is not a chat "
                    f"completion, after {tries} ({fault.type_name}): {detail}. Check that "
                    "--prop-api-base "
                    "points at an OpenAI-compatible /v1 endpoint (not a proxy's error page).",
                    status=status,
                )
            raise JudgeUnavailable(
                f"the judge ({where}) kept failing after {tries}"
                + (f"; last HTTP {status}" if status else "")
                + f" ({fault.type_name}): {detail}. Raise --prop-retries or --prop-timeout "
                "if the provider is only slow.",
                status=status,
            )


def reply_content(response: Any) -> tuple[str, str | None]:
    """The reply text and, when the provider flagged one, its refusal; both redacted of every
    known secret (a judge or a proxy may echo the request's Authorization header) before
    anything parses, caches or shows them."""
    try:
        choices = response.choices
        message = choices[0].message if choices else None
    except (AttributeError, IndexError, TypeError):
        message = None
    if message is None:
        shown = redact(str(response))[:2000]
        raise JudgeReplyInvalid(
            "the judge's response holds no message (an empty 'choices' list, or a null "
            "message: a provider's content filter or a broken proxy)",
            raw_reply=shown.encode("utf-8", "replace").decode("utf-8"),
        )
    repeated = getattr(response, "repeated_keys", ())
    if repeated:
        shown = redact(str(getattr(message, "content", "")))[:2000]
        raise JudgeReplyInvalid(
            "the judge's response gives "
            + ", ".join(repr(key) for key in repeated)
            + " more than once: a chat completion that reads two ways, which no reply may",
            raw_reply=shown.encode("utf-8", "replace").decode("utf-8"),
        )
    refusal = getattr(message, "refusal", None)
    if refusal is None:  # litellm keeps OpenAI's refusal among provider-specific fields
        extra = getattr(message, "provider_specific_fields", None)
        refusal = extra.get("refusal") if isinstance(extra, dict) else None
    content = getattr(message, "content", None)
    text = redact(content) if isinstance(content, str) else ""
    if isinstance(refusal, str) and refusal.strip():
        return text, redact(refusal)
    return text, None


def other_choices(response: Any) -> list[str]:
    """The texts of a response's choices after the first (a refusal or no text gives ""); the
    judge reads a response with several choices only when they all agree."""
    try:
        choices = list(response.choices)[1:]
    except (AttributeError, TypeError):
        return []
    texts: list[str] = []
    for choice in choices:
        message = getattr(choice, "message", None)
        content = getattr(message, "content", None)
        refusal = getattr(message, "refusal", None)
        refused = isinstance(refusal, str) and refusal.strip()
        texts.append(content if isinstance(content, str) and not refused else "")
    return texts


def reply_cost(response: Any) -> float | None:
    hidden = getattr(response, "_hidden_params", None)
    if isinstance(hidden, dict) and "response_cost" in hidden:
        cost = hidden["response_cost"]  # litellm priced the call already (None: unknown)
    else:
        from .transport_litellm import completion_cost

        return completion_cost(response)
    try:
        return float(cost) if cost else None
    except (TypeError, ValueError):
        return None


def reply_usage(response: Any) -> tuple[int, int]:
    usage = getattr(response, "usage", None)
    prompt = getattr(usage, "prompt_tokens", 0) or 0
    completion = getattr(usage, "completion_tokens", 0) or 0
    return int(prompt), int(completion)


# litellm's words for an HTTP 200 whose body is JSON but not a chat completion.
_INVALID_RESPONSE_MARKERS = ("invalid response object", "returned 'choices' that is not")


@dataclass(frozen=True)
class _Fault:
    """What a failed call told us, read while its exception is in hand and then let go.

    The provider's exception can quote the key, and so can the frames of its traceback; the
    judge keeps only this redacted reading, so ``pytest -l`` has nothing secret to show.
    """

    type_name: str
    status: int | None
    detail: str
    format_rejected: bool
    refused: bool
    missing_key: bool
    auth: bool
    not_found: bool
    transient: bool
    invalid_response: bool
    url_credentials: bool
    client_side: bool
    retry_after: float | None = None
    own_words: bool = False

    @classmethod
    def read(cls, error: BaseException, secrets: tuple[Secret | None, ...]) -> _Fault:
        text = str(error)
        # litellm pastes a whole Python traceback into some messages: keep the first part.
        text = text.split("Traceback (most recent call last)", 1)[0].rstrip()
        name = type(error).__name__
        status = _received_status(error)
        return cls(
            type_name=name,
            status=status,
            detail=redact(text, secrets)[:500],
            format_rejected=_is_format_rejection(error),
            refused=_is_connection_refused(error),
            missing_key=_is_missing_key(error),
            auth=status in (401, 403) or "authentication" in name.lower(),
            not_found=status == 404 or "notfound" in name.lower(),
            transient=_is_transient(error),
            client_side=families.is_client_side_refusal(error),
            url_credentials=any(
                "credentials encoded in url" in str(link).lower() for link in _chain(error)
            ),
            retry_after=_retry_after(error),
            own_words=getattr(error, "own_words", False) is True,
            invalid_response=any(
                marker in link_text
                for link in _chain(error)
                for link_text in (str(link).lower(),)
                for marker in _INVALID_RESPONSE_MARKERS
            ),
        )


def _retry_after(error: BaseException) -> float | None:
    value = getattr(error, "retry_after", None)
    if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
        return float(value)
    return None
