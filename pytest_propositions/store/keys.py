"""The cache key rules: the sha256 of a request's canonical JSON, the format version every key
names, and the names that must never enter a key or a record (credentials, the API base).

Pure functions of plain data: the judge computes a key without touching the disk cache.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Mapping
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


def canonical_json(value: Any) -> str:
    """One text per JSON value: what keys hash and what the store and the export hold."""
    return _CANONICAL.encode(value)


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
            check_names(item, where, what)
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            check_names(item, f"{path}[{index}]", what)


def cache_key(material: Mapping[str, Any]) -> str:
    """The sha256 of everything that decides a verdict, so a changed request never hits."""
    if "cache_format" in material:
        raise ValueError("cache key material: 'cache_format' is reserved")
    full = {"cache_format": CACHE_FORMAT, **material}
    try:
        text = canonical_json(full)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"cache key material is not plain JSON: {exc}") from None
    check_names(full, "", "cache key material")
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
