"""The cache record: a verdict, where it came from and the request it answered, as the disk cache
and the shared store keep it. Built from a live verdict, checked on its way in, read back (damage
is ``RecordDamage``, which the judge turns into a miss with a warning, never a pass), its request
packed and unpacked, and its export line.

A record's ``request`` field holds the key material minus the model (messages, sampling, kind,
prompt version...) as zlib-compressed canonical JSON in base64: about a third of the raw size,
deterministic, so ``cache export`` stays byte-stable. It lets ``cache rejudge`` ask the same
question of another judge without re-running any simulation, lets an import check a line's key,
and lets a replay miss name the nearest recorded request and what changed. README.md shows a
one-liner that decodes one from an export (a test runs it).

A record keeps nothing of a known secret (``redaction``): the request, the claim and every text
are redacted of it, while the key was computed from the request as it was sent, so a replay
still finds the verdict. A request that lost a secret no longer hashes to its key; it carries a
seal instead (the hash of the key and the stored request), which an import checks in its place.
"""

from __future__ import annotations

import base64
import hashlib
import json
import zlib
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from .._version import __version__
from ..checks import TOO_DEEP
from ..redaction import redact_data
from ..verdict import KINDS, Verdict, check_stored_verdict
from .errors import ImportLineError, InvalidRecordError
from .key_material import KeyMaterial
from .keys import KEY_PATTERN, cache_key, canonical_json, check_names

ENCODING = "zlib+base64"
# The field of a stored request redacted of a secret: its seal to the key (pack_request).
REDACTED = "redacted"
# Far above any judge's context window, far below what a machine cannot hold.
_MAX_REQUEST = 64 * 2**20


def new_record(verdict: Verdict, material: KeyMaterial, test_id: str | None) -> dict[str, Any]:
    """The record of a verdict just judged live on the request made of ``material`` (the key's),
    redacted of the known secrets: the request (sealed to the key when that changed it), the
    claim, the texts, the test's id."""
    stored = verdict.stored()
    record: dict[str, Any] = {
        "claim": verdict.claim,
        "kind": verdict.kind,
        "model": verdict.model,
        "recorded_at": verdict.recorded_at,
        "plugin_version": __version__,
        "prompt_version": material.prompt_version,
        "usage": stored["usage"],
        "cost_usd": verdict.cost_usd,
        "raw_reply": verdict.raw_reply,
        "verdict": stored,
    }
    if test_id:
        record["test_id"] = test_id
    record = redact_data(record)
    # The request itself, compressed: for cache rejudge and for explaining replay misses.
    form = material.as_json()
    shown = redact_data(form)
    key = verdict.key or material.key
    record["request"] = pack_request(shown, sealed_to=None if shown == form else key)
    return record


# --- the request a record keeps ----------------------------------------------------------------


def pack_request(material: Mapping[str, Any], *, sealed_to: str | None = None) -> dict[str, str]:
    """The stored form of a request's key material; the model is left out (the record has it).
    ``sealed_to``: the key of the request this one was redacted from, which it no longer hashes
    to; the seal ties the two together instead."""
    text = canonical_json({name: value for name, value in material.items() if name != "model"})
    data = base64.b64encode(zlib.compress(text.encode("utf-8"), 9)).decode("ascii")
    packed = {"encoding": ENCODING, "data": data}
    if sealed_to is not None:
        packed[REDACTED] = request_seal(sealed_to, data)
    return packed


def request_seal(key: str, data: str) -> str:
    """The seal of a redacted request's stored ``data`` to the ``key`` it was stored under."""
    return hashlib.sha256(f"{key}:{data}".encode()).hexdigest()


def request_redacted(record: Mapping[str, Any]) -> bool:
    """Whether the request a record keeps lost a secret (and so no longer hashes to its key)."""
    stored = record.get("request")
    return isinstance(stored, Mapping) and REDACTED in stored


def unpack_request(record: Mapping[str, Any], *, strict: bool = False) -> dict[str, Any] | None:
    """The canonical form of the key material a record was stored under, as a dict (model
    included; ``record_material`` reads it as a ``KeyMaterial``); None if it keeps no
    ``request`` field, or (unless ``strict``: then ValueError saying why) one that cannot be read."""
    stored = record.get("request")
    if stored is None:
        return None
    try:
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
    except ValueError:
        if strict:
            raise
        return None
    material["model"] = record.get("model")
    return material


def record_material(record: Mapping[str, Any]) -> KeyMaterial | None:
    """The key material a record keeps, read back (``cache rejudge`` asks it again, a replay miss
    compares it); None if it keeps none, or none that can be read."""
    try:
        form = unpack_request(record, strict=True)
        return None if form is None else KeyMaterial.from_json(form)
    except ValueError:
        return None


def request_key(record: Mapping[str, Any]) -> str | None:
    """The key of the request a record keeps (the judge's own key function); None if it keeps
    none, ValueError saying why if it cannot be read or is no key material."""
    form = unpack_request(record, strict=True)
    if form is None:
        return None
    try:
        # The form hashed as it is kept, as KeyMaterial.key hashes its own (keys.cache_key): a
        # form this version would not build (another version's) is checked against its key too.
        return cache_key(form)
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"not the material of a key: {exc}") from None


# --- checks --------------------------------------------------------------------------------------


class RecordDamage(ValueError):
    """One stored record cannot be read back as a verdict record; the message says why."""


def kind_problem(record: dict[str, Any], kind: str | None = None) -> str | None:
    """What is wrong with the kinds a record names (its own, its verdict's and, given, the
    request's); None when they agree. The key names the request's kind, so a verdict of the
    other kind under it was moved there (a store row, an imported line): damage, never a pass.
    Cheap (no verdict is built): every cache hit asks it."""
    data = record.get("verdict")
    found = data.get("kind") if isinstance(data, dict) else None
    if found not in KINDS:
        return "no verdict of a known kind"
    stored = record.get("kind", found)
    if stored != found:
        return f"a {found} verdict in a record of kind {str(stored)[:20]!r}"
    if kind is not None and found != kind:
        return f"a {found} verdict under the key of a {kind} claim"
    return None


def verdict_of_record(record: Any, kind: str | None = None, *, key: str = "") -> Verdict:
    """The verdict a cache record holds, for a request of ``kind``; RecordDamage (a ValueError)
    saying why not. No pydantic: every hit reads a record this way.

    Without the request (maintenance: export, import, a store's rows), the kind of the request
    the record keeps stands in for it, so a verdict moved under another kind's key is found."""
    if not isinstance(record, dict):
        raise RecordDamage(f"expected a JSON object, found {type(record).__name__}")
    data = record.get("verdict")
    if not isinstance(data, dict):
        raise RecordDamage('expected "verdict" to be a JSON object')
    try:
        verdict = Verdict.from_dict(
            data, cached=True, recorded_at=record.get("recorded_at"), key=key
        )
    except ValueError as error:
        raise RecordDamage(str(error)) from None
    problem = kind_problem(record, kind)
    if problem is not None:
        raise RecordDamage(problem)
    asked = (unpack_request(record) or {}).get("kind") if kind is None else None
    if asked is not None and asked != verdict.kind:
        raise RecordDamage(
            f"a {verdict.kind} verdict for a {str(asked)[:20]!r} request (its 'request' field)"
        )
    return verdict


def recorded_time(text: str) -> datetime:
    """A record's ``recorded_at``; ValueError unless an ISO-8601 time with a zone."""
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is None:
        raise ValueError("no time zone")
    return moment


def record_text(record: Any) -> str:
    """Validate a verdict record and return its canonical JSON text."""
    if not isinstance(record, Mapping):
        raise InvalidRecordError(f"expected a JSON object, got {type(record).__name__}")
    model = record.get("model")
    if not isinstance(model, str) or not model:
        raise InvalidRecordError('expected "model" to be a non-empty string')
    recorded_at = record.get("recorded_at")
    if not isinstance(recorded_at, str):
        raise InvalidRecordError('expected "recorded_at" to be an ISO-8601 UTC time string')
    try:
        recorded_time(recorded_at)
    except ValueError:
        raise InvalidRecordError(
            f'expected "recorded_at" to be an ISO-8601 time with a zone, got {recorded_at!r}'
        ) from None
    try:
        text = canonical_json(dict(record))
        text.encode("utf-8")  # sqlite stores UTF-8: a lone surrogate would fail there instead
    except (TypeError, ValueError) as exc:
        raise InvalidRecordError(f"expected a JSON-serializable record: {exc}") from None
    try:
        check_names(record, "", "verdict record")
    except ValueError as exc:
        raise InvalidRecordError(str(exc)) from None
    try:
        check_stored_verdict(record.get("verdict"))  # loads pydantic: records arriving only
    except ValueError as exc:
        raise InvalidRecordError(f'bad "verdict": {exc}') from None
    try:
        verdict_of_record(dict(record))
    except RecordDamage as damage:
        raise InvalidRecordError(str(damage)) from None
    return text


def stored_record(text: str, kind: str | None = None) -> dict[str, Any]:
    """A record's text as read from outside this machine (a shared store's row), checked as an
    import line is, and for the request's ``kind``; InvalidRecordError saying what is wrong."""
    try:
        record = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise InvalidRecordError(f"not JSON: {exc}") from None
    record_text(record)
    if kind is not None:
        try:
            verdict_of_record(record, kind)
        except RecordDamage as damage:
            raise InvalidRecordError(str(damage)) from None
    return dict(record)


# --- read back from the disk cache ---------------------------------------------------------------


def read_record(cache: Any, key: str, *, verdict_only: bool = False) -> dict[str, Any] | None:
    """The record stored under ``key`` in an open diskcache, None if there is none; RecordDamage
    if unreadable. ``verdict_only``: only the members a judge reads (``lean_record``), for a
    judge that reads only the verdict.

    diskcache keeps a large record in a side file: a garbled one fails to decode, a deleted
    one reads as absent although its row is still there. Both are damage, not a quiet miss.
    """
    try:
        text = cache.get(key)
    except (UnicodeDecodeError, OSError) as exc:
        raise RecordDamage(f"its side file cannot be read: {exc}") from None
    if text is None:
        if key in cache:
            raise RecordDamage("its side file is missing")
        return None
    if type(text) is not str:
        raise RecordDamage(f"expected JSON text, found {type(text).__name__}")
    try:
        record = (lean_record(text) if verdict_only else None) or json.loads(text)
    except ValueError as exc:
        raise RecordDamage(f"not JSON: {exc}") from None
    if type(record) is not dict:
        raise RecordDamage(f"expected a JSON object, found {type(record).__name__}")
    return record


# What a judge reads of a record's canonical text (names sorted): its verdict, the last member;
# its kind and time, strings named before any member that holds an object.
_VERDICT_OPENS = ',"verdict":{'
_KIND_OPENS = ',"kind":"'
_RECORDED_AT_OPENS = ',"recorded_at":"'
_decode_at = json.JSONDecoder().raw_decode


def lean_record(text: str) -> dict[str, Any] | None:
    """The members of a record's canonical text a judge reads (``kind``, ``recorded_at`` and
    ``verdict``), decoded without the rest (the request it keeps, the claim and the reply again:
    most of it); None when the text is not spelled so, and the caller reads it whole.

    The verdict is decoded from its name to the text's last brace, or not at all: a member of
    that name inside another one ends before it. A quote inside a JSON string is escaped, so
    neither name can be spelled by a string's content; the kind is taken only when no object
    opens before it (the claim and the cost, named before it, are a string and a number)."""
    at = text.rfind(_VERDICT_OPENS)
    if at < 0 or text[-1:] != "}":
        return None
    try:
        verdict, end = _decode_at(text, at + len(_VERDICT_OPENS) - 1)
    except (ValueError, RecursionError):
        return None
    if end != len(text) - 1 or type(verdict) is not dict:
        return None
    kind = _string_member(text, _KIND_OPENS, 0, at)
    if kind is None or text.find("{", 1, kind[1]) >= 0:
        return None
    recorded_at = _string_member(text, _RECORDED_AT_OPENS, kind[1], at)
    if recorded_at is None:
        return None
    return {"kind": kind[0], "recorded_at": recorded_at[0], "verdict": verdict}


def _string_member(text: str, opens: str, start: int, end: int) -> tuple[str, int] | None:
    """The first member spelled ``opens`` (its name, colon and opening quote) in
    ``text[start:end]``: its string, if it holds no escape, and where the member starts."""
    found = text.find(opens, start, end)
    if found < 0:
        return None
    begins = found + len(opens)
    ends = text.find('"', begins, end)
    if ends < 0 or "\\" in text[begins:ends]:
        return None
    return text[begins:ends], found


# --- the export line ---------------------------------------------------------------------------


def export_line(key: str, record: Mapping[str, Any]) -> str:
    """One line of ``cache export`` (newline included): canonical, so an export is byte-stable."""
    return canonical_json({"key": key, "record": record}) + "\n"


def read_lines(lines: Iterable[str]) -> tuple[dict[str, str], list[ImportLineError]]:
    """Export lines checked: each good line's key and record text, and each bad line's error.

    A key given again with another record is a bad line (the first one is kept)."""
    entries: dict[str, str] = {}
    first_seen: dict[str, int] = {}
    errors: list[ImportLineError] = []
    for lineno, line in enumerate(lines, start=1):
        stripped = line.strip()
        if not stripped:
            continue
        try:
            key, text = _parse_line(lineno, stripped)
        except ImportLineError as error:
            errors.append(error)
            continue
        except RecursionError:
            errors.append(ImportLineError(lineno, TOO_DEEP))
            continue
        if key in entries and entries[key] != text:
            errors.append(
                ImportLineError(
                    lineno,
                    f"one record per key, but key {key} already had a different record "
                    f"on line {first_seen[key]}",
                )
            )
            continue
        entries[key] = text
        first_seen.setdefault(key, lineno)
    return entries, errors


def _parse_line(lineno: int, line: str) -> tuple[str, str]:
    """Check one export line; return its key and the record's canonical text."""
    shape = 'a JSON object {"key": "<sha256 hex>", "record": {...}}'
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ImportLineError(
            lineno, f"expected {shape}; not valid JSON ({exc.msg} at column {exc.colno})"
        ) from None
    if not isinstance(data, dict) or set(data) != {"key", "record"}:
        raise ImportLineError(lineno, f"expected {shape} with exactly those two fields")
    key = data["key"]
    if not isinstance(key, str) or not KEY_PATTERN.fullmatch(key):
        raise ImportLineError(
            lineno, f'expected "key" to be a sha256 hex digest (64 lowercase hex), got {key!r}'
        )
    try:
        text = record_text(data["record"])
    except InvalidRecordError as exc:
        raise ImportLineError(lineno, f'bad "record": {exc}') from None
    _check_key(lineno, key, data["record"])
    return key, text


def _check_key(lineno: int, key: str, record: dict[str, Any]) -> None:
    """ImportLineError unless ``key`` is the key of the request ``record`` keeps.

    A key moved to another line's record (a bad merge of a committed export, a hand edit) would
    otherwise serve that record's verdict for another claim: a wrong pass on replay. A record
    that keeps no request cannot be checked, so it is refused too; one whose request was
    redacted of a secret is checked by its seal."""
    redo = (
        "export it again from the cache that recorded it, or let a run "
        "(--prop-cache=use) judge that claim again"
    )
    if request_redacted(record):
        stored = record["request"]
        try:
            unpack_request(record, strict=True)
        except ValueError as exc:
            raise ImportLineError(
                lineno, f'its record\'s "request" cannot be read ({exc}); {redo}'
            ) from None
        if stored[REDACTED] != request_seal(key, str(stored.get("data"))):
            raise ImportLineError(
                lineno,
                f"its record's request was stored redacted of a secret, and its seal is not "
                f"that of key {key}: a key moved to another record (a bad merge or an edit of "
                f"the export?); {redo}",
            )
        return
    try:
        kept = request_key(record)
    except ValueError as exc:
        raise ImportLineError(
            lineno,
            f'its record\'s "request" cannot be read ({exc}), so its key cannot be '
            f"checked against it; {redo}",
        ) from None
    if kept is None:
        raise ImportLineError(
            lineno,
            'its record keeps no "request" (written by hand, or by a version before requests '
            "were kept), so its key cannot be checked against what was asked; " + redo,
        )
    if kept != key:
        raise ImportLineError(
            lineno,
            f"key {key} is not the key of the request its record keeps ({kept}): a key moved to "
            f"another record (a bad merge or an edit of the export?); {redo}",
        )
