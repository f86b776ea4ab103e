"""The keys of requests of many shapes, as the code before issue 52 computed them (recorded in
``tests/data/recorded_keys.jsonl``), computed again by this code: through the whole claim path
(``Proposition.evaluate`` to ``Judge.evaluate``'s lookup), and from each request's canonical
form (``KeyMaterial.from_json``, what a record keeps and ``cache rejudge`` reads back). A key
that moved would orphan every verdict recorded under it.

To record the file again with another version's code (only when its keys are meant to change):
``PYTHONPATH=OTHER_CHECKOUT python tests/test_recorded_keys.py > tests/data/recorded_keys.jsonl``.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_propositions.claims.proposition import Proposition
from pytest_propositions.judging.judge import Judge
from pytest_propositions.judging.prompts import system_prompt
from pytest_propositions.runtime import Runtime
from pytest_propositions.settings import Settings
from pytest_propositions.store import keys as keys_module
from pytest_propositions.store.keys import cache_key
from pytest_propositions.trace import Agent, World

RECORDED = Path(__file__).parent / "data" / "recorded_keys.jsonl"
BASE = Settings(model="openai/judge-model", api_base="http://127.0.0.1:9/v1")
OPENING = "\x00pytest-propositions:opening\x00"  # what keys.py puts in the opening's place


class KeyCatcher:
    """Stands in for the verdict cache: every key hits, and the material is kept."""

    mode = "use"

    def __init__(self) -> None:
        self.keys: list[str] = []

    def get(self, key: str, kind: str = "check") -> dict[str, Any]:
        self.keys.append(key)
        value: bool | int = True if kind == "check" else 9
        return {
            "recorded_at": "2025-01-01T00:00:00+00:00",
            "verdict": {"kind": kind, "claim": "stand-in", "value": value},
        }


def world(*lines: str) -> World:
    oscar = Agent("Oscar", persona={"occupation": "architect", "city": "Zürich"})
    room = World("Room", agents=[oscar])
    oscar.hears("Where do you like to travel?")
    for line in lines:
        oscar.says(line)
    return room


# Each shape: the claim, its target and how it is evaluated (Proposition's options, evaluate's
# arguments, the settings).
SHAPES: dict[str, Callable[[], dict[str, Any]]] = {
    "plain check": lambda: {"claim": "Oscar talks about travel.", "target": world("Trains.")},
    "score": lambda: {
        "claim": "Oscar is enthusiastic.",
        "target": world("I love trains!"),
        "kind": "score",
    },
    "string target": lambda: {"claim": "Oscar mentions a city.", "target": "Oscar: Paris."},
    "unicode": lambda: {
        "claim": "Oscar dit « bonjour » à Zoë — 你好, 👋.",
        "target": world("Grüße aus Zürich ✓", "東京は大きい 🚄"),
    },
    "escapes": lambda: {
        "claim": 'Oscar quotes "C:\\path\\to" and a tab\there.',
        "target": 'Line one\nline "two"\r\n\tindented \\ slash \x01 control',
    },
    "long target": lambda: {
        "claim": "Oscar names every city.",
        "target": world(*(f"City number {n}: a long sentence about it." for n in range(300))),
    },
    "claim variables": lambda: {
        "claim": "Oscar talks about {{topic}} in {{city}}.",
        "target": world("Trains in Bern."),
        "claim_variables": {"topic": "trains", "city": "Bern"},
    },
    "additional context": lambda: {
        "claim": "Oscar answers the question.",
        "target": world("Yes."),
        "additional_context": "Only the first turn counts.\nAnd the second 😀.",
    },
    "sample index": lambda: {
        "claim": "Oscar is calm.",
        "target": world("Fine."),
        "sample_index": 2,
    },
    "double check": lambda: {
        "claim": "Oscar is calm.",
        "target": world("Fine."),
        "double_check": True,
    },
    "personas and a window": lambda: {
        "claim": "Oscar is an architect.",
        "target": world("I draw.", "I build.", "I rest."),
        "include_personas": True,
        "last_n": 2,
    },
    "another model and an effort": lambda: {
        "claim": "Oscar is polite.",
        "target": world("Thank you."),
        "settings": dataclasses.replace(BASE, model="openai/gpt-5-mini", reasoning_effort="low"),
    },
    "openai messages": lambda: {
        "claim": "The assistant greets the user.",
        "target": [
            {"role": "system", "content": "Be nice."},
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": "Hello! How can I help? ✓"},
        ],
    },
    "the opening's stand-in in a target": lambda: {
        "claim": "Oscar says something odd.",
        "target": f"Oscar: {OPENING}",
    },
}


def evaluated_key(shape: dict[str, Any]) -> str:
    """The key ``Judge.evaluate`` looks up for the shape, through the Proposition path."""
    shape = dict(shape)
    settings = shape.pop("settings", BASE)
    call = {
        name: shape.pop(name)
        for name in ("claim_variables", "additional_context", "sample_index")
        if name in shape
    }
    kind = shape.pop("kind", "check")
    runtime = Runtime(settings)
    cache = KeyCatcher()
    runtime._judge = Judge(settings, cache=cache)  # type: ignore[arg-type]
    runtime.current_test = "test_x.py::test_a"
    claim, target = shape.pop("claim"), shape.pop("target")
    verdict = Proposition(claim, target, **shape).evaluate(kind, runtime=runtime, **call)
    assert cache.keys == [verdict.key]
    return verdict.key


# Forms given to the key function as they are (a record keeps one, an import checks its key).
FORMS: dict[str, dict[str, Any]] = {
    "messages with a list of parts": {
        "kind": "check",
        "messages": [
            {"role": "system", "content": "You judge."},
            {"role": "user", "content": [{"type": "text", "text": "Claim: é"}]},
        ],
        "model": "m",
        "prompt_version": "2",
        "sampling": {"temperature": 0},
    },
    "an opening with a number": {
        "messages": [{"role": "system", "content": "x", "weight": 1}],
        "model": "m",
    },
    "no messages": {"messages": [], "model": "m"},
    "a lone surrogate": {"messages": [{"role": "system", "content": "s \ud800"}], "x": "\udfff"},
    "messages as the only field": {"messages": [{"role": "system", "content": "a"}]},
    "the stand-in as the opening": {
        "messages": [{"role": "system", "content": OPENING}, {"role": "user", "content": "q"}]
    },
    "the stand-in elsewhere": {
        "messages": [{"role": "system", "content": "s"}],
        "note": OPENING,
    },
    "floats and nesting": {
        "messages": [{"content": "c", "role": "system"}],
        "sampling": {"temperature": 0.1, "top_p": 1e-7, "stop": ["\n", "é"], "extra": {"a": None}},
    },
}


def recorded() -> Iterator[dict[str, Any]]:
    if RECORDED.exists() or __name__ != "__main__":
        for line in RECORDED.read_text(encoding="utf-8").splitlines():
            yield json.loads(line)


def test_the_file_records_every_shape_and_form() -> None:
    names = [(entry["what"], entry["name"]) for entry in recorded()]
    assert names == [("shape", name) for name in SHAPES] + [("form", name) for name in FORMS]


@pytest.mark.filterwarnings("ignore:samples > 1 asks")
@pytest.mark.parametrize("entry", [e for e in recorded() if e["what"] == "shape"], ids=str)
def test_a_claim_of_each_shape_has_the_key_it_had(entry: dict[str, Any]) -> None:
    assert evaluated_key(SHAPES[entry["name"]]()) == entry["key"]


@pytest.mark.parametrize("entry", [e for e in recorded() if e["what"] == "form"], ids=str)
def test_each_form_has_the_key_it_had(entry: dict[str, Any]) -> None:
    assert cache_key(FORMS[entry["name"]]) == entry["key"]


def test_the_instructions_of_a_request_are_encoded_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # Every claim's request opens with the same system instructions (about 2 KB): its key is
    # computed without encoding them again, with the same bytes (the keys above).
    encoded: list[str] = []
    original = keys_module.canonical_json

    def counting(value: Any) -> str:
        text = original(value)
        encoded.append(text)
        return text

    monkeypatch.setattr(keys_module, "canonical_json", counting)
    keys_module._strings_object.cache_clear()
    keys_module._digest_through.cache_clear()
    instructions = system_prompt("check")
    for n in range(10):
        evaluated_key({"claim": f"Oscar names city {n}.", "target": world("Bern.")})
    assert sum(text.count(json.dumps(instructions)[1:-1]) for text in encoded) == 1


def main() -> None:
    """Print the file's lines, computed by the code this module imports."""
    for name, shape in SHAPES.items():
        line = {"what": "shape", "name": name, "key": evaluated_key(shape())}
        sys.stdout.write(json.dumps(line) + "\n")
    for name, form in FORMS.items():
        line = {"what": "form", "name": name, "key": cache_key(form)}
        sys.stdout.write(json.dumps(line) + "\n")


if __name__ == "__main__":
    main()
