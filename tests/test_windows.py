"""A request longer than the judge's window, over real HTTP, through both paths: refused before
paying when it is clearly over (nothing reaches the server), and the provider's own refusal
(OpenAI's ``context_length_exceeded``, llama.cpp's ``exceed_context_size_error``) told as one
fault whose message gives the size, the window and ``last_n=``/``first_n=`` as the fix. And
``--prop-max-cost`` refusing a request whose estimated cost is over the budget before it is sent.

The judge is ``openai/gpt-4`` at the scripted server: litellm's table gives it a window of
8,192 tokens and a price, so sizes and costs are known without any provider.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_propositions import BudgetExceeded, JudgeError, JudgeUnavailable, Proposition
from pytest_propositions import runtime as runtime_module
from pytest_propositions.judging.size import price_entry
from pytest_propositions.runtime import Runtime
from pytest_propositions.settings import Settings
from pytest_propositions.store.cache import VerdictCache
from tests.support.judge_server import ScriptedJudge, overflow, status, verdict

MODEL = "openai/gpt-4"
CLAIM = "Ana greets someone."
SHORT = "Ana acts: [TALK] hello"
WINDOW = 8192


@pytest.fixture
def transport_path(both_paths: str) -> str:
    """Every test here runs through litellm and through the light path."""
    return both_paths


@pytest.fixture
def gpt4_server(litellm_preloaded: None) -> Iterator[ScriptedJudge]:
    with ScriptedJudge(models=["gpt-4"]) as server:
        yield server


@pytest.fixture
def start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, transport_path: str, gpt4_server: ScriptedJudge
) -> Iterator[Callable[..., Runtime]]:
    monkeypatch.setenv("PROP_API_KEY", "test-key-not-real")
    started: list[Runtime] = []

    def make(**overrides: Any) -> Runtime:
        options: dict[str, Any] = {
            "model": MODEL,
            "api_base": gpt4_server.base_url,
            "retries": 2,
            "timeout": 10.0,
            "transport": transport_path,
        }
        runtime = Runtime(Settings(**(options | overrides)), cache_dir=tmp_path / "cache")
        runtime_module.activate(runtime)
        started.append(runtime)
        return runtime

    yield make
    for runtime in reversed(started):
        runtime_module.deactivate(runtime)
        runtime.close()


def cached(tmp_path: Path) -> int:
    with VerdictCache(tmp_path / "cache") as cache:
        return len(cache)


def judge_error(expected: type[JudgeError], target: str) -> str:
    with pytest.raises(JudgeError) as caught:
        Proposition(CLAIM, target).check()
    assert type(caught.value) is expected, repr(caught.value)
    return str(caught.value)


def test_the_table_knows_the_judges_window_and_price() -> None:
    """What the tests below rely on: litellm's table as installed."""
    entry = price_entry("gpt-4")
    assert entry is not None and entry["max_input_tokens"] == WINDOW
    assert entry["input_cost_per_token"] > 0


@pytest.mark.parametrize("provider", ["openai", "llamacpp"])
def test_a_providers_overflow_is_one_fault_that_says_how_to_fit(
    provider: str, start: Callable[..., Runtime], gpt4_server: ScriptedJudge, tmp_path: Path
) -> None:
    gpt4_server.default = overflow(provider, window=WINDOW, tokens=9000)
    start()
    message = judge_error(JudgeUnavailable, SHORT)
    assert "longer than its window" in message
    assert "the window is 8,192 tokens (litellm's model table)" in message
    assert "prompt tokens (estimated)" in message
    assert "last_n=" in message and "first_n=" in message
    assert "Check --prop-model and --prop-api-base" not in message
    assert "--prop-local-context" not in message  # a hosted judge's window is not ours to set
    # Not retried (the same request cannot fit the next time), nothing cached.
    assert len(gpt4_server.requests) == 1
    assert cached(tmp_path) == 0


def test_an_overflow_said_in_words_only_is_the_same_fault_on_both_paths(
    start: Callable[..., Runtime], gpt4_server: ScriptedJudge
) -> None:
    """A proxy that keeps OpenAI's message but not its code: litellm reads the words, and so
    does the light path."""
    gpt4_server.default = status(
        400,
        "This model's maximum context length is 8192 tokens. However, your messages resulted "
        "in 9000 tokens. Please reduce the length of the messages.",
        "invalid_request_error",
    )
    start()
    message = judge_error(JudgeUnavailable, SHORT)
    assert "longer than its window" in message and "last_n=" in message
    assert len(gpt4_server.requests) == 1


def test_a_request_clearly_over_the_window_is_never_sent(
    start: Callable[..., Runtime], gpt4_server: ScriptedJudge, tmp_path: Path
) -> None:
    runtime = start()
    long_trace = "Ana acts: [TALK] " + " ".join(f"word{i % 97}" for i in range(3 * WINDOW))
    message = judge_error(JudgeUnavailable, long_trace)
    assert "over the judge's window" in message and "it was not sent" in message
    assert "the window is 8,192 tokens" in message
    assert "last_n=" in message and "first_n=" in message
    assert gpt4_server.requests == []
    assert runtime.stats().judge_calls == 0  # no call was made
    assert cached(tmp_path) == 0
    # A claim that fits is judged as before.
    gpt4_server.default = verdict(True)
    assert Proposition(CLAIM, SHORT).check() is True
    assert len(gpt4_server.requests) == 1


def test_max_cost_refuses_a_request_whose_estimate_is_over_the_budget(
    start: Callable[..., Runtime], gpt4_server: ScriptedJudge, tmp_path: Path
) -> None:
    """Nothing spent yet, but the next request alone (about 3,000 tokens at $30 a million)
    would pass $0.01: refused before sending, where the old check let it through."""
    start(max_cost=0.01)
    trace = "Ana acts: [TALK] " + " ".join(f"word{i % 97}" for i in range(3000))
    message = judge_error(BudgetExceeded, trace)
    assert "estimated cost $0." in message and "--prop-max-cost $0.0100" in message
    assert "nothing was sent" in message
    assert gpt4_server.requests == []
    assert cached(tmp_path) == 0


@pytest.mark.slow  # litellm's client
@pytest.mark.parametrize("provider", ["openai", "llamacpp"])
def test_litellm_raises_its_context_window_error_and_it_is_the_one_fault(
    provider: str, gpt4_server: ScriptedJudge
) -> None:
    import asyncio

    import litellm

    from pytest_propositions.judging.transport_litellm import fault_of

    gpt4_server.default = overflow(provider)
    with pytest.raises(Exception) as info:
        asyncio.run(
            litellm.acompletion(
                model=MODEL,
                messages=[{"role": "user", "content": "Is the claim true?"}],
                api_base=gpt4_server.base_url,
                api_key="test-key-not-real",
                max_retries=0,
            )
        )
    assert isinstance(info.value, litellm.ContextWindowExceededError)
    fault = fault_of(info.value)
    assert (fault.kind, fault.status, fault.transient) == ("context_overflow", 400, False)
