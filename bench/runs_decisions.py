"""Claims over runs decided with the statistics in pure Python (issue 52) and as they were
(scipy and numpy, ``tests/support/stats_before.py``), side by side on the same seeded runs.

``tests/support/runs_simulation.py`` draws each claim (rule, confidence, bar, min_runs,
max_runs, true rate or mean) and feeds both deciders the same runs; the decision after every
run, and at the end every figure, reason, piece of advice and warning, must be equal, and so
must the fewest runs that could pass a rate claim. It prints the differences (none expected),
and the smallest distance between an evidence value the new deciders evaluated and its
threshold: above ``beta.EVIDENCE_ERROR`` (1e-9), no decision depends on the floats' last
digits. ``tests/test_stats_exact.py`` runs a hundred of the same claims.

With ``--precision N`` it measures that bound instead: the largest difference between the rate
test's log evidence (``stats.rate_log_evidence``) and an exact evaluation
(``tests/support/exact_beta.py``, ``decimal`` to 40 digits) over ``N`` random cases (up to
``--most-runs`` runs, any count held, bars 0.001 to 0.999 and random floats, both sides).

    python bench/runs_decisions.py [--claims 10000] [--seed 52]
    python bench/runs_decisions.py --precision 400 [--most-runs 2000]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_propositions.over_runs import beta, stats
from tests.support import exact_beta
from tests.support.runs_simulation import simulate


def precision(cases: int, most_runs: int, seed: int) -> int:
    """The largest error of the log evidence over ``cases`` random cases; 1 above the bound."""
    rng = random.Random(seed)
    worst, where = 0.0, ()
    started = time.perf_counter()
    for case in range(cases):
        runs = rng.choice([rng.randint(1, 60), rng.randint(1, most_runs)])
        held = rng.randint(0, runs)
        bar = rng.choice([rng.randint(1, 999) / 1000, rng.uniform(0.001, 0.999)])
        direction = rng.choice(["above", "below"])
        a, b = stats._prior(bar, direction)  # type: ignore[arg-type]
        exact = exact_beta.log_evidence(held, runs, bar, a, b, above=direction == "above")
        value = stats.rate_log_evidence(held, runs, bar, direction)  # type: ignore[arg-type]
        error = abs(float(exact_beta.Decimal(value) - exact))
        if error > worst:
            worst, where = error, (held, runs, bar, direction, value)
        if (case + 1) % 100 == 0:
            print(f"  {case + 1} cases ({time.perf_counter() - started:.0f} s)", flush=True)
    print(
        f"{cases} cases up to {most_runs} runs: largest error of the log evidence {worst:.3g} "
        f"at (held, runs, bar, side, value) = {where}; bound {beta.EVIDENCE_ERROR:g}"
    )
    return 1 if worst > beta.EVIDENCE_ERROR else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--claims", type=int, default=10_000, help="claims decided (10000)")
    parser.add_argument("--seed", type=int, default=52, help="the simulation's seed (52)")
    parser.add_argument("--precision", type=int, help="measure the error bound on N cases")
    parser.add_argument("--most-runs", type=int, default=2000, help="with --precision (2000)")
    args = parser.parse_args()
    if args.precision:
        return precision(args.precision, args.most_runs, args.seed)
    started = time.perf_counter()

    def progress(done: int) -> None:
        if done % 1000 == 0:
            print(f"  {done} claims ({time.perf_counter() - started:.0f} s)", flush=True)

    outcome = simulate(args.claims, args.seed, progress)
    margins = outcome.margins
    print(
        f"{outcome.claims} claims, {outcome.runs} runs judged, decisions {outcome.decisions}; "
        f"{len(outcome.differences)} differences"
    )
    for line in outcome.differences[:20]:
        print("  DIFFERENT:", line)
    print(
        f"evidence values evaluated: {margins.evaluated}, ruled out by the bound: "
        f"{margins.bounded}; smallest distance from a threshold {margins.smallest:.3g} "
        f"(held, runs, bar, side, threshold, value = {margins.where}); error bound "
        f"{beta.EVIDENCE_ERROR:g}: {'ok' if margins.smallest > beta.EVIDENCE_ERROR else 'TOO CLOSE'}"
    )
    return 1 if outcome.differences or margins.smallest <= beta.EVIDENCE_ERROR else 0


if __name__ == "__main__":
    raise SystemExit(main())
