"""The Verdict dataclass: its invariants, its stored form, and the checks on data from outside.

No judge server: a stand-in cache hands ``Judge.evaluate`` the records under test.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_propositions.errors import DryRunSkip, VerdictMissing
from pytest_propositions.judging.judge import Judge, JudgeRequest
from pytest_propositions.settings import Settings
from pytest_propositions.store.cache import (
    CacheWarning,
    ImportLineError,
    InvalidRecordError,
    VerdictCache,
    cache_key,
    canonical_json,
)
from pytest_propositions.verdict import Usage, Verdict, check_stored_verdict, combine_samples
from tests.support.records import line as kept_line

FULL = Verdict(
    kind="score",
    claim="Oscar stays in character.",
    value=6,
    justification="He keeps to architecture.",
    reasoning="Turns 1-3 all fit the persona.",
    confidence=0.75,
    model="openai/judge-model",
    cached=True,
    recorded_at="2025-03-01T12:00:00+00:00",
    key="ab" * 32,
    usage=Usage(prompt_tokens=420, completion_tokens=60),
    cost_usd=0.0002,
    judge_seconds=1.5,
    raw_reply='{"value": 6}',
    revised_from=7,
    votes=(6, 7, 5),
)


def stored(**changes: Any) -> dict[str, Any]:
    data = FULL.stored()
    data.update(changes)
    return data


# -- invariants ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "match"),
    [
        ({"kind": "check", "value": 1}, "True or False"),
        ({"kind": "check", "value": "true"}, "True or False"),
        ({"kind": "score", "value": True}, "whole number from 0 to 9"),
        ({"kind": "score", "value": 10}, "whole number from 0 to 9"),
        ({"kind": "score", "value": 6.0}, "whole number from 0 to 9"),
        ({"kind": "bool", "value": True}, "'check' or 'score'"),
        ({"kind": "check", "value": True, "confidence": 1.5}, "confidence"),
    ],
)
def test_a_verdict_refuses_values_no_report_could_trust(fields: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        Verdict(claim="c", **fields)


def test_a_verdict_is_frozen() -> None:
    with pytest.raises(AttributeError):
        FULL.value = 9  # type: ignore[misc]


# -- plain data and back ---------------------------------------------------------------------------


def test_as_dict_is_json_and_loads_back_equal() -> None:
    data = json.loads(json.dumps(FULL.as_dict()))
    assert data["votes"] == [6, 7, 5]
    assert data["usage"] == {"prompt_tokens": 420, "completion_tokens": 60}
    assert Verdict.from_dict(data) == FULL


def test_the_stored_form_leaves_out_what_only_one_run_knows() -> None:
    data = FULL.stored()
    assert not {"cached", "recorded_at", "key", "judge_seconds"} & set(data)
    again = Verdict.from_dict(
        data, cached=True, recorded_at="2025-03-01T12:00:00+00:00", key="ab" * 32
    )
    assert again == FULL.replace(judge_seconds=0.0)


@pytest.mark.parametrize(
    "data",
    [
        {"claim": "c", "value": True},  # no kind
        {"kind": "check", "claim": "c", "value": True, "verdict_v2": 1},
        {"kind": "check", "claim": "c", "value": True, "usage": {"tokens": 3}},
        {"kind": "check", "claim": "c", "value": "yes"},
    ],
)
def test_from_dict_raises_value_error_on_anything_else(data: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=r"verdict|True or False"):
        Verdict.from_dict(data)


def test_combining_samples_keeps_votes_and_sums_usage() -> None:
    samples = [FULL.replace(value=v, votes=(), usage=Usage(10, 2)) for v in (4, 8, 6)]
    combined = combine_samples(samples)
    assert (combined.value, combined.votes) == (6, (4, 8, 6))
    assert combined.usage == Usage(30, 6)


@pytest.mark.parametrize(
    ("values", "holds", "expected"),
    [
        ((True, False), True, False),
        ((True, False), False, True),
        ((True, True, False), False, True),
        ((False, False, True), False, False),
        ((8, 2, 8, 2), True, 2),
        ((8, 2, 8, 2), False, 8),
        ((3, 5, 7), False, 5),
    ],
)
def test_ties_between_samples_go_against_the_expectation(
    values: tuple[bool | int, ...], holds: bool, expected: bool | int
) -> None:
    kind = "check" if isinstance(values[0], bool) else "score"
    samples = [FULL.replace(kind=kind, value=v, votes=()) for v in values]
    assert combine_samples(samples, holds).value == expected


# -- data from outside: strict -----------------------------------------------------------------------


def test_a_stored_verdict_passes_the_strict_check() -> None:
    check_stored_verdict(json.loads(json.dumps(stored())))


@pytest.mark.parametrize(
    ("data", "match"),
    [
        ("a verdict", "JSON object"),
        (stored(value="6"), "value"),
        (stored(value=6.0), "value"),
        (stored(confidence="high"), "confidence"),
        (stored(votes="667"), "votes"),
        (stored(extra_field=1), "extra_field"),
        (stored(cached=True), "no cached field"),
        ({k: v for k, v in stored().items() if k != "claim"}, "claim"),
        (stored(kind="check"), "True or False"),
    ],
)
def test_the_strict_check_names_what_is_wrong(data: Any, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        check_stored_verdict(data)


def test_an_import_line_with_a_bad_verdict_is_refused_and_nothing_is_written(
    tmp_path: Path,
) -> None:
    good = {"model": "m", "recorded_at": "2025-03-01T12:00:00+00:00", "verdict": stored()}
    bad = {**good, "verdict": stored(value="six")}
    lines = [kept_line(1, good), kept_line(2, bad)]
    with VerdictCache(tmp_path / "c") as cache:
        with pytest.raises(ImportLineError, match=r'line 2: bad "record": bad "verdict".*value'):
            cache.import_lines(lines)
        assert cache.stats().entries == 0
        with pytest.raises(InvalidRecordError, match='bad "verdict"'):
            cache.put(cache_key({"n": 2}), bad)


# -- the cached path ------------------------------------------------------------------------------


class OneRecordCache:
    """Stands in for a replay-mode VerdictCache holding one record under every key."""

    mode = "replay"

    def __init__(self, record: dict[str, Any]) -> None:
        self.record = record

    def get(self, key: str, kind: str | None = None) -> dict[str, Any]:
        return self.record


def evaluate(record: dict[str, Any]) -> Verdict:
    settings = Settings(model="openai/judge-model", cache="replay")
    judge = Judge(settings, cache=OneRecordCache(record))  # type: ignore[arg-type]
    request = JudgeRequest("score", "Oscar stays in character.", settings.model, ())
    return judge.evaluate(request)


def test_a_cached_record_reads_back_as_the_verdict_it_stored() -> None:
    verdict = evaluate({"recorded_at": "2025-03-01T12:00:00+00:00", "verdict": stored()})
    assert verdict.cached and verdict.recorded_at == "2025-03-01T12:00:00+00:00"
    assert (verdict.value, verdict.votes, verdict.usage) == (6, (6, 7, 5), FULL.usage)
    assert len(verdict.key) == 64


@pytest.mark.parametrize(
    "record",
    [
        {"recorded_at": "2025-03-01T12:00:00+00:00"},  # no verdict at all
        {"verdict": stored(value=12)},
        {"verdict": stored(renamed_field="x")},
    ],
)
def test_an_unreadable_cached_record_is_a_miss_with_a_warning(record: dict[str, Any]) -> None:
    # In replay mode the miss raises VerdictMissing: the judge is never called.
    with (
        pytest.warns(CacheWarning, match="not a verdict this version can read"),
        pytest.raises(VerdictMissing),
    ):
        evaluate(record)


def test_reading_a_verdict_back_does_not_import_pydantic() -> None:
    code = (
        "import sys\n"
        "from pytest_propositions.verdict import Verdict\n"
        f"data = {stored()!r}\n"
        "Verdict.from_dict(data, cached=True)\n"
        "Verdict.from_dict(data).as_dict()\n"
        "assert 'pydantic' not in sys.modules, 'pydantic was imported'\n"
        "from pytest_propositions.verdict import check_stored_verdict\n"
        "check_stored_verdict(data)\n"
        "assert 'pydantic' in sys.modules\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


# -- a verdict of the other kind under a claim's key ----------------------------------------------


def _other_kind_line(judge: Judge, request: JudgeRequest, stored_kind: str) -> tuple[str, str]:
    """An export line holding a ``stored_kind`` verdict under ``request``'s key."""
    key = judge._key_material(request, judge._connection(request.model)).key
    value: bool | int = True if stored_kind == "check" else 9
    record = {
        "claim": request.claim,
        "kind": stored_kind,
        "model": request.model,
        "recorded_at": "2025-03-01T12:00:00+00:00",
        "verdict": {"kind": stored_kind, "claim": request.claim, "value": value},
    }
    return key, canonical_json({"key": key, "record": record})


@pytest.mark.parametrize(("stored", "asked"), [("check", "score"), ("score", "check")])
@pytest.mark.parametrize("mode", ["replay", "use"])
def test_a_verdict_of_the_other_kind_is_a_damaged_record_never_a_pass(
    tmp_path: Path, stored: str, asked: str, mode: str
) -> None:
    """Stored (the record itself is consistent), then looked up by a claim of the other kind:
    a warning naming the key and a miss, never that verdict and never a crash. (An import
    refuses such a line, its key not being its request's; a cache written otherwise, by an
    older import or from a shared store's row, can still hold one.)"""
    settings = Settings(model="openai/judge-model", cache=mode, dry_run=mode == "use")
    cache = VerdictCache(tmp_path / "verdicts", mode)  # type: ignore[arg-type]
    judge = Judge(settings, cache=cache)
    request = JudgeRequest(asked, "Oscar stays in character.", settings.model, ())  # type: ignore[arg-type]
    key, line = _other_kind_line(judge, request, stored)
    with VerdictCache(tmp_path / "verdicts") as writer:
        writer.put(key, json.loads(line)["record"])
    with pytest.warns(CacheWarning) as caught, pytest.raises((VerdictMissing, DryRunSkip)):
        judge.evaluate(request)
    message = " ".join(str(w.message) for w in caught)
    assert key[:16] in message and f"a {stored} verdict under the key of a {asked} claim" in message
    assert cache.damaged == {key: f"a {stored} verdict under the key of a {asked} claim"}


def test_a_record_whose_kinds_disagree_is_refused_at_import(tmp_path: Path) -> None:
    record = {
        "kind": "score",
        "model": "m",
        "recorded_at": "2025-03-01T12:00:00+00:00",
        "verdict": {"kind": "check", "claim": "c", "value": True},
    }
    line = json.dumps({"key": "a" * 64, "record": record})
    with pytest.raises(ImportLineError, match="a check verdict in a record of kind 'score'"):
        VerdictCache(tmp_path / "verdicts").import_lines([line])
