"""A key's material (``store.key_material.KeyMaterial``): the keys every existing cache was
written under, pinned; each field hashed, kept in the record, read back, compared and turned
back into a request; and a replay miss that names the one field that changed."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from pytest_propositions.judging import judge as judge_module
from pytest_propositions.judging.endpoint import Connection
from pytest_propositions.judging.judge import Judge, JudgeRequest
from pytest_propositions.settings import Settings
from pytest_propositions.store.cache_record import new_record, pack_request, record_material
from pytest_propositions.store.key_material import KeyMaterial
from pytest_propositions.store.replay_miss import differences
from pytest_propositions.verdict import Verdict
from tests.support.judge_server import ScriptedJudge, verdict

HOSTED = Connection("openai/judge-model", "openai/judge-model", "http://127.0.0.1:9/v1", "k")
GREEDY = Connection(
    "sha256:aaa",
    "openai/local",
    "http://127.0.0.1:9/v1",
    "k",
    sampling={"temperature": 0, "seed": 7},
)
MESSAGES = (
    {"role": "system", "content": "You judge claims."},
    {"role": "user", "content": "Claim: Oscar says hello. Café ✓"},
)

# Computed by the code before KeyMaterial existed (the judge's dict, hashed by keys.cache_key),
# with prompt version "2": a change of these bytes would orphan every recorded verdict.
PINNED: list[tuple[str, Connection, dict[str, Any], str]] = [
    ("check", HOSTED, {}, "59227254930b03c9786a0c2aa899fcaebde1ca77af25aa285756e3d0df93d45e"),
    ("score", HOSTED, {}, "4b3f9a7060fbfefff0ff278d772698e8538baa0a7dd6fdbf82c8d1d3ff95d14e"),
    (
        "check",
        HOSTED,
        {"double_check": True},
        "834d3631a0f7354d731ad8f3aa3b344063edbd603cb7125e5f69bdad6248fc40",
    ),
    (
        "check",
        HOSTED,
        {"sample_index": 2},
        "23eb43e87e6f01b07adfdb74bb4df4a9f0408f608171c6d67a8114cff3929548",
    ),
    (
        "check",
        HOSTED,
        {"run_index": 3},
        "acd9dd4c4b8f73eb0bdcda58b333351e4bb7a069db50a7641d70a43286189a0c",
    ),
    # A greedy judge's run number is not keyed: the key of run 0.
    (
        "check",
        GREEDY,
        {"run_index": 3},
        "9f06ea554cb2613c21e5afa6f03e4fca25be4d9800b7c871a4e0f574a3e9cc6d",
    ),
    (
        "score",
        GREEDY,
        {"double_check": True, "sample_index": 1},
        "5cec529ecf119ed9e0d2ce812204a6265ad71ea0d7d1aac943cfeb3ce8d7a52d",
    ),
]


@pytest.fixture
def judge(monkeypatch: pytest.MonkeyPatch) -> Judge:
    monkeypatch.setattr(judge_module, "PROMPT_VERSION", "2")
    return Judge(Settings(model="openai/judge-model", api_base="http://127.0.0.1:9/v1"))


@pytest.mark.filterwarnings("ignore:samples > 1 asks")
@pytest.mark.parametrize(("kind", "connection", "extra", "key"), PINNED)
def test_the_keys_recorded_before_stay_the_same(
    judge: Judge, kind: str, connection: Connection, extra: dict[str, Any], key: str
) -> None:
    request = JudgeRequest(kind, "c", "m", MESSAGES, **extra)  # type: ignore[arg-type]
    material = judge._key_material(request, connection)
    assert material.key == key
    # The same key from the material written out by hand: the encoding, not the judge, decides.
    by_hand = KeyMaterial(
        model=connection.identity,
        prompt_version="2",
        kind=kind,  # type: ignore[arg-type]
        sampling=dict(material.sampling),
        messages=MESSAGES,
        double_check=extra.get("double_check", False),
        sample_index=extra.get("sample_index", 0),
        run_index=extra.get("run_index", 0) if connection is HOSTED else 0,
    )
    assert by_hand.key == key


def test_a_record_keeps_the_request_bytes_it_kept_before(judge: Judge) -> None:
    """The stored request of the first pinned case, as the dict the judge built before."""
    material = judge._key_material(JudgeRequest("check", "c", "m", MESSAGES), HOSTED)
    before = {
        "double_check": False,
        "kind": "check",
        "messages": [dict(m) for m in MESSAGES],
        "model": "openai/judge-model",
        "prompt_version": "2",
        "sample_index": 0,
        "sampling": {"temperature": 0.5},
    }
    assert material.as_json() == before
    assert _record(material)["request"] == pack_request(before)
    assert pack_request(before)["data"] == (
        "eNpNjksKwjAURbcS3riUIjjJtAtwLCIS09ePzafkJWIpWYVTN+A63Ikr8YmCTu853HsXaHw6GjzoHvUI"
        "slWGsIBxcA1I+IQFWCRSHRLI3QLau4guMt76JE6p6VBoowZLJavBG2REM0W0kIt/v35bUmxIqyBIzSR6"
        "NMaXolbt4y6et+uvIBEGyPsCpuDtFA9nDDR4x2TFEik78Wl+iReQ1TcYXAdyAR6eMKiYAhdV5TrnFwZVUAo="
    )


# -- every field: hashed, kept, read back, compared, asked again -------------------------------

# A value off its default for each field, and another one: a field added to KeyMaterial and not
# to this table fails the first test below.
VALUES: dict[str, tuple[Any, Any]] = {
    "model": ("openai/judge-model", "openai/newer"),
    "prompt_version": ("2", "3"),
    "kind": ("score", "check"),
    "sampling": ({"temperature": 0.5}, {"temperature": 0.25}),
    "messages": (MESSAGES, (MESSAGES[0], {"role": "user", "content": "Claim: Oscar says bye."})),
    "double_check": (True, False),
    "sample_index": (2, 0),
    "run_index": (3, 4),
}
FULL = KeyMaterial(**{name: value for name, (value, _) in VALUES.items()})
_NAMES = [field.name for field in dataclasses.fields(KeyMaterial)]


def _record(material: KeyMaterial) -> dict[str, Any]:
    value: bool | int = 7 if material.kind == "score" else True
    judged = Verdict(material.kind, "c", value, model=material.model, key=material.key)
    return new_record(judged, material, "test_x.py::test_a")


def test_every_field_has_values_here_and_is_in_the_canonical_form() -> None:
    assert list(VALUES) == _NAMES
    assert set(FULL.as_json()) == set(_NAMES)


@pytest.mark.parametrize("name", _NAMES)
def test_every_field_changes_the_key(name: str) -> None:
    assert dataclasses.replace(FULL, **{name: VALUES[name][1]}).key != FULL.key


@pytest.mark.parametrize("name", _NAMES)
def test_every_field_is_kept_in_the_record_and_read_back(name: str) -> None:
    other = dataclasses.replace(FULL, **{name: VALUES[name][1]})
    for material in (FULL, other):
        assert record_material(_record(material)) == material
        assert KeyMaterial.from_json(material.as_json()) == material


@pytest.mark.parametrize("name", _NAMES)
def test_every_field_is_compared_and_named_when_it_alone_changed(name: str) -> None:
    recorded = dataclasses.replace(FULL, **{name: VALUES[name][1]})
    [(changed, old, new)] = FULL.changes(recorded.as_json())
    assert changed == name
    assert (old, new) == (recorded.as_json()[name], FULL.as_json()[name])
    [said] = differences(recorded.as_json(), FULL)
    if name == "messages":
        assert said == "the claim or recording: 'bye.' -> 'hello. Café ✓'"
    else:
        label = "prompt version" if name == "prompt_version" else name
        assert said == f"{label} {old!r} -> {new!r}"


def test_run_zero_is_left_out_of_the_form_and_read_back_as_zero() -> None:
    first = dataclasses.replace(FULL, run_index=0)
    assert "run_index" not in first.as_json()
    assert record_material(_record(first)) == first
    assert [name for name, _, _ in FULL.changes(first.as_json())] == ["run_index"]
    # A record kept without its request names only its model and prompt version.
    assert differences({"model": "openai/older", "prompt_version": "2"}, first) == [
        "model 'openai/older' -> 'openai/judge-model'"
    ]


def test_a_stored_form_that_is_no_material_is_refused() -> None:
    form = FULL.as_json()
    for broken, why in (
        ({k: v for k, v in form.items() if k != "messages"}, "no 'messages'"),
        ({**form, "extra": 1}, "unknown fields 'extra'"),
        ({**form, "kind": "vibe"}, "'kind' is not one of check, score"),
        ({**form, "sample_index": "2"}, "'sample_index' is not a int"),
        ({**form, "messages": "hi"}, "'messages' is not a list of objects"),
    ):
        with pytest.raises(ValueError, match=why):
            KeyMaterial.from_json(broken)


def test_a_material_read_back_asks_the_request_the_judge_keys_as_it(judge: Judge) -> None:
    """``cache rejudge``'s way back: every field of the request the judge keys is asked again;
    the judge supplies the rest (its identity, prompt version and sampling)."""
    request = JudgeRequest(
        "score", "c", "openai/judge-model", MESSAGES, True, 2, "test_x.py::test_a", run_index=3
    )
    material = judge._key_material(request, HOSTED)
    read = record_material(_record(material))
    assert read is not None
    again = JudgeRequest.asking(
        read, claim="c", model="openai/judge-model", test_id=request.test_id
    )
    assert again == request
    assert judge._key_material(again, HOSTED) == material


def test_every_field_the_judge_does_not_supply_goes_to_the_request_and_back(judge: Judge) -> None:
    from_judge = {"model", "prompt_version", "sampling"}
    asked = JudgeRequest.asking(FULL, claim="c", model="openai/judge-model")
    keyed = judge._key_material(asked, HOSTED)
    for field in dataclasses.fields(KeyMaterial):
        if field.default is not dataclasses.MISSING:
            assert VALUES[field.name][0] != field.default, field.name  # a change to carry
        if field.name not in from_judge:
            assert getattr(asked, field.name) == getattr(FULL, field.name), field.name
            assert getattr(keyed, field.name) == getattr(FULL, field.name), field.name


# -- a replay miss names the run number -----------------------------------------------------------


def test_a_replay_miss_of_another_run_names_the_run_index(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, inner_run: list[str], tmp_path: Path
) -> None:
    """Every run's transcript is the same: only the run number tells their requests apart, and
    the miss says so instead of blaming the key's format."""
    judge_server.default = verdict(True, justification="He says hello.")
    test = """
        from pytest_propositions import runs
        def test_hello(assert_proposition):
            assert_proposition(
                runs(lambda run: "Oscar says hello.", max_runs=RUNS), "Oscar greets.",
                every_run=True,
            )
        """
    cached = [a for a in inner_run if a != "--prop-cache=off"] + [f"--prop-cache-dir={tmp_path}"]
    pytester.makepyfile(test.replace("RUNS", "2"))
    pytester.runpytest_inprocess(*cached).assert_outcomes(passed=1)
    asked = len(judge_server.requests)
    pytester.makepyfile(test.replace("RUNS", "3"))
    result = pytester.runpytest_inprocess(*cached, "--prop-cache=replay")
    result.stdout.fnmatch_lines(["*VerdictMissing*differs in: run_index * -> 2.*"])
    result.stdout.no_fnmatch_line("*nothing visible*")
    assert len(judge_server.requests) == asked
