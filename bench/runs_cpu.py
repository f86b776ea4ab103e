"""CPU of deciding claims over runs, per judged run: this checkout against a baseline commit,
side by side in one script.

The judge is left out (its cost is the provider's, or a cache read): what is timed is the
plugin's own work on each judged run, the sequential decision (its decider), and at the end
the figures, the interval and, for an undecided claim, the advice (how many runs would decide
it). Each claim is fed the same verdicts in both versions (a seeded pattern), in a process of
its own with the version's package first on ``sys.path``; the baseline's package comes from
``git archive`` of the baseline commit. CPU is the process's (``time.process_time``), summed
over the claim's work and divided by the runs it judged. Rounds alternate the two versions, so
both see the same stretch of load; the median of the rounds is printed. The decisions and
advice of both versions are printed beside them and must be equal.

    python bench/runs_cpu.py [--baseline 9c7f3e4] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.append(str(REPO))  # after the worker's version of the package, never before it

from bench._common import package_at  # noqa: E402

# (name, rule arguments, runs at most, the chance a run holds or its mean score, referee)
CLAIMS: list[tuple[str, dict[str, Any], int, float, bool]] = [
    ("at_least 0.5, rate 0.55, 100 runs", {"mode": "at_least", "bar": 0.5}, 100, 0.55, False),
    ("at_least 0.5, rate 0.52, 300 runs", {"mode": "at_least", "bar": 0.5}, 300, 0.52, False),
    ("at_least 0.8, rate 0.82, 60 runs", {"mode": "at_least", "bar": 0.8}, 60, 0.82, False),
    ("at_least 0.6, rate 0.95, 60 runs", {"mode": "at_least", "bar": 0.6}, 60, 0.95, False),
    ("mean >= 6, mean 6.2, 60 runs", {"mode": "mean", "bar": 6.0}, 60, 6.2, False),
    ("referee, at_least 0.5, rate 0.55", {"mode": "at_least", "bar": 0.5}, 200, 0.55, True),
]


def _the_version() -> tuple[Any, Any, Any]:
    """(Rule, RunsResult, a decider for a rule) of the package on the path: the wing split by
    responsibility (issue 41), or a baseline from before, with ``many_runs``."""
    try:
        from pytest_propositions.over_runs.deciders import decider_for
        from pytest_propositions.over_runs.result import RunsResult
        from pytest_propositions.over_runs.rule import Rule
    except ImportError:
        from pytest_propositions.over_runs import many_runs  # type: ignore[attr-defined]

        class Before:
            """The baseline's ``_Decider``, finished by its ``_finish``."""

            def __init__(self, rule: Any, min_runs: int, max_runs: int) -> None:
                self.decider = many_runs._Decider(rule, min_runs, max_runs)

            def __getattr__(self, name: str) -> Any:
                return getattr(self.decider, name)

            def finish(self, result: Any) -> None:
                many_runs._finish(result, self.decider)

        return many_runs.Rule, many_runs.RunsResult, Before
    return Rule, RunsResult, decider_for


def work(index: int) -> dict[str, Any]:
    """One claim, decided in this process: CPU seconds, runs judged, decision and advice."""
    name, arguments, max_runs, truth, refereed = CLAIMS[index]
    kind = "score" if arguments["mode"] == "mean" else "check"
    Rule, RunsResult, decider_for = _the_version()
    rule = Rule(
        arguments["mode"],
        kind,
        0.95,
        arguments["bar"],
        referee="referee" if refereed else None,
    )
    rng = random.Random(index)
    decider = decider_for(rule, 1, max_runs)  # a baseline before e771f74 imports scipy here
    result = RunsResult(name, rule, max_runs)
    started = time.process_time()
    while decider.decision is None and decider.count < max_runs:
        if kind == "score":
            score = min(9, max(0, round(rng.gauss(truth, 1.5))))
            decider.add(score / 9, score >= 6)
        elif refereed:
            truth_held = rng.random() < truth
            main = truth_held if rng.random() < 0.9 else not truth_held
            p = decider.fraction() if hasattr(decider, "fraction") else decider.referee.fraction()
            drawn = rng.random() < p
            decider.add_refereed(float(main), main, float(truth_held) if drawn else None, p)
        else:
            held = rng.random() < truth
            decider.add(float(held), held)
    decider.finish(result)
    cpu = time.process_time() - started
    return {"cpu": cpu, "runs": decider.count, "decision": result.decision, "advice": result.advice}


def worker(package: str) -> None:
    """Decide every claim in this process (the package at ``package`` first on the path)."""
    sys.path.insert(0, package)
    import pytest_propositions

    if not pytest_propositions.__file__ or not pytest_propositions.__file__.startswith(package):
        raise SystemExit(f"imported {pytest_propositions.__file__}, not from {package}")
    print(json.dumps([work(index) for index in range(len(CLAIMS))]))


def measure(package: Path) -> list[dict[str, Any]]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, __file__, "--worker", str(package)],
        capture_output=True,
        text=True,
        env=env,
        cwd=package,
        check=False,
    )
    if done.returncode:
        raise SystemExit(f"the worker for {package} failed:\n{done.stderr}")
    return list(json.loads(done.stdout.splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--baseline", default="9c7f3e4", help="the baseline commit (9c7f3e4)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each version (3)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker)
        return
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True
    ).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="prop-runs-cpu-") as temp:
        baseline = package_at(args.baseline, Path(temp) / "baseline")
        versions = {f"baseline {args.baseline}": baseline, f"this ({commit} + work tree)": REPO}
        rounds: dict[str, list[list[dict[str, Any]]]] = {name: [] for name in versions}
        for _ in range(args.rounds):
            for name, package in versions.items():
                rounds[name].append(measure(package))
    names = list(versions)
    print(f"CPU per judged run (ms), median of {args.rounds} rounds; {names[0]} | {names[1]}")
    for index, (claim, *_) in enumerate(CLAIMS):
        cells = []
        outcomes = []
        for name in names:
            runs = rounds[name][0][index]["runs"]
            cpu = statistics.median(r[index]["cpu"] for r in rounds[name])
            cells.append(f"{1000 * cpu / runs:8.2f}")
            first = rounds[name][0][index]
            outcomes.append((first["decision"], first["runs"], first["advice"]))
        same = "same decision and advice" if outcomes[0] == outcomes[1] else "DIFFERENT"
        print(
            f"  {claim:36} {outcomes[0][1]:4d} runs {outcomes[0][0]:12} {' | '.join(cells)}  {same}"
        )
        if outcomes[0] != outcomes[1]:
            print(f"    {outcomes[0]}\n    {outcomes[1]}")


if __name__ == "__main__":
    main()
