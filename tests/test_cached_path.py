"""The cached path at scale (issue 52): a judge's read decodes only what the verdict needs, a
claim's outcome is redacted only when a remembered secret is in it, and the JSON report is
written by json's C encoder, a verdict a line. Keys: tests/test_recorded_keys.py."""

from __future__ import annotations

import dataclasses
import json
from json import encoder as json_encoder
from pathlib import Path
from typing import Any

import pytest

from pytest_propositions import record as record_module
from pytest_propositions import redaction
from pytest_propositions.judging.request import JudgeStats
from pytest_propositions.record import FiledJudgeError, Outcome, RunRecord
from pytest_propositions.reports.json_report import json_report, report_text, write_json_report
from pytest_propositions.settings import Settings
from pytest_propositions.store.cache import VerdictCache
from pytest_propositions.store.cache_record import lean_record, new_record, read_record
from pytest_propositions.store.key_material import KeyMaterial
from pytest_propositions.store.keys import canonical_json
from pytest_propositions.verdict import Usage, Verdict
from tests.support.active_run import active

SECRET = "sk-cachedpath-0123456789"
MATERIAL = KeyMaterial(
    model="openai/judge-model",
    prompt_version="2",
    kind="check",
    sampling={"temperature": 0},
    messages=(
        {"role": "system", "content": "You judge claims. " * 50},
        {"role": "user", "content": 'Claim: Oscar says "hi". Café ✓'},
    ),
)


def verdict(claim: str = "Oscar says hi.", **extra: Any) -> Verdict:
    return Verdict(
        kind="check",
        claim=claim,
        value=True,
        justification="Turn 2.",
        model="openai/judge-model",
        recorded_at="2026-01-02T03:04:05+00:00",
        key=MATERIAL.key,
        **extra,
    )


@pytest.fixture
def no_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(redaction, "_known", frozenset())


@pytest.fixture
def a_secret(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(redaction, "_known", frozenset())
    redaction.remember_secrets(SECRET)
    return SECRET


# -- a judge's read -------------------------------------------------------------------------------


def stored(tmp_path: Path, record: dict[str, Any]) -> VerdictCache:
    cache = VerdictCache(tmp_path / "verdicts")
    cache.put(MATERIAL.key, record)
    return cache


# What a judge reads of a record: the rest (the request, the claim and the reply again) is left
# undecoded.
READ = ("kind", "recorded_at", "verdict")


def test_a_judges_read_decodes_only_what_the_verdict_needs(
    tmp_path: Path, no_secrets: None
) -> None:
    record = new_record(verdict(), MATERIAL, "test_x.py::test_a")
    cache = stored(tmp_path, record)
    assert "request" in record
    read = cache.get(MATERIAL.key, "check")
    assert read == {name: record[name] for name in READ}
    assert cache.get(MATERIAL.key) == record  # maintenance reads the whole record


def test_the_verdict_read_lean_is_the_verdict_read_whole(tmp_path: Path, no_secrets: None) -> None:
    from pytest_propositions.store.cache_record import verdict_of_record

    record = new_record(
        verdict(reasoning='a "quoted" ,"request":{"data":"x"} text'), MATERIAL, None
    )
    text = canonical_json(record)
    whole = json.loads(text)
    lean = lean_record(text)
    assert lean is not None
    assert lean == {name: whole[name] for name in READ}
    assert verdict_of_record(lean, "check") == verdict_of_record(whole, "check")


@pytest.mark.parametrize(
    "text",
    [
        # The verdict inside another member: read whole.
        '{"a":{"kind":"check","recorded_at":"t","verdict":{}},"b":1}',
        # A member after the verdict.
        '{"claim":"c","kind":"check","recorded_at":"t","verdict":{},"x":{}}',
        # The kind inside an object opened before it.
        '{"a":{"x":1,"kind":"check","recorded_at":"t"},"verdict":{}}',
        # Not the canonical spelling: read whole.
        '{"claim": "c", "kind": "check", "recorded_at": "t", "verdict": {}}',
        # A string that spells the members: not members.
        '{"claim":"x,\\"kind\\":\\"check\\",\\"recorded_at\\":\\"t\\",","verdict":{}}',
        # No kind or no time of its own (another version's record).
        '{"claim":"c","recorded_at":"t","verdict":{}}',
        '{"claim":"c","kind":"check","verdict":{}}',
    ],
)
def test_a_record_not_spelled_as_stored_is_read_whole(text: str) -> None:
    assert lean_record(text) is None
    json.loads(text)  # and is JSON, which the whole read takes


def test_a_record_whose_own_kind_is_not_its_verdicts_is_damage_on_a_judges_read(
    tmp_path: Path, no_secrets: None
) -> None:
    # Written past the store's checks (another writer): the lean read still reads the record's
    # own kind, so the disagreement is a warning and a miss, never the verdict.
    import diskcache

    record = new_record(verdict(), MATERIAL, None)
    record["kind"] = "score"
    with diskcache.Cache(str(tmp_path / "verdicts")) as raw:
        raw.set(MATERIAL.key, canonical_json(record))
    warned: list[str] = []
    cache = VerdictCache(tmp_path / "verdicts", warn=warned.append)
    assert lean_record(canonical_json(record)) is not None
    assert cache.get(MATERIAL.key, "check") is None
    assert cache.damaged == {MATERIAL.key: "a check verdict in a record of kind 'score'"}
    assert len(warned) == 1
    cache.close()


def test_damage_outside_the_request_is_still_found() -> None:
    record = new_record(verdict(), MATERIAL, None)
    text = canonical_json(record)

    class Disk:
        def __init__(self, text: str) -> None:
            self.text = text

        def get(self, key: str) -> str:
            return self.text

    from pytest_propositions.store.cache_record import RecordDamage

    for broken in (text[:-1], text.replace('"verdict":{', '"verdict":{{', 1)):
        with pytest.raises(RecordDamage, match="not JSON"):
            read_record(Disk(broken), "k", verdict_only=True)


# -- the outcome filed --------------------------------------------------------------------------


def outcome(text: str = "", **fields: Any) -> Outcome:
    return Outcome(
        test_id="test_x.py::test_a" + text,
        verdict=verdict(),
        threshold=None,
        passed=True,
        **fields,
    )


def test_an_outcome_without_a_secret_is_filed_without_redacting(
    a_secret: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The cached path files one outcome a claim: searching its texts once for each secret is
    # all it costs when none holds one (nearly every claim), not a redaction of each field.
    def refused(value: Any, *args: Any) -> Any:
        raise AssertionError("redacted an outcome that holds no secret")

    monkeypatch.setattr(record_module, "redact_data", refused)
    monkeypatch.setattr(record_module, "redact_values", refused)
    plain = outcome(runs={"runs": [{"justification": "fine"}]}, escalated_from=verdict())
    record = RunRecord()
    record.add(plain)
    assert record.outcomes == [plain]


TEXT_PLACES = {
    "test_id": lambda s: outcome(s),
    "where": lambda s: outcome(where=f"test_x.py:{s}"),
    "by_call": lambda s: outcome(by_call=s),
    "made_by": lambda s: outcome(made_by=s),
    "the verdict's claim": lambda s: dataclasses.replace(outcome(), verdict=verdict(claim=s)),
    "the verdict's raw reply": lambda s: dataclasses.replace(
        outcome(), verdict=verdict(raw_reply=s)
    ),
    "the main judge's verdict": lambda s: outcome(escalated_from=verdict(reasoning=s)),
    "a run's data": lambda s: outcome(runs={"runs": [{"justification": f"x{s}"}]}),
    "a list in the runs' data": lambda s: outcome(runs={"verdicts": [[1, s]]}),
}


@pytest.mark.parametrize("place", TEXT_PLACES)
def test_a_secret_in_any_one_text_is_filed_redacted(a_secret: str, place: str) -> None:
    made = TEXT_PLACES[place](a_secret)
    assert a_secret in repr(made)
    record = RunRecord()
    record.add(made)
    assert a_secret not in repr(record.outcomes[0])


# -- the JSON report ---------------------------------------------------------------------------


def test_the_json_report_is_written_by_the_c_encoder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_secrets: None
) -> None:
    # json's pure-Python encoder (what indent= runs) is about three times slower: a report of
    # 10,000 claims spent 13-16% of a cached run's CPU in it.
    def refused(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the pure-Python JSON encoder wrote the report")

    monkeypatch.setattr(json_encoder, "_make_iterencode", refused)
    outcomes = [outcome(str(n)) for n in range(3)]
    payload = json_report(
        Settings(), JudgeStats(), outcomes, [FiledJudgeError("test_x.py::test_b", "E: x")]
    )
    path = tmp_path / "report.json"
    write_json_report(path, payload)
    text = path.read_text(encoding="utf-8")
    assert json.loads(text) == json.loads(json.dumps(payload))
    lines = text.splitlines()
    # A verdict a line, each a JSON value of its own: a report greps and diffs a claim at a time.
    verdict_lines = [line for line in lines if '"verdict": {' in line]
    assert len(verdict_lines) == 3
    for line in verdict_lines:
        assert json.loads(line.strip().rstrip(","))["verdict"]["claim"] == "Oscar says hi."
    assert lines[0] == "{" and lines[-1] == "}"
    # The records written as they are made (what a run writes) give the same file.
    payload = json_report(
        Settings(),
        JudgeStats(),
        outcomes,
        [FiledJudgeError("test_x.py::test_b", "E: x")],
        encoded=True,
    )
    write_json_report(path, payload)
    assert path.read_text(encoding="utf-8") == text


def test_the_json_report_makes_no_view_and_no_encoder_a_claim(
    monkeypatch: pytest.MonkeyPatch, no_secrets: None
) -> None:
    # At 10,000 claims the views made only to be turned into records, and an encoder made for
    # each line (what JSONEncoder.encode does), were a third of the report's time.
    from pytest_propositions.reports import json_report as json_report_module
    from pytest_propositions.reports import view as view_module

    outcomes = [
        outcome(str(n), runs={"runs": []} if n == 1 else None, escalated_from=verdict())
        for n in range(3)
    ]
    calibrations = {"openai/judge-model": {"n": 3}}.get
    wanted = [view_module.claim_view(o, "assert", calibrations).to_dict() for o in outcomes]
    plain = [view_module.claim_view(o).to_dict() for o in outcomes]
    expected = report_text(
        json_report(Settings(), JudgeStats(), outcomes, [], calibrations, encoded=True)
    )

    def refused(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("made per claim")

    monkeypatch.setattr(view_module.ClaimView, "__init__", refused)
    monkeypatch.setattr(json_encoder, "c_make_encoder", refused)
    monkeypatch.setattr(json_report_module._COMPACT, "encode", refused)
    assert [view_module.json_record(o, "assert", calibrations) for o in outcomes] == wanted
    payload = json_report(Settings(), JudgeStats(), outcomes, [], calibrations, encoded=True)
    assert report_text(payload) == expected
    assert [json_report_module.outcome_record(o) for o in outcomes] == plain


def test_the_json_report_is_written_without_its_whole_text_copied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_secrets: None
) -> None:
    # Joining each piece into a bigger one copied the 8.5 MB of a 10,000-claim report four
    # times (about two thirds of writing it); the file is the same text.
    from pytest_propositions.reports import json_report as json_report_module

    outcomes = [outcome(str(n)) for n in range(3)]
    payload = json_report(
        Settings(), JudgeStats(), outcomes, [FiledJudgeError("t.py::t", "E: é")], encoded=True
    )
    expected = report_text(payload)

    def refused(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the whole text made to be written")

    monkeypatch.setattr(json_report_module, "report_text", refused)
    path = tmp_path / "report.json"
    write_json_report(path, payload)
    assert path.read_text(encoding="utf-8") == expected


def test_the_records_order_is_their_sorted_order_ties_included() -> None:
    # Read from the outcomes (a record made only for ties), the order is the records' own.
    from pytest_propositions.reports.json_report import in_record_order, record_order
    from pytest_propositions.reports.view import json_record

    made = [
        outcome("t::b"),
        outcome("t::a", where="x.py:9"),
        outcome("t::a", where="x.py:3"),
        dataclasses.replace(outcome("t::a"), verdict=verdict(claim="A claim.")),
        outcome("t::c", where="x.py:2"),
        outcome("t::a", where="x.py:9"),
        outcome("t::c", where="x.py:1"),
    ]
    ordered = in_record_order(made, json_record)
    assert sorted(map(id, ordered)) == sorted(map(id, made))
    assert [json_record(o) for o in ordered] == sorted(map(json_record, made), key=record_order)


def test_a_verdicts_dict_is_its_fields_in_order() -> None:
    made = verdict(votes=(True, False))
    assert list(made.as_dict()) == [item.name for item in dataclasses.fields(Verdict)]
    assert made.as_dict()["votes"] == [True, False] and made.as_dict()["usage"] == {
        "prompt_tokens": 0,
        "completion_tokens": 0,
    }
    object.__setattr__(made, "extra", 1)  # not a field: never in the record
    assert "extra" not in made.as_dict()


def test_report_text_of_empty_lists_and_nesting() -> None:
    payload = {"a": [], "b": {"c": [1, {"d": "é"}]}, "e": [{"f": None}], "g": "x"}
    text = report_text(payload)
    assert json.loads(text) == payload
    assert '"é"' in text  # not escaped: the file is UTF-8


# -- a claim's own path ---------------------------------------------------------------------------


def test_a_claim_judged_now_is_not_quoted_for_an_await(
    judge_server: Any, monkeypatch: pytest.MonkeyPatch, no_secrets: None
) -> None:
    """The quoted claim names a claim left unawaited: a claim judged at once never needs it
    (redacting and folding its text was a twentieth of a cached claim)."""
    from pytest_propositions import assertions
    from pytest_propositions.checks import quote_claim
    from pytest_propositions.runtime import Runtime
    from tests.support.judge_server import verdict as scripted

    quoted: list[str] = []

    def quote(text: str) -> str:
        quoted.append(text)
        return quote_claim(text)

    monkeypatch.setattr(assertions, "quote_claim", quote)
    monkeypatch.setenv("PROP_API_KEY", "test-key-not-real")
    judge_server.default = scripted(True)
    runtime = Runtime(Settings(model="openai/judge-model", api_base=judge_server.base_url))
    runtime.current_test = "test_x.py::test_a"
    with active(runtime):
        found = assertions.assert_one(runtime, "Oscar: hi.", "Oscar says hi.", {})
    assert isinstance(found, Verdict) and found.value is True
    assert quoted == []


def test_a_verdict_read_back_is_built_without_its_init(monkeypatch: pytest.MonkeyPatch) -> None:
    # A cached run reads a verdict a claim: setting 18 fields one by one through the frozen
    # class's __init__ was a third of building it.
    made = verdict(votes=(True,), usage=Usage(3, 4), confidence=0.5)
    stored = {**made.stored(), "cached": True}
    wanted = Verdict(**{**vars(made), "cached": True})

    def refused(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("built through __init__")

    monkeypatch.setattr(Verdict, "__init__", refused)
    read = Verdict.from_dict(stored, recorded_at=made.recorded_at, key=made.key)
    assert read == wanted and list(vars(read)) == list(vars(wanted))
    assert read.as_dict() == wanted.as_dict()
    monkeypatch.undo()
    with pytest.raises(ValueError, match="not a verdict"):
        Verdict.from_dict({**stored, "surprise": 1})
    with pytest.raises(ValueError, match="not a verdict"):
        Verdict.from_dict({name: v for name, v in stored.items() if name != "claim"})
    with pytest.raises(ValueError, match="must be True or False"):
        Verdict.from_dict({**stored, "value": 3})
