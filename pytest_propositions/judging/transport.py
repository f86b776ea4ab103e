"""Talking to an endpoint: one request shape and one set of faults, over two paths.

An OpenAI-compatible endpoint (OpenAI, Azure OpenAI, the local judge, any --prop-api-base) is
asked over plain HTTP (``transport_http``); every other provider through litellm
(``transport_litellm``), which ``--prop-transport=litellm`` forces for every model. Both read the
model's one ``Profile`` (resolved once per connection) and are sent the same body: the
structured-output mode (and the per-model response-format fallback when a provider rejects
one), the sampling parameters as given. Both raise a ``faults.Fault`` when a call fails. Here,
shared by both: the deadline of an attempt, transient retries (with backoff, on the transient
kinds of fault), a bound on calls in flight, an error the user can act on for every other kind,
and what the progress line is told of each attempt (``Attempt``). What a response holds is read
by ``response``.

Neither the transient retries nor the response-format fallback is asking the judge again: both
deliver the one call they were given. Asking again (samples, the double check, an unparsable
reply, confirming, escalating) is the asking policy's (``claims.asking.Asking``).

An attempt at a remote judge has a flat deadline (``--prop-timeout`` for the whole attempt). A
managed server on this machine (the local judge, whose ``Connection`` has a ``Watch``) is judged
by progress instead: it is slow when the machine is busy, and a retry would only start its work
again; it counts as hung, and is stopped, after ``--prop-timeout`` seconds without progress
(``IdleDeadline``).
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import inspect
import logging
import random
import threading
import time
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from ..errors import JudgeUnavailable
from ..redaction import Secret, remember_secrets, url_credentials
from .endpoint import KEY_VARIABLE, credentials, key_variable
from .faults import Fault
from .reply import reply_schema
from .size import RequestSize, size_for
from .transport_http import HttpPath
from .transport_litellm import LitellmPath

if TYPE_CHECKING:
    from ..settings import Settings
    from ..verdict import Kind
    from .endpoint import Connection, Progress, Watch
    from .families import Profile
    from .prompts import Message

logger = logging.getLogger("pytest_propositions")

# Structured-output strategies, best first. A provider that rejects one moves the model to the
# next for the rest of the run; the prompt always describes the schema, so every mode works.
RESPONSE_MODES = ("json_schema", "json_object", "text")

# The seconds a live verdict's calls waited for a free slot (the semaphore below): queueing for
# a managed local server, which answers one call at a time, is not judging. The judge sets a list
# here for each verdict and subtracts what the calls add to it.
queue_waits: contextvars.ContextVar[list[float] | None] = contextvars.ContextVar(
    "prop_queue_waits", default=None
)
_BACKOFF_SECONDS = 0.25
_BACKOFF_CAP_SECONDS = 8.0
# How often a watched attempt asks its server how far it is (at most: a short bound, in tests,
# is looked at four times).
_WATCH_SECONDS = 1.0
# A watched attempt's backstop, whatever its progress. A reply's length is bounded (the grammar
# and the context), so only a server that reports progress without making any reaches it.
WATCHED_ATTEMPT_CAP_SECONDS = 3600.0

_T = TypeVar("_T")


@dataclass(frozen=True)
class Attempt:
    """An attempt at a call in flight, as the progress line tells it: its number of
    ``attempts``, why the one before failed (``after``: "a timeout"), when it started
    (monotonic seconds), and either its flat deadline (``limit``, a remote judge) or the
    tokens a watched server has written so far (None before it says)."""

    number: int
    attempts: int
    started: float
    after: str | None = None
    limit: float | None = None
    tokens: int | None = None


# Where the attempts of the current verdict are told (the progress line's flight); set by
# ``reporting_attempts`` inside the coroutine, since each runs as a task on the judge's loop.
attempt_news: contextvars.ContextVar[Callable[[Attempt | None], None] | None] = (
    contextvars.ContextVar("prop_attempt_news", default=None)
)


async def reporting_attempts(
    coroutine: Awaitable[_T], news: Callable[[Attempt | None], None] | None
) -> _T:
    """``coroutine``, its attempts told to ``news`` (None: to nobody) as they start and go on,
    and None when each ends."""
    attempt_news.set(news)
    return await coroutine


class IdleDeadline:
    """When a watched attempt has hung: ``bound`` seconds in which what the server says of its
    work (a ``Progress``'s sign) never changed. A look that gets no answer is no progress; the
    first answer is, since the attempt began. Pure: the caller says what time it is."""

    def __init__(self, bound: float, now: float) -> None:
        self.bound = bound
        self._last_change = now
        self._sign: Hashable = None
        self._seen = False

    def observe(self, progress: Progress | None, now: float) -> None:
        if progress is None:
            return
        if not self._seen or progress.sign != self._sign:
            self._seen = True
            self._sign = progress.sign
            self._last_change = now

    def quiet(self, now: float) -> float:
        """Seconds since the last progress."""
        return max(now - self._last_change, 0.0)

    def hung(self, now: float) -> bool:
        return self.quiet(now) >= self.bound


class TransportPath(Protocol):
    """What each path to a model provides (``transport_http.HttpPath``,
    ``transport_litellm.LitellmPath``): the first response mode (where the response-format
    fallback starts), why it cannot route the model
    at all and its refusal of a request before sending it (a sentence each, or None: the light
    path refuses nothing), one call (which
    raises a ``Fault`` when it fails, and nothing else), and closing what it holds.
    ``Transport`` asks these of whichever path a model takes."""

    def first_response_mode(self, profile: Profile, modes: tuple[str, ...]) -> str: ...

    def refusal(self, profile: Profile, sampling: dict[str, Any]) -> str | None: ...

    def unrouted(self, profile: Profile, api_base: str | None) -> str | None: ...

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


def response_format(mode: str, kind: Kind, *, grammar: bool = False) -> dict[str, Any] | None:
    """The request's ``response_format`` (the reply's schema is the reader's, ``reply``);
    ``grammar``: the endpoint enforces the schema while
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


def _where(connection: Connection) -> str:
    shown_base = connection.shown_base
    return f"model {connection.identity}" + (f" at {shown_base}" if shown_base else "")


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
        self._paths: dict[tuple[str, bool], TransportPath] = {}
        self._semaphores: dict[str, asyncio.Semaphore] = {}
        self._lock = threading.Lock()

    def profile(self, connection: Connection) -> Profile:
        """The model's profile: what the judge sends it, how its replies are read, and which
        path its calls take (the judge's, resolved once per model)."""
        return self._profile(connection)

    def _path(self, profile: Profile, connection: Connection) -> TransportPath:
        """The model's path; a watched server's has no timeout of its own but the backstop (its
        reply comes whole, after the last token: a per-read timeout would cut a slow one)."""
        watched = connection.watch is not None
        with self._lock:
            path = self._paths.get((profile.path, watched))
            if path is None:
                timeout = WATCHED_ATTEMPT_CAP_SECONDS if watched else self.settings.timeout
                if profile.path == "litellm":
                    path = LitellmPath(timeout)
                else:
                    path = HttpPath(timeout, self.settings.max_reply_bytes)
                self._paths[(profile.path, watched)] = path
            return path

    def prepare(self, connection: Connection) -> None:
        """Before a model's first live call, in the calling thread (never on the shared event
        loop, which the imports would stall): its path's imports, a model no provider serves
        (an error that stops the run), and its first response mode."""
        profile = self.profile(connection)
        with self._lock:
            if connection.litellm_model in self._modes:
                return
        path = self._path(profile, connection)
        unrouted = path.unrouted(profile, connection.api_base)
        if unrouted is not None:
            raise JudgeUnavailable(
                _message(Fault("no_provider", unrouted), connection, 1), stops_run=True
            )
        mode = path.first_response_mode(profile, RESPONSE_MODES)
        with self._lock:
            self._modes.setdefault(connection.litellm_model, RESPONSE_MODES.index(mode))

    def check_window(self, connection: Connection, messages: list[Message]) -> RequestSize:
        """The request's estimated size against the model's window; a request clearly over it
        is refused here, never sent (the provider would refuse it, and some bill what they
        read first)."""
        size = size_for(connection, self.profile(connection), messages)
        if size.clearly_over:
            raise JudgeUnavailable(overflow_message(connection, size, None))
        return size

    def mode(self, connection: Connection) -> str:
        """The structured-output mode this model is at now (the response-format fallback only
        moves it down)."""
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

    async def complete(
        self,
        connection: Connection,
        messages: list[Message],
        *,
        sampling: dict[str, Any],
        kind: Kind = "check",
        mode: str | None = None,
    ) -> Any:
        """One completion in ``mode`` (by default the model's current one), with transient
        retries; other faults end the call with an error that names what to fix.

        The response-format fallback: a provider that rejects the response mode moves the model
        to the next mode for good, and the call is made again in it. The request body is built
        here for either path.
        """
        profile = self.profile(connection)
        path = self._path(profile, connection)
        refusal = path.refusal(profile, sampling)
        if refusal is not None:
            raise JudgeUnavailable(
                f"{refusal}; no request reached the server (model {connection.identity}). "
                "Please report this model."
            )
        size = self.check_window(connection, messages)
        # Starting a managed local server blocks; keep it off the event loop.
        # The endpoint stays wrapped (Secret) in this frame, which a traceback with locals
        # shows; the paths reveal it only inside their call expression.
        if connection.start is None:
            api_base, api_key = connection.secret_endpoint()
        else:
            api_base, api_key = await asyncio.to_thread(connection.secret_endpoint)
        # Whatever the judge (or a proxy) says back may quote these: its reply is redacted of them.
        remember_secrets(*credentials(api_key, api_base, profile.model))
        if url_credentials(api_base):
            # Refused before any client parses the URL: a password holding "/", "?", "#" or
            # "@" is misread as a port or a path, and the parser's error quotes the pieces.
            where = _where(connection)
            message = _MESSAGES["url_credentials"].format(where=where, main_key=KEY_VARIABLE)
            raise JudgeUnavailable(message)
        mode = mode or self.mode(connection)
        while True:
            body: dict[str, Any] = {"messages": messages, **sampling}
            fmt = response_format(mode, kind, grammar=connection.grammar)
            if fmt is not None:
                body["response_format"] = fmt
            endpoint = (api_base, api_key)
            try:
                return await self._with_transient_retries(
                    connection, profile, path, body, endpoint, size
                )
            except JudgeUnavailable as error:
                if not error.format_rejected or mode == RESPONSE_MODES[-1]:
                    raise
            mode = self._response_format_fallback(connection, mode)

    def _response_format_fallback(self, connection: Connection, rejected: str) -> str:
        """The mode after ``rejected``, which the model keeps from now on (never moving back)."""
        index = RESPONSE_MODES.index(rejected) + 1
        logger.info(
            "%s rejected response_format %s; using %s from now on",
            connection.identity,
            rejected,
            RESPONSE_MODES[index],
        )
        with self._lock:
            self._modes[connection.litellm_model] = max(
                index, self._modes.get(connection.litellm_model, 0)
            )
        return RESPONSE_MODES[index]

    async def _with_transient_retries(
        self,
        connection: Connection,
        profile: Profile,
        path: TransportPath,
        body: dict[str, Any],
        endpoint: tuple[Secret | None, Secret | None],
        size: RequestSize | None = None,
    ) -> Any:
        """The body sent until it is answered: a transient fault is retried, after a wait drawn
        at random up to an exponential bound ("full jitter": 0.25 s, 0.5 s, ... at most 8 s), so
        a fleet whose judge hiccupped does not retry in lockstep; a server's Retry-After (a 429,
        a 503) is the least it waits."""
        api_base, api_key = endpoint
        secrets = (api_key, *url_credentials(api_base))
        attempts = self.settings.retries + 1
        after: str | None = None
        for number in range(attempts):
            note = Attempt(number + 1, attempts, 0.0, after)  # started: when it gets its slot
            try:
                return await self._attempt(connection, profile, path, body, endpoint, note)
            except Fault as raised:
                # A copy, redacted, and nothing chained: the provider's error and its
                # traceback's frames may quote the key, so no frame shown later may hold it.
                fault = raised.bare(secrets)
            # Outside the handler, so nothing raised from here chains the provider's error.
            if not fault.transient or number + 1 == attempts:
                raise JudgeUnavailable(
                    overflow_message(connection, size, fault.detail)
                    if fault.kind == "context_overflow"
                    else _message(fault, connection, attempts),
                    status=fault.status,
                    format_rejected=fault.kind in ("format_rejected", "format_refused"),
                    stops_run=fault.stops_run,
                )
            delay = random.uniform(0.0, min(_BACKOFF_SECONDS * 2**number, _BACKOFF_CAP_SECONDS))
            if fault.retry_after is not None:  # the server said how long
                delay = max(delay, min(fault.retry_after, _BACKOFF_CAP_SECONDS))
            logger.info(
                "judge call to %s failed (%s); retry %d of %d in %.2fs",
                connection.identity,
                fault.label,
                number + 1,
                attempts - 1,
                delay,
            )
            after = fault.cause
            paused = (self._sleep or asyncio.sleep)(delay)
            if inspect.isawaitable(paused):
                await paused
        raise AssertionError("unreachable")  # pragma: no cover

    async def _attempt(
        self,
        connection: Connection,
        profile: Profile,
        path: TransportPath,
        body: dict[str, Any],
        endpoint: tuple[Secret | None, Secret | None],
        note: Attempt,
    ) -> Any:
        """One call, once a slot is free, told to the progress line while it runs. A remote
        judge's deadline bounds all of it (connecting, sending and every byte of the reply,
        whatever a client's own timeout bounds per read); a watched server's is its progress."""
        queued = time.perf_counter()
        async with self._semaphore(connection):
            waits = queue_waits.get()
            if waits is not None:
                waits.append(time.perf_counter() - queued)
            news = attempt_news.get() or _told_nobody
            timeout = self.settings.timeout
            sending = path.send(profile, body, *endpoint)
            try:
                if connection.watch is not None:
                    note = dataclasses.replace(note, started=time.monotonic())
                    return await self._watched(connection, connection.watch, sending, note, news)
                news(dataclasses.replace(note, started=time.monotonic(), limit=timeout))
                async with asyncio.timeout(timeout):
                    return await sending
            except TimeoutError:
                pass
            finally:
                news(None)
        if connection.watch is not None:
            raise Fault(
                "timeout",
                f"no reply after {WATCHED_ATTEMPT_CAP_SECONDS:g}s, the most an attempt at a "
                "server on this machine may take however it progresses",
            )
        raise Fault(
            "timeout",
            f"Request timed out after {timeout:g}s (--prop-timeout bounds the whole attempt, "
            "the reply's last byte included)",
        )

    async def _watched(
        self,
        connection: Connection,
        watch: Watch,
        sending: Awaitable[Any],
        note: Attempt,
        news: Callable[[Attempt | None], None],
    ) -> Any:
        """A call to a server on this machine, watched: it goes on while the server makes
        progress, whatever it takes in all (up to the backstop), and is abandoned, the server
        stopped, once it made none for ``--prop-timeout`` seconds: not retried, since a new
        attempt would wait behind the hung one."""
        bound = self.settings.timeout
        deadline = IdleDeadline(bound, note.started)
        news(note)
        call = asyncio.ensure_future(sending)
        try:
            async with asyncio.timeout(WATCHED_ATTEMPT_CAP_SECONDS):
                while True:
                    await asyncio.wait({call}, timeout=min(_WATCH_SECONDS, bound / 4))
                    if call.done():
                        return call.result()
                    progress = await asyncio.to_thread(watch.progress)
                    now = time.monotonic()
                    deadline.observe(progress, now)
                    if progress is not None:
                        note = dataclasses.replace(note, tokens=progress.tokens)
                        news(note)
                    if call.done():
                        return call.result()
                    if deadline.hung(now):
                        break
        finally:
            if not call.done():
                call.cancel()
            elif not call.cancelled():
                call.exception()  # retrieved: asyncio would log it as never read
        tokens = f"{note.tokens} reply tokens written" if note.tokens else "no reply token yet"
        message = _MESSAGES["hung"].format(
            where=_where(connection),
            quiet=f"{deadline.quiet(now):.0f}",
            bound=f"{bound:g}",
            took=f"{now - note.started:.0f}",
            tokens=tokens,
        )
        raise JudgeUnavailable(await asyncio.to_thread(watch.hung, message))

    def _semaphore(self, connection: Connection) -> asyncio.Semaphore:
        """--prop-concurrency calls at once per model; one for a managed local server.

        llama.cpp's server answers one request at a time, so queueing more there only lets
        their timeouts run out.
        """
        with self._lock:
            semaphore = self._semaphores.get(connection.litellm_model)
            if semaphore is None:
                size = 1 if connection.start is not None else self.settings.concurrency
                semaphore = self._semaphores[connection.litellm_model] = asyncio.Semaphore(size)
            return semaphore


def _told_nobody(attempt: Attempt | None) -> None:
    """Where attempts go when no progress line listens."""


# What the user reads for a fault that ends the call, by kind: what failed, and the setting to
# fix. Filled in with the judge (``where``), the fault's ``detail`` and ``status``, the variable
# the key is read from (``key``, ``main_key``), the attempts made (``tries``) and the fault's
# ``label``.
_MESSAGES: dict[str, str] = {
    # A reply the light path would not read: a redirect, a bomb.
    "refused_reply": "the judge ({where}) {detail}.",
    "format_refused": (
        "litellm refused the structured-output request before sending it ({where}): {detail}; "
        "no request reached the server"
    ),
    "format_rejected": "{where} rejected the structured-output request: {detail}",
    "client_refused": (
        "litellm refused the request before sending it ({where}): {detail}; no request reached "
        "the server. Check --prop-model and --prop-reasoning-effort (setting litellm.drop_params "
        "would send other parameters than the cache key records)."
    ),
    "url_credentials": (
        "the judge ({where}) cannot be called with a user and password inside --prop-api-base: "
        "the HTTP client refuses to send them along with the API key. Remove them from the URL "
        "and give the key with {main_key}."
    ),
    "refused_connection": (
        "cannot connect to the judge ({where}); is the server running? Check --prop-api-base. "
        "Detail: {detail}"
    ),
    "missing_key": (
        "no API key for the judge ({where}): set {key}, or choose another model with "
        "--prop-model (--prop-model=local needs no key)"
    ),
    "auth": (
        "the judge ({where}) rejected the credentials (HTTP {status}): set {key}. Detail: {detail}"
    ),
    "not_found": (
        "the judge ({where}) does not know this model (HTTP 404): check --prop-model and "
        "--prop-api-base. Detail: {detail}"
    ),
    # A watched server (the local judge) that stopped making progress; not a fault of a kind,
    # since it is not retried: the server is stopped instead.
    "hung": (
        "the local judge ({where}) hung: it made no progress for {quiet}s (no prompt read, no "
        "reply token written) while its process kept running ({tokens} in the {took}s of the "
        "attempt); --prop-timeout allows {bound}s without progress. It was stopped, so the "
        "run's later claims for it fail at once. If the machine is only very busy, raise "
        "--prop-timeout"
    ),
    # The server answered, but not with a chat completion: more tries will not help.
    "invalid_response": (
        "the judge ({where}) answered with a response that is not a chat completion, after "
        "{tries} ({label}): {detail}. Check that --prop-api-base points at an OpenAI-compatible "
        "/v1 endpoint (not a proxy's error page)."
    ),
}


def _no_provider(connection: Connection) -> str:
    """A model name litellm cannot route: the fix is its provider prefix, ``openai/`` for the
    OpenAI-compatible servers people point --prop-api-base at."""
    model = connection.litellm_model
    server = (
        "the OpenAI-compatible server at that address"
        if connection.api_base
        else "an OpenAI-compatible server (with its address in --prop-api-base)"
    )
    return (
        f"no request was sent to the judge ({_where(connection)}): litellm knows no provider "
        f"for the model name {model!r} (no provider prefix it knows, and not a model it knows "
        f"by name). For {server}, write openai/{model} (--prop-model=openai/{model}); for "
        "another provider, prefix the name with it as litellm does (anthropic/..., ollama/...)."
    )


def overflow_message(connection: Connection, size: RequestSize | None, detail: str | None) -> str:
    """A request longer than the model's window, refused before sending (``detail`` None) or by
    the provider: its size, the window, and how to make it fit."""
    where = _where(connection)
    said = f"{size.said()}" if size is not None else "its size was not estimated"
    if detail is None:
        head = f"the request is over the judge's window ({where}): {said}; it was not sent."
    else:
        head = f"the judge ({where}) refused the request as longer than its window: {said}."
    local = (
        " or give the local judge a larger window with --prop-local-context=TOKENS,"
        if connection.watch is not None
        else ""
    )
    return (
        f"{head} Show the judge less: judge the end of a long trace with last_n=N (or its start "
        f"with first_n=N) on the claim, or a part of it as the target,{local} or choose a model "
        "with a larger window with --prop-model."
        + (f" Detail: {detail}" if detail is not None else "")
    )


def _message(fault: Fault, connection: Connection, attempts: int) -> str:
    """What the user reads for a fault that ends the call: what failed, and the setting to fix.
    Only a transient fault's advice suggests more retries or time."""
    if fault.kind == "no_provider":
        return _no_provider(connection)
    status = fault.status
    where = _where(connection)
    template = _MESSAGES.get(fault.kind)
    if template is not None:
        return template.format(
            where=where,
            detail=fault.detail,
            status=status,
            key=f"{key_variable(connection.litellm_model)} (or {KEY_VARIABLE})",
            main_key=KEY_VARIABLE,
            tries=f"{attempts} attempt" + ("s" if attempts > 1 else ""),
            label=fault.label,
        )
    if not fault.transient:
        return (
            f"the judge ({where}) rejected the request"
            + (f" (HTTP {status})" if status else "")
            + f": {fault.detail}. Check --prop-model and --prop-api-base."
        )
    return (
        f"the judge ({where}) kept failing after {attempts} attempt"
        + ("s" if attempts > 1 else "")
        + (f"; last HTTP {status}" if status else "")
        + f" ({fault.label}): {fault.detail}. Raise --prop-retries or --prop-timeout "
        "if the provider is only slow."
    )
