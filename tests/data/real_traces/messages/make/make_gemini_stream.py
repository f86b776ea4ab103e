"""A Gemini chat's history after a streamed answer, from a recorded streamGenerateContent reply.

The cassettes of opentelemetry-python-contrib's google-genai instrumentation hold real
``streamGenerateContent`` replies (server-sent events). The recorded prompt is sent again with
``client.chats.create(...).send_message_stream(...)``, served the recorded reply offline, and
``chat.get_history()`` (what the user holds: one ``Content`` per streamed chunk) is written,
dumped with ``model_dump(mode="json", exclude_none=True)``.

    python make_gemini_stream.py CASSETTE.yaml OUT.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import httpx
from _replay import interactions, transport, write
from google import genai
from google.genai import types


def replay(cassette: Path) -> dict[str, Any]:
    recorded = interactions(cassette)
    mock, asked = transport(recorded)
    client = genai.Client(
        api_key="replay",
        http_options=types.HttpOptions(httpx_client=httpx.Client(transport=mock)),
    )
    request = json.loads(recorded[0]["request"]["body"])
    prompt = request["contents"][-1]["parts"][0]["text"]
    model = recorded[0]["request"]["uri"].split("/models/")[1].split(":")[0]
    chat = client.chats.create(model=model)
    chunks = [chunk.text for chunk in chat.send_message_stream(prompt)]
    assert len(asked) == 1, asked
    history = [content.model_dump(mode="json", exclude_none=True) for content in chat.get_history()]
    return {"history": history, "chunks": len(chunks), "google-genai": genai.__version__}


if __name__ == "__main__":
    write(Path(sys.argv[2]), replay(Path(sys.argv[1])))
