"""Whole-test replay: a simulation's own model calls in pytest-recording's cassettes, the verdicts
in the cache; the judge's calls (on the light path) never in a cassette, whatever the user's
``vcr_config`` says.

The stand-in simulation calls the scripted server through the ``openai`` SDK, as TinyTroupe
does; the judge asks the same server (same host and port), so no host filter could tell them
apart. Recorded once, then replayed with the server stopped and no key.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.support.docs_blocks import page_blocks
from tests.support.judge_server import ScriptedJudge, text

pytest_plugins = ["pytester"]
pytest.importorskip("pytest_recording")
pytest.importorskip("openai")

SIMULATION_KEY = "sk-simulation-secret-0123"
JUDGE_KEY = "judge-secret-4567"
CLAIM = "Oscar names a kind of place he likes to travel to."

GUIDE = Path(__file__).resolve().parent.parent / "docs" / "migrating.md"


def guide_conftest() -> str:
    """The guide's ``conftest.py``, as written (the recipe under test)."""
    [block] = [
        block.code
        for block in page_blocks(GUIDE)
        if block.title == "conftest.py" and "vcr_config" in block.code
    ]
    return block


TEST = f"""
import os

import pytest
from openai import OpenAI


def simulate():
    # As TinyTroupe does: the openai SDK, its key from the environment (the guide's
    # placeholder on replay).
    client = OpenAI(
        base_url=os.environ["SIMULATION_BASE_URL"],
        api_key=os.environ["OPENAI_API_KEY"],
        max_retries=0,
    )
    reply = client.chat.completions.create(
        model="sim-model",
        messages=[{{"role": "user", "content": "Oscar, where do you like to travel?"}}],
    )
    return "Oscar: " + reply.choices[0].message.content


def keep_everything(request):
    with open("shown_to_before_record_request.jsonl", "ab") as shown:
        shown.write(request.body + b"\\n")
    return request


# The user's own additions, over the guide's: a before_record_request hook that keeps every
# request it is shown (RECORD_MODE: a record mode of their own, in one test).
@pytest.fixture(scope="module")
def vcr_config(vcr_config):
    return {{**vcr_config, "before_record_request": keep_everything, RECORD_MODE}}


@pytest.mark.vcr
def test_oscar(assert_proposition):
    assert_proposition(simulate(), {CLAIM!r})
"""


@pytest.fixture
def transport_path(both_paths: str) -> str:
    return both_paths


@pytest.fixture
def server(litellm_preloaded: None) -> Iterator[ScriptedJudge]:
    with ScriptedJudge(["judge-model", "sim-model"]) as judge:
        judge.on("where do you like to travel", text("Quiet cities with great museums."))
        yield judge


def project(pytester: pytest.Pytester, record_mode: str | None = None) -> None:
    line = f'"record_mode": {record_mode!r}' if record_mode else ""
    pytester.makeconftest(guide_conftest())
    pytester.makepyfile(test_sim=TEST.replace("RECORD_MODE", line))


def arguments(base_url: str, cache_dir: Path, cache: str, path: str) -> list[str]:
    return [
        "--prop-model=openai/judge-model",
        f"--prop-api-base={base_url}",
        f"--prop-cache={cache}",
        f"--prop-cache-dir={cache_dir}",
        "--prop-retries=0",
        f"--prop-transport={path}",
        "-p",
        "no:cacheprovider",
    ]


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, server: ScriptedJudge) -> pytest.MonkeyPatch:
    for name in ("PROP_API_KEY", "PROP_MODEL", "PROP_CACHE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    monkeypatch.setenv("SIMULATION_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "unused")  # the guide's placeholder
    return monkeypatch


def test_recorded_once_then_replayed_with_the_server_stopped_and_no_key(
    pytester: pytest.Pytester,
    server: ScriptedJudge,
    env: pytest.MonkeyPatch,
    transport_path: str,
) -> None:
    project(pytester)
    cache_dir = pytester.path / "verdicts"
    env.setenv("OPENAI_API_KEY", SIMULATION_KEY)
    env.setenv("PROP_API_KEY", JUDGE_KEY)
    recorded = pytester.runpytest(
        *arguments(server.base_url, cache_dir, "use", transport_path), "--record-mode=once"
    )
    recorded.assert_outcomes(passed=1)
    asked = [r for r in server.requests if r.model == "judge-model"]
    assert asked, "the judge was asked on the recording run"
    cassette = (pytester.path / "cassettes" / "test_sim" / "test_oscar.yaml").read_text()
    # On the light path one interaction, the simulation's: the judge's request is not in the
    # cassette. litellm's path goes through clients vcrpy patches, so there it is (documented in
    # docs/migrating.md). No key is, on either.
    interactions = yaml.safe_load(cassette)["interactions"]
    models = [json.loads(i["request"]["body"])["model"] for i in interactions]
    assert models == (
        ["sim-model", "judge-model"] if transport_path == "litellm" else ["sim-model"]
    )
    assert "Quiet cities with great museums." in interactions[0]["response"]["body"]["string"]
    assert SIMULATION_KEY not in cassette and JUDGE_KEY not in cassette
    shown = (pytester.path / "shown_to_before_record_request.jsonl").read_bytes().splitlines()
    assert {json.loads(body)["model"] for body in shown} == set(models)  # (shown more than once)

    base_url = server.base_url
    server.stop()
    env.setenv("OPENAI_API_KEY", "unused")
    env.delenv("PROP_API_KEY")
    replayed = pytester.runpytest(*arguments(base_url, cache_dir, "replay", transport_path))
    replayed.assert_outcomes(passed=1)
    replayed.stdout.fnmatch_lines(["*1 claim, 1 passed*1 from cache*"])


def test_replay_never_records_even_when_the_users_config_would(
    pytester: pytest.Pytester, server: ScriptedJudge, env: pytest.MonkeyPatch
) -> None:
    """No cassette, and the user's vcr_config says record_mode once: under replay the missing
    cassette is an error, and the simulation's endpoint is never called."""
    project(pytester, record_mode="once")
    result = pytester.runpytest(*arguments(server.base_url, pytester.path / "v", "replay", "auto"))
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*CannotOverwriteExistingCassetteException*"])
    assert server.requests == []
    assert not (pytester.path / "cassettes").exists()


def test_replay_refuses_a_record_mode_that_records(
    pytester: pytest.Pytester, server: ScriptedJudge, env: pytest.MonkeyPatch
) -> None:
    project(pytester)
    result = pytester.runpytest(
        *arguments(server.base_url, pytester.path / "v", "replay", "auto"), "--record-mode=once"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--record-mode=once records cassettes*--prop-cache=replay*"])


def test_a_proxy_from_the_environment_goes_through_the_judges_own_transport(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """httpx makes a separate transport for a proxy the environment names: ours too, so the
    judge's calls through a proxy stay out of cassettes as well."""
    import httpx

    from pytest_propositions.judging.transport_http import _client_class, _transport_class

    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    client = _client_class()(trust_env=True)
    through_proxy = client._transport_for_url(httpx.URL("https://judge.invalid/v1"))
    direct = client._transport_for_url(httpx.URL("http://judge.invalid/v1"))
    assert type(through_proxy) is _transport_class()
    assert type(direct) is _transport_class()
    assert through_proxy is not direct
