"""The CI recipe of the shared store's page (docs/store.md), executed: its GitHub Actions steps (the installs
aside, this environment has them) run as written against a local PostgreSQL server standing in
for the service container, with the scripted judge standing in for the provider; then the page's
cache commands on the store, as written."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import INNER_WORLD
from tests.support.judge_server import ScriptedJudge, verdict
from tests.support.postgres import PostgresServer

REPO = Path(__file__).resolve().parent.parent
PAGE = REPO / "docs" / "store.md"
SECTION = "## CI recipe"
PASSWORD = "recipe-pw-5512-never-shown"


def recipe_blocks() -> list[dict[str, Any]]:
    text = PAGE.read_text(encoding="utf-8")
    section = text[text.index(SECTION) :]
    if "\n## " in section[1:]:
        section = section[: section.index("\n## ", 1)]
    return [yaml.safe_load(block) for block in re.findall(r"```yaml\n(.*?)```", section, re.S)]


def test_the_two_ci_services_run_the_same_commands() -> None:
    github, gitlab = recipe_blocks()
    job = github["jobs"]["test"]
    steps = [step["run"] for step in job["steps"] if "run" in step]
    assert steps == gitlab["test"]["script"]
    assert job["services"]["postgres"]["image"].startswith("postgres:")
    assert gitlab["test"]["services"][0]["name"].startswith("postgres:")
    # The password comes from a secret, through PGPASSWORD: never written in the URL.
    for variables in (job["env"], gitlab["test"]["variables"]):
        assert (
            "@" in variables["PROP_STORE"] and ":" not in variables["PROP_STORE"].split("@")[0][13:]
        )
        assert "PGPASSWORD" in variables


def test_the_github_actions_steps_run_against_a_local_server(
    postgres_server: PostgresServer, judge_server: ScriptedJudge, tmp_path: Path
) -> None:
    github, _ = recipe_blocks()
    job = github["jobs"]["test"]
    service = job["services"]["postgres"]["env"]
    user, database = service["POSTGRES_USER"], service["POSTGRES_DB"]
    role, db = f"{user}_{os.getpid()}", f"{database}_{os.getpid()}"
    postgres_server.create_role(role, PASSWORD)
    postgres_server.create_database(db, owner=role)
    store = job["env"]["PROP_STORE"].replace(
        f"{user}@localhost:5432/{database}", f"{role}@127.0.0.1:{postgres_server.port}/{db}"
    )
    assert store != job["env"]["PROP_STORE"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PROP_", "PYTEST_", "PG"))}
    env.update(
        PROP_STORE=store,
        PGPASSWORD=PASSWORD,
        OPENAI_API_KEY="test-key-not-real",
        PROP_API_BASE=judge_server.base_url,
        LITELLM_LOCAL_MODEL_COST_MAP="True",
    )
    judge_server.on("How true is the claim", verdict(8, justification="He likes them."))
    judge_server.default = verdict(True, justification="He says so.")
    project = tmp_path / "machine-1"
    project.mkdir()
    (project / "conftest.py").write_text(INNER_WORLD)
    (project / "test_travel.py").write_text(
        "def test_travel(world, assert_proposition):\n"
        "    assert_proposition(world, 'Oscar talks about travel.')\n\n"
        "def test_cities(world, assert_proposition, min_score):\n"
        "    min_score(world, 'Oscar likes quiet cities.', 6)\n"
    )
    steps = [step["run"] for step in job["steps"] if "run" in step]
    runnable = [step for step in steps if not step.startswith("pip install")]
    assert len(runnable) == len(steps) - 1

    def run_steps(where: Path) -> list[str]:
        outputs = []
        for step in runnable:
            done = subprocess.run(
                ["bash", "-c", step],
                cwd=where,
                env=env,
                capture_output=True,
                text=True,
                check=False,
            )
            assert done.returncode == 0, f"{step}\n{done.stdout[-3000:]}\n{done.stderr[-2000:]}"
            assert PASSWORD not in done.stdout + done.stderr
            outputs.append(done.stdout)
        return outputs

    first = run_steps(project)
    assert re.search(r"propositions: 2 claims, .*0 from cache, .*2 judge calls", first[0])
    assert "entries: 2" in first[-1]
    # A second machine (a fresh checkout: no disk cache) is served by the store.
    second_machine = tmp_path / "machine-2"
    shutil.copytree(
        project,
        second_machine,
        ignore=shutil.ignore_patterns(".pytest_cache", ".propositions", "__pycache__"),
    )
    judge_server.clear_requests()
    second = run_steps(second_machine)
    assert re.search(r"propositions: 2 claims, .*2 from cache, .*0 judge calls", second[0])
    assert "2 read from it" in second[0]
    assert judge_server.requests == []

    # The page's cache commands on the store, as written, on the second machine.
    text = PAGE.read_text(encoding="utf-8")
    section = text[text.index("## The cache commands on the store") :]
    [commands] = re.findall(r"```bash\n(.*?)```", section[: section.index("\n## ", 1)], re.S)
    lines = [line.split("#")[0].strip() for line in commands.splitlines() if line.strip()]
    assert [line.split()[4] for line in lines] == [
        "stats",
        "export",
        "import",
        "push",
        "prune",
        "repair",
        "push",
    ]
    said = {}
    for line in lines:
        done = subprocess.run(
            ["bash", "-c", line], cwd=second_machine, env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, f"{line}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
        assert PASSWORD not in done.stdout + done.stderr
        said.setdefault(line.split()[4], done.stdout)
    assert "entries: 2" in said["stats"]
    assert len((second_machine / "verdicts.jsonl").read_text().splitlines()) == 2


def _section(title: str) -> str:
    text = PAGE.read_text(encoding="utf-8")
    section = text[text.index(title) :]
    return section[: section.index("\n## ", 1)] if "\n## " in section[1:] else section


def _sudo_stand_in(folder: Path) -> Path:
    """The page's ``sudo -u postgres ...``, where there is no sudo (a root shell): runuser."""
    shim = folder / "sudo"
    shim.write_text(
        '#!/bin/sh\n[ "$1" = "-u" ] || exit 64\nuser=$2\nshift 2\nexec runuser -u "$user" -- "$@"\n'
    )
    shim.chmod(0o755)
    return folder


@pytest.mark.slow  # a real PostgreSQL server, started by the recipe's own commands
def test_the_local_server_recipe_runs_as_written(
    judge_server: ScriptedJudge, tmp_path: Path
) -> None:
    """The page's local server, owner's first connection and least-privilege role, as written:
    the CI role's run stores its verdict, with only SELECT and INSERT."""
    import pwd
    import tempfile

    from pytest_propositions.local.ports import free_loopback_port
    from tests.support.postgres import find_bindir

    bindir = find_bindir()
    if bindir is None:
        pytest.skip("no PostgreSQL server programs on this machine")
    if os.geteuid() != 0 and shutil.which("sudo") is None:
        pytest.skip("the recipe runs the server as the postgres user: needs sudo or root")
    local = _section("## A local server to try it")
    role = _section("## A least-privilege role for CI")
    blocks = re.findall(r"```bash\n(.*?)```", local, re.S) + re.findall(
        r"```bash\n(.*?)```", role, re.S
    )
    assert len(blocks) == 3
    # A folder the postgres user owns (its home on a real machine), and a free port.
    root = Path(tempfile.mkdtemp(prefix="prop-recipe-"))
    os.chmod(root, 0o755)
    if os.geteuid() == 0:
        entry = pwd.getpwnam("postgres")
        os.chown(root, entry.pw_uid, entry.pw_gid)
    data = root / "verdicts-db"
    port = free_loopback_port()
    script = "\n".join(blocks).replace(
        "export PGPORT=5433 PGDATA=~postgres/verdicts-db", f"export PGPORT={port} PGDATA={data}"
    )
    assert str(port) in script
    project = tmp_path / "project"
    project.mkdir()
    (project / "conftest.py").write_text(INNER_WORLD)
    (project / "test_travel.py").write_text(
        "def test_travel(world, assert_proposition):\n"
        "    assert_proposition(world, 'Oscar talks about travel.')\n"
    )
    judge_server.default = verdict(True, justification="He says so.")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PROP_", "PYTEST_", "PG"))}
    env.update(
        PGBIN=str(bindir),
        PROP_MODEL="openai/judge-model",
        PROP_API_BASE=judge_server.base_url,
        PROP_API_KEY="test-key-not-real",
        LITELLM_LOCAL_MODEL_COST_MAP="True",
    )
    if shutil.which("sudo") is None:
        env["PATH"] = f"{_sudo_stand_in(tmp_path)}{os.pathsep}{env['PATH']}"
    stop = f'sudo -u postgres "{bindir}/pg_ctl" -D "{data}" -m immediate stop'
    try:
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", script],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        assert "ci-password" not in done.stdout + done.stderr
        assert re.search(r"propositions: 1 claim, 1 passed, .*1 judge call", done.stdout)
        # Password logins: the page's pg_hba.conf asks every TCP login for its password.
        hba = (data / "pg_hba.conf").read_text()
        assert re.search(r"^host\s+all\s+all\s+127\.0\.0\.1/32\s+scram-sha-256", hba, re.M)
        wrong = subprocess.run(
            [
                "bash",
                "-c",
                f'"{bindir}/psql" -h 127.0.0.1 -p {port} -U ci -d verdicts -c "select 1"',
            ],
            env={**env, "PGPASSWORD": "not-the-password"},
            capture_output=True,
            text=True,
            check=False,
        )
        assert wrong.returncode != 0 and "password authentication failed" in wrong.stderr
        stored = subprocess.run(
            [
                "bash",
                "-c",
                f'"{bindir}/psql" -h 127.0.0.1 -p {port} -U ci -d verdicts -tAc "select count(*) from prop_verdicts"',
            ],
            env={**env, "PGPASSWORD": "ci-password"},
            capture_output=True,
            text=True,
            check=True,
        )
        assert stored.stdout.strip() == "1"
    finally:
        subprocess.run(["bash", "-c", stop], env=env, capture_output=True, check=False)
        shutil.rmtree(root, ignore_errors=True)
