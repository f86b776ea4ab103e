"""MkDocs hooks: the options reference is written from ``settings.OPTIONS`` at build time.

``docs/options.md`` holds the marker below where the table goes; the table comes from the one
options table in ``pytest_propositions/settings.py``, so the page cannot drift from the code.
``tests/test_docs_options.py`` renders it the same way and checks every option is on the page.
"""

from __future__ import annotations

from typing import Any

OPTIONS_MARKER = "<!-- options-table -->"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _default(option: Any) -> str:
    if option.default is not None:
        return f"`{option.default}`"
    return "off" if option.is_switch else "not set"


def options_table() -> str:
    """The options reference as a Markdown table: flag, ini, env, default, help."""
    from pytest_propositions.settings import OPTIONS

    rows = [
        "| flag | ini | env | default | what it does |",
        "| --- | --- | --- | --- | --- |",
    ]
    for option in OPTIONS:
        flag = f"`{option.flag}`" if option.is_switch else f"`{option.flag}={option.metavar}`"
        env = f"`{option.env}`" if option.env else ""
        rows.append(
            f"| {flag} | `{option.ini}` | {env} | {_default(option)} | {_cell(option.help)} |"
        )
    return "\n".join(rows)


def render_options_page(markdown: str) -> str:
    """The page's Markdown with the marker replaced by the table; an error if the marker is gone."""
    if OPTIONS_MARKER not in markdown:
        raise ValueError(f"docs/options.md lost its {OPTIONS_MARKER} marker")
    return markdown.replace(OPTIONS_MARKER, options_table())


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if page.file.src_uri == "options.md":
        return render_options_page(markdown)
    return markdown
