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

__all__ = ["CACHE_FORMAT", "KEY_PATTERN", "cache_key", "canonical_json"]

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
        for name, item in value.items():
            if type(name) is not str or _looks_like_credential(name):
                return False
            if type(item) not in _SCALARS and not _names_clean(item):
                return False
        return True
    if isinstance(value, list | tuple):
        return all(_names_clean(item) for item in value)
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
    full = {"cache_format": CACHE_FORMAT, **material}
    split = _around_the_opening(full)
    if split is not None:
        before, opening, after = split
        check_names(full, "", "cache key material")
        digest = _digest_through(before, opening).copy()
        digest.update(after.encode("utf-8", "surrogatepass"))
        return digest.hexdigest()
    try:
        text = canonical_json(full)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"cache key material is not plain JSON: {exc}") from None
    check_names(full, "", "cache key material")
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


# Stands for the opening message while the rest is encoded: a JSON string no request holds
# (the text is checked to hold it once, or the whole is encoded as it is).
_OPENING = "\x00pytest-propositions:opening\x00"
_OPENING_TEXT = json.dumps(_OPENING)


def _around_the_opening(
    full: dict[str, Any],
) -> tuple[str, tuple[tuple[str, str], ...], str] | None:
    """``canonical_json(full)`` in three: the text before the message its ``messages`` open
    with, that message (an object of strings), and the text after it; None when there is no
    such message, or the whole would not encode (the caller encodes it as it is, and says why).

    A request's system instructions (about 2 KB) are the same in every claim: with the text
    before them (the fields named before ``messages``, the same for every claim of a kind) they
    are encoded and hashed once (``_digest_through``), and only the rest is, each claim. The
    same bytes are hashed: the canonical text of the whole, from its three parts."""
    messages = full.get("messages")
    if type(messages) is not list and type(messages) is not tuple:
        return None
    if not messages or type(messages[0]) is not dict:
        return None
    opening = messages[0]
    if not all(type(name) is str and type(text) is str for name, text in opening.items()):
        return None
    try:
        text = canonical_json({**full, "messages": [_OPENING, *messages[1:]]})
    except (TypeError, ValueError, RecursionError):
        return None
    before, found, after = text.partition(_OPENING_TEXT)
    if not found or _OPENING_TEXT in after:
        return None
    return before, tuple(opening.items()), after


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
