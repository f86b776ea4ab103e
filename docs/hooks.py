"""The docs pages' generated parts, and the MkDocs hook that checks them.

Pages are read on GitHub as well as on the site, so what they show is written into the
Markdown files themselves: the options table (from the one options table in
``pytest_propositions/settings.py``) and files shown whole (``conftest_examples/ci.yml``), each
between two HTML comments. ``python docs/hooks.py`` writes them; the site build (this file is
MkDocs' hook, see mkdocs.yml) and ``tests/test_docs_options.py`` fail while a page is out of
date. The site holds only ``docs/``: a link out of it (``../bench/README.md``) shows as its text.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
REGENERATE = "python docs/hooks.py"
OPTIONS_SOURCE = "pytest_propositions/settings.py"
# The files a page shows whole: page -> (file, the code block's language).
SHOWN_FILES = {"cache.md": [("conftest_examples/ci.yml", "yaml")]}
# "[text](../path)": a link out of docs/, which only the repository has.
_OUT_OF_DOCS = re.compile(r"\[([^\]]+)\]\(\.\./[^)\s]+\)")


def _begin(source: str) -> str:
    return f"<!-- generated from {source} by `{REGENERATE}`: do not edit by hand -->"


def _end(source: str) -> str:
    return f"<!-- end of what {source} generates -->"


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


def _shown_file(path: str, language: str) -> str:
    text = (ROOT / path).read_text(encoding="utf-8").rstrip("\n")
    return f'```{language} title="{path}"\n{text}\n```'


def generated_parts(page: str) -> dict[str, str]:
    """What a page holds between its markers, by source: ``{}`` for a page with none."""
    parts = {}
    if page == "options.md":
        parts[OPTIONS_SOURCE] = options_table()
    for path, language in SHOWN_FILES.get(page, []):
        parts[path] = _shown_file(path, language)
    return parts


def regenerate(page: str, markdown: str) -> str:
    """The page with each generated part written anew between its markers; ValueError naming
    a marker that is gone."""
    for source, text in generated_parts(page).items():
        begin, end = _begin(source), _end(source)
        if markdown.count(begin) != 1 or markdown.count(end) != 1:
            raise ValueError(f"docs/{page} lost its markers for {source}: {begin} ... {end}")
        head, rest = markdown.split(begin)
        _, tail = rest.split(end)
        markdown = f"{head}{begin}\n\n{text}\n\n{end}{tail}"
    return markdown


def stale_pages() -> list[str]:
    """The pages whose generated parts differ from what their sources give now."""
    stale = []
    for page in sorted({"options.md", *SHOWN_FILES}):
        markdown = (DOCS / page).read_text(encoding="utf-8")
        if regenerate(page, markdown) != markdown:
            stale.append(f"docs/{page}")
    return stale


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    from mkdocs.exceptions import PluginError

    name = page.file.src_uri
    try:
        current = regenerate(name, markdown)
    except ValueError as error:
        raise PluginError(str(error)) from None
    if current != markdown:
        raise PluginError(f"docs/{name} is out of date with its sources: run `{REGENERATE}`")
    return _OUT_OF_DOCS.sub(r"\1", markdown)


def main() -> int:
    """Write every page's generated parts; print the pages that changed."""
    sys.path.insert(0, str(ROOT))
    for page in sorted({"options.md", *SHOWN_FILES}):
        path = DOCS / page
        markdown = path.read_text(encoding="utf-8")
        current = regenerate(page, markdown)
        if current != markdown:
            path.write_text(current, encoding="utf-8")
            print(f"wrote docs/{page}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
