"""What anyio's pytest plugin costs a pytest start, next to what this plugin costs it.

pytest-propositions depends on httpx, which depends on anyio, and anyio registers a pytest
plugin (entry point ``anyio = anyio.pytest_plugin``): installing this package loads it in every
pytest run of that environment, whatever the suite. This plugin does not turn it off (it leaves
its host alone: another package's plugin is the user's to keep or drop, with ``-p no:anyio``).

In one run this script writes a one-test suite and times, in rounds whose order rotates, the CPU
(user + system) of ``python -m pytest -q`` in these variants:

- ``as installed``: every installed plugin;
- ``-p no:anyio``: without anyio's plugin;
- ``-p no:propositions``: without this one;
- ``-p no:anyio -p no:propositions``: without either.

It prints each variant's min / median / max and each round's ratio to ``as installed`` (min /
median / max over the rounds), and the import time of ``anyio.pytest_plugin`` alone
(``-X importtime``, median of several processes).

    python bench/anyio_startup.py [--rounds 21]

It is not a test and CI does not run it.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench._common import environment, import_times, machine, run_measured  # noqa: E402

VARIANTS = {
    "as installed": [],
    "-p no:anyio": ["-p", "no:anyio"],
    "-p no:propositions": ["-p", "no:propositions"],
    "-p no:anyio -p no:propositions": ["-p", "no:anyio", "-p", "no:propositions"],
}


def spread(values: Sequence[float], digits: int = 3) -> str:
    low, mid, high = min(values), statistics.median(values), max(values)
    return f"min {low:.{digits}f} / median {mid:.{digits}f} / max {high:.{digits}f}"


def plugin_import_ms(repeats: int) -> float:
    """Median cumulative import time of anyio.pytest_plugin in a fresh process (pytest's own
    modules are imported first, as they are when pytest loads the plugin)."""
    times = []
    for _ in range(repeats):
        done = subprocess.run(
            [
                sys.executable,
                "-X",
                "importtime",
                "-c",
                "import pytest, _pytest.fixtures, _pytest.python; import anyio.pytest_plugin",
            ],
            capture_output=True,
            text=True,
            check=True,
            env=environment(),
        )
        times.append(import_times(done.stderr)["anyio.pytest_plugin"][1] / 1000)
    return statistics.median(times)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=21, help="rounds (21)")
    args = parser.parse_args(argv)
    print(f"machine: {machine()}")
    with tempfile.TemporaryDirectory(prefix="prop-bench-") as temp:
        suite = Path(temp)
        (suite / "pytest.ini").write_text("[pytest]\n")
        (suite / "test_one.py").write_text("def test_one():\n    assert True\n")
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        env = environment()
        names = list(VARIANTS)
        for name in names:  # bytecode caches written once
            run_measured([*command, *VARIANTS[name], str(suite)], suite, env)
        cpu: dict[str, list[float]] = {name: [] for name in names}
        for number in range(args.rounds):
            shift = number % len(names)
            for name in names[shift:] + names[:shift]:
                _, spent, _ = run_measured([*command, *VARIANTS[name], str(suite)], suite, env)
                cpu[name].append(spent)
    print(f"== CPU seconds of a one-test pytest run, {args.rounds} rounds")
    for name, values in cpu.items():
        print(f"{name:<34} {spread(values)}")
    print("== each round's ratio to 'as installed'")
    for name in names[1:]:
        ratios = [a / b for a, b in zip(cpu["as installed"], cpu[name], strict=True)]
        print(f"as installed / {name:<31} {spread(ratios)}")
    print(f"anyio.pytest_plugin's import (cumulative, median): {plugin_import_ms(7):.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
