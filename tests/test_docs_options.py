"""The options reference is generated from settings.OPTIONS and names every option pytest knows."""

from __future__ import annotations

import dataclasses
import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest

from pytest_propositions.claims.options import OPTION_NAMES
from pytest_propositions.settings import OPTIONS, Settings

ROOT = Path(__file__).resolve().parent.parent
HOOKS = ROOT / "docs" / "hooks.py"
OPTIONS_PAGE = ROOT / "docs" / "options.md"


def load_hooks() -> ModuleType:
    """docs/hooks.py, the file mkdocs.yml names under ``hooks:`` (it is not a package module)."""
    spec = importlib.util.spec_from_file_location("docs_hooks", HOOKS)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def rendered_options_page() -> str:
    return str(load_hooks().render_options_page(OPTIONS_PAGE.read_text(encoding="utf-8")))


def registered_names(pytester: pytest.Pytester) -> tuple[set[str], set[str]]:
    """The plugin's flags and ini names as pytest's parser registered them (``pytest --help``)."""
    result = pytester.runpytest("--help", "-p", "no:cacheprovider")
    help_text = result.stdout.str()
    flags = set(re.findall(r"(--prop-[a-z][a-z-]*)", help_text))
    ini_names = set(re.findall(r"^\s+(prop_[a-z_]+)\s", help_text, flags=re.M))
    return flags, ini_names


def test_every_option_of_the_table_is_on_the_page() -> None:
    page = rendered_options_page()
    for option in OPTIONS:
        rows = [
            line
            for line in page.splitlines()
            if line.startswith((f"| `{option.flag}=", f"| `{option.flag}`"))
        ]
        row = rows[0] if len(rows) == 1 else None
        assert row is not None, f"{option.flag} is missing from the options reference"
        assert f"`{option.ini}`" in row, f"{option.ini} is missing from {option.flag}'s row"
        if option.env:
            assert f"`{option.env}`" in row, f"{option.env} is missing from {option.flag}'s row"
        if option.default is not None:
            assert f"`{option.default}`" in row, f"{option.flag}'s default is not in its row"
        assert option.help.split(" (")[0][:40] in row.replace("\\|", "|")


def test_every_option_pytest_registered_is_on_the_page(pytester: pytest.Pytester) -> None:
    flags, ini_names = registered_names(pytester)
    # The plugin registers the table's options: the check below is not vacuous.
    assert {option.flag for option in OPTIONS} <= flags
    assert {option.ini for option in OPTIONS} <= ini_names
    page = rendered_options_page()
    missing = sorted(name for name in flags | ini_names if f"`{name}" not in page)
    assert not missing, f"registered with pytest but missing from docs/options.md: {missing}"


def test_the_page_keeps_its_marker() -> None:
    hooks = load_hooks()
    assert hooks.OPTIONS_MARKER in OPTIONS_PAGE.read_text(encoding="utf-8")
    with pytest.raises(ValueError, match="marker"):
        hooks.render_options_page("# Options reference\n")


def test_settings_are_the_table() -> None:
    """Settings has a field per option of the table, in its order, whose default is the table's
    default parsed: a default is written once, and the two cannot drift apart."""
    names = [option.name for option in OPTIONS]
    fields = [field for field in dataclasses.fields(Settings) if field.name in names]
    assert [field.name for field in fields] == names
    for field, option in zip(fields, OPTIONS, strict=True):
        assert field.default == option.default_value(), option.name
    extras = {field.name for field in dataclasses.fields(Settings)} - set(names)
    assert extras == {"judge_source", "api_key_env"}
    assert Settings().dry_run is False and Settings().min_score == 7


def test_every_claim_option_has_its_row_in_the_claims_page() -> None:
    """A claim option is one field of ClaimOptions and one row of docs/claims.md's list."""
    page = (ROOT / "docs" / "claims.md").read_text(encoding="utf-8")
    section = page.split("## Options of a claim", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("- `")]
    for name in OPTION_NAMES:
        assert any(f"`{name}`" in row.split(":", 1)[0] for row in rows), name
