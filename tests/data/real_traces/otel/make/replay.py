"""Serve a VCR cassette's recorded responses to a real SDK, offline, and export the spans made.

Shared by make_traces.py (which writes the corpus) and tests/test_real_traces_otel.py (which
replays one cassette at test time). No network: an httpx MockTransport answers each request
with the cassette's next recorded response, after checking that the method and URL match.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import httpx
import yaml

CASSETTES = Path(__file__).parent / "cassettes"


def _response_body(response: dict[str, Any]) -> bytes:
    """The recorded body: VCR's ``body.string`` or pydantic-ai's ``parsed_body``."""
    if "parsed_body" in response:
        return json.dumps(response["parsed_body"]).encode()
    body = response["body"]["string"]
    return body.encode() if isinstance(body, str) else bytes(body)


def recorded(name: str) -> list[dict[str, Any]]:
    """A cassette's interactions, in the order they were recorded."""
    data = yaml.safe_load((CASSETTES / name).read_text(encoding="utf-8"))
    interactions: list[dict[str, Any]] = data["interactions"]
    return interactions


def transport(name: str, http: Any = httpx) -> Any:
    """A transport answering the n-th request with the cassette's n-th response; ``http`` is
    the HTTP package the SDK uses (httpx, or httpx2 for the anthropic SDK 2.x)."""
    pending = list(recorded(name))

    def handle(request: Any) -> Any:
        if not pending:
            raise AssertionError(f"{name}: no recorded response left for {request.url}")
        interaction = pending.pop(0)
        expected = interaction["request"]
        assert request.method == expected["method"], (request.method, expected["method"])
        assert str(request.url).split("?")[0] == expected["uri"].split("?")[0], request.url
        response = interaction["response"]
        body = _response_body(response)
        streamed = body.lstrip().startswith(b"data:")
        headers = {"content-type": "text/event-stream" if streamed else "application/json"}
        return http.Response(response["status"]["code"], content=body, headers=headers)

    return http.MockTransport(handle)


def client(name: str, http: Any = httpx) -> Any:
    return http.Client(transport=transport(name, http))


def async_client(name: str) -> httpx.AsyncClient:
    sync = transport(name)

    async def handle(request: httpx.Request) -> httpx.Response:
        await request.aread()
        return sync.handle_request(request)

    return httpx.AsyncClient(transport=httpx.MockTransport(handle))


def span_dicts(spans: Any) -> list[dict[str, Any]]:
    """Finished SDK spans as a user stores them: each ``span.to_json()``, parsed."""
    return [json.loads(span.to_json()) for span in spans]


def otlp_json(spans: Any) -> dict[str, Any]:
    """Finished SDK spans as an OTLP/JSON export document (ids in hex, as OTLP/JSON writes
    them; protobuf's JSON mapping would write them in base64)."""
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    document: dict[str, Any] = MessageToDict(encode_spans(spans))
    for resource in document.get("resourceSpans", []):
        for scope in resource.get("scopeSpans", []):
            for span in scope.get("spans", []):
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64decode(span[key]).hex()
    return document
