"""Thousands of cached claims: 5,000 in 500 tests against the same tests with plain asserts, and
what the JSON report costs a 10,000-claim cached run (issue 52's guards), side by side in one run.

In one run this script:

1. writes a suite of ``--tests`` tests (500) that each assert ``--claims`` claims (10) with
   ``assert_proposition``, and its twin where each test makes as many plain asserts;
2. records the claim suite once with the FIRST version given (``--version before=DIR``; this
   checkout when none is), against the scripted judge on loopback;
3. runs every version's cached suite and plain twin in the same rounds, in an order that
   rotates each round, the cached runs with ``--prop-cache=replay``: a key that changed is a
   miss, and a miss fails the run, so this also shows every version replays the first one's
   cache (the keys are the same bytes);
4. prints each run's CPU (user + system of the whole pytest process), and per version the ratio
   cached / plain asserts as min / median / max over the rounds (each round's ratio is of two
   runs made one after the other). Guard: the median at most 1.3.
   With ``--floor``, a third suite runs beside them: the claim suite with its
   ``assert_proposition`` replaced by only what no cached claim can skip (its request's user
   turn, the key from the judge's frame, the disk read, the verdict decoded, checked and kept):
   no call checks, no layers, no redaction, no report filing. Its ratio to plain asserts is how
   low any version of the cached path could go on this machine, the guard's floor.
5. the report's share: a suite of ``--report-tests`` tests (1,000, so 10,000 claims) recorded
   once, then run cached with ``--prop-report``; a conftest times ``save_json_report`` (CPU of
   the process, ``time.process_time``) inside the run. Guard: at most 5% of the run's CPU.

    python bench/cached_scale.py [--version before=../main] [--rounds 5] [--floor]

It is not a test and CI does not run it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench import cache_overhead  # noqa: E402
from bench._common import environment, machine, package_copy, revision, run_measured  # noqa: E402
from tests.support.judge_server import ScriptedJudge, verdict  # noqa: E402

CACHED_GUARD = 1.3
REPORT_GUARD = 0.05

# The report suite's conftest: the CPU seconds of writing the JSON report, measured in the run.
REPORT_CONFTEST = """
import time

from pytest_propositions.reports import json_report

_save = json_report.save_json_report


def _timed(runtime, base):
    started = time.process_time()
    try:
        return _save(runtime, base)
    finally:
        (base / "report-cpu.txt").write_text(repr(time.process_time() - started))


json_report.save_json_report = _timed
"""


# The floor suite's conftest (--floor): a cached claim's irreducible work, and nothing else. It
# reaches the judge's key frame (a private helper) and the disk cache directly: a measurement,
# not a way to judge a claim.
FLOOR_CONFTEST = """
import json

import diskcache
import pytest

from pytest_propositions import runtime
from pytest_propositions.claims.targets import RenderOptions, render_context
from pytest_propositions.judging.prompts import build_messages
from pytest_propositions.judging.request import JudgeRequest
from pytest_propositions.verdict import Verdict


@pytest.fixture(scope="session")
def assert_proposition():
    run = runtime.current()
    judge = run.judge
    model = run.settings.model
    opening = build_messages("check", "x", "x", None)[0]
    request = JudgeRequest(kind="check", claim="x", model=model, messages=(opening,))
    _, frame = judge._framed(request, judge._connection(model))
    disk = diskcache.Cache(str(run.cache_dir))
    contexts = {}
    kept = []

    def assert_proposition(target, claim):
        context = contexts.get(target)
        if context is None:
            context = contexts[target] = render_context([target], RenderOptions())
        messages = build_messages("check", claim, context, None)
        key = frame.key(messages)
        text = disk.get(key)
        verdict = Verdict.from_dict(
            json.loads(text[text.rfind(',"verdict":{') + 11 : -1]), cached=True, key=key
        )
        kept.append((run.current_test, verdict))
        assert verdict.value is True

    return assert_proposition
"""


def write_suites(root: Path, tests: int, claims: int) -> tuple[Path, Path]:
    """The claim suite (``claims`` claims a test) and its plain twin, in files of 50 tests."""
    suites = []
    for name in ("claims", "plain"):
        suite = root / name
        suite.mkdir(parents=True)
        (suite / "pytest.ini").write_text("[pytest]\n")
        for start in range(0, tests, cache_overhead.TESTS_PER_FILE):
            numbers = range(start, min(start + cache_overhead.TESTS_PER_FILE, tests))
            lines = [f"TARGET = {cache_overhead.TARGET!r}\n"]
            for n in numbers:
                if name == "claims":
                    body = "".join(
                        f"    assert_proposition(TARGET, "
                        f"{cache_overhead.claim_of(n * claims + i)!r})\n"
                        for i in range(claims)
                    )
                    lines.append(f"\ndef test_claim_{n:04d}(assert_proposition):\n{body}")
                else:
                    body = "".join(
                        f"    assert 'Oscar' in TARGET and {n * claims + i} >= 0\n"
                        for i in range(claims)
                    )
                    lines.append(f"\ndef test_claim_{n:04d}():\n{body}")
            (suite / f"test_part_{start // cache_overhead.TESTS_PER_FILE:03d}.py").write_text(
                "\n".join(lines)
            )
        suites.append(suite)
    return suites[0], suites[1]


def spread(values: Sequence[float]) -> str:
    return f"min {min(values):.3f} / median {statistics.median(values):.3f} / max {max(values):.3f}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--version", action="append", default=[], metavar="NAME=DIR")
    parser.add_argument("--tests", type=int, default=500, help="tests per suite (500)")
    parser.add_argument("--claims", type=int, default=10, help="claims per test (10)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds (5)")
    parser.add_argument("--report-tests", type=int, default=1000, help="report suite (1000)")
    parser.add_argument("--report-rounds", type=int, default=3, help="report runs (3)")
    parser.add_argument("--skip", choices=("cached", "report"), help="leave one part out")
    parser.add_argument(
        "--floor", action="store_true", help="also time the floor suite (see the docstring)"
    )
    args = parser.parse_args(argv)
    sources: dict[str, Path] = {}
    for given in args.version:
        name, _, folder = given.partition("=")
        sources[name] = Path(folder).resolve()
    print(f"machine: {machine()}")
    print(f"code: {revision()}; " + ", ".join(f"{n}: {s}" for n, s in {**sources}.items()))

    with tempfile.TemporaryDirectory(prefix="prop-bench-") as temp, ScriptedJudge() as judge:
        work = Path(temp)
        sources["after"] = package_copy(work / "after-source")
        judge.default = verdict(True, justification="He names the city and its trains.")

        def env(source: Path) -> dict[str, str]:
            return environment(extra={"PYTHONPATH": str(source)})

        def command(suite: Path, cache_dir: Path, *flags: str) -> list[str]:
            return cache_overhead.pytest_command(
                suite, cache_dir, judge.base_url, pytest_flags=flags
            )

        def measured(cmd: list[str], cwd: Path, source: Path) -> float:
            judge.clear_requests()
            _, cpu, done = run_measured(cmd, cwd, env(source))
            if judge.requests or "passed" not in done.stdout:
                sys.exit(f"a cached run asked the judge or failed:\n{done.stdout[-2000:]}")
            return cpu

        first = next(iter(sources.values()))
        if args.skip != "cached":
            claims, plain = write_suites(work / "scale", args.tests, args.claims)
            cache_dir = work / "verdicts"
            print(
                f"recording {args.tests * args.claims} claims with {next(iter(sources))} ...",
                flush=True,
            )
            run_measured(command(claims, cache_dir), claims, env(first))
            if len(judge.requests) != args.tests * args.claims:
                sys.exit(f"recording made {len(judge.requests)} requests")
            jobs = {}
            for version, source in sources.items():
                jobs[f"{version} cached claims"] = (
                    command(claims, cache_dir, "--prop-cache=replay"),
                    claims,
                    source,
                )
                jobs[f"{version} plain asserts"] = (command(plain, cache_dir), plain, source)
            if args.floor:
                floor = work / "scale" / "floor"
                shutil.copytree(claims, floor)
                (floor / "conftest.py").write_text(FLOOR_CONFTEST)
                jobs["floor claims"] = (
                    command(floor, cache_dir, "--prop-cache=replay"),
                    floor,
                    sources["after"],
                )
            for cmd, cwd, source in jobs.values():  # bytecode caches written once
                measured(cmd, cwd, source)
            cpu: dict[str, list[float]] = {name: [] for name in jobs}
            names = list(jobs)
            for number in range(args.rounds):
                shift = (2 * number) % len(names)
                order = names[shift:] + names[:shift]
                for name in order:
                    cpu[name].append(measured(*jobs[name]))
                line = ", ".join(f"{name} {cpu[name][-1]:.2f}s" for name in names)
                print(f"  round {number + 1}: {line}", flush=True)
            print(f"load average after: {os.getloadavg()}")
            print(
                f"== CPU seconds of the whole pytest process, {args.tests} tests, "
                f"{args.tests * args.claims} claims, {args.rounds} rounds"
            )
            for name, values in cpu.items():
                print(f"{name:<28} {spread(values)}")
            print("== cached claims / plain asserts, each round's ratio")
            for version in sources:
                ratios = [
                    c / p
                    for c, p in zip(
                        cpu[f"{version} cached claims"],
                        cpu[f"{version} plain asserts"],
                        strict=True,
                    )
                ]
                ok = statistics.median(ratios) <= CACHED_GUARD
                print(
                    f"{version:<8} {spread(ratios)}  (guard: median <= {CACHED_GUARD}) "
                    f"{'ok' if ok else 'MISSED'}"
                )
            if args.floor:
                ratios = [
                    c / p
                    for c, p in zip(cpu["floor claims"], cpu["after plain asserts"], strict=True)
                ]
                print(
                    f"{'floor':<8} {spread(ratios)}  (the floor's claims / after's plain asserts)"
                )
            for version in [v for v in sources if v != "after"]:
                after = statistics.median(cpu["after cached claims"])
                before = statistics.median(cpu[f"{version} cached claims"])
                print(f"cached claims: after / {version} {after / before:.3f}")

        if args.skip != "report":
            claims, _ = write_suites(work / "report", args.report_tests, args.claims)
            (claims / "conftest.py").write_text(REPORT_CONFTEST)
            cache_dir = work / "report-verdicts"
            total = args.report_tests * args.claims
            print(f"\nrecording {total} claims for the report ...", flush=True)
            run_measured(command(claims, cache_dir), claims, env(first))
            shares: dict[str, list[float]] = {}
            for version, source in sources.items():
                cmd = command(
                    claims, cache_dir, "--prop-cache=replay", f"--prop-report={work / 'r.json'}"
                )
                measured(cmd, claims, source)
                for _ in range(args.report_rounds):
                    whole = measured(cmd, claims, source)
                    report = float((claims / "report-cpu.txt").read_text())
                    shares.setdefault(version, []).append(report / whole)
                    print(
                        f"  {version}: run {whole:.2f}s CPU, report {report:.3f}s "
                        f"({report / whole:.1%}), {(work / 'r.json').stat().st_size} bytes",
                        flush=True,
                    )
            print(f"== the JSON report's share of a {total}-claim cached run's CPU")
            for version, values in shares.items():
                ok = statistics.median(values) <= REPORT_GUARD
                print(
                    f"{version:<8} {spread(values)}  (guard: median <= {REPORT_GUARD}) "
                    f"{'ok' if ok else 'MISSED'}"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
