"""Serving a VCR cassette's recorded replies, in order, to an SDK's httpx client (offline)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import yaml


def interactions(cassette: Path) -> list[dict[str, Any]]:
    loaded = yaml.safe_load(cassette.read_text(encoding="utf-8"))
    return list(loaded["interactions"])


def _body(response: dict[str, Any]) -> bytes:
    if "parsed_body" in response:  # pydantic-ai's cassettes keep the JSON parsed
        return json.dumps(response["parsed_body"]).encode()
    body = response["body"]
    text = body["string"] if isinstance(body, dict) else body
    return text.encode() if isinstance(text, str) else bytes(text)


def transport(recorded: list[dict[str, Any]], http: Any = httpx) -> tuple[Any, list[str]]:
    """A transport answering each request with the next recorded reply; the paths asked.

    ``http`` is the HTTP package the SDK uses: httpx, or httpx2 for the anthropic SDK 2.x."""
    queue = list(recorded)
    asked: list[str] = []

    def handle(request: Any) -> Any:
        asked.append(request.url.path)
        if not queue:
            raise AssertionError(f"no recorded reply left for {request.url}")
        response = queue.pop(0)["response"]
        headers = {
            k: v[0] if isinstance(v, list) else v
            for k, v in (response.get("headers") or {}).items()
            if k.lower() in ("content-type",)
        }
        return http.Response(response["status"]["code"], headers=headers, content=_body(response))

    handler: Callable[[Any], Any] = handle
    return http.MockTransport(handler), asked


def write(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
