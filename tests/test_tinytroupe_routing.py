"""Issue 42, item 12: ``route_tinytroupe_propositions`` judges TinyTroupe's own propositions here
for one test (its ready-made ones, an Intervention's textual precondition, the action
generator's quality checks): cached, counted and reported, so a rerun replays them with no judge
call; undone after the test; TinyTroupe imported only by a test that asks for it.

TinyTroupe is not installable from the package index (it holds a 0.0.1 placeholder), so CI runs
these against a stand-in package with TinyTroupe's module paths and call shapes
(tests/support/tinytroupe_like.py); the last test runs against the real library when installed.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from tests.support.docs_blocks import page_blocks
from tests.support.judge_server import ScriptedJudge, verdict
from tests.support.tinytroupe_like import install

pytest_plugins = ["pytester"]

CONFTEST = """
import pytest

from tinytroupe.agent import TinyPerson
from tinytroupe.environment import TinyWorld


@pytest.fixture
def oscar():
    oscar = TinyPerson("Oscar", {"occupation": {"title": "Architect"}, "age": 30})
    TinyWorld("Focus group", [oscar])
    oscar.listen("Tell me about your travel preferences.")
    oscar.act("TALK", "I love Kyoto: quiet temples and great architecture.")
    oscar.act("DONE")
    return oscar
"""

TESTS = """
import pytest

from tinytroupe.agent.action_generator import ActionGenerator
from tinytroupe.experimentation import Proposition as LibraryProposition
from tinytroupe.steering import Intervention
from tinytroupe.validation import propositions

ORIGINAL = (LibraryProposition.check, LibraryProposition.score)
# Made at import, before the fixture: its copies of the ready-made propositions are routed too.
GENERATOR = ActionGenerator()


def test_routed(oscar, route_tinytroupe_propositions):
    # A ready-made proposition, scored by the test itself.
    assert propositions.persona_adherence.score(oscar) == 8
    assert propositions.persona_adherence.justification == "He talks like an architect."
    # An Intervention's textual precondition, judged inside TinyTroupe.
    applied = []
    intervention = (
        Intervention(oscar)
        .set_textual_precondition("Oscar has talked about travel.")
        .set_effect(applied.append)
    )
    assert intervention.execute() is True and applied == [oscar]
    assert intervention.precondition_justification().startswith("He names Kyoto.")
    # The action generator's quality check, on its own copy of a ready-made proposition.
    passed, value, feedback = GENERATOR._check_proposition(
        oscar, GENERATOR.action_persona_adherence, {"type": "TALK", "content": "Kyoto, again."}
    )
    assert (passed, value) == (True, 8) and "Justification = A fitting reply." in feedback
    # A precondition that is false: no judge, as TinyTroupe does it.
    assert GENERATOR.action_fluency.score(
        target=oscar, claim_variables={"action": {"type": "DONE"}}
    ) == 9


def test_undone_after_the_test(oscar):
    assert (LibraryProposition.check, LibraryProposition.score) == ORIGINAL
    with pytest.raises(RuntimeError, match="TinyTroupe's own judge"):
        propositions.persona_adherence.score(oscar)
"""


@pytest.fixture
def tinytroupe(
    pytester: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory, judge_server: ScriptedJudge
) -> Path:
    """The stand-in TinyTroupe, installed outside the inner project, on its sys.path."""
    folder = install(tmp_path_factory.mktemp("installed"))
    pytester.syspathinsert(folder)
    judge_server.on("behaves as its persona", verdict(8, "He talks like an architect."))
    judge_server.on("Oscar has talked about travel.", verdict(True, "He names Kyoto."))
    judge_server.on("fits the agent's persona exactly", verdict(8, "A fitting reply."))
    return folder


def _cached_run(inner_run: list[str], cache: str, cache_dir: Path) -> list[str]:
    kept = [argument for argument in inner_run if not argument.startswith("--prop-cache=")]
    return [
        *kept,
        f"--prop-cache={cache}",
        f"--prop-cache-dir={cache_dir}",
        "--prop-report=report.json",
        "-rA",
    ]


def test_tinytroupes_own_propositions_are_judged_cached_and_reported_for_one_test(
    pytester: pytest.Pytester, tinytroupe: Path, judge_server: ScriptedJudge, inner_run: list[str]
) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_tinytroupe=TESTS)
    cache_dir = pytester.path / "verdicts"

    first = pytester.runpytest(*_cached_run(inner_run, "use", cache_dir))
    first.assert_outcomes(passed=2)
    assert len(judge_server.requests) == 3
    first.stdout.fnmatch_lines(
        ["propositions: 4 claims, 0 passed, 0 failed, 0 judge errors, 4 by call (4 upheld, *"]
    )
    report = json.loads((pytester.path / "report.json").read_text(encoding="utf-8"))
    claims = sorted(
        (r["by_call"], r["verdict"]["claim"].split(".")[0].strip(), r.get("made_by"))
        for r in report["verdicts"]
    )
    assert claims == [
        # Judged where TinyTroupe's code asked: labelled with its module.
        ("TinyTroupe's Proposition.check", "Oscar has talked about travel", "tinytroupe.steering.intervention"),
        ("TinyTroupe's Proposition.score", "The agent behaves as its persona specification says it would", None),
        ("TinyTroupe's Proposition.score", "The next action fits the agent's persona exactly", "tinytroupe.agent.action_generator"),
        ("TinyTroupe's Proposition.score", "The next action reads naturally", None),
    ]  # fmt: skip

    # The rerun replays every one of them from the cache: no judge call.
    judge_server.clear_requests()
    again = pytester.runpytest(*_cached_run(inner_run, "replay", cache_dir))
    again.assert_outcomes(passed=2)
    assert judge_server.requests == []
    again.stdout.fnmatch_lines(
        ["propositions: every verdict (3) came from the cache; the judge was not called"]
    )


GUIDE = Path(__file__).resolve().parent.parent / "docs" / "migrating.md"

SETTINGS_TEST = """
from tinytroupe import config_manager


def test_tinytroupes_settings(request):
    replay = request.config.getoption("prop_cache") == "replay"
    assert config_manager.get("waiting_time") == (0 if replay else 1.0)
    assert config_manager.get("max_attempts") == (1 if replay else 5.0)
"""


def test_the_guides_tinytroupe_blocks_run_and_replay(
    pytester: pytest.Pytester, tinytroupe: Path, judge_server: ScriptedJudge, inner_run: list[str]
) -> None:
    """docs/migrating.md: the routed test, the conftest.py that routes every test, and the one
    that turns TinyTroupe's waits and retries off for a replay."""
    blocks = [block for block in page_blocks(GUIDE) if block.title is not None]
    [steering] = [block.code for block in blocks if block.title == "test_steering.py"]
    conftests = [
        block.code
        for block in blocks
        if block.title == "conftest.py"
        and ("route_tinytroupe_propositions" in block.code or "config_manager" in block.code)
    ]
    assert len(conftests) == 2
    pytester.makeconftest("\n\n".join([CONFTEST, *conftests]))
    pytester.makepyfile(test_steering=steering, test_settings=SETTINGS_TEST)
    judge_server.on("Oscar mentions a city.", verdict(True, "He names Kyoto."))
    cache_dir = pytester.path / "verdicts"
    pytester.runpytest(*_cached_run(inner_run, "use", cache_dir)).assert_outcomes(passed=2)
    assert len(judge_server.requests) == 2
    judge_server.clear_requests()
    replayed = pytester.runpytest(*_cached_run(inner_run, "replay", cache_dir))
    replayed.assert_outcomes(passed=2)
    assert judge_server.requests == []


def test_tinytroupe_is_imported_only_by_a_test_that_routes_it(
    pytester: pytest.Pytester, tinytroupe: Path, inner_run: list[str]
) -> None:
    pytester.makepyfile(
        """
        import sys

        def test_plain(assert_proposition, world):
            assert_proposition(world, "Oscar talks about architecture.")
            assert not any(name.startswith("tinytroupe") for name in sys.modules)
        """
    )
    pytester.runpytest(*inner_run).assert_outcomes(passed=1)


def test_without_tinytroupe_the_fixture_says_how_to_get_it(
    pytester: pytest.Pytester, inner_run: list[str]
) -> None:
    if importlib.util.find_spec("tinytroupe") is not None:
        pytest.skip("TinyTroupe is installed here: this test is for a machine without it")
    pytester.makepyfile("def test_routed(route_tinytroupe_propositions):\n    pass\n")
    result = pytester.runpytest(*inner_run)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "E*ImportError: route_tinytroupe_propositions: TinyTroupe cannot be imported (No module "
            "named 'tinytroupe'). Install it from its repository (the package index holds only a "
            "placeholder under its name)*"
        ]
    )


REAL_TESTS = """
from tinytroupe.agent import TinyPerson
from tinytroupe.agent.action_generator import ActionGenerator
from tinytroupe.steering import Intervention
from tinytroupe.validation import propositions


def test_real_tinytroupe(route_tinytroupe_propositions):
    oscar = TinyPerson("Oscar Routed")
    oscar.define("occupation", {"title": "Architect"})
    oscar.listen("Tell me about your travel preferences.")
    assert propositions.persona_adherence.score(oscar) == 8
    applied = []
    intervention = Intervention(oscar).set_textual_precondition(
        "Oscar has talked about travel."
    ).set_effect(applied.append)
    assert intervention.execute() is True and applied
    generator = ActionGenerator()
    passed, value, _ = generator._check_proposition(
        oscar, generator.action_persona_adherence, {"type": "TALK", "content": "Kyoto."}
    )
    assert (passed, value) == (True, 8)
"""


def test_real_tinytroupe_objects_are_routed(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, inner_run: list[str]
) -> None:
    pytest.importorskip(
        "tinytroupe.experimentation",
        reason="TinyTroupe is not installed: the package index holds only a placeholder under "
        "its name; install it from its repository to run this test against the real library",
    )
    judge_server.on("THE AGENT ADHERES TO THE PERSONA", verdict(8, "Architect-like."))
    judge_server.on("Oscar has talked about travel.", verdict(True, "He was asked about it."))
    judge_server.on("NEXT AGENT ACTION FULLY ADHERES", verdict(8, "A fitting reply."))
    pytester.makepyfile(test_real=REAL_TESTS)
    result = pytester.runpytest(*inner_run, "--prop-report=report.json")
    result.assert_outcomes(passed=1)
    assert len(judge_server.requests) == 3
    report = json.loads((pytester.path / "report.json").read_text(encoding="utf-8"))
    assert sorted(str(r.get("made_by")) for r in report["verdicts"]) == [
        "None",
        "tinytroupe.agent.action_generator",
        "tinytroupe.steering.intervention",
    ]
