"""What does the plugin cost a suite that makes no claims at all?

In one run this script:

1. writes a 300-test plain suite (6 files of 50 tests, plain asserts, no claim anywhere) into a
   temporary folder, with a conftest that dumps the names in ``sys.modules`` at session finish;
2. times ``python -m pytest -q`` on it with the plugin installed but unused, and with
   ``-p no:propositions``, alternating them for several rounds, and reports the medians and
   their ratio (target <= 1.05). It does so with the pytest plugins installed in the venv, and
   "bare" (``PYTEST_DISABLE_PLUGIN_AUTOLOAD=1``, with ``-p propositions`` or nothing), where
   pytest's own start-up is smallest and the plugin's share weighs most. Bare, it also times
   ``-p`` of a plugin with no hooks: pytest scans every distribution's entry points for any
   ``-p`` plugin, a cost of that way of loading rather than of this plugin;
3. checks from the conftest's dumps that no heavy module (litellm, diskcache, pydantic, chevron)
   was imported by the runs with the plugin (and, to tell the plugin from the others, by those
   without it);
4. measures the plugin's own import time: ``python -X importtime -c "import
   pytest_propositions.plugin"`` (the self time of our modules, summed, median of several
   processes), and the modules of ours a real run with the plugin unused imports (pytest's hooks
   import a few more than the entry point does).

Run it from the repository root with the project's virtualenv:

    python bench/startup_overhead.py [--tests 300] [--rounds 41] [--plugins both]

It is not a test and CI does not run it: timings on a shared machine are noise, not verdicts.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench._common import (  # noqa: E402
    HEAVY_MODULES,
    alternate,
    environment,
    fmt,
    import_times,
    machine,
    median,
    revision,
    run,
    run_measured,
    verdict_line,
)

RATIO_TARGET = 1.05
TESTS_PER_FILE = 50
OURS = "pytest_propositions"
# A plugin module with no hooks, written into the suite (python -m puts the cwd on sys.path).
EMPTY = "bench_empty_plugin"
TARGET = "Oscar acts: [TALK] Quiet cities with great architecture, and trains between them."

MODULES_CONFTEST = """
import json
import os
import sys


def pytest_sessionfinish(session):
    out = os.environ.get("BENCH_MODULES_FILE")
    if out:
        with open(out, "w") as stream:
            json.dump(sorted(sys.modules), stream)
"""


def write_suite(root: Path, tests: int) -> Path:
    suite = root / "plain"
    suite.mkdir()
    (suite / "pytest.ini").write_text("[pytest]\n")
    (suite / "conftest.py").write_text(MODULES_CONFTEST)
    (suite / f"{EMPTY}.py").write_text('"""A pytest plugin with no hooks."""\n')
    for start in range(0, tests, TESTS_PER_FILE):
        lines = [f"TARGET = {TARGET!r}\n"]
        for n in range(start, min(start + TESTS_PER_FILE, tests)):
            lines.append(
                f"\ndef test_plain_{n:04d}():\n    assert 'Oscar' in TARGET and {n} >= 0\n"
            )
        (suite / f"test_part_{start // TESTS_PER_FILE:03d}.py").write_text("".join(lines))
    return suite


def pytest_command(
    suite: Path,
    *,
    plugin: str,
    bare: bool,
    python_flags: Sequence[str] = (),
    pytest_flags: Sequence[str] = (),
) -> list[str]:
    """``python -m pytest -q`` on the suite; ``plugin`` is "ours", "none" or "empty" (bare only).

    Bare, any plugin given with ``-p`` makes pytest scan every installed distribution's entry
    points first (several ms), whatever the plugin: the "empty" variant loads a plugin with no
    hooks that way, so the plugin's own cost can be told from that of being loaded with ``-p``.
    """
    if bare:
        plugin_flags = {"ours": ["-p", "propositions"], "none": [], "empty": ["-p", EMPTY]}[plugin]
    else:
        plugin_flags = {"ours": [], "none": ["-p", "no:propositions"]}[plugin]
    return [
        sys.executable,
        *python_flags,
        "-m",
        "pytest",
        "-q",
        *plugin_flags,
        *pytest_flags,
        str(suite),
    ]


def heavy_in(modules: Sequence[str]) -> set[str]:
    return {name.split(".")[0] for name in modules if name.split(".")[0] in HEAVY_MODULES}


def compare(suite: Path, work: Path, *, tests: int, rounds: int, bare: bool) -> bool:
    """Time the variants, alternating; print medians and ratios; True if no heavy import."""
    label = "bare: PYTEST_DISABLE_PLUGIN_AUTOLOAD=1" if bare else "plugins as installed"
    print(f"\ntiming {rounds} rounds ({label}), alternating ...", flush=True)
    modules_file = work / "modules.json"
    env = environment(bare, {"BENCH_MODULES_FILE": str(modules_file)})
    plugins = {"with plugin": "ours", "without plugin": "none"}
    if bare:
        plugins["empty -p plugin"] = "empty"
    heavy: dict[str, set[str]] = {name: set() for name in plugins}
    ours_loaded: dict[str, bool] = dict.fromkeys(plugins, False)
    cpu: dict[str, list[float]] = {name: [] for name in plugins}

    def variant(name: str) -> Callable[[], float]:
        def once() -> float:
            modules_file.unlink(missing_ok=True)
            command = pytest_command(suite, plugin=plugins[name], bare=bare)
            seconds, cpu_seconds, done = run_measured(command, suite, env)
            cpu[name].append(cpu_seconds)
            if f"{tests} passed" not in done.stdout:
                sys.exit(f"expected {tests} passed tests:\n{done.stdout[-2000:]}")
            modules = json.loads(modules_file.read_text())
            heavy[name] |= heavy_in(modules)
            ours_loaded[name] |= any(m.split(".")[0] == OURS for m in modules)
            return seconds

        return once

    times = alternate({name: variant(name) for name in plugins}, rounds)
    print(f"== {tests} plain tests, {label}, medians of {rounds}")
    medians = {name: median(values) for name, values in times.items()}
    for name, values in times.items():
        print(f"{name + ':':<26}{medians[name]:.3f}s  (runs: {fmt(values)})")
    used, unused = medians["with plugin"], medians["without plugin"]
    print(verdict_line("ratio with/without", used / unused, RATIO_TARGET))
    print(
        f"difference: {(used - unused) * 1000:+.0f} ms per run, "
        f"{(used - unused) / tests * 1000:+.3f} ms per test"
    )
    # CPU time leaves out waiting for a core that another job holds.
    cpu_medians = {name: median(values) for name, values in cpu.items()}
    print(
        "CPU time (user + system), medians: "
        + ", ".join(f"{name} {value:.3f}s" for name, value in cpu_medians.items())
    )
    print(
        verdict_line(
            "CPU ratio with/without",
            cpu_medians["with plugin"] / cpu_medians["without plugin"],
            RATIO_TARGET,
        )
    )
    if bare:
        empty = medians["empty -p plugin"]
        print(
            f"loading an empty plugin with -p costs {(empty - unused) * 1000:+.0f} ms; "
            f"the plugin over that: {(used - empty) * 1000:+.0f} ms"
        )
        print(verdict_line("ratio with / empty -p plugin", used / empty, RATIO_TARGET))
    if any(ours_loaded[name] for name in plugins if name != "with plugin"):
        print("WARNING: a run without the plugin still imported pytest_propositions")
    print(
        "heavy modules imported (litellm, diskcache, pydantic, chevron): "
        + "; ".join(f"{name}: {sorted(found) or 'none'}" for name, found in heavy.items())
    )
    blamed = heavy["with plugin"] - heavy["without plugin"]
    if blamed:
        print(f"FAILED: the unused plugin imported {sorted(blamed)}")
    return not blamed


# -- import time ------------------------------------------------------------------------------------


def import_probe(code: str) -> dict[str, tuple[int, int, str]]:
    _, done = run(
        [sys.executable, "-X", "importtime", "-c", code], REPO, environment(), ok_codes=(0,)
    )
    return import_times(done.stderr)


def ours(found: dict[str, tuple[int, int, str]]) -> dict[str, int]:
    return {module: times[0] for module, times in found.items() if module.split(".")[0] == OURS}


def plugin_import_time(repeats: int) -> bool:
    """The plugin entry point's own import cost; True if it imported no heavy module."""
    print(
        f"\n== python -X importtime -c 'import {OURS}.plugin', median of {repeats} processes",
        flush=True,
    )
    own_totals, beyond_pytest, cumulative = [], [], []
    per_module: dict[str, list[int]] = {}
    heavy: set[str] = set()
    for _ in range(repeats):
        pytest_only = import_probe("import pytest")
        plugin = import_probe(f"import {OURS}.plugin")
        own = ours(plugin)
        own_totals.append(sum(own.values()))
        for module, micros in own.items():
            per_module.setdefault(module, []).append(micros)
        extra = {m: t for m, t in plugin.items() if m not in pytest_only}
        # The editable install's finder is imported at start-up by every process: not ours.
        beyond_pytest.append(sum(t[0] for m, t in extra.items() if m.split(".")[0] != OURS))
        cumulative.append(plugin.get(f"{OURS}.plugin", (0, 0, ""))[1])
        heavy |= heavy_in(list(plugin))
    print(f"our modules, self time summed: {median(own_totals) / 1000:.1f} ms")
    for module, samples in sorted(per_module.items(), key=lambda item: -median(item[1])):
        print(f"  {module:<36} {median(samples) / 1000:6.1f} ms")
    print(
        "other modules it imports that 'import pytest' does not (stdlib): "
        f"{median(beyond_pytest) / 1000:.1f} ms"
    )
    print(
        f"{OURS}.plugin cumulative (includes importing pytest itself): "
        f"{median(cumulative) / 1000:.1f} ms"
    )
    print(f"heavy modules imported: {sorted(heavy) or 'none'}")
    return not heavy


def run_import_time(suite: Path, repeats: int) -> None:
    """Our modules that a real, claim-free run imports (hooks import more than the entry point)."""
    print(
        f"\n== our modules imported by a claim-free pytest run (-X importtime), "
        f"median of {repeats}",
        flush=True,
    )
    totals: list[int] = []
    per_module: dict[str, list[int]] = {}
    for _ in range(repeats):
        # -s: an import made while a test runs writes its line to a captured stderr otherwise.
        command = pytest_command(
            suite, plugin="ours", bare=False, python_flags=["-X", "importtime"], pytest_flags=["-s"]
        )
        _, done = run(command, suite, environment())
        own = ours(import_times(done.stderr))
        totals.append(sum(own.values()))
        for module, micros in own.items():
            per_module.setdefault(module, []).append(micros)
    print(f"{len(per_module)} modules, self time summed: {median(totals) / 1000:.1f} ms")
    for module, samples in sorted(per_module.items(), key=lambda item: -median(item[1])):
        print(f"  {module:<36} {median(samples) / 1000:6.1f} ms")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--tests", type=int, default=300, help="plain tests in the suite (300)")
    # One run of the suite varies by +-20% on a shared machine; a 5% target needs many rounds.
    parser.add_argument("--rounds", type=int, default=41, help="timed runs of each variant (41)")
    parser.add_argument("--imports", type=int, default=5, help="import-time probes (5)")
    parser.add_argument(
        "--plugins",
        choices=("installed", "bare", "both"),
        default="both",
        help="time with the installed pytest plugins, with only this one, or both (both)",
    )
    args = parser.parse_args(argv)
    print(f"machine: {machine()}")
    print(f"code: {revision()}")

    clean = True
    with tempfile.TemporaryDirectory(prefix="prop-bench-") as temp:
        work = Path(temp)
        suite = write_suite(work, args.tests)
        modes = {"installed": [False], "bare": [True], "both": [False, True]}[args.plugins]
        for bare in modes:
            clean &= compare(suite, work, tests=args.tests, rounds=args.rounds, bare=bare)
        clean &= plugin_import_time(args.imports)
        run_import_time(suite, max(1, min(args.imports, 3)))
    if not clean:
        print("\nFAILED: the unused plugin imported a heavy module")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
