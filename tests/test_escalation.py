"""--prop-escalate-to: a single claim the main judge does not uphold, or scores near its bar, is
judged again by a stronger model whose verdict stands; both verdicts are cached and reported."""

from __future__ import annotations

import html
import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from pytest_propositions.claims.expectation import Expectation
from pytest_propositions.settings import SettingsError, resolve
from pytest_propositions.verdict import Verdict
from tests.support.html_page import rendered
from tests.support.judge_server import ScriptedJudge, refusal, verdict
from tests.support.outcomes import assert_counts

pytest_plugins = ["pytester"]


def needs_escalation(
    verdict: Verdict, threshold: int | None, holds: bool = True, within: int = 1
) -> bool:
    """Whether --prop-escalate-to asks the stronger model (``Asking.follow`` asks this)."""
    return Expectation(threshold, holds).in_doubt(verdict, within)


def check(value: bool, **extra: Any) -> Verdict:
    return Verdict(kind="check", claim="c", value=value, **extra)


def score(value: int) -> Verdict:
    return Verdict(kind="score", claim="c", value=value)


# -- the decision --------------------------------------------------------------------------------


def test_a_check_is_escalated_when_it_would_fail_the_claim() -> None:
    assert needs_escalation(check(False), None)
    assert not needs_escalation(check(True), None)
    # holds=False: the claim fails when the judge upholds it; that verdict is the one in doubt.
    assert needs_escalation(check(True), None, holds=False)
    assert not needs_escalation(check(False), None, holds=False)


def test_a_score_is_escalated_near_its_bar_either_side_and_whenever_it_fails() -> None:
    # min_score 7, within 1: 6, 7 and 8 are near the bar; 5 fails; 9 passes clearly.
    assert [s for s in range(10) if needs_escalation(score(s), 7)] == [0, 1, 2, 3, 4, 5, 6, 7, 8]
    # max_score 3 (holds=False): 2, 3, 4 are near it; above it fails; 0 and 1 pass clearly.
    assert [s for s in range(10) if not needs_escalation(score(s), 3, holds=False)] == [0, 1]
    # --prop-escalate-within widens or narrows the band.
    assert not needs_escalation(score(9), 7, within=1)
    assert needs_escalation(score(9), 7, within=2)
    assert not needs_escalation(score(8), 7, within=0)
    assert needs_escalation(score(7), 7, within=0)


def test_a_claim_whose_precondition_was_false_is_not_escalated() -> None:
    assert not needs_escalation(check(True, precondition_skipped=True), None, holds=False)


def test_the_escalation_options_resolve_and_refuse_the_main_judge() -> None:
    settings = resolve(
        {"escalate_to": "openai/gpt-4o"}, {"PROP_ESCALATE_WITHIN": "2"}, {"escalate_api_base": "x"}
    )
    assert (settings.escalate_to, settings.escalate_within) == ("openai/gpt-4o", 2)
    assert settings.escalate_api_base == "x"
    assert resolve({}, {}, {}).escalate_within == 1
    with pytest.raises(SettingsError, match="--prop-escalate-to: 'm' is the main judge"):
        resolve({"escalate_to": "m", "model": "m"}, {}, {})
    with pytest.raises(SettingsError, match="PROP_ESCALATE_WITHIN"):
        resolve({}, {"PROP_ESCALATE_WITHIN": "-1"}, {})


def test_the_escalation_model_is_reached_at_its_own_base_with_its_own_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pytest_propositions.runtime import connector

    monkeypatch.setenv("PROP_API_KEY", "main-key")
    monkeypatch.setenv("PROP_ESCALATE_API_KEY", "strong-key")
    settings = resolve(
        {
            "model": "openai/small",
            "api_base": "http://main.invalid/v1",
            "escalate_to": "openai/strong",
            "escalate_api_base": "http://strong.invalid/v1",
        },
        {},
        {},
    )
    connect = connector(settings)
    assert connect("openai/strong").endpoint() == ("http://strong.invalid/v1", "strong-key")
    assert connect("openai/small").endpoint() == ("http://main.invalid/v1", "main-key")
    # The referee's own base is taken the same way.
    monkeypatch.setenv("PROP_REFEREE_API_KEY", "referee-key")
    refereed = connector(
        resolve({"referee_model": "r", "referee_api_base": "http://ref.invalid/v1"}, {}, {})
    )
    assert refereed("r").endpoint() == ("http://ref.invalid/v1", "referee-key")
    # Without a base of its own, the stronger model is reached like the main judge.
    same = connector(resolve({"api_base": "http://main.invalid/v1", "escalate_to": "s"}, {}, {}))
    assert same("s").endpoint() == ("http://main.invalid/v1", "main-key")


# -- end to end, two models on the scripted server ----------------------------------------------

MAIN, STRONG = "gpt-4o-mini", "gpt-4o"

SUITE = """
def test_rescued(assert_proposition):
    v = assert_proposition("Oscar greets Ana.", "Alpha: Oscar greets Ana.")
    assert v.value is True and v.model == "openai/gpt-4o"

def test_near_the_bar(min_score):
    min_score("Oscar is polite.", "Bravo: Oscar is polite.", 7)

def test_clear_pass(assert_proposition):
    assert_proposition("Oscar waves.", "Charlie: Oscar waves.")

def test_soft(expect_proposition):
    expect_proposition("Oscar sings.", "Delta: Oscar sings.")
"""

ERRORS = """
def test_refused(assert_proposition):
    assert_proposition("Oscar hums.", "Echo: Oscar hums.")
"""


def script(judge: ScriptedJudge) -> None:
    """The cheap judge doubts Alpha, Delta and Echo and gives Bravo 7; the strong one upholds
    Alpha and Delta, scores Bravo 4 and refuses Echo."""
    judge.models += [MAIN, STRONG]

    def by(model: str, text: str) -> Any:
        return lambda request: request.model == model and text in request.text

    judge.on(by(MAIN, "Alpha:"), verdict(False, justification="Cheap: no greeting seen."))
    judge.on(by(STRONG, "Alpha:"), verdict(True, justification="Strong: he says hello."))
    judge.on(by(MAIN, "Bravo:"), verdict(7, justification="Cheap: polite enough."))
    judge.on(by(STRONG, "Bravo:"), verdict(4, justification="Strong: he is curt."))
    judge.on(by(MAIN, "Charlie:"), verdict(True, justification="Cheap: he waves."))
    judge.on(by(MAIN, "Delta:"), verdict(False, justification="Cheap: no song."))
    judge.on(by(STRONG, "Delta:"), verdict(True, justification="Strong: he sings."))
    judge.on(by(MAIN, "Echo:"), verdict(False, justification="Cheap: no humming."))
    judge.on(by(STRONG, "Echo:"), refusal())


def models_asked(judge: ScriptedJudge, text: str) -> list[str | None]:
    return [request.model for request in judge.requests if text in request.text]


@pytest.fixture
def escalating(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, inner_run: list[str], tmp_path: Path
) -> list[str]:
    script(judge_server)
    kept = [a for a in inner_run if a != "--prop-cache=off" and not a.startswith("--prop-model")]
    return [
        *kept,
        f"--prop-model=openai/{MAIN}",
        f"--prop-cache-dir={tmp_path / 'verdicts'}",
        f"--prop-escalate-to=openai/{STRONG}",
    ]


def test_the_stronger_verdict_stands_both_ways_and_a_rerun_replays_both(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, escalating: list[str]
) -> None:
    pytester.makepyfile(SUITE)
    first = pytester.runpytest(*escalating, "--prop-report=report.json")
    # Alpha and Delta pass on the strong judge's True; Bravo fails on its 4 (the cheap 7 passed).
    assert_counts(first, passed=3, failed=1)
    assert models_asked(judge_server, "Alpha:") == [MAIN, STRONG]
    assert models_asked(judge_server, "Bravo:") == [MAIN, STRONG]
    assert models_asked(judge_server, "Delta:") == [MAIN, STRONG]
    # A clear pass is not escalated.
    assert models_asked(judge_server, "Charlie:") == [MAIN]
    first.stdout.fnmatch_lines(
        [
            "*escalating to openai/gpt-4o*",
            "*Bravo: Oscar is polite.* scored 4/9, below the minimum of 7 (model openai/gpt-4o, "
            "escalated from openai/gpt-4o-mini's 7)*",
        ]
    )
    # The summary line counts the claims the stronger model decided, and how many it changed.
    first.stdout.fnmatch_lines(
        [
            "propositions: 4 claims, 3 passed, 1 failed, 0 judge errors, "
            "3 escalated (3 changed), 0 from cache*"
        ]
    )
    asked = len(judge_server.requests)
    report = json.loads((pytester.path / "report.json").read_text())
    assert (report["summary"]["escalated"], report["summary"]["escalated_changed"]) == (3, 3)
    second = pytester.runpytest(*escalating, "--prop-report=report2.json")
    assert_counts(second, passed=3, failed=1)
    # Both verdicts of every escalated claim came from the cache: no call at all.
    assert len(judge_server.requests) == asked
    second.stdout.fnmatch_lines(["*every verdict (4) came from the cache*"])
    replay = pytester.runpytest(*escalating, "--prop-cache=replay")
    assert_counts(replay, passed=3, failed=1)
    assert len(judge_server.requests) == asked
    bravo = next(r for r in report["verdicts"] if r["test_id"].endswith("test_near_the_bar"))
    assert (bravo["verdict"]["model"], bravo["verdict"]["value"]) == (f"openai/{STRONG}", 4)
    assert (bravo["escalated_from"]["model"], bravo["escalated_from"]["value"]) == (
        f"openai/{MAIN}",
        7,
    )
    # Each verdict carries its own cost (both models are in litellm's price map), and its key.
    assert bravo["verdict"]["cost_usd"] > bravo["escalated_from"]["cost_usd"] > 0
    assert bravo["verdict"]["key"] != bravo["escalated_from"]["key"]
    charlie = next(r for r in report["verdicts"] if r["test_id"].endswith("test_clear_pass"))
    assert "escalated_from" not in charlie


def test_every_report_shows_both_verdicts_and_their_costs(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, escalating: list[str]
) -> None:
    pytester.makepyfile(SUITE)
    result = pytester.runpytest(
        *escalating, "-vv", "--junitxml=junit.xml", "--prop-html=report.html"
    )
    assert_counts(result, passed=3, failed=1)
    # The failure section.
    result.stdout.fnmatch_lines(
        [
            "*FAILED: Bravo: Oscar is polite.",
            "*score: 4/9 (minimum 7)",
            "*model: openai/gpt-4o; judged live*",
            "*escalated: openai/gpt-4o's verdict stands; cost $0.0*",
            "*main judge: openai/gpt-4o-mini said 7/9 (minimum 7); judged live*; cost $0.0*",
            "*main judge's justification:",
            "*Cheap: polite enough.",
        ]
    )
    # The terminal listing (-vv).
    result.stdout.fnmatch_lines(
        [
            "*claim:   Alpha: Oscar greets Ana.",
            "*verdict: True (live)*",
            "*escalated: openai/gpt-4o decided (cost $0.0*); the main judge openai/gpt-4o-mini "
            "said False (expected True) (live, cost $0.0*)",
        ]
    )
    # The lowest scores (-v).
    result.stdout.fnmatch_lines(["*4/9    7  FAILED  *[[]escalated from 7[]]*"])
    # JUnit properties.
    cases = {
        case.attrib["name"]: {p.attrib["name"]: p.attrib["value"] for p in case.iter("property")}
        for case in ET.parse(pytester.path / "junit.xml").getroot().iter("testcase")
    }
    alpha = cases["test_rescued"]
    assert alpha["proposition[1].model"] == "openai/gpt-4o"
    assert alpha["proposition[1].value"] == "true"
    assert alpha["proposition[1].escalated"] == "true"
    assert alpha["proposition[1].escalated_from.model"] == "openai/gpt-4o-mini"
    assert alpha["proposition[1].escalated_from.value"] == "false"
    assert alpha["proposition[1].escalated_from.justification"] == "Cheap: no greeting seen."
    assert float(alpha["proposition[1].cost_usd"]) > 0
    assert float(alpha["proposition[1].escalated_from.cost_usd"]) > 0
    assert "proposition[1].escalated" not in cases["test_clear_pass"]
    suite = {
        p.attrib["name"]: p.attrib["value"]
        for p in ET.parse(pytester.path / "junit.xml").getroot().iter("property")
        if p.attrib["name"].startswith("propositions.")
    }
    assert (suite["propositions.escalated"], suite["propositions.escalated_changed"]) == ("3", "3")
    # The HTML page.
    page = html.unescape(rendered((pytester.path / "report.html").read_text()))
    for text in (
        "<dt>escalated</dt><dd>openai/gpt-4o's verdict stands",
        "<dt>main judge</dt><dd>openai/gpt-4o-mini: 7/9, minimum 7",
        "<dt>main judge's justification</dt><dd>Cheap: polite enough.",
        "Strong: he is curt.",
        "<dt>cost</dt><dd>$0.0",
        "<dt>main judge's cost</dt><dd>$0.0",
    ):
        assert text in page, text


def test_a_failed_escalation_is_a_judge_error_not_the_main_verdict(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, escalating: list[str]
) -> None:
    pytester.makepyfile(ERRORS)
    result = pytester.runpytest(*escalating)
    # The cheap judge's False would fail the claim; the stronger model's refusal is no verdict.
    assert_counts(result, judge_errors=1)
    result.stdout.fnmatch_lines(
        [
            "*VerdictUnparsable: escalation to openai/gpt-4o failed, and the main judge's "
            "verdict (False) does not stand: the judge refused to answer*"
        ]
    )
    assert models_asked(judge_server, "Echo:") == [MAIN, STRONG, STRONG]


def test_a_missing_escalated_verdict_under_replay_is_verdict_missing(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, escalating: list[str]
) -> None:
    pytester.makepyfile(SUITE)
    without = [a for a in escalating if not a.startswith("--prop-escalate-to")]
    # Recorded without escalation: only the main judge's verdicts are cached.
    assert_counts(pytester.runpytest(*without), passed=2, failed=2)
    asked = len(judge_server.requests)
    replay = pytester.runpytest(*escalating, "--prop-cache=replay", "-k", "rescued")
    assert_counts(replay, judge_errors=1)
    replay.stdout.fnmatch_lines(["*VerdictMissing: escalation to openai/gpt-4o failed*"])
    assert len(judge_server.requests) == asked


def test_an_escalated_outcome_survives_the_trip_from_an_xdist_worker() -> None:
    from pytest_propositions.record import Outcome
    from pytest_propositions.reports.json_report import outcome_record
    from pytest_propositions.reports.view import outcome_from_record

    main = score(7).replace(model="openai/small", cost_usd=0.0001)
    strong = score(4).replace(model="openai/strong", cost_usd=0.002)
    outcome = Outcome("t.py::test", strong, 7, False, escalated_from=main)
    assert outcome_from_record(json.loads(json.dumps(outcome_record(outcome)))) == outcome
