"""Export lines as the judge writes them: a record that keeps its request, under that request's
key (``cache import`` refuses a line whose key is not the key of the request its record keeps)."""

from __future__ import annotations

from typing import Any

from pytest_propositions.store.cache_record import pack_request
from pytest_propositions.store.keys import cache_key, canonical_json


def keyed(n: int, record: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The key of a small request numbered ``n``, and ``record`` keeping that request."""
    material = {"n": n, "model": record["model"]}
    return cache_key(material), {**record, "request": pack_request(material)}


def line(n: int, record: dict[str, Any]) -> str:
    """An export line (no newline) holding ``record`` under the key of its kept request."""
    key, kept = keyed(n, record)
    return canonical_json({"key": key, "record": kept})
