"""``KeyMaterial``: everything that decides a verdict, as one value. The judge builds it from a
request, its canonical form hashes to the cache key (``keys.cache_key``), a record keeps that
form (``cache_record``), ``cache rejudge`` reads it back and a replay miss compares two of them
field by field. A field added here is hashed, kept, read back and compared with no other edit.

The form's bytes are what every existing cache was keyed by: a field left out of it at its
default (``run_index`` 0) keeps the key the request had before that field existed.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from ..verdict import KINDS, Kind
from .keys import KeyFrame, cache_key

__all__ = ["KeyMaterial"]

#: Fields the canonical form leaves out at their default: the key of a request that does not
#: use them is the one it had before they existed. Absent from a stored form, they are at it.
_OMITTED_AT_DEFAULT = frozenset({"run_index"})

# The type a stored form's plain fields must have to be read back.
_SCALAR_TYPES: dict[str, type] = {
    "model": str,
    "prompt_version": str,
    "kind": str,
    "double_check": bool,
    "sample_index": int,
    "run_index": int,
}


@dataclass(frozen=True)
class KeyMaterial:
    """What decides a verdict (never the endpoint, a credential or the test's id)."""

    model: str  # the connection's identity (a local model file's hash, not its port)
    prompt_version: str
    kind: Kind
    sampling: Mapping[str, Any]  # what is sent with the messages: temperature, seed, effort...
    messages: tuple[Mapping[str, Any], ...]
    double_check: bool = False
    sample_index: int = 0
    # A claim over runs' run number, for a judge that samples (the judge sets it to 0 for one
    # that decodes greedily: equal transcripts then share a verdict).
    run_index: int = 0

    def as_json(self) -> dict[str, Any]:
        """The canonical form: what the key hashes and what a record keeps of the request."""
        form: dict[str, Any] = {}
        for name, default in _fields_and_defaults():
            value = getattr(self, name)
            if name in _OMITTED_AT_DEFAULT and value == default:
                continue
            if name == "messages":
                value = list(value)
            elif name == "sampling":
                value = dict(value)
            form[name] = value
        return form

    @property
    def key(self) -> str:
        """The cache key: the sha256 of the canonical form (``keys.cache_key``)."""
        return cache_key(self.as_json())

    def key_frame(self) -> KeyFrame | None:
        """The canonical form but its messages, encoded once (``keys.KeyFrame``): the key of
        this material with any messages is then ``frame.key(messages)``."""
        form = self.as_json()
        del form["messages"]
        return KeyFrame.of(form)

    def with_messages(self, messages: Any) -> KeyMaterial:
        """This material asking ``messages``."""
        return dataclasses.replace(self, messages=tuple(messages))

    @classmethod
    def from_json(cls, form: Mapping[str, Any]) -> KeyMaterial:
        """The material a stored form holds; ValueError saying why if it is none. A field with a
        default that a form lacks (kept by an older version) reads as its default."""
        values: dict[str, Any] = {}
        for field in fields(cls):
            if field.name in form:
                values[field.name] = form[field.name]
            elif field.default is dataclasses.MISSING:
                raise ValueError(f"no {field.name!r}")
        extra = sorted(set(form) - {field.name for field in fields(cls)})
        if extra:
            raise ValueError(f"unknown fields {', '.join(map(repr, extra))}")
        messages, sampling = values["messages"], values["sampling"]
        if not isinstance(messages, list) or not all(isinstance(m, Mapping) for m in messages):
            raise ValueError("'messages' is not a list of objects")
        if not isinstance(sampling, Mapping):
            raise ValueError("'sampling' is not an object")
        values["messages"] = tuple(messages)
        if values["kind"] not in KINDS:
            raise ValueError(f"'kind' is not one of {', '.join(KINDS)}")
        for field in fields(cls):
            kind = _SCALAR_TYPES.get(field.name)
            if kind is not None and type(values.get(field.name, field.default)) is not kind:
                raise ValueError(f"{field.name!r} is not a {kind.__name__}")
        return cls(**values)

    def changes(self, recorded: Mapping[str, Any]) -> list[tuple[str, Any, Any]]:
        """``(field, recorded value, this value)`` for each field a recorded canonical form (or
        the part of one a record keeps outside it) holds otherwise, in field order. A field the
        form does not keep is not compared, unless the form leaves it out at its default."""
        mine = self.as_json()
        found = []
        for field in fields(self):
            name = field.name
            if name in recorded:
                old = recorded[name]
            elif name in _OMITTED_AT_DEFAULT:
                old = field.default
            else:
                continue
            new = mine.get(name, field.default)
            if old != new:
                found.append((name, old, new))
        return found


@functools.cache
def _fields_and_defaults() -> tuple[tuple[str, Any], ...]:
    """``KeyMaterial``'s fields with their defaults, read once (every claim builds a key)."""
    return tuple((field.name, field.default) for field in fields(KeyMaterial))
