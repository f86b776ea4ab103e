"""OpenAI Responses transcripts from pydantic-ai's recorded cassettes, replayed offline.

Each recorded request is sent again through the openai SDK (``responses.create`` or
``responses.compact``, its recorded body as the arguments) to a transport that answers with the
recorded reply. What the caller holds at the end is written: the last request's ``input`` (the
items as sent) and the SDK's typed ``output`` of its reply, dumped with ``model_dump(mode="json")``
(the tests rebuild the typed items with the SDK's own model classes); for a compaction, also the
``output`` of ``responses.compact``.

    python make_responses.py CASSETTE.yaml OUT.json
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import httpx
import openai
from _replay import interactions, transport, write


def replay(cassette: Path) -> dict[str, Any]:
    recorded = interactions(cassette)
    mock, asked = transport(recorded)
    client = openai.OpenAI(api_key="replay", http_client=httpx.Client(transport=mock))
    result: dict[str, Any] = {}
    for interaction in recorded:
        body = dict(interaction["request"]["parsed_body"])
        body.pop("stream", None)
        uri = interaction["request"]["uri"]
        if uri.endswith("/responses/compact"):
            compacted = client.responses.compact(**body)
            result["compacted"] = [item.model_dump(mode="json") for item in compacted.output]
            continue
        reply = client.responses.create(**body)
        given = body["input"]
        result["input"] = [{"role": "user", "content": given}] if isinstance(given, str) else given
        result["output"] = [item.model_dump(mode="json") for item in reply.output]
    assert len(asked) == len(recorded), asked
    result["openai"] = openai.__version__
    return result


if __name__ == "__main__":
    write(Path(sys.argv[2]), replay(Path(sys.argv[1])))
