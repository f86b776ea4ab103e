"""Asking a model for a verdict: the only module that imports litellm, and only on a cache miss.

It owns structured output (and its fallbacks), parsing retries, provider-error retries, the
double-check turn, and turning cached records back into verdicts.
"""

from __future__ import annotations

import contextvars
import inspect
import logging
import os
import re
import sys
import threading
import time
from collections.abc import Callable, Coroutine
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeVar

from . import __version__, families
from .cache import CacheDirectoryError, CacheWarning, cache_key
from .checks import quote_claim
from .endpoint import _URL_QUERY_SECRET, _URL_USERINFO, Connection, Secret, redact_url
from .errors import (
    BudgetExceeded,
    CacheUnusable,
    DryRunSkip,
    JudgeReplyInvalid,
    JudgeUnavailable,
    VerdictMissing,
    VerdictUnparsable,
)
from .families import TEMPERATURE
from .prompts import DOUBLE_CHECK_PROMPT, PROMPT_VERSION, Message, assistant_turn
from .recorded import pack_request
from .scale import MAX_SCORE, MIN_SCORE
from .verdict import Usage, Verdict

if TYPE_CHECKING:
    import asyncio

    from .cache import VerdictCache
    from .parsing import ParsedReply
    from .progress import ProgressLine
    from .settings import Settings
    from .verdict import Kind

logger = logging.getLogger("pytest_propositions")

_T = TypeVar("_T")

# Structured-output strategies, best first. A provider that rejects one moves the model to the
# next for the rest of the run; the prompt always describes the schema, so every mode works.
RESPONSE_MODES = ("json_schema", "json_object", "text")

# Caps on the reply's text in JSON mode (see reply_schema).
REASONING_MAX_CHARS = 800
JUSTIFICATION_MAX_CHARS = 500

# The seconds a live verdict's calls waited for a free slot (the semaphore below): queueing for
# a managed local server, which answers one call at a time, is not judging.
_queue_waits: contextvars.ContextVar[list[float] | None] = contextvars.ContextVar(
    "prop_queue_waits", default=None
)
_BACKOFF_SECONDS = 0.25
_BACKOFF_CAP_SECONDS = 8.0
_SECRET_PATTERN = re.compile(r"(sk-[A-Za-z0-9_\-]{8,}|Bearer\s+[A-Za-z0-9_\-.]{8,})")


def redact(text: str, secrets: tuple[str | Secret | None, ...] = ()) -> str:
    """Remove the given secrets, and anything that looks like a credential, from the text.

    Providers often quote the key back ("Incorrect API key provided: ..."), whatever its shape;
    URLs lose the user and password they carry.
    """
    for secret in secrets:
        value = secret.reveal() if isinstance(secret, Secret) else secret
        if value and len(value) >= 4:
            text = text.replace(value, "[redacted]")
    text = _URL_USERINFO.sub("[redacted]@", text)
    text = _URL_QUERY_SECRET.sub(r"\1[redacted]", text)
    return _SECRET_PATTERN.sub("[redacted]", text)


class RedactingFilter(logging.Filter):
    """Rewrites log records so that URL credentials and key-shaped strings never show.

    Other libraries log the request URL at DEBUG (the openai SDK does, user and password
    included); pytest shows captured logs in reports and writes them to --log-file.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if "@" in message or "sk-" in message or "key=" in message.lower():
            shown = redact(message)
            if shown != message:
                record.msg, record.args = shown, None
        return True


def hide_credentials_in_logs(handlers: list[logging.Handler], api_base: str | None) -> None:
    """Put a RedactingFilter on pytest's log handlers when the api_base carries credentials."""
    if api_base is None or redact_url(api_base) == api_base:
        return  # nothing to hide: no filter, no cost per log record
    for handler in handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter())


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


@dataclass(frozen=True)
class JudgeRequest:
    """Everything that decides a verdict; all of it but the test id goes into the cache key."""

    kind: Kind
    claim: str
    model: str
    messages: tuple[Message, ...]
    double_check: bool = False
    sample_index: int = 0
    test_id: str | None = None

    @property
    def temperature(self) -> float:
        """The temperature of a model that takes one; what is sent is ``sampling``'s choice."""
        return TEMPERATURE[self.kind]

    def sampling(self, model: str, reasoning_effort: str | None) -> dict[str, Any]:
        """The sampling parameters sent to ``model`` (the litellm name) for this request."""
        return families.sampling(model, self.kind, reasoning_effort)


@dataclass
class JudgeStats:
    """Counts for the terminal summary; updated under a lock because claims may run in threads."""

    verdicts: int = 0
    cache_hits: int = 0
    judge_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    judge_seconds: float = 0.0
    dry_run_misses: int = 0
    coalesced: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)


@dataclass(frozen=True)
class _Answer:
    parsed: ParsedReply
    raw: str
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None


class _JudgeLoop:
    """One event loop on a daemon thread, shared by the whole process.

    litellm caches its async HTTP clients per event loop, so the loop must outlive any one run
    (pytester runs several in one process). Synchronous callers submit coroutines and wait.
    """

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()

    def run(self, coroutine: Coroutine[Any, Any, _T]) -> _T:
        import asyncio  # only live judging needs it; a cached run never gets here

        future = asyncio.run_coroutine_threadsafe(coroutine, self._ensure())
        try:
            return future.result()
        except BaseException:
            future.cancel()  # Ctrl-C while waiting: do not leave the call running
            raise

    def _ensure(self) -> asyncio.AbstractEventLoop:
        import asyncio

        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                threading.Thread(
                    target=loop.run_forever, name="prop-judge-loop", daemon=True
                ).start()
                self._loop = loop
            return self._loop


_JUDGE_LOOP = _JudgeLoop()


def run_on_judge_loop(coroutine: Coroutine[Any, Any, _T]) -> _T:
    """Run a judge coroutine to completion from synchronous code, from any thread."""
    return _JUDGE_LOOP.run(coroutine)


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
    if bounded:
        # llama.cpp's grammar ignores minimum/maximum but enforces an enum.
        if kind == "score":
            value["enum"] = list(range(MIN_SCORE, MAX_SCORE + 1))
        reasoning["maxLength"] = REASONING_MAX_CHARS
        justification["maxLength"] = JUSTIFICATION_MAX_CHARS
    return {
        "type": "object",
        "properties": {
            "reasoning": reasoning,
            "justification": justification,
            "value": value,
            "confidence": {"type": "number", "minimum": 0, "maximum": 1},
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
    status = _status(error)
    if status is not None:
        return status in (408, 409, 429) or status >= 500
    name = type(error).__name__.lower()
    return "timeout" in name or "connection" in name


def _key_hint(model: str) -> str:
    provider = model.split("/", 1)[0].upper() if "/" in model else "OPENAI"
    return f"{provider}_API_KEY (or PROP_API_KEY)"


def _cache_step(step: Callable[..., _T], *args: Any) -> _T:
    """A cache operation on the judge's path; a directory that cannot be used is a judge error."""
    try:
        return step(*args)
    except CacheDirectoryError as error:
        raise CacheUnusable(
            f"{error}; nothing was judged. Fix the folder, or choose another with "
            "--prop-cache-dir (or --prop-cache=off)"
        ) from None


class Judge:
    """Turns judge requests into verdicts, from the cache when it can, from the model when not."""

    def __init__(
        self,
        settings: Settings,
        cache: VerdictCache | None = None,
        connect: Callable[[str], Connection] | None = None,
        sleep: Callable[[float], object] | None = None,
    ) -> None:
        self.settings = settings
        self.cache = cache
        self.stats = JudgeStats()
        self._connect = connect or self._default_connection
        self._connections: dict[str, Connection] = {}
        self._modes: dict[str, int] = {}
        self._effort_ignored: set[str] = set()
        self._in_flight: dict[str, Future[Verdict]] = {}
        self._semaphores: dict[str, asyncio.Semaphore] = {}
        self._sleep = sleep
        self._lock = threading.Lock()
        # Told when live judging starts (returns a token) and ends; the plugin shows progress.
        self.progress: ProgressLine | None = None

    # -- public -----------------------------------------------------------------------------

    def evaluate(self, request: JudgeRequest) -> Verdict:
        """A verdict for the request: cached if recorded, else judged live and then stored."""
        connection = self._connection(request.model)
        material = self._key_material(request, connection)
        key = cache_key(material)
        if self.cache is not None:
            record = _cache_step(self.cache.get, key)
            verdict = self._from_record(record, key) if record is not None else None
            if verdict is not None:
                with self.stats.lock:
                    self.stats.verdicts += 1
                    self.stats.cache_hits += 1
                return verdict
            if self.cache.mode == "replay":
                from .recorded import explain_miss

                nearest = explain_miss(self.cache, material, request.claim, request.test_id)
                raise VerdictMissing(
                    f"no recorded verdict for claim {quote_claim(request.claim)}"
                    + (f" in {request.test_id}" if request.test_id else "")
                    + f" (key {key[:16]}); --prop-cache=replay never calls the judge: record it "
                    "with --prop-cache=use, or import an export with "
                    "'python -m pytest_propositions cache import'." + nearest,
                    key=key,
                    claim=request.claim,
                    test_id=request.test_id,
                )
        if self.settings.dry_run:
            with self.stats.lock:
                self.stats.dry_run_misses += 1
            raise DryRunSkip(f"dry run: claim {quote_claim(request.claim)} has no cached verdict")
        if self.settings.max_cost is not None and self.stats.cost_usd > self.settings.max_cost:
            raise BudgetExceeded(
                f"the run's judged cost ${self.stats.cost_usd:.4f} passed --prop-max-cost "
                f"${self.settings.max_cost:.4f}; claim {quote_claim(request.claim)} was not judged "
                "(cached verdicts are still served)"
            )
        # Identical requests in flight at once (soft claims, xdist-free threads) share one call.
        with self._lock:
            shared = self._in_flight.get(key)
            if shared is None:
                owned: Future[Verdict] = Future()
                self._in_flight[key] = owned
        if shared is not None:
            verdict = shared.result()
            with self.stats.lock:
                self.stats.verdicts += 1
                self.stats.coalesced += 1
            return verdict
        token = self.progress.started() if self.progress is not None else None
        try:
            if self.cache is not None:
                # Before paying for a verdict: a cache that cannot store it is an error now.
                _cache_step(self.cache.prepare_write)
            # Import (seconds) here, not on the shared loop where it would stall calls in flight.
            litellm = load_litellm(connection.litellm_model)
            self._first_mode(litellm, connection)
            verdict, record = run_on_judge_loop(self._judge_live(request, connection, key))
            if self.cache is not None:
                self.cache.put(key, record)
        except BaseException as error:
            owned.set_exception(error)
            raise
        else:
            owned.set_result(verdict)
        finally:
            with self._lock:
                del self._in_flight[key]
            if self.progress is not None and token is not None:
                self.progress.finished(token)
        return verdict

    def follow_up(self, model: str, messages: list[Message]) -> str:
        """A free-text answer on a preserved chat (recommendations); never cached."""
        if self.cache is not None and self.cache.mode == "replay":
            raise VerdictMissing(
                "a follow-up question needs a live judge, and --prop-cache=replay never calls one"
            )
        connection = self._connection(model)
        load_litellm(connection.litellm_model)
        try:
            sampling = _with_engine_sampling(
                families.follow_up_sampling(
                    connection.litellm_model, self.settings.reasoning_effort
                ),
                connection,
            )
        except families.UnsupportedEffort as error:
            raise JudgeUnavailable(f"{error}; choose another level or unset it") from None
        response = run_on_judge_loop(
            self._complete(connection, messages, sampling=sampling, mode="text")
        )
        content, _ = self._content(response)
        if not content.strip():
            raise VerdictUnparsable(
                "the judge gave an empty answer to the follow-up", raw_reply=content
            )
        return content.strip()

    def identity(self, model: str) -> str:
        """What this judge's cache keys name for ``model`` (for 'local', the model file's hash)."""
        return self._connection(model).identity

    def close(self) -> None:
        """Release the cache, and stop a local judge server if this run started one."""
        if self.cache is not None:
            self.cache.close()
        for connection in self._connections.values():
            if connection.close is not None:
                connection.close()

    # -- connection and key --------------------------------------------------------------------

    def _connection(self, model: str) -> Connection:
        with self._lock:
            connection = self._connections.get(model)
        if connection is None:
            connection = self._connect(model)
            with self._lock:
                self._connections[model] = connection
        return connection

    def _default_connection(self, model: str) -> Connection:
        if model == "local":
            from .local import local_connection

            return local_connection(self.settings)
        api_key = os.environ.get("PROP_API_KEY") or None
        if api_key is None and self.settings.api_base and model.startswith("openai/"):
            # Self-hosted OpenAI-compatible servers rarely need a key, but the client insists.
            api_key = os.environ.get("OPENAI_API_KEY") or "no-key-needed"
        return Connection(model, model, self.settings.api_base, api_key)

    def _key_material(self, request: JudgeRequest, connection: Connection) -> dict[str, Any]:
        return {
            "prompt_version": PROMPT_VERSION,
            "model": connection.identity,
            "messages": list(request.messages),
            "sampling": self._sampling(request, connection),
            "kind": request.kind,
            "double_check": request.double_check,
            "sample_index": request.sample_index,
        }

    def _sampling(self, request: JudgeRequest, connection: Connection) -> dict[str, Any]:
        """What is sent and what the key records: one decision, from the model's name alone."""
        effort = self.settings.reasoning_effort
        model = connection.litellm_model
        if families.effort_ignored(model, effort):
            with self._lock:
                first = model not in self._effort_ignored
                self._effort_ignored.add(model)
            if first:
                logger.warning(
                    "--prop-reasoning-effort=%s is not sent to %s: its model family takes no "
                    "reasoning effort",
                    effort,
                    connection.identity,
                )
        try:
            return _with_engine_sampling(request.sampling(model, effort), connection)
        except families.UnsupportedEffort as error:
            raise JudgeUnavailable(f"{error}; choose another level or unset it") from None

    def _first_mode(self, litellm: ModuleType, connection: Connection) -> None:
        """Start a model litellm knows at the structured-output mode litellm says it takes."""
        with self._lock:
            if connection.litellm_model in self._modes:
                return
        mode = families.first_response_mode(litellm, connection.litellm_model, RESPONSE_MODES)
        with self._lock:
            self._modes.setdefault(connection.litellm_model, RESPONSE_MODES.index(mode))

    # -- cached records ------------------------------------------------------------------------

    def _from_record(self, record: dict[str, Any], key: str) -> Verdict | None:
        """The stored verdict; None (a miss, with a warning) if the record cannot be read."""
        try:
            return Verdict.from_dict(
                record["verdict"], cached=True, recorded_at=record.get("recorded_at"), key=key
            )
        except (KeyError, TypeError, ValueError) as error:
            import warnings

            warnings.warn(
                f"the cached record {key[:16]} is not a verdict this version can read ({error}); "
                "treating it as a miss",
                CacheWarning,
                stacklevel=2,
            )
            return None

    # -- live judging --------------------------------------------------------------------------

    async def _judge_live(
        self, request: JudgeRequest, connection: Connection, key: str
    ) -> tuple[Verdict, dict[str, Any]]:
        # A managed local server starts on the first call; its start-up is not judging time.
        import asyncio

        await asyncio.to_thread(connection.endpoint)
        started = time.perf_counter()
        waits: list[float] = []
        _queue_waits.set(waits)
        messages = list(request.messages)
        first = await self._answer(connection, messages, request)
        final, revised_from = first, None
        answers = [first]
        if request.double_check:
            follow = [
                *messages,
                assistant_turn(_as_reply(first.parsed)),
                {"role": "user", "content": DOUBLE_CHECK_PROMPT},
            ]
            final = await self._answer(connection, follow, request)
            answers.append(final)
            if final.parsed.value != first.parsed.value:
                revised_from = first.parsed.value
                logger.warning(
                    "the judge revised its verdict on %r from %r to %r",
                    request.claim,
                    first.parsed.value,
                    final.parsed.value,
                )
        elapsed = max(time.perf_counter() - started - sum(waits), 0.0)
        usage = Usage(
            prompt_tokens=sum(a.prompt_tokens for a in answers),
            completion_tokens=sum(a.completion_tokens for a in answers),
        )
        costs = [a.cost_usd for a in answers]
        cost = None if any(c is None for c in costs) else sum(c for c in costs if c is not None)
        recorded_at = datetime.now(UTC).replace(microsecond=0).isoformat()
        verdict = Verdict(
            kind=request.kind,
            claim=request.claim,
            value=final.parsed.value,
            justification=final.parsed.justification,
            reasoning=final.parsed.reasoning,
            confidence=final.parsed.confidence,
            model=connection.identity,
            cached=False,
            recorded_at=recorded_at,
            key=key,
            usage=usage,
            cost_usd=cost,
            judge_seconds=round(elapsed, 3),
            raw_reply=final.raw,
            revised_from=revised_from,
        )
        with self.stats.lock:
            self.stats.verdicts += 1
            self.stats.judge_seconds += elapsed
        stored = verdict.stored()
        record = {
            "claim": request.claim,
            "kind": request.kind,
            "model": connection.identity,
            "recorded_at": recorded_at,
            "plugin_version": __version__,
            "prompt_version": PROMPT_VERSION,
            "usage": stored["usage"],
            "cost_usd": cost,
            "raw_reply": final.raw,
            "verdict": stored,
            # The request itself, compressed: for cache rejudge and for explaining replay misses.
            "request": pack_request(self._key_material(request, connection)),
        }
        if request.test_id:
            record["test_id"] = request.test_id
        return verdict, record

    async def _answer(
        self, connection: Connection, messages: list[Message], request: JudgeRequest
    ) -> _Answer:
        """One parsed answer; an unparsable reply is asked again once before giving up."""
        from .parsing import parse_reply  # only a live reply needs the parser

        last_error: VerdictUnparsable | None = None
        for _ in range(2):
            mode = RESPONSE_MODES[self._modes.get(connection.litellm_model, 0)]
            try:
                response = await self._complete_with_fallback(connection, messages, request, mode)
            except JudgeUnavailable as error:
                raise JudgeUnavailable(
                    f"{error} (claim {quote_claim(request.claim)})",
                    status=error.status,
                    format_rejected=error.format_rejected,
                ) from None
            prompt_tokens, completion_tokens = _usage(response)
            cost = self._cost(response)
            with self.stats.lock:
                # Every reply is paid for, parsed or not: count it now (and for --prop-max-cost).
                self.stats.judge_calls += 1
                self.stats.prompt_tokens += prompt_tokens
                self.stats.completion_tokens += completion_tokens
                self.stats.cost_usd += cost or 0.0
            where = f"model {connection.identity}, claim {quote_claim(request.claim)}"
            try:
                content, refusal = self._content(response)
            except JudgeReplyInvalid as error:
                last_error = JudgeReplyInvalid(f"{error} ({where})", raw_reply=error.raw_reply)
                continue
            if refusal:
                last_error = VerdictUnparsable(
                    f"the judge refused to answer: {_printable(refusal[:200])} ({where})",
                    raw_reply=refusal,
                )
                continue
            try:
                parsed = parse_reply(families.strip_thinking(content), request.kind)
            except VerdictUnparsable as error:
                # The subclass (JudgeReplyInvalid) says the reply broke the plumbing: keep it.
                last_error = type(error)(f"{error} ({where})", raw_reply=error.raw_reply)
                continue
            return _Answer(parsed, content, prompt_tokens, completion_tokens, cost)
        assert last_error is not None
        raise last_error

    async def _complete_with_fallback(
        self, connection: Connection, messages: list[Message], request: JudgeRequest, mode: str
    ) -> Any:
        while True:
            try:
                return await self._complete(
                    connection,
                    messages,
                    sampling=self._sampling(request, connection),
                    mode=mode,
                    kind=request.kind,
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

    async def _complete(
        self,
        connection: Connection,
        messages: list[Message],
        *,
        sampling: dict[str, Any],
        mode: str,
        kind: Kind = "check",
    ) -> Any:
        """One completion, with retries on transient errors; other errors name what to fix.

        Calls go through litellm's async API; the semaphore bounds how many are in flight.
        """
        litellm = load_litellm()
        refusal = families.refusal_by_litellm(litellm, connection.litellm_model, sampling)
        if refusal is not None:
            raise JudgeUnavailable(
                f"litellm refused the request before sending it: {refusal}; no request reached "
                f"the server (model {connection.identity}). Please report this model."
            )
        arguments: dict[str, Any] = {
            "model": connection.litellm_model,
            "messages": messages,
            **sampling,
            "timeout": self.settings.timeout,
            "max_retries": 0,  # retries are ours, so they are counted and bounded in one place
        }
        # Starting a managed local server blocks; keep it off the event loop.
        import asyncio

        # The endpoint stays wrapped (Secret) in this frame, which a traceback with locals
        # shows; it is revealed only inside the call expression.
        api_base, api_key = await asyncio.to_thread(connection.secret_endpoint)
        fmt = response_format(mode, kind, grammar=connection.grammar)
        if fmt is not None:
            arguments["response_format"] = fmt
        attempts = self.settings.retries + 1
        for attempt in range(attempts):
            try:
                queued = time.perf_counter()
                async with self._semaphore(connection):
                    waits = _queue_waits.get()
                    if waits is not None:
                        waits.append(time.perf_counter() - queued)
                    return await litellm.acompletion(
                        **arguments, **_revealed(api_base=api_base, api_key=api_key)
                    )
            except Exception as error:
                # Read the provider's error here and let it go: its text (and its traceback's
                # frames) may quote the key, so no frame shown later may hold it.
                fault = _Fault.read(error, (api_key, *_url_credentials(api_base)))
            self._raise_if_final(fault, connection, attempt, attempts)
            delay = min(_BACKOFF_SECONDS * 2**attempt, _BACKOFF_CAP_SECONDS)
            logger.info(
                "judge call to %s failed (%s); retry %d of %d in %.2fs",
                connection.identity,
                fault.type_name,
                attempt + 1,
                attempts - 1,
                delay,
            )
            pause = (self._sleep or asyncio.sleep)(delay)
            if inspect.isawaitable(pause):
                await pause
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
            raise JudgeUnavailable(
                f"the judge ({where}) cannot be called with a user and password inside "
                "--prop-api-base: the HTTP client refuses to send them along with the API key. "
                "Remove them from the URL and give the key with PROP_API_KEY.",
                status=status,
            )
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

    @staticmethod
    def _content(response: Any) -> tuple[str, str | None]:
        """The reply text and, when the provider flagged one, its refusal."""
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
        refusal = getattr(message, "refusal", None)
        if refusal is None:  # litellm keeps OpenAI's refusal among provider-specific fields
            extra = getattr(message, "provider_specific_fields", None)
            refusal = extra.get("refusal") if isinstance(extra, dict) else None
        content = getattr(message, "content", None)
        if isinstance(refusal, str) and refusal.strip():
            return content or "", refusal
        return (content if isinstance(content, str) else ""), None

    @staticmethod
    def _cost(response: Any) -> float | None:
        hidden = getattr(response, "_hidden_params", None)
        if isinstance(hidden, dict) and "response_cost" in hidden:
            cost = hidden["response_cost"]  # litellm priced the call already (None: unknown)
        else:
            litellm = load_litellm()
            try:
                cost = litellm.completion_cost(completion_response=response)
            except Exception:
                return None
        try:
            return float(cost) if cost else None
        except (TypeError, ValueError):
            return None


def _with_engine_sampling(sampling: dict[str, Any], connection: Connection) -> dict[str, Any]:
    """The family's sampling, overridden by what the endpoint's engine requires (the local judge:
    temperature 0 and a fixed seed, for deterministic verdicts); sent and keyed as one."""
    return {**sampling, **(connection.sampling or {})}


def _as_reply(parsed: ParsedReply) -> dict[str, Any]:
    return {
        "reasoning": parsed.reasoning,
        "justification": parsed.justification,
        "value": parsed.value,
        "confidence": parsed.confidence,
    }


def _usage(response: Any) -> tuple[int, int]:
    usage = getattr(response, "usage", None)
    prompt = getattr(usage, "prompt_tokens", 0) or 0
    completion = getattr(usage, "completion_tokens", 0) or 0
    return int(prompt), int(completion)


def _url_credentials(api_base: Secret | None) -> tuple[Secret, ...]:
    """The user-and-password part of the URL and the password alone, to redact wherever seen."""
    if api_base is None:
        return ()
    found = re.search(r"://([^/?#@\s]+)@", api_base.reveal())
    if found is None:
        return ()
    userinfo = found.group(1)
    return (Secret(userinfo), Secret(userinfo.partition(":")[2]))


def _revealed(*, api_base: Secret | None, api_key: Secret | None) -> dict[str, str]:
    """The endpoint's keyword arguments in the clear, built inside the call expression only."""
    revealed: dict[str, str] = {}
    if api_base is not None and api_base.reveal():
        revealed["api_base"] = api_base.reveal()
    if api_key is not None and api_key.reveal():
        revealed["api_key"] = api_key.reveal()
    return revealed


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
            invalid_response=any(
                marker in link_text
                for link in _chain(error)
                for link_text in (str(link).lower(),)
                for marker in _INVALID_RESPONSE_MARKERS
            ),
        )


def _printable(text: str) -> str:
    """The text with unpaired surrogates replaced, so a message quoting it can be printed."""
    return text.encode("utf-8", "replace").decode("utf-8")
