"""The conversation a chat client holds at the end of a recorded agent run, replayed offline.

A cassette of a multi-turn run records every request, each carrying the whole history so far.
Each recorded request is sent again through the provider's SDK (its recorded body as the
arguments) to a transport answering with the recorded reply; what is written is the last
request's messages followed by the SDK's message of the last reply, as the caller appends it:

- ``openai``: ``chat.completions.create``; the reply's ``choices[0].message`` dumped
  (``model_dump(mode="json", exclude_none=True)``).
- ``anthropic``: ``messages.create``, or ``messages.stream(...).get_final_message()`` when the
  request was streamed; ``{"role": "assistant", "content": [block dumps]}`` appended.
- ``gemini``: a ``streamGenerateContent`` REST reply (a JSON array of chunks, gzip as served)
  read with the standard library; each chunk's ``candidates[0].content`` appended as it came,
  after the last request's ``contents``, as a REST client keeps its history.

    python make_cassette_chat.py openai|anthropic|gemini CASSETTE.yaml OUT.json
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path
from typing import Any

import httpx
from _replay import interactions, transport, write


def _request(interaction: dict[str, Any]) -> dict[str, Any]:
    body = interaction["request"]["body"]
    return dict(json.loads(body if isinstance(body, str) else body["string"]))


def openai_chat(recorded: list[dict[str, Any]]) -> dict[str, Any]:
    import openai

    mock, asked = transport(recorded)
    client = openai.OpenAI(api_key="replay", http_client=httpx.Client(transport=mock))
    for interaction in recorded:
        body = _request(interaction)
        reply = client.chat.completions.create(**body)
    assert len(asked) == len(recorded), asked
    last = reply.choices[0].message.model_dump(mode="json", exclude_none=True)
    return {"messages": [*body["messages"], last], "openai": openai.__version__}


def anthropic_chat(recorded: list[dict[str, Any]]) -> dict[str, Any]:
    import anthropic
    import httpx2

    mock, asked = transport(recorded, httpx2)
    client = anthropic.Anthropic(api_key="replay", http_client=httpx2.Client(transport=mock))
    for interaction in recorded:
        body = _request(interaction)
        if body.pop("stream", False):
            # messages.stream() of anthropic 2.x takes no temperature: sent as it was recorded.
            extra = {"temperature": body.pop("temperature")} if "temperature" in body else {}
            with client.messages.stream(**body, extra_body=extra) as stream:
                reply = stream.get_final_message()
        else:
            reply = client.messages.create(**body)
    assert len(asked) == len(recorded), asked
    content = [block.model_dump(mode="json", exclude_none=True) for block in reply.content]
    answer = {"role": "assistant", "content": content}
    result: dict[str, Any] = {"messages": [*body["messages"], answer]}
    if "system" in body:
        result["system"] = body["system"]
    result["anthropic"] = anthropic.__version__
    return result


def gemini_rest(recorded: list[dict[str, Any]]) -> dict[str, Any]:
    body = _request(recorded[-1])
    raw = recorded[-1]["response"]["body"]["string"]
    data = raw if isinstance(raw, bytes) else raw.encode()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    chunks = json.loads(data)
    answer = [chunk["candidates"][0]["content"] for chunk in chunks]
    return {"contents": [*body["contents"], *answer], "chunks": len(chunks)}


READERS = {"openai": openai_chat, "anthropic": anthropic_chat, "gemini": gemini_rest}


if __name__ == "__main__":
    kind, cassette, out = sys.argv[1:4]
    write(Path(out), READERS[kind](interactions(Path(cassette))))
