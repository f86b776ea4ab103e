"""Where a project keeps its verdicts, and the project as pytest finds it.

The one rule the plugin and the commands share. The folder is the project's own,
``.propositions`` at the root, as hypothesis keeps ``.hypothesis``: ``pytest --cache-clear``
empties pytest's cache folder, where verdicts lived before, and they are paid for. A cache left
in an old place is moved to the new one the first time it is looked for (under
``--cache-clear``, before pytest empties its folder). Whether a folder can hold the cache is
checked here too, without opening the database, so a run stops at its start, not its end. The
commands, which run without pytest, find the project as pytest finds its rootdir, and read its
configuration file as pytest reads it.
"""

from __future__ import annotations

import errno
import os
import stat
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import iniconfig

from ..settings import OPTIONS

#: The verdict cache's folder at the project root when no folder is configured.
CACHE_FOLDER = ".propositions"
#: pytest's own cache folder unless its ini option ``cache_dir`` names another.
PYTEST_CACHE_DIR = ".pytest_cache"
# Where earlier versions kept verdicts: inside pytest's cache folder, and at the root when
# pytest's cacheprovider plugin was off.
_OLD_IN_PYTEST_CACHE = ("d", "propositions")
_OLD_AT_ROOT = ".pytest_propositions_cache"
#: The database file inside the folder (diskcache's name for it, which a test checks; written
#: here so that checking a folder at a run's start does not import diskcache).
DATABASE_FILE = "cache.db"
#: The judges' calibrations (``calibrate``'s record, calibration.py) inside the folder: written
#: here so that looking for a record, as every run does, does not import the judge.
CALIBRATION_FILE = "calibrations.json"


@dataclass(frozen=True)
class CacheFolder:
    """The verdict cache's folder, and a line to show once when an old cache was moved into it
    (or could not be, and is read where it is); ``problem``: why a run must not start with it."""

    path: Path
    note: str | None = None
    problem: str | None = None


def configured_folder(value: str, base: Path) -> Path:
    """A configured cache folder: ``~`` expanded, a relative one taken from ``base`` (the
    working directory for a flag or a variable, the root for an ini value, as pytest does),
    symbolic links on the way resolved."""
    path = Path(value).expanduser()
    path = path if path.is_absolute() else base / path
    try:
        if os.path.islink(path):
            # A link is kept as given, not replaced by its target: one that leads nowhere is the
            # user's to fix (folder_problem says so), never a folder made elsewhere.
            return path.parent.resolve() / path.name
        return path.resolve()
    except (RuntimeError, OSError):  # a loop of links on the way (folder_problem names it)
        return path.absolute()


def default_folder(
    root: Path, pytest_cache_dir: str | None = None, *, clearing: bool = False
) -> CacheFolder:
    """``.propositions`` at the project ``root``; a cache found only in an old place (inside
    pytest's cache folder, ``pytest_cache_dir`` as its ini option says, or
    ``.pytest_propositions_cache``) is renamed into it, atomically, and said so.

    A rename that fails (another file system, a folder in use on Windows) leaves the old cache
    where it is, read there; a rename another process won is simply the new folder. Nothing is
    created: the cache makes its folder on its first write. ``clearing``: pytest is about to empty
    its cache folder (``--cache-clear``); an old cache there that could not be moved would be
    deleted with it, which is the ``problem`` returned, saying what to do.
    """
    new = root / CACHE_FOLDER
    if os.path.lexists(new):
        return CacheFolder(new)
    base = Path(os.path.expanduser(os.path.expandvars(pytest_cache_dir or PYTEST_CACHE_DIR)))
    olds = [
        (base if base.is_absolute() else root / base).joinpath(*_OLD_IN_PYTEST_CACHE),
        root / _OLD_AT_ROOT,
    ]
    found = [old for old in olds if old.is_dir()]
    if not found:
        return CacheFolder(new)
    old, others = found[0], found[1:]
    left = "".join(
        f"; an older cache at {other} was left as it is (carry its verdicts over with "
        "'python -m pytest_propositions cache export --cache-dir' and 'cache import')"
        for other in others
    )
    try:
        os.rename(old, new)
    except OSError as error:
        if os.path.lexists(new) and not old.is_dir():
            return CacheFolder(new)  # another process moved it first
        if clearing and old != root / _OLD_AT_ROOT:
            return CacheFolder(
                old,
                problem=f"pytest --cache-clear would delete the verdicts at {old}, where earlier "
                f"versions kept them, and they could not be moved to {new} "
                f"({error.strerror or error}): move that folder there, then run again",
            )
        return CacheFolder(
            old,
            f"verdicts read from {old}, where earlier versions kept them: it could not be moved "
            f"to {new} ({error.strerror or error}); move it there, out of reach of "
            f"pytest --cache-clear{left}",
        )
    return CacheFolder(
        new,
        f"moved the verdict cache from {old} to {new}, out of reach of pytest --cache-clear{left}",
    )


def folder_problem(folder: Path) -> str | None:
    """What makes ``folder`` unable to hold the verdict cache, naming it (None when nothing): a
    file where it (or a folder above it) should be, a symbolic link to nowhere or in a loop, a
    folder that cannot be read, or a database that is no file or cannot be read.

    A folder not there yet is fine: the cache makes it on its first write. A link to a folder
    that is not there is not followed by creating its target: it usually names a disk that is
    not mounted, or a checkout that is missing, and verdicts written elsewhere would be lost to
    the next run. Nothing is created; the database file is opened for reading and closed.
    """
    try:
        found = os.stat(folder)
    except OSError as error:
        why = _why_unreached(folder, error)
        return None if why is None else _unusable(folder, why)
    if not stat.S_ISDIR(found.st_mode):
        return _unusable(folder, "it exists and is not a directory")
    database = folder / DATABASE_FILE
    try:
        mode = os.stat(database).st_mode
        if stat.S_ISREG(mode):
            os.close(os.open(database, os.O_RDONLY))
    except FileNotFoundError:
        return None
    except OSError as error:
        return _unusable(folder, f"its database {database} cannot be read ({_said(error)})")
    if not stat.S_ISREG(mode):
        kind = "a folder" if stat.S_ISDIR(mode) else "not a regular file"
        return _unusable(folder, f"its database {database} is {kind}")
    return None


def _target(link: Path) -> str:
    """Where a symbolic link points, as written, and from where it is when written relative."""
    target = os.readlink(link)
    if os.path.isabs(target):
        return target
    return f"{target} ({os.path.normpath(os.path.join(link.parent, target))})"


def _unusable(folder: Path, why: str) -> str:
    return f"cannot use {folder} as the verdict cache folder: {why}"


def _said(error: OSError) -> str:
    return str(error.strerror or error)


def _why_unreached(folder: Path, error: OSError) -> str | None:
    """What is wrong with a folder ``os.stat`` could not reach: a link in a loop or to nowhere,
    on the way or at the end, or a file on the way; None when it is simply not there yet."""
    for place in (*reversed(folder.parents), folder):
        named = "it" if place == folder else str(place)
        if os.path.islink(place):
            try:
                os.stat(place)
            except OSError as problem:
                link = f"{named} is a symbolic link to {_target(place)}"
                if problem.errno == errno.ELOOP:
                    return f"{link}, a loop of links that never reaches a folder"
                if problem.errno in (errno.ENOENT, errno.ENOTDIR):
                    return f"{link}, which does not exist (create it, or remove the link)"
                return f"{named} cannot be read ({_said(problem)})"
        if os.path.lexists(place) and not os.path.isdir(place):
            return f"{place} is a file, so no folder can be made inside it"
    return None if isinstance(error, FileNotFoundError) else f"it cannot be read ({_said(error)})"


# -- the project as pytest finds it ------------------------------------------------------------


@dataclass(frozen=True)
class Project:
    """A project's root, the configuration file that made it the root (None when none did), and
    that file's pytest options (keys and values as written)."""

    root: Path
    config_file: Path | None
    options: Mapping[str, Any]

    def option_values(self) -> dict[str, str | None]:
        """The plugin's options the file sets (``prop_model = ...``), by name and as text, as
        pytest's ``getini`` gives them to ``settings.resolve``."""
        return {row.name: str(self.options[row.ini]) for row in OPTIONS if row.ini in self.options}


def _ini_section(path: Path, section: str) -> dict[str, Any] | None:
    parsed = iniconfig.IniConfig(str(path))
    return dict(parsed[section].items()) if section in parsed else None


def _toml(path: Path) -> dict[str, Any]:
    with path.open("rb") as handle:
        return tomllib.load(handle)


def _pytest_ini(path: Path) -> dict[str, Any]:
    return _ini_section(path, "pytest") or {}


def _pytest_toml(path: Path) -> dict[str, Any]:
    table = _toml(path).get("pytest")
    return table if isinstance(table, dict) else {}


def _pyproject(path: Path) -> dict[str, Any] | None:
    tool = _toml(path).get("tool", {}).get("pytest")
    if not isinstance(tool, dict):
        return None
    native = {key: value for key, value in tool.items() if key != "ini_options"}
    options = tool.get("ini_options")
    if native:
        return native
    return options if isinstance(options, dict) else None


def _custom_toml(path: Path) -> dict[str, Any] | None:
    return _pyproject(path) or _pytest_toml(path)


# pytest's configuration files in the order it prefers them in a folder, each with what reads its
# pytest options (None: the file has none and does not count); then readers by suffix, for a file
# given with -c.
_BY_NAME: dict[str, Callable[[Path], dict[str, Any] | None]] = {
    "pytest.toml": _pytest_toml,
    ".pytest.toml": _pytest_toml,
    "pytest.ini": _pytest_ini,
    ".pytest.ini": _pytest_ini,
    "pyproject.toml": _pyproject,
    "tox.ini": lambda path: _ini_section(path, "pytest"),
    "setup.cfg": lambda path: _ini_section(path, "tool:pytest"),
}
_BY_SUFFIX: dict[str, Callable[[Path], dict[str, Any] | None]] = {
    ".ini": lambda path: _ini_section(path, "pytest"),
    ".cfg": lambda path: _ini_section(path, "tool:pytest"),
    ".toml": _custom_toml,
}


def read_options(path: Path) -> dict[str, Any]:
    """The pytest options a configuration file holds, as pytest reads it ({} when it holds none
    or cannot be read: pytest, which read it first, has said what is wrong with it)."""
    reader = _BY_NAME.get(path.name) or _BY_SUFFIX.get(path.suffix)
    if reader is None:
        return {}
    try:
        return reader(path) or {}
    except (OSError, ValueError, iniconfig.ParseError, AttributeError):
        return {}


def find_project(start: Path) -> Project:
    """The project ``start`` is in, found as pytest finds its rootdir when run there without
    arguments: the nearest folder up with a configuration file holding pytest options, else with
    a pyproject.toml, else with a setup.py; else ``start`` itself."""
    start = start.resolve()
    folders = (start, *start.parents)
    first_pyproject: Path | None = None
    for folder in folders:
        for name, reader in _BY_NAME.items():
            path = folder / name
            if not path.is_file():
                continue
            if name == "pyproject.toml" and first_pyproject is None:
                first_pyproject = path
            try:
                options = reader(path)
            except (OSError, ValueError, iniconfig.ParseError, AttributeError):
                options = None  # pytest would refuse it; the search goes on as for none
            if options is not None:
                return Project(folder, path, options)
    if first_pyproject is not None:
        return Project(first_pyproject.parent, first_pyproject, {})
    for folder in folders:
        if (folder / "setup.py").is_file():
            return Project(folder, None, {})
    return Project(start, None, {})


def command_cache_folder(
    given: str | None, env_value: str | None, start: Path
) -> tuple[CacheFolder, Project | None]:
    """The folder a ``python -m pytest_propositions`` command acts on, as a test run started in
    ``start`` would use it: ``--cache-dir``, then ``PROP_CACHE_DIR`` (both from ``start``), then
    the project's ini ``prop_cache_dir`` (from its root), then the project's default folder. The
    project is returned when it was looked for."""
    if given or env_value:
        return CacheFolder(configured_folder(given or env_value or "", start)), None
    project = find_project(start)
    from_ini = project.options.get("prop_cache_dir")
    if from_ini is not None and str(from_ini).strip():
        return CacheFolder(configured_folder(str(from_ini).strip(), project.root)), project
    pytest_cache = project.options.get("cache_dir")
    return default_folder(
        project.root, None if pytest_cache is None else str(pytest_cache)
    ), project
