"""``python -m pytest_propositions cache ...`` run as a user would, in a subprocess."""

from __future__ import annotations

import errno
import json
import os
import stat
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from pytest_propositions import checks
from pytest_propositions.cli.main import main
from pytest_propositions.store.cache import VerdictCache, canonical_json
from pytest_propositions.store.location import (
    CacheFolder,
    configured_folder,
    default_folder,
    folder_problem,
)
from tests.support.records import keyed
from tests.support.records import line as kept_line


def record(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "model": "openai/gpt-4.1-mini",
        "recorded_at": "2025-03-01T12:00:00+00:00",
        "claim": "Oscar mentions his travel preferences.",
        "kind": "check",
        "verdict": {
            "kind": "check",
            "claim": "Oscar mentions his travel preferences.",
            "value": True,
            "justification": "Turn 2.",
        },
        "plugin_version": "0.1.0",
        "usage": {"prompt_tokens": 10, "completion_tokens": 5},
        "cost_usd": None,
        "raw_reply": "{}",
    }
    base.update(overrides)
    return base


# The model `filled` records each numbered request with (a kept request's key names its model).
FILLED_MODELS = {1: "a", 2: "a", 3: "b"}


def key(n: int) -> str:
    """The key of the request numbered ``n``, as `filled` stores it."""
    return keyed(n, record(model=FILLED_MODELS.get(n, "openai/gpt-4.1-mini")))[0]


def cli(
    *args: str, cwd: Path, stdin: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k != "PROP_CACHE_DIR"}
    environ.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "pytest_propositions", *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        env=environ,
        timeout=120,
    )


def assert_clean_error(result: subprocess.CompletedProcess[str], *fragments: str) -> None:
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("error: ")
    for fragment in fragments:
        assert fragment in result.stderr


@pytest.fixture
def filled(tmp_path: Path) -> Path:
    directory = tmp_path / "verdicts"
    cache = VerdictCache(directory)
    cache.put(*keyed(1, record(model="a", recorded_at="2025-01-01T00:00:00+00:00")))
    cache.put(*keyed(2, record(model="a", recorded_at="2025-02-01T00:00:00+00:00")))
    cache.put(*keyed(3, record(model="b", recorded_at="2025-03-01T00:00:00+00:00")))
    cache.close()
    return directory


def test_help_names_the_commands_and_the_default(tmp_path: Path) -> None:
    top = cli("--help", cwd=tmp_path)
    assert top.returncode == 0 and "cache" in top.stdout
    sub = cli("cache", "--help", cwd=tmp_path)
    assert sub.returncode == 0
    for word in ("stats", "export", "import", "prune", "clear", "PROP_CACHE_DIR"):
        assert word in sub.stdout
    assert ".propositions at the project's root" in " ".join(sub.stdout.split())


def test_no_command_is_a_usage_error(tmp_path: Path) -> None:
    result = cli("cache", cwd=tmp_path)
    assert result.returncode == 2 and "usage:" in result.stderr


def test_stats(filled: Path, tmp_path: Path) -> None:
    result = cli("cache", "stats", "--cache-dir", str(filled), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert f"directory: {filled}" in lines
    assert "entries: 3" in lines
    assert any(line.startswith("size: ") for line in lines)
    assert "  a: 2" in lines and "  b: 1" in lines
    assert "oldest: 2025-01-01T00:00:00+00:00" in lines
    assert "newest: 2025-03-01T00:00:00+00:00" in lines
    assert "last run that recorded usage: none since the cache was created or last pruned" in lines


def test_cache_dir_before_the_action(filled: Path, tmp_path: Path) -> None:
    result = cli("cache", "--cache-dir", str(filled), "stats", cwd=tmp_path)
    assert result.returncode == 0 and "entries: 3" in result.stdout


def test_default_dir_is_the_projects_own_folder(tmp_path: Path) -> None:
    VerdictCache(tmp_path / ".propositions").put(key(1), record())
    result = cli("cache", "stats", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert f"directory: {tmp_path / '.propositions'}" in result.stdout.splitlines()
    assert "entries: 1" in result.stdout
    assert result.stderr == ""  # the working directory is the project's root: nothing to say


@pytest.mark.parametrize(
    ("config_file", "text"),
    [
        ("pytest.ini", "[pytest]\n"),
        ("pyproject.toml", "[tool.pytest.ini_options]\naddopts = '-q'\n"),
        ("tox.ini", "[tox]\n[pytest]\n"),
        ("setup.cfg", "[metadata]\nname = x\n[tool:pytest]\n"),
    ],
)
def test_from_a_subfolder_the_projects_cache_is_found(
    tmp_path: Path, config_file: str, text: str
) -> None:
    """The commands find the project's root as pytest does, and say which folder they read."""
    (tmp_path / config_file).write_text(text)
    VerdictCache(tmp_path / ".propositions").put(key(1), record())
    deep = tmp_path / "tests" / "unit"
    deep.mkdir(parents=True)
    # A tox.ini without pytest's section further down does not make a root.
    (tmp_path / "tests" / "tox.ini").write_text("[tox]\n")
    result = cli("cache", "stats", cwd=deep)
    assert result.returncode == 0, result.stderr
    assert f"directory: {tmp_path / '.propositions'}" in result.stdout.splitlines()
    assert "entries: 1" in result.stdout
    assert result.stderr.splitlines() == [
        f"the verdict cache of the project at {tmp_path} (its {config_file}): "
        f"{tmp_path / '.propositions'}"
    ]


def test_from_a_subfolder_the_projects_ini_cache_dir_is_read(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\nprop_cache_dir = verdicts\n")
    VerdictCache(tmp_path / "verdicts").put(key(1), record())
    (tmp_path / "sub").mkdir()
    result = cli("cache", "stats", cwd=tmp_path / "sub")
    assert result.returncode == 0, result.stderr
    assert f"directory: {tmp_path / 'verdicts'}" in result.stdout.splitlines()


@pytest.mark.parametrize(
    "old", [Path(".pytest_cache", "d", "propositions"), Path(".pytest_propositions_cache")]
)
def test_a_cache_in_the_old_place_is_moved_to_the_projects_folder(
    tmp_path: Path, old: Path
) -> None:
    VerdictCache(tmp_path / old).put(key(1), record())
    (tmp_path / old / "calibrations.json").write_text("{}")
    result = cli("cache", "stats", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    new = tmp_path / ".propositions"
    assert f"directory: {new}" in result.stdout.splitlines() and "entries: 1" in result.stdout
    assert result.stderr.splitlines() == [
        f"moved the verdict cache from {tmp_path / old} to {new}, out of reach of pytest "
        "--cache-clear"
    ]
    assert not (tmp_path / old).exists() and (new / "calibrations.json").is_file()
    again = cli("cache", "stats", cwd=tmp_path)  # said once: nothing is left to move
    assert again.returncode == 0 and again.stderr == "" and "entries: 1" in again.stdout


def test_the_old_place_named_by_pytests_cache_dir_option_is_moved(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\ncache_dir = build/pytest-cache\n")
    VerdictCache(tmp_path / "build" / "pytest-cache" / "d" / "propositions").put(key(1), record())
    result = cli("cache", "stats", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "entries: 1" in result.stdout and "moved the verdict cache from" in result.stderr
    assert (tmp_path / ".propositions" / "cache.db").is_file()


def test_env_var_names_the_dir(filled: Path, tmp_path: Path) -> None:
    result = cli("cache", "stats", cwd=tmp_path, env={"PROP_CACHE_DIR": str(filled)})
    assert result.returncode == 0 and "entries: 3" in result.stdout


@pytest.mark.parametrize("action", ["stats", "export", "prune", "clear"])
def test_a_missing_cache_is_an_error_and_is_not_created(tmp_path: Path, action: str) -> None:
    missing = tmp_path / "nowhere"
    result = cli("cache", action, "--cache-dir", str(missing), cwd=tmp_path)
    assert_clean_error(result, f"error: no verdict cache at {missing}")
    assert not missing.exists()


@pytest.mark.parametrize("action", ["stats", "export", "clear"])
def test_a_file_instead_of_a_directory(tmp_path: Path, action: str) -> None:
    path = tmp_path / "file"
    path.write_text("x")
    result = cli("cache", action, "--cache-dir", str(path), cwd=tmp_path)
    assert_clean_error(result, str(path), "not a directory")


def test_export_to_stdout_is_deterministic(filled: Path, tmp_path: Path) -> None:
    first = cli("cache", "export", "--cache-dir", str(filled), cwd=tmp_path)
    second = cli("cache", "export", "--cache-dir", str(filled), cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert first.stdout == second.stdout == "".join(VerdictCache(filled).export_lines())
    keys = [json.loads(line)["key"] for line in first.stdout.splitlines()]
    assert keys == sorted([key(1), key(2), key(3)])


def test_export_to_a_file(filled: Path, tmp_path: Path) -> None:
    out = tmp_path / "out" / "verdicts.jsonl"
    out.parent.mkdir()
    result = cli("cache", "export", "-o", str(out), "--cache-dir", str(filled), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "exported 3 verdicts" in result.stdout
    assert out.read_text(encoding="utf-8") == "".join(VerdictCache(filled).export_lines())
    assert sorted(p.name for p in out.parent.iterdir()) == ["verdicts.jsonl"]  # no temp left


def test_export_to_an_unwritable_place(filled: Path, tmp_path: Path) -> None:
    out = tmp_path / "no-such-dir" / "verdicts.jsonl"
    result = cli("cache", "export", "-o", str(out), "--cache-dir", str(filled), cwd=tmp_path)
    assert_clean_error(result, "cannot write", str(out))


def make_special(kind: str, path: Path) -> None:
    """Something at ``path`` that a file renamed over it would replace."""
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    elif kind == "symlink":
        path.symlink_to(path.with_name("elsewhere.jsonl"))
        path.with_name("elsewhere.jsonl").write_text("kept\n")
    else:
        try:
            os.mknod(path, 0o600 | stat.S_IFCHR, os.makedev(1, 3))  # what /dev/null is
        except PermissionError:
            pytest.skip("making a device node needs root (CAP_MKNOD), which this run lacks")


@pytest.mark.parametrize(
    ("kind", "named"),
    [
        ("fifo", "a FIFO"),
        ("directory", "a directory"),
        ("symlink", "a symbolic link"),
        ("device", "a character device"),
    ],
)
def test_export_refuses_an_output_that_is_not_a_regular_file(
    filled: Path, tmp_path: Path, kind: str, named: str
) -> None:
    out = tmp_path / "out"
    make_special(kind, out)
    before = os.lstat(out)
    result = cli("cache", "export", "-o", str(out), "--cache-dir", str(filled), cwd=tmp_path)
    assert_clean_error(result, f"cannot write {out}: it is {named}")
    after = os.lstat(out)
    assert (after.st_ino, after.st_mode) == (before.st_ino, before.st_mode)
    if kind == "symlink":
        assert (tmp_path / "elsewhere.jsonl").read_text() == "kept\n"


@pytest.mark.parametrize(
    "inside",
    [
        pytest.param(lambda cache, tmp: cache / "cache.db", id="its-database"),
        pytest.param(lambda cache, tmp: cache / "verdicts.jsonl", id="its-folder"),
        pytest.param(lambda cache, tmp: tmp / "link" / "cache.db", id="through-a-symlink"),
    ],
)
def test_export_refuses_a_path_inside_the_cache_it_exports(
    filled: Path, tmp_path: Path, inside: Any
) -> None:
    (tmp_path / "link").symlink_to(filled)
    out = inside(filled, tmp_path)
    before = {path.name: path.read_bytes() for path in filled.iterdir()}
    result = cli("cache", "export", "-o", str(out), "--cache-dir", str(filled), cwd=tmp_path)
    assert_clean_error(result, f"cannot write {out}: it is inside the verdict cache at {filled}")
    assert {path.name: path.read_bytes() for path in filled.iterdir()} == before
    assert len(VerdictCache(filled)) == 3


def test_import_a_file_into_a_new_cache(filled: Path, tmp_path: Path) -> None:
    export = tmp_path / "verdicts.jsonl"
    export.write_text("".join(VerdictCache(filled).export_lines()), encoding="utf-8")
    target = tmp_path / "ci-cache"
    result = cli("cache", "import", str(export), "--cache-dir", str(target), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "imported 3 verdicts" in result.stdout
    assert list(VerdictCache(target).export_lines()) == list(VerdictCache(filled).export_lines())


def test_import_from_stdin_merges(filled: Path, tmp_path: Path) -> None:
    line = kept_line(9, record(claim="new"))
    result = cli("cache", "import", "-", "--cache-dir", str(filled), cwd=tmp_path, stdin=line)
    assert result.returncode == 0, result.stderr
    assert "imported 1 verdict into" in result.stdout
    assert len(VerdictCache(filled)) == 4


def test_import_a_malformed_line(filled: Path, tmp_path: Path) -> None:
    before = "".join(VerdictCache(filled).export_lines())
    bad = tmp_path / "bad.jsonl"
    good = kept_line(9, record())
    bad.write_text(f"{good}\n\n{json.dumps({'key': key(8), 'record': {'model': 'm'}})}\n")
    result = cli("cache", "import", str(bad), "--cache-dir", str(filled), cwd=tmp_path)
    # The good line is imported, the bad one named; exit 1 says the import was not whole.
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    assert f"warning: {bad}:3: " in result.stderr and '"recorded_at"' in result.stderr
    assert "imported 1 verdict " in result.stdout and "1 bad line(s)" in result.stdout
    assert "".join(VerdictCache(filled).export_lines()) == "".join(
        sorted([*before.splitlines(keepends=True), good + "\n"])
    )


def test_import_bad_json_from_stdin(tmp_path: Path) -> None:
    target = tmp_path / "c"
    result = cli("cache", "import", "-", "--cache-dir", str(target), cwd=tmp_path, stdin="{oops\n")
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    assert "warning: <stdin>:1: expected a JSON object" in result.stderr
    assert "imported 0 verdicts" in result.stdout
    assert not target.exists()


def test_import_undecodable_bytes(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(canonical_json({"key": key(1), "record": record()}).encode() + b"\n\xff\xfe\n")
    result = cli("cache", "import", str(bad), "--cache-dir", str(tmp_path / "c"), cwd=tmp_path)
    assert_clean_error(result, f"{bad}:2: expected UTF-8")


def test_import_names_a_line_nested_too_deeply_not_the_cache(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(kept_line(1, record()) + "\n" + "[" * 100_000 + "]" * 100_000 + "\n")
    result = cli("cache", "import", str(bad), "--cache-dir", str(tmp_path / "c"), cwd=tmp_path)
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    assert f"warning: {bad}:2: JSON nested too deeply to be read; this line was not" in (
        result.stderr
    )
    assert "verdict cache" not in result.stderr
    assert "imported 1 verdict " in result.stdout


def test_import_refuses_an_endless_file_naming_it(tmp_path: Path) -> None:
    result = cli("cache", "import", "/dev/zero", "--cache-dir", str(tmp_path / "c"), cwd=tmp_path)
    assert_clean_error(result, "/dev/zero:1: a line longer than 64 MiB")
    assert "verdict cache" not in result.stderr
    assert not (tmp_path / "c").exists()


def test_import_refuses_an_enormous_line_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # In this process, with a smaller bound than the shipped one (64 MiB): a 2 MiB file does.
    monkeypatch.setattr(checks, "LINE_LIMIT", 2**20)
    big = tmp_path / "big.jsonl"
    big.write_text(kept_line(1, record()) + "\n" + "x" * 2**21 + "\n")
    assert main(["cache", "import", str(big), "--cache-dir", str(tmp_path / "c")]) == 2
    err = capsys.readouterr().err
    assert f"error: {big}:2: a line longer than 1 MiB" in err and "verdict cache" not in err
    assert not (tmp_path / "c").exists()


def test_import_a_missing_file(tmp_path: Path) -> None:
    result = cli("cache", "import", "nope.jsonl", "--cache-dir", str(tmp_path), cwd=tmp_path)
    assert_clean_error(result, "cannot read nope.jsonl")


def test_clear(filled: Path, tmp_path: Path) -> None:
    result = cli("cache", "clear", "--cache-dir", str(filled), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "removed 3 verdicts" in result.stdout
    assert len(VerdictCache(filled)) == 0


def test_prune_before_any_run_recorded_usage(filled: Path, tmp_path: Path) -> None:
    result = cli("cache", "prune", "--cache-dir", str(filled), cwd=tmp_path)
    assert_clean_error(result, "no test run has recorded", "would remove every verdict")
    assert len(VerdictCache(filled)) == 3


def test_prune_after_a_run(filled: Path, tmp_path: Path) -> None:
    started = datetime.now(UTC)  # after the verdicts were stored: those it did not use go
    VerdictCache(filled).record_usage([key(1)], started)
    stats = cli("cache", "stats", "--cache-dir", str(filled), cwd=tmp_path)
    [line] = [line for line in stats.stdout.splitlines() if line.startswith("last run")]
    assert line.startswith("last run that recorded usage: finished 20"), line
    assert line.endswith(f"(1 run since {started.isoformat()} used 1 verdict; prune keeps those)")
    result = cli("cache", "prune", "--cache-dir", str(filled), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert f"pruned 2 verdicts not used by the 1 run since {started.isoformat()}" in result.stdout
    assert VerdictCache(filled).get(key(1)) is not None
    assert len(VerdictCache(filled)) == 1


def test_a_damaged_cache_is_reported_not_a_traceback(tmp_path: Path) -> None:
    directory = tmp_path / "c"
    directory.mkdir()
    (directory / "cache.db").write_bytes(os.urandom(4096))
    result = cli("cache", "stats", "--cache-dir", str(directory), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stderr.startswith("warning: ") and "damaged" in result.stderr
    assert "entries: 0" in result.stdout
    assert (tmp_path / "c.corrupt-1" / "cache.db").exists()


def test_the_cli_loads_neither_litellm_nor_pydantic(filled: Path, tmp_path: Path) -> None:
    code = (
        "import runpy, sys\n"
        "sys.argv = ['pytest_propositions', 'cache', 'stats', '--cache-dir', sys.argv[1]]\n"
        "try:\n"
        "    runpy.run_module('pytest_propositions', run_name='__main__', alter_sys=True)\n"
        "except SystemExit as exit:\n"
        "    assert exit.code == 0, exit.code\n"
        "heavy = [name for name in ('litellm', 'pydantic') if name in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, str(filled)], capture_output=True, text=True, cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr


def test_the_commands_judge_flags_are_the_options_table() -> None:
    """calibrate's and cache rejudge's --model, --api-base, ... are made from settings.OPTIONS:
    the same metavar, and the help names the same variable and default."""
    import argparse

    from pytest_propositions.cli.main import _build_parser
    from pytest_propositions.settings import OPTIONS

    def subparsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
        found = []
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub in action.choices.values():
                    found += [sub, *subparsers(sub)]
        return found

    by_flag = {option.flag.replace("--prop-", "--", 1): option for option in OPTIONS}
    commands = {p.prog.split()[-1]: p for p in subparsers(_build_parser())}
    seen = 0
    for name in ("calibrate", "rejudge"):
        for action in commands[name]._actions:
            flag = next((f for f in action.option_strings if f in by_flag), None)
            if flag is None or flag in ("--cache-dir", "--store"):
                continue
            option = by_flag[flag]
            seen += 1
            assert action.metavar == option.metavar, (name, flag)
            if not action.required:
                assert f"(default: ${option.env}" in (action.help or ""), (name, flag)
    assert seen >= 10


def test_an_old_cache_that_cannot_be_moved_is_read_where_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On another file system (or a folder in use on Windows) the rename fails: the old cache is
    the folder used, and the line says so, every time, until it is moved."""
    old = tmp_path / ".pytest_cache" / "d" / "propositions"
    VerdictCache(old).put(key(1), record())

    def cross_device(source: object, target: object) -> None:
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(os, "rename", cross_device)
    folder = default_folder(tmp_path, None)
    assert folder.path == old
    assert folder.note is not None
    assert folder.note.startswith(f"verdicts read from {old}, where earlier versions kept them")
    assert (
        "Invalid cross-device link" in folder.note
        and str(tmp_path / ".propositions") in folder.note
    )


def test_under_cache_clear_an_old_cache_that_cannot_be_moved_is_a_problem_not_a_loss(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pytest --cache-clear is about to empty its folder: an old cache in it that could not be
    moved must stop the run (it would be deleted); one at the root is only read where it is."""
    inside = tmp_path / ".pytest_cache" / "d" / "propositions"
    VerdictCache(inside).put(key(1), record())

    def cross_device(source: object, target: object) -> None:
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(os, "rename", cross_device)
    folder = default_folder(tmp_path, None, clearing=True)
    assert folder.path == inside and folder.note is None
    assert folder.problem == (
        f"pytest --cache-clear would delete the verdicts at {inside}, where earlier versions kept "
        f"them, and they could not be moved to {tmp_path / '.propositions'} (Invalid "
        "cross-device link): move that folder there, then run again"
    )
    at_root = tmp_path / "other" / ".pytest_propositions_cache"
    VerdictCache(at_root).put(key(1), record())
    kept = default_folder(at_root.parent, None, clearing=True)
    assert kept.path == at_root and kept.problem is None and kept.note is not None


def test_a_configured_folder_that_is_a_link_is_kept_as_given(tmp_path: Path) -> None:
    """Not replaced by its target (which a link to nowhere would then create elsewhere), and a
    loop of links is named, not a RuntimeError from resolving it."""
    (tmp_path / "dangling").symlink_to(tmp_path / "unmounted" / "verdicts")
    assert configured_folder("dangling", tmp_path) == tmp_path / "dangling"
    assert folder_problem(tmp_path / "dangling") == (
        f"cannot use {tmp_path / 'dangling'} as the verdict cache folder: it is a symbolic link "
        f"to {tmp_path / 'unmounted' / 'verdicts'}, which does not exist (create it, or remove "
        "the link)"
    )
    (tmp_path / "loop").symlink_to("loop")
    assert configured_folder("loop/sub", tmp_path) == tmp_path / "loop" / "sub"
    assert folder_problem(tmp_path / "loop" / "sub") == (
        f"cannot use {tmp_path / 'loop' / 'sub'} as the verdict cache folder: {tmp_path / 'loop'} "
        f"is a symbolic link to loop ({tmp_path / 'loop'}), a loop of links that never reaches "
        "a folder"
    )
    (tmp_path / "real").mkdir()
    (tmp_path / "good").symlink_to(tmp_path / "real")
    assert folder_problem(configured_folder("good", tmp_path)) is None
    assert folder_problem(tmp_path / "not-yet" / "verdicts") is None


@pytest.mark.parametrize("what", ["a file", "a link to nowhere"])
def test_a_command_on_a_folder_that_cannot_hold_a_cache_names_what_is_wrong(
    tmp_path: Path, what: str
) -> None:
    folder = tmp_path / "verdicts"
    if what == "a file":
        folder.write_text("not a folder")
        why = "it exists and is not a directory"
    else:
        folder.symlink_to(tmp_path / "gone")
        why = f"it is a symbolic link to {tmp_path / 'gone'}, which does not exist"
    done = cli("cache", "stats", "--cache-dir", str(folder), cwd=tmp_path)
    assert done.returncode == 2
    assert f"error: cannot use {folder} as the verdict cache folder: {why}" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_move_another_process_made_first_is_the_new_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = tmp_path / ".pytest_propositions_cache"
    VerdictCache(old).put(key(1), record())
    rename = os.rename

    def beaten(source: str, target: str) -> None:
        rename(source, target)  # the other process's move...
        raise FileNotFoundError(errno.ENOENT, "No such file or directory")  # ...then ours

    monkeypatch.setattr(os, "rename", beaten)
    assert default_folder(tmp_path, None) == CacheFolder(tmp_path / ".propositions")


def test_two_old_caches_one_is_moved_and_the_other_named(tmp_path: Path) -> None:
    inside = tmp_path / ".pytest_cache" / "d" / "propositions"
    at_root = tmp_path / ".pytest_propositions_cache"
    for old in (inside, at_root):
        VerdictCache(old).put(key(1), record())
    folder = default_folder(tmp_path, None)
    assert folder.path == tmp_path / ".propositions" and not inside.exists()
    assert folder.note is not None
    assert f"an older cache at {at_root} was left as it is" in folder.note
    assert default_folder(tmp_path, None).note is None  # said once
