"""What the benchmark scripts share: the environment of the pytest runs they time, timing whole
``python -m pytest`` subprocesses, alternating variants round by round, ``-X importtime`` parsing
and the plugin's summary line.

Not a benchmark itself. The scripts import it as ``bench._common`` after putting the repository
root on ``sys.path``, so they run as ``python bench/NAME.py`` or ``python -m bench.NAME``.
"""

from __future__ import annotations

import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# Any key will do: the scripted judge checks none, and keys are never part of a cache key.
API_KEY = "bench-key"
# The OpenAI-compatible model name the scripted judge answers to, as litellm spells it.
SCRIPTED_MODEL = "openai/judge-model"
# What pytest-propositions never imports unless a claim is evaluated (or looked up).
HEAVY_MODULES = ("litellm", "diskcache", "pydantic", "chevron")

_SUMMARY = re.compile(r"^propositions: (\d+) claims?, .*$", re.MULTILINE)
# The summary writes "1 judge call", "2 judge calls": counts are read under the plural name.
_SINGULAR = {
    "claim": "claims",
    "judge error": "judge errors",
    "judge call": "judge calls",
    "token": "tokens",
}


# -- the environment of a run ---------------------------------------------------------------------


def package_copy(folder: Path) -> Path:
    """This checkout's package copied alone into ``folder`` (returned, for PYTHONPATH): a build
    folder an editable install leaves beside it (pytest_propositions.egg-info) would be one
    more distribution on PYTHONPATH for every scan of entry points, which a version unpacked by
    ``git archive`` does not have."""
    import shutil

    shutil.copytree(
        REPO / "pytest_propositions",
        folder / "pytest_propositions",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    return folder


def package_at(revision: str, folder: Path) -> Path:
    """The package as it was at ``revision`` (``git archive``), unpacked alone into ``folder``
    (returned, for PYTHONPATH): a baseline measured beside this checkout."""
    folder.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(
        ["git", "archive", revision, "pytest_propositions"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return folder


def environment(bare: bool = False, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment without PROP_* and PYTEST_* settings, plus a dummy key.

    ``bare`` disables pytest's plugin autoloading (the command then loads plugins with ``-p``).
    litellm is kept from fetching its price map: no network, and the fetch would cost seconds.
    PYTHONDONTWRITEBYTECODE is dropped, as on a usual machine: with it, pytest cannot cache the
    modules it rewrites (every installed plugin's package) and recompiles them in every process.
    """
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PROP_", "PYTEST_")) and k != "PYTHONDONTWRITEBYTECODE"
    }
    env["PROP_API_KEY"] = API_KEY
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    if bare:
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    env.update(extra or {})
    return env


def run(
    command: Sequence[str],
    cwd: Path,
    env: Mapping[str, str],
    *,
    ok_codes: Sequence[int] = (0,),
) -> tuple[float, subprocess.CompletedProcess[str]]:
    """Wall seconds of one subprocess, and what it printed; exits the script if it failed."""
    elapsed, _, done = run_measured(command, cwd, env, ok_codes=ok_codes)
    return elapsed, done


def run_measured(
    command: Sequence[str],
    cwd: Path,
    env: Mapping[str, str],
    *,
    ok_codes: Sequence[int] = (0,),
) -> tuple[float, float, subprocess.CompletedProcess[str]]:
    """Wall and CPU (user + system) seconds of one subprocess, and what it printed.

    CPU time is what the process itself spent: on a shared machine, time spent waiting for a
    core that another job holds shows in the wall time only.
    """
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        list(command), cwd=cwd, env=dict(env), capture_output=True, text=True, check=False
    )
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode not in ok_codes:
        sys.exit(
            f"command failed ({done.returncode}): {' '.join(command)}\n"
            f"--- stdout ---\n{done.stdout[-4000:]}\n--- stderr ---\n{done.stderr[-4000:]}"
        )
    return elapsed, cpu, done


def alternate(
    variants: Mapping[str, Callable[[], float]], rounds: int, *, unit: str = "s"
) -> dict[str, list[float]]:
    """Run every variant once a round, in an order that rotates each round; their timings.

    Rotating (rather than always the same order) spreads a slow stretch of a noisy machine over
    all the variants instead of charging it to whichever one always runs at the same place.
    """
    names = list(variants)
    times: dict[str, list[float]] = {name: [] for name in names}
    for number in range(rounds):
        shift = number % len(names)
        order = names[shift:] + names[:shift]
        if (number // len(names)) % 2:
            order.reverse()
        for name in order:
            times[name].append(variants[name]())
        line = ", ".join(f"{name} {times[name][-1]:.2f}{unit}" for name in names)
        print(f"  round {number + 1}: {line}", flush=True)
    return times


# -- printing ---------------------------------------------------------------------------------------


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def fmt(values: Sequence[float], digits: int = 2) -> str:
    return ", ".join(f"{value:.{digits}f}" for value in values)


def mark(ok: bool) -> str:
    return "ok" if ok else "MISSED"


def verdict_line(name: str, value: float, target: float, *, at_most: bool = True) -> str:
    """``name: value  (target <= t) ok|MISSED``; the word MISSED is what to grep for."""
    ok = value <= target if at_most else value >= target
    sign = "<=" if at_most else ">="
    return f"{name}: {value:.2f}  (target {sign} {target}) {mark(ok)}"


def machine() -> str:
    """One line about where the figures come from: cores, memory, load, versions."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    memory = "?"
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                memory = f"{int(line.split()[1]) / 2**20:.0f} GiB"
                break
    except OSError:
        pass
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    from importlib.metadata import version

    return (
        f"{cores} cores, {memory}, load average {load}; Python {platform.python_version()}, "
        f"pytest {version('pytest')}, pytest-propositions {version('pytest-propositions')}"
    )


def revision() -> str:
    """The commit measured, and whether the plugin's sources differ from it."""
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        changed = subprocess.run(
            ["git", "status", "--porcelain", "--", "pytest_propositions"],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split("\n")
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"
    dirty = sorted(line[3:] for line in changed if line.strip())
    return commit + (f" + uncommitted changes in {', '.join(dirty)}" if dirty else "")


# -- reading what pytest printed ---------------------------------------------------------------


def summary_line(stdout: str) -> str | None:
    """The plugin's terminal summary line (``propositions: N claims, ...``), if printed."""
    found = _SUMMARY.search(stdout)
    return found.group(0) if found else None


def summary_counts(stdout: str) -> dict[str, float]:
    """The summary line as numbers: claims, judge calls, tokens, judging (seconds), ..."""
    line = summary_line(stdout)
    if line is None:
        return {}
    counts: dict[str, float] = {}
    for part in line.removeprefix("propositions: ").split(", "):
        value, _, name = part.partition(" ")
        if value.startswith("$"):
            name, value = "cost_usd", value[1:]
        name = _SINGULAR.get(name, name)
        try:
            counts[name] = float(value.removesuffix("s"))
        except ValueError:
            continue
    return counts


def import_times(stderr: str) -> dict[str, tuple[int, int, str]]:
    """module -> (self us, cumulative us, importer) from ``-X importtime`` output.

    importtime prints a module's own imports before it, one level deeper, so a module's
    importer is the first later line that is less deeply indented.
    """
    rows: list[tuple[str, int, int, int]] = []
    for line in stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        fields = line[len("import time:") :].split("|")
        if len(fields) != 3:
            continue
        name = fields[2].rstrip()
        depth = len(name) - len(name.lstrip())
        rows.append((name.strip(), depth, int(fields[0]), int(fields[1])))
    found: dict[str, tuple[int, int, str]] = {}
    for index, (module, depth, own, cumulative) in enumerate(rows):
        importer = next((row[0] for row in rows[index + 1 :] if row[1] < depth), "-")
        found[module] = (own, cumulative, importer)
    return found
