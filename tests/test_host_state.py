"""The plugin leaves its host interpreter alone: a user's tests behave the same with it installed.

A pytest run in a fresh process, with live claims (the scripted judge) and cached claims, watches
the interpreter's global machinery: the garbage collector (enabled, thresholds, callbacks,
frozen objects), the import system (``sys.meta_path``, also at the moment litellm is imported)
and exit hooks. litellm and the libraries it imports register exit hooks and a finder of their
own; those are theirs, so each exit hook is attributed to the module that registered it.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conftest import LITELLM_PATH

# The inner project's conftest. It snapshots the machinery when the session starts, after every
# test and after every plugin's unconfigure, and, through a finder placed first in
# sys.meta_path, at the moment anything asks to import litellm (before the plugin imports it).
HOST_CONFTEST = """
import atexit, gc, json, pathlib, sys
import pytest

REGISTERED_BY = []
_register = atexit.register

def register(function, *args, **kwargs):
    REGISTERED_BY.append(sys._getframe(1).f_globals.get("__name__", "?"))
    return _register(function, *args, **kwargs)

atexit.register = register

def snapshot():
    return {
        "gc_enabled": gc.isenabled(),
        "gc_threshold": list(gc.get_threshold()),
        "gc_callbacks": len(gc.callbacks),
        "frozen": gc.get_freeze_count(),
        "meta_path": [id(finder) for finder in sys.meta_path],
        "meta_path_ours": [
            type(f).__module__ for f in sys.meta_path
            if type(f).__module__.startswith("pytest_propositions")
        ],
        "atexit": atexit._ncallbacks(),
        "registered_by": list(REGISTERED_BY),
    }

class WatchLitellmImport:
    '''Asked first about every import; records the machinery when litellm's import starts.'''
    def find_spec(self, name, path=None, target=None):
        if name == "litellm":
            FACTS.setdefault("at_litellm_import", snapshot())
        return None

sys.meta_path.insert(0, WatchLitellmImport())
FACTS = {}

def save():
    pathlib.Path("host.json").write_text(json.dumps(FACTS))

@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session):
    FACTS["start"] = snapshot()

def pytest_runtest_teardown(item):
    FACTS[item.name] = snapshot()

@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    FACTS["end"] = snapshot()
    save()

class Cycle:
    '''A reference cycle whose finalizer leaves a mark: it runs only when the cycle is collected.'''
    def __init__(self, name):
        self.me = self
        self.name = name
    def __del__(self):
        pathlib.Path(self.name).write_text("finalized")
"""

# Each test creates a cycle before its claim and drops it after: the collector must finalize it
# at once, inside the test, whatever the plugin did at the claim (first one of the session or not).
HOST_TESTS = """
import gc, pathlib
from conftest import Cycle

def claim_then_collect(assert_proposition, claim, name):
    cycle = Cycle(name)
    assert_proposition("Oscar talks about trains and quiet cities.", claim)
    del cycle
    gc.collect()
    assert pathlib.Path(name).read_text() == "finalized"

def test_before():
    pass

def test_recorded_claim(assert_proposition):
    claim_then_collect(assert_proposition, "Oscar mentions trains.", "recorded")

def test_new_claim(assert_proposition):
    claim_then_collect(assert_proposition, "Oscar mentions quiet cities.", "new")
"""


def assert_host_untouched(facts: dict[str, Any]) -> None:
    start = facts["start"]
    for moment in ("test_before", "test_recorded_claim", "test_new_claim", "end"):
        now = facts[moment]
        assert now["gc_enabled"] is True, moment
        assert now["gc_threshold"] == start["gc_threshold"], moment
        assert now["gc_callbacks"] == start["gc_callbacks"], moment
        assert now["frozen"] == 0, moment
        # Every finder present at the start is still there, the same object, in the same order;
        # finders added later (importlib_metadata's, by litellm's import) are not the plugin's.
        kept = [finder for finder in now["meta_path"] if finder in start["meta_path"]]
        assert kept == start["meta_path"], moment
        assert now["meta_path_ours"] == [], moment
        # Exit hooks: every one registered since the start is accounted for, and none is ours.
        registered = now["registered_by"][len(start["registered_by"]) :]
        assert now["atexit"] - start["atexit"] == len(registered), (moment, registered)
        assert not [name for name in registered if name.startswith("pytest_propositions")]


@pytest.fixture
def transport_path(both_paths: str) -> str:
    return both_paths


def test_live_and_cached_claims_leave_the_interpreter_alone(
    pytester: pytest.Pytester, inner_run: list[str], transport_path: str
) -> None:
    pytester.makeconftest(HOST_CONFTEST)  # in place of inner_run's world, not needed here
    cache = [arg for arg in inner_run if not arg.startswith("--prop-cache=")]
    cache.append(f"--prop-cache-dir={pytester.path / 'verdicts'}")
    pytester.makepyfile(
        test_host="def test_recorded_claim(assert_proposition):\n"
        "    assert_proposition('Oscar talks about trains and quiet cities.',"
        " 'Oscar mentions trains.')\n"
    )
    pytester.runpytest_subprocess(*cache).assert_outcomes(passed=1)  # records one verdict
    (pytester.path / "test_host.py").unlink()

    pytester.makepyfile(test_host_state=HOST_TESTS)
    result = pytester.runpytest_subprocess(*cache)
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["*2 claims*1 from cache, 1 judged live, 1 judge call,*"])
    facts = json.loads((pytester.path / "host.json").read_text())
    assert_host_untouched(facts)
    if transport_path == "openai":
        # The light path never imports litellm (it only finds its price table, by name).
        assert not any(name.startswith("litellm") for name in facts["end"]["registered_by"])
        return
    # litellm was imported by the live claim, with the machinery as the session started it.
    at_import = facts["at_litellm_import"]
    assert at_import["gc_enabled"] is True
    assert at_import["frozen"] == 0
    assert at_import["meta_path"] == facts["start"]["meta_path"]
    # The test isn't vacuous: litellm registered exit hooks of its own, and the check saw them.
    assert any(name.startswith("litellm") for name in facts["end"]["registered_by"])


def test_a_run_without_claims_leaves_the_interpreter_alone(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(HOST_CONFTEST)
    pytester.makepyfile(
        test_plain="def test_before(): pass\n"
        "def test_recorded_claim(): pass\n"
        "def test_new_claim(): pass\n"
    )
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=3)
    facts = json.loads((pytester.path / "host.json").read_text())
    assert_host_untouched(facts)
    assert "at_litellm_import" not in facts


@pytest.mark.parametrize("both_paths", [LITELLM_PATH])  # what importing litellm does
def test_a_live_claim_leaves_the_hosts_loggers_as_they_were(
    pytester: pytest.Pytester, inner_run: list[str]
) -> None:
    # Importing litellm sets httpx's logger to WARNING and lets its own loggers write DEBUG dumps
    # to stderr whenever the root allows; neither may leak into the user's run.
    pytester.makepyfile(
        test_logs="""
        import logging, sys

        def test_live(assert_proposition):
            logging.getLogger("httpx").setLevel(logging.DEBUG)
            assert "litellm" not in sys.modules
            assert_proposition("Ana acts: [TALK] hi", "Ana greets.")
            assert "litellm" in sys.modules
            assert logging.getLogger("httpx").level == logging.DEBUG
        """
    )
    result = pytester.runpytest_subprocess(*inner_run, "--log-level=DEBUG", "-rA")
    result.assert_outcomes(passed=1)
    assert "POST Request Sent from LiteLLM" not in result.stdout.str() + result.stderr.str()
