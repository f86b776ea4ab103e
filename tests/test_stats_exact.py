"""Claims over runs decide without scipy or numpy (issue 52): the rate test's integrals in pure
Python (``over_runs/beta.py``) agree with an exact evaluation to within ``EVIDENCE_ERROR``, no
such module is imported, and seeded claims decide exactly as they did with scipy."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_propositions.over_runs import beta, stats
from tests.support import exact_beta

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    ("held", "runs", "bar"),
    [
        (0, 1, 0.5),
        (7, 10, 0.6),
        (18, 20, 0.8),
        (3, 40, 0.05),
        (40, 40, 0.999),
        (0, 74, 0.05),
        (55, 100, 0.5),
        (1, 120, 0.001),
        (90, 150, 0.3),
        (160, 300, 0.5),
        (299, 300, 0.97),
        # The posterior far from the side tested: its mass there is a deep tail.
        (20, 300, 0.9),
        # A bar near 1: the prior's b is about 0.0015, and rounding b + runs first cost 2.4e-11.
        (1000, 1000, 0.9999),
    ],
)
@pytest.mark.parametrize("direction", ["above", "below"])
def test_the_evidence_is_within_its_error_bound_of_an_exact_evaluation(
    held: int, runs: int, bar: float, direction: str
) -> None:
    a, b = stats._prior(bar, direction)  # type: ignore[arg-type]
    exact = exact_beta.log_evidence(held, runs, bar, a, b, above=direction == "above")
    value = stats.rate_log_evidence(held, runs, bar, direction)  # type: ignore[arg-type]
    assert exact_beta.close(value, exact, beta.EVIDENCE_ERROR / 100), (value, exact)


@pytest.mark.parametrize(("x", "a", "b"), [(0.3, 2.5, 40.0), (0.9, 400.5, 3.0), (0.5, 0.7, 0.9)])
@pytest.mark.parametrize("upper", [True, False])
def test_each_integral_is_exact_to_a_few_units_in_the_last_place_of_its_log(
    x: float, a: float, b: float, upper: bool
) -> None:
    exact = exact_beta.log_integral(x, a, b, upper)
    value = beta.log_integral(x, a, b, upper)
    assert exact_beta.close(value, exact, 1e-13 * max(1.0, abs(value))), (value, exact)


def test_claims_over_runs_import_neither_scipy_nor_numpy() -> None:
    # A process where neither can be imported decides every kind of claim over runs, with its
    # figures and advice, and refuses a claim that cannot pass.
    script = """
import importlib.abc, json, sys

class Absent(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("scipy", "numpy"):
            raise ImportError(f"no {name} here")
        return None

sys.meta_path.insert(0, Absent())
from pytest_propositions.over_runs.deciders import decider_for
from pytest_propositions.over_runs.result import RunsResult
from pytest_propositions.over_runs.rule import Rule
from pytest_propositions.over_runs import rule as rules, stats

said = {}
for name, rule in [
    ("rate", Rule("at_least", "check", 0.95, 0.3)),
    ("mean", Rule("mean", "score", 0.95, 6.0)),
    ("referee", Rule("at_least", "check", 0.95, 0.5, referee="r")),
]:
    decider = decider_for(rule, 1, 60, seed="s")
    for run in range(60):
        held = run % 3 != 0
        if name == "referee":
            p = decider.fraction()
            decider.add_refereed(float(held), held, float(held) if run % 2 else None, p)
        elif name == "mean":
            decider.add((5 + run % 3) / 9, True)
        else:
            decider.add(float(held), held)
        if decider.decision:
            break
    result = RunsResult(name, rule, 60)
    decider.finish(result)
    said[name] = [result.decision, result.lower, result.upper, result.advice]
said["least"] = stats.least_runs_to_pass("rate", 0.05, 0.05, "below")
said["loaded"] = sorted(m for m in sys.modules if m.split(".")[0] in ("scipy", "numpy"))
print(json.dumps(said))
"""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout.splitlines()[-1])
    assert said["loaded"] == []
    assert said["least"] == 74
    assert said["rate"][0] == "pass" and said["rate"][1] < 2 / 3 < said["rate"][2]
    assert said["mean"][0] in ("pass", "inconclusive", "fail")
    assert said["mean"][1] < said["mean"][2]
    assert said["referee"][1] < said["referee"][2]


def test_the_advice_on_an_inconclusive_rate_evaluates_few_integrals(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 55 of 100 runs held at a bar of 0.5: about 1,060 runs would decide it. Every count from
    # 101 is looked at; the likelihood-ratio bound rules out most of them with a few logarithms
    # (each count's two sides would otherwise take an integral each: about 1,900).
    from pytest_propositions.over_runs.deciders import decider_for
    from pytest_propositions.over_runs.rule import Rule

    decider = decider_for(Rule("at_least", "check", 0.95, 0.5), min_runs=1, max_runs=100)
    for run in range(100):
        held = run % 2 == 0 or run % 20 == 19
        decider.add(float(held), held)
    assert decider.decision is None and decider.held == 55
    calls = 0
    integral = beta.log_integral

    def counted(x: float, a: float, b: float, upper: bool) -> float:
        nonlocal calls
        calls += 1
        return integral(x, a, b, upper)

    monkeypatch.setattr(beta, "log_integral", counted)
    assert decider.runs_to_decide() == 1061
    assert calls < 600


def test_an_interval_searched_from_its_ends_is_that_of_the_whole_grid() -> None:
    threshold = stats.math.log(1 / 0.05)
    for held, runs in ((0, 3), (8, 10), (55, 100), (100, 100)):
        kept = [
            bar
            for bar in stats._grid()
            if not stats._reaches(held, runs, bar, "above", threshold)
            and not stats._reaches(held, runs, bar, "below", threshold)
        ]
        step = 1 / stats.GRID_STEPS
        expected = (max(0.0, kept[0] - step), min(1.0, kept[-1] + step))
        assert stats.rate_interval(held, runs, 0.05) == expected


def test_seeded_claims_over_runs_decide_as_they_did_with_scipy() -> None:
    pytest.importorskip("scipy")
    from tests.support.runs_simulation import simulate

    outcome = simulate(100, seed=52)
    assert outcome.differences == []
    assert outcome.runs > 2000 and set(outcome.decisions) == {"pass", "fail", "inconclusive"}
    # Every evidence value a decision used was farther from its threshold than the error bound:
    # the decisions are those of the exact values.
    assert outcome.margins.smallest > beta.EVIDENCE_ERROR
