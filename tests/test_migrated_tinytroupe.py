"""Issue 34's "done when": a TinyTroupe test migrated with one import line gets everything.

The inner project is TinyTroupe-shaped code: agents and a world shaped like TinyTroupe's
(tests/support/tinytroupe_like.py) whose ``listen_and_act`` asks a model through the ``openai``
SDK, as TinyTroupe does, and tests written against ``tinytroupe.experimentation`` with only that
import line changed. Judged by the scripted server over real HTTP. The test shows that a failing
``assert check_proposition(...)`` carries the judge's justification, that its claims are counted
in the terminal summary, JUnit, JSON and HTML, that a cached rerun says they came from the cache,
and that with the migration guide's pytest-recording recipe the whole test (the simulation's
calls and the verdicts) replays with the server stopped and no key.
"""

from __future__ import annotations

import json
import os
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.docs_blocks import page_blocks
from tests.support.html_page import rendered
from tests.support.judge_server import ScriptedJudge, text, verdict

pytest_plugins = ["pytester"]
pytest.importorskip("pytest_recording")
pytest.importorskip("openai")

GUIDE = Path(__file__).resolve().parent.parent / "docs" / "migrating.md"
SIMULATION_KEY = "sk-simulation-secret-0123"
JUDGE_KEY = "judge-secret-4567"
KYOTO_REASON = "Oscar says he loves Kyoto and its temples, and goes back every year."

# TinyTroupe's TinyPerson and TinyWorld, as far as a test needs them: the trajectory shapes of
# tests/support/tinytroupe_like.py, and a listen_and_act that asks the model through the openai
# SDK, building its client for the call as TinyTroupe does.
SIMULATION = """
import os
from datetime import datetime

from openai import OpenAI

from tests.support.tinytroupe_like import LibraryPerson, LibraryWorld


class TinyPerson(LibraryPerson):
    def listen_and_act(self, speech):
        self.listen(speech)
        client = OpenAI(
            base_url=os.environ["SIMULATION_BASE_URL"],
            api_key=os.environ["OPENAI_API_KEY"],
            max_retries=0,
        )
        reply = client.chat.completions.create(
            model="sim-model",
            messages=[
                {"role": "system", "content": f"You are {self.name}, an architect."},
                {"role": "user", "content": speech},
            ],
        )
        self.act("TALK", reply.choices[0].message.content)
        self.act("DONE")


class TinyWorld(LibraryWorld):
    pass


def focus_group():
    oscar = TinyPerson("Oscar", {"occupation": {"title": "Architect"}, "age": 30})
    world = TinyWorld("Focus group", [oscar], initial_datetime=datetime(2025, 1, 6, 9, 0))
    oscar.listen_and_act("Tell me about your travel preferences.")
    return world
"""

# The tests as written for TinyTroupe; the import line is the only change.
MIGRATED = """
import pytest

# before: from tinytroupe.experimentation import Proposition, check_proposition, compute_score
from pytest_propositions import Proposition, check_proposition, compute_score

from tiny import focus_group


@pytest.mark.vcr
def test_travel():
    world = focus_group()
    assert check_proposition(world, "Oscar talks about travel.")
    assert not check_proposition(world, "Oscar says he is a chef.")
    assert compute_score(world, "Oscar is enthusiastic about travel.") >= 5
    travel = Proposition("Oscar names a city he likes.", target=world, last_n=3)
    assert travel.check()


@pytest.mark.vcr
def test_kyoto():
    world = focus_group()
    assert check_proposition(world, "Oscar hates Kyoto.")
"""


def guide_conftest() -> str:
    """The migration guide's ``conftest.py`` for pytest-recording, as written."""
    [block] = [
        block.code
        for block in page_blocks(GUIDE)
        if block.title == "conftest.py" and "vcr_config" in block.code
    ]
    return block


@pytest.fixture
def server(litellm_preloaded: None) -> Iterator[ScriptedJudge]:
    with ScriptedJudge(["judge-model", "sim-model"]) as judge:
        judge.on(lambda r: r.model == "sim-model", text("I love Kyoto: its temples, every year."))
        judge.on("Oscar talks about travel.", verdict(True, "He describes his trips."))
        judge.on("Oscar says he is a chef.", verdict(False, "He is an architect."))
        judge.on("Oscar is enthusiastic", verdict(8, "He would go back every year."))
        judge.on("Oscar names a city", verdict(True, "He names Kyoto."))
        judge.on("Oscar hates Kyoto.", verdict(False, KYOTO_REASON))
        yield judge


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, server: ScriptedJudge) -> pytest.MonkeyPatch:
    for name in [name for name in os.environ if name.startswith("PROP_")]:
        monkeypatch.delenv(name)
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    monkeypatch.setenv("SIMULATION_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", SIMULATION_KEY)
    monkeypatch.setenv("PROP_API_KEY", JUDGE_KEY)
    return monkeypatch


def arguments(base_url: str, cache_dir: Path, cache: str, name: str) -> list[str]:
    return [
        "--prop-model=openai/judge-model",
        f"--prop-api-base={base_url}",
        f"--prop-cache={cache}",
        f"--prop-cache-dir={cache_dir}",
        "--prop-retries=0",
        f"--prop-report={name}.json",
        f"--prop-html={name}.html",
        f"--junitxml={name}.xml",
        "-p",
        "no:cacheprovider",
    ]


def summary_line(stdout: str) -> str:
    [line] = [line for line in stdout.splitlines() if re.match(r"propositions: \d+ claims?", line)]
    return line


def junit(path: Path) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    """The testsuite's properties, and each test case's, by test name."""
    root = ET.parse(path).getroot()
    suite = root.find("testsuite")
    assert suite is not None
    properties = suite.find("properties")
    assert properties is not None
    run = {p.attrib["name"]: p.attrib["value"] for p in properties}
    cases = {
        case.attrib["name"]: {p.attrib["name"]: p.attrib["value"] for p in case.iter("property")}
        for case in root.iter("testcase")
    }
    return run, cases


def check_reports(result: pytest.RunResult, folder: Path, name: str, *, cached: bool) -> None:
    """One run's reports: the failure with its justification, and the claims counted in each."""
    result.assert_outcomes(passed=1, failed=1)
    output = result.stdout.str()
    # (1) the bare `assert check_proposition(...)` fails with the judge's reason in its section.
    failure = output[output.index("_ test_kyoto _") : output.index("short test summary")]
    assert "assert False" in failure
    # Its short summary line names the claim before pytest's "assert False" (the line is cut
    # at the terminal's width, 80 here).
    result.stdout.fnmatch_lines(
        ["FAILED test_migrated.py::test_kyoto - AssertionError: claim 'Oscar hates Kyot*"]
    )
    assert "NOT UPHELD: Oscar hates Kyoto." in failure
    assert "verdict: False (by check_proposition, not asserted)" in failure
    assert "claimed at: test_migrated.py:" in failure
    assert KYOTO_REASON in failure
    assert ("from the cache, recorded" if cached else "judged live in") in failure
    assert "model: openai/judge-model" in failure
    # (2) counted: five claims by call, two not upheld (the chef's is a legitimate False, which
    # fails nothing by itself); none asserted by the plugin, so none passed or failed.
    live = "0 from cache, 5 judged live" if not cached else "5 from cache, 0 judged live"
    assert summary_line(output).startswith(
        "propositions: 5 claims, 0 passed, 0 failed, 0 judge errors, "
        f"5 by call (3 upheld, 2 not upheld), {live}"
    )
    if cached:
        # (3) the cached rerun says so.
        assert "propositions: every verdict (5) came from the cache; the judge was not called" in (
            output
        )

    report = json.loads((folder / f"{name}.json").read_text(encoding="utf-8"))
    summary = report["summary"]
    assert (summary["claims"], summary["passed"], summary["failed"]) == (5, 0, 0)
    assert (summary["by_call"], summary["by_call_upheld"], summary["by_call_not_upheld"]) == (
        5,
        3,
        2,
    )
    assert summary["from_cache"] == (5 if cached else 0)
    calls = sorted((r["by_call"], r["verdict"]["claim"], r["result"]) for r in report["verdicts"])
    assert calls == [
        ("Proposition.check", "Oscar names a city he likes.", "upheld"),
        ("check_proposition", "Oscar hates Kyoto.", "not upheld"),
        ("check_proposition", "Oscar says he is a chef.", "not upheld"),
        ("check_proposition", "Oscar talks about travel.", "upheld"),
        ("compute_score", "Oscar is enthusiastic about travel.", "upheld"),
    ]
    kyoto = next(r for r in report["verdicts"] if r["verdict"]["claim"] == "Oscar hates Kyoto.")
    assert kyoto["test_id"] == "test_migrated.py::test_kyoto"
    assert kyoto["verdict"]["justification"] == KYOTO_REASON
    assert kyoto["verdict"]["cached"] is cached

    run, cases = junit(folder / f"{name}.xml")
    assert (run["propositions.claims"], run["propositions.by_call"]) == ("5", "5")
    assert run["propositions.by_call_not_upheld"] == "2"
    assert run["propositions.from_cache"] == ("5" if cached else "0")
    assert cases["test_kyoto"]["proposition[1].by_call"] == "check_proposition"
    assert cases["test_kyoto"]["proposition[1].result"] == "not upheld"
    assert cases["test_kyoto"]["proposition[1].justification"] == KYOTO_REASON
    assert cases["test_kyoto"]["proposition[1].cached"] == ("true" if cached else "false")
    assert len([k for k in cases["test_travel"] if k.endswith(".by_call")]) == 4

    page = rendered((folder / f"{name}.html").read_text(encoding="utf-8"))
    assert page.count('<section class="claim') == 5
    # Claims by call fail nothing: the page's "failures" filter (failed, not upheld) leaves them.
    assert page.count('data-status="by-call-not-upheld"') == 2
    assert page.count('data-status="by-call-upheld"') == 3
    assert 'data-status="not-upheld"' not in page and 'data-status="failed"' not in page
    assert "5 by call (3 upheld, 2 not upheld)" in page
    assert ("<span>5 from cache</span>" if cached else "<span>0 from cache</span>") in page
    assert KYOTO_REASON in page


def simulation_requests(server: ScriptedJudge) -> list[Any]:
    return [r for r in server.requests if r.model == "sim-model"]


def test_a_migrated_tinytroupe_test_reports_its_claims_and_replays_whole(
    pytester: pytest.Pytester, server: ScriptedJudge, env: pytest.MonkeyPatch
) -> None:
    pytester.makeconftest(guide_conftest())
    pytester.makepyfile(tiny=SIMULATION, test_migrated=MIGRATED)
    cache_dir = pytester.path / "verdicts"

    # Recorded once, where the keys are: the simulation's calls into cassettes, the verdicts
    # into the cache.
    first = pytester.runpytest(
        *arguments(server.base_url, cache_dir, "use", "first"), "--record-mode=once"
    )
    check_reports(first, pytester.path, "first", cached=False)
    assert len(simulation_requests(server)) == 2
    judged = [r for r in server.requests if r.model == "judge-model"]
    assert len(judged) == 5
    for test in ("test_travel", "test_kyoto"):
        cassette = (pytester.path / "cassettes" / "test_migrated" / f"{test}.yaml").read_text()
        assert "sim-model" in cassette and "judge-model" not in cassette
        assert SIMULATION_KEY not in cassette and JUDGE_KEY not in cassette

    # (3) A cached rerun, the server still up: every verdict from the cache, no judge call.
    asked_before = len([r for r in server.requests if r.model == "judge-model"])
    again = pytester.runpytest(*arguments(server.base_url, cache_dir, "use", "again"))
    check_reports(again, pytester.path, "again", cached=True)
    assert len([r for r in server.requests if r.model == "judge-model"]) == asked_before

    # (4) The whole test replayed: the server stopped, no key, the cache only read.
    base_url = server.base_url
    asked = len(server.requests)
    server.stop()
    env.setenv("OPENAI_API_KEY", "unused")  # the guide's placeholder
    env.delenv("PROP_API_KEY")
    replayed = pytester.runpytest(*arguments(base_url, cache_dir, "replay", "replayed"))
    check_reports(replayed, pytester.path, "replayed", cached=True)
    assert len(server.requests) == asked
