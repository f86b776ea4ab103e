"""Claims over many runs, by simulation: are the sequential rules calibrated, and how many runs
do they use against a fixed-n test with the same error rates?

Pure Python plus numpy/scipy (the ``stats`` extra); no judge, no pytest. For each bar and each
true rate on a grid around it, 10,000 simulated claims ``at_least=bar`` are decided by the
plugin's own rule (``stats.rate_boundaries``, the same evidence ``stats.rate_decision`` uses),
one run at a time, up to ``max_runs``. It reports, per true rate:

* pass / fail / inconclusive fractions; a pass below the bar is a false pass (target: at most
  ``1 - confidence`` at every rate below the bar), a fail at or above it a false fail;
* the mean number of runs used.

Then the same for mean scores (``min_score``, the betting rule, ``stats.BettingTest``):
scores drawn as Binomial(9, mean/9), bar 6, false passes below it.

Then, at equal power: the rate rule with room to decide (``max_runs`` 1000) against the exact
fixed-n test with power 0.95 at the same true rate, at level 0.05 and at the level the rule
really had at the bar (equal error), per distance from the bar.

Then the mean-score bet cap: the same claims with the cap at 0.5 and at 0.75 of capital
(false passes at and under the bar, runs used above it), vectorised like ``bench/referee.py``.

    python bench/runs_statistics.py [--reps 10000] [--max-runs 100 300] [--seed 1]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402
from scipy import stats as scipy_stats  # noqa: E402

from pytest_propositions.over_runs import stats  # noqa: E402

CONFIDENCE = 0.95
OFFSETS = (-0.30, -0.15, -0.10, -0.05, -0.02, 0.0, 0.02, 0.05, 0.10, 0.15, 0.30)


def decide_many(
    boundaries: stats.RateBoundaries, rate: float, reps: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """(decision per rep: 1 pass, -1 fail, 0 inconclusive; runs used per rep)."""
    max_runs = len(boundaries.above_from)
    held = np.cumsum(rng.random((reps, max_runs)) < rate, axis=1)
    big = max_runs + 1
    above = np.array([big if a is None else a for a in boundaries.above_from])
    below = np.array([-1 if b is None else b for b in boundaries.below_to])
    crossed_up = held >= above
    crossed_down = held <= below
    first_up = np.where(crossed_up.any(axis=1), crossed_up.argmax(axis=1), big)
    first_down = np.where(crossed_down.any(axis=1), crossed_down.argmax(axis=1), big)
    decision = np.where(first_up < first_down, 1, np.where(first_down < first_up, -1, 0))
    used = np.minimum(np.minimum(first_up, first_down) + 1, max_runs)
    return decision, used


def fixed_n(bar: float, alpha: float, rate: float, power: float) -> int | None:
    """The smallest n whose exact one-sided binomial test at level alpha decides correctly with
    probability at least ``power`` at ``rate`` (pass above the bar, fail below)."""
    for n in range(1, 5000):
        if rate > bar:
            # pass when held >= c, with P(held >= c | bar) <= alpha
            c = int(scipy_stats.binom.isf(alpha, n, bar)) + 1
            while c > 0 and scipy_stats.binom.sf(c - 2, n, bar) <= alpha:
                c -= 1
            correct = scipy_stats.binom.sf(c - 1, n, rate)
        else:
            c = int(scipy_stats.binom.ppf(alpha, n, bar))
            while c >= 0 and scipy_stats.binom.cdf(c, n, bar) > alpha:
                c -= 1
            correct = scipy_stats.binom.cdf(c, n, rate) if c >= 0 else 0.0
        if correct >= power:
            return n
    return None


def rates(reps: int, max_runs_list: list[int], seed: int) -> None:
    alpha = 1 - CONFIDENCE
    print(f"== rates: at_least=bar, confidence {CONFIDENCE}, {reps} decisions per true rate")
    for max_runs in max_runs_list:
        for bar in (0.5, 0.8):
            rng = np.random.default_rng(seed)
            started = time.perf_counter()
            boundaries = stats.rate_boundaries(bar, alpha, max_runs)
            print(
                f"\n-- bar {bar}, max_runs {max_runs} (boundaries in "
                f"{time.perf_counter() - started:.1f}s)"
            )
            print(f"{'true':>5} {'pass':>7} {'fail':>7} {'incon.':>7} {'runs':>6}  note")
            worst_false_pass = 0.0
            for offset in OFFSETS:
                rate = round(bar + offset, 4)
                if not 0.0 <= rate <= 1.0:
                    continue
                decision, used = decide_many(boundaries, rate, reps, rng)
                passed = float(np.mean(decision == 1))
                failed = float(np.mean(decision == -1))
                inconclusive = float(np.mean(decision == 0))
                note = ""
                if rate < bar:
                    worst_false_pass = max(worst_false_pass, passed)
                    note = "false pass" if passed else ""
                elif failed:
                    note = "false fail"
                print(
                    f"{rate:5.2f} {passed:7.4f} {failed:7.4f} {inconclusive:7.4f} "
                    f"{float(np.mean(used)):6.1f}  {note}"
                )
            verdict = "ok" if worst_false_pass <= alpha else "TOO HIGH"
            print(
                f"worst false-pass rate below the bar: {worst_false_pass:.4f} (<= {alpha:.2f}: {verdict})"
            )


def means(reps: int, seed: int, max_runs: int = 60, bar: float = 6.0) -> None:
    alpha = 1 - CONFIDENCE
    rng = np.random.default_rng(seed)
    print(f"\n== mean scores: min_score {bar:g}, max_runs {max_runs}, {reps} decisions per mean")
    print(f"{'true':>5} {'pass':>7} {'fail':>7} {'incon.':>7} {'runs':>6}  note")
    worst = 0.0
    for offset in (-1.5, -0.5, -0.2, 0.0, 0.5, 1.5):
        mean = bar + offset
        scores = rng.binomial(9, mean / 9, size=(reps, max_runs)) / 9
        counts = {"pass": 0, "fail": 0, "inconclusive": 0}
        used_total = 0
        for row in scores:
            test = stats.BettingTest(bar / 9, alpha)
            outcome = "inconclusive"
            used = 0
            for value in row:
                used += 1
                test.add(float(value))
                direction = test.decide()
                if direction is not None:
                    outcome = "pass" if direction == "above" else "fail"
                    break
            counts[outcome] += 1
            used_total += used
        passed, failed = counts["pass"] / reps, counts["fail"] / reps
        note = ""
        if mean < bar:
            worst = max(worst, passed)
            note = "false pass" if passed else ""
        elif failed:
            note = "false fail"
        print(
            f"{mean:5.2f} {passed:7.4f} {failed:7.4f} {counts['inconclusive'] / reps:7.4f} "
            f"{used_total / reps:6.1f}  {note}"
        )
    print(
        f"worst false-pass rate below the bar: {worst:.4f} (<= {alpha:.2f}: {'ok' if worst <= alpha else 'TOO HIGH'})"
    )


def equal_power(reps: int, seed: int, max_runs: int = 1000) -> None:
    alpha = 1 - CONFIDENCE
    print(
        f"\n== runs used at equal power (0.95): the rate rule (max_runs {max_runs}) against the "
        f"exact fixed-n test, {reps} decisions per true rate"
    )
    print(
        f"{'bar':>4} {'true':>5} {'correct':>7} {'runs':>6} {'p95':>5} {'fixed n':>7} "
        f"{'ratio':>6} {'level':>6} {'fixed n':>7} {'ratio':>6}  (equal error)"
    )
    for bar in (0.5, 0.8):
        rng = np.random.default_rng(seed)
        boundaries = stats.rate_boundaries(bar, alpha, max_runs)
        at_bar, _ = decide_many(boundaries, bar, reps, rng)
        # The rule's real level: how often it passes (or fails) at the bar itself.
        levels = {1: float(np.mean(at_bar == 1)), -1: float(np.mean(at_bar == -1))}
        for offset in (-0.30, -0.15, -0.10, -0.05, 0.05, 0.10, 0.15):
            rate = round(bar + offset, 4)
            if not 0.0 < rate < 1.0:
                continue
            decision, used = decide_many(boundaries, rate, reps, rng)
            good = 1 if rate > bar else -1
            correct = float(np.mean(decision == good))
            n = fixed_n(bar, alpha, rate, 0.95)
            level = max(levels[good], 1e-4)
            n_equal = fixed_n(bar, level, rate, 0.95)
            mean_used = float(np.mean(used))
            note = "" if correct >= 0.95 else "  power under 0.95 within max_runs"
            print(
                f"{bar:4.1f} {rate:5.2f} {correct:7.3f} {mean_used:6.1f} "
                f"{int(np.percentile(used, 95)):5d} {n or '-':>7} "
                f"{(mean_used / n if n else float('nan')):6.2f} {level:6.4f} {n_equal or '-':>7} "
                f"{(mean_used / n_equal if n_equal else float('nan')):6.2f}{note}"
            )


def bet_caps(reps: int, seed: int, max_runs: int = 200, bar: float = 6.0) -> None:
    from bench.referee import betting_many

    alpha = 1 - CONFIDENCE
    print(
        f"\n== the mean-score bet cap: 0.5 against 0.75 of capital, min_score {bar:g}, max_runs "
        f"{max_runs}, {reps} decisions per mean (false pass: under the bar; runs: above it)"
    )
    print(
        f"{'true':>5} {'pass 0.5':>8} {'pass .75':>8} {'runs 0.5':>8} {'runs .75':>8} {'ratio':>6}"
    )
    for mean in (5.5, 5.8, 6.0, 6.5, 7.0, 7.5):
        rng = np.random.default_rng(seed)
        scores = rng.binomial(9, mean / 9, size=(reps, max_runs)) / 9
        half, half_used = betting_many(scores, bar / 9, alpha, 0.5)
        more, more_used = betting_many(scores, bar / 9, alpha, 0.75)
        print(
            f"{mean:5.2f} {float(np.mean(half == 1)):8.4f} {float(np.mean(more == 1)):8.4f} "
            f"{half_used.mean():8.1f} {more_used.mean():8.1f} "
            f"{more_used.mean() / half_used.mean():6.2f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=10_000)
    parser.add_argument("--max-runs", type=int, nargs="+", default=[100, 300])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--skip-means", action="store_true")
    parser.add_argument("--only", choices=("rates", "means", "power", "caps"))
    args = parser.parse_args()
    if args.only in (None, "rates"):
        rates(args.reps, args.max_runs, args.seed)
    if args.only in (None, "means") and not args.skip_means:
        means(args.reps, args.seed)
    if args.only in (None, "power"):
        equal_power(args.reps, args.seed)
    if args.only in (None, "caps"):
        bet_caps(args.reps, args.seed)


if __name__ == "__main__":
    main()
