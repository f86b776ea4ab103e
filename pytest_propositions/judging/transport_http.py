"""The light path: OpenAI-compatible chat endpoints over plain HTTP (httpx), without litellm.

OpenAI, Azure OpenAI, the local judge and any server at ``--prop-api-base`` (vLLM, Ollama's and
LM Studio's OpenAI APIs) speak one wire format; asking them through litellm costs seconds of
imports on every run that judges anything. This module sends the transport's request body as it
is, reads the response into the few fields the judge reads (the same attribute names litellm's
objects have, so one reader serves both paths), and raises every failure as a ``Fault`` read
from the response it got (its status, its Retry-After, its message) or from the one it did not.
Prices come from litellm's own table, read as data (the package is never imported).
The only module that imports httpx.
"""

from __future__ import annotations

import functools
import json
import os
import zlib
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlsplit

from ..redaction import redact_url
from .endpoint import key_variable, provider_key_variables
from .families import OPENAI_COMPATIBLE_PROVIDERS
from .faults import (
    Fault,
    FaultKind,
    causes,
    kind_of_status,
    overflows_window,
    rejects_format,
    retry_after_seconds,
)
from .size import price_entry, price_names, table_entry

if TYPE_CHECKING:
    import httpx

    from ..redaction import Secret
    from .families import Profile

__all__ = ["HttpPath", "price_entry"]

OPENAI_BASE = "https://api.openai.com/v1"
# Azure's API version when neither AZURE_API_VERSION nor OPENAI_API_VERSION says (the latest
# generally available one at the time of writing).
AZURE_DEFAULT_API_VERSION = "2024-10-21"
AZURE_JSON_SCHEMA_SINCE = "2024-08-01-preview"


# -- faults, read from the response ----------------------------------------------------------


def _status_fault(status: int, body: bytes, retry_after: float | None) -> Fault:
    """The fault an error status and its body make: the body's own message is the detail."""
    text = body.decode("utf-8", "replace")
    message = text
    try:
        payload = json.loads(text)
    except (ValueError, RecursionError):  # not JSON, or nested past what a parser can walk
        payload = None
    if isinstance(payload, dict):
        error = payload.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            message = error["message"]
        elif isinstance(error, str):
            message = error
        elif isinstance(payload.get("message"), str):
            message = payload["message"]
    kind: FaultKind = kind_of_status(status)
    if rejects_format(status, message):
        kind = "format_rejected"
    elif overflows_window(status, text):  # the code or type beside the message says it
        kind = "context_overflow"
    detail = f"Error code: {status} - {message[:2000]}"
    return Fault(kind, detail, status, retry_after)


# -- the response, as the judge reads it ---------------------------------------------------------


@dataclass(frozen=True)
class Message:
    content: str | None
    refusal: str | None = None
    role: str = "assistant"


@dataclass(frozen=True)
class Choice:
    message: Message
    # As the body gives it, whatever its type: only a normal stop's word makes a whole reply.
    finish_reason: Any = None
    # What the choice says beside its message that litellm keeps under this name too: an
    # ``error`` object, and the provider's own ``native_finish_reason`` (OpenRouter's).
    provider_specific_fields: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0


@dataclass(frozen=True)
class Completion:
    """A chat completion: the fields the judge reads, under litellm's attribute names."""

    choices: list[Choice]
    usage: Usage
    model: str | None
    # litellm's name for where it keeps the call's price; the reader takes it from here.
    _hidden_params: dict[str, Any] = field(default_factory=dict)
    # Keys the body gave more than once (JSON allows it; a parser silently keeps the last).
    repeated_keys: tuple[str, ...] = ()
    # An ``error`` object beside the choices (None when the body has none, or a null one).
    error: Any = None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _repeated_keys(found: list[str]) -> Any:
    """An object_pairs_hook that notes every key an object gives more than once."""

    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen and key not in found:
                found.append(key)
            seen.add(key)
        return dict(pairs)

    return hook


def read_completion(data: bytes, content_type: str) -> Completion:
    """The body of an HTTP 200 as a completion; a fault of kind ``invalid_response`` if it is not one.

    A key given twice anywhere in it (two ``content``, two ``choices``) is noted, not resolved:
    the completion's ``repeated_keys`` makes the judge treat the reply as unreadable.
    """
    repeated: list[str] = []
    try:
        payload = json.loads(data, object_pairs_hook=_repeated_keys(repeated))
    except RecursionError:
        raise Fault(
            "invalid_response",
            "invalid response object: the body nests values deeper than a JSON reader can "
            f"walk: {_start(data)}",
        ) from None
    except ValueError:
        raise Fault(
            "invalid_response",
            f"invalid response object: the body is not JSON ({content_type or 'no content type'})"
            f": {_start(data)}",
        ) from None
    choices = payload.get("choices") if isinstance(payload, dict) else None
    if not isinstance(choices, list):
        raise Fault(
            "invalid_response",
            f"invalid response object: no 'choices' list in the chat completion: {_start(data)}",
        )
    read: list[Choice] = []
    for choice in choices:
        if not isinstance(choice, dict):
            raise Fault(
                "invalid_response",
                "invalid response object: returned 'choices' that is not a list of objects: "
                + _start(data),
            )
        message = choice.get("message")
        if not isinstance(message, dict):  # litellm's reading too: no chat completion
            raise Fault(
                "invalid_response",
                "invalid response object: a choice whose message is not an object: " + _start(data),
            )
        extra = {
            name: choice[name]
            for name in ("error", "native_finish_reason")
            if choice.get(name) is not None
        }
        read.append(
            Choice(
                Message(_text(message.get("content")), _text(message.get("refusal"))),
                choice.get("finish_reason"),
                extra,
            )
        )
    usage = payload.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    details = usage.get("prompt_tokens_details")
    cached = _count(details.get("cached_tokens")) if isinstance(details, dict) else 0
    return Completion(
        read,
        Usage(_count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens")), cached),
        _text(payload.get("model")),
        repeated_keys=tuple(repeated),
        error=payload.get("error"),
    )


def _start(data: bytes) -> str:
    """A body's first bytes, as a message shows them."""
    return data[:300].decode("utf-8", "replace")


# -- reading a body, bounded ------------------------------------------------------------------

# An error body is read for its message only: its first bytes are enough.
_ERROR_BODY_BYTES = 64 * 1024
_ACCEPT_ENCODING = "gzip, deflate"


class _Decoder:
    """A body's content coding undone step by step, never producing more than it is asked for:
    a few kilobytes of compressed zeros (a bomb) cannot inflate past the cap."""

    def __init__(self, coding: str) -> None:
        self.coding = coding
        self._inflater: Any = None
        self._raw_deflate = False
        if coding in ("gzip", "x-gzip"):
            self._inflater = zlib.decompressobj(zlib.MAX_WBITS | 16)
        elif coding == "deflate":
            self._inflater = zlib.decompressobj()
        elif coding not in ("", "identity"):
            raise Fault(
                "refused_reply",
                f"sent a reply in the content coding {coding[:40]!r}, which the client did not "
                f"ask for (it asks for {_ACCEPT_ENCODING})",
            )
        self._started = False

    def decode(self, data: bytes, room: int) -> bytes:
        """Up to ``room`` decoded bytes of ``data``; reaching ``room`` means there may be more."""
        if self._inflater is None:
            return data[:room]
        try:
            out: bytes = self._inflater.decompress(data, room)
        except zlib.error:
            if self.coding == "deflate" and not self._started and not self._raw_deflate:
                # "deflate" is often sent without its zlib header, as a raw stream.
                self._raw_deflate = True
                self._inflater = zlib.decompressobj(-zlib.MAX_WBITS)
                return self.decode(data, room)
            raise Fault(
                "invalid_response",
                f"invalid response object: the body's {self.coding} coding is broken",
            ) from None
        self._started = True
        if self._inflater.eof and self._inflater.unused_data:
            raise Fault(
                "invalid_response",
                f"invalid response object: the body goes on after its {self.coding} stream "
                "ends (trailing bytes no decoder reads)",
            )
        return out

    def finish(self) -> None:
        """The whole body was read: its compressed stream must have ended (with gzip's
        checksum and length checked), or the body was cut short in transit."""
        if self._inflater is not None and not self._inflater.eof:
            raise Fault(
                "invalid_response",
                f"invalid response object: the body's {self.coding} stream is cut short (it "
                "ends before its end, checksum and length unread)",
            )


async def _read_body(response: httpx.Response, limit: int, *, cut: bool) -> bytes:
    """The decoded body, counted while it is read; past ``limit`` bytes a refused reply, or with
    ``cut`` its first ``limit`` bytes (an error body: only its message is wanted)."""
    decoder = _Decoder(response.headers.get("content-encoding", "").strip().lower())
    body = bytearray()
    async for raw in response.aiter_raw():
        room = limit + 1 - len(body)
        body += decoder.decode(raw, room)
        if len(body) > limit:
            if cut:
                return bytes(body[:limit])
            raise Fault(
                "refused_reply",
                f"sent a reply larger than {limit} bytes (decompressed), which was not read "
                "further; raise --prop-max-reply-bytes if the judge really writes that much",
            )
    if not cut:
        decoder.finish()
    return bytes(body)


async def _refuse_redirect(response: httpx.Response) -> None:
    """A 3xx is refused as soon as its headers arrive: its body is never read (a redirect's page
    is not the judge's answer), and its Location is never parsed (httpx would parse it to build
    the next request, and fail on a password holding a "/")."""
    status = response.status_code
    if 300 <= status < 400:
        location = _shown_location(response.headers.get("location", ""))
        raise Fault(
            "refused_reply",
            f"answered with a redirect (HTTP {status} to {location}), which is not followed: "
            "only a 2xx response is a reply. Point --prop-api-base at the endpoint itself",
            status,
        )


def _shown_location(location: str) -> str:
    """A redirect's target as a message may show it: no user or password, and not too long."""
    shown = redact_url(location.strip())
    return (shown[:200] + "...") if len(shown) > 200 else (shown or "no Location header")


# -- prices: litellm's table, read as data ---------------------------------------------------------


def _cost(profile: Profile, completion: Completion) -> float | None:
    """The call's price as litellm's table gives it; None when the model is not in it."""
    entry = table_entry(profile, completion.model)
    if entry is None:
        return None
    try:
        prompt_rate = float(entry.get("input_cost_per_token") or 0.0)
        completion_rate = float(entry.get("output_cost_per_token") or 0.0)
        cached_rate = float(entry.get("cache_read_input_token_cost") or prompt_rate)
    except (TypeError, ValueError):
        return None
    usage = completion.usage
    cached = min(usage.cached_tokens, usage.prompt_tokens)
    return (
        (usage.prompt_tokens - cached) * prompt_rate
        + cached * cached_rate
        + usage.completion_tokens * completion_rate
    )


# -- the path ----------------------------------------------------------------------------------


def _environment(names: tuple[str, ...]) -> str | None:
    for name in names:
        value = os.environ.get(name)
        if value:
            return value
    return None


def azure_api_version(profile: Profile | None = None) -> str:
    chosen = profile.api_version if profile is not None else None
    return (
        chosen
        or _environment(("AZURE_API_VERSION", "OPENAI_API_VERSION"))
        or AZURE_DEFAULT_API_VERSION
    )


def _connect_reason(error: BaseException) -> str:
    """The operating system's reason a connection failed (httpx's own words only say that
    every attempt failed)."""
    for link in causes(error):
        if isinstance(link, OSError) and link.errno is not None:
            return f"{link.strerror or link} ({type(link).__name__})"
    return str(error) or "the connection failed"


@functools.cache
def _client_class() -> type[httpx.AsyncClient]:
    """httpx's client whose connections are made by :func:`_transport_class`'s transport, for
    the endpoint itself and for a proxy the environment names."""
    import httpx

    transport = _transport_class()

    class Client(httpx.AsyncClient):
        # httpx passes these their settings by keyword (verify, cert, trust_env, limits, ...).
        def _init_transport(self, **kwargs: Any) -> httpx.AsyncBaseTransport:  # type: ignore[override]
            kwargs.pop("transport", None)
            return transport(**kwargs)

        def _init_proxy_transport(  # type: ignore[override]
            self, proxy: httpx.Proxy, **kwargs: Any
        ) -> httpx.AsyncBaseTransport:
            return transport(proxy=proxy, **kwargs)

    return Client


@functools.cache
def _transport_class() -> type[httpx.AsyncHTTPTransport]:
    """httpx's transport, with the one method that sends a request defined here.

    HTTP recorders (vcrpy, so pytest-recording's cassettes) patch that method on httpx's own
    transport classes; the judge's calls are not the test's traffic and must never land in a
    cassette beside the simulation's, whatever the user's recorder configuration says. A
    subclass's own method is never the patched one. Like httpx's own, it hands the body on as a
    stream (the reader counts it against the size cap as it arrives) and raises httpx's
    exceptions."""
    import httpcore
    import httpx

    class Transport(httpx.AsyncHTTPTransport):
        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            sent = httpcore.Request(
                method=request.method,
                url=httpcore.URL(
                    scheme=request.url.raw_scheme,
                    host=request.url.raw_host,
                    port=request.url.port,
                    target=request.url.raw_path,
                ),
                headers=request.headers.raw,
                content=request.stream,
                extensions=request.extensions,
            )
            try:
                answer = await self._pool.handle_async_request(sent)
            except Exception as error:
                mapped = _httpx_error(httpx, error)
                if mapped is error:
                    raise
                raise mapped from error
            return httpx.Response(
                answer.status,
                headers=answer.headers,
                stream=Body(answer.stream),
                extensions=answer.extensions,
            )

    class Body(httpx.AsyncByteStream):
        """httpcore's body as httpx reads it: chunk by chunk, with httpx's exceptions."""

        def __init__(self, stream: Any) -> None:
            self._stream = stream

        async def __aiter__(self) -> Any:
            try:
                async for part in self._stream:
                    yield part
            except Exception as error:
                mapped = _httpx_error(httpx, error)
                if mapped is error:
                    raise
                raise mapped from error

        async def aclose(self) -> None:
            await self._stream.aclose()

    return Transport


def _httpx_error(httpx: ModuleType, error: Exception) -> Exception:
    """httpcore's exception as httpx's of the same name (httpx's own transport maps them so)."""
    mapped = getattr(httpx, type(error).__name__, None)
    if isinstance(mapped, type) and issubclass(mapped, httpx.TransportError):
        return mapped(str(error))  # type: ignore[no-any-return]
    if type(error).__module__.startswith("httpcore"):
        return httpx.TransportError(f"{type(error).__name__}: {error}")  # type: ignore[no-any-return]
    return error


class HttpPath:
    """Calls to OpenAI-compatible endpoints, on one pooled HTTP client per run."""

    def __init__(self, timeout: float, max_reply_bytes: int = 1024 * 1024) -> None:
        self.timeout = timeout
        self.max_reply_bytes = max_reply_bytes
        # One pooled client per URL scheme: a plain-HTTP endpoint (a local server) gets one
        # that never loads the certificate store it would not use.
        self._clients: dict[str, httpx.AsyncClient] = {}

    def refusal(self, profile: Profile, sampling: dict[str, Any]) -> str | None:
        """This path sends what the table chose: it refuses nothing before sending."""
        return None

    def unrouted(self, profile: Profile, api_base: str | None) -> str | None:
        """This path takes only models whose provider it knows (``families.provider_of``)."""
        return None

    def first_response_mode(self, profile: Profile, modes: tuple[str, ...]) -> str:
        """The structured-output mode the response-format fallback starts at: Azure before 2024-08-01-preview, and a model
        litellm's table says has no response schema, start at JSON mode. Called before the
        first call, off the event loop: the HTTP client is imported here too."""
        import httpx  # noqa: F401

        if profile.provider == "azure" and azure_api_version(profile) < AZURE_JSON_SCHEMA_SINCE:
            return modes[1]
        for name in price_names(profile, None):
            entry = price_entry(name)
            if entry is not None:
                return modes[0] if entry.get("supports_response_schema") else modes[1]
        return modes[0]

    def _url(self, profile: Profile, api_base: Secret | None) -> str:
        bases = OPENAI_COMPATIBLE_PROVIDERS[profile.provider or "openai"].base
        base = (api_base.reveal() if api_base is not None else None) or _environment(bases)
        if profile.provider == "azure":
            if not base:
                raise Fault(
                    "bad_request",
                    "no endpoint for the Azure deployment: set AZURE_API_BASE or --prop-api-base",
                )
            deployment = quote(profile.wire_model, safe="")
            return (
                f"{base.rstrip('/')}/openai/deployments/{deployment}/chat/completions"
                f"?api-version={quote(azure_api_version(profile), safe='')}"
            )
        if not base:
            if profile.provider not in ("openai", "custom_openai"):
                raise Fault(
                    "bad_request",
                    f"no endpoint for {profile.model}: set --prop-api-base "
                    f"(or {' or '.join(bases)})",
                )
            base = OPENAI_BASE
        return f"{base.rstrip('/')}/chat/completions"

    def _headers(self, profile: Profile, api_key: Secret | None) -> dict[str, str]:
        keys = provider_key_variables(profile.model)
        key = (api_key.reveal() if api_key is not None else None) or _environment(keys)
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if not key:
            if profile.provider in ("openai", "azure", "custom_openai"):
                raise Fault(
                    "missing_key",
                    f"Missing credentials: no API key for {profile.model} "
                    f"(the {key_variable(profile.model)} environment variable)",
                )
            return headers
        if profile.provider == "azure":
            headers["api-key"] = key
        else:
            headers["Authorization"] = f"Bearer {key}"
        return headers

    async def send(
        self,
        profile: Profile,
        body: dict[str, Any],
        api_base: Secret | None,
        api_key: Secret | None,
    ) -> Completion:
        """One POST of the request body; a completion, or the fault that stopped it."""
        import httpx

        url = self._url(profile, api_base)
        try:
            parts = urlsplit(url)
            credentials = parts.username is not None or parts.password is not None
        except ValueError as error:  # a malformed --prop-api-base: no request can be made
            raise Fault("bad_request", f"invalid URL: {error}") from None
        if credentials:
            raise Fault(
                "url_credentials",
                "credentials encoded in URL: the client does not send a user and password "
                "along with an API key",
            )
        scheme = parts.scheme.lower()
        client = self._clients.get(scheme)
        if client is None:
            client = self._clients[scheme] = _client_class()(
                timeout=httpx.Timeout(self.timeout),
                follow_redirects=False,
                trust_env=True,
                verify=scheme == "https",
                event_hooks={"response": [_refuse_redirect]},
            )
        payload = json.dumps({"model": profile.wire_model, **body}).encode()
        headers = self._headers(profile, api_key)
        headers["Accept-Encoding"] = _ACCEPT_ENCODING
        data, content_type = await self._exchange(client, url, payload, headers)
        completion = read_completion(data, content_type)
        completion._hidden_params["response_cost"] = _cost(profile, completion)
        return completion

    async def _exchange(
        self, client: httpx.AsyncClient, url: str, payload: bytes, headers: dict[str, str]
    ) -> tuple[bytes, str]:
        """One POST, its body read as a stream: a 2xx's body and content type, or a fault."""
        import httpx

        try:
            request = client.build_request("POST", url, content=payload, headers=headers)
            response = await client.send(request, stream=True)
            try:
                status = response.status_code
                if not 200 <= status < 300:
                    error_body = await _read_body(
                        response, min(_ERROR_BODY_BYTES, self.max_reply_bytes), cut=True
                    )
                    retry_after = retry_after_seconds(response.headers.get("retry-after"))
                    raise _status_fault(status, error_body, retry_after)
                data = await _read_body(response, self.max_reply_bytes, cut=False)
                return data, response.headers.get("content-type", "")
            finally:
                await response.aclose()
        except httpx.TimeoutException as error:
            raise Fault("timeout", f"Request timed out after {self.timeout:g}s") from error
        except httpx.ConnectError as error:
            # Nothing listens there, or the name does not resolve: no request was made.
            detail = f"Connection error: {_connect_reason(error)}"
            raise Fault("refused_connection", detail) from error
        except httpx.TransportError as error:
            raise Fault(
                "connection", f"Connection error: {type(error).__name__}: {error or 'no response'}"
            ) from error
        except (httpx.InvalidURL, httpx.HTTPError) as error:
            # No request could be made (a malformed --prop-api-base): another try cannot help.
            raise Fault("bad_request", f"{type(error).__name__}: {error}") from error

    async def aclose(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            await client.aclose()

    @property
    def open(self) -> bool:
        return bool(self._clients)
