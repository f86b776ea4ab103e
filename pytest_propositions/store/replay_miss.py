"""A replay miss explained: the nearest recorded request for the claim, and what changed since
(the model, the prompt version, the judge's instructions, words of the claim or recording)."""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from typing import Any

from ..redaction import redact_data, redact_values
from .base import VerdictStore
from .cache_record import unpack_request
from .key_material import KeyMaterial

_MAX_CHANGES = 4
_MAX_SCAN = 100_000


_FENCE = re.compile(r"<<<RECORDING [0-9a-f]+ (?:BEGINS|ENDS)>>>")


def _text(material: Mapping[str, Any], *, system: bool) -> str:
    """The judge's instructions (``system``), or the rest of what it was asked."""
    messages = material.get("messages") or []
    return "\n".join(
        str(m.get("content", ""))
        for m in messages
        if isinstance(m, Mapping) and (m.get("role") == "system") == system
    )


def _clip(words: list[str]) -> str:
    text = " ".join(words)
    return repr(text if len(text) <= 60 else text[:57] + "...")


def word_changes(old: str, new: str, limit: int = _MAX_CHANGES) -> list[str]:
    """A few word-level changes from ``old`` to ``new``, e.g. ``'Lisbon' -> 'Porto'``."""
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


# How a changed field is named; a field not named here is named as it is spelled.
_LABELS = {"prompt_version": "prompt version"}


def differences(recorded: Mapping[str, Any], wanted: KeyMaterial) -> list[str]:
    """What separates a recorded request (its canonical form, or the part a record keeps of it
    outside) from the one asked for, field by field (``KeyMaterial.changes``), the identity of
    the judge and of its prompt first and the words of the request last."""
    found, texts = [], []
    for name, old, new in wanted.changes(recorded):
        if name == "messages":
            texts = _message_changes(recorded, wanted.as_json())
        else:
            found.append(f"{_LABELS.get(name, name)} {old!r} -> {new!r}")
    return found + texts


def _message_changes(recorded: Mapping[str, Any], wanted: Mapping[str, Any]) -> list[str]:
    found = []
    if _text(recorded, system=True) != _text(wanted, system=True):
        found.append("the judge's instructions changed")
    # The recording's fence carries a hash of its content: it changes with any change, so
    # it says nothing the word diff does not.
    old, new = (_FENCE.sub("", _text(m, system=False)) for m in (recorded, wanted))
    changes = word_changes(old, new)
    if changes:
        found.append("the claim or recording: " + "; ".join(changes))
    return found


def explain_miss(store: VerdictStore, wanted: KeyMaterial, claim: str, test_id: str | None) -> str:
    """A sentence naming the nearest recorded request for this claim and what differs from it
    (read from the store's disk cache). Compared as records keep them: redacted of the known
    secrets, which the sentence never shows."""
    claim = redact_values(claim)
    best: tuple[tuple[int, int, int], str, dict[str, Any], list[str]] | None = None
    try:
        shown = KeyMaterial.from_json(redact_data(wanted.as_json()))
        for scanned, (key, record) in enumerate(store.disk.records()):
            if scanned >= _MAX_SCAN:
                break
            if record.get("claim") != claim:
                continue
            # A record kept without its request (an older version's) still names these two.
            form = unpack_request(record) or {
                name: record.get(name) for name in ("model", "prompt_version")
            }
            diff = differences(form, shown)
            same_test = bool(test_id) and record.get("test_id") == test_id
            distance = sum(len(text) for text in diff)
            rank = (0 if same_test else 1, len(diff), distance)
            if best is None or rank < best[0]:
                best = (rank, key, record, diff)
    except Exception:  # an explanation must never hide the miss itself
        return ""
    if best is None:
        return " No verdict for this claim is recorded at all."
    _, key, record, diff = best
    where = f" in {record['test_id']}" if record.get("test_id") else ""
    diff = diff or ["nothing visible (the cache key format may have changed)"]
    return (
        f" The nearest recorded request for this claim (key {key[:16]}{where}, recorded "
        f"{record.get('recorded_at', '?')}) differs in: " + "; ".join(diff) + "."
    )
