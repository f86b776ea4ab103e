"""A scripted OpenAI-compatible chat-completions server on loopback, for testing the judge path.

Tests talk to it over real HTTP (through litellm and the openai SDK), so every request the
plugin sends is recorded exactly as a provider would see it, and every reply, good or broken,
is decided by the test. Nothing here contacts anything but 127.0.0.1.

Streaming is deliberately unsupported: a request with ``"stream": true`` gets HTTP 400, so a
plugin that starts streaming by accident fails loudly instead of parsing a non-stream reply.

Model families, as strict as the real ones (see :class:`ScriptedJudge`): an ordinary model
refuses ``reasoning_effort``; with :attr:`ScriptedJudge.reasoning_efforts` set the server is an
OpenAI reasoning model, which refuses any temperature but 1 and any effort level it lacks, with
OpenAI's 400 bodies; Azure's deployment route refuses ``json_schema`` on API versions before
2024-08-01-preview with Azure's body, and a request without its ``api-key`` header (or with
another key than :attr:`ScriptedJudge.azure_api_key`) with Azure's 401; :attr:`ScriptedJudge.thinking` makes it a local reasoning
model that writes a ``<think>`` block before every answer.

Real providers' recorded bodies (``tests/data/provider_replies``, each with its source) are served
by :func:`recorded`, with the verdict text put where the provider writes its reply: OpenAI's
and OpenRouter's on the chat route, Anthropic's on ``/v1/messages`` and Gemini's on
``/models/NAME:generateContent`` (the routes litellm posts to when ``api_base`` is this server).

Run as a program (``python tests/support/judge_server.py PORT [MODEL ...]``) it is a server
another process starts and stops, as the managed local judge does llama.cpp's: it says
``LISTENING`` on its standard output, then serves until killed (see :func:`main` to script it,
and :attr:`ScriptedJudge.slots` for llama.cpp's ``/slots``).
"""

from __future__ import annotations

import json
import runpy
import struct
import sys
import threading
import urllib.parse
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any, TypeAlias

__all__ = [
    "AZURE_JSON_SCHEMA_REJECTION",
    "AZURE_JSON_SCHEMA_SINCE",
    "AZURE_MODEL_JSON_SCHEMA_REJECTION",
    "CREATED",
    "JSON_SCHEMA_REJECTION",
    "PROVIDER_REPLIES",
    "Choices",
    "DeepBeside",
    "Delay",
    "Disconnect",
    "EchoFn",
    "GzipBomb",
    "Gzipped",
    "MalformedBody",
    "Matcher",
    "NoChoices",
    "NullMessage",
    "Overflow",
    "RawContent",
    "Recorded",
    "RecordedRequest",
    "Redirect",
    "Refusal",
    "RepeatedKey",
    "Reply",
    "Rule",
    "ScriptedJudge",
    "Sequence",
    "Status",
    "Text",
    "Trickle",
    "VerdictReply",
    "WrongShape",
    "choices",
    "deep_beside",
    "delay",
    "disconnect",
    "echo_fn",
    "gzip_bomb",
    "gzipped",
    "malformed_body",
    "message_text",
    "no_choices",
    "null_message",
    "overflow",
    "raw_content",
    "recorded",
    "redirect",
    "refusal",
    "repeated_key",
    "sequence",
    "status",
    "text",
    "trickle",
    "verdict",
    "wrong_shape",
]

# Fixed so that recorded responses (and anything cached from them) are deterministic.
CREATED = 1_700_000_000

# Real providers' response bodies, recorded by public projects' test cassettes (SOURCES.md there
# says which repository, file and commit each one comes from).
PROVIDER_REPLIES = Path(__file__).resolve().parent.parent / "data" / "provider_replies"

JSON_SCHEMA_REJECTION = (
    "Unsupported response_format type: json_schema; "
    'response_format must be "text" or "json_object" (use json_object with a schema)'
)

# Azure's chat route answers a json_schema response_format on older API versions with this.
AZURE_JSON_SCHEMA_SINCE = "2024-08-01-preview"
AZURE_JSON_SCHEMA_REJECTION = (
    "response_format value as json_schema is enabled only for api versions "
    f"{AZURE_JSON_SCHEMA_SINCE} and later"
)
# Azure's answer to a request without a valid api-key header.
AZURE_ACCESS_DENIED = {
    "error": {
        "code": "401",
        "message": "Access denied due to invalid subscription key or wrong API endpoint. Make "
        "sure to provide a valid key for an active subscription and use a correct regional API "
        "endpoint for your resource.",
    }
}

# Azure's (and OpenAI's) answer to json_schema for a deployed model without structured outputs.
AZURE_MODEL_JSON_SCHEMA_REJECTION = (
    "Invalid parameter: 'response_format' of type 'json_schema' is not supported with this "
    "model. Learn more about supported models at the Structured Outputs guide: "
    "https://platform.openai.com/docs/guides/structured-outputs"
)


def _openai_error(message: str, param: str, code: str) -> dict[str, Any]:
    """OpenAI's 400 body for a parameter the model does not take."""
    return {
        "error": {
            "message": message,
            "type": "invalid_request_error",
            "param": param,
            "code": code,
        }
    }


def _number(value: Any) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def _quoted_list(values: list[str]) -> str:
    quoted = [f"'{value}'" for value in values]
    if len(quoted) < 2:
        return "".join(quoted)
    return ", ".join(quoted[:-1]) + ", and " + quoted[-1]


def _forced_tool(body: dict[str, Any]) -> str | None:
    """The function a request forces the model to call (``tool_choice``), if any."""
    choice = body.get("tool_choice")
    if isinstance(choice, dict) and isinstance(choice.get("function"), dict):
        name = choice["function"].get("name")
        return name if isinstance(name, str) else None
    return None


# --------------------------------------------------------------------------- recorded requests


def message_text(messages: list[Any]) -> str:
    """Join every message content (plain strings or lists of parts) so rules can match on it."""
    chunks: list[str] = []
    for message in messages:
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        if isinstance(content, str):
            chunks.append(content)
        elif isinstance(content, list):
            for part in content:
                if isinstance(part, dict) and isinstance(part.get("text"), str):
                    chunks.append(part["text"])
                elif isinstance(part, str):
                    chunks.append(part)
    return "\n".join(chunks)


@dataclass(frozen=True)
class RecordedRequest:
    """One chat request as the server received it; header names are lower-cased."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    query: dict[str, str] = field(default_factory=dict)

    @property
    def messages(self) -> list[dict[str, Any]]:
        messages = self.body.get("messages")
        return messages if isinstance(messages, list) else []

    @property
    def model(self) -> str | None:
        model = self.body.get("model")
        return model if isinstance(model, str) else None

    @property
    def response_format(self) -> dict[str, Any] | None:
        fmt = self.body.get("response_format")
        return fmt if isinstance(fmt, dict) else None

    @property
    def text(self) -> str:
        contents = self.body.get("contents")  # Gemini's messages: parts, not content
        if isinstance(contents, list):
            parts = [{"content": c.get("parts")} for c in contents if isinstance(c, dict)]
            return message_text(parts)
        return message_text(self.messages)


# --------------------------------------------------------------------------- reply specs


@dataclass(frozen=True)
class VerdictReply:
    """A well-formed judge answer: the JSON verdict object as the message content."""

    value: Any
    justification: str = "Scripted justification."
    confidence: Any = 0.9
    reasoning: str = "Scripted reasoning."

    def content(self) -> str:
        return json.dumps(
            {
                "reasoning": self.reasoning,
                "justification": self.justification,
                "value": self.value,
                "confidence": self.confidence,
            }
        )


@dataclass(frozen=True)
class Text:
    """A raw message content: prose, broken JSON, fenced JSON, an empty string or null."""

    content: str | None
    finish_reason: str = "stop"


@dataclass(frozen=True)
class Status:
    """An HTTP error with an OpenAI-style error body."""

    code: int
    message: str
    error_type: str = "server_error"


@dataclass(frozen=True)
class Overflow:
    """A request longer than the model's window, refused as a provider refuses it: ``openai``
    (OpenAI's HTTP 400 ``context_length_exceeded``) or ``llamacpp`` (llama.cpp server's HTTP
    400 ``exceed_context_size_error``, with its token counts), each in its real body's shape."""

    provider: str
    window: int
    tokens: int

    def body(self) -> dict[str, Any]:
        if self.provider == "openai":
            # OpenAI's chat completions route (the shape its API has answered since 2023).
            message = (
                f"This model's maximum context length is {self.window} tokens. However, your "
                f"messages resulted in {self.tokens} tokens. Please reduce the length of the "
                "messages."
            )
            error: dict[str, Any] = {
                "message": message,
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded",
            }
        elif self.provider == "llamacpp":
            # llama.cpp's server (tools/server: format_error_response with
            # ERROR_TYPE_EXCEED_CONTEXT_SIZE, which adds n_prompt_tokens and n_ctx).
            error = {
                "code": 400,
                "message": f"request ({self.tokens} tokens) exceeds the available context size "
                f"({self.window} tokens), try increasing it",
                "type": "exceed_context_size_error",
                "n_prompt_tokens": self.tokens,
                "n_ctx": self.window,
            }
        else:
            raise ValueError(f"no overflow body for {self.provider!r}")
        return {"error": error}


@dataclass(frozen=True)
class MalformedBody:
    """HTTP 200 whose body is not JSON at all."""

    body: str = "<html><body>502 Bad Gateway (scripted, not JSON)</body></html>"


@dataclass(frozen=True)
class WrongShape:
    """HTTP 200 with valid JSON that is not a chat completion."""

    payload: str = '{"hello": "world"}'


@dataclass(frozen=True)
class Refusal:
    """The model declined: content is null and OpenAI's ``refusal`` field holds the message."""

    message: str = "I can't help with that."


@dataclass(frozen=True)
class NoChoices:
    """HTTP 200, a chat completion whose ``choices`` list is empty (content-filtered upstream)."""


@dataclass(frozen=True)
class NullMessage:
    """HTTP 200, a chat completion whose only choice has ``"message": null``."""


@dataclass(frozen=True)
class RawContent:
    """HTTP 200, a chat completion whose content is spliced in as raw JSON text.

    ``json_text`` must be a JSON string literal, so a test can send what ``json.dumps`` never
    writes on its own, such as an unpaired surrogate escape (``"\\ud800"``).
    """

    json_text: str


@dataclass(frozen=True)
class Disconnect:
    """Close the connection without sending any response (a dropped or crashed server)."""


@dataclass(frozen=True)
class Delay:
    """Wait, then send ``then``; the wait ends early when the server is stopped."""

    seconds: float
    then: Reply


@dataclass(frozen=True)
class Redirect:
    """An HTTP 3xx with a ``Location``, whose body is ``then``'s (a verdict, say): a proxy or a
    moved endpoint; a client must neither follow it nor read its body as the answer."""

    code: int
    location: str
    then: Reply


@dataclass(frozen=True)
class Trickle:
    """``then``'s response, its body sent one byte every ``interval`` seconds (headers at once),
    as a hostile or stalled server does; it stops when the body ends, the client hangs up, or
    the server is stopped."""

    interval: float
    then: Reply


@dataclass(frozen=True)
class Gzipped:
    """``then``'s response with its body gzip-compressed (``Content-Encoding: gzip``), as most
    providers send it; ``cut`` bytes taken off the end of the stream (its trailer, then its
    data) and ``junk`` sent after it, as a broken proxy or a truncated transfer would."""

    then: Reply
    cut: int = 0
    junk: bytes = b""


@dataclass(frozen=True)
class GzipBomb:
    """HTTP 200, ``Content-Encoding: gzip``: a chat completion whose JSON holds ``inflated``
    bytes of blanks once decompressed, sent as a few hundred kilobytes."""

    inflated: int


@dataclass(frozen=True)
class RepeatedKey:
    """HTTP 200, a chat completion giving ``key`` twice: the message's ``content`` or a key of
    the completion itself (``model``, ``choices``). JSON parsers silently keep the second."""

    key: str
    first: Any
    second: Any


@dataclass(frozen=True)
class Choices:
    """HTTP 200, a chat completion with one choice per content (a server ignoring ``n``)."""

    contents: tuple[str, ...]


@dataclass(frozen=True)
class DeepBeside:
    """HTTP 200, a chat completion holding a passing verdict and, beside its message, a value
    nested ``depth`` lists deep (more than any recursive JSON reader can walk)."""

    depth: int


@dataclass(frozen=True)
class Recorded:
    """HTTP 200, real providers' recorded bodies (``PROVIDER_REPLIES/NAME.json``) served as
    recorded, but for the reply text: ``texts[i]`` is put where the provider wrote its reply in
    choice (or candidate) ``i``, taken from the body ``names[i]`` (the body itself is
    ``names[0]``'s). ``beside`` adds keys to the body and ``in_choice`` to its first choice
    (an ``error`` object, say). Served only on its provider's route."""

    names: tuple[str, ...]
    texts: tuple[str, ...]
    beside: tuple[tuple[str, Any], ...] = ()
    in_choice: tuple[tuple[str, Any], ...] = ()

    @property
    def body(self) -> dict[str, Any]:
        """The body as the server sends it."""
        bodies = [_provider_body(name) for name in self.names]
        body = bodies[0]
        family = provider_of(body)
        if family == "openai":
            body["choices"] = [
                _with_index(recorded["choices"][0], index, "index", text, _openai_text)
                for index, (recorded, text) in enumerate(zip(bodies, self.texts, strict=True))
            ]
            body["choices"][0].update(dict(self.in_choice))
        elif family == "gemini":
            body["candidates"] = [
                _with_index(recorded["candidates"][0], index, "index", text, _gemini_text)
                for index, (recorded, text) in enumerate(zip(bodies, self.texts, strict=True))
            ]
            body["candidates"][0].update(dict(self.in_choice))
        else:
            if len(self.names) != 1 or self.in_choice:
                raise ValueError("an Anthropic message has one reply: give one body")
            _anthropic_text(body, self.texts[0])
        body.update(dict(self.beside))
        return body


def _provider_body(name: str) -> dict[str, Any]:
    body = json.loads((PROVIDER_REPLIES / f"{name}.json").read_text(encoding="utf-8"))
    if not isinstance(body, dict):
        raise ValueError(f"{name}.json is not a response body")
    return body


def provider_of(body: dict[str, Any]) -> str:
    """Whose body this is, by its shape: "openai" (a chat completion, OpenRouter's too),
    "anthropic" (a message) or "gemini" (candidates)."""
    if "choices" in body:
        return "openai"
    if body.get("type") == "message":
        return "anthropic"
    if "candidates" in body:
        return "gemini"
    raise ValueError(f"not a provider's response body: {sorted(body)}")


def _with_index(
    choice: dict[str, Any],
    index: int,
    key: str,
    text: str,
    put: Callable[[dict[str, Any], str], None],
) -> dict[str, Any]:
    choice = json.loads(json.dumps(choice))
    choice[key] = index
    put(choice, text)
    return choice


def _openai_text(choice: dict[str, Any], text: str) -> None:
    choice["message"]["content"] = text


def _gemini_text(candidate: dict[str, Any], text: str) -> None:
    # A candidate stopped before any text (SAFETY) has no parts: the text goes where Gemini
    # writes it when it has some.
    content = candidate.setdefault("content", {})
    content.setdefault("role", "model")
    parts = [part for part in content.get("parts", []) if "text" not in part]
    content["parts"] = [{"text": text}, *parts]


def _anthropic_text(message: dict[str, Any], text: str) -> None:
    blocks = [block for block in message["content"] if block.get("type") != "text"]
    message["content"] = [*blocks, {"type": "text", "text": text}]


@dataclass(frozen=True)
class EchoFn:
    """Build the reply from the request itself."""

    fn: Callable[[RecordedRequest], Reply]


class Sequence:
    """Replies handed out in order, one per call; the last one repeats forever.

    The counter lives in this object, so a sequence used by one rule counts that rule's calls.
    """

    def __init__(self, replies: tuple[Reply, ...]) -> None:
        if not replies:
            raise ValueError("sequence() needs at least one reply")
        self.replies = replies
        self._calls = 0
        self._lock = threading.Lock()

    @property
    def calls(self) -> int:
        with self._lock:
            return self._calls

    def next(self) -> Reply:
        with self._lock:
            index = min(self._calls, len(self.replies) - 1)
            self._calls += 1
        return self.replies[index]

    def __repr__(self) -> str:
        return f"Sequence({', '.join(map(repr, self.replies))})"


Reply: TypeAlias = (
    VerdictReply
    | Text
    | Status
    | Overflow
    | MalformedBody
    | WrongShape
    | Refusal
    | Disconnect
    | NoChoices
    | NullMessage
    | RawContent
    | Delay
    | Sequence
    | EchoFn
    | Redirect
    | Trickle
    | Gzipped
    | GzipBomb
    | RepeatedKey
    | Choices
    | DeepBeside
    | Recorded
)


def verdict(
    value: Any,
    justification: str = "Scripted justification.",
    confidence: Any = 0.9,
    reasoning: str = "Scripted reasoning.",
) -> VerdictReply:
    """A valid verdict; ``value`` and ``confidence`` are not checked so tests can send bad ones."""
    return VerdictReply(value, justification, confidence, reasoning)


def text(content: str | None, finish_reason: str = "stop") -> Text:
    """The raw content string as the assistant message (``None`` sends a null content)."""
    return Text(content, finish_reason)


def status(code: int, message: str | None = None, error_type: str = "server_error") -> Status:
    """An HTTP error; a 429 also carries ``Retry-After: 0`` (the openai SDK ignores a 0 wait)."""
    if message is None:
        message = f"Scripted HTTP {code} error"
    return Status(code, message, error_type)


def overflow(provider: str, window: int = 8192, tokens: int = 9000) -> Overflow:
    """HTTP 400: the request is over the window, as ``provider`` ("openai", "llamacpp") says it."""
    return Overflow(provider, window, tokens)


def malformed_body(body: str | None = None) -> MalformedBody:
    return MalformedBody() if body is None else MalformedBody(body)


def wrong_shape(payload: dict[str, Any] | None = None) -> WrongShape:
    return WrongShape() if payload is None else WrongShape(json.dumps(payload))


def refusal(message: str = "I can't help with that.") -> Refusal:
    return Refusal(message)


def disconnect() -> Disconnect:
    return Disconnect()


def no_choices() -> NoChoices:
    return NoChoices()


def null_message() -> NullMessage:
    return NullMessage()


def raw_content(json_text: str) -> RawContent:
    """A content given as a JSON string literal, sent byte for byte (checked to be JSON)."""
    if not isinstance(json.loads(json_text), str):
        raise ValueError("raw_content() needs a JSON string literal")
    return RawContent(json_text)


def delay(seconds: float, then: Reply) -> Delay:
    return Delay(seconds, then)


def redirect(code: int, location: str, then: Reply | None = None) -> Redirect:
    """A 3xx to ``location`` whose body holds ``then`` (by default a passing verdict)."""
    if not 300 <= code < 400:
        raise ValueError("redirect() needs a 3xx status")
    return Redirect(code, location, verdict(True) if then is None else then)


def trickle(interval: float, then: Reply | None = None) -> Trickle:
    """``then`` (by default a passing verdict) sent one body byte every ``interval`` seconds."""
    return Trickle(interval, verdict(True) if then is None else then)


def gzipped(then: Reply, *, cut: int = 0, junk: bytes = b"") -> Gzipped:
    return Gzipped(then, cut, junk)


def gzip_bomb(inflated: int) -> GzipBomb:
    return GzipBomb(inflated)


def repeated_key(key: str, first: Any, second: Any) -> RepeatedKey:
    return RepeatedKey(key, first, second)


def choices(*contents: str) -> Choices:
    if not contents:
        raise ValueError("choices() needs at least one content")
    return Choices(contents)


def deep_beside(depth: int) -> DeepBeside:
    return DeepBeside(depth)


def recorded(
    *names: str,
    text: str | tuple[str, ...],
    beside: dict[str, Any] | None = None,
    in_choice: dict[str, Any] | None = None,
) -> Recorded:
    """The recorded bodies ``names`` (one per choice) with ``text`` as the reply of each (one
    text for all, or one per body); ``beside`` and ``in_choice`` add keys to the body and to its
    first choice."""
    if not names:
        raise ValueError("recorded() needs at least one body")
    texts = (text,) * len(names) if isinstance(text, str) else tuple(text)
    found = Recorded(names, texts, tuple((beside or {}).items()), tuple((in_choice or {}).items()))
    found.body  # noqa: B018  (a missing file or a body of another shape fails here, in the test)
    return found


_BOMB_BLOCK = 1 << 20


def _gzip_bomb_body(prefix: bytes, inflated: int, suffix: bytes) -> bytes:
    """``prefix``, ``inflated`` bytes of blanks and ``suffix``, gzip-compressed cheaply: one
    megabyte of blanks is compressed once (flushed so that it stands alone) and repeated."""
    blocks = max(1, inflated // _BOMB_BLOCK)
    squeeze = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    head = squeeze.compress(prefix) + squeeze.flush(zlib.Z_FULL_FLUSH)
    block = squeeze.compress(b" " * _BOMB_BLOCK) + squeeze.flush(zlib.Z_FULL_FLUSH)
    tail = squeeze.compress(suffix) + squeeze.flush()
    crc = zlib.crc32(prefix)
    blank = b" " * _BOMB_BLOCK
    for _ in range(blocks):
        crc = zlib.crc32(blank, crc)
    crc = zlib.crc32(suffix, crc)
    size = len(prefix) + blocks * _BOMB_BLOCK + len(suffix)
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
    trailer = struct.pack("<II", crc & 0xFFFFFFFF, size & 0xFFFFFFFF)
    return header + head + block * blocks + tail + trailer


def sequence(*replies: Reply) -> Sequence:
    return Sequence(replies)


def echo_fn(fn: Callable[[RecordedRequest], Reply]) -> EchoFn:
    return EchoFn(fn)


# --------------------------------------------------------------------------- rules


Matcher: TypeAlias = str | Callable[[RecordedRequest], bool]


@dataclass(eq=False)
class Rule:
    """``reply`` answers requests that ``match``; ``hits`` counts how many it answered."""

    match: Matcher
    reply: Reply
    hits: int = field(default=0)

    def matches(self, request: RecordedRequest) -> bool:
        if isinstance(self.match, str):
            return self.match in request.text
        return bool(self.match(request))


# --------------------------------------------------------------------------- the server


def _words(value: str) -> int:
    return len(value.split())


class _Server(ThreadingHTTPServer):
    """Daemon handler threads, never joined on close, so a sleeping handler can't block stop()."""

    daemon_threads = True
    block_on_close = False
    # Room for a burst of concurrent clients (xdist workers, threaded tests) without SYN drops.
    request_queue_size = 128
    judge: ScriptedJudge

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Clients that time out and hang up are expected here; keep stderr quiet."""


class _Handler(BaseHTTPRequestHandler):
    # HTTP/1.0: one request per connection, so no idle keep-alive sockets outlive a test.
    protocol_version = "HTTP/1.0"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the default per-request line on stderr."""

    # ---- routing

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        if path == "/health":
            self._send_json(200, {"status": "ok"})
        elif path == "/slots" and self.server.judge.slots is not None:
            self._send_json(200, self.server.judge.slots())
        elif path in ("/v1/models", "/models"):
            models = [
                {"id": name, "object": "model", "created": CREATED, "owned_by": "scripted"}
                for name in self.server.judge.models
            ]
            self._send_json(200, {"object": "list", "data": models})
        else:
            self._send_error(404, f"No route for GET {path}", "invalid_request_error")

    def do_POST(self) -> None:
        path, _, query = self.path.partition("?")
        path = path.rstrip("/")
        azure = path.startswith("/openai/deployments/") and path.endswith("/chat/completions")
        family = (
            "anthropic"
            if path.endswith("/messages")
            else "gemini"
            if path.endswith(":generateContent")
            else None
        )
        if family is not None:
            self._answer_provider(path, query, family)
            return
        if path not in ("/v1/chat/completions", "/chat/completions") and not azure:
            self._send_error(404, f"No route for POST {path}", "invalid_request_error")
            return
        api_version = urllib.parse.parse_qs(query).get("api-version", [None])[0]
        if azure and api_version is None:
            # Azure's answer to a call without an API version.
            self._send_raw(
                404,
                json.dumps({"error": {"code": "404", "message": "Resource not found"}}).encode(),
                "application/json",
            )
            return
        if azure and not self._azure_key_accepted():
            # Azure authenticates by an api-key header (or an Entra ID bearer token) before
            # reading the body.
            self._send_raw(401, json.dumps(AZURE_ACCESS_DENIED).encode(), "application/json")
            return
        request = self._read_request(path, query)
        if request is None:
            return
        body = request.body
        judge = self.server.judge

        fmt = request.response_format
        if (
            azure
            and api_version is not None
            and api_version < AZURE_JSON_SCHEMA_SINCE
            and fmt is not None
            and fmt.get("type") == "json_schema"
        ):
            old = {"error": {"code": "BadRequest", "message": AZURE_JSON_SCHEMA_REJECTION}}
            self._send_raw(400, json.dumps(old).encode(), "application/json")
            return
        if (
            azure
            and not judge.azure_structured_outputs
            and fmt is not None
            and fmt.get("type") == "json_schema"
        ):
            unstructured: dict[str, dict[str, str | None]] = {
                "error": {
                    "message": AZURE_MODEL_JSON_SCHEMA_REJECTION,
                    "type": "invalid_request_error",
                    "param": None,
                    "code": None,
                }
            }
            self._send_raw(400, json.dumps(unstructured).encode(), "application/json")
            return
        refused = judge._refuse_parameters(body)
        if refused is not None:
            self._send_raw(400, json.dumps(refused).encode(), "application/json")
            return
        reject = judge.reject_json_schema
        if reject is not None and fmt is not None and fmt.get("type") == "json_schema":
            # llama.cpp answers 500 as a server_error; a 4xx says the request itself was bad.
            kind = "server_error" if reject >= 500 else "invalid_request_error"
            self._send_error(reject, JSON_SCHEMA_REJECTION, kind)
            return
        if body.get("stream") is True:
            self._send_error(
                400, "ScriptedJudge does not support stream=true", "invalid_request_error"
            )
            return
        self._answer(request, judge._choose(request))

    def _read_request(self, path: str, query: str) -> RecordedRequest | None:
        """The request's JSON object body, recorded; None once a 400 has answered a body that
        is not one."""
        try:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"null")
        except (ValueError, OSError):
            self._send_error(400, "Request body is not valid JSON", "invalid_request_error")
            return None
        if not isinstance(body, dict):
            self._send_error(400, "Request body must be a JSON object", "invalid_request_error")
            return None
        request = RecordedRequest(
            path=path,
            headers={name.lower(): value for name, value in self.headers.items()},
            body=body,
            query={name: values[-1] for name, values in urllib.parse.parse_qs(query).items()},
        )
        self.server.judge._record(request)
        return request

    def _answer_provider(self, path: str, query: str, family: str) -> None:
        """Anthropic's Messages route or Gemini's generateContent: only a recorded body of that
        provider answers there (the request is recorded like any other)."""
        request = self._read_request(path, query)
        if request is None:
            return
        self._answer(request, self.server.judge._choose(request), family)

    def _azure_key_accepted(self) -> bool:
        expected = self.server.judge.azure_api_key
        key = self.headers.get("api-key")
        bearer = (self.headers.get("Authorization") or "").startswith("Bearer ")
        if expected is None:
            return bool(key) or bearer
        return key == expected

    # ---- replies

    # Set by the wrapping replies (Redirect, Trickle, Gzipped) for the one response they wrap.
    _status_override: int | None = None
    _extra_headers: dict[str, str] | None = None
    _trickle: float | None = None
    _gzip = False
    _gzip_cut = 0
    _gzip_junk = b""

    def _answer(self, request: RecordedRequest, reply: Reply, family: str = "openai") -> None:
        """Send ``reply`` to ``request``, which came on ``family``'s route."""
        judge = self.server.judge
        self._status_override, self._extra_headers, self._trickle, self._gzip = (
            None,
            None,
            None,
            False,
        )
        self._gzip_cut, self._gzip_junk = 0, b""
        # Resolve the wrappers first; each level may pick another reply.
        for _ in range(100):
            if isinstance(reply, Delay):
                judge._sleep(reply.seconds)
                reply = reply.then
            elif isinstance(reply, Redirect):
                self._status_override = reply.code
                self._extra_headers = {"Location": reply.location}
                reply = reply.then
            elif isinstance(reply, Trickle):
                self._trickle = reply.interval
                reply = reply.then
            elif isinstance(reply, Gzipped):
                self._gzip = True
                self._gzip_cut, self._gzip_junk = reply.cut, reply.junk
                reply = reply.then
            elif isinstance(reply, Sequence):
                reply = reply.next()
            elif isinstance(reply, EchoFn):
                reply = reply.fn(request)
            else:
                break
        else:
            self._send_error(500, "ScriptedJudge: reply nesting too deep", "server_error")
            return

        if isinstance(reply, Recorded) or family != "openai":
            body = reply.body if isinstance(reply, Recorded) else None
            if body is None or provider_of(body) != family:
                self._send_error(
                    500,
                    f"ScriptedJudge: {reply!r} cannot answer on the {family} route",
                    "server_error",
                )
                return
            self._send_json(200, body)
        elif isinstance(reply, VerdictReply):
            content = judge._think_first(reply.content())
            forced = _forced_tool(request.body)
            if forced is not None:
                # A forced function call is answered with one, the arguments holding the JSON
                # (litellm asks older Azure API versions for structured output this way).
                call = {
                    "id": f"call_scripted_{judge._next_id()}",
                    "type": "function",
                    "function": {"name": forced, "arguments": content},
                }
                message = {"role": "assistant", "content": None, "tool_calls": [call]}
                self._send_completion(request, message, "tool_calls", produced=content)
                return
            self._send_completion(request, {"role": "assistant", "content": content})
        elif isinstance(reply, Text):
            message = {"role": "assistant", "content": judge._think_first(reply.content)}
            self._send_completion(request, message, reply.finish_reason)
        elif isinstance(reply, Refusal):
            message = {"role": "assistant", "content": None, "refusal": reply.message}
            self._send_completion(request, message)
        elif isinstance(reply, Status):
            self._send_error(reply.code, reply.message, reply.error_type)
        elif isinstance(reply, Overflow):
            self._send_json(400, reply.body())
        elif isinstance(reply, MalformedBody):
            self._send_raw(200, reply.body.encode(), "text/html; charset=utf-8")
        elif isinstance(reply, WrongShape):
            self._send_raw(200, reply.payload.encode(), "application/json")
        elif isinstance(reply, NoChoices):
            self._send_json(200, self._completion_body(request, None, ""))
        elif isinstance(reply, NullMessage):
            body = self._completion_body(request, None, "")
            body["choices"] = [{"index": 0, "message": None, "finish_reason": "stop"}]
            self._send_json(200, body)
        elif isinstance(reply, RawContent):
            marker = "\u0000raw-content\u0000"
            message = {"role": "assistant", "content": marker}
            body = self._completion_body(request, message, json.loads(reply.json_text))
            data = json.dumps(body).replace(json.dumps(marker), reply.json_text)
            self._send_raw(200, data.encode(), "application/json")
        elif isinstance(reply, Disconnect):
            self.close_connection = True
        elif isinstance(reply, GzipBomb):
            marker = "\u0000bomb\u0000"
            message = {"role": "assistant", "content": VerdictReply(True).content()}
            body = self._completion_body(request, message, "")
            body["system_fingerprint"] = marker
            prefix, suffix = json.dumps(body).split(json.dumps(marker))
            data = _gzip_bomb_body((prefix + '"').encode(), reply.inflated, ('"' + suffix).encode())
            self._send_raw(200, data, "application/json", {"Content-Encoding": "gzip"})
        elif isinstance(reply, RepeatedKey):
            marker = "\u0000repeated\u0000"
            content = marker if reply.key == "content" else VerdictReply(True).content()
            message = {"role": "assistant", "content": content}
            body = self._completion_body(request, message, VerdictReply(True).content())
            if reply.key != "content":
                body[reply.key] = marker
            both = f"{json.dumps(reply.first)}, {json.dumps(reply.key)}: {json.dumps(reply.second)}"
            data = json.dumps(body).replace(json.dumps(marker), both)
            self._send_raw(200, data.encode(), "application/json")
        elif isinstance(reply, DeepBeside):
            marker = "\u0000deep\u0000"
            message = {"role": "assistant", "content": VerdictReply(True).content()}
            body = self._completion_body(request, message, VerdictReply(True).content())
            body["system_fingerprint"] = marker
            deep = "[" * reply.depth + "]" * reply.depth
            data = json.dumps(body).replace(json.dumps(marker), deep)
            self._send_raw(200, data.encode(), "application/json")
        elif isinstance(reply, Choices):
            body = self._completion_body(request, None, " ".join(reply.contents))
            body["choices"] = [
                {
                    "index": index,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
                for index, content in enumerate(reply.contents)
            ]
            self._send_json(200, body)
        else:
            self._send_error(500, f"ScriptedJudge: not a reply spec: {reply!r}", "server_error")

    def _send_completion(
        self,
        request: RecordedRequest,
        message: dict[str, Any],
        finish_reason: str = "stop",
        produced: str | None = None,
    ) -> None:
        if produced is None:
            produced = message.get("content") or message.get("refusal") or ""
        self._send_json(200, self._completion_body(request, message, produced, finish_reason))

    def _completion_body(
        self,
        request: RecordedRequest,
        message: dict[str, Any] | None,
        produced: str,
        finish_reason: str = "stop",
    ) -> dict[str, Any]:
        """A chat completion; ``message`` None gives an empty ``choices`` list."""
        judge = self.server.judge
        prompt_tokens = max(1, _words(request.text))
        completion_tokens = max(1, _words(produced))
        choices = (
            []
            if message is None
            else [{"index": 0, "message": message, "finish_reason": finish_reason}]
        )
        return {
            "id": f"chatcmpl-scripted-{judge._next_id()}",
            "object": "chat.completion",
            "created": CREATED,
            "model": request.model or "scripted-judge",
            "choices": choices,
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }

    def _send_error(self, code: int, message: str, error_type: str) -> None:
        headers = {"Retry-After": "0"} if code == 429 else {}
        payload = {"error": {"message": message, "type": error_type, "code": code}}
        self._send_raw(code, json.dumps(payload).encode(), "application/json", headers)

    def _send_json(self, code: int, payload: dict[str, Any]) -> None:
        self._send_raw(code, json.dumps(payload).encode(), "application/json")

    def _send_raw(
        self,
        code: int,
        data: bytes,
        content_type: str,
        headers: dict[str, str] | None = None,
    ) -> None:
        if self._status_override is not None:
            code = self._status_override
        headers = {**(headers or {}), **(self._extra_headers or {})}
        if self._gzip:
            squeeze = zlib.compressobj(6, zlib.DEFLATED, zlib.MAX_WBITS | 16)
            data = squeeze.compress(data) + squeeze.flush()
            data = data[: len(data) - self._gzip_cut] + self._gzip_junk
            headers["Content-Encoding"] = "gzip"
        try:
            # Headers and body leave in one write, as real servers send them: two small writes
            # on a keep-alive connection wait on Nagle's algorithm and the client's delayed ACK
            # (about 40 ms), which would make every call look slower than the client is.
            self.log_request(code)
            lines = [f"{self.protocol_version} {code} {self.responses.get(code, ('',))[0]}"]
            lines += [
                f"Server: {self.version_string()}",
                f"Date: {self.date_time_string()}",
                f"Content-Type: {content_type}",
                f"Content-Length: {len(data)}",
            ]
            lines += [f"{name}: {value}" for name, value in headers.items()]
            head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
            if self._trickle is None:
                self.wfile.write(head + data)
                self.wfile.flush()
                return
            self.wfile.write(head)
            self.wfile.flush()
            judge = self.server.judge
            for index in range(len(data)):  # bounded by the body; ends early on stop()
                if judge._stopping.is_set():
                    break
                self.wfile.write(data[index : index + 1])
                self.wfile.flush()
                judge._sleep(self._trickle)
        except OSError:
            # The client gave up (e.g. its timeout fired during a Delay); nothing to tell it.
            self.close_connection = True


class _KeepAliveHandler(_Handler):
    # HTTP/1.1: connections stay open between requests, as a real provider's do (benchmarks).
    protocol_version = "HTTP/1.1"


class ScriptedJudge:
    """An OpenAI-compatible judge whose every reply is scripted by the test.

    Rules added with :meth:`on` are tried in order; the first match answers, otherwise
    :attr:`default` does. When :attr:`reject_json_schema` is a status code, any request asking
    for ``response_format={"type": "json_schema", ...}`` gets that status regardless of rules,
    the way llama.cpp's server (500) refuses it. Requests on Azure's deployment route
    (``/openai/deployments/NAME/chat/completions?api-version=...``) get Azure's own refusal
    of ``json_schema`` on versions before 2024-08-01-preview, and with
    :attr:`azure_structured_outputs` off, its refusal for a model without structured outputs.
    A request forcing a function call (``tool_choice``) is answered with that call.

    Parameters are checked the way OpenAI checks them: an ordinary model refuses
    ``reasoning_effort``; with :attr:`reasoning_efforts` set, a temperature other than 1 and an
    effort level outside the set are refused. Refusals come before the rules.
    """

    def __init__(self, models: list[str] | None = None, *, keep_alive: bool = False) -> None:
        self.models: list[str] = list(models) if models is not None else ["judge-model"]
        # HTTP/1.1 with keep-alive (benchmarks); tests use HTTP/1.0, so that no idle
        # connection outlives a test.
        self.keep_alive = keep_alive
        self.default: Reply = verdict(True)
        self.reject_json_schema: int | None = None
        # None: an ordinary model, which takes any temperature and no reasoning_effort. A set:
        # an OpenAI reasoning model taking these effort levels and only the default temperature.
        self.reasoning_efforts: frozenset[str] | None = None
        # A local reasoning model's scratchpad, written before every answer; with
        # thinking_opened_by_template the reply lacks the opening tag (the chat template wrote it).
        self.thinking: str | None = None
        self.thinking_opened_by_template = False
        # False: the Azure deployment is a model without structured outputs.
        self.azure_structured_outputs = True
        # The key Azure's deployment route accepts in its api-key header; None: any key.
        self.azure_api_key: str | None = None
        # llama.cpp's GET /slots, answered with what this returns; None: no such route.
        self.slots: Callable[[], Any] | None = None
        self._rules: list[Rule] = []
        self._requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._ids = 0
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # ---- lifecycle

    def start(self, port: int = 0) -> ScriptedJudge:
        """Serve on ``port`` (0: one the OS picks; read it back from :attr:`port`)."""
        if self._server is not None:
            raise RuntimeError("ScriptedJudge is already running")
        self._stopping.clear()
        server = _Server(("127.0.0.1", port), _KeepAliveHandler if self.keep_alive else _Handler)
        server.judge = self
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"scripted-judge-{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; wakes handlers sleeping in a Delay instead of waiting them out."""
        server, thread = self._server, self._thread
        if server is None:
            return
        self._stopping.set()
        server.shutdown()
        server.server_close()
        if thread is not None:
            thread.join(timeout=5)
        self._server = None
        self._thread = None

    def __enter__(self) -> ScriptedJudge:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self._server is not None

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("ScriptedJudge is not running; call start() first")
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        """The server root, e.g. for ``/health``."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """What to pass as ``api_base``/``base_url`` to an OpenAI-compatible client."""
        return f"{self.url}/v1"

    # ---- scripting

    def on(self, match: Matcher, reply: Reply) -> Rule:
        """Answer requests whose message text contains ``match`` (or for which it returns True)."""
        rule = Rule(match, reply)
        with self._lock:
            self._rules.append(rule)
        return rule

    @property
    def rules(self) -> list[Rule]:
        with self._lock:
            return list(self._rules)

    def reset(self) -> None:
        """Back to a fresh judge: no requests, no rules, default verdict(True), no rejection."""
        with self._lock:
            self._requests.clear()
            self._rules.clear()
        self.default = verdict(True)
        self.reject_json_schema = None
        self.reasoning_efforts = None
        self.thinking = None
        self.thinking_opened_by_template = False
        self.azure_structured_outputs = True
        self.azure_api_key = None

    def clear_requests(self) -> None:
        with self._lock:
            self._requests.clear()

    @property
    def requests(self) -> list[RecordedRequest]:
        """A snapshot of every chat request received so far, in arrival order."""
        with self._lock:
            return list(self._requests)

    @contextmanager
    def scripted(self, match: Matcher, reply: Reply) -> Iterator[Rule]:
        """A rule that only applies inside the ``with`` block."""
        rule = self.on(match, reply)
        try:
            yield rule
        finally:
            with self._lock:
                if rule in self._rules:
                    self._rules.remove(rule)

    # ---- used by the handler

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def _choose(self, request: RecordedRequest) -> Reply:
        with self._lock:
            rules = list(self._rules)
        for rule in rules:
            if rule.matches(request):
                with self._lock:
                    rule.hits += 1
                return rule.reply
        return self.default

    def _refuse_parameters(self, body: dict[str, Any]) -> dict[str, Any] | None:
        """OpenAI's 400 body for a sampling parameter this model does not take, or None."""
        efforts = self.reasoning_efforts
        effort = body.get("reasoning_effort")
        if "reasoning_effort" in body and not efforts:
            return _openai_error(
                "Unsupported parameter: 'reasoning_effort' is not supported with this model.",
                "reasoning_effort",
                "unsupported_parameter",
            )
        if efforts is None:
            return None
        temperature = body.get("temperature")
        if temperature is not None and temperature != 1:
            return _openai_error(
                f"Unsupported value: 'temperature' does not support {_number(temperature)} with "
                "this model. Only the default (1) value is supported.",
                "temperature",
                "unsupported_value",
            )
        if effort is not None and effort not in efforts:
            levels: list[str] = [
                level for level in ("minimal", "low", "medium", "high") if level in efforts
            ]
            return _openai_error(
                f"Unsupported value: 'reasoning_effort' does not support '{effort}' with this "
                f"model. Supported values are: {_quoted_list(levels)}.",
                "reasoning_effort",
                "unsupported_value",
            )
        return None

    def _think_first(self, content: str | None) -> str | None:
        """The content as a local reasoning model writes it: its thinking first, when set."""
        if self.thinking is None or content is None:
            return content
        opening = "" if self.thinking_opened_by_template else "<think>\n"
        return f"{opening}{self.thinking}\n</think>\n\n{content}"

    def _next_id(self) -> int:
        with self._lock:
            self._ids += 1
            return self._ids

    def _sleep(self, seconds: float) -> None:
        self._stopping.wait(max(0.0, seconds))


LISTENING = "scripted judge listening"


def main(argv: list[str]) -> None:
    """Serve on the port given first, listing the models given after it, until killed.

    ``--setup FILE ARGS...`` at the end runs FILE first, with ``judge`` (this server, not yet
    started), ``argv`` (ARGS), ``echo_fn`` and ``verdict`` defined: it scripts the server.
    """
    setup = argv[argv.index("--setup") :] if "--setup" in argv else []
    port, *models = argv[: len(argv) - len(setup)]
    judge = ScriptedJudge(models or None)
    if setup:
        scope = {"judge": judge, "argv": setup[2:], "echo_fn": echo_fn, "verdict": verdict}
        runpy.run_path(setup[1], init_globals=scope)
    judge.start(int(port))
    print(f"{LISTENING} on {judge.url}", flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    main(sys.argv[1:])
