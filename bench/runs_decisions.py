"""Claims over runs decided with the statistics in pure Python (issue 52) and as they were
(scipy and numpy, ``tests/support/stats_before.py``), side by side on the same seeded runs.

``tests/support/runs_simulation.py`` draws each claim (rule, confidence, bar, min_runs,
max_runs, true rate or mean) and feeds both deciders the same runs; the decision after every
run, and at the end every figure, reason, piece of advice and warning, must be equal, and so
must the fewest runs that could pass a rate claim. It prints the differences (none expected),
and the smallest distance between an evidence value the new deciders evaluated and its
threshold: above ``beta.EVIDENCE_ERROR`` (1e-9), no decision depends on the floats' last
digits. ``tests/test_stats_exact.py`` runs a few hundred of the same claims.

    python bench/runs_decisions.py [--claims 10000] [--seed 52]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_propositions.over_runs import beta
from tests.support.runs_simulation import simulate


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--claims", type=int, default=10_000, help="claims decided (10000)")
    parser.add_argument("--seed", type=int, default=52, help="the simulation's seed (52)")
    args = parser.parse_args()
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
