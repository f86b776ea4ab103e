"""What a process judging one claim over runs costs, against one judging a single live claim:
whole-process CPU, side by side in one run, for this checkout and a baseline commit's package.

Each variant is ``python -m pytest`` on one test, the cache off, against the scripted judge in
this process (it answers at once, so what is timed is the process's own work: start-up,
imports, rendering, requests, the decisions). The live claim: one ``assert_proposition``. The
claims over runs (``runs(simulate, max_runs=N)``, a one-line simulation):

- ``pass``: ``at_least=0.5``, every run upheld: passes at the fewest runs that can (5);
- ``inconclusive``: ``at_least=0.5``, half the runs upheld, 40 runs: undecided, so its report
  has the interval and the advice (how many runs would decide);
- ``mean``: ``min_score`` 6 over 40 runs of scores 5, 6, 7: undecided, with its interval.

Each figure is a ratio to the live claim's CPU in the same round (rounds alternate the
variants, their order rotating), printed as min / median / max over the rounds. The baseline's
package comes from ``git archive`` (its claims over runs import scipy); each variant checks it
imported the package it was given. Guard (issue 52): a process judging one claim over runs at
most 1.5x one live claim, in CPU.

    python bench/runs_process_cpu.py [--rounds 5] [--baseline e7d7503]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import (
    REPO,
    SCRIPTED_MODEL,
    alternate,
    environment,
    machine,
    package_at,
    revision,
    run_measured,
)
from tests.support.judge_server import ScriptedJudge, verdict

GUARD = 1.5
CLAIM = "Oscar mentions trains."
HEAD = """import os

import pytest_propositions
from pytest_propositions import runs

assert pytest_propositions.__file__.startswith(os.environ["BENCH_PACKAGE"]), (
    pytest_propositions.__file__
)
"""
SUITES = {
    "live": HEAD
    + f"""
def test_one(assert_proposition):
    assert_proposition("Oscar says MARK-YES: I love trains.", {CLAIM!r})
""",
    "pass": HEAD
    + f"""
def test_runs(assert_proposition):
    assert_proposition(
        runs(lambda run: f"Run {{run}}: Oscar says MARK-YES.", max_runs=20), {CLAIM!r},
        at_least=0.5,
    )
""",
    "inconclusive": HEAD
    + f"""
def test_runs(assert_proposition):
    assert_proposition(
        runs(lambda run: f"Run {{run}}: Oscar says " + ("MARK-YES." if run % 2 else "no."),
             max_runs=40),
        {CLAIM!r},
        at_least=0.5,
    )
""",
    "mean": HEAD
    + f"""
def test_runs(min_score):
    min_score(runs(lambda run: f"Run {{run}}: SCORE-{{5 + run % 3}}", max_runs=40), {CLAIM!r}, 6)
""",
}


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="rounds of every variant (5)")
    parser.add_argument("--baseline", default="e7d7503", help="the baseline commit (e7d7503)")
    args = parser.parse_args()
    print(machine())
    print(revision())
    with (
        tempfile.TemporaryDirectory(prefix="prop-runs-process-") as temp,
        ScriptedJudge(keep_alive=True) as judge,
    ):
        judge.on("MARK-YES", verdict(True))
        for score in range(10):
            judge.on(f"SCORE-{score}", verdict(score))
        judge.default = verdict(False)
        root = Path(temp)
        baseline = package_at(args.baseline, root / "baseline")
        for name, body in SUITES.items():
            (root / name).mkdir()
            (root / name / f"test_{name}.py").write_text(body)
        packages = {"this": REPO, f"baseline {args.baseline}": baseline}
        cpu: dict[str, list[float]] = {}

        def variant(suite: str, package: Path) -> Callable[[], float]:
            key = f"{suite}, {'this' if package == REPO else 'baseline'}"
            cpu[key] = []

            def once() -> float:
                command = [
                    sys.executable,
                    "-m",
                    "pytest",
                    "-q",
                    "-p",
                    "no:cacheprovider",
                    f"--prop-model={SCRIPTED_MODEL}",
                    f"--prop-api-base={judge.base_url}",
                    "--prop-cache=off",
                    str(root / suite),
                ]
                env = environment(extra={"PYTHONPATH": str(package), "BENCH_PACKAGE": str(package)})
                # An inconclusive claim fails its test (exit code 1): that is its outcome.
                _, seconds, _ = run_measured(command, root, env, ok_codes=(0, 1))
                cpu[key].append(seconds)
                return seconds

            return once

        variants = {
            f"{suite}, {'this' if package == REPO else 'baseline'}": variant(suite, package)
            for suite in SUITES
            for package in packages.values()
        }
        alternate(variants, args.rounds)
    print(f"\nCPU of the process / CPU of one live claim, same version, same round ({args.rounds})")
    print(f"{'claim over runs':<14} {'version':<10} {'min':>6} {'median':>7} {'max':>6}  guard")
    missed = False
    for suite in SUITES:
        if suite == "live":
            continue
        for version in ("baseline", "this"):
            ratios = [
                seconds / live
                for seconds, live in zip(
                    cpu[f"{suite}, {version}"], cpu[f"live, {version}"], strict=True
                )
            ]
            middle = statistics.median(ratios)
            verdict_word = ""
            if version == "this":
                verdict_word = "ok" if middle <= GUARD else "MISSED"
                missed |= middle > GUARD
            print(
                f"{suite:<14} {version:<10} {min(ratios):6.2f} {middle:7.2f} {max(ratios):6.2f}"
                f"  {verdict_word}"
            )
    for version in ("baseline", "this"):
        live = statistics.median(cpu[f"live, {version}"])
        print(f"one live claim, {version}: {live:.2f} s CPU (median)")
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
