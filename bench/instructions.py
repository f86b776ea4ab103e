"""The cached path and the start-up in instructions executed, counted by valgrind's callgrind.

``side_by_side.py`` times the same runs; on a shared machine its runs of one variant can differ
by a factor of 1.5, more than the differences it is after. Instructions executed do not depend
on the neighbours: the same run counts the same within a fraction of a percent. They are not
seconds (a cache miss costs more than an add), so this script is the check of the work a
change adds or removes, and ``side_by_side.py`` the check that seconds follow.

Variants, as in ``side_by_side.py``: ``plain pytest`` (``-p no:propositions``), and for each
``--version NAME=DIR`` and this checkout (``after``): ``unused`` (installed, no option given),
``plain asserts`` (the plugin configured, no claim) and ``cached claims`` (every test asserts one
claim, all recorded first by that version against the scripted judge on loopback). Runs go two
at a time (callgrind makes each about 40 times slower: a minute or two each).

    python bench/instructions.py --version before=../base [--tests 300] [--claims 10] [--floor]

Needs valgrind. It is not a test and CI does not run it.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench import cache_overhead, cached_scale  # noqa: E402
from bench._common import environment, machine, package_copy, revision, run  # noqa: E402
from bench.side_by_side import print_ratios  # noqa: E402
from tests.support.judge_server import ScriptedJudge, verdict  # noqa: E402

_REFS = re.compile(r"Collected : (\d+)")


def counted(command: Sequence[str], cwd: Path, env: dict[str, str], out: Path) -> int:
    """Instructions the command executed under callgrind; exits if the run did not pass."""
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *command],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    found = _REFS.search(done.stderr)
    if done.returncode != 0 or "passed" not in done.stdout or found is None:
        sys.exit(f"{' '.join(command)} failed under callgrind:\n{done.stdout[-1500:]}")
    return int(found.group(1))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--version", action="append", default=[], metavar="NAME=DIR")
    parser.add_argument("--tests", type=int, default=300, help="tests per suite (300)")
    parser.add_argument(
        "--claims", type=int, default=1, help="claims a test (1; cached_scale.py's suites if more)"
    )
    parser.add_argument(
        "--floor",
        action="store_true",
        help="also count cached_scale.py's floor suite (a claim's irreducible work alone)",
    )
    args = parser.parse_args(argv)
    if shutil.which("valgrind") is None:
        sys.exit("valgrind is not installed")
    sources = {}
    for given in args.version:
        name, _, folder = given.partition("=")
        sources[name] = Path(folder).resolve()
    print(f"machine: {machine()}")
    shown = {**sources, "after": REPO}
    print(f"code: {revision()}; " + ", ".join(f"{n}: {s}" for n, s in shown.items()))

    with tempfile.TemporaryDirectory(prefix="prop-bench-") as temp, ScriptedJudge() as judge:
        work = Path(temp)
        sources["after"] = package_copy(work / "after-source")
        judge.default = verdict(True, justification="He names the city.")
        if args.claims == 1:
            claims, plain = cache_overhead.write_suites(work, args.tests)
        else:
            claims, plain = cached_scale.write_suites(work, args.tests, args.claims)
        plain_command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q"]
        jobs: dict[str, tuple[list[str], Path, dict[str, str]]] = {
            "plain pytest": (
                [*plain_command, "-p", "no:propositions", str(plain)],
                plain,
                environment(extra={"PYTHONPATH": str(sources["after"])}),
            )
        }
        for version, source in sources.items():
            env = environment(extra={"PYTHONPATH": str(source)})
            cache_dir = work / f"verdicts-{version}"
            judge.clear_requests()
            run(cache_overhead.pytest_command(claims, cache_dir, judge.base_url), claims, env)
            if len(judge.requests) != args.tests * args.claims:
                sys.exit(f"{version}: recording made {len(judge.requests)} requests")
            jobs[f"{version} unused"] = ([*plain_command, str(plain)], plain, env)
            jobs[f"{version} plain asserts"] = (
                cache_overhead.pytest_command(plain, cache_dir, judge.base_url),
                plain,
                env,
            )
            jobs[f"{version} cached claims"] = (
                cache_overhead.pytest_command(claims, cache_dir, judge.base_url),
                claims,
                env,
            )
        if args.floor:
            floor = work / "floor"
            shutil.copytree(claims, floor)
            (floor / "conftest.py").write_text(cached_scale.FLOOR_CONFTEST)
            env = environment(extra={"PYTHONPATH": str(sources["after"])})
            jobs["floor claims"] = (
                cache_overhead.pytest_command(floor, work / "verdicts-after", judge.base_url),
                floor,
                env,
            )
        # A first plain run of each version writes the bytecode caches the counted runs read.
        for command, cwd, env in jobs.values():
            run(command, cwd, env)
        print(f"counting {len(jobs)} runs under callgrind, two at a time ...", flush=True)
        with ThreadPoolExecutor(max_workers=2) as pool:
            futures = {
                name: pool.submit(counted, command, cwd, env, work / f"callgrind-{n}.out")
                for n, (name, (command, cwd, env)) in enumerate(jobs.items())
            }
            refs = {name: future.result() for name, future in futures.items()}

    print(f"== instructions executed ({args.tests} tests a suite, {args.claims} claims a test)")
    for name, count in refs.items():
        print(f"{name:<26} {count / 1e9:7.3f} G")
    if "floor claims" in refs:
        floor_ratio = refs["floor claims"] / refs["after plain asserts"]
        print(
            f"floor    cached / plain asserts {floor_ratio:.3f} (the floor's claims, after's asserts)"
        )
    print("== ratios")
    print_ratios(
        {name: float(count) for name, count in refs.items()},
        list(sources),
        lambda change: f"{change / args.tests / args.claims / 1e3:+.1f} k instructions a claim",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
