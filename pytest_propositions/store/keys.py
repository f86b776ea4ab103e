"""The cache key rules: the sha256 of a request's canonical JSON, the format version every key
names, and the names that must never enter a key or a record (credentials, the API base).

Pure functions of plain data: the judge computes a key without touching the disk cache.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Callable, Mapping
from json.encoder import (  # type: ignore[attr-defined]
    c_make_encoder,
    encode_basestring,
    encode_basestring_ascii,
)
from typing import Any

__all__ = ["CACHE_FORMAT", "KEY_PATTERN", "KeyFrame", "cache_key", "canonical_json"]

#: Part of every key: bump it when the meaning of a stored record changes, and old entries
#: simply stop matching instead of being misread.
CACHE_FORMAT: int = 1

#: What a verdict's key looks like (cache_key's output); reserved keys never do.
KEY_PATTERN = re.compile(r"[0-9a-f]{64}")

_CREDENTIAL_NAMES = frozenset(
    {
        "token",
        "bearer",
        "cookie",
        "set_cookie",
        "auth",
        "passphrase",
    }
)
_CREDENTIAL_SUFFIXES = (
    "api_key",
    "apikey",
    "api_base",
    "apibase",
    "base_url",
    "baseurl",
    "secret",
    "secret_key",
    "private_key",
    "password",
    "passwd",
    "authorization",
    "credential",
    "credentials",
    "access_token",
    "refresh_token",
    "auth_token",
    "api_token",
    "bearer_token",
    "session_token",
    "id_token",
)

# One encoder for every call: json.dumps with options builds a new one each time.
_CANONICAL = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
)


def encoding_with(encoder: json.JSONEncoder) -> Callable[[Any], str]:
    """``encoder.encode`` (no indent), with json's C encoder for its options made once:
    ``JSONEncoder.encode`` makes a new one every call, which costs more than encoding a small
    value. The C encoder keeps no markers (a value holding itself makes it recurse instead), so
    an error is raised again by ``encoder`` itself, which says what it is."""
    made = (
        None
        if c_make_encoder is None
        else c_make_encoder(
            None,
            encoder.default,
            encode_basestring_ascii if encoder.ensure_ascii else encode_basestring,
            None,
            encoder.key_separator,
            encoder.item_separator,
            encoder.sort_keys,
            encoder.skipkeys,
            encoder.allow_nan,
        )
    )

    def encode(value: Any) -> str:
        if made is not None:
            try:
                return "".join(made(value, 0))
            except (TypeError, ValueError, RecursionError):
                pass
        return encoder.encode(value)

    return encode


_canonical = encoding_with(_CANONICAL)


def canonical_json(value: Any) -> str:
    """One text per JSON value: what keys hash and what the store and the export hold."""
    return _canonical(value)


@functools.lru_cache(maxsize=1024)
def _looks_like_credential(name: str) -> bool:
    # Cached: the same few names ("role", "content", ...) come back in every key.
    norm = name.lower().replace("-", "_")
    return norm in _CREDENTIAL_NAMES or norm.endswith(_CREDENTIAL_SUFFIXES)


# Scalars cannot hold names; testing their exact type first spares them the slow ABC check
# (a key is computed for every claim, and most of its values are strings).
_SCALARS = frozenset({str, int, float, bool, type(None)})

# Names already found to be strings that look like no credential: an object whose names are
# all here is checked by one set comparison (every key names the same few). Bounded: past its
# size, a new name is checked each time it is met, as before.
_CLEAN_NAMES: set[str] = set()
_CLEAN_NAMES_MAX = 4096


def check_names(value: Any, path: str, what: str) -> None:
    """Refuse non-string object keys and credential-looking names anywhere in ``value``."""
    if not _names_clean(value):
        _refuse_names(value, path, what)


def _names_clean(value: Any) -> bool:
    """Whether ``value`` holds only string names that look like no credential: the walk every
    key makes, without building the path to a name that ``_refuse_names`` gives on a refusal."""
    kind = type(value)
    if kind in _SCALARS:
        return True
    if kind is dict or (kind is not list and kind is not tuple and isinstance(value, Mapping)):
        if not value.keys() <= _CLEAN_NAMES:
            for name in value:
                if type(name) is not str or _looks_like_credential(name):
                    return False
                if len(_CLEAN_NAMES) < _CLEAN_NAMES_MAX:
                    _CLEAN_NAMES.add(name)
        for item in value.values():
            if type(item) not in _SCALARS and not _names_clean(item):
                return False
        return True
    if isinstance(value, list | tuple):
        for item in value:
            if type(item) not in _SCALARS and not _names_clean(item):
                return False
    return True


def _refuse_names(value: Any, path: str, what: str) -> None:
    """``check_names`` the long way: the first refused name, with its path."""
    kind = type(value)
    if kind in _SCALARS:
        return
    if kind is dict or (kind is not list and kind is not tuple and isinstance(value, Mapping)):
        for name, item in value.items():
            if not isinstance(name, str):
                raise ValueError(f"{what}: expected string keys, got {name!r} at {path or '.'}")
            where = f"{path}.{name}" if path else name
            if _looks_like_credential(name):
                raise ValueError(
                    f"{what}: {where!r} looks like a credential; credentials and the API base "
                    "never enter the verdict cache"
                )
            _refuse_names(item, where, what)
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            _refuse_names(item, f"{path}[{index}]", what)


def cache_key(material: Mapping[str, Any]) -> str:
    """The sha256 of everything that decides a verdict, so a changed request never hits."""
    if "cache_format" in material:
        raise ValueError("cache key material: 'cache_format' is reserved")
    frame = KeyFrame.of({name: value for name, value in material.items() if name != "messages"})
    if frame is not None and "messages" in material:
        key = frame.key(material["messages"])
        if key is not None:
            return key
    full = {"cache_format": CACHE_FORMAT, **material}
    try:
        text = canonical_json(full)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"cache key material is not plain JSON: {exc}") from None
    check_names(full, "", "cache key material")
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class KeyFrame:
    """A key's material but its ``messages``, encoded once: ``key(messages)`` is then
    ``cache_key`` of the whole, encoding only the messages after the first.

    Canonical JSON sorts an object's names, so the whole's text is the fields named before
    ``messages``, the messages, then the fields named after, each part encoded as the whole
    would encode it: the same bytes are hashed. A request opens with the judge's instructions
    (about 2 KB, the same in every claim): with the text before them they are encoded and
    hashed once (``_digest_through``), and a judge keeps one frame for every claim of a kind."""

    __slots__ = ("_after", "_before")

    def __init__(self, before: str, after: str) -> None:
        self._before = before  # '{..."messages":['
        self._after = after  # '],...}'

    @classmethod
    def of(cls, fields: Mapping[str, Any]) -> KeyFrame | None:
        """The frame of a material's ``fields`` (without ``messages``); None when a name is not
        a string or is refused, or a value would not encode (``cache_key`` then encodes the
        whole, and says why)."""
        before: dict[str, Any] = {"cache_format": CACHE_FORMAT}
        after: dict[str, Any] = {}
        for name, value in fields.items():
            if type(name) is not str or name == "cache_format":
                return None
            (before if name < "messages" else after)[name] = value
        if not (_names_clean(before) and _names_clean(after)):
            return None
        try:
            head, tail = _canonical(before), _canonical(after) if after else ""
        except (TypeError, ValueError, RecursionError):
            return None
        return cls(f'{head[:-1]},"messages":[', f"]{',' if after else ''}{tail[1:-1]}}}")

    def key(self, messages: Any) -> str | None:
        """``cache_key`` of this frame's fields with ``messages``; None when they do not open
        with an object of strings, or the rest would not encode or holds a refused name."""
        if type(messages) is not list and type(messages) is not tuple:
            return None
        if not messages or type(messages[0]) is not dict:
            return None
        opening = messages[0]
        for name, text in opening.items():
            if type(name) is not str or type(text) is not str:
                return None
        rest = messages[1:]
        if not (_names_clean(opening) and _names_clean(rest)):
            return None
        try:
            rest_text = f",{_canonical(list(rest))[1:-1]}" if rest else ""
        except (TypeError, ValueError, RecursionError):
            return None
        digest = _digest_through(self._before, tuple(opening.items())).copy()
        digest.update(f"{rest_text}{self._after}".encode("utf-8", "surrogatepass"))
        return digest.hexdigest()


@functools.lru_cache(maxsize=32)
def _digest_through(before: str, opening: tuple[tuple[str, str], ...]) -> hashlib._Hash:
    """The sha256 of the text up to the end of the opening message, kept for the few met last
    (copied before use: this one is never updated)."""
    text = before + _strings_object(opening)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass"))


@functools.lru_cache(maxsize=32)
def _strings_object(items: tuple[tuple[str, str], ...]) -> str:
    """The canonical text of an object of strings (a request's opening message), kept for the
    few met last."""
    return canonical_json(dict(items))
