"""The judge request kept with each cached verdict, and what it is for.

A record's ``request`` field holds the key material minus the model (messages, sampling, kind,
prompt version...) as zlib-compressed canonical JSON in base64: about a third of the raw size,
deterministic, so ``cache export`` stays byte-stable. It lets ``cache rejudge`` ask the same
question of another judge without re-running any simulation, and lets a replay miss name the
nearest recorded request and what changed. README.md shows a one-liner that decodes one from an
export (a test runs it).
"""

from __future__ import annotations

import base64
import json
import re
import zlib
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .base import VerdictStore
    from .cache import VerdictCache

ENCODING = "zlib+base64"
_MAX_CHANGES = 4
_MAX_SCAN = 100_000
# Far above any judge's context window, far below what a machine cannot hold.
_MAX_REQUEST = 64 * 2**20


def pack_request(material: Mapping[str, Any]) -> dict[str, str]:
    """The stored form of a request's key material; the model is left out (the record has it)."""
    from .keys import canonical_json

    text = canonical_json({name: value for name, value in material.items() if name != "model"})
    data = base64.b64encode(zlib.compress(text.encode("utf-8"), 9)).decode("ascii")
    return {"encoding": ENCODING, "data": data}


def unpack_request(record: Mapping[str, Any]) -> dict[str, Any] | None:
    """The key material a record was stored under (model included), or None if it kept none."""
    try:
        return kept_request(record)
    except ValueError:
        return None


def kept_request(record: Mapping[str, Any]) -> dict[str, Any] | None:
    """The key material a record keeps (model included); None if it keeps no ``request`` field,
    ValueError saying why if the one it keeps cannot be read."""
    stored = record.get("request")
    if stored is None:
        return None
    if not isinstance(stored, Mapping) or stored.get("encoding") != ENCODING:
        raise ValueError(f'expected {{"encoding": "{ENCODING}", "data": ...}}')
    try:
        # Bounded: a line of an import must not expand into all of memory.
        inflater = zlib.decompressobj()
        data = inflater.decompress(base64.b64decode(str(stored.get("data"))), _MAX_REQUEST)
        if inflater.unconsumed_tail:
            raise ValueError(f"it expands to more than {_MAX_REQUEST // 2**20} MiB")
        material = json.loads(data)
    except (ValueError, zlib.error, RecursionError) as exc:
        raise ValueError(f"not zlib-compressed JSON in base64 ({exc})") from None
    if not isinstance(material, dict):
        raise ValueError(f"expected a JSON object, found {type(material).__name__}")
    material["model"] = record.get("model")
    return material


def request_key(record: Mapping[str, Any]) -> str | None:
    """The key of the request a record keeps (the judge's own key function); None if it keeps
    none, ValueError saying why if it cannot be read or is no key material."""
    from .keys import cache_key

    material = kept_request(record)
    if material is None:
        return None
    try:
        return cache_key(material)
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"not the material of a key: {exc}") from None


def iter_records(cache: VerdictCache) -> Iterable[tuple[str, dict[str, Any]]]:
    """Every stored (key, record), through the export path so damage is handled the same way."""
    for line in cache.export_lines():
        entry = json.loads(line)
        yield entry["key"], entry["record"]


# --- a replay miss, explained ------------------------------------------------------------------


# The recording's fence carries a hash of its content: it changes with any change, so it says
# nothing the word diff does not.
_FENCE = re.compile(r"<<<RECORDING [0-9a-f]+ (?:BEGINS|ENDS)>>>")


def _user_text(material: Mapping[str, Any]) -> str:
    messages = material.get("messages") or []
    text = "\n".join(
        str(m.get("content", ""))
        for m in messages
        if isinstance(m, Mapping) and m.get("role") != "system"
    )
    return _FENCE.sub("", text)


def _system_text(material: Mapping[str, Any]) -> str:
    messages = material.get("messages") or []
    return "\n".join(
        str(m.get("content", ""))
        for m in messages
        if isinstance(m, Mapping) and m.get("role") == "system"
    )


def _clip(words: list[str]) -> str:
    text = " ".join(words)
    return repr(text if len(text) <= 60 else text[:57] + "...")


def word_changes(old: str, new: str, limit: int = _MAX_CHANGES) -> list[str]:
    """A few word-level changes from ``old`` to ``new``, e.g. ``'Lisbon' -> 'Porto'``."""
    import difflib  # only a replay miss needs it

    a, b = old.split(), new.split()
    changes = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        if tag == "replace":
            changes.append(f"{_clip(a[i1:i2])} -> {_clip(b[j1:j2])}")
        elif tag == "delete":
            changes.append(f"removed {_clip(a[i1:i2])}")
        else:
            changes.append(f"added {_clip(b[j1:j2])}")
    if len(changes) > limit:
        changes = [*changes[:limit], f"and {len(changes) - limit} more changes"]
    return changes


def differences(recorded: Mapping[str, Any], wanted: Mapping[str, Any]) -> list[str]:
    """What separates a recorded request from the one asked for, most telling first."""
    found = []
    for name, label in (("model", "model"), ("prompt_version", "prompt version")):
        if recorded.get(name) != wanted.get(name):
            found.append(f"{label} {recorded.get(name)!r} -> {wanted.get(name)!r}")
    for name in ("kind", "double_check", "sample_index", "sampling"):
        if name in recorded and recorded.get(name) != wanted.get(name):
            found.append(f"{name} {recorded.get(name)!r} -> {wanted.get(name)!r}")
    if "messages" in recorded:
        if _system_text(recorded) != _system_text(wanted):
            found.append("the judge's instructions changed")
        changes = word_changes(_user_text(recorded), _user_text(wanted))
        if changes:
            found.append("the claim or recording: " + "; ".join(changes))
    return found


def explain_miss(
    store: VerdictStore, wanted: Mapping[str, Any], claim: str, test_id: str | None
) -> str:
    """A sentence naming the nearest recorded request for this claim and what differs from it
    (read from the store's disk cache)."""
    best: tuple[tuple[int, int, int], str, dict[str, Any], dict[str, Any]] | None = None
    try:
        for scanned, (key, record) in enumerate(iter_records(store.disk)):
            if scanned >= _MAX_SCAN:
                break
            if record.get("claim") != claim:
                continue
            material = unpack_request(record) or {
                "model": record.get("model"),
                "prompt_version": record.get("prompt_version"),
            }
            diff = differences(material, wanted)
            same_test = bool(test_id) and record.get("test_id") == test_id
            distance = sum(len(text) for text in diff)
            rank = (0 if same_test else 1, len(diff), distance)
            if best is None or rank < best[0]:
                best = (rank, key, record, {"diff": diff})
    except Exception:  # an explanation must never hide the miss itself
        return ""
    if best is None:
        return " No verdict for this claim is recorded at all."
    _, key, record, extra = best
    where = f" in {record['test_id']}" if record.get("test_id") else ""
    diff = extra["diff"] or ["nothing visible (the cache key format may have changed)"]
    return (
        f" The nearest recorded request for this claim (key {key[:16]}{where}, recorded "
        f"{record.get('recorded_at', '?')}) differs in: " + "; ".join(diff) + "."
    )
