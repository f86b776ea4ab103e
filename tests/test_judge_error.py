"""The judge's measured error in reports: calibrate's record of the judge in use, its false-pass
and false-fail rates with exact upper bounds, in every report; and, for claims over runs, whose
verdicts decided them (the referee's are in the HTML and JUnit reports too)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from pytest_propositions.calibration import Calibrations, record_key, save_record
from pytest_propositions.cli.calibrate import Item, Outcome, compute_metrics
from pytest_propositions.judging.prompts import PROMPT_VERSION
from pytest_propositions.over_runs.binomial import upper_bound
from pytest_propositions.reports.summary import calibration_line, calibration_text
from pytest_propositions.store.location import CALIBRATION_FILE as RECORD_NAME
from tests.support.calibration import calibration_record as shared_record
from tests.support.html_page import rendered
from tests.support.judge_server import ScriptedJudge, verdict

pytest_plugins = ["pytester"]

JUDGE = "openai/judge-model"


def calibration_record(model: str = JUDGE, **changes: Any) -> dict[str, Any]:
    return shared_record(model, **changes)


# -- the bound ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("errors", "trials"), [(1, 10), (2, 88), (5, 88), (50, 176), (87, 88), (3, 1000), (1, 2)]
)
def test_the_upper_bound_is_the_exact_one_sided_clopper_pearson_bound(
    errors: int, trials: int
) -> None:
    from scipy.stats import beta, binom

    bound = upper_bound(errors, trials)
    assert bound == pytest.approx(beta.ppf(0.95, errors + 1, trials - errors), abs=1e-7)
    # What the bound means: at that rate, seeing so few errors has chance 5%.
    assert binom.cdf(errors, trials, bound) == pytest.approx(0.05, abs=1e-6)
    assert upper_bound(errors, trials, 0.99) > bound > errors / trials


def test_the_upper_bound_at_the_edges_and_for_bad_input() -> None:
    assert upper_bound(0, 88) == pytest.approx(1 - 0.05 ** (1 / 88))
    assert upper_bound(0, 1) == pytest.approx(0.95)
    assert upper_bound(88, 88) == 1.0
    for errors, trials in [(1, 0), (-1, 5), (6, 5)]:
        with pytest.raises(ValueError, match="errors <= trials"):
            upper_bound(errors, trials)
    with pytest.raises(ValueError, match="confidence"):
        upper_bound(1, 5, 1.0)


def test_calibrate_keeps_the_counts_behind_each_rate() -> None:
    def outcome(label: bool, value: Any) -> Outcome:
        return Outcome(Item("i", "check", {"text": "t"}, "c", label), value)

    metrics = compute_metrics(
        [outcome(True, True), outcome(True, False), outcome(False, True), outcome(False, None)]
        + [outcome(False, False)] * 3,
        min_score=7,
    )
    assert (metrics.positives, metrics.false_fails) == (2, 1)
    # The unanswered false claim is wrong but not a false pass.
    assert (metrics.negatives, metrics.false_passes) == (5, 1)


# -- finding the calibration of the judge in use -----------------------------------------------


def test_the_calibration_of_the_judge_in_use_is_found_by_its_identity(tmp_path: Path) -> None:
    save_record(tmp_path, record_key(JUDGE, PROMPT_VERSION), calibration_record())
    save_record(
        tmp_path,
        record_key(JUDGE, PROMPT_VERSION, "low"),
        calibration_record(false_passes=30, false_pass_rate=0.3409),
    )
    save_record(tmp_path, record_key(JUDGE, "0"), calibration_record(false_passes=80))
    book = Calibrations(tmp_path, None)
    view = book(JUDGE)
    assert view is not None
    assert (view["false_passes"], view["negatives"]) == (2, 88)
    assert view["false_pass_upper"] == pytest.approx(upper_bound(2, 88), abs=1e-4)
    assert view["false_fail_upper"] == pytest.approx(upper_bound(5, 88), abs=1e-4)
    assert view["confidence"] == 0.95
    # Another judge, or this one asked with another reasoning effort, is not this calibration.
    assert book("openai/other-model") is None
    assert book("") is None
    low = Calibrations(tmp_path, "low")(JUDGE)
    assert low is not None and low["false_passes"] == 30
    # The record is read once: the first answer stands for the run.
    (tmp_path / RECORD_NAME).unlink()
    assert book(JUDGE) == view
    assert Calibrations(tmp_path, None)(JUDGE) is None


def test_a_run_looks_for_the_record_once_and_imports_nothing_without_one(
    tmp_path: Path,
) -> None:
    from pytest_propositions import session

    lookup = session.calibrations(tmp_path, None)
    assert lookup(JUDGE) is None
    # Looked for once: a record written during the run is not read by it.
    save_record(tmp_path, record_key(JUDGE, PROMPT_VERSION), calibration_record())
    assert lookup(JUDGE) is None
    found = session.calibrations(tmp_path, None)(JUDGE)
    assert found is not None and found["false_fails"] == 5


def test_a_damaged_or_older_record_never_breaks_a_report(tmp_path: Path) -> None:
    (tmp_path / RECORD_NAME).write_text("{not json")
    assert Calibrations(tmp_path, None)(JUDGE) is None
    assert Calibrations(None, None)(JUDGE) is None
    (tmp_path / RECORD_NAME).unlink()
    old = {
        key: value
        for key, value in calibration_record().items()
        if key not in ("positives", "negatives", "false_passes", "false_fails")
    }
    save_record(tmp_path, record_key(JUDGE, PROMPT_VERSION), old)
    view = Calibrations(tmp_path, None)(JUDGE)
    assert view is not None and view["false_pass_upper"] is None
    assert "false pass 2.3% (no bound: calibrate again" in calibration_line(view)


def test_the_line_and_the_claims_text() -> None:
    from pytest_propositions.calibration import error_view

    view = error_view(calibration_record())
    assert calibration_line(view) == (
        "judge openai/judge-model calibrated: false pass ≤ 7.0%, false fail ≤ 11.6% "
        "(176 labeled claims; 95% upper bounds; balanced accuracy 0.96, 2026-11-20)"
    )
    assert calibration_text(view) == (
        "false pass 2/88 = 2.3% (≤ 7.0%), false fail 5/88 = 5.7% (≤ 11.6%); 95% upper bounds, "
        "calibrated on 176 labeled claims, 2026-11-20"
    )
    none_false = error_view(calibration_record(negatives=0, false_passes=0))
    assert "false pass not measured (no false claims labeled)" in calibration_line(none_false)


# -- a run with and without a calibration -------------------------------------------------------

SUITE = """
def test_pass(world, assert_proposition):
    assert_proposition(world, "Passclaim: Oscar likes quiet cities.")

def test_fail(world, assert_proposition):
    assert_proposition(world, "Failclaim: Oscar hates architecture.")
"""


def run_suite(pytester: pytest.Pytester, judge: ScriptedJudge, args: list[str]) -> Any:
    judge.on("Passclaim", verdict(True, justification="He says so."))
    judge.on("Failclaim", verdict(False, justification="He loves it."))
    pytester.makepyfile(SUITE)
    return pytester.runpytest(
        *args,
        f"--prop-cache-dir={pytester.path / 'verdicts'}",
        "--prop-report=report.json",
        "--prop-html=report.html",
        "--junitxml=junit.xml",
    )


def reports(pytester: pytest.Pytester) -> tuple[dict[str, Any], list[dict[str, str]], str]:
    """The JSON report, each test case's JUnit properties, and the HTML page."""
    report = json.loads((pytester.path / "report.json").read_text(encoding="utf-8"))
    root = ET.parse(pytester.path / "junit.xml").getroot()
    properties = [
        {p.attrib["name"]: p.attrib["value"] for p in case.iter("property")}
        for case in root.iter("testcase")
    ]
    html = rendered((pytester.path / "report.html").read_text(encoding="utf-8"))
    return report, properties, html


def test_every_report_shows_the_measured_error_of_a_calibrated_judge(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, inner_run: list[str]
) -> None:
    save_record(pytester.path / "verdicts", record_key(JUDGE, PROMPT_VERSION), calibration_record())
    result = run_suite(pytester, judge_server, inner_run)
    result.assert_outcomes(passed=1, failed=1)
    line = (
        "propositions: judge openai/judge-model calibrated: false pass ≤ 7.0%, "
        "false fail ≤ 11.6% (176 labeled claims; 95% upper bounds; balanced accuracy 0.96, "
        "2026-11-20)"
    )
    text = (
        "false pass 2/88 = 2.3% (≤ 7.0%), false fail 5/88 = 5.7% (≤ 11.6%); 95% upper "
        "bounds, calibrated on 176 labeled claims, 2026-11-20"
    )
    # The header, the failed claim's section, and the summary at the end.
    assert result.outlines.count(line) == 2
    result.stdout.fnmatch_lines(["FAILED: Failclaim*", f"  judge's measured error: {text}"])
    report, properties, html = reports(pytester)
    assert set(report["calibrations"]) == {JUDGE}
    measured = report["calibrations"][JUDGE]
    assert (measured["false_passes"], measured["negatives"]) == (2, 88)
    assert measured["false_pass_upper"] == pytest.approx(0.0698, abs=1e-4)
    assert measured["false_fail_upper"] == pytest.approx(0.1158, abs=1e-4)
    assert [record["judge_calibration"] for record in report["verdicts"]] == [JUDGE, JUDGE]
    assert len(properties) == 2
    for case in properties:
        assert case["proposition[1].judge_calibration"] == text
        assert case["proposition[1].judge_false_pass_upper"] == "0.0698"
        assert case["proposition[1].judge_false_fail_upper"] == "0.1158"
    assert html.count("measured error") == 2
    assert line.removeprefix("propositions: ") in html


def test_without_a_calibration_no_report_mentions_one(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, inner_run: list[str]
) -> None:
    # A calibration of another judge is not this judge's.
    save_record(
        pytester.path / "verdicts",
        record_key("openai/other-model", PROMPT_VERSION),
        calibration_record("openai/other-model"),
    )
    result = run_suite(pytester, judge_server, inner_run)
    result.assert_outcomes(passed=1, failed=1)
    # The header says the judge in use is not calibrated; nothing else mentions a calibration.
    result.stdout.fnmatch_lines(
        ["propositions: judge openai/judge-model: not calibrated for this prompt version"]
    )
    assert not [line for line in result.outlines if "calibrated:" in line]
    assert not [line for line in result.outlines if "measured error" in line]
    report, properties, html = reports(pytester)
    assert report["calibrations"] == {}
    assert not any("judge_calibration" in record for record in report["verdicts"])
    assert len(properties) == 2
    assert not [name for case in properties for name in case if "judge_" in name]
    assert "measured error" not in html and "calibrated" not in html
