"""Red team, the verdict cache: read-only mounts, unusable folders and every kind of damage.

The cache never loses a verdict silently, never blocks a run and never crashes one: damage is a
warning and a miss, a read-only cache is still read, and a folder that cannot hold verdicts is
found before a judge is paid for one.
"""

from __future__ import annotations

import errno
import json
import os
import shlex
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_propositions.store.cache import (
    UNSTORED_FULL,
    CacheReadOnlyError,
    VerdictCache,
    unstored_lines,
)
from tests.support.judge_server import ScriptedJudge, verdict
from tests.support.outcomes import assert_counts
from tests.test_cache import key, record

pytest_plugins = ["pytester"]

CLAIM_TEST = """
def test_claim(world, assert_proposition):
    assert_proposition(world, "Oscar likes cities.")
"""

TWO_CLAIMS_TEST = """
def test_claim(world, assert_proposition):
    assert_proposition(world, "Oscar likes cities.")

def test_new_claim(world, assert_proposition):
    assert_proposition(world, "Oscar likes architecture.")
"""

ROOT_CAPABILITIES = "cap_dac_override,cap_dac_read_search,cap_fowner"


def cli(*args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest_propositions", *args],
        capture_output=True,
        text=True,
        check=False,
        **kwargs,
    )


def as_unprivileged(command: list[str]) -> list[str]:
    """Run ``command`` so that file permissions bind: root ignores chmod unless it drops the
    capabilities that override them (the interpreter lives under root's home here, so running
    as another user is not an option)."""
    if os.geteuid() != 0:
        return command
    capsh = shutil.which("capsh")
    if capsh is None:
        pytest.skip("running as root without capsh: read-only folders cannot be simulated")
    return [capsh, f"--drop={ROOT_CAPABILITIES}", "--", "-c", shlex.join(command)]


def freeze(directory: Path) -> None:
    """Make a folder tree read-only, as a CI artifact mounted read-only would be."""
    for root, dirs, files in os.walk(directory):
        for name in files:
            os.chmod(os.path.join(root, name), 0o444)
        for name in dirs:
            os.chmod(os.path.join(root, name), 0o555)
    os.chmod(directory, 0o555)


def thaw(directory: Path) -> None:
    os.chmod(directory, 0o755)
    for root, dirs, files in os.walk(directory):
        for name in dirs:
            os.chmod(os.path.join(root, name), 0o755)
        for name in files:
            os.chmod(os.path.join(root, name), 0o644)


@pytest.fixture
def judged(pytester: pytest.Pytester, inner_run: list[str]) -> list[str]:
    return [*inner_run, "--prop-cache=use", f"--prop-cache-dir={pytester.path / 'verdicts'}"]


@pytest.fixture
def read_only_verdicts(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, judged: list[str]
) -> Iterator[Path]:
    """A cache holding the verdict of CLAIM_TEST, then made read-only."""
    judge_server.default = verdict(True)
    pytester.makepyfile(test_claims=CLAIM_TEST)
    pytester.runpytest(*judged).assert_outcomes(passed=1)
    assert len(judge_server.requests) == 1
    directory = pytester.path / "verdicts"
    freeze(directory)
    probe = subprocess.run(
        as_unprivileged(["touch", str(directory / "probe")]), capture_output=True, check=False
    )
    assert probe.returncode != 0, "the folder is still writable: the test would prove nothing"
    try:
        yield directory
    finally:
        thaw(directory)


def run_unprivileged(
    pytester: pytest.Pytester, args: list[str]
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.run(
        as_unprivileged([sys.executable, "-m", "pytest", *args]),
        capture_output=True,
        text=True,
        check=False,
        cwd=pytester.path,
        env=env,
    )


def test_a_read_only_cache_is_replayed(
    pytester: pytest.Pytester,
    judge_server: ScriptedJudge,
    judged: list[str],
    read_only_verdicts: Path,
) -> None:
    result = run_unprivileged(
        pytester, [*judged, "--prop-cache=replay", "-W", "error::UserWarning"]
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 claim, 1 passed, 0 failed, 0 judge errors, 1 from cache" in result.stdout
    assert "Traceback" not in result.stdout + result.stderr
    assert len(judge_server.requests) == 1  # the recording run only
    assert sorted(p.name for p in read_only_verdicts.iterdir()) == ["cache.db"]


def test_a_read_only_cache_is_read_in_use_mode_and_new_verdicts_are_not_stored(
    pytester: pytest.Pytester,
    judge_server: ScriptedJudge,
    judged: list[str],
    read_only_verdicts: Path,
) -> None:
    pytester.makepyfile(test_claims=TWO_CLAIMS_TEST)
    result = run_unprivileged(pytester, [*judged, "--prop-cache=use", "-rA"])
    out = result.stdout + result.stderr
    assert result.returncode == 0, out
    assert (
        "2 claims, 2 passed, 0 failed, 0 judge errors, 1 from cache, 1 judged live, 1 judge call,"
        in result.stdout
    )
    assert out.count("is read-only") == 1  # one warning, not one per claim
    assert "new verdicts are not stored" in out
    assert "Traceback" not in out
    assert len(judge_server.requests) == 2  # the recording run, then the new claim
    with VerdictCache(read_only_verdicts, "replay") as cache:
        assert len(cache) == 1


def test_a_read_only_cache_refuses_refresh_before_any_judge_call(
    pytester: pytest.Pytester,
    judge_server: ScriptedJudge,
    judged: list[str],
    read_only_verdicts: Path,
) -> None:
    result = run_unprivileged(pytester, [*judged, "--prop-cache=refresh"])
    assert result.returncode == 1
    assert "CacheUnusable" in result.stdout and "--prop-cache=refresh" in result.stdout
    assert "1 claim, 0 passed, 0 failed, 1 judge error," in result.stdout
    assert len(judge_server.requests) == 1  # nothing paid for and thrown away


def test_the_cli_reads_a_read_only_cache_and_refuses_to_change_it(read_only_verdicts: Path) -> None:
    base = [sys.executable, "-m", "pytest_propositions", "cache"]
    where = ["--cache-dir", str(read_only_verdicts)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    stats = subprocess.run(
        as_unprivileged([*base, "stats", *where]), capture_output=True, text=True, env=env
    )
    assert stats.returncode == 0 and "entries: 1" in stats.stdout, stats.stderr
    export = subprocess.run(
        as_unprivileged([*base, "export", *where]), capture_output=True, text=True, env=env
    )
    assert export.returncode == 0 and len(export.stdout.splitlines()) == 1, export.stderr
    clear = subprocess.run(
        as_unprivileged([*base, "clear", *where]), capture_output=True, text=True, env=env
    )
    assert clear.returncode == 2
    assert "read-only" in clear.stderr and "Traceback" not in clear.stderr


# --- a folder that cannot hold the cache: a usage error at the start --------------------------


def a_file_named(root: Path) -> tuple[Path, str]:
    (root / "verdicts").write_text("not a folder")
    return root / "verdicts", "it exists and is not a directory"


def a_file_at_the_default_place(root: Path) -> tuple[Path, str]:
    (root / ".propositions").write_text("not a folder")
    return root / ".propositions", "it exists and is not a directory"


def a_file_above(root: Path) -> tuple[Path, str]:
    (root / "a-file").write_text("not a folder")
    return root / "a-file" / "sub", f"{root / 'a-file'} is a file, so no folder can be made"


def a_folder_for_its_database(root: Path) -> tuple[Path, str]:
    (root / "verdicts" / "cache.db").mkdir(parents=True)
    return root / "verdicts", f"its database {root / 'verdicts' / 'cache.db'} is a folder"


def a_link_to_nowhere(root: Path) -> tuple[Path, str]:
    (root / ".propositions").symlink_to(Path("unmounted", "verdicts"))
    target = root / "unmounted" / "verdicts"
    return root / ".propositions", (
        f"it is a symbolic link to unmounted/verdicts ({target}), which does not exist"
    )


def a_link_in_a_loop(root: Path) -> tuple[Path, str]:
    (root / ".propositions").symlink_to(root / "elsewhere")
    (root / "elsewhere").symlink_to(root / ".propositions")
    return root / ".propositions", (
        f"it is a symbolic link to {root / 'elsewhere'}, a loop of links that never reaches a "
        "folder"
    )


UNUSABLE = [
    a_file_named,
    a_file_at_the_default_place,
    a_file_above,
    a_folder_for_its_database,
    a_link_to_nowhere,
    a_link_in_a_loop,
]
DEFAULT_PLACE = (a_file_at_the_default_place, a_link_to_nowhere, a_link_in_a_loop)


@pytest.mark.parametrize("unusable", UNUSABLE)
def test_a_folder_that_cannot_hold_the_cache_is_a_usage_error_at_the_start(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, inner_run: list[str], unusable: Any
) -> None:
    """Exit 4 before any test runs, naming the folder and what is wrong, with no traceback:
    never judge errors and a traceback at the end of the run (no summary, no JSON report)."""
    folder, why = unusable(pytester.path)
    pytester.makepyfile(test_claims=TWO_CLAIMS_TEST)
    where = [] if unusable in DEFAULT_PLACE else [f"--prop-cache-dir={folder}"]
    result = pytester.runpytest(*inner_run, "--prop-cache=use", *where, "--prop-report=r.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.outlines
    error = result.stderr.str().replace("\n", "")
    assert (
        f"ERROR: pytest-propositions: cannot use {folder} as the verdict cache folder: {why}"
        in " ".join(error.split())
    ), error
    result.stderr.fnmatch_lines(["*; fix it, give another folder with --prop-cache-dir, or run*"])
    assert "Traceback" not in result.stdout.str() + error
    assert judge_server.requests == []


@pytest.mark.parametrize("mode", ["replay", "refresh"])
def test_every_mode_that_reads_or_writes_the_folder_checks_it(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, inner_run: list[str], mode: str
) -> None:
    folder, _ = a_file_named(pytester.path)
    pytester.makepyfile(test_claims=CLAIM_TEST)
    result = pytester.runpytest(*inner_run, f"--prop-cache={mode}", f"--prop-cache-dir={folder}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*cannot use*verdicts as the verdict cache folder: it exists and is not a directory*"]
    )


@pytest.mark.parametrize("unusable", [a_file_at_the_default_place, a_link_to_nowhere])
def test_cache_off_never_touches_the_folder(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, inner_run: list[str], unusable: Any
) -> None:
    """--prop-cache=off neither reads nor writes the folder: an unusable one does not stop it."""
    judge_server.default = verdict(True)
    unusable(pytester.path)
    pytester.makepyfile(test_claims=CLAIM_TEST)
    result = pytester.runpytest(*inner_run)  # inner_run: --prop-cache=off
    assert_counts(result, passed=1)
    assert len(judge_server.requests) == 1


def test_an_unreadable_database_is_a_usage_error_at_the_start(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, judged: list[str]
) -> None:
    """Permissions bind only without root's capabilities (``as_unprivileged``)."""
    judge_server.default = verdict(True)
    pytester.makepyfile(test_claims=CLAIM_TEST)
    pytester.runpytest(*judged).assert_outcomes(passed=1)
    database = pytester.path / "verdicts" / "cache.db"
    database.chmod(0)
    try:
        result = run_unprivileged(pytester, [*judged, "--prop-cache=replay"])
    finally:
        database.chmod(0o644)
    out = result.stdout + result.stderr
    assert result.returncode == pytest.ExitCode.USAGE_ERROR, out
    assert (
        f"cannot use {database.parent} as the verdict cache folder: its database {database} "
        "cannot be read (Permission denied)" in " ".join(result.stderr.split())
    ), out
    assert "Traceback" not in out
    assert len(judge_server.requests) == 1  # the recording run only


BREAKS_ITS_CACHE = """
from pathlib import Path

def test_claim(world, assert_proposition):
    Path({folder!r}).write_text("the folder's place, taken while the run goes on")
    assert_proposition(world, "Oscar likes cities.")
"""


def test_the_end_of_a_run_never_opens_the_cache_just_to_count(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, judged: list[str]
) -> None:
    """A folder made unusable after the start: its claim is a judge error, and the run still
    ends with its summary and its JSON report, not a traceback from counting the cache."""
    folder = pytester.path / "verdicts"
    pytester.makepyfile(test_claims=BREAKS_ITS_CACHE.format(folder=str(folder)))
    result = pytester.runpytest(*judged, "--prop-report=report.json")
    out = result.stdout.str() + result.stderr.str()
    assert_counts(result, judge_errors=1)
    result.stdout.fnmatch_lines(
        [
            "*CacheUnusable: cannot use*verdicts as the verdict cache folder: it exists and is not a directory*",
            "*propositions: 1 claim, 0 passed, 0 failed, 1 judge error, 0 from cache, 0 judged "
            "live, 0 judge calls*",
        ]
    )
    assert "Traceback" not in out and "INTERNALERROR" not in out
    report = json.loads((pytester.path / "report.json").read_text())
    assert report["summary"]["judge_errors"] == 1
    assert judge_server.requests == []


def test_a_read_only_parent_folder_fails_before_the_judge_is_called(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, inner_run: list[str]
) -> None:
    parent = pytester.path / "locked"
    parent.mkdir()
    pytester.makepyfile(test_claims=CLAIM_TEST)
    freeze(parent)
    try:
        result = run_unprivileged(
            pytester, [*inner_run, "--prop-cache=use", f"--prop-cache-dir={parent / 'verdicts'}"]
        )
    finally:
        thaw(parent)
    assert result.returncode == 1
    assert "CacheUnusable" in result.stdout and "Permission denied" in result.stdout
    assert "1 claim, 0 passed, 0 failed, 1 judge error," in result.stdout
    assert judge_server.requests == []


# --- damage --------------------------------------------------------------------------------


def stored(directory: Path, n: int = 1, **overrides: Any) -> None:
    with VerdictCache(directory) as cache:
        for i in range(1, n + 1):
            cache.put(key(i), record(**overrides))


def overwrite(directory: Path, k: str, value: str) -> None:
    """Write a raw value under a key, the way a damaged or foreign writer would."""
    import diskcache

    with diskcache.Cache(str(directory)) as raw:  # keeps the cache's stored settings
        raw.set(k, value)


def side_files(directory: Path) -> list[Path]:
    return sorted(directory.rglob("*.val"))


def damage_not_json(directory: Path) -> str:
    stored(directory, 2)
    overwrite(directory, key(1), "{not json")
    return "not JSON"


def damage_json_list(directory: Path) -> str:
    stored(directory, 2)
    overwrite(directory, key(1), "[1, 2]")
    return "expected a JSON object, found list"


def damage_garbled_side_file(directory: Path) -> str:
    stored(directory, 2)
    with VerdictCache(directory) as cache:
        cache.put(key(1), record(raw_reply="x" * (5 * 2**20)))  # large: diskcache's side file
    (path,) = side_files(directory)
    with path.open("r+b") as handle:
        handle.seek(100)
        handle.write(b"\xff\xfe\xfd")
    return "its side file cannot be read"


def damage_missing_side_file(directory: Path) -> str:
    damage_garbled_side_file(directory)
    side_files(directory)[0].unlink()
    return "its side file is missing"


RECORD_DAMAGE = [
    damage_not_json,
    damage_json_list,
    damage_garbled_side_file,
    damage_missing_side_file,
]


@pytest.mark.parametrize("damage", RECORD_DAMAGE)
def test_a_damaged_record_is_a_warning_and_a_miss_and_the_next_store_repairs_it(
    tmp_path: Path, damage: Any
) -> None:
    directory = tmp_path / "c"
    reason = damage(directory)
    warned: list[str] = []
    cache = VerdictCache(directory, warn=warned.append)
    assert cache.get(key(1)) is None
    assert cache.get(key(1)) is None
    assert cache.get(key(2)) == record()  # its neighbours are unharmed
    assert len(warned) == 1 and reason in warned[0] and key(1)[:16] in warned[0]
    assert cache.hits == 1 and cache.misses == 2
    cache.put(key(1), record(claim="judged again"))
    assert cache.get(key(1)) == record(claim="judged again")
    cache.close()


@pytest.mark.parametrize("damage", RECORD_DAMAGE)
def test_the_cli_reports_a_damaged_record_and_exports_the_rest(tmp_path: Path, damage: Any) -> None:
    directory = tmp_path / "c"
    reason = damage(directory)
    for action in ("export", "stats"):
        result = cli("cache", action, "--cache-dir", str(directory))
        assert result.returncode == 1, result.stderr
        assert "Traceback" not in result.stderr
        assert reason in result.stderr and key(1)[:16] in result.stderr
        assert "1 damaged record(s)" in result.stderr
    exported = cli("cache", "export", "--cache-dir", str(directory)).stdout.splitlines()
    assert [json.loads(line)["key"] for line in exported] == [key(2)]


def test_an_empty_database_file_is_a_warning_and_every_claim_misses(tmp_path: Path) -> None:
    directory = tmp_path / "c"
    directory.mkdir()
    (directory / "cache.db").write_bytes(b"")
    warned: list[str] = []
    cache = VerdictCache(directory, "replay", warn=warned.append)
    assert cache.get(key(1)) is None
    assert cache.get(key(2)) is None
    assert len(warned) == 1 and "empty file" in warned[0]
    cache.close()


def test_a_foreign_database_is_moved_aside_untouched(tmp_path: Path) -> None:
    directory = tmp_path / "c"
    directory.mkdir()
    db = directory / "cache.db"
    with sqlite3.connect(db) as connection:
        connection.execute("CREATE TABLE notes (text TEXT)")
        connection.execute("INSERT INTO notes VALUES ('keep me')")
    connection.close()
    before = db.read_bytes()
    warned: list[str] = []
    cache = VerdictCache(directory, "replay", warn=warned.append)
    assert cache.get(key(1)) is None
    assert len(warned) == 1 and "not a database of verdicts (its tables: notes)" in warned[0]
    assert (tmp_path / "c.corrupt-1" / "cache.db").read_bytes() == before
    cache.close()


def test_a_damaged_record_in_a_run_is_judged_again_with_a_warning(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, judged: list[str]
) -> None:
    judge_server.default = verdict(True)
    pytester.makepyfile(test_claims=CLAIM_TEST)
    pytester.runpytest(*judged).assert_outcomes(passed=1)
    directory = pytester.path / "verdicts"
    with VerdictCache(directory, "replay") as cache:
        (only,) = [json.loads(line)["key"] for line in cache.export_lines()]
    overwrite(directory, only, "garbage")
    result = pytester.runpytest(*judged)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*CacheWarning*damaged record*not JSON*treating it as a miss*"])
    assert len(judge_server.requests) == 2
    again = pytester.runpytest(*judged, "--prop-cache=replay")
    again.assert_outcomes(passed=1)  # the new verdict replaced the damaged record
    assert len(judge_server.requests) == 2


def test_a_read_only_store_refuses_writes_by_name(tmp_path: Path) -> None:
    from pytest_propositions.store.database import ReadOnlyStore

    stored(tmp_path / "c")
    store = ReadOnlyStore(tmp_path / "c")
    try:
        assert json.loads(store.get(key(1))) == record()
        assert key(1) in store and len(store) == 1 and store.iterkeys() == [key(1)]
        with pytest.raises(CacheReadOnlyError, match="read-only"):
            store.set(key(2), "x")
    finally:
        store.close()


READ_ONLY_PROBE = """
import sys
from pytest_propositions.store.cache import VerdictCache, cache_key
cache = VerdictCache(sys.argv[1], sys.argv[2], warn=lambda m: print("WARN", m))
print("GOT", cache.get(cache_key({"n": 1})))
cache.prepare_write()
print("READY")
"""


@pytest.mark.parametrize(
    ("content", "warning"),
    [
        pytest.param(b"", "is an empty file", id="zero-bytes"),
        pytest.param(b"SQLite format 3\x00" + b"\x13" * 4000, "is damaged", id="garbage"),
        pytest.param("foreign", "not a database of verdicts", id="foreign"),
    ],
)
@pytest.mark.parametrize("mode", ["replay", "use"])
def test_a_damaged_read_only_cache_is_a_warning_and_a_miss(
    tmp_path: Path, content: Any, warning: str, mode: str
) -> None:
    mount = tmp_path / "mount"
    directory = mount / "c"
    directory.mkdir(parents=True)
    db = directory / "cache.db"
    if content == "foreign":
        with sqlite3.connect(db) as connection:
            connection.execute("CREATE TABLE notes (text TEXT)")
        connection.close()
    else:
        db.write_bytes(content)
    before = db.read_bytes()
    freeze(mount)
    try:
        result = subprocess.run(
            as_unprivileged([sys.executable, "-c", READ_ONLY_PROBE, str(directory), mode]),
            capture_output=True,
            text=True,
            check=False,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        )
    finally:
        thaw(mount)
    assert result.returncode == 0, result.stderr
    assert "GOT None" in result.stdout and "READY" in result.stdout
    assert warning in result.stdout
    assert "Traceback" not in result.stderr
    assert db.read_bytes() == before  # the user's file is left as it was
    if mode == "use":
        assert "is read-only" in result.stdout


# --- a full disk -----------------------------------------------------------------------------


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A file system of 600 KiB of its own (a tmpfs), so that a disk really fills."""
    where = tmp_path / "small-disk"
    where.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("a disk that really fills needs a small tmpfs, which only root can mount")
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=600k", "tmpfs", str(where)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"a small tmpfs cannot be mounted here ({done.stderr.strip()})")
    try:
        yield where
    finally:
        if subprocess.run(["umount", str(where)], capture_output=True, check=False).returncode:
            subprocess.run(["umount", "-l", str(where)], capture_output=True, check=False)


def fill(disk: Path) -> None:
    """Write a file until the disk holding it has no room left."""
    fd = os.open(disk / "filler", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        while True:
            os.write(fd, b"x" * 4096)
    except OSError as error:
        assert error.errno == errno.ENOSPC, error
    finally:
        os.close(fd)


FILLED_MID_RUN = """
import errno
import os


def test_a_stored(world, assert_proposition):
    assert_proposition(world, "Oscar likes cities.")


def test_b_the_disk_fills():
    fd = os.open({filler!r}, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        while True:
            os.write(fd, b"x" * 4096)
    except OSError as error:
        assert error.errno == errno.ENOSPC, error
    finally:
        os.close(fd)


def test_c_true(world, assert_proposition):
    assert_proposition(world, "Oscar likes architecture.")


def test_d_false(world, assert_proposition):
    assert_proposition(world, "Oscar writes a novel about cats.")
"""


def test_a_disk_that_fills_mid_run_loses_no_verdict_and_the_summary_says_so(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, inner_run: list[str], small_disk: Path
) -> None:
    """The verdicts judged once the disk is full were paid for: each claim gets its verdict
    (a false one fails as false, not as a cache error), the run goes on, and the summary's last
    word says how many were not stored, and why."""
    judge_server.default = verdict(True)
    judge_server.on("novel about cats", verdict(False, justification="No novel is mentioned."))
    pytester.makepyfile(test_claims=FILLED_MID_RUN.format(filler=str(small_disk / "filler")))
    cache_dir = small_disk / "verdicts"
    result = pytester.runpytest(*inner_run, "--prop-cache=use", f"--prop-cache-dir={cache_dir}")
    out = result.stdout.str()
    result.assert_outcomes(passed=3, failed=1)
    assert "OperationalError" not in out and "CacheUnusable" not in out
    result.stdout.fnmatch_lines(
        [
            "E*PropositionFailed: claim 'Oscar writes a novel about cats.' judged False*",
            "*No novel is mentioned.",
            "*propositions: 3 claims, 2 passed, 1 failed, 0 judge errors, 0 from cache, "
            "3 judged live*",
            f"propositions: 2 verdicts NOT stored in the verdict cache at {cache_dir}: the disk "
            "is full.*",
        ]
    )
    assert "the disk is full" in out and "read-only" not in out
    assert len(judge_server.requests) == 3
    with VerdictCache(cache_dir, "replay") as cache:
        assert len(cache) == 1  # the verdict stored before the disk filled


def test_a_disk_full_at_the_start_is_called_full_and_its_verdicts_are_still_read(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, inner_run: list[str], small_disk: Path
) -> None:
    judge_server.default = verdict(True)
    cache_dir = small_disk / "verdicts"
    args = [*inner_run, "--prop-cache=use", f"--prop-cache-dir={cache_dir}"]
    pytester.makepyfile(test_claims=CLAIM_TEST)
    pytester.runpytest(*args).assert_outcomes(passed=1)
    fill(small_disk)
    pytester.makepyfile(test_claims=TWO_CLAIMS_TEST)
    result = pytester.runpytest(*args)
    out = result.stdout.str()
    result.assert_outcomes(passed=2)
    assert "read-only" not in out and "OperationalError" not in out
    assert "cannot store new verdicts: the disk is full" in out
    result.stdout.fnmatch_lines(
        [
            "*propositions: 2 claims, 2 passed, 0 failed, 0 judge errors, 1 from cache, "
            "1 judged live*",
            f"propositions: 1 verdict NOT stored in the verdict cache at {cache_dir}: the disk "
            "is full.*",
        ]
    )
    assert len(judge_server.requests) == 2  # the first run's claim, then the new one


@pytest.mark.slow  # a pytest subprocess on xdist workers
def test_the_xdist_controller_counts_the_workers_verdicts_a_full_disk_refused(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, inner_run: list[str], small_disk: Path
) -> None:
    judge_server.default = verdict(True)
    cache_dir = small_disk / "verdicts"
    args = [*inner_run, "--prop-cache=use", f"--prop-cache-dir={cache_dir}"]
    pytester.makepyfile(test_claims=CLAIM_TEST)
    pytester.runpytest(*args).assert_outcomes(passed=1)
    fill(small_disk)
    pytester.makepyfile(
        test_claims=TWO_CLAIMS_TEST,
        test_more="def test_more(world, assert_proposition):\n"
        "    assert_proposition(world, 'Oscar likes bridges.')\n",
    )
    result = pytester.runpytest_subprocess(*args, "-n", "2")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(
        [f"propositions: 2 verdicts NOT stored in the verdict cache at {cache_dir}: the disk is*"]
    )


@pytest.mark.parametrize(
    "error",
    [
        pytest.param(OSError(errno.ENOSPC, "No space left on device"), id="ENOSPC"),
        pytest.param("SQLITE_FULL", id="sqlite"),
    ],
)
def test_a_write_refused_for_a_full_disk_keeps_the_verdict_and_counts_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: Any
) -> None:
    if error == "SQLITE_FULL":
        error = sqlite3.OperationalError("database or disk is full")
        error.sqlite_errorname = "SQLITE_FULL"  # as sqlite3 sets it
    warned: list[str] = []
    cache = VerdictCache(tmp_path / "c", warn=warned.append)
    cache.put(key(1), record())

    def full(*args: Any, **kwargs: Any) -> None:
        raise error

    monkeypatch.setattr(cache._db.handle, "set", full)
    paid = record(claim="Paid for.")
    assert cache.put(key(2), paid) is paid
    assert cache.store_counts() == {UNSTORED_FULL: 1}
    assert len(warned) == 1 and "cannot store new verdicts: the disk is full" in warned[0]
    assert unstored_lines(cache.store_counts(), cache.directory) == [
        f"propositions: 1 verdict NOT stored in the verdict cache at {cache.directory}: the disk "
        "is full. They count in this run, and will be judged (and paid for) again next run: free "
        "space on that disk, or give another --prop-cache-dir"
    ]
    assert cache.get(key(1)) == record()  # what was stored is still served


def test_a_write_refused_for_another_reason_is_still_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = VerdictCache(tmp_path / "c")
    cache.put(key(1), record())

    def locked(*args: Any, **kwargs: Any) -> None:
        raise sqlite3.OperationalError("database is locked")

    monkeypatch.setattr(cache._db.handle, "set", locked)
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        cache.put(key(2), record())
    assert cache.store_counts() == {}
