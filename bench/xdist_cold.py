"""Does pytest-xdist speed up a suite of uncached claims? 100 claims, 2 workers vs none.

In one run this script:

1. writes a 100-test suite (4 files of 25) where every test asserts one claim with
   ``assert_proposition`` on a string target, and a 2-test twin (one claim per worker);
2. starts the scripted judge (``tests/support/judge_server.py``) on loopback, answering every
   request after 1 s (``delay(1.0, verdict(True))``), a real judge's latency;
3. times whole ``python -m pytest -p xdist`` runs with ``--prop-cache=off``, ``-n 2`` and
   ``-n 0``, on both suites, alternating the four for several rounds, and reports the medians
   and the ratio ``-n 2`` / ``-n 0`` on the 100-claim suite (target <= 0.55 at 1 s a verdict);
4. splits each time into a fixed part (the 2-claim run: start-up, and litellm's import, which
   every worker process pays once) and a per-claim part ((100-claim run - 2-claim run) / 98),
   and times ``import litellm`` in a fresh process on its own, plainly and as the plugin loads
   it (``load_litellm``).

Run it from the repository root with the project's virtualenv:

    python bench/xdist_cold.py [--rounds 3] [--tests 100] [--latency 1.0] [--plugins bare]

An earlier target (<= 0.6 at 200 ms a verdict) measured mostly each process's fixed cost
(litellm's import) rather than how the claims spread over workers; ``--latency 0.2`` still runs
it for comparison.

``--plugins bare`` turns pytest's plugin autoloading off and loads only xdist and this plugin:
what is left of the fixed part is then this plugin's and litellm's, not the other installed
plugins' (the hypothesis plugin, for one, imports hypothesis in every process's terminal
summary, so twice on the critical path of a ``-n 2`` run and once in ``-n 0``).

It is not a test and CI does not run it: timings on a shared machine are noise, not verdicts.
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

from bench._common import (  # noqa: E402
    SCRIPTED_MODEL,
    alternate,
    environment,
    fmt,
    machine,
    median,
    revision,
    run,
    summary_counts,
    summary_line,
    verdict_line,
)
from tests.support.judge_server import ScriptedJudge, delay, verdict  # noqa: E402

RATIO_TARGET = 0.55  # at the default latency (1 s) and suite (100 claims)
TESTS_PER_FILE = 25
WORKERS = 2
TARGET = "Oscar acts: [TALK] Quiet cities with great architecture, and trains between them."

LITELLM_IMPORT = """
import time
started = time.perf_counter()
import litellm
print(time.perf_counter() - started)
"""

# As the plugin loads it: the openai SDK's client code included.
PLUGIN_LOAD = """
import time
started = time.perf_counter()
from pytest_propositions.judging.transport_litellm import load_litellm
load_litellm("openai/judge-model")
print(time.perf_counter() - started)
"""


def write_suite(root: Path, name: str, tests: int) -> Path:
    suite = root / name
    suite.mkdir()
    (suite / "pytest.ini").write_text("[pytest]\n")
    for start in range(0, tests, TESTS_PER_FILE):
        lines = [f"TARGET = {TARGET!r}\n"]
        for n in range(start, min(start + TESTS_PER_FILE, tests)):
            claim = f"Oscar mentions quiet city number {n} and the trains that reach it."
            lines.append(
                f"\ndef test_claim_{n:04d}(assert_proposition):\n"
                f"    assert_proposition(TARGET, {claim!r})\n"
            )
        (suite / f"test_part_{start // TESTS_PER_FILE:03d}.py").write_text("".join(lines))
    return suite


def pytest_command(suite: Path, api_base: str, workers: int, *, bare: bool = False) -> list[str]:
    """``bare`` runs (with autoloading off, see environment()) load only xdist and this plugin."""
    return [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "xdist",
        *(["-p", "propositions"] if bare else []),
        "-n",
        str(workers),
        "-p",
        "no:cacheprovider",
        "-q",
        f"--prop-model={SCRIPTED_MODEL}",
        f"--prop-api-base={api_base}",
        "--prop-cache=off",
        "--prop-retries=0",
        str(suite),
    ]


def litellm_import_seconds(repeats: int, script: str = LITELLM_IMPORT) -> tuple[float, float]:
    """Seconds a fresh process takes to import litellm, and the whole process's wall time.

    Each worker pays both: the import, and at exit the teardown of the ~2,600 modules.
    """
    imports, processes = [], []
    for _ in range(repeats):
        wall, done = run([sys.executable, "-c", script], REPO, environment())
        imports.append(float(done.stdout.split()[-1]))
        processes.append(wall)
    return median(imports), median(processes)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="timed runs of each variant (3)")
    parser.add_argument("--tests", type=int, default=100, help="claims in the big suite (100)")
    parser.add_argument(
        "--latency", type=float, default=1.0, help="seconds the judge takes per reply (1.0)"
    )
    parser.add_argument(
        "--plugins",
        choices=("installed", "bare"),
        default="installed",
        help="load the installed pytest plugins (the target applies), or only xdist and this "
        "one (installed)",
    )
    args = parser.parse_args(argv)
    small = WORKERS  # one claim per worker: every worker imports litellm, as in the big run
    print(f"machine: {machine()}")
    print(f"code: {revision()}")

    with tempfile.TemporaryDirectory(prefix="prop-bench-") as temp, ScriptedJudge() as judge:
        work = Path(temp)
        big = write_suite(work, "big", args.tests)
        little = write_suite(work, "small", small)
        judge.default = delay(args.latency, verdict(True, justification="He names the city."))
        bare = args.plugins == "bare"
        env = environment(bare)
        judged: dict[str, list[float]] = {}
        lines: dict[str, str] = {}

        def variant(name: str, suite: Path, tests: int, workers: int) -> Callable[[], float]:
            def once() -> float:
                judge.clear_requests()
                seconds, done = run(
                    pytest_command(suite, judge.base_url, workers, bare=bare), suite, env
                )
                counts = summary_counts(done.stdout)
                if (
                    f"{tests} passed" not in done.stdout
                    or len(judge.requests) != tests
                    or counts.get("judge calls") != tests
                ):
                    sys.exit(
                        f"{name}: expected {tests} passed tests, {tests} requests and "
                        f"{tests} judge calls in the summary; got {len(judge.requests)} "
                        f"requests:\n{done.stdout[-2000:]}"
                    )
                judged.setdefault(name, []).append(counts.get("judging", float("nan")))
                lines[name] = summary_line(done.stdout) or "(no summary line)"
                return seconds

            return once

        names = {
            ("big", 0): f"{args.tests} claims -n 0",
            ("big", WORKERS): f"{args.tests} claims -n {WORKERS}",
            ("small", 0): f"{small} claims -n 0",
            ("small", WORKERS): f"{small} claims -n {WORKERS}",
        }
        suites = {"big": (big, args.tests), "small": (little, small)}
        plugins = "only xdist and this plugin" if bare else "plugins as installed"
        print(
            f"timing {args.rounds} rounds, judge latency {args.latency:.1f}s, cache off, "
            f"{plugins}, alternating ...",
            flush=True,
        )
        times = alternate(
            {
                name: variant(name, suites[size][0], suites[size][1], workers)
                for (size, workers), name in names.items()
            },
            args.rounds,
        )
        print("timing 'import litellm' in a fresh process ...", flush=True)
        litellm_seconds, litellm_process = litellm_import_seconds(3)
        plugin_seconds, plugin_process = litellm_import_seconds(3, PLUGIN_LOAD)

    print(f"== whole pytest runs, medians of {args.rounds}")
    for name in names.values():
        print(
            f"{name:<18} {median(times[name]):6.2f}s  (runs: {fmt(times[name])}); "
            f"summary's judge time {median(judged[name]):.1f}s"
        )
    serial, parallel = (median(times[names["big", w]]) for w in (0, WORKERS))
    print(
        verdict_line(
            f"ratio -n {WORKERS} / -n 0 ({args.tests} claims)", parallel / serial, RATIO_TARGET
        )
    )
    print(f"fixed vs per-claim cost (fixed = the {small}-claim run):")
    per_claim = {}
    for workers in (0, WORKERS):
        fixed = median(times[names["small", workers]])
        per_claim[workers] = (median(times[names["big", workers]]) - fixed) / (args.tests - small)
        print(
            f"  -n {workers}: fixed {fixed:.2f}s, per claim {per_claim[workers] * 1000:.0f} ms "
            f"(judge latency {args.latency * 1000:.0f} ms)"
        )
    print(
        f"  per-claim ratio -n {WORKERS} / -n 0: {per_claim[WORKERS] / per_claim[0]:.2f} "
        f"(ideal {1 / WORKERS:.2f})"
    )
    print(
        f"'import litellm' in a fresh process: {litellm_seconds:.2f}s; the whole process "
        f"(python start + import + exit): {litellm_process:.2f}s"
    )
    print(
        f"as the plugin loads it (openai client code included): "
        f"{plugin_seconds:.2f}s; the whole process: {plugin_process:.2f}s; paid once per worker"
    )
    print(f"last summary line ({names['big', WORKERS]}): {lines[names['big', WORKERS]]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
