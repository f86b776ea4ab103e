"""docs/architecture.md's list of rules and their one home names homes that exist and tests that
pin them: the list is drawn from the code, and a home moved without it fails here."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "architecture.md"


def _rows() -> list[tuple[str, str, str]]:
    text = PAGE.read_text(encoding="utf-8")
    section = text.split("## Rules and their one home", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0] not in ("rule", "---"):
            rows.append((cells[0], cells[1], cells[2]))
    return rows


def _resolve(name: str) -> bool:
    """Whether ``judging/endpoint.KEY_VARIABLE``, ``verdict.passes_bar`` or a bare module
    (``trace/notation``) names something in the package; a bare later name (``SCORE``) in a cell
    is read in the module named before it."""
    parts = name.replace("/", ".").split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module("pytest_propositions." + ".".join(parts[:cut]))
        except ImportError:
            continue
        for part in parts[cut:]:
            if not hasattr(found, part):
                return False
            found = getattr(found, part)
        return True
    return False


def _is_module(dotted: str) -> bool:
    try:
        importlib.import_module(f"pytest_propositions.{dotted}")
    except ImportError:
        return False
    return True


def test_the_rules_list_names_homes_that_exist() -> None:
    rows = _rows()
    assert len(rows) >= 20
    for rule, home, _ in rows:
        names = re.findall(r"`([^`]+)`", home)
        assert names, rule
        module = ""
        for name in names:
            name = name.split("(")[0]
            if "." in name or "/" in name:
                assert _resolve(name), f"{rule}: {name} is not in the package"
                dotted = name.replace("/", ".")
                module = dotted if _is_module(dotted) else dotted.rpartition(".")[0]
            else:  # a further name of the module named before it, or a module's attribute
                assert _resolve(f"{module}.{name}") or _resolve(name), f"{rule}: {name}"


def test_the_rules_list_names_tests_that_exist() -> None:
    for rule, _, tests in _rows():
        files = re.findall(r"`(tests/[^`]+\.py)`", tests)
        assert files, rule
        for file in files:
            assert (ROOT / file).is_file(), f"{rule}: {file}"


def test_the_resolver_refuses_a_name_that_moved() -> None:
    assert _resolve("verdict.passes_bar")
    assert _resolve("judging/endpoint.KEY_VARIABLE")
    assert _resolve("trace/notation")
    assert not _resolve("verdict.passes_the_bar")
    assert not _resolve("judging/families.PROVIDER_ENV")
