"""What importing litellm costs a process: the collector's part of it (see collector.py).

Each case runs in a fresh interpreter: this test process imported litellm long ago, and the
collector's state is process-wide.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_propositions import transport

# Prints, as JSON, how many collections litellm's or the openai SDK's own import code set off
# while load_litellm ran, and at exit whether the objects still alive were frozen (an atexit
# handler registered before load_litellm runs after the one it registers).
PROBE = """
import atexit, gc, json, os, sys
PACKAGES = (os.sep + "litellm" + os.sep, os.sep + "openai" + os.sep)
def set_off_by_an_import(frame):
    while frame is not None:
        if any(package in frame.f_code.co_filename for package in PACKAGES):
            return True
        frame = frame.f_back
    return False
collections = []
def watch(phase, info):
    if phase == "start" and set_off_by_an_import(sys._getframe(1)):
        collections.append(info["generation"])
if {disable!r}:
    gc.disable()
atexit.register(lambda: print(json.dumps({{"frozen_at_exit": gc.get_freeze_count()}})))
from pytest_propositions import collector
from pytest_propositions.transport import load_litellm
gc.callbacks.append(watch)
load_litellm({model!r}, freeze={freeze!r})
gc.callbacks.remove(watch)
frozen_after_import = gc.get_freeze_count()
collector.thaw()
print(json.dumps({{
    "collections_during_import": len(collections),
    "enabled_after": gc.isenabled(),
    "openai_resources": "openai.resources" in sys.modules,
    "frozen_after_import": frozen_after_import,
    "frozen_after_thaw": gc.get_freeze_count(),
}}))
"""


def probe(model: str | None, *, freeze: bool = False, disable: bool = False) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROP_")}
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(model=model, freeze=freeze, disable=disable)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    facts: dict[str, Any] = {}
    for line in done.stdout.splitlines():
        facts.update(json.loads(line))
    return facts


def test_import_runs_without_collections_and_exit_skips_the_last_one() -> None:
    facts = probe("openai/judge-model")
    assert facts["collections_during_import"] == 0
    assert facts["enabled_after"] is True
    assert facts["frozen_after_import"] == 0  # outside a session nothing is frozen for long
    assert facts["frozen_at_exit"] > 100_000  # litellm's heap: the final collection skips it
    # The openai SDK's client code, which the first request would otherwise import.
    assert facts["openai_resources"] is True


def test_in_a_session_the_heap_is_frozen_until_thawed() -> None:
    facts = probe("openai/judge-model", freeze=True)
    assert facts["collections_during_import"] == 0
    assert facts["frozen_after_import"] > 100_000
    assert facts["frozen_after_thaw"] == 0
    assert facts["enabled_after"] is True


def test_a_provider_without_the_openai_sdk_does_not_load_its_client_code() -> None:
    facts = probe("anthropic/claude-3-5-haiku-20241022")
    assert facts["collections_during_import"] == 0
    assert facts["openai_resources"] is False


def test_a_collector_the_user_disabled_stays_disabled() -> None:
    facts = probe(None, disable=True)
    assert facts["enabled_after"] is False
    assert facts["openai_resources"] is False


@pytest.fixture
def fresh_process_flag() -> Any:
    """Pretend no request has been made yet in this process; restore the flag afterwards."""
    was_set = transport._first_request.is_set()
    transport._first_request.clear()
    yield
    if was_set:
        transport._first_request.set()


@pytest.mark.usefixtures("fresh_process_flag")
def test_only_the_first_request_runs_with_the_collector_paused() -> None:
    assert gc.isenabled()
    with transport._first_request_warm_up():
        assert not gc.isenabled()
    assert gc.isenabled()
    with transport._first_request_warm_up():
        assert gc.isenabled()


@pytest.mark.usefixtures("fresh_process_flag")
def test_the_collector_comes_back_when_the_first_request_fails() -> None:
    with pytest.raises(RuntimeError), transport._first_request_warm_up():
        raise RuntimeError("judge down")
    assert gc.isenabled()


# The inner project: a conftest that records how many objects are frozen while a test runs
# after a claim, and at the start of every full collection once the session has finished;
# written at exit, after pytest's cleanups. test_claim drops a reference cycle with a finalizer
# that existed when its claim froze the heap: only a thawed collection can finalize it.
SESSION_CONFTEST = """
import atexit, gc, json, pathlib

FACTS = {"collections_after_session": []}
FINISHED = []

def watch(phase, info):
    if phase == "start" and info["generation"] == 2 and FINISHED:
        FACTS["collections_after_session"].append(gc.get_freeze_count())

gc.callbacks.append(watch)
atexit.register(lambda: pathlib.Path("frozen.json").write_text(json.dumps(FACTS)))

class Cycle:
    def __init__(self):
        self.me = self
    def __del__(self):
        pathlib.Path("finalized").write_text("yes")

def pytest_runtest_teardown(item):
    FACTS[item.name] = gc.get_freeze_count()

def pytest_sessionfinish(session):
    FINISHED.append(True)
"""

SESSION_TESTS = """
from conftest import Cycle

def test_before(): pass

def test_claim(assert_proposition):
    cycle = Cycle()
    assert_proposition("Oscar talks about trains.", "Oscar mentions trains.")
"""


def assert_thawed_for_the_last_collection_only(frozen: dict[str, Any], path: Path) -> None:
    """pytest collects at unconfigure and again at cleanup: the first skips the frozen heap, the
    second (after the plugin's unconfigure thawed it) traverses it once, finalizers included."""
    collections = frozen["collections_after_session"]
    assert len(collections) >= 2, collections
    assert collections[0] > 0  # pytest's unconfigure-time collection: the heap still frozen
    assert collections[-1] == 0  # its cleanup-time collection: thawed
    assert collections.count(0) == 1  # the thawed heap is traversed once, not at every pass
    assert (path / "finalized").read_text() == "yes"


def test_a_pytest_session_thaws_the_heap_for_its_last_end_of_run_collection(
    pytester: pytest.Pytester, inner_run: list[str]
) -> None:
    pytester.makeconftest(SESSION_CONFTEST)  # in place of inner_run's world, not needed here
    pytester.makepyfile(test_session=SESSION_TESTS)
    result = pytester.runpytest_subprocess(*inner_run)
    result.assert_outcomes(passed=2)
    frozen = json.loads((pytester.path / "frozen.json").read_text())
    assert frozen["test_before"] == 0  # no claim judged live yet: nothing imported, nothing frozen
    assert frozen["test_claim"] > 100_000
    assert_thawed_for_the_last_collection_only(frozen, pytester.path)


def test_a_cached_claim_freezes_the_heap_too_and_the_session_thaws_it(
    pytester: pytest.Pytester, inner_run: list[str]
) -> None:
    # A cached run never imports litellm; what the collector would traverse in every full
    # collection is pytest's own heap (items, reports), which the first claim sets aside.
    pytester.makeconftest(SESSION_CONFTEST)
    pytester.makepyfile(test_session=SESSION_TESTS)
    cached = [arg for arg in inner_run if not arg.startswith("--prop-cache=")]
    cached.append(f"--prop-cache-dir={pytester.path / 'verdicts'}")
    pytester.runpytest_subprocess(*cached).assert_outcomes(passed=2)  # records the verdict
    (pytester.path / "finalized").unlink()  # the recording run's; the cached run writes its own

    result = pytester.runpytest_subprocess(*cached)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*1 from cache, 0 judge calls*"])
    frozen = json.loads((pytester.path / "frozen.json").read_text())
    assert frozen["test_before"] == 0  # no claim yet: the collector is untouched
    assert frozen["test_claim"] > 10_000
    assert_thawed_for_the_last_collection_only(frozen, pytester.path)


# Records every module name pytest's assertion-rewriting hook is asked about, and where the hook
# sits in sys.meta_path after the claim.
REWRITE_CONFTEST = """
import json, pathlib, sys
import pytest
from _pytest.assertion.rewrite import AssertionRewritingHook

pytest.register_assert_rewrite("helper_after_claim")
ASKED = []
_find_spec = AssertionRewritingHook.find_spec

def find_spec(self, name, path=None, target=None):
    ASKED.append(name)
    return _find_spec(self, name, path, target)

AssertionRewritingHook.find_spec = find_spec

def pytest_sessionfinish(session):
    hooks = [i for i, f in enumerate(sys.meta_path) if isinstance(f, AssertionRewritingHook)]
    pathlib.Path("asked.json").write_text(json.dumps({
        "litellm_asked": [n for n in ASKED if n.split(".")[0] in ("litellm", "openai")],
        "litellm_imported": "litellm" in sys.modules,
        "helper_asked": "helper_after_claim" in ASKED,
        "hook_positions": hooks,
    }))
"""

REWRITE_TESTS = """
def test_claim(assert_proposition):
    assert_proposition("Oscar talks about trains.", "Oscar mentions trains.")

def test_after():
    import helper_after_claim
    assert helper_after_claim.VALUE == 1
"""


def test_litellm_is_imported_past_pytests_assertion_rewriting_hook_which_then_returns(
    pytester: pytest.Pytester, inner_run: list[str]
) -> None:
    pytester.makeconftest(REWRITE_CONFTEST)
    pytester.makepyfile(test_rewrite=REWRITE_TESTS, helper_after_claim="VALUE = 1\n")
    pytester.runpytest_subprocess(*inner_run).assert_outcomes(passed=2)
    facts = json.loads((pytester.path / "asked.json").read_text())
    assert facts["litellm_imported"] is True
    asked = facts["litellm_asked"]
    # load_litellm's ~2,600 modules skip the hook; the first request's few dozen lazy ones don't.
    assert "litellm" not in asked and "openai.resources" not in asked
    assert len(asked) < 100, asked
    assert facts["hook_positions"] == [0]  # back at the head of sys.meta_path
    assert facts["helper_asked"] is True  # and still asked about imports after the claim
