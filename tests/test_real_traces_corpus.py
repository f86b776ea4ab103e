"""The corpus of real traces says where every file comes from (issue 50).

Both folders of tests/data/real_traces/ keep a SOURCES.md whose file table gives, for each file,
the public repository it comes from, the path there and the commit read. A trace whose source
is not written down cannot be checked or made again, so a file without its row, a row without a
40-hex commit or a row naming a missing file is a failure; so is a corpus grown too narrow
(fewer than 20 files, or fewer than 6 repositories).
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import pytest

REAL_TRACES = Path(__file__).parent / "data" / "real_traces"
FOLDERS = (REAL_TRACES / "messages", REAL_TRACES / "otel")
MIN_FILES = 20
MIN_REPOSITORIES = 6

_COMMIT = re.compile(r"[0-9a-f]{40}")
_SEPARATOR = re.compile(r"\|\s*:?-{3,}")
_REPOSITORY = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")


@dataclass(frozen=True)
class Row:
    files: tuple[str, ...]
    repository: str
    path: str
    commit: str


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split(" | ")]


def _cell(cells: list[str], index: int | None) -> str:
    return cells[index] if index is not None and index < len(cells) else ""


def _column(header: list[str], *names: str) -> int | None:
    for i, title in enumerate(header):
        if any(title.lower().startswith(name) for name in names):
            return i
    return None


def file_rows(sources: str) -> list[Row]:
    """The rows of every table of SOURCES.md that has a file column, as written."""
    rows: list[Row] = []
    lines = sources.splitlines()
    for i, line in enumerate(lines[:-1]):
        if not (line.startswith("|") and _SEPARATOR.match(lines[i + 1])):
            continue
        if i > 0 and lines[i - 1].startswith("|"):
            continue  # not a header: a row of the table above
        header = _cells(line)
        at = _column(header, "file")
        if at is None:
            continue
        columns = [_column(header, name) for name in ("repository", "source repository")]
        repository_at = next((c for c in columns if c is not None), None)
        path_at, commit_at = _column(header, "path"), _column(header, "commit")
        for row_line in lines[i + 2 :]:
            if not row_line.startswith("|"):
                break
            cells = _cells(row_line)
            cell = partial(_cell, cells)
            named = re.findall(r"`([^`]+\.json)`", cell(at)) or [cell(at).strip("`")]
            repository = _REPOSITORY.search(cell(repository_at))
            path = next((p for p in re.findall(r"`([^`]+)`", cell(path_at)) if "/" in p), "")
            rows.append(
                Row(
                    files=tuple(named),
                    repository=repository.group(0) if repository else "",
                    path=path,
                    commit=cell(commit_at).strip("`"),
                )
            )
    return rows


def problems(folders: tuple[Path, ...]) -> list[str]:
    """Every way the folders' corpus falls short of saying where its files come from."""
    found: list[str] = []
    files: list[Path] = []
    repositories: set[str] = set()
    for folder in folders:
        rows = file_rows((folder / "SOURCES.md").read_text(encoding="utf-8"))
        listed: dict[str, Row] = {}
        for row in rows:
            for name in row.files:
                listed[name] = row
                if not (folder / name).is_file():
                    found.append(f"{folder.name}: the row of {name} names no file here")
            if not row.repository:
                found.append(f"{folder.name}: the row of {row.files} has no owner/name repository")
            if not row.path or row.path.startswith("."):
                found.append(f"{folder.name}: the row of {row.files} has no path")
            if not _COMMIT.fullmatch(row.commit):
                found.append(f"{folder.name}: the row of {row.files} has no 40-hex commit")
            repositories.add(row.repository.lower())
        for corpus_file in sorted(folder.glob("*.json")):
            files.append(corpus_file)
            if corpus_file.name not in listed:
                found.append(f"{folder.name}: {corpus_file.name} has no row in SOURCES.md")
    if len(files) < MIN_FILES:
        found.append(f"{len(files)} files, fewer than {MIN_FILES}")
    repositories.discard("")
    if len(repositories) < MIN_REPOSITORIES:
        found.append(f"{len(repositories)} repositories, fewer than {MIN_REPOSITORIES}")
    return found


def test_every_real_trace_has_its_source_and_the_corpus_is_wide_enough() -> None:
    assert problems(FOLDERS) == []
    rows = [row for folder in FOLDERS for row in file_rows((folder / "SOURCES.md").read_text())]
    assert len({row.repository.lower() for row in rows}) >= MIN_REPOSITORIES
    assert sum(len(list(folder.glob("*.json"))) for folder in FOLDERS) >= MIN_FILES


@pytest.fixture
def corpus_copy(tmp_path: Path) -> tuple[Path, ...]:
    """A copy of both folders' data and SOURCES.md, to break one way at a time."""
    copies = []
    for folder in FOLDERS:
        copy = tmp_path / folder.name
        copy.mkdir()
        for item in [*folder.glob("*.json"), folder / "SOURCES.md"]:
            shutil.copy(item, copy / item.name)
        copies.append(copy)
    assert problems(tuple(copies)) == []
    return tuple(copies)


def _edit(sources: Path, old: str, new: str) -> None:
    text = sources.read_text(encoding="utf-8")
    assert old in text
    sources.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_a_file_without_its_row_is_found(corpus_copy: tuple[Path, ...]) -> None:
    messages = corpus_copy[0]
    (messages / "home_made.json").write_text("[]\n", encoding="utf-8")
    assert problems(corpus_copy) == ["messages: home_made.json has no row in SOURCES.md"]


def test_a_row_without_a_full_commit_is_found(corpus_copy: tuple[Path, ...]) -> None:
    otel = corpus_copy[1]
    full = "| 4fda38988f2939fa6ea9cdefcf120693e10ef491 | pydantic-ai-slim 2.68.0, `version=3`"
    _edit(
        otel / "SOURCES.md",
        full,
        full.replace("4fda38988f2939fa6ea9cdefcf120693e10ef491", "4fda389"),
    )
    assert problems(corpus_copy) == [
        "otel: the row of ('pydantic_ai_v3.json',) has no 40-hex commit"
    ]


def test_a_row_without_a_repository_or_path_is_found(corpus_copy: tuple[Path, ...]) -> None:
    sources = corpus_copy[0] / "SOURCES.md"
    _edit(sources, "| simonw/llm-gemini | `tests/cassettes", "| simonw | tests/cassettes")
    found = problems(corpus_copy)
    assert found == [
        "messages: the row of ('llm_gemini_tools_thought_signatures.json',) has no owner/name "
        "repository",
        "messages: the row of ('llm_gemini_tools_thought_signatures.json',) has no path",
    ]


def test_a_row_naming_a_missing_file_is_found(corpus_copy: tuple[Path, ...]) -> None:
    (corpus_copy[0] / "crewai_native_tool_calling_error.json").unlink()
    assert problems(corpus_copy) == [
        "messages: the row of crewai_native_tool_calling_error.json names no file here"
    ]


def test_a_corpus_too_narrow_is_found() -> None:
    # The OpenTelemetry exports alone: 17 files from three repositories.
    assert problems(FOLDERS[1:]) == ["17 files, fewer than 20", "3 repositories, fewer than 6"]
