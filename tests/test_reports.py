"""Reports of a run: JUnit properties, the JSON report, the -v table, the dry-run count, and
the same numbers under pytest-xdist as without it.
"""

from __future__ import annotations

import json
import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from pytest_propositions import __version__
from pytest_propositions.reports.json_report import (
    check_report_path,
    report_path,
    stats_record,
    write_json_report,
)
from pytest_propositions.reports.summary import lowest_scores_table
from pytest_propositions.runtime import Outcome, Runtime
from pytest_propositions.settings import Settings
from pytest_propositions.verdict import Verdict
from tests.support.html_page import rendered
from tests.support.judge_server import ScriptedJudge, status, text, verdict
from tests.support.outcomes import assert_counts

pytest_plugins = ["pytester"]

# Claims carry a distinctive word each, so a scripted rule matches exactly one of them.
SUITE = """
def test_alpha(world, assert_proposition):
    assert_proposition(world, "Alphaclaim: Oscar talks about travel.")

def test_bravo(world, min_score):
    min_score(world, "Bravoclaim: Oscar is calm.", 7)

def test_charlie(world, min_score, assert_proposition):
    min_score(world, "Charlieclaim: Oscar is polite.", 5)
    assert_proposition(world, "Charliecheck: Oscar answers.")

def test_delta(world, assert_proposition):
    assert_proposition(world, "Deltaclaim: the judge refuses this one.")

def test_echo(world, expect_proposition):
    expect_proposition(world, "Echoone: Oscar names a city.")
    expect_proposition(world, "Echotwo: Oscar is concise.", min_score=3)

def test_foxtrot(world, assert_proposition):
    assert_proposition(world, "Foxtrotclaim: Oscar writes a novel.")

def test_plain():
    pass
"""


def script_suite(judge: ScriptedJudge) -> None:
    judge.default = verdict(True, justification="It is there.")
    judge.on("Bravoclaim", verdict(4, justification="Oscar sounds a little tense."))
    judge.on("Charlieclaim", verdict(8))
    judge.on("Deltaclaim", status(401, "Scripted: invalid API key", "authentication_error"))
    judge.on("Echotwo", verdict(6))
    judge.on("Foxtrotclaim", verdict(False, justification="No novel is mentioned."))


@pytest.fixture
def args(inner_run: list[str]) -> list[str]:
    """Arguments pointing the inner run at the scripted judge, cache off; env for subprocesses."""
    return inner_run


def junit_cases(xml_path: Path) -> dict[str, dict[str, str]]:
    """Each test case's properties, by test name."""
    found: dict[str, dict[str, str]] = {}
    for case in ET.parse(xml_path).getroot().iter("testcase"):
        found[case.attrib["name"]] = {
            prop.attrib["name"]: prop.attrib["value"] for prop in case.iter("property")
        }
    return found


def summary_of(stdout: str) -> str:
    """The summary line without its judging time, which differs from run to run."""
    lines = [line for line in stdout.splitlines() if line.startswith("propositions: ")]
    counts = [line for line in lines if re.match(r"propositions: \d+ claims?, ", line)]
    assert len(counts) == 1, lines
    return re.sub(r", [0-9.]+s judging$", "", counts[0])


def comparable(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The verdict records without timing, which differs between runs."""
    records = []
    for record in report["verdicts"]:
        verdict_json = {
            name: value
            for name, value in record["verdict"].items()
            if name not in ("judge_seconds", "recorded_at")
        }
        records.append({**record, "verdict": verdict_json})
    return records


# -- JUnit XML ---------------------------------------------------------------------------------


def test_junit_xml_carries_every_verdict_as_properties(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, args: list[str]
) -> None:
    script_suite(judge_server)
    pytester.makepyfile(SUITE)
    result = pytester.runpytest(*args, "--junitxml=junit.xml")
    assert_counts(result, passed=4, failed=2, judge_errors=1)
    cases = junit_cases(pytester.path / "junit.xml")

    assert cases["test_alpha"] == {
        "proposition[1].claim": "Alphaclaim: Oscar talks about travel.",
        "proposition[1].kind": "check",
        "proposition[1].value": "true",
        "proposition[1].passed": "true",
        "proposition[1].result": "passed",
        "proposition[1].confidence": "0.9",
        "proposition[1].model": "openai/judge-model",
        "proposition[1].cached": "false",
        "proposition[1].justification": "It is there.",
    }
    bravo = cases["test_bravo"]
    assert bravo["proposition[1].kind"] == "score"
    assert bravo["proposition[1].value"] == "4"
    assert bravo["proposition[1].threshold"] == "7"
    assert bravo["proposition[1].passed"] == "false"
    assert bravo["proposition[1].justification"] == "Oscar sounds a little tense."
    # Several claims are numbered in the order they were judged.
    charlie = cases["test_charlie"]
    assert charlie["proposition[1].claim"] == "Charlieclaim: Oscar is polite."
    assert charlie["proposition[1].threshold"] == "5"
    assert charlie["proposition[2].claim"] == "Charliecheck: Oscar answers."
    assert "proposition[2].threshold" not in charlie
    assert {charlie[f"proposition[{i}].passed"] for i in (1, 2)} == {"true"}
    # Soft claims are judged concurrently after the body: both are there, in either order.
    echo = cases["test_echo"]
    assert {echo["proposition[1].claim"], echo["proposition[2].claim"]} == {
        "Echoone: Oscar names a city.",
        "Echotwo: Oscar is concise.",
    }
    assert cases["test_foxtrot"]["proposition[1].value"] == "false"
    # A judge error is not a verdict; a test without claims gets no properties.
    assert cases["test_delta"] == {}
    assert cases["test_plain"] == {}


FAILING_SUITE = """
import pytest
from pytest_propositions import check_proposition

def test_low(world, min_score):
    min_score(world, "Lowclaim: Oscar is calm.", 7)

def test_false(world, assert_proposition):
    assert_proposition(world, "Falseclaim: Oscar writes a novel.")

def test_soft(world, expect_proposition):
    expect_proposition(world, "Softclaim: Oscar names a city.")

def test_by_call(world):
    assert check_proposition(world, "Callclaim: Oscar hates travel.")

@pytest.fixture
def checked_after(world, assert_proposition):
    yield
    assert_proposition(world, "Teardownclaim: Oscar paints.")

def test_in_teardown(checked_after):
    pass
"""


def test_junit_failure_message_and_text_give_the_claim_the_verdict_and_the_justification(
    pytester: pytest.Pytester,
    judge_server: ScriptedJudge,
    args: list[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """CI viewers show a <failure>'s message and text, not its test's properties: both say
    which claim failed, what the judge said against which bar, and why."""
    judge_server.on("Lowclaim", verdict(4, justification="Oscar sounds\na little tense."))
    judge_server.on("Falseclaim", verdict(False, justification="No novel is mentioned."))
    judge_server.on("Softclaim", verdict(False, justification="No city is named."))
    judge_server.on("Callclaim", verdict(False, justification="He likes to travel."))
    judge_server.on("Teardownclaim", verdict(False, justification="He draws buildings."))
    pytester.makepyfile(test_junit=FAILING_SUITE)
    for name in ("CI", "BUILD_NUMBER"):  # on CI pytest's short summary shows whole messages
        monkeypatch.delenv(name, raising=False)
    result = pytester.runpytest(*args, "--junitxml=junit.xml", "-rf")
    assert_counts(result, passed=1, failed=4, errors=1)
    failures = {}
    for case in ET.parse(pytester.path / "junit.xml").getroot().iter("testcase"):
        [element] = [e for e in case if e.tag in ("failure", "error")]
        failures[case.attrib["name"]] = (element.tag, element.attrib["message"], element.text)

    def expect(name: str, tag: str, message: list[str], text: list[str]) -> None:
        found_tag, found_message, found_text = failures[name]
        assert found_tag == tag, failures[name]
        for part in message:
            assert part in found_message, (part, found_message)
        for part in text:
            assert part in (found_text or ""), (part, found_text)

    expect(
        "test_low",
        "failure",
        [
            "PropositionFailed: claim 'Lowclaim: Oscar is calm.' scored 4/9, minimum 7\n"
            "judge's justification: Oscar sounds a little tense."
        ],
        ["FAILED: Lowclaim: Oscar is calm.", "score: 4/9 (minimum 7)", "    Oscar sounds"],
    )
    expect(
        "test_false",
        "failure",
        [
            "claim 'Falseclaim: Oscar writes a novel.' judged False\n",
            "judge's justification: No novel is mentioned.",
        ],
        [
            "FAILED: Falseclaim: Oscar writes a novel.",
            "verdict: False (expected True)",
            "justification:\n    No novel is mentioned.",
        ],
    )
    expect(
        "test_soft",
        "failure",
        ["claim 'Softclaim: Oscar names a city.' judged False", "No city is named."],
        ["FAILED: Softclaim: Oscar names a city.", "    No city is named."],
    )
    expect(
        "test_by_call",
        "failure",
        ["claim 'Callclaim: Oscar hates travel.' judged False", "He likes to travel."],
        ["NOT UPHELD: Callclaim: Oscar hates travel.", "    He likes to travel."],
    )
    # A claim judged in a fixture's teardown fails the test's teardown: an <error>, its text too.
    expect(
        "test_in_teardown",
        "error",
        ["Teardownclaim: Oscar paints.", "He draws buildings."],
        ["FAILED: Teardownclaim: Oscar paints.", "    He draws buildings."],
    )
    # Off CI, the terminal's short summary keeps to the claim's line (pytest shows a crash
    # message's first line only), and the failure shows its section once, after the traceback.
    result.stdout.fnmatch_lines(
        [
            "test_junit.py:8: PropositionFailed",
            "*- proposition -*",
            "FAILED: Falseclaim: Oscar writes a novel.",
            "*short test summary info*",
            "FAILED test_junit.py::test_low - PropositionFailed: claim 'Lowclaim: Oscar is*",
        ]
    )
    assert result.stdout.str().count("No novel is mentioned.") == 1


# -- the JSON report ---------------------------------------------------------------------------


def test_json_report_lists_every_verdict_with_its_test(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, args: list[str]
) -> None:
    script_suite(judge_server)
    pytester.makepyfile(SUITE)
    result = pytester.runpytest(*args, "--prop-report=out/nested/report.json")
    assert_counts(result, passed=4, failed=2, judge_errors=1)
    path = pytester.path / "out" / "nested" / "report.json"
    report = json.loads(path.read_text(encoding="utf-8"))

    assert list(report) == [
        "plugin_version",
        "model",
        "cache_mode",
        "outcome",
        "summary",
        "verdicts",
        "judge_errors",
        "calibrations",
    ]
    # The judge was never calibrated: no measured error, on the report or on any verdict.
    assert report["calibrations"] == {}
    assert not any("judge_calibration" in record for record in report["verdicts"])
    assert report["plugin_version"] == __version__
    assert report["model"] == "openai/judge-model"
    assert report["cache_mode"] == "off"
    summary = report["summary"]
    assert set(summary) == {
        "claims",
        "passed",
        "skipped_by_precondition",
        "from_cache",
        "judged_live",
        "by_call",
        "by_call_upheld",
        "by_call_not_upheld",
        "escalated",
        "escalated_changed",
        "inconclusive",
        "judge_error_tests",
        "verdicts",
        "failed",
        "judge_errors",
        "cache_hits",
        "judge_calls",
        "prompt_tokens",
        "completion_tokens",
        "cost_usd",
        "judge_seconds",
        "dry_run_misses",
    }
    assert summary["verdicts"] == 7
    assert summary["failed"] == 2
    assert summary["judge_errors"] == 1
    assert summary["cache_hits"] == 0
    assert summary["judge_calls"] == 8  # the refused request is a call made, too
    assert summary["prompt_tokens"] > 0 and summary["completion_tokens"] > 0
    assert summary["dry_run_misses"] == 0

    records = report["verdicts"]
    assert [(r["test_id"].split("::")[1], r["verdict"]["claim"]) for r in records] == [
        ("test_alpha", "Alphaclaim: Oscar talks about travel."),
        ("test_bravo", "Bravoclaim: Oscar is calm."),
        ("test_charlie", "Charliecheck: Oscar answers."),
        ("test_charlie", "Charlieclaim: Oscar is polite."),
        ("test_echo", "Echoone: Oscar names a city."),
        ("test_echo", "Echotwo: Oscar is concise."),
        ("test_foxtrot", "Foxtrotclaim: Oscar writes a novel."),
    ]
    bravo = records[1]
    assert bravo["test_id"] == "test_json_report_lists_every_verdict_with_its_test.py::test_bravo"
    assert (bravo["threshold"], bravo["passed"]) == (7, False)
    assert records[0]["threshold"] is None
    # Each verdict is the Verdict's as_dict(), so it loads back unchanged.
    loaded = Verdict.from_dict(bravo["verdict"])
    assert (loaded.kind, loaded.value, loaded.model) == ("score", 4, "openai/judge-model")
    assert loaded.justification == "Oscar sounds a little tense."

    [error] = report["judge_errors"]
    assert error["test_id"].endswith("::test_delta")
    assert "401" in error["error"] or "invalid API key" in error["error"]
    assert "test-key-not-real" not in path.read_text(encoding="utf-8")
    # Only the report itself is left in the folder: the temporary file was renamed over it.
    assert sorted(p.name for p in path.parent.iterdir()) == ["report.json"]


def test_json_report_is_written_even_without_claims(
    pytester: pytest.Pytester, args: list[str]
) -> None:
    pytester.makepyfile("def test_plain():\n    pass\n")
    pytester.runpytest(*args, "--prop-report=report.json").assert_outcomes(passed=1)
    report = json.loads((pytester.path / "report.json").read_text(encoding="utf-8"))
    assert report["verdicts"] == [] and report["judge_errors"] == []
    assert report["summary"]["verdicts"] == 0


def test_json_report_to_a_directory_is_a_usage_error_before_any_test_runs(
    pytester: pytest.Pytester, args: list[str]
) -> None:
    pytester.mkdir("reports")
    pytester.makepyfile("def test_plain():\n    pass\n\ndef test_broken():\n    assert 0\n")
    result = pytester.runpytest(*args, "--prop-report=reports")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: pytest-propositions: --prop-report: 'reports' is a directory; give a file "
            "name, e.g. 'reports/propositions.json'",
        ]
    )
    assert "test_broken" not in result.stdout.str()
    assert list((pytester.path / "reports").iterdir()) == []


@pytest.mark.parametrize("option", ["--prop-html", "--prop-report"])
@pytest.mark.parametrize("problem", ["directory", "under a file", "no permission"])
def test_a_report_that_cannot_be_written_is_a_usage_error_before_any_test_runs(
    pytester: pytest.Pytester,
    judge_server: ScriptedJudge,
    args: list[str],
    option: str,
    problem: str,
) -> None:
    """Found at configure, not after all the judging: a folder, a path under a file, a folder
    where no file can be created. No test runs and the judge is never asked."""
    pytester.makepyfile(SUITE)
    if problem == "directory":
        pytester.mkdir("reports")
        configured, reason = "reports", "'reports' is a directory; give a file name, e.g. "
    elif problem == "under a file":
        pytester.makefile(".txt", notes="not a folder")
        configured = "notes.txt/sub/report.out"
        reason = f"cannot write {configured!r}: {pytester.path / 'notes.txt'} is not a folder"
    else:
        if os.geteuid() == 0:
            pytest.skip("root may write into any folder: no permission to take away")
        locked = pytester.mkdir("locked")
        locked.chmod(0o500)
        configured, reason = "locked/report.out", "cannot write 'locked/report.out': Permission"
    result = pytester.runpytest(*args, f"{option}={configured}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: pytest-propositions: {option}: {reason}*"])
    assert "test_alpha" not in result.stdout.str()
    assert judge_server.requests == []


def test_a_folder_that_refuses_new_files_is_named_with_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check creates a file where the report will go; what stops it is the message (the
    suite may run as root, whom no folder's permissions stop)."""

    def refuse(path: Any, *_: Any) -> int:
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(os, "open", refuse)
    with pytest.raises(ValueError) as caught:
        check_report_path("out/page.html", tmp_path, "--prop-html")
    assert str(caught.value).startswith(
        f"--prop-html: cannot write 'out/page.html': Permission denied ({tmp_path / 'out'}"
    )
    assert (tmp_path / "out").is_dir()


def test_a_report_folder_is_made_at_configure_and_no_probe_is_left(
    pytester: pytest.Pytester, args: list[str]
) -> None:
    """The folders of both reports exist before the first test runs (the test looks), and the
    check leaves nothing behind but the reports."""
    pytester.makepyfile(
        "from pathlib import Path\n\ndef test_folders():\n"
        "    assert Path('out/html').is_dir() and Path('out/json').is_dir()\n"
    )
    result = pytester.runpytest(
        *args, "--prop-html=out/html/page.html", "--prop-report=out/json/run.json"
    )
    result.assert_outcomes(passed=1)
    assert sorted(p.name for p in (pytester.path / "out").rglob("*") if p.is_file()) == [
        "page.html",
        "run.json",
    ]


def test_json_report_path_that_becomes_a_directory_keeps_the_run_report(
    pytester: pytest.Pytester, args: list[str]
) -> None:
    pytester.makepyfile(
        "import os\n\ndef test_makes_folder():\n    os.mkdir('reports')\n\n"
        "def test_broken():\n    assert 0\n"
    )
    result = pytester.runpytest(*args, "--prop-report=reports")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(["*--prop-report: 'reports' is a directory*"])
    # The run's own report is still there.
    result.stdout.fnmatch_lines(["*short test summary info*", "FAILED *test_broken*"])


def test_report_path_is_relative_to_the_invocation_folder(tmp_path: Path) -> None:
    assert report_path("a/b.json", tmp_path) == tmp_path / "a" / "b.json"
    assert report_path(str(tmp_path / "c.json"), Path("/elsewhere")) == tmp_path / "c.json"
    with pytest.raises(ValueError, match="is a directory"):
        report_path(".", tmp_path)


def test_json_report_write_is_atomic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "report.json"
    write_json_report(path, {"run": 1})
    assert json.loads(path.read_text(encoding="utf-8")) == {"run": 1}
    write_json_report(path, {"run": 2})  # replaces a previous report
    assert json.loads(path.read_text(encoding="utf-8")) == {"run": 2}

    def failing_replace(source: Any, target: Any) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(OSError, match="disk full"):
        write_json_report(path, {"run": 3})
    # The previous report is untouched and no temporary file is left behind.
    assert json.loads(path.read_text(encoding="utf-8")) == {"run": 2}
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]


# -- the terminal summary ------------------------------------------------------------------------


def test_verbose_summary_lists_the_lowest_scores(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, args: list[str]
) -> None:
    scores = {"Kilo": 5, "Lima": 2, "Mike": 9, "November": 4}
    for name, value in scores.items():
        judge_server.on(f"{name}score", verdict(value))
    long_claim = "Novemberscore: " + "Oscar keeps describing quiet cities and their buildings " * 4
    pytester.makepyfile(
        test_scores=f"""
        def test_kilo(world, min_score):
            min_score(world, "Kiloscore: Oscar is curious.", 5)

        def test_lima(world, min_score):
            min_score(world, "Limascore: Oscar is funny.", 3)

        def test_mike(world, min_score):
            min_score(world, "Mikescore: Oscar is an architect.", 7)

        def test_november(world, min_score):
            min_score(world, {long_claim!r}, 6)

        def test_check(world, assert_proposition):
            assert_proposition(world, "Oscar answers the question.")
        """
    )
    quiet = pytester.runpytest(*args)
    quiet.assert_outcomes(passed=3, failed=2)
    assert "lowest scores" not in quiet.stdout.str()

    result = pytester.runpytest(*args, "-v")
    result.assert_outcomes(passed=3, failed=2)
    module = "test_scores.py"
    result.stdout.fnmatch_lines(
        [
            "propositions: 5 claims, 3 passed, 2 failed, 0 judge errors,*",
            "propositions: lowest scores (4 of 4)",
            "score  min  result  test * claim",
            f"  2/9    3  FAILED  {module}::test_lima      Limascore: Oscar is funny.",
            f"  4/9    6  FAILED  {module}::test_november  Novemberscore: Oscar keeps *...",
            f"  5/9    5  passed  {module}::test_kilo      Kiloscore: Oscar is curious.",
            f"  9/9    7  passed  {module}::test_mike      Mikescore: Oscar is an architect.",
        ]
    )
    table = result.stdout.lines[result.stdout.lines.index("propositions: lowest scores (4 of 4)") :]
    assert all(len(line) <= 100 for line in table[:6])
    assert any(len(line) == 100 for line in table[:6])  # the long claim was cut to fit


def test_table_shows_at_most_ten_and_breaks_ties_by_test() -> None:
    outcomes = [
        Outcome(
            f"t.py::test_{index:02d}",
            Verdict(kind="score", claim=f"claim {index}", value=index % 3),
            5,
            index % 3 >= 5,
        )
        for index in range(15, 0, -1)
    ]
    outcomes.append(Outcome(None, Verdict(kind="check", claim="a check", value=True), None, True))
    lines = lowest_scores_table(outcomes)
    assert lines[0] == "propositions: lowest scores (10 of 15)"
    rows = lines[2:]
    assert len(rows) == 10
    assert [row.split()[3] for row in rows[:5]] == [
        "t.py::test_03",
        "t.py::test_06",
        "t.py::test_09",
        "t.py::test_12",
        "t.py::test_15",
    ]
    assert [row.split()[0] for row in rows] == ["0/9"] * 5 + ["1/9"] * 5
    assert lowest_scores_table(outcomes[-1:]) == []


def test_dry_run_summary_counts_the_claims_that_would_be_judged(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, args: list[str]
) -> None:
    pytester.makepyfile(
        """
        def test_one(world, assert_proposition):
            assert_proposition(world, "Oscar talks about travel.")

        def test_two(world, min_score):
            min_score(world, "Oscar is calm.", 5)
        """
    )
    result = pytester.runpytest(*args, "--prop-dry-run", "--prop-report=report.json")
    result.assert_outcomes(skipped=2)
    result.stdout.fnmatch_lines(
        [
            "propositions: 0 claims, 0 passed, 0 failed, 0 judge errors, 0 from cache, 0 judged live, 0 judge calls,*",
            "propositions: dry run, at least 2 claims would be judged (no cached verdict): about "
            "* prompt tokens, cost not known (no price for the model in litellm's table) "
            "(estimated). At least: a test stops at its first uncached hard claim, so the claims "
            "after it are not counted",
        ]
    )
    assert judge_server.requests == []
    report = json.loads((pytester.path / "report.json").read_text(encoding="utf-8"))
    assert report["summary"]["dry_run_misses"] == 2


# -- pytest-xdist ------------------------------------------------------------------------------


def test_runtime_merges_worker_results() -> None:
    runtime = Runtime(Settings())
    assert not runtime.used
    assert runtime.stats().verdicts == 0
    check = Verdict(kind="check", claim="c", value=False)
    worker = {"verdicts": 2, "judge_calls": 3, "prompt_tokens": 10, "cost_usd": 0.5}
    runtime.record.merge_worker([Outcome("t::a", check, None, False)], [], worker, used=True)
    runtime.record.merge_worker([], [("t::b", "JudgeUnavailable: down")], worker, used=True)
    stats = runtime.stats()
    assert stats_record(stats) | {"judge_seconds": 0.0} == {
        "verdicts": 4,
        "cache_hits": 0,
        "judge_calls": 6,
        "prompt_tokens": 20,
        "completion_tokens": 0,
        "cost_usd": 1.0,
        "judge_seconds": 0.0,
        "dry_run_misses": 0,
        "dry_run_prompt_tokens": 0,
        "dry_run_cost_usd": 0.0,
        "dry_run_unpriced": 0,
        "coalesced": 0,
    }
    assert isinstance(stats.verdicts, int)
    assert runtime.used
    assert runtime.record.outcomes_of("t::a")[0].verdict is check
    assert runtime.record.judge_errors == [("t::b", "JudgeUnavailable: down")]


@pytest.mark.slow  # a pytest subprocess on xdist workers
def test_xdist_run_reports_the_same_as_a_single_process(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, args: list[str]
) -> None:
    script_suite(judge_server)
    pytester.makepyfile(SUITE)
    # One process: in a subprocess too, so both runs start the same way.
    single = pytester.runpytest_subprocess(
        *args, "-v", "--prop-report=single.json", "--junitxml=single.xml"
    )
    assert_counts(single, passed=4, failed=2, judge_errors=1)
    spread = pytester.runpytest_subprocess(
        *args, "-p", "xdist", "-n", "2", "-v", "--prop-report=xdist.json", "--junitxml=xdist.xml"
    )
    assert_counts(spread, passed=4, failed=2, judge_errors=1)
    spread.stdout.fnmatch_lines(["*2 workers*"])

    assert summary_of(single.stdout.str()) == summary_of(spread.stdout.str())
    assert summary_of(spread.stdout.str()).startswith(
        "propositions: 8 claims, 5 passed, 2 failed, 1 judge error, 0 from cache, 7 judged live, 8 judge calls"
    )
    # The -v table is the same, row for row.
    for result in (single, spread):
        result.stdout.fnmatch_lines(["propositions: lowest scores (3 of 3)"])

    def table(lines: list[str]) -> list[str]:
        start = lines.index("propositions: lowest scores (3 of 3)")
        return lines[start : start + 6]

    assert table(single.stdout.lines) == table(spread.stdout.lines)

    one = json.loads((pytester.path / "single.json").read_text(encoding="utf-8"))
    many = json.loads((pytester.path / "xdist.json").read_text(encoding="utf-8"))
    assert len(many["verdicts"]) == len(one["verdicts"]) == 7
    for name in ("verdicts", "failed", "judge_errors", "cache_hits", "judge_calls"):
        assert many["summary"][name] == one["summary"][name], name
    for name in ("prompt_tokens", "completion_tokens", "dry_run_misses", "cost_usd"):
        assert many["summary"][name] == one["summary"][name], name
    assert comparable(many) == comparable(one)
    assert many["judge_errors"] == one["judge_errors"]
    assert len(many["judge_errors"]) == 1

    # JUnit properties travel from the workers inside the reports.
    assert _same_modulo_soft_order(
        junit_cases(pytester.path / "xdist.xml"), junit_cases(pytester.path / "single.xml")
    )
    assert junit_cases(pytester.path / "xdist.xml")["test_bravo"]["proposition[1].value"] == "4"


def _same_modulo_soft_order(a: dict[str, dict[str, str]], b: dict[str, dict[str, str]]) -> bool:
    """Soft claims are judged concurrently, so their numbering may differ between runs."""

    def claims(properties: dict[str, str]) -> set[tuple[tuple[str, str], ...]]:
        grouped: dict[str, list[tuple[str, str]]] = {}
        for name, value in properties.items():
            index, _, field = name.partition(".")
            grouped.setdefault(index, []).append((field, value))
        return {tuple(sorted(fields)) for fields in grouped.values()}

    return a.keys() == b.keys() and all(claims(a[name]) == claims(b[name]) for name in a)


# The per-test reporting hooks start at a session's first claim, however it comes.
REPORTS_PROBE = """
import pathlib

def pytest_sessionfinish(session):
    registered = session.config.pluginmanager.get_plugin("propositions-reports") is not None
    pathlib.Path("reports-registered.txt").write_text(str(registered))
"""


def test_a_suite_without_claims_never_starts_the_per_test_reporting(
    pytester: pytest.Pytester, args: list[str]
) -> None:
    pytester.makeconftest(pytester.path.joinpath("conftest.py").read_text() + REPORTS_PROBE)
    pytester.makepyfile("def test_plain():\n    assert 1 + 1 == 2\n")
    pytester.runpytest(*args).assert_outcomes(passed=1)
    assert (pytester.path / "reports-registered.txt").read_text() == "False"


def test_without_a_junit_file_no_test_is_given_verdict_properties(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, args: list[str]
) -> None:
    # The properties are built for junitxml only: a run that writes no JUnit file (the usual
    # cached run) does not pay for them on every test.
    script_suite(judge_server)
    pytester.makepyfile(SUITE)
    conftest = pytester.path / "conftest.py"
    conftest.write_text(
        conftest.read_text()
        + """
import json

def pytest_runtest_logreport(report):
    if report.when == "teardown":
        with open("properties.jsonl", "a") as out:
            out.write(json.dumps([report.nodeid, report.user_properties]) + "\\n")
"""
    )
    result = pytester.runpytest(*args)
    assert_counts(result, passed=4, failed=2, judge_errors=1)
    lines = (pytester.path / "properties.jsonl").read_text().splitlines()
    assert len(lines) == 7
    assert all(json.loads(line)[1] == [] for line in lines)


def test_a_first_claim_without_a_judge_call_still_gets_its_junit_properties(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, args: list[str]
) -> None:
    pytester.makeconftest(pytester.path.joinpath("conftest.py").read_text() + REPORTS_PROBE)
    pytester.makepyfile(
        """
        def test_plain():
            pass

        def test_skipped_by_precondition(world, assert_proposition):
            assert_proposition(world, "Oscar flies.", precondition=lambda **_: False)
        """
    )
    pytester.runpytest(*args, "--junitxml=junit.xml").assert_outcomes(passed=2)
    assert judge_server.requests == []
    assert (pytester.path / "reports-registered.txt").read_text() == "True"
    cases = junit_cases(pytester.path / "junit.xml")
    assert cases["test_plain"] == {}
    assert cases["test_skipped_by_precondition"]["proposition[1].value"] == "true"


def test_a_first_claim_through_the_library_api_still_gets_the_judge_error_section(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, args: list[str]
) -> None:
    judge_server.default = status(401, "Scripted: invalid API key", "authentication_error")
    pytester.makepyfile(
        """
        from pytest_propositions import Proposition

        def test_plain():
            pass

        def test_direct(world):
            Proposition("Oscar is calm.", world).check()
        """
    )
    result = pytester.runpytest(*args)
    assert_counts(result, passed=1, judge_errors=1)
    result.stdout.fnmatch_lines(["*proposition judge error*", "JudgeUnavailable: *HTTP 401*"])


# -- every report tells the same story ------------------------------------------------------------

STORY = """
import os

def never(**_):
    return False

def test_cached_check(world, assert_proposition):
    assert_proposition(world, "Cachedcheck: Oscar likes cities.")

def test_cached_score(world, min_score):
    min_score(world, "Cachedscore: Oscar is calm.", 5)

def test_cached_samples(world, assert_proposition):
    assert_proposition(world, "Cachedsamples: Oscar answers.", samples=3)

def test_precondition(world, assert_proposition):
    if os.environ.get("STORY_ALL"):
        assert_proposition(world, "Preconditionclaim: Oscar dances.", precondition=never)

def test_false(world, assert_proposition):
    if os.environ.get("STORY_ALL"):
        assert_proposition(world, "Falseclaim: Oscar writes a novel.")

def test_live(world, expect_proposition):
    if os.environ.get("STORY_ALL"):
        expect_proposition(world, "Liveclaim: Oscar is polite.")

def test_broken(world, assert_proposition):
    if os.environ.get("STORY_ALL"):
        assert_proposition(world, "Brokenclaim: the judge refuses it.")
"""

COUNT_NAMES = (
    "claims",
    "passed",
    "failed",
    "judge_errors",
    "skipped_by_precondition",
    "from_cache",
    "judged_live",
    "judge_calls",
)


def terminal_counts(stdout: str, mode: str) -> dict[str, int]:
    """The summary line's counts, by the JSON report's names."""
    words = {
        "claim": "claims",
        "claims": "claims",
        "passed": "passed",
        "failed": "failed",
        "judge error": "judge_errors",
        "judge errors": "judge_errors",
        "skipped by precondition": "skipped_by_precondition",
        "from cache": "from_cache",
        "judged live": "judged_live",
        "judge call": "judge_calls",
        "judge calls": "judge_calls",
    }
    line = summary_of(stdout).removeprefix("propositions: ")
    counts = {name: 0 for name in COUNT_NAMES}
    for part in line.split(", "):
        number, _, word = part.partition(" ")
        if word in words:
            counts[words[word]] = int(number)
    return counts


def html_counts(page: str, mode: str) -> dict[str, int]:
    found = re.search(r'<div class="counts">(.*?)</div>', page)
    assert found is not None
    spans = re.findall(r"<span>(.*?)</span>", found.group(1))
    return terminal_counts("propositions: " + ", ".join(spans[:-1]), mode)


@pytest.mark.parametrize("mode", ["fail", "report"])
def test_terminal_json_junit_and_html_give_the_same_counts_and_words(
    pytester: pytest.Pytester,
    judge_server: ScriptedJudge,
    args: list[str],
    monkeypatch: pytest.MonkeyPatch,
    mode: str,
) -> None:
    judge_server.default = verdict(True, justification="It is there.")
    judge_server.on("Cachedscore", verdict(8))
    judge_server.on("Falseclaim", verdict(False, justification="No novel is mentioned."))
    judge_server.on("Brokenclaim", status(401, "Scripted: invalid API key", "authentication_error"))
    pytester.makepyfile(test_story=STORY)
    cached = [*args, "--prop-cache=use", f"--prop-cache-dir={pytester.path / 'verdicts'}"]
    warm = pytester.runpytest(*cached)
    assert_counts(warm, passed=7)
    monkeypatch.setenv("STORY_ALL", "1")
    result = pytester.runpytest(
        *cached,
        f"--prop-outcome={mode}",
        "--prop-report=run.json",
        "--prop-html=run.html",
        "--junitxml=run.xml",
    )
    if mode == "fail":
        assert_counts(result, passed=5, failed=1, judge_errors=1)
    else:
        assert_counts(result, passed=5, not_upheld=1, judge_errors=1)

    expected = {
        "claims": 7,
        "passed": 5,
        "failed": 1,
        "judge_errors": 1,
        "skipped_by_precondition": 1,
        "from_cache": 3,  # claims, not requests: the three samples are one claim
        "judged_live": 2,
        "judge_calls": 3,  # the refused request is a call made, too
    }
    assert terminal_counts(result.stdout.str(), mode) == expected

    report = json.loads((pytester.path / "run.json").read_text(encoding="utf-8"))
    assert {name: report["summary"][name] for name in COUNT_NAMES} == expected
    assert report["summary"]["cache_hits"] == 5  # requests: 1 + 1 + 3 samples
    assert report["outcome"] == mode

    suite = ET.parse(pytester.path / "run.xml").getroot().find("testsuite")
    assert suite is not None
    properties = {p.attrib["name"]: p.attrib["value"] for p in suite.find("properties") or []}
    assert properties["propositions.outcome"] == mode
    assert {name: int(properties[f"propositions.{name}"]) for name in COUNT_NAMES} == expected

    page = rendered((pytester.path / "run.html").read_text(encoding="utf-8"))
    assert html_counts(page, mode) == expected
    # One card per claim: seven, of which one is the judge error.
    assert page.count('<section class="claim') == expected["claims"]

    # The claim the judge rejected, worded the same in every report, in either mode.
    word = "failed"
    rejected = [r for r in report["verdicts"] if not r["passed"]]
    assert [r["result"] for r in rejected] == [word]
    false_case = junit_cases(pytester.path / "run.xml")["test_false"]
    assert false_case["proposition[1].result"] == word
    status_class = word.replace(" ", "-")
    assert page.count(f'data-status="{status_class}"') == 1
    if mode == "report":
        assert "Outcome report" in page and "does not fail its test" in page
        result.stdout.fnmatch_lines(["FAILED      test_story.py::test_false"])
    else:
        assert "Outcome report" not in page


def test_counts_are_singular_and_plural_right() -> None:
    from pytest_propositions.reports.counts import RunCounts, summary_line

    one = RunCounts(1, 0, 0, 1, 0, 0, 0, 1, 1, 0.0, 0.0)
    assert summary_line(one) == (
        "propositions: 1 claim, 0 passed, 0 failed, 1 judge error, 0 from cache, "
        "0 judged live, 1 judge call, 1 token, $0.0000, 0.0s judging"
    )
    two = RunCounts(2, 1, 1, 0, 1, 0, 1, 2, 20, 0.5, 1.25)
    assert summary_line(two, "report") == (
        "propositions: 2 claims, 1 passed, 1 failed, 0 judge errors, "
        "1 skipped by precondition, 0 from cache, 1 judged live, 2 judge calls, 20 tokens, "
        "$0.5000, 1.2s judging"
    )


# -- confidence and reasoning ---------------------------------------------------------------------

CONFIDENCE_SUITE = """
def never(**_):
    return False

def test_sure(world, assert_proposition):
    assert_proposition(world, "Tinyconfidence: Oscar writes a novel.")

def test_silent(world, assert_proposition):
    assert_proposition(world, "Noconfidence: Oscar paints.")

def test_unjudged(world, assert_proposition):
    assert_proposition(world, "Unjudged: Oscar dances.", precondition=never)
"""


def test_confidence_is_shown_as_the_judge_gave_it_or_not_given(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, args: list[str]
) -> None:
    judge_server.on(
        "Tinyconfidence",
        verdict(False, confidence=0.0001, reasoning="Step one: no novel.\nStep two: false."),
    )
    # A judge that gives no confidence: its reply's other form, the final verdict line (a JSON
    # reply must carry one, as the schema says).
    judge_server.on("Noconfidence", text("Nothing painted.\nVERDICT: false"))
    pytester.makepyfile(test_confidence=CONFIDENCE_SUITE)
    result = pytester.runpytest(
        *args, "--prop-html=page.html", "--junitxml=junit.xml", "--prop-report=run.json"
    )
    assert_counts(result, passed=1, failed=2)
    out = result.stdout.str()
    # What the judge said, not rounded to a made-up 0.00; nothing made up when it said nothing.
    result.stdout.fnmatch_lines(["FAILED: Tinyconfidence*", "  confidence: 0.0001"])
    result.stdout.fnmatch_lines(["FAILED: Noconfidence*", "  confidence: not given"])
    assert not re.search(r"confidence: 0\.00$", out, re.MULTILINE)
    # The reasoning is long: in the failure section under -vv only.
    assert "Step one: no novel." not in out
    cases = junit_cases(pytester.path / "junit.xml")
    assert cases["test_sure"]["proposition[1].confidence"] == "0.0001"
    assert cases["test_silent"]["proposition[1].confidence"] == "not given"
    assert cases["test_unjudged"]["proposition[1].confidence"].startswith("not given")
    report = json.loads((pytester.path / "run.json").read_text(encoding="utf-8"))
    by_claim = {r["verdict"]["claim"]: r["verdict"] for r in report["verdicts"]}
    assert by_claim["Noconfidence: Oscar paints."]["confidence"] is None

    page = rendered((pytester.path / "page.html").read_text(encoding="utf-8"))
    assert "<dt>confidence</dt><dd>0.0001</dd>" in page
    assert "<dt>confidence</dt><dd>not given</dd>" in page
    assert "<dt>confidence</dt><dd>not given (not judged: the precondition was false)</dd>" in page
    # The reasoning, collapsed, escaped.
    assert (
        '<details class="reasoning"><summary>The judge\'s reasoning</summary>'
        "<pre>Step one: no novel.\nStep two: false.</pre></details>"
    ) in page

    verbose = pytester.runpytest(*args, "-vv", "-k", "sure")
    verbose.stdout.fnmatch_lines(
        [
            "FAILED: Tinyconfidence*",
            "  justification:",
            "*",
            "  reasoning:",
            # On its line, its newline shown as \n (no text of the judge's starts a line).
            r"    Step one: no novel.\nStep two: false.",
        ]
    )


# -- text the terminal must not act on ----------------------------------------------------------

HOSTILE_CLAIM = (
    "Oscar mentions travel.\nFAILED test_x.py::test_forged - AssertionError\x1b]0;owned\x07"
)
HOSTILE_SUITE = f"""
def test_hostile(world, assert_proposition):
    assert_proposition(world, {HOSTILE_CLAIM!r})

def test_scored(world, assert_proposition):
    assert_proposition(world, "Oscar sounds calm.\\rPASSED test_z.py::test_fake", min_score=3)
"""


def test_claims_and_judge_text_cannot_act_on_the_terminal(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, args: list[str]
) -> None:
    """Control and bidi characters in a claim, a justification or the reasoning are shown as
    escapes and newlines as \\n: nothing clears the screen, retitles the window, reorders text
    or starts a line that passes for one of pytest's result lines."""
    judge_server.on(
        "mentions travel",
        verdict(
            False,
            justification="No.\r\nPASSED test_y.py::test_ok\x1b[2J\x00 bell\x07",
            reasoning="\u202egnp.exe\u2066 and \x9b31m red",
        ),
    )
    judge_server.on("sounds calm", verdict(7, justification="Calm.\nPASSED test_w.py::test_q"))
    pytester.makepyfile(HOSTILE_SUITE)
    result = pytester.runpytest(*args, "-vv", "-rA")
    assert_counts(result, passed=1, failed=1)
    out = result.stdout.str()
    for char in ("\x1b", "\x07", "\x00", "\r", "\u202e", "\u2066", "\x9b"):
        assert char not in out, repr(char)
    forged = [
        line for line in out.splitlines() if re.match(r"\s*(FAILED|PASSED) test_[xyzw]\.py::", line)
    ]
    assert forged == []
    assert r"FAILED: Oscar mentions travel.\nFAILED test_x.py::test_forged" in out
    assert r"\x1b]0;owned\x07" in out
    assert r"No.\r\nPASSED test_y.py::test_ok\x1b[2J\x00 bell\x07" in out
    assert r"\u202egnp.exe\u2066 and \x9b31m red" in out
    assert r"Calm.\nPASSED test_w.py::test_q" in out
