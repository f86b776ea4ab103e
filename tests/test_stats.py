"""The statistics of claims over runs, as pure functions: the evidence is what it claims to be
(a closed form equal to its integral, a martingale at the bar), the decisions keep their error
rates (exactly, by dynamic programming over the binomial walk), and the betting rule's too."""

from __future__ import annotations

import math
import random

import pytest

scipy = pytest.importorskip("scipy")

from scipy import integrate  # noqa: E402
from scipy import stats as scipy_stats  # noqa: E402

from pytest_propositions.over_runs import stats  # noqa: E402
from pytest_propositions.over_runs.many_runs import Rule, _Decider  # noqa: E402


@pytest.mark.parametrize(("held", "runs", "bar"), [(0, 5, 0.5), (7, 10, 0.6), (18, 20, 0.8)])
@pytest.mark.parametrize("direction", ["above", "below"])
def test_the_evidence_is_the_mixture_integral(
    held: int, runs: int, bar: float, direction: str
) -> None:
    a, b = stats._prior(bar, direction)  # type: ignore[arg-type]
    lo, hi = (bar, 1.0) if direction == "above" else (0.0, bar)
    mass = integrate.quad(lambda t: scipy_stats.beta.pdf(t, a, b), lo, hi)[0]
    ratio = integrate.quad(
        lambda t: (
            (t / bar) ** held
            * ((1 - t) / (1 - bar)) ** (runs - held)
            * scipy_stats.beta.pdf(t, a, b)
        ),
        lo,
        hi,
    )[0]
    expected = math.log(ratio / mass)
    assert stats.rate_log_evidence(held, runs, bar, direction) == pytest.approx(
        expected, rel=1e-6, abs=1e-9
    )  # type: ignore[arg-type]


@pytest.mark.parametrize("bar", [0.3, 0.8])
def test_the_evidence_is_a_martingale_at_the_bar_and_shrinks_on_the_wrong_side(bar: float) -> None:
    for runs in (1, 5, 20):
        for direction, wrong_side in (("above", bar - 0.1), ("below", bar + 0.1)):

            def expectation(rate: float, runs: int = runs, direction: str = direction) -> float:
                return sum(
                    scipy_stats.binom.pmf(k, runs, rate)
                    * math.exp(stats.rate_log_evidence(k, runs, bar, direction))  # type: ignore[arg-type]
                    for k in range(runs + 1)
                )

            assert expectation(bar) == pytest.approx(1.0, rel=1e-9)
            assert expectation(wrong_side) < 1.0


def crossing(boundaries: stats.RateBoundaries, rate: float) -> tuple[float, float]:
    """Exact P(pass), P(fail) within the horizon, by dynamic programming over the walk."""
    n_max = len(boundaries.above_from)
    alive = {0: 1.0}
    passed = failed = 0.0
    for n in range(1, n_max + 1):
        step: dict[int, float] = {}
        for held, p in alive.items():
            step[held + 1] = step.get(held + 1, 0.0) + p * rate
            step[held] = step.get(held, 0.0) + p * (1 - rate)
        alive = {}
        for held, p in step.items():
            decision = boundaries.decide(held, n)
            if decision == "above":
                passed += p
            elif decision == "below":
                failed += p
            else:
                alive[held] = p
    return passed, failed


@pytest.mark.parametrize("bar", [0.2, 0.5, 0.8])
def test_a_wrong_pass_or_fail_stays_under_alpha_exactly_over_every_look(bar: float) -> None:
    alpha = 0.05
    boundaries = stats.rate_boundaries(bar, alpha, 120)
    passed_at_bar, failed_at_bar = crossing(boundaries, bar)
    assert passed_at_bar <= alpha and failed_at_bar <= alpha
    # Below the bar a pass is wrong, and rarer still; it is decided when far away.
    below, far_below = crossing(boundaries, bar - 0.03), crossing(boundaries, max(bar - 0.3, 0.01))
    assert below[0] <= passed_at_bar and far_below[0] < 1e-3 and far_below[1] > 0.9
    above = crossing(boundaries, min(bar + 0.3, 0.99))
    assert above[0] > 0.9 and above[1] < 1e-3


def test_a_fixed_n_interval_checked_after_every_run_would_not_keep_alpha() -> None:
    # The reason for the anytime-valid rule: a one-sided Clopper-Pearson bound at 95% checked
    # after every run passes a rate just under the bar far more often than 5%.
    bar, rate, alpha, horizon = 0.8, 0.78, 0.05, 100
    alive = {0: 1.0}
    passed = 0.0
    for n in range(1, horizon + 1):
        step: dict[int, float] = {}
        for held, p in alive.items():
            step[held + 1] = step.get(held + 1, 0.0) + p * rate
            step[held] = step.get(held, 0.0) + p * (1 - rate)
        alive = {}
        for held, p in step.items():
            lower = scipy_stats.beta.ppf(alpha, held, n - held + 1) if held else 0.0
            if lower > bar:
                passed += p
            else:
                alive[held] = p
    assert passed > alpha
    sequential = crossing(stats.rate_boundaries(bar, alpha, horizon), rate)[0]
    assert sequential <= alpha


def test_rate_decision_agrees_with_the_boundaries() -> None:
    boundaries = stats.rate_boundaries(0.6, 0.1, 40)
    for runs in range(1, 41):
        for held in range(runs + 1):
            assert stats.rate_decision(held, runs, 0.6, 0.1) == boundaries.decide(held, runs)


def test_the_rate_interval_holds_the_estimate_and_narrows() -> None:
    wide = stats.rate_interval(8, 10, 0.05)
    narrow = stats.rate_interval(80, 100, 0.05)
    assert wide[0] < 0.8 < wide[1] and narrow[0] < 0.8 < narrow[1]
    assert narrow[1] - narrow[0] < wide[1] - wide[0]
    assert stats.rate_interval(0, 0, 0.05) == (0.0, 1.0)


def test_every_run_lower_bound_is_exact() -> None:
    bound = stats.every_run_lower_bound(10, 0.05)
    assert bound**10 == pytest.approx(0.05)


def test_betting_never_decides_on_values_at_the_bar_and_decides_far_from_it() -> None:
    at_bar = stats.BettingTest(0.5, 0.05)
    for _ in range(200):
        at_bar.add(0.5)
    assert at_bar.decide() is None
    high, low = stats.BettingTest(0.5, 0.05), stats.BettingTest(0.5, 0.05)
    for _ in range(30):
        high.add(0.9)
        low.add(0.1)
    assert high.decide() == "above" and low.decide() == "below"
    with pytest.raises(ValueError, match=r"in \[0, 1\]"):
        high.add(1.5)


def test_betting_keeps_its_error_rate_just_under_the_bar() -> None:
    rng = random.Random(7)
    alpha, bar, reps = 0.05, 6 / 9, 2000
    false_passes = 0
    for _ in range(reps):
        test = stats.BettingTest(bar, alpha)
        for _ in range(80):
            # Scores 0..9 with mean 5.8 (under the bar of 6), the hardest side of the bar.
            score = sum(rng.random() < 5.8 / 9 for _ in range(9))
            test.add(score / 9)
            if test.decide() is not None:
                break
        false_passes += test.decide() == "above"
    assert false_passes / reps <= alpha


def test_betting_interval_holds_the_mean() -> None:
    values = [0.7, 0.8, 0.9] * 10
    low, high = stats.betting_interval(values, 0.05)
    assert low < 0.8 < high


def test_paired_values_map_differences_into_the_unit_interval() -> None:
    assert stats.paired_value(1.0, 0.0) == 1.0
    assert stats.paired_value(0.0, 1.0) == 0.0
    assert stats.paired_value(0.5, 0.5) == stats.paired_bar(0.0) == 0.5


def test_the_decider_respects_min_runs_at_most_and_every_run() -> None:
    decider = _Decider(Rule("at_least", "check", 0.95, 0.3), min_runs=15, max_runs=40)
    for _ in range(14):
        decider.add(1.0, True)
    assert decider.decision is None  # evident already, but min_runs is 15
    decider.add(1.0, True)
    assert decider.decision == "pass"
    rare = _Decider(Rule("at_most", "check", 0.95, 0.5), min_runs=1, max_runs=40)
    while rare.decision is None:
        rare.add(0.0, False)
    assert rare.decision == "pass"
    every = _Decider(Rule("every_run", "check", 0.95), min_runs=1, max_runs=5)
    every.add(1.0, True)
    every.add(0.0, False)
    assert every.decision == "fail" and "run 1 did not hold" in every.decided_by


def test_a_missing_scipy_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ImportError, match=r"pytest-propositions\[stats\]"):
        stats.require_scipy()
