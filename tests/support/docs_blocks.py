"""The fenced code blocks of the documentation pages (docs/*.md), and what each one asks of a run.

A block is run by ``tests/test_docs_examples.py``. What decides how:

- ```` ```python title="NAME" ```` (or ``ini``/``toml`` with a title) is a file of the page's
  project, written under that name; a Python file whose name starts with ``test_`` is then run
  with pytest. A ``conftest.py`` replaces the one the project started with.
- ```` ```python ```` with no title is a test file when it defines ``test_`` functions, else a
  script run with Python.
- ```` ```bash ```` is run one command (line) at a time in the project's folder: ``pytest ...``
  inline, anything else by ``bash -euo pipefail``; the first failing command ends the block.
- Other languages (``text``, ``json``, ``yaml``, ``sql``, untitled ``ini``) are shown, not run.

HTML comments on the lines right above a block (invisible on the site) adjust its run:

- ``<!-- not-run: REASON -->``: the block cannot run here (it installs packages, needs a
  provider's key); the reason is required and the number of such blocks is kept small;
- ``<!-- expect-exit: N -->``: the block's run must end with exit status N (default 0);
- ``<!-- judge-false: TEXT -->``: from this block on, the scripted judge answers false (a check)
  or 2 (a score) to a claim whose request contains TEXT;
- ``<!-- judge-reasoning: LEVELS -->``: for this block the scripted judge behaves as an OpenAI
  reasoning model taking these effort levels (comma-separated).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
DOCS = ROOT / "docs"

RUN_LANGUAGES = ("python", "bash")
FILE_LANGUAGES = ("python", "ini", "toml")
SHOWN_LANGUAGES = ("text", "json", "yaml", "ini", "toml", "sql", "")
DIRECTIVES = ("not-run", "expect-exit", "judge-false", "judge-reasoning")

_FENCE = re.compile(r"^```(?P<lang>[\w-]*)(?P<info>[^\n]*)\n(?P<code>.*?)^```[ \t]*$", re.M | re.S)
_TITLE = re.compile(r'title="([^"]+)"')
_COMMENT = re.compile(r"^<!--\s*([\w-]+)\s*:\s*(.*?)\s*-->$")


@dataclass(frozen=True)
class Block:
    page: str
    line: int
    lang: str
    title: str | None
    code: str
    directives: dict[str, list[str]] = field(default_factory=dict)

    @property
    def where(self) -> str:
        return f"docs/{self.page}:{self.line}"

    @property
    def not_run(self) -> str | None:
        reasons = self.directives.get("not-run")
        return reasons[0] if reasons else None

    @property
    def expected_exit(self) -> int:
        values = self.directives.get("expect-exit")
        return int(values[0]) if values else 0

    @property
    def is_test_file(self) -> bool:
        if self.lang != "python":
            return False
        if self.title is not None:
            return Path(self.title).name.startswith("test_")
        return re.search(r"^\s*(async\s+)?def test_", self.code, re.M) is not None


def _directives_above(lines: list[str], fence_index: int, where: str) -> dict[str, list[str]]:
    """The HTML comment lines directly above the fence (no blank line between)."""
    found: dict[str, list[str]] = {}
    index = fence_index - 1
    while index >= 0 and lines[index].startswith("<!--"):
        match = _COMMENT.match(lines[index].strip())
        if match and match.group(1) in DIRECTIVES:
            found.setdefault(match.group(1), []).append(match.group(2))
        elif match and match.group(1) not in DIRECTIVES and "-" in match.group(1):
            raise ValueError(f"{where}: unknown directive {match.group(1)!r}")
        index -= 1
    return found


def page_blocks(path: Path) -> list[Block]:
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    blocks = []
    for match in _FENCE.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        where = f"docs/{path.name}:{line}"
        title = _TITLE.search(match.group("info"))
        blocks.append(
            Block(
                page=path.name,
                line=line,
                lang=match.group("lang"),
                title=title.group(1) if title else None,
                code=match.group("code"),
                directives=_directives_above(lines, line - 1, where),
            )
        )
    return blocks


def pages() -> list[Path]:
    return sorted(DOCS.glob("*.md"))


def all_blocks() -> list[Block]:
    return [block for page in pages() for block in page_blocks(page)]
