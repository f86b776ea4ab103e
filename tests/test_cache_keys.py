"""What decides a verdict's cache key, computed through the real claim-to-request path.

No judge server: a stand-in cache answers every key, so ``Proposition.evaluate`` runs the whole
path (claim templating, target rendering, message building, ``Judge.evaluate``'s key) and the
verdict it returns carries the key that was looked up.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import string
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from pytest_propositions.claims.proposition import Proposition, render_claim
from pytest_propositions.claims.targets import RenderOptions, render_context
from pytest_propositions.judging import families
from pytest_propositions.judging import judge as judge_module
from pytest_propositions.judging.endpoint import Connection
from pytest_propositions.judging.judge import Judge, JudgeRequest
from pytest_propositions.judging.prompts import build_messages
from pytest_propositions.runtime import Runtime
from pytest_propositions.settings import Settings
from pytest_propositions.store import keys as keys_module
from pytest_propositions.store.cache import cache_key
from pytest_propositions.store.keys import canonical_json
from pytest_propositions.trace import Agent, World

BASE = Settings(model="openai/judge-model", api_base="http://127.0.0.1:9/v1")
CLAIM = "Oscar talks about {{topic}}."
VARIABLES = {"topic": "travel"}


class AnyKeyCache:
    """Stands in for a VerdictCache in use mode: every key hits, and is remembered."""

    mode = "use"

    def __init__(self) -> None:
        self.keys: list[str] = []

    def get(self, key: str, kind: str = "check") -> dict[str, Any]:
        self.keys.append(key)
        return {
            "recorded_at": "2025-01-01T00:00:00+00:00",
            "verdict": {"kind": kind, "claim": "stand-in", "value": True if kind == "check" else 9},
        }


def make_world(line: str = "Quiet cities with great architecture.") -> World:
    oscar = Agent("Oscar", persona={"occupation": "architect"})
    room = World("Room", agents=[oscar])
    oscar.hears("Where do you like to travel?")
    oscar.says(line)
    oscar.says("I also like trains.")
    return room


def key_of(
    claim: str = CLAIM,
    target: Any = None,
    *,
    kind: str = "check",
    claim_variables: dict[str, Any] | None = None,
    additional_context: str | None = None,
    settings: Settings = BASE,
    test_id: str | None = "test_x.py::test_a",
    sample_index: int = 0,
    **options: Any,
) -> str:
    """The key ``Judge.evaluate`` looks up for this claim, through the Proposition path."""
    runtime = Runtime(settings)
    cache = AnyKeyCache()
    runtime._judge = Judge(settings, cache=cache)  # type: ignore[arg-type]
    runtime.current_test = test_id
    verdict = Proposition(claim, make_world() if target is None else target, **options).evaluate(
        kind,  # type: ignore[arg-type]
        additional_context=additional_context,
        claim_variables=VARIABLES if claim_variables is None else claim_variables,
        sample_index=sample_index,
        runtime=runtime,
    )
    assert cache.keys == [verdict.key], "one lookup, and the verdict names its key"
    return verdict.key


def test_the_key_is_the_hash_of_the_rendered_request() -> None:
    judge = Judge(BASE, cache=None)
    claim = render_claim(CLAIM, VARIABLES)
    context = render_context([make_world()], RenderOptions())
    request = JudgeRequest(
        kind="check",
        claim=claim,
        model=BASE.model,
        messages=tuple(build_messages("check", claim, context, None)),
    )
    material = judge._key_material(request, judge._connection(BASE.model))
    assert key_of() == material.key
    assert list(material.messages) == build_messages("check", claim, context, None)
    assert material.model == "openai/judge-model"


def test_identical_inputs_give_identical_keys() -> None:
    first = key_of()
    assert len(first) == 64 and set(first) <= set("0123456789abcdef")
    assert key_of() == first  # a fresh, equal world and a fresh runtime and judge
    assert key_of(claim="Oscar talks about travel.", claim_variables={}) == first
    assert key_of(kind="score") == key_of(kind="score")


VARIANTS: dict[str, dict[str, Any]] = {
    "claim": {"claim": "Oscar talks about {{topic}} a lot."},
    "claim variable value": {"claim_variables": {"topic": "trains"}},
    "context": {"target": make_world("Noisy cities with great food.")},
    "a string target": {"target": "Oscar acts: [TALK] Quiet cities."},
    "model": {"settings": dataclasses.replace(BASE, model="openai/another-judge")},
    "reasoning model": {
        "settings": dataclasses.replace(BASE, reasoning_model="openai/thinker"),
        "use_reasoning_model": True,
    },
    "kind (and temperature)": {"kind": "score"},
    "double_check": {"double_check": True},
    "sample_index": {"sample_index": 1},
    "additional context": {"additional_context": "Only the first turn counts."},
    "personas": {"include_personas": True},
    "window": {"last_n": 1},
}


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_input_of_the_request_changes_the_key(variant: str) -> None:
    assert key_of(**VARIANTS[variant]) != key_of()


def test_all_variants_are_mutually_distinct() -> None:
    keys = {name: key_of(**options) for name, options in VARIANTS.items()}
    assert len(set(keys.values())) == len(VARIANTS), keys


def test_the_sampling_temperature_is_part_of_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    # Kind and temperature move together in real use; change the temperature alone here.
    before = key_of()
    monkeypatch.setitem(families.TEMPERATURE, "check", 0.25)
    assert key_of() != before
    monkeypatch.undo()
    assert key_of() == before


def test_the_prompt_version_is_part_of_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    before = key_of()
    monkeypatch.setattr(judge_module, "PROMPT_VERSION", "999-test")
    assert key_of() != before
    monkeypatch.undo()
    assert key_of() == before


def test_the_key_names_the_connection_identity_not_its_endpoint() -> None:
    # A managed local model is named by its file's checksum; its port changes every run.
    judge = Judge(BASE, cache=None)
    request = JudgeRequest("check", "c", "local", ({"role": "user", "content": "c"},))

    def key(identity: str, api_base: str) -> str:
        connection = Connection(identity, "openai/local", api_base, "no-key")
        return judge._key_material(request, connection).key

    assert key("sha256:aaa", "http://127.0.0.1:1/v1") == key("sha256:aaa", "http://127.0.0.1:2/v1")
    assert key("sha256:aaa", "http://127.0.0.1:1/v1") != key("sha256:bbb", "http://127.0.0.1:1/v1")


def test_the_endpoint_and_credentials_do_not_change_the_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PROP_API_KEY", "first-key-value")
    before = key_of()
    for api_base in (None, "http://127.0.0.1:1/v1", "https://judge.example/v1"):
        assert key_of(settings=dataclasses.replace(BASE, api_base=api_base)) == before
    monkeypatch.setenv("PROP_API_KEY", "second-key-value")
    assert key_of() == before
    monkeypatch.delenv("PROP_API_KEY")
    monkeypatch.setenv("OPENAI_API_KEY", "third-key-value")
    assert key_of() == before


def test_run_settings_that_do_not_decide_a_verdict_do_not_change_the_key(tmp_path: Any) -> None:
    before = key_of()
    for changed in (
        dataclasses.replace(BASE, timeout=5.0),
        dataclasses.replace(BASE, retries=0),
        dataclasses.replace(BASE, min_score=2),
        dataclasses.replace(BASE, cache="refresh", cache_dir=str(tmp_path)),
        dataclasses.replace(BASE, reasoning_model="openai/thinker"),  # not used by this claim
    ):
        assert key_of(settings=changed) == before, changed
    # Nor does the test the claim is made in: a moved or renamed test keeps its verdicts.
    assert key_of(test_id="test_y.py::test_b") == before
    assert key_of(test_id=None) == before


def test_the_key_material_holds_no_endpoint_or_credential(monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "sk-" + "Q" * 24
    monkeypatch.setenv("PROP_API_KEY", secret)
    judge = Judge(BASE, cache=None)
    connection = judge._connection(BASE.model)
    assert connection.api_key == secret  # the judge does hold it, for the call
    request = JudgeRequest("check", "c", BASE.model, ({"role": "user", "content": "c"},))
    text = json.dumps(judge._key_material(request, connection).as_json())
    assert secret not in text
    assert "127.0.0.1:9" not in text


# -- properties -------------------------------------------------------------------------------------

# Braces are mustache syntax (a claim template); any other text is a literal claim.
claims = st.text(
    alphabet=st.characters(codec="utf-8", exclude_characters="{}"),
    min_size=1,
    max_size=80,
).filter(lambda claim: claim.strip() != "")


@settings(deadline=None, max_examples=60)
@given(first=claims, second=claims)
def test_distinct_claims_have_distinct_keys(first: str, second: str) -> None:
    # The judge is asked about the claim with its surrounding whitespace stripped.
    same_request = first.strip() == second.strip()
    assert (key_of(first, claim_variables={}) == key_of(second, claim_variables={})) == same_request


# Whitespace gets its own share of the draws: a key that normalizes it inside a claim is a bug.
claim_chars = st.one_of(
    st.sampled_from(" \t\n"),
    st.sampled_from(string.ascii_letters),
    st.characters(codec="utf-8", exclude_characters="{}"),
)


@settings(deadline=None, max_examples=100)
@given(data=st.data())
def test_a_one_character_edit_anywhere_changes_the_key(data: st.DataObject) -> None:
    # Near misses: a claim body of any length up to 400 (drawn first, so long bodies are as
    # likely as short ones) with one character inserted, replaced or removed anywhere. The
    # frame keeps the edit inside the claim, away from the whitespace the judge's prompt strips.
    length = data.draw(st.integers(0, 400), label="length")
    body = data.draw(st.text(claim_chars, min_size=length, max_size=length), label="body")
    index = data.draw(st.integers(0, len(body)), label="index")
    char = data.draw(claim_chars, label="char")
    edited = data.draw(
        st.sampled_from(
            [
                body[:index] + char + body[index:],
                body[:index] + char + body[index + 1 :],
                body[:index] + body[index + 1 :],
            ]
        ),
        label="edited",
    )
    assume(edited != body)
    assert key_of(f"Claim: {body}.", claim_variables={}) != key_of(
        f"Claim: {edited}.", claim_variables={}
    )


@settings(deadline=None, max_examples=40)
@given(
    first=st.text(alphabet=st.characters(codec="utf-8"), max_size=40),
    second=st.text(alphabet=st.characters(codec="utf-8"), max_size=40),
)
def test_distinct_variable_values_have_distinct_keys(first: str, second: str) -> None:
    keys = {key_of(claim_variables={"topic": value}) for value in (first, second)}
    assert len(keys) == (1 if first == second else 2)


# -- the key's text: the canonical JSON of the request, whatever it holds -------------------------

_TEXTS = st.text(st.characters(codec="utf-8") | st.sampled_from(["\x00", '"', "\\", "\ud800"]))
_JSON_SCALARS = st.none() | st.booleans() | st.integers() | _TEXTS


def _messages() -> st.SearchStrategy[Any]:
    message = st.fixed_dictionaries(
        {"role": st.sampled_from(["system", "user", "assistant"]), "content": _TEXTS}
    )
    odd = st.dictionaries(_TEXTS, _JSON_SCALARS, max_size=3)  # not the usual two fields
    return st.lists(message | odd | _JSON_SCALARS, max_size=4)


@settings(max_examples=300, deadline=None)
@given(
    messages=_messages(),
    others=st.dictionaries(
        st.sampled_from(["kind", "model", "a", "messages_", "z", "sampling"]),
        _JSON_SCALARS | st.lists(_TEXTS, max_size=2),
        max_size=4,
    ),
)
def test_the_key_text_is_the_canonical_json_of_the_request(
    messages: list[Any], others: dict[str, Any]
) -> None:
    # Whatever the request holds, the text hashed is its canonical JSON.
    material = {**others, "messages": messages}
    full = {"cache_format": keys_module.CACHE_FORMAT, **material}
    try:
        key = cache_key(material)
    except ValueError:
        assume(False)  # a name that looks like a credential: refused, never hashed
        raise
    text = canonical_json(full)
    assert key == hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def test_the_key_of_a_real_request_is_the_hash_of_its_canonical_json() -> None:
    for kind in ("check", "score"):
        material = {
            "prompt_version": "x",
            "model": "openai/judge-model",
            "messages": build_messages(kind, "Oscar travels.", "Oscar acts: [TALK] Hi", None),
            "sampling": {"temperature": 0},
            "kind": kind,
        }
        text = canonical_json({"cache_format": keys_module.CACHE_FORMAT, **material})
        assert (
            cache_key(material) == hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
        )


def test_a_judge_encodes_a_kinds_frame_once_and_keys_every_claim_as_its_material() -> None:
    # Every claim of a kind to one model shares the key material but its messages: the judge
    # encodes that frame once, and each claim's key is still its whole material's.
    judge = Judge(BASE, cache=AnyKeyCache())  # type: ignore[arg-type]
    connection = judge._connection(BASE.model)
    for kind in ("check", "score", "check"):
        for n in range(3):
            request = JudgeRequest(
                kind=kind,  # type: ignore[arg-type]
                claim=f"Oscar names city {n}.",
                model=BASE.model,
                messages=tuple(build_messages(kind, f"Oscar names city {n}.", "text", None)),  # type: ignore[arg-type]
            )
            verdict = judge.evaluate(request)
            assert verdict.key == judge._key_material(request, connection).key
    assert len(judge._frames) == 2  # one per kind
    again = JudgeRequest(kind="check", claim="x", model=BASE.model, messages=(), sample_index=1)
    assert judge._framed(again, connection) is not judge._framed(request, connection)
