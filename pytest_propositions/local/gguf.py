"""What a GGUF model file says of itself: the key-value metadata at its head, read without the
engine (only as far as the keys asked for, never the tensors).

The local judge's window defaults to the context its model was trained for, which the file
states as ``<architecture>.context_length`` (``llama.context_length`` for SmolLM2). The layout
is GGUF's, versions 2 and 3: the magic ``GGUF``, a version, the tensor and key-value counts,
then the pairs, each a length-prefixed key, a value type and the value, little-endian.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import IO, Any

__all__ = ["GGUFError", "read_metadata", "trained_context"]

_MAGIC = b"GGUF"
_VERSIONS = (2, 3)
# The scalar value types by their number: struct format.
_SCALARS = {
    0: "<B",
    1: "<b",
    2: "<H",
    3: "<h",
    4: "<I",
    5: "<i",
    6: "<f",
    7: "<?",
    10: "<Q",
    11: "<q",
    12: "<d",
}
_STRING = 8
_ARRAY = 9
# Bounds a damaged or hostile file cannot push the reader past: a key's length, a string
# value's, an array's items, and the pairs read.
_MAX_KEY = 1 << 16
_MAX_STRING = 1 << 24
_MAX_ITEMS = 1 << 24
_MAX_PAIRS = 1 << 16


class GGUFError(ValueError):
    """The file is not GGUF metadata this reader understands; the message says where."""


def _read(stream: IO[bytes], size: int) -> bytes:
    data = stream.read(size)
    if len(data) != size:
        raise GGUFError("the file ends inside its metadata")
    return data


def _unpack(stream: IO[bytes], fmt: str) -> Any:
    return struct.unpack(fmt, _read(stream, struct.calcsize(fmt)))[0]


def _string(stream: IO[bytes], bound: int) -> str:
    length = _unpack(stream, "<Q")
    if length > bound:
        raise GGUFError(f"a string of {length} bytes in the metadata, more than {bound}")
    return _read(stream, length).decode("utf-8", "replace")


def _value(stream: IO[bytes], kind: int, keep: bool) -> Any:
    """A value of type ``kind``; an array is skipped (None) unless ``keep``."""
    if kind in _SCALARS:
        return _unpack(stream, _SCALARS[kind])
    if kind == _STRING:
        return _string(stream, _MAX_STRING)
    if kind == _ARRAY:
        item_kind = _unpack(stream, "<I")
        count = _unpack(stream, "<Q")
        if count > _MAX_ITEMS:
            raise GGUFError(f"an array of {count} items in the metadata, more than {_MAX_ITEMS}")
        if item_kind in _SCALARS and not keep:
            _read(stream, struct.calcsize(_SCALARS[item_kind]) * count)
            return None
        items = [_value(stream, item_kind, keep) for _ in range(count)]
        return items if keep else None
    raise GGUFError(f"an unknown value type {kind} in the metadata")


def read_metadata(path: Path, wanted: set[str] | None = None) -> dict[str, Any]:
    """The file's metadata pairs (arrays skipped); with ``wanted``, read only until those keys
    (and ``general.architecture``) are found. Raises ``GGUFError`` for what is not GGUF."""
    found: dict[str, Any] = {}
    with path.open("rb") as stream:
        if stream.read(4) != _MAGIC:
            raise GGUFError(f"{path.name} is not a GGUF file (no GGUF magic)")
        version = _unpack(stream, "<I")
        if version not in _VERSIONS:
            raise GGUFError(f"{path.name} is GGUF version {version}; this reader reads 2 and 3")
        _unpack(stream, "<Q")  # the tensors, described after the metadata
        pairs = _unpack(stream, "<Q")
        if pairs > _MAX_PAIRS:
            raise GGUFError(f"{path.name} says it has {pairs} metadata pairs")
        for _ in range(pairs):
            key = _string(stream, _MAX_KEY)
            kind = _unpack(stream, "<I")
            value = _value(stream, kind, keep=False)
            if value is not None:
                found[key] = value
            if wanted is not None and _has_all(found, wanted):
                break
    return found


def _has_all(found: dict[str, Any], wanted: set[str]) -> bool:
    architecture = found.get("general.architecture")
    if not isinstance(architecture, str):
        return False
    keys = {key.replace("{arch}", architecture) for key in wanted}
    return keys <= found.keys()


def trained_context(path: Path) -> int | None:
    """The context the model was trained for, as the file states it
    (``<general.architecture>.context_length``); None when it does not say."""
    metadata = read_metadata(path, {"{arch}.context_length"})
    architecture = metadata.get("general.architecture")
    if not isinstance(architecture, str):
        return None
    value = metadata.get(f"{architecture}.context_length")
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        return None
    return value
