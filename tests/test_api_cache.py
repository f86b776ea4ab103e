"""The Python API outside pytest caches verdicts by default, like a test run does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_propositions.settings import user_cache_dir
from tests.support.judge_server import ScriptedJudge

REPO = Path(__file__).resolve().parent.parent

# A notebook cell, as a script: one claim about a recorded world.
SCRIPT = """
import json
from pytest_propositions import Proposition
from pytest_propositions.trace import Agent, World

oscar = Agent("Oscar")
world = World("Room", agents=[oscar])
oscar.hears("Where do you like to travel?")
oscar.says("Quiet cities with great architecture.")
proposition = Proposition("Oscar mentions his travel preferences.", world)
print(json.dumps({"value": proposition.check(), "cached": proposition.verdict.cached}))
"""


def _env(judge_server: ScriptedJudge, home: Path, **extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("PROP_") and k not in ("XDG_CACHE_HOME", "PYTEST_CURRENT_TEST")
    }
    env.update(
        HOME=str(home),
        LITELLM_LOCAL_MODEL_COST_MAP="True",
        PROP_MODEL="openai/judge-model",
        PROP_API_BASE=judge_server.base_url,
        PROP_API_KEY="test-key-not-real",
        PROP_RETRIES="0",
    )
    env.update(extra)
    return env


def _run(env: dict[str, str], cwd: Path) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    facts: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    return facts


def test_a_second_process_reuses_the_first_ones_verdict(
    judge_server: ScriptedJudge, tmp_path: Path
) -> None:
    env = _env(judge_server, tmp_path / "home", XDG_CACHE_HOME=str(tmp_path / "xdg"))
    first = _run(env, tmp_path)
    second = _run(env, tmp_path)
    assert first == {"value": True, "cached": False}
    assert second == {"value": True, "cached": True}
    assert len(judge_server.requests) == 1  # the second run asked no judge
    assert (tmp_path / "xdg" / "pytest-propositions" / "verdicts").is_dir()
    # Nothing is written into the working directory.
    assert {p.name for p in tmp_path.iterdir()} <= {"home", "xdg"}


def test_without_xdg_the_folder_is_under_the_home_cache(
    judge_server: ScriptedJudge, tmp_path: Path
) -> None:
    env = _env(judge_server, tmp_path / "home")
    _run(env, tmp_path)
    assert _run(env, tmp_path)["cached"] is True
    assert (tmp_path / "home" / ".cache" / "pytest-propositions" / "verdicts").is_dir()
    assert len(judge_server.requests) == 1


def test_prop_cache_dir_and_prop_cache_are_honoured(
    judge_server: ScriptedJudge, tmp_path: Path
) -> None:
    xdg = str(tmp_path / "xdg")
    env = _env(judge_server, tmp_path / "home", XDG_CACHE_HOME=xdg)
    mine = _env(judge_server, tmp_path / "home", XDG_CACHE_HOME=xdg, PROP_CACHE_DIR="~/verdicts")
    _run(mine, tmp_path)
    assert (tmp_path / "home" / "verdicts").is_dir() and not (tmp_path / "xdg").exists()
    assert _run(mine, tmp_path)["cached"] is True
    assert len(judge_server.requests) == 1
    off = {**env, "PROP_CACHE": "off"}
    assert _run(off, tmp_path)["cached"] is False
    assert _run(off, tmp_path)["cached"] is False
    assert len(judge_server.requests) == 3 and not (tmp_path / "xdg").exists()
    replay = {**env, "PROP_CACHE": "replay"}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=replay, cwd=tmp_path
    )
    assert done.returncode != 0 and "VerdictMissing" in done.stderr
    assert len(judge_server.requests) == 3


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"XDG_CACHE_HOME": "/x/cache"}, Path("/x/cache/pytest-propositions/verdicts")),
        # A relative XDG_CACHE_HOME is invalid by the specification, so it is ignored.
        ({"XDG_CACHE_HOME": "rel"}, Path.home() / ".cache" / "pytest-propositions" / "verdicts"),
    ],
)
def test_user_cache_dir(
    env: dict[str, str], expected: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if sys.platform != "linux":
        pytest.skip("the fallback folder is platform-specific")
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert user_cache_dir() == expected
