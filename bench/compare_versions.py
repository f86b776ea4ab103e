"""Two versions of the plugin, back to back: the same runs with this checkout and a baseline's.

On a shared machine, two benchmark runs minutes apart differ by more than most changes do. This
script alternates the two versions run by run, so both see the same stretch of load:

- a live run of 2 claims (``-n 0`` and ``-n 2``; the judge answers at once): what a process
  that judges pays once, i.e. pytest's start, litellm's import, the first request and the end;
- a fully cached run of 500 claims (recorded first, with this checkout).

The baseline is another interpreter whose environment has the other version installed, e.g. a
second worktree of the base commit with a copy of the virtualenv:

    git worktree add ../base BASE_COMMIT
    cp -a VENV ../base-venv   # then fix the copy's script shebangs
    ../base-venv/bin/pip install --no-deps -e ../base
    python bench/compare_versions.py --baseline ../base-venv/bin/python [--rounds 6]

It is not a test and CI does not run it.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench import cache_overhead, xdist_cold  # noqa: E402
from bench._common import alternate, environment, fmt, machine, median, revision, run  # noqa: E402
from tests.support.judge_server import ScriptedJudge, verdict  # noqa: E402

CACHED_TESTS = 500


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--baseline", required=True, help="the baseline's python executable")
    parser.add_argument("--rounds", type=int, default=6, help="timed runs of each variant (6)")
    args = parser.parse_args(argv)
    pythons = {"baseline": args.baseline, "this": sys.executable}
    print(f"machine: {machine()}")
    print(f"code: {revision()}; baseline: {args.baseline}")

    with tempfile.TemporaryDirectory(prefix="prop-bench-") as temp, ScriptedJudge() as judge:
        work = Path(temp)
        judge.default = verdict(True, justification="He names the city.")
        live = xdist_cold.write_suite(work, "live", 2)
        claims, _ = cache_overhead.write_suites(work, CACHED_TESTS)
        cache_dir = work / "verdicts"
        record = cache_overhead.pytest_command(claims, cache_dir, judge.base_url)
        run(record, claims, environment())
        if len(judge.requests) != CACHED_TESTS:
            sys.exit(f"recording made {len(judge.requests)} requests, not {CACHED_TESTS}")

        def timed(command: list[str], cwd: Path, requests: int) -> Callable[[], float]:
            def once() -> float:
                judge.clear_requests()
                seconds, done = run(command, cwd, environment())
                if len(judge.requests) != requests or "passed" not in done.stdout:
                    sys.exit(f"expected {requests} requests:\n{done.stdout[-2000:]}")
                return seconds

            return once

        variants: dict[str, Callable[[], float]] = {}
        for version, python in pythons.items():
            for workers in (0, 2):
                command = xdist_cold.pytest_command(live, judge.base_url, workers)
                variants[f"{version}: 2 live claims -n {workers}"] = timed(
                    [python, *command[1:]], live, 2
                )
            command = cache_overhead.pytest_command(claims, cache_dir, judge.base_url)
            variants[f"{version}: {CACHED_TESTS} cached claims"] = timed(
                [python, *command[1:]], claims, 0
            )
        print(f"timing {args.rounds} rounds, alternating ...", flush=True)
        times = alternate(variants, args.rounds)

    print(f"== medians of {args.rounds}")
    for name, values in times.items():
        print(f"{name:<32} {median(values):6.2f}s  (runs: {fmt(values)})")
    for name in [name.split(": ", 1)[1] for name in variants if name.startswith("this")]:
        before, after = median(times[f"baseline: {name}"]), median(times[f"this: {name}"])
        print(f"{name}: this / baseline {after / before:.2f} ({after - before:+.2f}s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
