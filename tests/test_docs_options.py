"""The options reference is generated from settings.OPTIONS into docs/options.md and names every
option pytest knows; the pages' generated parts are up to date."""

from __future__ import annotations

import dataclasses
import importlib.util
import re
from pathlib import Path
from types import ModuleType, SimpleNamespace

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


def options_page() -> str:
    return OPTIONS_PAGE.read_text(encoding="utf-8")


def registered_names(pytester: pytest.Pytester) -> tuple[set[str], set[str]]:
    """The plugin's flags and ini names as pytest's parser registered them (``pytest --help``)."""
    result = pytester.runpytest("--help", "-p", "no:cacheprovider")
    help_text = result.stdout.str()
    flags = set(re.findall(r"(--prop-[a-z][a-z-]*)", help_text))
    ini_names = set(re.findall(r"^\s+(prop_[a-z_]+)\s", help_text, flags=re.M))
    return flags, ini_names


def help_heading(help_text: str) -> str:
    """The heading ``pytest --help`` shows above the plugin's flags: the last line before the
    first ``--prop-`` flag that ends with ":" and is not indented."""
    before = help_text.split("  --prop-", 1)[0].splitlines()
    return [line for line in before if line.endswith(":") and not line.startswith(" ")][-1]


def test_the_page_names_the_help_heading_as_pytest_shows_it(pytester: pytest.Pytester) -> None:
    """Whoever looks for the options in ``pytest --help`` finds the words the page gives."""
    heading = help_heading(pytester.runpytest("--help", "-p", "no:cacheprovider").stdout.str())
    assert "pytest-propositions" in heading  # the plugin's group, not some other
    page = OPTIONS_PAGE.read_text(encoding="utf-8")
    assert f"`pytest --help` lists these under `{heading}`" in page, heading


def test_the_generated_parts_of_the_pages_are_up_to_date() -> None:
    """docs/options.md holds the options table and docs/cache.md the CI recipe, as GitHub shows
    them: each as its source gives it now."""
    hooks = load_hooks()
    stale = hooks.stale_pages()
    assert not stale, f"out of date with their sources: {stale}; run `{hooks.REGENERATE}`"
    assert hooks.options_table() in OPTIONS_PAGE.read_text(encoding="utf-8")
    recipe = (ROOT / "conftest_examples" / "ci.yml").read_text(encoding="utf-8")
    assert recipe.strip() in (ROOT / "docs" / "cache.md").read_text(encoding="utf-8")


def test_a_stale_part_is_found_and_written_anew() -> None:
    hooks = load_hooks()
    page = OPTIONS_PAGE.read_text(encoding="utf-8")
    stale = page.replace("| `--prop-model=MODEL` |", "| `--prop-modle=MODEL` |")
    assert stale != page and hooks.regenerate("options.md", stale) == page


def test_the_site_build_refuses_a_stale_page_and_unlinks_links_out_of_docs() -> None:
    """The hook MkDocs runs on each page: a stale generated part stops the build with the
    command that fixes it; a link to a file outside docs/ (which the site lacks) keeps its text."""
    exceptions = pytest.importorskip("mkdocs.exceptions", reason="the docs extra is not installed")
    hooks = load_hooks()

    def page(name: str) -> SimpleNamespace:
        return SimpleNamespace(file=SimpleNamespace(src_uri=name))

    current = OPTIONS_PAGE.read_text(encoding="utf-8")
    assert hooks.on_page_markdown(current, page("options.md"), None, None) == current
    stale = current.replace("| `--prop-model=MODEL` |", "| `--prop-modle=MODEL` |")
    with pytest.raises(exceptions.PluginError, match=r"run `python docs/hooks\.py`"):
        hooks.on_page_markdown(stale, page("options.md"), None, None)
    link = "See [`bench/README.md`](../bench/README.md) and [Judges](judges.md)."
    assert hooks.on_page_markdown(link, page("speed.md"), None, None) == (
        "See `bench/README.md` and [Judges](judges.md)."
    )


def test_no_page_includes_a_file_the_repository_view_cannot_show() -> None:
    """GitHub shows a page's Markdown as it is: no snippet include and no marker left for the
    build to fill."""
    for page in sorted((ROOT / "docs").glob("*.md")):
        text = page.read_text(encoding="utf-8")
        assert "--8<--" not in text, page.name
        assert "<!-- options-table -->" not in text, page.name


def test_every_option_of_the_table_is_on_the_page() -> None:
    page = options_page()
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
    page = options_page()
    missing = sorted(name for name in flags | ini_names if f"`{name}" not in page)
    assert not missing, f"registered with pytest but missing from docs/options.md: {missing}"


def test_a_page_that_lost_its_markers_is_an_error() -> None:
    with pytest.raises(ValueError, match="lost its markers"):
        load_hooks().regenerate("options.md", "# Options reference\n")


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
