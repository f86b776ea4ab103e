"""A model name no provider serves (``my-model`` with an api base): found before any request,
said once with the fix (``openai/my-model``), and the run stops there; with a self-hosted
server, at the run's start, without litellm (issue 51). A name litellm routes without a prefix
is never refused."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from typing import Any

import pytest

from pytest_propositions.errors import JudgeUnavailable
from pytest_propositions.judging.endpoint import hosted_connection
from pytest_propositions.judging.families import profile_of
from pytest_propositions.judging.transport import Transport
from pytest_propositions.settings import Settings
from tests.support.judge_server import ScriptedJudge

pytest_plugins = ["pytester"]

TWO_CLAIMS = """
def test_first(world, assert_proposition):
    assert_proposition(world, "Oscar likes architecture.")

def test_second(world, assert_proposition):
    assert_proposition(world, "Oscar likes quiet cities.")
"""


@pytest.mark.parametrize("transport", ["auto", "litellm"])
def test_a_bare_unknown_name_stops_the_run_once_with_the_fix(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, inner_run: list[str], transport: str
) -> None:
    pytester.makepyfile(test_names=TWO_CLAIMS)
    args = [arg for arg in inner_run if not arg.startswith(("--prop-model", "--prop-transport"))]
    # A name with a prefix litellm does not know is left to the first live call (a name with
    # no prefix, sent to a server on loopback, is refused at the start: below).
    result = pytester.runpytest_subprocess(
        *args, "--prop-model=my-org/my-model", f"--prop-transport={transport}", "-rA"
    )
    out = result.stdout.str()
    # One claim failed, as a judge error; the second test never ran.
    assert result.ret != 0
    assert "propositions: 1 claim, 0 passed, 0 failed, 1 judge error," in out
    assert "test_second" not in out
    assert "Interrupted: pytest-propositions: no request was sent to the judge" in out
    assert "litellm knows no provider for the model name 'my-org/my-model'" in out
    assert "write openai/my-org/my-model (--prop-model=openai/my-org/my-model)" in out
    # Nothing reached the server, and no status that no server sent is claimed.
    assert judge_server.requests == []
    assert "HTTP 400" not in out
    assert "rejected the request" not in out


START = (
    "ERROR: pytest-propositions: --prop-model=my-model names no provider, and --prop-api-base "
    "sends it to a server: for an OpenAI-compatible server write --prop-model=openai/my-model; "
    "for another provider, prefix the name with it as litellm does (anthropic/..., ollama/...)"
)


def test_a_bare_unknown_name_for_a_self_hosted_server_is_refused_at_the_start_once(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, inner_run: list[str]
) -> None:
    pytester.makepyfile(test_names=TWO_CLAIMS)
    args = [arg for arg in inner_run if not arg.startswith("--prop-model")]
    result = pytester.runpytest_subprocess(*args, "--prop-model=my-model")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    said = result.stdout.str() + result.stderr.str()
    assert said.count("my-model names no provider") == 1
    assert START in result.stderr.str()
    assert judge_server.requests == []


@pytest.mark.parametrize(
    ("model", "api_base", "refused"),
    [
        ("my-model", "http://127.0.0.1:8080/v1", True),
        ("my-model", "http://localhost:11434", True),
        ("my-model", "http://10.1.2.3/v1", True),
        ("my-model", "https://llm.example.com/v1", False),  # a hosted address litellm may know
        ("my-model", None, False),  # no server named: litellm's to route
        ("openai/my-model", "http://127.0.0.1:8080/v1", False),
        ("gpt-4o-mini", "http://127.0.0.1:8080/v1", False),
        ("claude-sonnet-4-5", "http://127.0.0.1:8080/v1", False),  # in litellm's map
        ("local", "http://127.0.0.1:8080/v1", False),
    ],
)
def test_the_start_refuses_only_names_litellm_cannot_route(
    model: str, api_base: str | None, refused: bool
) -> None:
    from pytest_propositions.judging.families import unnamed_providers
    from pytest_propositions.judging.transport_litellm import named_in_litellms_map

    found = unnamed_providers(Settings(model=model, api_base=api_base), named_in_litellms_map)
    assert bool(found) is refused


def test_the_start_check_does_not_import_litellm() -> None:
    code = (
        "import sys\n"
        "from pytest_propositions.judging.families import unnamed_providers\n"
        "from pytest_propositions.judging.transport_litellm import named_in_litellms_map\n"
        "from pytest_propositions.settings import Settings\n"
        "s = Settings(model='my-model', api_base='http://127.0.0.1:9/v1')\n"
        "assert unnamed_providers(s, named_in_litellms_map)\n"
        "assert named_in_litellms_map('claude-sonnet-4-5') is True\n"
        "assert 'litellm' not in sys.modules and 'openai' not in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_litellms_own_no_provider_error_is_a_fault_that_names_the_fix(
    judge_server: ScriptedJudge, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The call itself (past the check before the first call) gets the same message."""
    monkeypatch.setenv("PROP_API_KEY", "test-key-not-real")
    settings = Settings(model="my-model", api_base=judge_server.base_url, retries=2)
    connection = hosted_connection("my-model", judge_server.base_url)
    transport = Transport(settings, lambda c: profile_of(c.litellm_model, "auto"))
    messages: list[Any] = [{"role": "user", "content": "Is Oscar quiet?"}]

    with pytest.raises(JudgeUnavailable) as caught:
        asyncio.run(transport.complete(connection, messages, sampling={"temperature": 0.5}))
    error = caught.value
    assert error.stops_run is True
    assert error.status is None  # litellm's 400 came from no server
    assert "write openai/my-model" in str(error)
    assert f"at {judge_server.base_url}" in str(error)
    assert judge_server.requests == []  # and not retried: nothing was sent


@pytest.mark.parametrize(
    ("model", "api_base"),
    [
        ("gpt-4o-mini", None),  # OpenAI's, by litellm's map (and by ours)
        ("claude-sonnet-4-5", "http://127.0.0.1:9/v1"),  # Anthropic's, in litellm's map
        ("openai/my-model", "http://127.0.0.1:9/v1"),
        ("anthropic/a-model-litellm-has-never-heard-of", None),
        ("ollama/llama3", None),
    ],
)
def test_a_name_litellm_routes_is_not_refused(model: str, api_base: str | None) -> None:
    from pytest_propositions.judging.transport_litellm import load_litellm, unrouted_by_litellm

    assert unrouted_by_litellm(load_litellm(), model, api_base) is None


@pytest.mark.parametrize("model", ["my-model", "my-org/my-model"])
def test_a_name_litellm_cannot_route_is_refused(model: str) -> None:
    from pytest_propositions.judging.transport_litellm import load_litellm, unrouted_by_litellm

    reason = unrouted_by_litellm(load_litellm(), model, "http://127.0.0.1:9/v1")
    assert reason is not None and "LLM Provider NOT provided" in reason


def test_the_light_path_says_how_to_name_a_model_it_cannot_take() -> None:
    with pytest.raises(JudgeUnavailable, match="write the model as openai/my-model"):
        profile_of("my-model", "openai")
