"""What the local judge's server says when asked: whether it serves the model yet, and how far it
is with the request it answers (llama.cpp's ``/slots``, read as ``Progress``).

Both are asked on loopback with proxies from the environment bypassed, and briefly: a server too
busy to say is not ready, or has made no progress.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from ..judging.endpoint import Progress

__all__ = ["serves", "slots_at", "slots_progress"]

# How long a look at the server's progress may take; a server too busy to say is no progress.
_PROGRESS_SECONDS = 2.0
_READY_SECONDS = 2.0
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _get_json(url: str, timeout: float) -> Any:
    """The JSON body of a 200 answer, or None for any other answer or none."""
    try:
        with _DIRECT.open(url, timeout=timeout) as response:
            if response.status != 200:
                return None
            return json.loads(response.read().decode("utf-8", errors="replace"))
    except urllib.error.HTTPError as error:
        error.close()
        return None
    except (OSError, ValueError):
        return None


def serves(base_url: str, model: str) -> bool:
    """Whether the server answers ``GET /v1/models`` with 200 and lists ``model``."""
    body = _get_json(f"{base_url}/models", _READY_SECONDS)
    models = body.get("data") if isinstance(body, dict) else None
    if not isinstance(models, list):
        return False
    return any(isinstance(m, dict) and m.get("id") == model for m in models)


def slots_at(port: int) -> Progress | None:
    """The progress the server on ``port`` reports (through the front); None when it does not
    say within a moment."""
    return slots_progress(_get_json(f"http://127.0.0.1:{port}/slots", _PROGRESS_SECONDS))


def slots_progress(slots: Any) -> Progress | None:
    """llama.cpp's ``/slots`` answer as progress: per slot its task, whether it is busy, the
    prompt tokens it has read and the tokens it has written; the tokens of the busy slot (the
    front passes one request at a time). None when the answer is not a list of slots."""
    if not isinstance(slots, list) or not all(isinstance(slot, dict) for slot in slots):
        return None
    sign = []
    tokens = None
    for slot in slots:
        following = slot.get("next_token")
        if isinstance(following, list):  # one entry per sequence; one sequence here
            following = following[0] if following else None
        written = following.get("n_decoded") if isinstance(following, dict) else None
        busy = slot.get("is_processing") is True
        sign.append(
            (
                slot.get("id"),
                slot.get("id_task"),
                busy,
                slot.get("n_prompt_tokens_processed"),
                written,
            )
        )
        if busy and isinstance(written, int):
            tokens = max(written, tokens or 0)
    return Progress(tuple(sign), tokens)
