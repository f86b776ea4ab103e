"""Claims judged by calls of the reference library's API (``check_proposition``, ``compute_score``,
``Proposition.check/score/evaluate``) while a test runs are claims: each is noted once with its
verdict, upheld or not, fails nothing by itself, and is counted in every report. Outside a test
nothing is noted. The fixtures' claims, which go through ``Proposition`` too, are noted once.
"""

from __future__ import annotations

import json
import threading
import xml.etree.ElementTree as ET
from collections.abc import Iterator

import pytest

from pytest_propositions import Proposition, check_proposition, compute_score
from pytest_propositions import runtime as runtime_module
from pytest_propositions.assertions import assert_claim, judge_without_asserting
from pytest_propositions.claims.expectation import Expectation
from pytest_propositions.errors import JudgeError, PropositionFailed
from pytest_propositions.judging.request import JudgeStats
from pytest_propositions.record import Outcome
from pytest_propositions.reports.counts import run_counts, summary_line
from pytest_propositions.reports.json_report import json_report
from pytest_propositions.reports.junit import junit_properties, junit_run_properties
from pytest_propositions.reports.summary import failure_section
from pytest_propositions.runtime import Runtime
from pytest_propositions.settings import Settings
from pytest_propositions.verdict import Verdict
from tests.support.active_run import active
from tests.support.judge_server import ScriptedJudge, status, verdict

pytest_plugins = ["pytester"]

TEST_ID = "test_travel.py::test_oscar"
TARGET = "Oscar: I love quiet cities with museums."


@pytest.fixture
def run(judge_server: ScriptedJudge, monkeypatch: pytest.MonkeyPatch) -> Iterator[Runtime]:
    """A run of its own, active, judged by the scripted server, with a test running."""
    monkeypatch.setenv("PROP_API_KEY", "test-key-not-real")
    judge_server.on("Oscar is a chef.", verdict(False, "He is an architect."))
    judge_server.on("Oscar is calm.", verdict(6, "Mostly calm."))
    judge_server.on("Oscar is curious.", verdict(7, "He asks questions."))
    judge_server.on("refused", status(401, "Scripted: invalid API key", "authentication_error"))
    settings = Settings(model="openai/judge-model", api_base=judge_server.base_url, cache="off")
    runtime = Runtime(settings)
    runtime.current_test = TEST_ID
    with active(runtime):
        yield runtime


def by_call(runtime: Runtime) -> list[tuple[str | None, str, object, bool]]:
    return [
        (o.by_call, o.verdict.claim, o.verdict.value, o.passed) for o in runtime.record.outcomes
    ]


def test_each_call_of_the_reference_api_in_a_test_is_noted_once_with_its_verdict(
    run: Runtime,
) -> None:
    assert check_proposition(TARGET, "Oscar likes museums.")
    assert not check_proposition(TARGET, "Oscar is a chef.")
    assert compute_score(TARGET, "Oscar is calm.") == 6
    assert compute_score(TARGET, "Oscar is curious.", return_full_response=True)["value"] == 7
    proposition = Proposition("Oscar likes museums.", TARGET)
    assert proposition.check() is True
    assert proposition() is True
    assert Proposition("Oscar is calm.").score(TARGET) == 6
    assert Proposition("Oscar is a chef.").evaluate("check", TARGET).value is False

    assert by_call(run) == [
        ("check_proposition", "Oscar likes museums.", True, True),
        ("check_proposition", "Oscar is a chef.", False, False),
        # A score is upheld at the run's minimum score (7 by default); it fails nothing.
        ("compute_score", "Oscar is calm.", 6, False),
        ("compute_score", "Oscar is curious.", 7, True),
        ("Proposition.check", "Oscar likes museums.", True, True),
        ("Proposition.check", "Oscar likes museums.", True, True),
        ("Proposition.score", "Oscar is calm.", 6, False),
        ("Proposition.evaluate", "Oscar is a chef.", False, False),
    ]
    outcomes = run.record.outcomes_of(TEST_ID)
    assert len(outcomes) == 8
    assert {o.threshold for o in outcomes if o.verdict.kind == "score"} == {7}
    assert {o.threshold for o in outcomes if o.verdict.kind == "check"} == {None}
    # Where the user's code made the call, not a line of the plugin.
    assert outcomes[0].where is not None
    assert outcomes[0].where.startswith("tests/test_claims_by_call.py:")


def test_a_precondition_false_claim_by_call_is_noted_as_skipped(run: Runtime) -> None:
    never = Proposition("Oscar is a chef.", precondition_function=lambda **_: False)
    assert never.check(TARGET) is True
    [outcome] = run.record.outcomes
    assert outcome.by_call == "Proposition.check"
    assert outcome.verdict.precondition_skipped and outcome.passed


def test_a_judge_error_by_call_is_noted_once(run: Runtime) -> None:
    with pytest.raises(JudgeError):
        check_proposition(TARGET, "This one is refused.")
    assert len(run.record.judge_errors) == 1
    assert run.record.judge_errors[0][0] == TEST_ID
    assert run.record.outcomes == []


def test_a_call_in_a_thread_the_test_started_is_filed_under_the_test(run: Runtime) -> None:
    results: list[bool] = []
    thread = threading.Thread(
        target=lambda: results.append(check_proposition(TARGET, "Oscar is a chef."))
    )
    thread.start()
    thread.join()
    assert results == [False]
    [outcome] = run.record.outcomes_of(TEST_ID)
    assert outcome.by_call == "check_proposition"


def test_outside_a_test_nothing_is_noted(run: Runtime) -> None:
    run.current_test = None  # collection, or between tests
    assert check_proposition(TARGET, "Oscar likes museums.")
    assert compute_score(TARGET, "Oscar is calm.") == 6
    with pytest.raises(JudgeError):
        check_proposition(TARGET, "This one is refused.")
    assert run.record.outcomes == [] and run.record.judge_errors == []


def test_without_an_active_runtime_nothing_is_noted_and_none_is_built(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # No pytest run active (a script, a notebook): a claim its precondition skips needs no judge,
    # and no runtime is built just to note it.
    monkeypatch.setattr(runtime_module, "_active", [])
    monkeypatch.setattr(runtime_module, "_fallback", None)
    never = Proposition("Oscar is a chef.", precondition_function=lambda **_: False)
    assert check_proposition(TARGET, never) is True
    assert runtime_module._fallback is None


def test_the_fixtures_claims_are_noted_once_not_again_as_calls(run: Runtime) -> None:
    assert_claim(run, TARGET, "Oscar likes museums.", Expectation(None))
    with pytest.raises(PropositionFailed):
        assert_claim(run, TARGET, "Oscar is a chef.", Expectation(None))
    assert_claim(run, TARGET, "Oscar is a chef.", Expectation(None, holds=False))
    assert_claim(run, TARGET, "Oscar is curious.", Expectation(7))
    judge_without_asserting(run, TARGET, "Oscar is calm.", "score", {})
    with pytest.raises(JudgeError):
        assert_claim(run, TARGET, "This one is refused.", Expectation(None))
    assert [(o.by_call, o.verdict.claim) for o in run.record.outcomes] == [
        (None, "Oscar likes museums."),
        (None, "Oscar is a chef."),
        (None, "Oscar is a chef."),
        (None, "Oscar is curious."),
        (None, "Oscar is calm."),
    ]
    assert len(run.record.judge_errors) == 1


# -- the reports ----------------------------------------------------------------------------------


def _verdict(claim: str, kind: str, value: bool | int, cached: bool = False) -> Verdict:
    return Verdict(
        kind=kind,  # type: ignore[arg-type]
        claim=claim,
        value=value,
        justification=f"Because of {claim.lower()}",
        reasoning="r",
        confidence=0.8,
        model="openai/judge-model",
        cached=cached,
        key="ab" * 32,
    )


OUTCOMES = [
    Outcome("t.py::a", _verdict("Asserted.", "check", True), None, True),
    Outcome("t.py::a", _verdict("Asserted false.", "check", False), None, False),
    Outcome(
        "t.py::b",
        _verdict("Upheld.", "check", True, cached=True),
        None,
        True,
        where="t.py:3",
        by_call="check_proposition",
    ),
    Outcome(
        "t.py::b",
        _verdict("Not upheld.", "check", False, cached=True),
        None,
        False,
        where="t.py:4",
        by_call="check_proposition",
    ),
    Outcome("t.py::b", _verdict("Low.", "score", 4), 7, False, by_call="compute_score"),
]


def test_the_counts_keep_calls_apart_from_asserted_claims() -> None:
    counts = run_counts(OUTCOMES, [("t.py::c", "JudgeUnavailable: x")], JudgeStats())
    assert (counts.claims, counts.passed, counts.failed, counts.judge_errors) == (6, 1, 1, 1)
    assert (counts.by_call, counts.by_call_upheld, counts.by_call_not_upheld) == (3, 1, 2)
    assert counts.from_cache + counts.judged_live == counts.passed + counts.failed + counts.by_call
    assert summary_line(counts).startswith(
        "propositions: 6 claims, 1 passed, 1 failed, 1 judge error, "
        "3 by call (1 upheld, 2 not upheld), 2 from cache, 3 judged live, "
    )
    # In report mode the words are the same: an asserted claim passed or failed, a call's upheld.
    assert "1 passed, 1 failed, 1 judge error, 3 by call (1 upheld, 2 not upheld)" in (
        summary_line(counts, "report")
    )
    # A run without calls reads as before.
    plain = run_counts(OUTCOMES[:2], [], JudgeStats())
    assert "by call" not in summary_line(plain)
    run = dict(junit_run_properties(counts, "fail"))
    assert (run["propositions.by_call"], run["propositions.by_call_upheld"]) == ("3", "1")
    assert run["propositions.by_call_not_upheld"] == "2"


def test_a_failed_tests_section_shows_each_call_with_its_verdict_and_provenance() -> None:
    section = failure_section(OUTCOMES[2:])
    assert section.splitlines()[0] == "NOT UPHELD: Not upheld."
    assert "  verdict: False (by check_proposition, not asserted)" in section
    assert "  claimed at: t.py:4" in section
    assert "  model: openai/judge-model; from the cache, recorded" in section
    assert "    Because of not upheld." in section
    assert "  score: 4/9 (by compute_score, not asserted; upheld at 7 or more)" in section
    assert "UPHELD: Upheld." in section
    assert "FAILED" not in section and "PASSED" not in section


def test_junit_and_json_name_the_call_and_its_result() -> None:
    properties = dict(junit_properties(OUTCOMES[3:4]))
    assert properties["proposition[1].by_call"] == "check_proposition"
    assert properties["proposition[1].upheld"] == "false"
    assert properties["proposition[1].result"] == "not upheld"
    assert "proposition[1].passed" not in properties
    asserted = dict(junit_properties(OUTCOMES[1:2]))
    assert asserted["proposition[1].result"] == "failed"
    assert "proposition[1].by_call" not in asserted

    report = json_report(Settings(), JudgeStats(), OUTCOMES, [])
    records = {r["verdict"]["claim"]: r for r in report["verdicts"]}
    assert records["Not upheld."]["by_call"] == "check_proposition"
    assert records["Not upheld."]["result"] == "not upheld"
    assert "by_call" not in records["Asserted false."]
    assert records["Asserted false."]["result"] == "failed"
    assert report["summary"]["by_call"] == 3


def test_xdist_records_carry_the_call() -> None:
    from pytest_propositions.reports.json_report import outcome_record
    from pytest_propositions.reports.view import outcome_from_record

    outcome = OUTCOMES[3]
    assert outcome_from_record(outcome_record(outcome)) == outcome


# -- in a pytest run -------------------------------------------------------------------------------

REPORT_MODE_SUITE = """
from pytest_propositions import check_proposition


def test_a_legitimate_false(world):
    assert not check_proposition(world, "Oscar is a chef.")


def test_asserted(world, assert_proposition):
    assert_proposition(world, "Oscar is a chef.")
"""


@pytest.mark.parametrize("mode", ["fail", "report"])
def test_a_call_not_upheld_fails_nothing_in_either_outcome_mode(
    pytester: pytest.Pytester,
    judge_server: ScriptedJudge,
    inner_run: list[str],
    mode: str,
) -> None:
    judge_server.on("Oscar is a chef.", verdict(False, "He is an architect."))
    pytester.makepyfile(test_modes=REPORT_MODE_SUITE)
    result = pytester.runpytest(*inner_run, f"--prop-outcome={mode}", "-rA")
    if mode == "fail":
        result.assert_outcomes(passed=1, failed=1)
    else:
        # The asserted claim is "not upheld"; the call's False passes as the test says.
        result.assert_outcomes(passed=1)
        result.stdout.fnmatch_lines(["*= 1 passed, *1 not upheld in *"])
        result.stdout.no_fnmatch_line("*test_a_legitimate_false*NOT UPHELD*")
    result.stdout.fnmatch_lines(["propositions: 2 claims, *1 by call (0 upheld, 1 not upheld)*"])


SHORT_LINE_SUITE = """
from pytest_propositions import check_proposition


def test_bare(world):
    assert check_proposition(world, "Oscar is a chef.")


def test_other_assert(world):
    assert not check_proposition(world, "Oscar is a chef.")
    assert check_proposition(world, "Oscar is an architect.") and 1 == 2


def test_upheld_only(world):
    assert check_proposition(world, "Oscar is an architect.")
    assert 1 == 2
"""


def test_a_failed_tests_short_line_names_the_claim_by_call_not_upheld(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, inner_run: list[str]
) -> None:
    judge_server.on("Oscar is a chef.", verdict(False, "He is an architect."))
    judge_server.on("Oscar is an architect.", verdict(True, "He designs towers."))
    pytester.makepyfile(test_short=SHORT_LINE_SUITE)
    result = pytester.runpytest(*inner_run, "-rf", "-vv", "--junitxml=junit.xml")
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines(
        [
            "FAILED test_short.py::test_bare - AssertionError: claim 'Oscar is a chef.' judged "
            "False (by check_proposition): assert False",
            "FAILED test_short.py::test_other_assert - AssertionError: assert (True and 1 == 2) "
            "[[]not upheld: claim 'Oscar is a chef.' judged False (by check_proposition)[]]",
            "FAILED test_short.py::test_upheld_only - assert 1 == 2",
        ]
    )
    root = ET.parse(pytester.path / "junit.xml").getroot()
    messages = {
        case.attrib["name"]: case.find("failure").attrib["message"]  # type: ignore[union-attr]
        for case in root.iter("testcase")
    }
    assert messages["test_bare"].startswith("AssertionError: claim 'Oscar is a chef.' judged")


OUTLIVING_THREAD_SUITE = """
import json
import threading

from pytest_propositions import Proposition

made = threading.Event()
release = threading.Event()
thread = None


def hold(target, additional_context, claim_variables):
    made.set()  # the claim is made, while test_a runs...
    release.wait()  # ...and judged once test_b runs
    return True


def test_a(world):
    global thread
    claim = Proposition("Oscar is a chef.", world, precondition_function=hold)
    thread = threading.Thread(target=claim.check)
    thread.start()
    made.wait()


def test_b(world, assert_proposition):
    release.set()
    thread.join()
    assert_proposition(world, "Oscar is an architect.")
    assert 1 == 2, "test_b fails: its report lists its claims"
"""


@pytest.mark.parametrize(
    "xdist",
    [False, pytest.param(True, marks=pytest.mark.slow)],  # slow: xdist workers in a subprocess
    ids=["one-process", "xdist"],
)
def test_a_claim_by_call_that_outlives_its_test_is_never_filed_under_a_later_test(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, inner_run: list[str], xdist: bool
) -> None:
    judge_server.on("Oscar is a chef.", verdict(False, "He is an architect."))
    judge_server.on("Oscar is an architect.", verdict(True, "He designs towers."))
    pytester.makepyfile(test_late=OUTLIVING_THREAD_SUITE)
    # One worker under xdist: both tests in one process, one after the other.
    spread = ["-p", "xdist", "-n", "1"] if xdist else []
    run = pytester.runpytest_subprocess if xdist else pytester.runpytest
    result = run(*inner_run, *spread, "--prop-report=report.json", "--junitxml=junit.xml")
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    # test_b's section lists its own claim only; the late one is not test_b's.
    result.stdout.fnmatch_lines(["*- proposition -*", "PASSED: Oscar is an architect. (True)"])
    assert "Oscar is a chef." not in out.split("short test summary")[0]
    # It is counted for the run, and said to have come after the test that made it ended.
    result.stdout.fnmatch_lines(
        [
            "propositions: 2 claims, 1 passed, 0 failed, 0 judge errors, "
            "1 by call (0 upheld, 1 not upheld)*",
            "propositions: 1 claim by call was judged after its test ended "
            "(from a thread left running): test_late.py::test_a",
        ]
    )
    report = json.loads((pytester.path / "report.json").read_text(encoding="utf-8"))
    filed = {
        r["verdict"]["claim"]: (r["test_id"], r.get("after_its_test")) for r in report["verdicts"]
    }
    assert filed == {
        "Oscar is a chef.": ("test_late.py::test_a", True),
        "Oscar is an architect.": ("test_late.py::test_b", None),
    }
    root = ET.parse(pytester.path / "junit.xml").getroot()
    claims_of_b = [
        prop.attrib["value"]
        for case in root.iter("testcase")
        if case.attrib["name"] == "test_b"
        for prop in case.iter("property")
        if prop.attrib["name"].endswith(".claim")
    ]
    assert claims_of_b == ["Oscar is an architect."]


def test_a_judge_error_keeps_its_claim_through_an_xdist_worker_and_the_json_report() -> None:
    """The claim a judge error was about heads its HTML card: it must survive the worker's
    output (a JSON-able list) and reach the JSON report, redacted like every other text."""
    from pytest_propositions.errors import JudgeUnavailable
    from pytest_propositions.record import FiledJudgeError, RunRecord
    from pytest_propositions.reports.json_report import json_report

    worker = RunRecord()
    worker.add_error("t.py::test_a", JudgeUnavailable("no answer"), claim="Oscar hesitates.")
    sent = [list(error) for error in worker.judge_errors]  # what workers.worker_output sends
    controller = RunRecord()
    controller.merge_worker([], [FiledJudgeError(*error) for error in sent], {}, used=True)
    [error] = controller.judge_errors
    assert error == ("t.py::test_a", "JudgeUnavailable: no answer", "Oscar hesitates.")
    from pytest_propositions.judging.request import JudgeStats
    from pytest_propositions.settings import Settings

    [entry] = json_report(Settings(), JudgeStats(), [], controller.judge_errors)["judge_errors"]
    assert entry == {
        "test_id": "t.py::test_a",
        "error": "JudgeUnavailable: no answer",
        "claim": "Oscar hesitates.",
    }
