"""The verdict cache: keys, record modes, maintenance, damage recovery and sharing."""

from __future__ import annotations

import base64
import hashlib
import json
import math
import multiprocessing
import os
import sqlite3
import subprocess
import sys
import threading
import zlib
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_propositions.store import cache_record
from pytest_propositions.store.cache import (
    CACHE_MODES,
    CacheDirectoryError,
    CacheError,
    CacheWarning,
    ImportLineError,
    InvalidRecordError,
    NoUsageRecordedError,
    VerdictCache,
)
from pytest_propositions.store.cache_record import pack_request
from pytest_propositions.store.keys import (
    CACHE_FORMAT,
    _looks_like_credential,
    cache_key,
    canonical_json,
)
from tests.support.records import keyed
from tests.support.records import line as kept_line

MATERIAL: dict[str, Any] = {
    "prompt_version": "3",
    "model": "openai/gpt-4.1-mini",
    "messages": [
        {"role": "system", "content": "You judge claims."},
        {"role": "user", "content": "Claim: Oscar mentions travel."},
    ],
    "sampling": {"temperature": 0.0, "max_tokens": 300},
    "kind": "check",
    "sample_index": 0,
}

# A run start long before any verdict of a test was stored.
EARLY = datetime(2020, 1, 1, tzinfo=UTC)


def record(**overrides: Any) -> dict[str, Any]:
    """A record shaped like the judge's."""
    base: dict[str, Any] = {
        "model": "openai/gpt-4.1-mini",
        "recorded_at": "2025-03-01T12:00:00+00:00",
        "claim": "Oscar mentions his travel preferences.",
        "kind": "check",
        "verdict": {
            "kind": "check",
            "claim": "Oscar mentions his travel preferences.",
            "value": True,
            "justification": "He says so in turn 2.",
            "confidence": 0.9,
        },
        "plugin_version": "0.1.0",
        "usage": {"prompt_tokens": 120, "completion_tokens": 40, "total_tokens": 160},
        "cost_usd": 0.0001,
        "raw_reply": '{"value": true}',
    }
    base.update(overrides)
    return base


def key(n: int) -> str:
    return cache_key({"n": n})


# --- keys ----------------------------------------------------------------------------------


def test_key_is_sha256_of_canonical_json_with_the_format() -> None:
    text = json.dumps(
        {"cache_format": CACHE_FORMAT, **MATERIAL},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    assert cache_key(MATERIAL) == hashlib.sha256(text.encode()).hexdigest()


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("prompt_version", "4"),
        ("model", "openai/gpt-4.1"),
        ("messages", [{"role": "user", "content": "Claim: Oscar mentions travel!"}]),
        ("sampling", {"temperature": 0.2, "max_tokens": 300}),
        ("kind", "score"),
        ("sample_index", 1),
    ],
)
def test_changing_any_field_changes_the_key(field: str, value: Any) -> None:
    assert cache_key({**MATERIAL, field: value}) != cache_key(MATERIAL)


def test_adding_a_field_changes_the_key() -> None:
    assert cache_key({**MATERIAL, "double_check": True}) != cache_key(MATERIAL)


def test_dict_order_does_not_change_the_key() -> None:
    reordered = {name: MATERIAL[name] for name in reversed(list(MATERIAL))}
    reordered["sampling"] = {"max_tokens": 300, "temperature": 0.0}
    assert cache_key(reordered) == cache_key(MATERIAL)


def test_json_types_are_kept_apart() -> None:
    keys = {cache_key({"x": value}) for value in (1, 1.0, True, "1", [1], None, -0.0, 0.0)}
    assert len(keys) == 8


@pytest.mark.parametrize(
    "material",
    [
        {"api_key": "sk-x"},
        {"OPENAI_API_KEY": "sk-x"},
        {"api_base": "http://localhost:8080"},
        {"base_url": "http://localhost:8080"},
        {"sampling": {"temperature": 0, "Authorization": "Bearer x"}},
        {"messages": [{"role": "user", "content": "hi", "x-api-key": "k"}]},
        {"extra": {"headers": {"proxy-authorization": "x"}}},
        {"client_secret": "x"},
        {"access_token": "x"},
        {"password": "x"},
    ],
)
def test_credentials_never_enter_a_key(material: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="credential"):
        cache_key({**MATERIAL, **material})


# "role" and "content" too: keys pass over messages of just those two names (keys._is_plain_message).
@pytest.mark.parametrize(
    "name", ["max_tokens", "prompt_tokens", "usage", "tokenizer", "model", "role", "content"]
)
def test_ordinary_names_are_not_credentials(name: str) -> None:
    assert not _looks_like_credential(name)


def test_key_material_must_be_plain_json() -> None:
    with pytest.raises(ValueError, match="reserved"):
        cache_key({"cache_format": 2})
    with pytest.raises(ValueError, match="plain JSON"):
        cache_key({"when": object()})
    with pytest.raises(ValueError, match="plain JSON"):
        cache_key({"temperature": math.nan})
    with pytest.raises(ValueError, match="string keys"):
        cache_key({"sampling": {1: "a"}})


_names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=8).filter(
    lambda name: not _looks_like_credential(name) and name != "cache_format"
)
_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**40), 2**40)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_names, inner, max_size=3),
    max_leaves=8,
)
_materials = st.dictionaries(_names, _json, max_size=5)


def strictly_equal(a: Any, b: Any) -> bool:
    """Equal as JSON values: 1, 1.0 and True differ, and so do 0.0 and -0.0."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(strictly_equal(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(map(strictly_equal, a, b))
    if isinstance(a, float):
        return repr(a) == repr(b)
    return bool(a == b)


@settings(max_examples=300, deadline=None)
@given(_materials, _materials)
def test_keys_are_equal_exactly_when_materials_are(a: dict[str, Any], b: dict[str, Any]) -> None:
    assert (cache_key(a) == cache_key(b)) == strictly_equal(a, b)
    copy = json.loads(json.dumps(a))
    assert cache_key(dict(reversed(list(copy.items())))) == cache_key(a)


# --- modes ---------------------------------------------------------------------------------


def test_use_mode_reads_and_writes(tmp_path: Path) -> None:
    cache = VerdictCache(tmp_path / "c")
    assert cache.get(key(1)) is None
    assert not (tmp_path / "c").exists()  # a read never creates the cache
    cache.put(key(1), record())
    assert cache.get(key(1)) == record()
    assert (cache.hits, cache.misses) == (1, 1)
    assert cache.used_keys == {key(1)}
    assert VerdictCache(tmp_path / "c").get(key(1)) == record()


def test_put_overwrites(tmp_path: Path) -> None:
    cache = VerdictCache(tmp_path)
    cache.put(key(1), record(claim="a"))
    cache.put(key(1), record(claim="b"))
    assert cache.get(key(1)) == record(claim="b")
    assert len(cache) == 1


def test_replay_reads_but_never_writes(tmp_path: Path) -> None:
    VerdictCache(tmp_path).put(key(1), record())
    replay = VerdictCache(tmp_path, "replay")
    assert replay.get(key(1)) == record()
    replay.put(key(2), record())
    assert replay.get(key(2)) is None
    assert VerdictCache(tmp_path).get(key(2)) is None
    assert (replay.hits, replay.misses) == (1, 1)
    assert replay.used_keys == {key(1), key(2)}


def test_replay_does_not_create_a_missing_cache(tmp_path: Path) -> None:
    replay = VerdictCache(tmp_path / "none", "replay")
    assert replay.get(key(1)) is None
    replay.put(key(1), record())
    replay.record_usage([key(1)], EARLY)
    assert not (tmp_path / "none").exists()


def test_refresh_never_reads_and_overwrites(tmp_path: Path) -> None:
    VerdictCache(tmp_path).put(key(1), record(claim="old"))
    refresh = VerdictCache(tmp_path, "refresh")
    assert refresh.get(key(1)) is None
    refresh.put(key(1), record(claim="new"))
    assert refresh.get(key(1)) is None
    assert VerdictCache(tmp_path).get(key(1)) == record(claim="new")
    assert (refresh.hits, refresh.misses) == (0, 2)


def test_off_neither_reads_nor_writes(tmp_path: Path) -> None:
    directory = tmp_path / "c"
    off = VerdictCache(directory, "off")
    assert off.get(key(1)) is None
    off.put(key(1), record())
    off.record_usage([key(1)], EARLY)
    assert off.get(key(1)) is None
    assert not directory.exists()
    assert off.used_keys == {key(1)}


def test_modes_are_the_four_documented_ones(tmp_path: Path) -> None:
    assert CACHE_MODES == ("use", "replay", "refresh", "off")
    with pytest.raises(ValueError, match="use, replay, refresh, off"):
        VerdictCache(tmp_path, "record")  # type: ignore[arg-type]


def test_mark_used(tmp_path: Path) -> None:
    cache = VerdictCache(tmp_path)
    cache.mark_used(key(7))
    assert cache.used_keys == {key(7)}


# --- records -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("bad", "match"),
    [
        (record(model=""), '"model"'),
        ({k: v for k, v in record().items() if k != "model"}, '"model"'),
        ({k: v for k, v in record().items() if k != "recorded_at"}, '"recorded_at"'),
        (record(recorded_at="yesterday"), '"recorded_at"'),
        (record(recorded_at="2025-03-01T12:00:00"), "zone"),
        (record(raw_reply=object()), "JSON-serializable"),
        (record(cost_usd=math.inf), "JSON-serializable"),
        (record(raw_reply="\ud800"), "JSON-serializable"),
        (record(usage={"prompt_tokens": 1, "api_key": "sk-x"}), "usage.api_key"),
        (record(verdict={"headers": [{"Authorization": "x"}]}), "credential"),
        (record(api_base="http://localhost"), "credential"),
    ],
)
def test_put_refuses_invalid_records_in_every_mode(
    tmp_path: Path, bad: dict[str, Any], match: str
) -> None:
    for mode in CACHE_MODES:
        with pytest.raises(InvalidRecordError, match=match):
            VerdictCache(tmp_path, mode).put(key(1), bad)  # type: ignore[arg-type]
    assert len(VerdictCache(tmp_path)) == 0


def test_put_refuses_keys_not_made_by_cache_key(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="cache_key"):
        VerdictCache(tmp_path).put("meta:complete-run", record())


def test_records_are_plain_json_in_sqlite(tmp_path: Path) -> None:
    """Another Python, or no Python at all, can read the store: no pickles."""
    VerdictCache(tmp_path).put(key(1), record(claim="Zoë ☂"))
    with sqlite3.connect(tmp_path / "cache.db") as db:
        ((value,),) = db.execute("SELECT value FROM Cache WHERE key = ?", (key(1),))
        settings_rows = dict(db.execute("SELECT key, value FROM Settings"))
    assert isinstance(value, str)
    assert value == canonical_json(record(claim="Zoë ☂"))
    assert settings_rows["eviction_policy"] == "none"  # never silently evicted
    assert settings_rows["size_limit"] >= 2**60


# --- stats, export, import -----------------------------------------------------------------


def test_stats(tmp_path: Path) -> None:
    cache = VerdictCache(tmp_path)
    cache.put(key(1), record(model="a", recorded_at="2025-01-02T00:00:00Z"))
    cache.put(key(2), record(model="b", recorded_at="2025-01-01T00:00:00+00:00"))
    cache.put(key(3), record(model="a", recorded_at="2025-01-03T01:00:00+01:00"))
    cache.record_usage([key(1)], EARLY)
    stats = cache.stats()
    assert stats.entries == 3 == len(cache)
    assert stats.models == {"a": 2, "b": 1}
    assert list(stats.models) == ["a", "b"]  # most used first
    assert stats.oldest is not None and stats.oldest.isoformat() == "2025-01-01T00:00:00+00:00"
    assert stats.newest is not None and stats.newest.isoformat() == "2025-01-03T01:00:00+01:00"
    assert stats.size_bytes > 0
    assert stats.usage is not None
    assert (stats.usage.runs, stats.usage.keys, stats.usage.since) == (1, {key(1)}, EARLY)


def test_stats_of_a_missing_cache_do_not_create_it(tmp_path: Path) -> None:
    stats = VerdictCache(tmp_path / "none").stats()
    assert (stats.entries, stats.size_bytes, stats.models) == (0, 0, {})
    assert stats.usage is None
    assert not (tmp_path / "none").exists()


def fill(cache: VerdictCache, count: int) -> None:
    for n in range(count):
        cache.put(key(n), record(claim=f"claim {n}", model=f"m{n % 3}"))


def test_export_is_sorted_canonical_and_byte_identical(tmp_path: Path) -> None:
    cache = VerdictCache(tmp_path)
    fill(cache, 30)
    cache.record_usage([key(0)], EARLY)
    first = "".join(cache.export_lines())
    second = "".join(VerdictCache(tmp_path).export_lines())
    assert first == second
    lines = first.splitlines()
    assert len(lines) == 30  # the usage record is not a verdict
    keys = [json.loads(line)["key"] for line in lines]
    assert keys == sorted(keys) == sorted(key(n) for n in range(30))
    for line in lines:
        assert line == canonical_json(json.loads(line))
        assert set(json.loads(line)) == {"key", "record"}


def test_export_import_round_trip(tmp_path: Path) -> None:
    source = VerdictCache(tmp_path / "a")
    for n in range(10):
        source.put(*keyed(n, record(claim=f"claim {n}", model=f"m{n % 3}")))
    exported = list(source.export_lines())
    target = VerdictCache(tmp_path / "b")
    assert target.import_lines(exported) == 10
    assert list(target.export_lines()) == exported


def test_import_merges_and_the_file_wins(tmp_path: Path) -> None:
    cache = VerdictCache(tmp_path)
    cache.put(*keyed(1, record(claim="local")))
    cache.put(*keyed(2, record(claim="kept")))
    lines = [
        kept_line(1, record(claim="reviewed")),
        "",
        kept_line(3, record(claim="new")) + "\n",
        kept_line(3, record(claim="new")),  # same again: fine
    ]
    assert cache.import_lines(lines) == 2
    assert cache.get(keyed(1, record())[0]) == keyed(1, record(claim="reviewed"))[1]
    assert cache.get(keyed(2, record())[0]) == keyed(2, record(claim="kept"))[1]
    assert cache.get(keyed(3, record())[0]) == keyed(3, record(claim="new"))[1]


GOOD = kept_line(1, record())


@pytest.mark.parametrize(
    ("bad", "expected"),
    [
        ('{"key": "abc",', "not valid JSON"),
        ("[1, 2]", "exactly those two fields"),
        (json.dumps({"key": key(2)}), "exactly those two fields"),
        (json.dumps({"key": key(2), "record": record(), "x": 1}), "exactly those two fields"),
        (json.dumps({"key": "ABC", "record": record()}), "sha256"),
        (json.dumps({"key": key(2), "record": "yes"}), "JSON object"),
        (json.dumps({"key": key(2), "record": record(model=None)}), '"model"'),
        (json.dumps({"key": key(2), "record": record(api_key="sk")}), "credential"),
        (json.dumps({"key": key(2), "record": record(cost_usd=math.nan)}), "JSON-serializable"),
        (kept_line(1, record(claim="other")), "line 1"),
    ],
)
def test_a_malformed_line_is_named_and_nothing_is_written(
    tmp_path: Path, bad: str, expected: str
) -> None:
    cache = VerdictCache(tmp_path / "c")
    lines = [GOOD, "", kept_line(5, record()), bad, GOOD]
    with pytest.raises(ImportLineError, match=expected) as info:
        cache.import_lines(lines)
    assert info.value.lineno == 4
    assert str(info.value).startswith("line 4: ")
    assert not (tmp_path / "c").exists()


def test_a_failed_import_leaves_an_existing_cache_as_it_was(tmp_path: Path) -> None:
    cache = VerdictCache(tmp_path)
    cache.put(key(1), record(claim="mine"))
    before = list(cache.export_lines())
    with pytest.raises(ImportLineError):
        cache.import_lines([kept_line(1, record()), "nope"])
    assert list(cache.export_lines()) == before


def test_two_lines_with_their_keys_swapped_are_refused(tmp_path: Path) -> None:
    """A bad merge of a committed export swaps two lines' keys: each record would then answer
    the other's request (a false claim passing on replay). The key is recomputed from the
    request each record keeps, and both lines are refused by number."""
    true_key, true_record = keyed(1, record(claim="Oscar likes cities."))
    false_verdict = {**record()["verdict"], "claim": "Oscar sings.", "value": False}
    false_key, false_record = keyed(2, record(claim="Oscar sings.", verdict=false_verdict))
    lines = [
        canonical_json({"key": false_key, "record": true_record}),
        canonical_json({"key": true_key, "record": false_record}),
    ]
    bad: list[ImportLineError] = []
    cache = VerdictCache(tmp_path / "c")
    assert cache.import_lines(lines, bad=bad) == 0
    assert [error.lineno for error in bad] == [1, 2]
    assert bad[0].expected.startswith(
        f"key {false_key} is not the key of the request its record keeps ({true_key})"
    )
    assert not (tmp_path / "c").exists()
    # The same lines with their own keys are imported.
    assert cache.import_lines([kept_line(1, true_record), kept_line(2, false_record)]) == 2


@pytest.mark.parametrize(
    ("kept", "expected"),
    [
        pytest.param(None, 'keeps no "request"', id="none"),
        pytest.param({"encoding": "gzip", "data": ""}, "cannot be read", id="encoding"),
        pytest.param({"encoding": "zlib+base64", "data": "!!"}, "cannot be read", id="data"),
        pytest.param(pack_request({"n": [1] * 3})["data"], "cannot be read", id="not-a-mapping"),
        pytest.param(
            pack_request({"n": 1, "api_key": "sk-1"}), "not the material of a key", id="credential"
        ),
        pytest.param(
            {
                "encoding": "zlib+base64",
                "data": base64.b64encode(zlib.compress(b"[1]")).decode(),
            },
            "expected a JSON object",
            id="a-list",
        ),
    ],
)
def test_a_line_whose_key_cannot_be_checked_is_refused(
    tmp_path: Path, kept: Any, expected: str
) -> None:
    """Without a readable request the key cannot be shown to belong to the record: refused,
    saying why and what to do, never trusted."""
    rec = record() if kept is None else record(request=kept)
    bad: list[ImportLineError] = []
    cache = VerdictCache(tmp_path / "c")
    assert cache.import_lines([GOOD, json.dumps({"key": key(2), "record": rec})], bad=bad) == 1
    [error] = bad
    assert error.lineno == 2 and expected in error.expected
    assert "so its key cannot be checked" in error.expected
    assert "export it again from the cache that recorded it" in error.expected


def test_a_kept_request_that_expands_without_end_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cache_record, "_MAX_REQUEST", 2**20)
    data = base64.b64encode(zlib.compress(b'"' + b"a" * 2**21 + b'"')).decode()
    rec = record(request={"encoding": "zlib+base64", "data": data})
    with pytest.raises(ImportLineError, match="expands to more than 1 MiB"):
        VerdictCache(tmp_path / "c").import_lines([json.dumps({"key": key(2), "record": rec})])


def test_clear(tmp_path: Path) -> None:
    cache = VerdictCache(tmp_path)
    fill(cache, 5)
    cache.record_usage([key(0)], EARLY)
    assert cache.clear() == 5
    assert len(cache) == 0
    assert cache.usage() is None
    assert VerdictCache(tmp_path / "none").clear() == 0


# --- usage and pruning --------------------------------------------------------------------


def test_prune_before_any_run_recorded_usage_refuses(tmp_path: Path) -> None:
    cache = VerdictCache(tmp_path)
    fill(cache, 3)
    with pytest.raises(NoUsageRecordedError, match="would remove every verdict"):
        cache.prune()
    assert len(cache) == 3
    assert isinstance(NoUsageRecordedError("x"), CacheError)


def test_prune_keeps_what_any_run_since_the_last_prune_used(tmp_path: Path) -> None:
    cache = VerdictCache(tmp_path)
    fill(cache, 6)
    started = datetime.now(UTC)
    cache.record_usage([key(0), key(1)], started + timedelta(seconds=1))
    cache.record_usage([key(2)], started)  # another selection, or shard: both count
    usage = cache.usage()
    assert usage is not None
    assert (usage.runs, usage.keys, usage.since) == (2, {key(0), key(1), key(2)}, started)
    cache.put(key(9), record(claim="stored after the runs started"))
    count, decided = cache.prune()
    assert (count, decided) == (3, usage)
    assert sorted(json.loads(line)["key"] for line in cache.export_lines()) == sorted(
        [key(0), key(1), key(2), key(9)]
    )
    # The count starts afresh: a prune needs a run after it.
    assert cache.usage() is None
    with pytest.raises(NoUsageRecordedError):
        cache.prune()
    # A run after the prune that used key(9) alone: the older verdicts go this time.
    cache.record_usage([key(9)], datetime.now(UTC))
    assert cache.prune()[0] == 3
    assert [json.loads(line)["key"] for line in cache.export_lines()] == [key(9)]


def test_an_older_complete_run_record_is_read_as_one_run(tmp_path: Path) -> None:
    cache = VerdictCache(tmp_path)
    fill(cache, 3)
    ended = datetime.now(UTC) + timedelta(seconds=5)
    old = canonical_json(
        {"recorded_at": ended.isoformat(), "timestamp": ended.timestamp(), "keys": [key(0)]}
    )
    cache._db.call(lambda c: c.set("meta:complete-run", old), create=True)
    usage = cache.usage()
    assert usage is not None and (usage.runs, usage.keys) == (1, {key(0)})
    assert cache.prune()[0] == 2


def test_a_session_records_what_it_used(tmp_path: Path) -> None:
    VerdictCache(tmp_path).put(key(1), record())
    VerdictCache(tmp_path).put(key(2), record())
    started = datetime.now(UTC)
    session = VerdictCache(tmp_path)
    assert session.get(key(1)) is not None
    session.put(key(3), record())
    session.record_usage(session.used_keys, started)
    usage = session.usage()
    assert usage is not None and usage.keys == {key(1), key(3)}
    assert VerdictCache(tmp_path).prune()[0] == 1
    assert VerdictCache(tmp_path).get(key(2)) is None


# --- damage and bad directories ------------------------------------------------------------


def damage_by_truncation(directory: Path) -> None:
    cache = VerdictCache(directory)
    fill(cache, 200)
    cache.close()
    db = directory / "cache.db"
    with db.open("r+b") as handle:
        handle.truncate(db.stat().st_size // 2)


def damage_with_garbage(directory: Path) -> None:
    directory.mkdir()
    (directory / "cache.db").write_bytes(os.urandom(8192))


@pytest.mark.parametrize("damage", [damage_by_truncation, damage_with_garbage])
def test_a_damaged_cache_is_moved_aside_and_rebuilt(tmp_path: Path, damage: Any) -> None:
    directory = tmp_path / "c"
    damage(directory)
    damaged = (directory / "cache.db").read_bytes()
    warned: list[str] = []
    cache = VerdictCache(directory, warn=warned.append)
    assert cache.get(key(1)) is None
    assert cache.get(key(2)) is None
    cache.put(key(3), record())
    assert cache.get(key(3)) == record()
    assert len(cache) == 1
    assert len(warned) == 1
    moved = tmp_path / "c.corrupt-1"
    assert str(directory) in warned[0] and str(moved) in warned[0]
    assert (moved / "cache.db").read_bytes() == damaged  # the user's data is kept
    assert VerdictCache(directory).get(key(3)) == record()


def test_damage_warns_with_cache_warning_by_default(tmp_path: Path) -> None:
    damage_with_garbage(tmp_path / "c")
    (tmp_path / "c.corrupt-1").mkdir()  # an earlier casualty is not overwritten
    with pytest.warns(CacheWarning, match="damaged"):
        VerdictCache(tmp_path / "c").put(key(1), record())
    assert (tmp_path / "c.corrupt-2" / "cache.db").exists()
    assert VerdictCache(tmp_path / "c").get(key(1)) == record()


def test_damage_found_while_running_is_recovered(tmp_path: Path) -> None:
    warned: list[str] = []
    cache = VerdictCache(tmp_path / "c", warn=warned.append)
    cache.put(key(1), record())
    opened = cache._db.handle

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise sqlite3.DatabaseError("database disk image is malformed")

    opened.get = broken
    assert cache.get(key(1)) is None
    cache.put(key(2), record())
    assert cache.get(key(2)) == record()
    assert len(warned) == 1
    assert (tmp_path / "c.corrupt-1" / "cache.db").exists()


def test_other_database_errors_are_not_mistaken_for_damage(tmp_path: Path) -> None:
    cache = VerdictCache(tmp_path / "c", warn=pytest.fail)
    cache.put(key(1), record())

    def locked(*args: Any, **kwargs: Any) -> Any:
        raise sqlite3.OperationalError("database is locked")

    cache._db.handle.get = locked
    with pytest.raises(sqlite3.OperationalError):
        cache.get(key(1))
    assert (tmp_path / "c" / "cache.db").exists()


def test_a_file_where_the_directory_should_be(tmp_path: Path) -> None:
    path = tmp_path / "file"
    path.write_text("not a cache")
    cache = VerdictCache(path)
    with pytest.raises(CacheDirectoryError, match=str(path)) as info:
        cache.put(key(1), record())
    assert isinstance(info.value, OSError)
    with pytest.raises(CacheDirectoryError, match="not a directory"):
        cache.get(key(1))


def test_a_directory_that_cannot_be_created(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(CacheDirectoryError, match="file"):
        VerdictCache(tmp_path / "file" / "sub").put(key(1), record())


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="needs a non-root POSIX user")
def test_an_unwritable_directory(tmp_path: Path) -> None:
    tmp_path.chmod(0o500)
    try:
        with pytest.raises(CacheDirectoryError, match=str(tmp_path)):
            VerdictCache(tmp_path / "c").put(key(1), record())
    finally:
        tmp_path.chmod(0o700)


# --- sharing and laziness ------------------------------------------------------------------


def _worker(directory: str, index: int, start: Any) -> None:
    """One xdist-like process: store 200 verdicts and read each back while the others write."""
    cache = VerdictCache(directory)
    start.wait(30)
    for n in range(200):
        k = cache_key({"worker": index, "n": n})
        cache.put(k, record(claim=f"{index}-{n}"))
        got = cache.get(k)
        assert got is not None and got["claim"] == f"{index}-{n}"
        other = cache.get(cache_key({"worker": (index + 1) % 4, "n": n}))
        assert other is None or other["claim"] == f"{(index + 1) % 4}-{n}"
    cache.close()


def test_four_processes_share_one_cache(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Event()
    workers = [
        ctx.Process(target=_worker, args=(str(tmp_path / "c"), index, start)) for index in range(4)
    ]
    for worker in workers:
        worker.start()
    start.set()
    for worker in workers:
        worker.join(600)  # a bound against a hang only: spawned processes are slow under load
    assert [worker.exitcode for worker in workers] == [0, 0, 0, 0]
    cache = VerdictCache(tmp_path / "c")
    assert len(cache) == 800
    for index in range(4):
        for n in range(200):
            got = cache.get(cache_key({"worker": index, "n": n}))
            assert got is not None and got["claim"] == f"{index}-{n}"


def test_threads_share_one_cache_object(tmp_path: Path) -> None:
    cache = VerdictCache(tmp_path)
    errors: list[BaseException] = []

    def run(index: int) -> None:
        try:
            for n in range(50):
                k = cache_key({"thread": index, "n": n})
                cache.put(k, record())
                assert cache.get(k) == record()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(cache) == 300 and cache.hits == 300 and len(cache.used_keys) == 300


def test_importing_the_module_does_not_import_diskcache(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "import pytest_propositions.store.cache as c\n"
        "cache = c.VerdictCache(sys.argv[1])\n"
        "cache.get(c.cache_key({'a': 1}))\n"
        "assert 'diskcache' not in sys.modules, 'imported too early'\n"
        "verdict = {'kind': 'check', 'claim': 'x', 'value': True}\n"
        "cache.put(c.cache_key({'a': 1}), {'model': 'm', 'recorded_at': '2025-01-01T00:00:00Z',"
        " 'verdict': verdict})\n"
        "assert 'diskcache' in sys.modules\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "c")], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr


def test_the_shared_tier_holds_a_disk_cache_rather_than_being_one(tmp_path: Path) -> None:
    """Both are verdict stores (``store.base.VerdictStore``); the shared tier composes the disk
    cache and the PostgreSQL store instead of extending the disk cache."""
    from pytest_propositions.store.postgres import PostgresStore
    from pytest_propositions.store.tiered import SharedVerdictCache

    store = PostgresStore("postgresql://ci@127.0.0.1:1/verdicts")  # never connected here
    shared = SharedVerdictCache(tmp_path, "replay", store=store)
    assert not isinstance(shared, VerdictCache)
    assert isinstance(shared.disk, VerdictCache) and shared.disk.directory == shared.directory
    assert (shared.mode, shared.used_keys) == ("replay", shared.disk.used_keys)
    assert shared.store_counts()["store_hits"] == 0
    disk = VerdictCache(tmp_path)
    assert disk.disk is disk and disk.store_counts() == {}
