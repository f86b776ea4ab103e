"""The commands of ``python -m pytest_propositions``: their parser, and the cache commands on a
local verdict cache (on a shared store: cli/store.py); rejudge (also ``cache rejudge``),
calibrate and diff are handed to cli/rejudge.py, cli/calibrate.py and reports/diff.py.

The cache commands load the cache modules and the other commands' parsers, never pytest, litellm
or pydantic, so they are quick and work on machines without a judge configured; ``calibrate``
judges, so it loads the judge when it runs.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sqlite3
import stat
import sys
import tempfile
from collections.abc import Iterable, Sequence
from datetime import datetime
from pathlib import Path

from ..checks import InputFileError, plural, read_text_lines
from ..errors import CalibrationError
from ..reports.diff import ReportError
from ..reports.diff import run as diff
from ..runtime import misspelt_variables
from ..settings import OPTIONS_BY_NAME, SettingsError, add_command_flags
from ..store.cache import CacheError, CacheStats, ImportLineError, VerdictCache
from ..store.location import CACHE_FOLDER, command_cache_folder, folder_problem
from ..store.shared import describe_store
from . import calibrate, rejudge
from .store import StoreCommands

PROG = "python -m pytest_propositions"
ENV_CACHE_DIR = OPTIONS_BY_NAME["cache_dir"].env
ENV_STORE = OPTIONS_BY_NAME["store"].env


class UsageError(Exception):
    """A mistake the user can fix; reported as ``error: ...`` with exit code 2, no traceback."""


_REJUDGE_HELP = "ask every stored request again with another judge; list the flips"
_REJUDGE_DESCRIPTION = (
    "Ask every stored judge request again, of another model, without running any test, and "
    "store the answers under that model's keys: afterwards 'pytest --prop-model=NEW "
    "--prop-cache=replay' is served from the cache. Lists the verdicts that flipped (a claim "
    "over runs' verdicts each with its run, when the record keeps it) and the scores that "
    "moved without crossing the bar; the last line reads 'N re-judged, K flipped, M score "
    "changes', counted as 'diff' counts."
)


def _build_parser() -> argparse.ArgumentParser:
    # --cache-dir for every command that reads the local cache; --store only for the cache
    # commands that act on a shared store.
    folder = argparse.ArgumentParser(add_help=False)
    folder.add_argument(
        "--cache-dir",
        metavar="DIR",
        default=argparse.SUPPRESS,
        help=(
            f"the verdict cache directory (default: ${ENV_CACHE_DIR} if set, else where a "
            "test run started here keeps it: the project's ini prop_cache_dir, else "
            f"{CACHE_FOLDER} at the project's root, found as pytest finds its rootdir)"
        ),
    )
    common = argparse.ArgumentParser(add_help=False, parents=[folder])
    common.add_argument(
        "--store",
        metavar="URL",
        default=argparse.SUPPRESS,
        help=(
            f"act on the shared PostgreSQL verdict store instead (default: ${ENV_STORE} if "
            "set): stats, export, import, prune, repair, and push (the local cache up to the store)"
        ),
    )
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Tools for pytest-propositions, the pytest plugin that judges "
        "natural-language claims with an LLM and caches the verdicts.",
        epilog="Run '%(prog)s cache --help' for the cache commands, '%(prog)s COMMAND --help' "
        "for the others.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    cache = commands.add_parser(
        "cache",
        parents=[common],
        help="inspect, export, import, prune or clear the verdict cache",
        description="Inspect and maintain the verdict cache.\n\n"
        "Verdicts are keyed by the fully rendered judge request, so an entry only ever\n"
        "answers that exact request; a changed claim, prompt or model misses the cache.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n"
        f"  {PROG} cache stats\n"
        f"  {PROG} cache export -o verdicts.jsonl     # commit it, review it in diffs\n"
        f"  {PROG} cache import verdicts.jsonl        # then: pytest --prop-cache=replay\n"
        f"  {PROG} cache prune                        # after the runs whose verdicts you keep\n",
    )
    actions = cache.add_subparsers(dest="action", metavar="ACTION", required=True)
    actions.add_parser(
        "stats",
        parents=[common],
        help="show entries, size, models, age and what the runs since the last prune used",
        description="Show what the verdict cache holds.",
    )
    export = actions.add_parser(
        "export",
        parents=[common],
        help="write every verdict as sorted JSON lines",
        description="Write every verdict as one canonical JSON line, sorted by key: the same "
        "cache always exports the same bytes, so the file can be committed and diffed.",
    )
    export.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="write to FILE, a new path or a regular file outside the cache (atomically: a "
        "temporary file renamed into place) (default: standard output)",
    )
    imp = actions.add_parser(
        "import",
        parents=[common],
        help="merge verdicts from an export",
        description="Merge the verdicts of an export into the cache; on a shared key the "
        "file wins (a store keeps the verdict it holds). Every line is checked: the good ones "
        "are imported, each bad one is named, and the exit code is 1 when there was one. "
        "Creates the cache if there is none.",
    )
    imp.add_argument("file", metavar="FILE", help="an export file, or - for standard input")
    actions.add_parser(
        "prune",
        parents=[common],
        help="remove verdicts no test run used since the last prune",
        description="Every test run that finishes (passed or failed, any -k/-m selection or "
        "paths, every xdist worker; not an interrupted one, not --prop-cache=off or replay) "
        "records which verdicts it used. Prune keeps the verdicts used by the runs since the "
        "last prune, and those stored after the first of them started; it removes the rest, "
        "then starts the count afresh. So: run every test whose verdicts you want to keep "
        "(all shards, all paths), then prune. Refuses if no run has recorded its use yet.",
    )
    rejudge_parser = actions.add_parser(
        "rejudge", parents=[common], help=_REJUDGE_HELP, description=_REJUDGE_DESCRIPTION
    )
    add_command_flags(rejudge_parser, rejudge.FLAGS, required=("model",))
    push = actions.add_parser(
        "push",
        parents=[common],
        help="send the local cache's verdicts to the shared store (--store)",
        description="Send every verdict of the local cache to the shared store, those a run "
        "could not share (the store was lost or refused them) included. The store keeps the "
        "first verdict of each request, and the local cache is never changed: where the store "
        "holds another value, the output says how many.",
    )
    push.add_argument(
        "--replace",
        action="store_true",
        help="the store's owner's: replace the stored verdicts with this machine's (after a "
        "--prop-cache=refresh the store refused; the role needs UPDATE)",
    )
    actions.add_parser(
        "repair",
        parents=[common],
        help="remove the shared store's damaged records (--store; the role needs DELETE)",
        description="Remove every record of the shared store that is not a verdict this "
        "version can read (not JSON, a wrong shape or value, a verdict of the other kind than "
        "its record), naming each. Runs then judge those claims once and 'cache push' refills "
        "them. Only the store: a damaged record of the local cache is replaced by the next run.",
    )
    actions.add_parser(
        "clear",
        parents=[common],
        help="remove every verdict",
        description="Remove every verdict and the record of which ones runs used.",
    )
    top_rejudge = commands.add_parser(
        "rejudge", parents=[folder], help=_REJUDGE_HELP, description=_REJUDGE_DESCRIPTION
    )
    add_command_flags(top_rejudge, rejudge.FLAGS, required=("model",))
    calibrate_parser = commands.add_parser(
        "calibrate",
        parents=[folder],
        help="measure a judge on labeled claims: is it fit to gate CI?",
        description="Judge labeled claims (the shipped set, or your own with --set) through the "
        "same path as tests, verdict cache included, and report balanced accuracy, the "
        "false-pass rate and more. The result is recorded beside the verdict cache, where the "
        "pytest header and --prop-min-calibration find it. Exit 1 when a bar given is missed.",
        epilog="examples:\n"
        f"  {PROG} calibrate --model openai/gpt-4.1-mini --max-false-pass 0.05\n"
        f"  {PROG} calibrate --set builtin --set my_items.jsonl --json calibration.json\n",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    diff = commands.add_parser(
        "diff",
        help="compare two --prop-report files: flipped verdicts, score changes, added, removed",
        description="Compare two --prop-report files (say, the same suite judged by two models). "
        "Claims are matched by test id, claim and kind. The last line reads 'N flipped, M score "
        "changes, A added, R removed'. Exit 1 when a verdict flipped.",
    )
    diff.add_argument("old", metavar="OLD.json")
    diff.add_argument("new", metavar="NEW.json")
    calibrate.add_arguments(calibrate_parser)
    return parser


def _cache_dir(args: argparse.Namespace) -> Path:
    """The folder the command acts on (settings.py's rule, as a test run started here); which
    project's it is, when found above the working directory, and an old cache moved into it are
    said on standard error."""
    start = Path.cwd()
    folder, project = command_cache_folder(
        getattr(args, "cache_dir", None), os.environ.get(ENV_CACHE_DIR), start
    )
    if project is not None and project.root != start.resolve():
        found = f" (its {project.config_file.name})" if project.config_file else ""
        print(
            f"the verdict cache of the project at {project.root}{found}: {folder.path}",
            file=sys.stderr,
        )
    if folder.note is not None:
        print(folder.note, file=sys.stderr)
    return folder.path


def _warn(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr)


def _format_size(size: int) -> str:
    value = float(size)
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{size} bytes" if unit == "bytes" else f"{value:.1f} {unit} ({size} bytes)"
        value /= 1024
    raise AssertionError("unreachable")


def _format_time(moment: datetime | None) -> str:
    return moment.isoformat() if moment is not None else "-"


def _stats_lines(stats: CacheStats) -> Iterable[str]:
    yield f"directory: {stats.directory}"
    yield f"entries: {stats.entries}"
    yield f"size: {_format_size(stats.size_bytes)}"
    if stats.models:
        yield "models:"
        for model, count in stats.models.items():
            yield f"  {model}: {count}"
    else:
        yield "models: -"
    yield f"oldest: {_format_time(stats.oldest)}"
    yield f"newest: {_format_time(stats.newest)}"
    usage = stats.usage
    if usage is None:
        yield "last run that recorded usage: none since the cache was created or last pruned"
    else:
        yield (
            f"last run that recorded usage: finished {_format_time(usage.last_finished)} "
            f"({plural(usage.runs, 'run')} since {_format_time(usage.since)} used "
            f"{plural(len(usage.keys), 'verdict')}; prune keeps those)"
        )


def _existing(directory: Path) -> VerdictCache:
    """The cache at ``directory``; a missing one is an error, and is not created, as is a folder
    that cannot hold one."""
    problem = folder_problem(directory)
    if problem is not None:
        raise UsageError(problem)
    cache = VerdictCache(directory, warn=_warn)
    if not cache.exists:
        raise UsageError(f"no verdict cache at {directory}")
    return cache


_NOT_REGULAR = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISLNK, "a symbolic link"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _export_target(output: str, directory: Path) -> Path:
    """Where an export may go: a new path or a regular file outside the verdict cache.

    The export is a file renamed over the path, which would replace whatever is there: a device
    node, a FIFO, a symlink (not its target), or the cache's own database."""
    target = Path(output)
    if target.name in ("", ".", ".."):
        raise UsageError(f"cannot write {output}: expected a file name")
    try:
        mode = os.lstat(target).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise UsageError(f"cannot write {output}: {exc.strerror or exc}") from None
    if mode is not None and not stat.S_ISREG(mode):
        what = next((name for test, name in _NOT_REGULAR if test(mode)), "not a regular file")
        raise UsageError(
            f"cannot write {output}: it is {what}, which the export would replace; "
            "give a new path or a regular file"
        )
    cache = Path(os.path.realpath(directory))
    where = Path(os.path.realpath(target.parent)) / target.name
    if where == cache or cache in where.parents:
        raise UsageError(
            f"cannot write {output}: it is inside the verdict cache at {directory}, whose files "
            "the export would replace; write it outside that folder"
        )
    return target


def _export(lines: Iterable[str], source: object, output: str | None, directory: Path) -> None:
    if output is None:
        sys.stdout.writelines(lines)
        sys.stdout.flush()
        return
    target = _export_target(output, directory)
    try:
        fd, temp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    except OSError as exc:
        raise UsageError(f"cannot write {output}: {exc.strerror or exc}") from None
    try:
        with open(fd, "w", encoding="utf-8", newline="\n") as handle:
            count = 0
            for line in lines:
                handle.write(line)
                count += 1
            handle.flush()
            os.fsync(handle.fileno())
        # mkstemp makes the file private; give the export the permissions a plain write would.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temp, 0o666 & ~umask)
        os.replace(temp, target)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        if isinstance(exc, OSError):
            raise UsageError(f"cannot write {output}: {exc.strerror or exc}") from None
        raise
    print(f"exported {plural(count, 'verdict')} from {source} to {output}")


def _store_url(args: argparse.Namespace) -> str | None:
    return getattr(args, "store", None) or os.environ.get(ENV_STORE) or None


def _store_timeout() -> float:
    """How long a query to the store may take: PROP_STORE_TIMEOUT, read as a run reads it."""
    option = OPTIONS_BY_NAME["store_timeout"]
    raw = os.environ.get(option.env)
    try:
        return float(option.parse(raw) if raw else option.default_value())
    except ValueError as error:
        raise UsageError(f"environment variable {option.env}: {error}") from None


def _at_fault(args: argparse.Namespace, directory: Path | None) -> str:
    """What an unexpected error is named after: the store when a command acts on one."""
    store = _store_url(args) if getattr(args, "command", None) == "cache" else None
    if store is not None:
        return f"the verdict store {describe_store(store)}"
    return f"the verdict cache at {directory}" if directory else "the command"


def _run(args: argparse.Namespace, directory: Path) -> int:
    action: str = args.action
    store = _store_url(args)
    if store is not None or action in ("push", "repair"):
        if store is None:
            raise UsageError(f"cache {action} needs the store: --store URL or ${ENV_STORE}")
        with StoreCommands(store, directory, _warn, _store_timeout()) as commands:
            if action == "export":
                _export(commands.export_lines(), commands.where, args.output, directory)
                if commands.damaged:
                    print(
                        f"error: {len(commands.damaged)} damaged record(s) in {commands.where} "
                        "were left out (named above); its owner removes them with "
                        f"'{PROG} cache repair --store {commands.where}'",
                        file=sys.stderr,
                    )
                    return 1
                return 0
            if action == "import":
                name, lines = read_text_lines(args.file)
                return commands.import_lines(name, lines)
            return commands.run(action, replace=getattr(args, "replace", False))
    if action == "import":
        name, lines = read_text_lines(args.file)
        cache = VerdictCache(directory, warn=_warn)
        bad: list[ImportLineError] = []
        count = cache.import_lines(lines, bad=bad)
        for exc in bad:
            _warn(f"{name}:{exc.lineno}: {exc.expected}; this line was not imported")
        print(
            f"imported {plural(count, 'verdict')} into {cache.directory}"
            + (f"; {len(bad)} bad line(s) of {name} left out" if bad else "")
        )
        return 1 if bad else 0
    if action == "rejudge":
        return rejudge.run(directory, args)
    cache = _existing(directory)
    try:
        if action == "stats":
            for line in _stats_lines(cache.stats()):
                print(line)
        elif action == "export":
            _export(cache.export_lines(), cache.directory, args.output, cache.directory)
        elif action == "prune":
            count, usage = cache.prune()
            print(
                f"pruned {plural(count, 'verdict')} not used by the {plural(usage.runs, 'run')} "
                f"since {_format_time(usage.since)} from {cache.directory}"
            )
        elif action == "clear":
            removed = cache.clear()
            print(f"removed {plural(removed, 'verdict')} from {cache.directory}")
        else:  # pragma: no cover - argparse only lets the actions above through
            raise UsageError(f"unknown action {action!r}")
    finally:
        cache.close()
    if cache.damaged:
        # Each was named in a warning; the exit code tells a script the output is incomplete.
        print(
            f"error: {len(cache.damaged)} damaged record(s) in {cache.directory} could not be "
            f"read and were left out (see the warnings above); 'cache clear' removes them, "
            "or let the next run judge those claims again",
            file=sys.stderr,
        )
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit code (2 for anything the user can fix)."""
    parser = _build_parser()
    args = parser.parse_args(argv)
    directory: Path | None = None
    try:
        if args.command == "diff":
            return diff(args.old, args.new)
        directory = _cache_dir(args)
        if args.command in ("calibrate", "rejudge") or getattr(args, "action", "") == "rejudge":
            for line in misspelt_variables(os.environ):
                _warn(line)  # these commands read PROP_* variables as a run does
        if args.command == "calibrate":
            return calibrate.run(args, directory)
        if args.command == "rejudge":
            return rejudge.run(directory, args)
        return _run(args, directory)
    except BrokenPipeError:
        # The reader (say ``| head``) stopped early; that is not an error worth a traceback.
        # Point stdout at devnull so the interpreter's final flush does not fail again.
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    # OSError: the file system refused (permissions, a full disk...), the user's to fix.
    except (
        UsageError,
        InputFileError,
        CacheError,
        CalibrationError,
        SettingsError,
        ReportError,
        OSError,
    ) as exc:  # NoUsageRecordedError included
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except sqlite3.Error as exc:  # e.g. a read-only database file
        print(f"error: cannot use {_at_fault(args, directory)}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        # Whatever else a damaged cache can raise: a message, never a traceback.
        print(
            f"error: cannot use {_at_fault(args, directory)}: {type(exc).__name__}: {exc}",
            file=sys.stderr,
        )
        return 1
