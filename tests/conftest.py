"""Shared fixtures for the test suite."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import httpcore  # noqa: F401  (see litellm_preloaded: httpx maps httpcore's exceptions once)
import pytest

from tests.support import modules_seen
from tests.support.judge_server import ScriptedJudge

if os.environ.get(modules_seen.FOLDER_VARIABLE):
    modules_seen.record()


def pytest_sessionfinish() -> None:
    """With ``TESTS_MODULES_SEEN`` set, the package modules this process loaded (modules_seen)."""
    modules_seen.write()


@pytest.fixture(scope="session")
def litellm_preloaded() -> None:
    """Import litellm once in this process, before any inline pytester run imports it.

    Otherwise pytester's sys.modules snapshot removes litellm (and what it imported) after the
    inner run, which leaves importlib.metadata seeing no installed distributions, so the next
    inner run cannot load any plugin from its entry point.
    """
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm  # noqa: F401

    # Likewise numpy (under scipy, for claims over runs): its compiled core cannot be loaded
    # twice in one process, so an inner run importing it after a snapshot removed it fails.
    try:
        import scipy.special
        import scipy.stats  # noqa: F401
    except ImportError:
        pass


# The inner project of pytester runs: one `world` fixture every surface test can make claims about.
INNER_WORLD = """
import pytest
from pytest_propositions.trace import Agent, World

@pytest.fixture
def world():
    oscar = Agent("Oscar", persona={"occupation": "architect"})
    room = World("Room", agents=[oscar])
    oscar.hears("Where do you like to travel?")
    oscar.says("Quiet cities with great architecture.")
    return room
"""


PATHS = ("litellm", "openai")

# The modules whose tests run once per path: what they check differs by path (the request sent,
# the reply and its envelope read, faults, errors and their messages, retries, what importing
# litellm does). Every other test takes one path, the light one that ``auto`` picks for the
# scripted judge's ``openai/`` models; tests/test_architecture.py holds the suite to this list.
BOTH_PATHS_MODULES = frozenset(
    {
        "test_families",
        "test_faults",
        "test_host_state",
        "test_red_team_replies",
        "test_reply_envelope",
        "test_secrets",
        "test_whole_test_replay",
        "test_windows",
    }
)
# litellm's path is the slow one (its import, its client): the fast tier takes the light path
# only, CI both.
LITELLM_PATH = pytest.param("litellm", marks=pytest.mark.slow, id="litellm")
LIGHT_PATH = "openai"


@pytest.fixture
def transport_path() -> str:
    """The path live calls take (--prop-transport). A module of ``BOTH_PATHS_MODULES`` overrides
    it with a ``transport_path`` fixture that returns ``both_paths``."""
    return "auto"


@pytest.fixture(params=[LITELLM_PATH, LIGHT_PATH])
def both_paths(request: pytest.FixtureRequest) -> str:
    """Each test once through litellm and once through the light (plain HTTP) path."""
    path: str = request.param
    return path


def on_paths(cases: Iterable[Any], both: Callable[[Any], bool]) -> list[Any]:
    """``cases`` (``pytest.param`` sets) with a last value, ``both_paths``, added: once per path
    for a case ``both`` picks (what it checks differs by path), else once, on the light path."""
    expanded = []
    for case in cases:
        paths = [LITELLM_PATH, LIGHT_PATH] if both(case) else [LIGHT_PATH]
        for path in paths:
            name = path if isinstance(path, str) else path.values[0]
            marks = [*case.marks] if isinstance(path, str) else [*case.marks, *path.marks]
            expanded.append(pytest.param(*case.values, name, marks=marks, id=f"{case.id}-{name}"))
    return expanded


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test on a real PostgreSQL server (the ``postgres_server`` fixture) is ``slow``: it runs
    pytest processes against a database; the fast tier leaves it to CI."""
    for item in items:
        if "postgres_server" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True)
def _terminal_width_of_80(monkeypatch: pytest.MonkeyPatch) -> None:
    """Inner runs (pytester, subprocesses) lay out their output for 80 columns, as on CI with no
    terminal: a sample compared line by line must not change with the width of the outer shell."""
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.delenv("LINES", raising=False)


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """pytest's own, its runs loading no pytest-asyncio (the test extra has it for
    tests/test_async_claims.py, which lets it in): it would add a header line and a
    configuration warning to every run. (pytester empties PYTEST_ADDOPTS as it is made.)"""
    monkeypatch.setenv("PYTEST_ADDOPTS", "-p no:asyncio")
    return pytester


@pytest.fixture
def inner_run(
    pytester: pytest.Pytester,
    judge_server: ScriptedJudge,
    monkeypatch: pytest.MonkeyPatch,
    transport_path: str,
) -> list[str]:
    """An inner project judged by the scripted server: its `world` fixture, no PROP_* settings
    of the outer shell, and the arguments that point it at the judge with the cache off."""
    for name in [name for name in os.environ if name.startswith("PROP_")]:
        monkeypatch.delenv(name)
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    monkeypatch.setenv("PROP_API_KEY", "test-key-not-real")
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    pytester.makeconftest(INNER_WORLD)
    return [
        "--prop-model=openai/judge-model",
        f"--prop-api-base={judge_server.base_url}",
        "--prop-cache=off",
        "--prop-retries=0",
        f"--prop-transport={transport_path}",
        "-p",
        "no:cacheprovider",
    ]


@pytest.fixture
def judge_server(litellm_preloaded: None) -> Iterator[ScriptedJudge]:
    """A fresh scripted judge on a free loopback port, stopped after the test."""
    with ScriptedJudge() as judge:
        yield judge


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[object]:
    """A real PostgreSQL server of this session, on a free loopback port (tests/support/postgres)."""
    from tests.support.postgres import find_bindir, running_server

    bindir = find_bindir()
    if bindir is None:
        pytest.skip(
            "no PostgreSQL server programs (initdb, pg_ctl, postgres) on this machine: install "
            "the server (Debian: apt-get install postgresql) to run the shared store's tests"
        )
    with running_server(bindir) as server:
        yield server
