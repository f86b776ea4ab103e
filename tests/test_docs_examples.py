"""Every code block of the documentation runs, as a reader would run it, against the scripted judge.

Each page gets a project folder of its own, seeded with the ``conftest.py`` and ``test_travel.py``
of Getting started (the ``world`` fixture the other pages use). Its blocks run in page order:
files are written, test files run with pytest, scripts with Python, bash blocks one command at a
time. pytest runs inline (pytester), everything else in subprocesses; both see an environment
that points the judge at the scripted server on loopback (``PROP_MODEL=openai/judge-model``,
``PROP_API_BASE``, ``PROP_API_KEY``). A flag on a command line (``--prop-model=openai/gpt-4.1-mini``)
wins over the environment as usual, and reaches the same server. ``tests/support/docs_blocks.py``
says how a block is classified and which HTML comments adjust its run."""

from __future__ import annotations

import importlib.util
import os
import shlex
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.docs_blocks import (
    DOCS,
    FILE_LANGUAGES,
    RUN_LANGUAGES,
    SHOWN_LANGUAGES,
    Block,
    all_blocks,
    page_blocks,
    pages,
)
from tests.support.judge_server import RecordedRequest, Reply, ScriptedJudge, echo_fn, verdict

# Blocks that truly cannot run here (package installs, providers' keys). Keep it small: a new
# one needs a reason in its page, and raising this number needs a reason in review.
MAX_NOT_RUN = 4
SCORE_QUESTION = "How true is the claim"
GETTING_STARTED = "index.md"
SEED_FILES = ("conftest.py", "test_travel.py")
API_KEY = "docs-example-key-not-real"
# Pages whose blocks form one session (a namespace carried from block to block, objects shaped
# like a simulation library's) are run by a test of their own, which must exist and read the page.
OWN_RUNNERS = {
    "migrating.md": "tests/test_migrating_doc.py",
    # The shared store's recipe needs a PostgreSQL server, which that test starts.
    "store.md": "tests/test_store_recipe.py",
}
ROOT = DOCS.parent


def _seed_files() -> dict[str, str]:
    blocks = {block.title: block.code for block in page_blocks(DOCS / GETTING_STARTED)}
    missing = [name for name in SEED_FILES if name not in blocks]
    assert not missing, f"docs/{GETTING_STARTED} lost its {missing} block(s)"
    return {name: blocks[name] for name in SEED_FILES}


class DocsJudge:
    """The scripted judge as a docs reader's model: upholds claims (score 8) unless told not to."""

    def __init__(self, server: ScriptedJudge) -> None:
        self.server = server
        self.false_for: list[str] = []
        server.default = echo_fn(self._answer)

    def _answer(self, request: RecordedRequest) -> Reply:
        score = SCORE_QUESTION in request.text
        if any(text in request.text for text in self.false_for):
            return verdict(2 if score else False, justification="The recording does not say so.")
        return verdict(8 if score else True, justification="The recording says so.")


@pytest.fixture
def docs_judge(judge_server: ScriptedJudge, litellm_preloaded: None) -> Iterator[DocsJudge]:
    yield DocsJudge(judge_server)


def _environment(judge: ScriptedJudge, project: Path) -> dict[str, str]:
    """What the page's runs see: the scripted judge, no PROP_* or pytest settings of the shell."""
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("PROP_", "PYTEST_", "COV_")) and name != "PYTHONPATH"
    }
    env.update(
        PROP_MODEL="openai/judge-model",
        PROP_API_BASE=judge.base_url,
        PROP_API_KEY=API_KEY,
        PROP_RETRIES="0",
        LITELLM_LOCAL_MODEL_COST_MAP="True",
        # The Python API's default cache is the user's cache folder: keep it in the project.
        XDG_CACHE_HOME=str(project / ".user-cache"),
        # `pytest` and `python` in a block are this interpreter's.
        PATH=os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]),
        NO_COLOR="1",
    )
    if importlib.util.find_spec("pytest_asyncio") is not None:
        # pytest-asyncio (the test extra; claims.md's async tests use it) warns at every start
        # unless told the loop scope of async fixtures.
        env["PYTEST_ADDOPTS"] = "-o asyncio_default_fixture_loop_scope=function"
    return env


@dataclass
class Outcome:
    code: int
    output: str


class PageRun:
    """One page's project folder and how its blocks are run there.

    pytest itself runs in this process (pytester's inline run: no interpreter start and no
    litellm import per run, which made a subprocess per block cost minutes on a busy machine);
    every other command runs in a subprocess with the same environment.
    """

    def __init__(
        self, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, judge: DocsJudge
    ):
        self.pytester = pytester
        self.project = pytester.path
        self.judge = judge
        self.env = _environment(judge.server, self.project)
        for name in [name for name in os.environ if name not in self.env]:
            monkeypatch.delenv(name)
        for name, value in self.env.items():
            monkeypatch.setenv(name, value)

    def pytest(self, *args: str) -> Outcome:
        result = self.pytester.runpytest_inprocess(*args)
        return Outcome(int(result.ret), "\n".join(result.outlines + result.errlines))

    def subprocess(self, command: list[str]) -> Outcome:
        result = subprocess.run(
            command, cwd=self.project, env=self.env, capture_output=True, text=True, check=False
        )
        return Outcome(result.returncode, result.stdout + result.stderr)

    def bash(self, code: str) -> Outcome:
        """Each command of the block in turn: `pytest ...` inline, the others through bash."""
        outputs = []
        for line in _commands(code):
            words = shlex.split(line, comments=True)
            if words and words[0] == "pytest" and not set(line) & set("|&;<>$`"):
                outcome = self.pytest(*words[1:])
            else:
                outcome = self.subprocess(["bash", "-euo", "pipefail", "-c", line])
            outputs.append(f"$ {line}\n{outcome.output}")
            if outcome.code != 0:
                return Outcome(outcome.code, "\n".join(outputs))
        return Outcome(0, "\n".join(outputs))

    def block(self, block: Block) -> Outcome | None:
        """Run one block (writing its file first); None for a file that is only written."""
        if block.lang == "bash":
            return self.bash(block.code)
        if block.title is not None or block.lang == "python":
            name = block.title or (
                f"test_block_{block.line}.py" if block.is_test_file else f"snippet_{block.line}.py"
            )
            path = self.project / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(block.code, encoding="utf-8")
            if block.is_test_file:
                return self.pytest(name)
            if block.lang == "python" and block.title is None:
                return self.subprocess([sys.executable, name])
        return None


def _commands(code: str) -> list[str]:
    """A bash block's commands: one a line (a trailing backslash continues it); blanks dropped."""
    commands, current = [], ""
    for raw in code.splitlines():
        if raw.rstrip().endswith("\\"):
            current += raw.rstrip()[:-1] + " "
            continue
        line = (current + raw).strip()
        current = ""
        if line and not line.startswith("#"):
            commands.append(line)
    return commands


def _run_page(page: str, run: PageRun) -> int:
    if page != GETTING_STARTED:
        for name, code in _seed_files().items():
            (run.project / name).write_text(code, encoding="utf-8")
    ran = 0
    for block in page_blocks(DOCS / page):
        if block.not_run is not None or block.lang not in (*RUN_LANGUAGES, *FILE_LANGUAGES):
            continue
        run.judge.false_for.extend(block.directives.get("judge-false", []))
        levels = block.directives.get("judge-reasoning")
        run.judge.server.reasoning_efforts = frozenset(levels[0].split(",")) if levels else None
        try:
            outcome = run.block(block)
        finally:
            run.judge.server.reasoning_efforts = None
        if outcome is None:
            continue
        ran += 1
        assert outcome.code == block.expected_exit, (
            f"{block.where}: the {block.lang} block exited {outcome.code}, expected "
            f"{block.expected_exit}\n--- block\n{block.code}--- output\n{outcome.output[-8000:]}"
        )
    return ran


def _page_ids() -> list[str]:
    return [path.name for path in pages() if path.name not in OWN_RUNNERS]


@pytest.mark.parametrize("page", sorted(OWN_RUNNERS))
def test_a_page_with_its_own_runner_is_run_by_it(page: str) -> None:
    runner = ROOT / OWN_RUNNERS[page]
    assert (DOCS / page).is_file(), f"docs/{page} is gone: drop it from OWN_RUNNERS"
    assert runner.is_file(), f"docs/{page}'s examples are run by {OWN_RUNNERS[page]}, which is gone"
    assert f"docs/{page}" in runner.read_text(encoding="utf-8") or f'"{page}"' in runner.read_text(
        encoding="utf-8"
    )


@pytest.mark.parametrize("page", _page_ids())
def test_the_page_s_examples_run(
    page: str, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, docs_judge: DocsJudge
) -> None:
    runnable = [
        block
        for block in page_blocks(DOCS / page)
        if block.lang in RUN_LANGUAGES and block.not_run is None
    ]
    ran = _run_page(page, PageRun(pytester, monkeypatch, docs_judge))
    assert ran == len([block for block in runnable if _runs(block)])
    if runnable:
        # The examples reached the judge for real (a page of cached claims would not).
        assert docs_judge.server.requests, f"docs/{page}: no block asked the judge anything"


def _runs(block: Block) -> bool:
    return block.lang == "bash" or block.title is None or block.is_test_file


def test_blocks_are_runnable_or_marked_with_a_reason() -> None:
    blocks = all_blocks()
    assert blocks, "no code blocks found in docs/"
    not_run = [block for block in blocks if block.not_run is not None]
    for block in not_run:
        assert block.not_run.strip(), f"{block.where}: a not-run block needs a reason"
        assert block.lang in RUN_LANGUAGES, f"{block.where}: only python/bash blocks are run"
    assert len(not_run) <= MAX_NOT_RUN, (
        f"{len(not_run)} blocks are marked not-run (at most {MAX_NOT_RUN}): "
        + ", ".join(block.where for block in not_run)
    )
    unknown = [
        block.where
        for block in blocks
        if block.lang not in RUN_LANGUAGES and block.lang not in SHOWN_LANGUAGES
    ]
    assert not unknown, f"blocks in a language the collector neither runs nor shows: {unknown}"
