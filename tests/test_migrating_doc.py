"""docs/migrating.md: every Python block runs, against the scripted judge over real HTTP.

Blocks run in order in one namespace holding ``oscar`` and ``world`` (shaped like TinyTroupe's
objects); a block that defines tests is run by pytest, with those as fixtures.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_propositions import runtime as runtime_module
from pytest_propositions.runtime import Runtime
from pytest_propositions.settings import Settings
from tests.support.judge_server import RecordedRequest, ScriptedJudge, echo_fn, text, verdict
from tests.support.tinytroupe_like import LibraryPerson, LibraryWorld

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parent.parent
GUIDE = ROOT / "docs" / "migrating.md"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)

PEOPLE = """
from tests.support.tinytroupe_like import LibraryPerson, LibraryWorld


def make_oscar():
    oscar = LibraryPerson("Oscar", {"occupation": {"title": "Architect"}})
    oscar.listen("Tell me a bit about your travel preferences.")
    oscar.act("TALK", "I love quiet cities with great museums.")
    oscar.act("DONE")
    return oscar
"""


def blocks() -> list[str]:
    return BLOCK.findall(GUIDE.read_text(encoding="utf-8"))


def script(judge: ScriptedJudge) -> None:
    """The answers a sensible judge would give the guide's claims."""

    def by_kind(request: RecordedRequest) -> Any:
        if '"integer"' in json.dumps(request.response_format or {}):
            return verdict(8, justification="Everyone stays in character.")
        return verdict(True, justification="Oscar says he loves quiet cities.")

    judge.on("writes a novel", verdict(False, justification="He never mentions a novel."))
    # The recommendations question comes after the follow-up in the same chat: matched first.
    judge.on("advise", text("Let Oscar name a city he would visit."))
    judge.on("Which event decided it?", text("Event #1, where he names quiet cities."))
    judge.default = echo_fn(by_kind)


@pytest.fixture
def judge(judge_server: ScriptedJudge, monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedJudge]:
    monkeypatch.setenv("PROP_API_KEY", "test-key-not-real")
    runtime = Runtime(
        Settings(model="openai/judge-model", api_base=judge_server.base_url, cache="off")
    )
    runtime_module.activate(runtime)
    script(judge_server)
    try:
        yield judge_server
    finally:
        runtime_module.deactivate(runtime)
        runtime.close()


def test_the_guide_has_runnable_blocks_and_is_linked_from_the_readme() -> None:
    found = blocks()
    assert len(found) >= 5
    assert "from pytest_propositions import Proposition, check_proposition" in found[0]
    assert any("def test_" in block for block in found)
    assert "(docs/migrating.md)" in (ROOT / "README.md").read_text(encoding="utf-8")
    guide = GUIDE.read_text(encoding="utf-8")
    assert "## Every difference, and why" in guide


def test_the_guide_and_the_sites_navigation_name_tinytroupe() -> None:
    """Users search for TinyTroupe: the guide never calls it "the reference"."""
    guide = GUIDE.read_text(encoding="utf-8")
    assert re.search(r"\bthe reference\b", guide, re.IGNORECASE) is None
    assert guide.startswith("# Migrating from TinyTroupe")
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert "- Migrating from TinyTroupe: migrating.md" in nav


def test_the_difference_table_says_compute_score_works_here() -> None:
    table = GUIDE.read_text(encoding="utf-8").split("## Every difference, and why")[1]
    rows = [
        line
        for line in table.splitlines()
        if line.startswith("| ") and not line.startswith(("| |", "| ---"))
    ]
    [row] = [line for line in rows if line.startswith("| `compute_score(...)`")]
    assert "a method its `Proposition` lacks" in row and "works" in row
    # Every row the table had before is still there.
    assert len(rows) == 24


def test_the_guides_examples_run_and_mean_what_they_say(
    judge: ScriptedJudge, capsys: pytest.CaptureFixture[str]
) -> None:
    namespace: dict[str, Any] = {"__name__": "migrating_guide"}
    exec(PEOPLE, namespace)
    oscar = namespace["make_oscar"]()
    lisa = LibraryPerson("Lisa")
    lisa.listen("Tell me about your work.")
    lisa.act("TALK", "I analyse data.")
    namespace.update(oscar=oscar, world=LibraryWorld("Focus group", [oscar, lisa]))
    ran = 0
    for index, block in enumerate(blocks()):
        if "def test_" in block:
            continue
        try:
            exec(compile(block, f"docs/migrating.md block {index}", "exec"), namespace)
        except Exception as error:  # pragma: no cover - the message says which block broke
            pytest.fail(f"docs/migrating.md python block #{index} failed: {error!r}\n{block}")
        ran += 1
    assert ran >= 4
    out = capsys.readouterr().out
    assert "Event #1, where he names quiet cities." in out
    assert "Let Oscar name a city he would visit." in out
    assert any("writes a novel" in r.text for r in judge.requests)


def test_the_guides_test_functions_pass_under_pytest(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, inner_run: list[str]
) -> None:
    script(judge_server)
    tests = [block for block in blocks() if "def test_" in block]
    assert tests
    pytester.makeconftest(
        PEOPLE
        + """
import pytest

@pytest.fixture
def oscar():
    return make_oscar()
"""
    )
    pytester.makepyfile(**{f"test_guide_{i}": block for i, block in enumerate(tests)})
    result = pytester.runpytest(*inner_run)
    result.assert_outcomes(passed=sum(block.count("def test_") for block in tests))
