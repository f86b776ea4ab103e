"""Claims over many runs, end to end against the scripted judge: simulations whose true rate
is known (a run "holds" when its trajectory carries a marker the judge is scripted to uphold),
decided by the sequential rules, reported, cached and replayed."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from tests.support.html_page import rendered
from tests.support.judge_server import ScriptedJudge, delay, verdict
from tests.support.outcomes import assert_counts

pytest_plugins = ["pytester"]

# Run r holds when (r % 10) < 10 * rate: the true rate is exact in every block of ten runs.
SIMULATIONS = """
import pytest
from pytest_propositions import runs

def simulation(rate, tag="MARK"):
    def simulate(run):
        held = (run % 10) < round(10 * rate)
        return f"Oscar says hello in run {run}. " + (f"{tag}-YES" if held else "He says nothing more.")
    return simulate

def scored(scores):
    def simulate(run):
        return f"Run {run}: SCORE-{scores[run % len(scores)]}"
    return simulate
"""


def script(judge: ScriptedJudge) -> None:
    judge.on("Oscar is kind", verdict(False, justification="He is curt."))
    judge.default = verdict(False, justification="No price was stated in this run.")
    judge.on("MARK-YES", verdict(True, justification="He states the price."))
    judge.on("CTRL-YES", verdict(True, justification="He states the price."))
    for score in range(10):
        judge.on(f"SCORE-{score}", verdict(score, justification=f"Scripted score {score}."))


@pytest.fixture
def project(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, inner_run: list[str]
) -> list[str]:
    script(judge_server)
    pytester.makepyfile(sims=SIMULATIONS)
    return inner_run


def test_a_high_rate_passes_early_and_lists_its_figures_under_rA(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, project: list[str]
) -> None:
    pytester.makepyfile(
        """
        from sims import simulation, runs
        def test_states_price(assert_proposition):
            v = assert_proposition(runs(simulation(1.0), max_runs=60), "Oscar states the price.", at_least=0.6)
            assert v.value is True
        """
    )
    result = pytester.runpytest(*project, "-rA")
    result.assert_outcomes(passed=1)
    # Early stopping: every run held, so the decision came long before max_runs.
    (line,) = [line for line in result.outlines if "figures:" in line]
    made = int(line.split(" of ")[0].split()[-1])
    assert 0 < made <= len(judge_server.requests) <= made + 2 < 20
    result.stdout.fnmatch_lines(
        [
            "*proposition over runs*",
            "PASSED over runs: Oscar states the price.",
            "*rule: the claim holds in at least 0.6 of runs (confidence 95%, max_runs 60)",
            f"*figures: {made} of {made} runs held; rate 1.00, 90% interval [[]0.*, 1.00[]]",
            "*decided by: after * runs*above the bar*anytime-valid*",
        ]
    )


def test_a_low_rate_fails_with_figures_and_the_runs_against_it(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, project: list[str]
) -> None:
    pytester.makepyfile(
        """
        from sims import simulation, runs
        def test_states_price(assert_proposition):
            assert_proposition(runs(simulation(0.3), max_runs=60), "Oscar states the price.", at_least=0.8)
        """
    )
    result = pytester.runpytest(*project)
    result.assert_outcomes(failed=1)
    (line,) = [line for line in result.outlines if line.startswith("E   ")][:1]
    made = int(line.split(" runs held")[0].split(" of ")[-1])
    # Early stopping: far fewer than max_runs, and at most two runs judged past the decision.
    assert made <= len(judge_server.requests) <= made + 2 < 60
    held = sum(1 for run in range(made) if run % 10 < 3)
    result.stdout.fnmatch_lines(
        [
            f"E   *PropositionFailed: claim 'Oscar states the price.' over runs failed: the claim "
            f"holds in at least 0.8 of runs; {held} of {made} runs held; rate *, 90% interval*",
            "FAILED over runs: Oscar states the price.",
            "*decided by: after * runs the evidence that the true value is below the bar*",
            "*runs against the claim (*; the first 3):",
            "*run 3: False: No price was stated in this run.",
            "*run 4: False: No price was stated in this run.",
            "*run 5: False: No price was stated in this run.",
        ]
    )


def test_at_most_passes_for_rare_behaviour_and_fails_for_common(
    pytester: pytest.Pytester, project: list[str]
) -> None:
    pytester.makepyfile(
        """
        from sims import simulation, runs
        def test_rare(assert_proposition):
            assert_proposition(runs(simulation(0.0), max_runs=60), "Oscar insults someone.", at_most=0.4)
        def test_common(assert_proposition):
            assert_proposition(runs(simulation(0.9), max_runs=60), "Oscar insults someone.", at_most=0.4)
        """
    )
    result = pytester.runpytest(*project)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        ["*over runs failed: the claim holds in at most 0.4 of runs*", "*test_common*"]
    )


def test_mean_score_passes_above_the_bar_and_fails_below(
    pytester: pytest.Pytester, project: list[str]
) -> None:
    pytester.makepyfile(
        """
        from sims import scored, runs
        def test_high(min_score):
            min_score(runs(scored([8, 9, 8, 7]), max_runs=60), "Oscar is polite.", 5)
        def test_low(assert_proposition):
            assert_proposition(runs(scored([2, 3, 1, 4]), max_runs=60), "Oscar is polite.", min_score=6)
        def test_share_scoring_at_least_the_bar(min_score):
            # With at_least, a run holds when it scores at least the bar: 3 runs in 4 here.
            v = min_score(runs(scored([8, 2, 9, 7]), max_runs=60), "Oscar is polite.", 7, at_least=0.4)
            assert v.kind == "check" and v.value is True
        """
    )
    result = pytester.runpytest(*project, "-rA")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*rule: the claim scores at least 7 in at least 0.4 of runs*"])
    result.stdout.fnmatch_lines(
        [
            # (Issue 42: "N of N runs held" before, which a mean score does not read.)
            "*over runs failed: the mean score is at least 6; mean score 2.29/9 over * runs, "
            "90% interval*",
            "*PASSED over runs: Oscar is polite.",
            "*rule: the mean score is at least 5*",
            "*mean score 8.*/9 over * runs, 90% interval*",
            "*betting confidence sequence*",
        ]
    )


def test_better_than_passes_when_the_new_runs_do_better(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, project: list[str]
) -> None:
    pytester.makepyfile(
        """
        from sims import simulation, scored, runs
        def test_rates(assert_proposition):
            assert_proposition(
                runs(simulation(1.0), max_runs=60), "Oscar states the price.",
                better_than=runs(simulation(0.2, tag="CTRL"), max_runs=60),
            )
        def test_scores(min_score):
            min_score(
                runs(scored([8, 9]), max_runs=60), "Oscar is polite.",
                better_than=runs(scored([3, 4]), max_runs=60), margin=2,
            )
        """
    )
    result = pytester.runpytest(*project, "-rA")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "*rule: the rate is higher than the control's*",
            "*pairs of runs; rate 1.00 vs control 0.*, difference in*",
            "*rule: the mean score is higher than the control's by more than 2 points*",
            "*mean score 8.* vs control 3.*",
        ]
    )


def test_better_than_fails_when_the_new_runs_do_worse_or_not_by_the_margin(
    pytester: pytest.Pytester, project: list[str]
) -> None:
    pytester.makepyfile(
        """
        from sims import simulation, runs
        def test_worse(assert_proposition):
            assert_proposition(
                runs(simulation(0.1), max_runs=60), "Oscar states the price.",
                better_than=runs(simulation(0.9, tag="CTRL"), max_runs=60),
            )
        def test_not_by_margin(assert_proposition):
            assert_proposition(
                runs(simulation(0.6), max_runs=80), "Oscar states the price.",
                better_than=runs(simulation(0.5, tag="CTRL"), max_runs=80), margin=0.6,
            )
        """
    )
    result = pytester.runpytest(*project)
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["*over runs failed: the rate is higher than the control's;*"])
    result.stdout.fnmatch_lines(
        ["*over runs failed: the rate is higher than the control's by more than 0.6;*"]
    )


def test_a_rate_at_the_bar_is_inconclusive_and_says_what_would_decide_it(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, project: list[str]
) -> None:
    pytester.makepyfile(
        """
        from sims import simulation, runs
        def test_undecided(assert_proposition):
            assert_proposition(runs(simulation(0.8), max_runs=20), "Oscar states the price.", at_least=0.7)
        """
    )
    result = pytester.runpytest(*project)
    result.assert_outcomes(failed=1)
    assert len(judge_server.requests) == 20  # every run, and no more
    result.stdout.fnmatch_lines(
        [
            "*over runs is inconclusive: the claim holds in at least 0.7 of runs; 16 of 20 runs held*",
            "INCONCLUSIVE over runs: Oscar states the price.",
            "*decided by: undecided after 20 runs*inconclusive counts as a failure*",
            "*to decide it: *runs if the rest look like these*, or a bar outside the interval*",
        ]
    )


def test_every_run_fails_at_the_first_run_that_does_not_hold(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, project: list[str]
) -> None:
    pytester.makepyfile(
        """
        from sims import simulation, runs
        def test_all(assert_proposition):
            assert_proposition(runs(simulation(1.0), max_runs=5), "Oscar states the price.", every_run=True)
        def test_not_all(assert_proposition):
            assert_proposition(runs(simulation(0.7), max_runs=30), "Oscar states the price.", every_run=True)
        """
    )
    result = pytester.runpytest(*project, "-p", "no:randomly")
    result.assert_outcomes(passed=1, failed=1)
    # 5 runs for the first test; the second stops at run 7 (runs 0..6 hold) with at most one
    # run judged ahead of the decision.
    assert 5 + 8 <= len(judge_server.requests) <= 5 + 9
    result.stdout.fnmatch_lines(["*decided by: run 7 did not hold (every run must)*"])
    # No statistics, so neither a confidence nor an interval (issue 42).
    result.stdout.fnmatch_lines(
        [
            "*over runs failed: the claim holds in every run; 7 of 8 runs held",
            "*rule: the claim holds in every run (max_runs 30)",
            "*figures: 7 of 8 runs held",
        ]
    )
    assert "interval" not in result.stdout.str()


def test_soft_claims_batches_and_markers_take_runs(
    pytester: pytest.Pytester, project: list[str]
) -> None:
    pytester.makepyfile(
        """
        import pytest
        from sims import simulation, runs

        @pytest.fixture
        def sim_runs():
            return runs(simulation(0.9), max_runs=60)

        def test_soft(expect_proposition, sim_runs):
            expect_proposition(sim_runs, "Oscar states the price.", at_least=0.95)
            expect_proposition(sim_runs, "Oscar states the price.", at_least=0.4)

        def test_batch(assert_propositions, sim_runs):
            assert_propositions(sim_runs, ["Oscar states the price.", "Oscar is kind."], at_least=0.3)

        @pytest.mark.proposition("Oscar states the price.", target="sim_runs", at_least=0.4)
        def test_marker(sim_runs):
            pass
        """
    )
    result = pytester.runpytest(*project)
    # The soft claim with a bar of 0.95 fails; the batch fails on "Oscar is kind." (never held).
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(["*1 of 2 claims checked after the test failed*"])


def test_runs_are_cached_a_rerun_asks_nothing_and_replay_decides_the_same(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, project: list[str], tmp_path: Path
) -> None:
    pytester.makepyfile(
        """
        from sims import simulation, runs
        def test_states_price(assert_proposition):
            assert_proposition(runs(simulation(0.9), max_runs=60), "Oscar states the price.", at_least=0.5)
        """
    )
    cached = [a for a in project if a != "--prop-cache=off"] + [f"--prop-cache-dir={tmp_path}"]
    first = pytester.runpytest(*cached, "-rA")
    first.assert_outcomes(passed=1)
    asked = len(judge_server.requests)
    assert asked > 0
    second = pytester.runpytest(*cached, "-rA")
    second.assert_outcomes(passed=1)
    replay = pytester.runpytest(*cached, "-rA", "--prop-cache=replay")
    replay.assert_outcomes(passed=1)
    assert len(judge_server.requests) == asked  # the reruns asked the judge nothing
    figures = [line for line in first.outlines if "figures:" in line]
    assert figures and figures == [line for line in second.outlines if "figures:" in line]
    assert figures == [line for line in replay.outlines if "figures:" in line]
    second.stdout.fnmatch_lines(["*every verdict (*) came from the cache*"])


def test_the_runs_judged_past_the_decision_are_the_same_whatever_the_timing(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, project: list[str], tmp_path: Path
) -> None:
    # A slow judge on one worker: when the decision comes, the runs queued behind it have not
    # started. They are finished anyway (window 2 x parallel = 4: the 3 runs past the decision),
    # so the rerun, whose cached runs race ahead of any judge, starts none the first did not.
    judge_server.default = delay(0.3, verdict(False, justification="No price was stated."))
    judge_server.on("MARK-YES", delay(0.3, verdict(True, justification="He states the price.")))
    pytester.makepyfile(
        """
        from sims import simulation, runs
        def test_states_price(assert_proposition):
            assert_proposition(
                runs(simulation(0.9), max_runs=60, parallel=2), "Oscar states the price.",
                at_least=0.5,
            )
        """
    )
    cached = [a for a in project if a != "--prop-cache=off"]
    cached += [f"--prop-cache-dir={tmp_path}", "--prop-concurrency=1", "--prop-report=r.json"]
    first = pytester.runpytest(*cached)
    first.assert_outcomes(passed=1)
    made = json.loads((pytester.path / "r.json").read_text())["verdicts"][0]["runs"]["runs_made"]
    assert made < 60
    judged = sorted({int(r.text.split("in run ")[1].split(".")[0]) for r in judge_server.requests})
    assert judged == list(range(made + 3))
    second = pytester.runpytest(*cached)
    second.assert_outcomes(passed=1)
    assert len(judge_server.requests) == made + 3  # the rerun asked the judge nothing


def test_replay_without_the_verdicts_is_a_judge_error_not_a_decision(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, project: list[str], tmp_path: Path
) -> None:
    pytester.makepyfile(
        """
        from sims import simulation, runs
        def test_states_price(assert_proposition):
            assert_proposition(runs(simulation(0.9), max_runs=60), "Oscar states the price.", at_least=0.5)
        """
    )
    cached = [a for a in project if a != "--prop-cache=off"] + [f"--prop-cache-dir={tmp_path}"]
    result = pytester.runpytest(*cached, "--prop-cache=replay")
    assert_counts(result, judge_errors=1)
    result.stdout.fnmatch_lines(["*VerdictMissing*"])
    assert judge_server.requests == []


def test_reports_json_html_and_junit_show_each_run(
    pytester: pytest.Pytester, project: list[str]
) -> None:
    pytester.makepyfile(
        """
        from sims import simulation, runs
        def test_states_price(assert_proposition):
            assert_proposition(runs(simulation(0.3), max_runs=40), "Oscar states the price.", at_least=0.8)
        """
    )
    result = pytester.runpytest(
        *project, "--prop-report=report.json", "--prop-html=report.html", "--junitxml=junit.xml"
    )
    result.assert_outcomes(failed=1)
    report = json.loads(Path(pytester.path, "report.json").read_text())
    (record,) = report["verdicts"]
    runs = record["runs"]
    assert runs["decision"] == "fail"
    assert runs["runs_made"] == len(runs["runs"]) > 0
    assert runs["runs_held"] == sum(1 for run in runs["runs"] if run["held"])
    assert [run["run"] for run in runs["runs"]] == list(range(runs["runs_made"]))
    assert runs["runs"][3]["verdict"]["value"] is False
    assert runs["runs"][0]["verdict"]["justification"] == "He states the price."
    assert runs["lower"] <= runs["estimate"] <= runs["upper"] < 0.8
    html = rendered(Path(pytester.path, "report.html").read_text())
    assert html.count('<tr class="run"') == runs["runs_made"]
    assert "No price was stated in this run." in html
    root = ET.parse(Path(pytester.path, "junit.xml")).getroot()
    properties = {p.attrib["name"]: p.attrib["value"] for p in root.iter("property")}
    assert properties["proposition[1].runs.decision"] == "fail"
    assert properties["proposition[1].runs.made"] == str(runs["runs_made"])
    assert properties["proposition[1].runs.held"] == str(runs["runs_held"])
    assert float(properties["proposition[1].runs.rate"]) == pytest.approx(runs["estimate"])
    assert float(properties["proposition[1].runs.upper"]) < 0.8


def test_parallel_simulations_reach_the_same_decision(
    pytester: pytest.Pytester, project: list[str]
) -> None:
    pytester.makepyfile(
        """
        import threading
        from sims import simulation, runs
        names = set()
        def test_parallel(proposition_judge):
            from pytest_propositions import check_over_runs
            base = simulation(0.3)
            def simulate(run):
                names.add(threading.current_thread().name)
                return base(run)
            one = check_over_runs(runs(base, max_runs=60), "Oscar states the price.", at_least=0.8)
            many = check_over_runs(runs(simulate, max_runs=60, parallel=3), "Oscar states the price.", at_least=0.8)
            assert (one.decision, one.runs_made, one.runs_held) == (many.decision, many.runs_made, many.runs_held)
            assert one.decision == "fail" and not one.passed
            assert any(name.startswith("prop-runs-sim") for name in names)
        """
    )
    pytester.runpytest(*project).assert_outcomes(passed=1)


def test_the_budget_stops_the_runs_with_a_clear_message(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, project: list[str]
) -> None:
    # gpt-4o-mini is priced in litellm's bundled price map, so live verdicts have a cost.
    judge_server.models.append("gpt-4o-mini")
    pytester.makepyfile(
        """
        from sims import simulation, runs
        def test_states_price(assert_proposition):
            assert_proposition(runs(simulation(0.9), max_runs=60), "Oscar states the price.", at_least=0.5)
        """
    )
    args = [a for a in project if not a.startswith("--prop-model")]
    result = pytester.runpytest(
        *args, "--prop-model=openai/gpt-4o-mini", "--prop-max-cost=0.0000001"
    )
    assert_counts(result, judge_errors=1)
    result.stdout.fnmatch_lines(
        [
            "*BudgetExceeded: claim 'Oscar states the price.' over runs stopped after * runs, undecided*--prop-max-cost*"
        ]
    )
    # Runs judged at once (two, by default) may both finish before the budget is checked.
    assert len(judge_server.requests) <= 3


def test_confidence_from_the_command_line_and_the_claim(
    pytester: pytest.Pytester, project: list[str]
) -> None:
    pytester.makepyfile(
        """
        from sims import simulation, runs
        def test_cli(assert_proposition):
            assert_proposition(runs(simulation(1.0), max_runs=60), "Oscar states the price.", at_least=0.5)
        def test_own(assert_proposition):
            assert_proposition(runs(simulation(1.0), max_runs=60), "Oscar states the price.", at_least=0.5, confidence=0.99)
        """
    )
    result = pytester.runpytest(*project, "--prop-confidence=0.8", "-rA")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*(confidence 80%, max_runs 60)*"])
    result.stdout.fnmatch_lines(["*(confidence 99%, max_runs 60)*"])
    bad = pytester.runpytest(*project, "--prop-confidence=1")
    bad.stderr.fnmatch_lines(["*--prop-confidence*0.5*below 1*"])


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            "assert_proposition(world, 'c', at_least=0.8)",
            "*at_least= apply to claims over many runs*",
        ),
        ("assert_proposition(runs(sim, max_runs=5), 'c')", "*needs its rule: at_least=p*"),
        (
            "assert_proposition(runs(sim, max_runs=5), 'c', at_least=1)",
            "*strictly between 0 and 1*every_run=True*",
        ),
        (
            "assert_proposition(runs(sim, max_runs=5), 'c', at_least=True)",
            "*at_least must be a number*",
        ),
        (
            "assert_proposition(runs(sim, max_runs=5), 'c', at_least=0.5, at_most=0.9)",
            "*give one of*",
        ),
        (
            "assert_proposition(runs(sim, max_runs=5), 'c', margin=0.1, at_least=0.5)",
            "*margin= goes with better_than*",
        ),
        (
            "assert_proposition(runs(sim, max_runs=5), 'c', better_than=sim)",
            "*better_than must be the control's runs*",
        ),
        (
            "assert_proposition(runs(sim, max_runs=5), 'c', every_run=False)",
            "*every_run must be True*",
        ),
        (
            "assert_proposition(runs(sim, max_runs=5), 'c', at_least=0.5, confidence=95)",
            "*confidence must be at least 0.5*",
        ),
        ("runs(sim, max_runs=0)", "*max_runs must be a whole number of at least 1*"),
        ("runs(sim, max_runs=3, min_runs=4)", "*min_runs (4) is more than max_runs (3)*"),
        ("runs('sim', max_runs=3)", "*simulate must be a function*"),
        (
            "assert_proposition(runs(lambda r: 42, max_runs=20), 'c', at_least=0.5)",
            "*simulate(0) returned something that is not a target*",
        ),
        (
            "expect_proposition(runs(sim, max_runs=5), 'c', at_least=2)",
            "*expect_proposition*strictly between 0 and 1*",
        ),
        (
            "min_score(runs(sim, max_runs=5), 'c', 7, better_than=runs(sim, max_runs=5))",
            "*give no threshold with it*",
        ),
    ],
)
def test_bad_input_is_a_clear_error_at_the_call_site(
    pytester: pytest.Pytester,
    judge_server: ScriptedJudge,
    project: list[str],
    call: str,
    message: str,
) -> None:
    pytester.makepyfile(
        f"""
        from sims import simulation, runs
        sim = simulation(1.0)
        def test_bad(world, assert_proposition, expect_proposition, min_score):
            {call}
        """
    )
    result = pytester.runpytest(*project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([message, "*.py:4: *Error"])
    assert judge_server.requests == []


@pytest.mark.parametrize(
    "call",
    [
        "assert_proposition(runs(sim, max_runs=4), 'Oscar states the price.', holds=False)",
        "assert_proposition(runs(sim, max_runs=4), 'Oscar is polite.', max_score=3)",
        "expect_proposition(runs(sim, max_runs=4), 'Oscar states the price.', holds=False)",
    ],
    ids=["assert-holds-false", "max-score", "soft-holds-false"],
)
def test_a_claim_over_runs_that_must_not_hold_is_refused_for_at_most(
    pytester: pytest.Pytester, inner_run: list[str], judge_server: ScriptedJudge, call: str
) -> None:
    fixture = call.split("(", 1)[0]
    pytester.makepyfile(
        f"""
        import pytest
        from pytest_propositions import runs

        def sim(run):
            return "Oscar acts: [TALK] It costs 5 euros."

        def test_it({fixture}):
            with pytest.raises(TypeError, match="at_most=q"):
                {call}
        """
    )
    pytester.runpytest(*inner_run).assert_outcomes(passed=1)
    assert judge_server.requests == []


def script_referee(judge: ScriptedJudge) -> None:
    """Two models on one server: the main judge upholds every run, the referee only the runs
    that carry the marker (the truth, a rate of 0.3)."""
    judge.models.append("referee-model")

    def referee(request: Any) -> bool:
        return request.model == "referee-model"

    judge.on(
        lambda r: referee(r) and "MARK-YES" in r.text,
        verdict(True, justification="He states the price."),
    )
    judge.on(referee, verdict(False, justification="No price was stated in this run."))
    judge.on(lambda r: not referee(r), verdict(True, justification="Looks fine."))


def test_a_referee_decides_on_its_own_verdicts_whatever_the_main_judge_upholds(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, inner_run: list[str], tmp_path: Path
) -> None:
    judge_server.reset()
    script_referee(judge_server)
    pytester.makepyfile(sims=SIMULATIONS)
    pytester.makepyfile(
        """
        from sims import simulation, runs
        def test_main_only(assert_proposition):
            assert_proposition(runs(simulation(0.3), max_runs=60), "Oscar states the price.", at_least=0.5)
        def test_refereed(assert_proposition):
            assert_proposition(
                runs(simulation(0.3), max_runs=200), "Oscar states the price.", at_least=0.5,
                referee="openai/referee-model",
            )
        """
    )
    cached = [a for a in inner_run if a != "--prop-cache=off"] + [f"--prop-cache-dir={tmp_path}"]
    # The referee was calibrated (the main judge was not): the refereed claim shows its error.
    from pytest_propositions.calibration import record_key, save_record
    from pytest_propositions.judging.prompts import PROMPT_VERSION

    referee_calibration = {
        "model": "openai/referee-model",
        "items": 40,
        "balanced_accuracy": 0.95,
        "false_pass_rate": 0.05,
        "false_fail_rate": 0.05,
        "positives": 20,
        "negatives": 20,
        "false_passes": 1,
        "false_fails": 1,
        "recorded_at": "2026-11-20T10:00:00+00:00",
    }
    save_record(tmp_path, record_key("openai/referee-model", PROMPT_VERSION), referee_calibration)
    reports = ["--prop-html=report.html", "--junitxml=junit.xml", "--prop-report=report.json"]
    first = pytester.runpytest(*cached, "-rA", *reports)
    first.assert_outcomes(passed=1, failed=1)
    first.stdout.fnmatch_lines(
        [
            "*FAILED over runs: Oscar states the price.*",
            "*figures: * runs held for the main judge; referee openai/referee-model judged * "
            "(agreeing on *%); the referee's rate *, 90% interval*",
            "*the referee's true value is below the bar*",
            "  decision about: the referee openai/referee-model's verdicts (the main judge "
            "openai/judge-model's, corrected on the runs the referee judged)",
            "  judge's measured error: false pass 1/20 = 5.0% (≤ 21.6%), false fail 1/20*",
        ]
    )
    first.stdout.fnmatch_lines(
        [
            "*PASSED over runs: Oscar states the price.*",
            "  decision about: the main judge openai/judge-model's verdicts (no referee: its "
            "errors are not accounted for)",
        ]
    )
    first.stdout.fnmatch_lines(
        ["propositions: judge openai/referee-model calibrated: false pass ≤ 21.6%*"]
    )
    report = json.loads((pytester.path / "report.json").read_text())
    by_test = {record["test_id"].split("::")[1]: record for record in report["verdicts"]}
    refereed = by_test["test_refereed"]["runs"]
    assert refereed["decision_about"] == "referee"
    assert by_test["test_main_only"]["runs"]["decision_about"] == "main judge"
    assert by_test["test_refereed"]["judge_calibration"] == "openai/referee-model"
    assert "judge_calibration" not in by_test["test_main_only"]
    drawn = [run for run in refereed["runs"] if "referee" in run]
    assert 0 < len(drawn) < len(refereed["runs"])
    # The HTML page: whose verdicts decided, and the referee's verdict beside each drawn run.
    html = rendered((pytester.path / "report.html").read_text())
    assert html.count("Decision about: the referee openai/referee-model") == 1
    assert html.count("Decision about: the main judge openai/judge-model") == 1
    assert html.count("<th>referee openai/referee-model</th>") == 1
    assert html.count('<td class="referee">') == len(refereed["runs"])
    assert html.count('<td class="referee">not drawn</td>') == len(refereed["runs"]) - len(drawn)
    # JUnit: the same, as properties of the refereed test case.
    root = ET.parse(pytester.path / "junit.xml").getroot()
    cases = {
        case.attrib["name"]: {p.attrib["name"]: p.attrib["value"] for p in case.iter("property")}
        for case in root.iter("testcase")
    }
    junit = cases["test_refereed"]
    assert junit["proposition[1].runs.decision_about"].startswith("the referee openai/referee")
    assert junit["proposition[1].runs.referee"] == "openai/referee-model"
    assert junit["proposition[1].runs.referee_runs"] == str(len(drawn))
    listed = junit["proposition[1].runs.referee_verdicts"].split("; ")
    assert len(listed) == len(drawn)
    assert listed[0].startswith(f"run {drawn[0]['run']}: {drawn[0]['referee']['value']} (")
    assert cases["test_main_only"]["proposition[1].runs.decision_about"].startswith(
        "the main judge openai/judge-model's verdicts"
    )
    assert not [name for name in cases["test_main_only"] if "runs.referee" in name]
    # The main judge upholds every run, so the share sent to the referee rises, and the run
    # says the referee alone would have been cheaper.
    first.stdout.fnmatch_lines(["*RefereeWarning: *agreed with the referee*alone would cost*"])
    models = [request.model for request in judge_server.requests]
    main, referee = models.count("judge-model"), models.count("referee-model")
    assert 0 < referee <= main
    second = pytester.runpytest(*cached, "-rA")
    second.assert_outcomes(passed=1, failed=1)
    assert len(judge_server.requests) == main + referee  # the rerun asked the judge nothing
    assert [line for line in first.outlines if "figures:" in line] == [
        line for line in second.outlines if "figures:" in line
    ]


def test_a_referee_where_it_does_not_apply_or_a_claim_that_cannot_pass_is_refused(
    pytester: pytest.Pytester, project: list[str], judge_server: ScriptedJudge
) -> None:
    pytester.makepyfile(
        """
        import pytest
        from sims import simulation, scored, runs
        def test_every(assert_proposition):
            with pytest.raises(TypeError, match="a referee decides at_least="):
                assert_proposition(runs(simulation(1.0), max_runs=5), "c", every_run=True, referee="m")
        def test_too_few(assert_proposition):
            with pytest.raises(ValueError, match="cannot pass within max_runs=40.*max_runs=74 or more"):
                assert_proposition(runs(simulation(0.0), max_runs=40), "c", at_most=0.05)
        def test_too_few_at_99(assert_proposition):
            with pytest.raises(ValueError, match="max_runs=31 or more"):
                assert_proposition(runs(simulation(1.0), max_runs=30), "c", at_least=0.8, confidence=0.99)
        def test_too_few_for_the_referee_draws(assert_proposition):
            # 8 runs would do were each run drawn at chance 1; the draws start at 0.25.
            with pytest.raises(ValueError, match="referee m alike.*takes 9 runs; give max_runs=9 or"):
                assert_proposition(runs(simulation(1.0), max_runs=8), "c", at_least=0.5, referee="m")
        def test_nine(min_score):
            min_score(runs(scored([9]), max_runs=20), "Ana stays in character.", 9)
        def test_nine_fails(min_score):
            min_score(runs(scored([9, 9, 8]), max_runs=20), "Ana stays in character.", 9)
        """
    )
    result = pytester.runpytest(*project, "-rA")
    result.assert_outcomes(passed=5, failed=1)
    result.stdout.fnmatch_lines(["*the mean score is at least 9: every run must score 9*"])


def test_a_referee_for_the_whole_run_from_the_command_line(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, inner_run: list[str]
) -> None:
    judge_server.reset()
    script_referee(judge_server)
    pytester.makepyfile(sims=SIMULATIONS)
    pytester.makepyfile(
        """
        import pytest
        from sims import simulation, runs
        def test_rate(assert_proposition):
            assert_proposition(runs(simulation(0.3), max_runs=200), "Oscar states the price.", at_least=0.5)
        def test_every(assert_proposition):
            # every_run is decided on the main judge's verdicts: the run's referee does not apply.
            assert_proposition(runs(simulation(0.3), max_runs=3), "Oscar states the price.", every_run=True)
        def test_fraction_alone(assert_proposition):
            assert_proposition(
                runs(simulation(0.3), max_runs=200), "Oscar states the price.", at_least=0.5,
                referee_fraction=0.5,
            )
        """
    )
    result = pytester.runpytest(
        *inner_run, "-rA", "--prop-referee-model=openai/referee-model", "-W", "ignore"
    )
    # The rate claims fail on the referee's verdicts (the main judge upholds every run); the
    # every_run claim passes on the main judge's.
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(["*FAILED over runs*", "*referee openai/referee-model judged*"])
    assert sum("referee openai/referee-model judged" in line for line in result.outlines) >= 2
    # Without a referee anywhere, referee_fraction= alone is a usage error.
    refused = pytester.runpytest(*inner_run, "-k", "fraction_alone")
    refused.assert_outcomes(failed=1)
    refused.stdout.fnmatch_lines(["*referee_fraction= goes with a referee*"])


def test_an_ordinary_claim_never_loads_the_runs_machinery(
    pytester: pytest.Pytester, project: list[str]
) -> None:
    # Every claim asks whether it is over runs; a cached suite of ordinary claims should not pay
    # for importing the runs machinery to hear no. A runs(...) target, or a runs keyword, loads it.
    pytester.makepyfile(
        test_loading="""
        import sys
        import pytest

        MACHINERY = ("pytest_propositions.over_runs.target", "pytest_propositions.over_runs.rule")

        def test_ordinary(assert_proposition, expect_proposition):
            assert_proposition("Oscar says hello. MARK-YES", "Oscar states the price.")
            expect_proposition("Oscar says hello. MARK-YES", "Oscar states the price.")
            assert not any(name in sys.modules for name in MACHINERY)

        def test_keyword_on_an_ordinary_target(assert_proposition):
            with pytest.raises(TypeError, match="at_least= apply to claims over many runs"):
                assert_proposition("Oscar says hello.", "Oscar states the price.", at_least=0.5)
            assert all(name in sys.modules for name in MACHINERY)
        """
    )
    result = pytester.runpytest_subprocess(*project, "-p", "no:randomly")
    result.assert_outcomes(passed=2)


def test_a_runs_target_is_known_even_after_its_module_was_dropped() -> None:
    # pytester's inline runs restore sys.modules: a runs(...) target made before must still be
    # a claim over runs, never an ordinary target whose text is judged.
    import importlib
    import sys

    from pytest_propositions.over_runs.keywords import is_runs

    # Imported by name: an earlier inline run may have dropped the module from sys.modules while
    # the package kept it as an attribute, which a from-import would return.
    module = importlib.import_module("pytest_propositions.over_runs.target")
    target = module.runs(lambda run: "text", max_runs=5)
    assert is_runs(target) and not is_runs("text") and not is_runs(module)
    saved = sys.modules.pop(module.__name__)
    try:
        assert is_runs(target)
        assert not is_runs("text")
    finally:
        sys.modules[module.__name__] = saved


# -- the claim's options reach every run -----------------------------------------------------------


def test_a_claim_over_runs_passes_its_timestamps_on_to_every_run(
    judge_server: ScriptedJudge, monkeypatch: pytest.MonkeyPatch
) -> None:
    # timestamps= was accepted for a claim over runs and silently dropped: each run was judged
    # with the run's clock rendering instead of the claim's.
    from pytest_propositions import check_over_runs, runs
    from pytest_propositions.runtime import Runtime
    from pytest_propositions.settings import Settings
    from tests.support.tinytroupe_like import LibraryPerson, LibraryWorld

    script(judge_server)
    monkeypatch.setenv("PROP_API_KEY", "test-key-not-real")
    settings = Settings(
        model="openai/judge-model", api_base=judge_server.base_url, cache="off", retries=0
    )
    runtime = Runtime(settings)

    def simulate(run: int) -> LibraryWorld:
        oscar = LibraryPerson("Oscar")
        world = LibraryWorld("Room", [oscar])
        oscar.listen("Hello")
        world.advance()
        oscar.act("TALK", f"Hi there, run {run}")
        return world

    def sent() -> list[str]:
        return [str(request.messages[1]["content"]) for request in judge_server.requests]

    try:
        check_over_runs(
            runs(simulate, max_runs=2), "Oscar greets.", every_run=True, runtime=runtime
        )
        assert sent() and all("Date and time of events: +0:05:00" in text for text in sent())
        judge_server.clear_requests()
        check_over_runs(
            runs(simulate, max_runs=2),
            "Oscar greets.",
            every_run=True,
            timestamps="none",
            runtime=runtime,
        )
        assert sent() and not any("Date and time of events" in text for text in sent())
    finally:
        runtime.close()


# -- each run a verdict of its own ------------------------------------------------------------------


def test_runs_with_equal_transcripts_each_get_a_verdict_and_a_rerun_asks_nothing_new(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, project: list[str], tmp_path: Path
) -> None:
    # Every run tells the same story: its verdicts must still be separate draws of the judge
    # (one each), neither read from the cache nor shared with a run in flight.
    pytester.makepyfile(
        """
        from pytest_propositions import runs
        def same(run):
            return "Oscar says hello. MARK-YES"
        def test_same(assert_proposition):
            assert_proposition(runs(same, max_runs=4), "Oscar states the price.", every_run=True)
        """
    )
    cached = [a for a in project if a != "--prop-cache=off"] + [f"--prop-cache-dir={tmp_path}"]
    pytester.runpytest(*cached).assert_outcomes(passed=1)
    assert len(judge_server.requests) == 4
    pytester.runpytest(*cached).assert_outcomes(passed=1)
    assert len(judge_server.requests) == 4  # the rerun asked the judge nothing new
    pytester.runpytest(*project).assert_outcomes(passed=1)  # the cache off: nothing shared
    assert len(judge_server.requests) == 8


def test_a_coin_flip_judge_over_two_transcripts_is_not_passed_by_shared_verdicts(
    judge_server: ScriptedJudge, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Two transcripts; the judge upholds either with chance 0.5 on every call, so the true rate
    # is 0.5, under a bar of 0.8. Were a transcript's verdict drawn once and shared by its runs,
    # a quarter of the claims would see every run hold, and pass. Drawn per run, the rule's
    # exact chance of a pass here is 5e-7 (stats.rate_boundaries, 30 runs): at most 1 of 30
    # claims (0.033, within alpha 0.05) may pass. The cache is on, and a rerun asks nothing new.
    import random

    from pytest_propositions import check_over_runs, runs
    from pytest_propositions.runtime import Runtime
    from pytest_propositions.settings import Settings
    from tests.support.judge_server import echo_fn

    monkeypatch.setenv("PROP_API_KEY", "test-key-not-real")
    coin = random.Random(5)
    judge_server.default = echo_fn(lambda request: verdict(coin.random() < 0.5))
    settings = Settings(
        model="openai/judge-model",
        api_base=judge_server.base_url,
        cache="use",
        cache_dir=str(tmp_path),
        retries=0,
    )

    def decide_all() -> list[tuple[str, int]]:
        runtime = Runtime(settings, tmp_path)
        try:
            return [
                (result.decision, result.runs_made)
                for claim in range(30)
                for result in [
                    check_over_runs(
                        runs(
                            lambda run, c=claim: (
                                f"Visit {c}: Oscar says " + ("hello." if run % 2 else "good day.")
                            ),
                            max_runs=30,
                        ),
                        "Oscar greets the customer.",
                        at_least=0.8,
                        runtime=runtime,
                    )
                ]
            ]
        finally:
            runtime.close()

    first = decide_all()
    assert sum(decision == "pass" for decision, _ in first) <= 1
    asked = len(judge_server.requests)
    assert asked >= sum(made for _, made in first)  # a call per run, none shared
    assert decide_all() == first
    assert len(judge_server.requests) == asked


def test_a_run_number_keys_a_sampling_judge_and_not_a_deterministic_one() -> None:
    from pytest_propositions.judging.endpoint import Connection
    from pytest_propositions.judging.judge import Judge, JudgeRequest
    from pytest_propositions.settings import Settings

    judge = Judge(Settings(model="openai/judge-model", api_base="http://127.0.0.1:9/v1"))
    hosted = Connection("openai/judge-model", "openai/judge-model", "http://127.0.0.1:9/v1", "k")
    greedy = Connection(
        "sha256:aaa",
        "openai/local",
        "http://127.0.0.1:9/v1",
        "k",
        sampling={"temperature": 0, "seed": 7},
    )
    message = ({"role": "user", "content": "Oscar says hello."},)

    def key(run: int, connection: Connection) -> str:
        request = JudgeRequest("check", "c", "m", message, run_index=run)
        return judge._key_material(request, connection).key

    # Run 0 keeps the key an ordinary claim has (verdicts recorded before are still found).
    assert (
        "run_index"
        not in judge._key_material(JudgeRequest("check", "c", "m", message), hosted).as_json()
    )
    assert len({key(run, hosted) for run in range(4)}) == 4
    # Greedy decoding with a fixed seed answers equal requests alike: no draw to repeat.
    assert len({key(run, greedy) for run in range(4)}) == 1
