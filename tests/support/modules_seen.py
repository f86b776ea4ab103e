"""Which modules of the package a test run loads: the check that the fast tier reaches them all.

With ``TESTS_MODULES_SEEN`` naming a folder, each test process (the controller and every xdist
worker) writes there, at the end of its session, the package modules it loaded: an audit hook
sees each first import, so a module an inner pytester run loaded counts even after pytester
took it out of ``sys.modules`` again. Then ``python -m tests.support.modules_seen FOLDER`` lists
the modules no process loaded, and fails if there is one. It counts loading, not lines run.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

FOLDER_VARIABLE = "TESTS_MODULES_SEEN"
PACKAGE = Path(__file__).resolve().parents[2] / "pytest_propositions"

_seen: set[str] = set()


def _on_event(event: str, args: tuple[Any, ...]) -> None:
    if event == "import" and str(args[0]).startswith(PACKAGE.name):
        _seen.add(str(args[0]))


def record() -> None:
    """From now on, note each package module this process imports (and those it already has)."""
    _seen.update(name for name in sys.modules if name.startswith(PACKAGE.name))
    sys.addaudithook(_on_event)


def write() -> None:
    """This process's modules, into the folder the environment names (when it names one)."""
    folder = os.environ.get(FOLDER_VARIABLE)
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        names = "\n".join(sorted(_seen))
        (Path(folder) / f"{os.getpid()}.txt").write_text(names + "\n", encoding="utf-8")


def package_modules() -> set[str]:
    """Every module of the package, by its dotted name (a package by its own)."""
    names = set()
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        names.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def never_loaded(folder: Path) -> list[str]:
    loaded = {line for path in folder.glob("*.txt") for line in path.read_text().split()}
    return sorted(package_modules() - loaded)


def main(argv: list[str]) -> int:
    missing = never_loaded(Path(argv[0]))
    print(f"{len(package_modules())} modules; never loaded by the run: {missing or 'none'}")
    return 1 if missing else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
