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
from pytest_propositions.over_runs.deciders import decider_for  # noqa: E402
from pytest_propositions.over_runs.rule import Rule  # noqa: E402


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


def runs_to_decide_run_by_run(
    rate: float, start: int, limit: int, bar: float, alpha: float
) -> int | None:
    """The advice's search as it was: ``rate_decision`` at every run count in turn."""
    for total in range(start, limit + 1):
        if stats.rate_decision(round(rate * total), total, bar, alpha):
            return total
    return None


def test_the_runs_to_decide_are_found_in_a_few_evaluations_with_the_same_answers() -> None:
    rng = random.Random(19)
    cases = [(0.55, 100, 0.5, 0.05), (0.16, 12, 0.2, 0.1), (1 / 3, 9, 0.3, 0.01)]
    for _ in range(60):
        runs = rng.randint(1, 12)
        bar = rng.choice([0.05, 0.2, 0.5, 0.7, 0.8, 0.95])
        cases.append((rng.randint(0, runs) / runs, runs, bar, rng.choice([0.01, 0.05, 0.1])))
    found = []
    for rate, runs, bar, alpha in cases:
        start, limit = runs + 1, 20 * runs
        fast = stats.rate_runs_to_decide(rate, start, limit, bar, alpha)
        if runs <= 12:  # the run-by-run search is slow on long ones: the first case is below
            assert fast == runs_to_decide_run_by_run(rate, start, limit, bar, alpha), (
                rate,
                runs,
                bar,
                alpha,
            )
        found.append(fast)
    assert found[0] == 1061  # 55 of 100 at a bar of 0.5: what the run-by-run search gave
    assert None in found and len({f for f in found if f is not None}) > 10


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
    decider = decider_for(Rule("at_least", "check", 0.95, 0.3), min_runs=15, max_runs=40)
    for _ in range(14):
        decider.add(1.0, True)
    assert decider.decision is None  # evident already, but min_runs is 15
    decider.add(1.0, True)
    assert decider.decision == "pass"
    rare = decider_for(Rule("at_most", "check", 0.95, 0.5), min_runs=1, max_runs=40)
    while rare.decision is None:
        rare.add(0.0, False)
    assert rare.decision == "pass"
    every = decider_for(Rule("every_run", "check", 0.95), min_runs=1, max_runs=5)
    every.add(1.0, True)
    every.add(0.0, False)
    assert every.decision == "fail" and "run 1 did not hold" in every.decided_by


# -- a referee -------------------------------------------------------------------------------------


@pytest.mark.parametrize("p", [0.1, 0.25, 0.6, 1.0])
def test_a_refereed_value_is_unbiased_for_the_referee_and_stays_in_its_range(p: float) -> None:
    for main in (0.0, 1 / 3, 1.0):
        for referee in (0.0, 2 / 3, 1.0):
            drawn = stats.RefereeTest(0.5, 0.05).add(main, referee, p)
            undrawn = stats.RefereeTest(0.5, 0.05).add(main, None, p)
            # Drawn with chance p: the average over the draw is the referee's value.
            assert p * drawn + (1 - p) * undrawn == pytest.approx(referee)
            assert 1 - 1 / p - 1e-12 <= drawn <= 1 / p + 1e-12


def refereed_false_passes(
    rate: float, bar: float, main_says: float | None, reps: int, runs: int, seed: int
) -> float:
    """The share of ``reps`` claims passed about a referee whose true rate is ``rate``, with a
    main judge that says ``main_says`` every run (or agrees with the referee on 70%)."""
    rng = random.Random(seed)
    passes = 0
    for _ in range(reps):
        test = stats.RefereeTest(bar, 0.05, floor=0.25)
        for _ in range(runs):
            truth = float(rng.random() < rate)
            main = (
                main_says if main_says is not None else (truth if rng.random() < 0.7 else 1 - truth)
            )
            p = test.fraction()
            test.add(main, truth if rng.random() < p else None, p)
            if test.decide() is not None:
                break
        passes += test.decide() == "above"
    return passes / reps


@pytest.mark.parametrize("main_says", [1.0, None])
@pytest.mark.parametrize("rate", [0.5, 0.45])
def test_a_referee_keeps_the_wrong_pass_rate_whatever_the_main_judge_says(
    main_says: float | None, rate: float
) -> None:
    # The main judge upholds every run (or errs on 30%): the referee's rate at or under the bar
    # is still passed in at most alpha of 1000 claims.
    assert refereed_false_passes(rate, 0.5, main_says, 1000, 120, seed=11) <= 0.05


def test_a_referee_passes_a_good_rate_with_a_share_of_referee_calls() -> None:
    rng = random.Random(5)
    decided, calls, runs_used = 0, 0, 0
    for _ in range(300):
        test = stats.RefereeTest(0.5, 0.05, floor=0.25)
        for _ in range(400):
            truth = float(rng.random() < 0.65)
            main = truth if rng.random() < 0.95 else 1 - truth
            p = test.fraction()
            drawn = rng.random() < p
            calls += drawn
            test.add(main, truth if drawn else None, p)
            if test.decide() is not None:
                break
        decided += test.decide() == "above"
        runs_used += test.count
    assert decided / 300 >= 0.95
    assert calls / runs_used < 0.35  # about the floor: the main judge agrees 95% of the time


def warned_share(kind: str, truth: float, claims: int, seed: int) -> float:
    """The share of ``claims`` refereed claims against a bar of 0.5 that end with a cost ratio
    above 1 (as the warning has it: 10 runs checked or more), the main judge agreeing on 95% of
    runs (a rate flipped; a score 3 points off)."""
    rng = random.Random(seed)
    warned = 0
    for _ in range(claims):
        test = stats.RefereeTest(0.5, 0.05, floor=0.25)
        for _ in range(400):
            if kind == "rate":
                truth_value = float(rng.random() < truth)
                wrong = 1.0 - truth_value
            else:
                score = sum(rng.random() < truth for _ in range(9))
                truth_value, wrong = score / 9, (score + 3 if score <= 6 else score - 3) / 9
            main = truth_value if rng.random() < 0.95 else wrong
            p = test.fraction()
            test.add(main, truth_value if rng.random() < p else None, p)
            if test.decide() is not None:
                break
        warned += test.checked >= 10 and test.cost_ratio() > 1
    return warned / claims


def test_the_referee_warning_fires_where_the_referee_alone_is_cheaper_and_not_elsewhere() -> None:
    # bench/referee.py: mean scores 0.05 above the bar at 95% agreement cost 1.14 times the
    # referee alone (the cost model on spreads alone warned on none of them); rates there cost
    # 0.39 times.
    assert warned_share("mean", 0.55, 40, seed=1) >= 0.8
    assert warned_share("rate", 0.55, 40, seed=2) <= 0.1


def test_referee_draws_are_fixed_by_the_seed_and_the_content_and_uniform() -> None:
    draws = [stats.referee_draw("claim-seed", run, "key") for run in range(4000)]
    assert draws == [stats.referee_draw("claim-seed", run, "key") for run in range(4000)]
    assert draws != [stats.referee_draw("other-seed", run, "key") for run in range(4000)]
    # A fresh simulation (other contents) draws afresh; equal contents in two runs do not tie.
    assert draws != [stats.referee_draw("claim-seed", run, "other key") for run in range(4000)]
    assert len(set(draws)) == len(draws)
    assert 0.48 < sum(draws) / len(draws) < 0.52
    assert 0.23 < sum(d < 0.25 for d in draws) / len(draws) < 0.27


def claim_false_passes(seed: str, fresh: bool, sims: int, rng: random.Random) -> float:
    """One claim's own false-pass rate over ``sims`` simulations: the referee's rate at the bar
    0.5, a main judge biased toward passing (it upholds every run the referee upholds and 30%
    of the others), 150 runs at most. ``fresh``: each simulation's runs have contents of their
    own; else every simulation has the same (the draws are then the claim's alone)."""
    passes = 0
    for sim in range(sims):
        test = stats.RefereeTest(0.5, 0.05, floor=0.25)
        for run in range(150):
            truth = rng.random() < 0.5
            main = truth or rng.random() < 0.3
            p = test.fraction()
            content = f"simulation {sim}" if fresh else ""
            drawn = stats.referee_draw(seed, run, content) < p
            test.add(float(main), float(truth) if drawn else None, p)
            if test.decide() is not None:
                break
        passes += test.decide() == "above"
    return passes / sims


def test_a_claim_meets_fresh_referee_draws_in_each_simulation_so_its_own_error_holds() -> None:
    # The error bound holds on average over the draws. With draws from the claim alone, one
    # claim meets the same draws in every simulation (every CI run): this claim's own false-pass
    # rate is then about 0.1 (bench/referee.py found 4-15% of claims above 0.05). Drawn from
    # each run's content too, a fresh simulation draws afresh and the claim keeps the bound.
    seed = "claim 49"
    assert claim_false_passes(seed, fresh=False, sims=600, rng=random.Random(1)) > 0.07
    assert claim_false_passes(seed, fresh=True, sims=600, rng=random.Random(1)) <= 0.05


def test_the_referee_fraction_never_falls_below_its_floor_and_rises_with_disagreement() -> None:
    assert stats.referee_fraction(0.25, 0, 100, 0.25) == 0.25
    assert stats.referee_fraction(0.1, 0, 0, 0.25) >= 0.1
    assert stats.referee_fraction(0.25, 30, 100, 0.25) == 1.0  # as often wrong as the variance
    assert 0.25 < stats.referee_fraction(0.25, 12, 100, 0.25) < 1.0


def test_the_least_runs_that_could_pass() -> None:
    # The audit's cases: at_most 0.05 at 95% passes from run 74; at_least 0.8 at 99% from 31.
    assert stats.least_runs_to_pass("rate", 0.05, 0.05, "below") == 74
    assert stats.least_runs_to_pass("rate", 0.8, 0.01, "above") == 31
    assert stats.rate_decision(0, 74, 0.05, 0.05) == "below"
    assert stats.rate_decision(0, 73, 0.05, 0.05) is None
    assert stats.least_runs_to_pass("mean", 1.0, 0.05, "above") is None  # a bar at the top


def first_pass_over_every_draw(
    bar: float, direction: str, floor: float, horizon: int
) -> int | None:
    """The fewest runs to a pass of the referee test, over every pattern of draws (a run whose
    chance is 1 is always drawn), both judges giving every run the passing verdict."""
    import copy

    best = 1.0 if direction == "above" else 0.0
    found: int | None = None

    def walk(test: stats.RefereeTest, n: int) -> None:
        nonlocal found
        if n >= horizon or (found is not None and n + 1 >= found):
            return
        p = test.fraction()
        for drawn in (False, True) if p < 1.0 else (True,):
            step = copy.deepcopy(test)
            step.add(best, best if drawn else None, p)
            if step.decide() == direction:
                found = n + 1
            else:
                walk(step, n + 1)

    walk(stats.RefereeTest(bar, 0.05, floor=floor), 0)
    return found


@pytest.mark.parametrize(
    ("bar", "direction", "floor"),
    [(0.5, "above", 0.25), (0.3, "above", 0.1), (0.8, "below", 0.25), (0.5, "below", 0.5)],
)
def test_with_a_referee_the_least_runs_are_those_of_the_best_draws(
    bar: float, direction: str, floor: float
) -> None:
    least = stats.least_runs_to_pass("rate", bar, 0.05, direction, referee=floor)  # type: ignore[arg-type]
    assert least is not None
    assert first_pass_over_every_draw(bar, direction, floor, horizon=least + 1) == least


def test_with_a_referee_at_least_half_in_eight_runs_cannot_pass() -> None:
    # Counted as if every run went to the referee at chance 1 (the widest bets), at_least=0.5
    # looked possible in 8 runs; the claim's draws start at chance 0.25, and no draws allow it.
    assert stats.least_runs_to_pass("rate", 0.5, 0.05, "above", referee=0.25) == 9
    assert first_pass_over_every_draw(0.5, "above", 0.25, horizon=8) is None


def test_the_printed_interval_has_the_confidence_it_says() -> None:
    from pytest_propositions.reports.runs_text import interval_confidence

    assert interval_confidence("at_least", 0.95) == pytest.approx(0.90)
    assert interval_confidence("every_run", 0.95) == 0.95
    # At the bar, the interval of decided claims leaves the true rate out in at most 10%.
    rng = random.Random(3)
    boundaries = stats.rate_boundaries(0.5, 0.05, 100)
    missed = decided = 0
    for _ in range(600):
        held = 0
        for n in range(1, 101):
            held += rng.random() < 0.5
            if boundaries.decide(held, n) is not None:
                decided += 1
                low, high = stats.rate_interval(held, n, 0.05)
                missed += not low <= 0.5 <= high
                break
    assert missed / 600 <= 0.10


def test_the_decider_with_a_referee_decides_at_most_and_mean_scores_on_its_values() -> None:
    rng = random.Random(2)
    rare = decider_for(Rule("at_most", "check", 0.95, 0.2, referee="r"), min_runs=1, max_runs=400)
    while rare.decision is None:
        p = rare.fraction()
        rare.add_refereed(0.0, False, 0.0 if rng.random() < p else None, p)
    assert rare.decision == "pass" and "referee's true value is below" in rare.decided_by
    # The main judge says 8 every run, the referee 2: the referee's mean decides (a fail).
    low = decider_for(Rule("mean", "score", 0.95, 6.0, referee="r"), min_runs=1, max_runs=400)
    while low.decision is None:
        p = low.fraction()
        low.add_refereed(8 / 9, True, 2 / 9 if rng.random() < p else None, p)
    assert low.decision == "fail"
    figures = low.figures()
    estimate, lower, upper = figures.estimate, figures.lower, figures.upper
    assert estimate == pytest.approx(2.0, abs=1.5)
    assert lower <= 2.0 <= upper and upper < 6.0
