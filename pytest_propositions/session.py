"""What a pytest run adds to the runtime: building it from the options, the key a test's soft
claims are kept under on its item (judged by markers.py), and finishing the run (what it used, for ``cache
prune``; its reports). xdist's side is in workers.py."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .checks import closest_name
from .reports.counts import header_line
from .runtime import Runtime, misspelt_variables
from .settings import (
    OPTIONS,
    Settings,
    SettingsError,
    cache_mode,
    reference_judge,
    resolve,
)
from .store.location import (
    CALIBRATION_FILE,
    CacheFolder,
    configured_folder,
    default_folder,
    folder_problem,
    read_options,
)

if TYPE_CHECKING:
    from .judging.progress import ProgressLine
    from .soft_claims import SoftClaims

# A line about the verdict cache's folder (an old cache moved) to show once, at the start.
CACHE_NOTE_KEY: pytest.StashKey[str] = pytest.StashKey()


# A test's soft claims (expect_proposition, soft_claims.SoftClaims), kept on its item until its
# teardown has run; here, so that the plugin tells a test without any apart without loading the
# claims' machinery (markers.py, soft_claims.py).
SOFT_CLAIMS_KEY: pytest.StashKey[SoftClaims] = pytest.StashKey()


def unknown_ini_keys(config: pytest.Config) -> list[str]:
    """Each ``prop_``/``prop-`` key of the configuration file (or of ``-o``) that is none of the
    options' table (and no other plugin's), where it was written and the option most like it."""
    written: dict[str, str] = {}
    if config.inipath is not None:
        written.update(dict.fromkeys(read_options(config.inipath), config.inipath.name))
    for item in config.getoption("override_ini", None) or ():
        written.setdefault(item.split("=", 1)[0], "-o")
    known = [option.ini for option in OPTIONS]
    problems = []
    for key, where in written.items():
        if not key.lower().startswith(("prop_", "prop-")) or key in known:
            continue
        try:
            config.getini(key)
            continue  # another plugin's option
        except ValueError:
            pass
        close = closest_name(key.lower().replace("-", "_"), known)
        hint = f"did you mean {close}?" if close else "none of this plugin's options is like it"
        problems.append(f"{key} in {where} ({hint})")
    return problems


def build_runtime(config: pytest.Config) -> Runtime:
    """Settings from flags, environment and ini; a bad value is a usage error naming its source.

    A misspelt ``prop_`` ini key is an error too, not pytest's warning at the end: the option
    meant (the judge, its server, the bar) would silently keep its default."""
    unknown = unknown_ini_keys(config)
    if unknown:
        raise pytest.UsageError(
            f"pytest-propositions: unknown ini option {'; '.join(unknown)}; pytest --help lists "
            "the options (their ini names start with prop_)"
        )
    if not hasattr(config, "workerinput"):  # said once, by the controller
        for line in misspelt_variables(os.environ):
            # A warning, not an error as for the ini: other tools use PROP_ names too.
            config.issue_config_time_warning(
                pytest.PytestConfigWarning(f"pytest-propositions: {line}"), stacklevel=2
            )
    settings = read_settings(config)
    if any(
        base for base in (settings.api_base, settings.referee_api_base, settings.escalate_api_base)
    ):
        # Imported only with a server named: a name litellm cannot route is told now, once,
        # not at the first live claim, after litellm's import.
        from .judging.families import unnamed_providers
        from .judging.transport_litellm import named_in_litellms_map

        unrouted = unnamed_providers(settings, named_in_litellms_map)
        if unrouted:
            raise pytest.UsageError(f"pytest-propositions: {'; '.join(unrouted)}")
    reports = {"--prop-report": settings.report, "--prop-html": settings.html}
    if any(reports.values()) and not hasattr(config, "workerinput"):
        # Found now, not after the judging: a report the run could not write (xdist's
        # controller writes them, not its workers).
        from .reports.json_report import check_report_path

        for option, configured in reports.items():
            try:
                if configured:
                    check_report_path(configured, config.invocation_params.dir, option)
            except ValueError as error:
                raise pytest.UsageError(f"pytest-propositions: {error}") from None
    folder = usable_cache_dir(config, settings)
    runtime = Runtime(settings, folder.path)
    runtime.project_folders = (config.rootpath, config.invocation_params.dir)
    runtime.record.calibrations = calibrations(runtime.cache_dir, settings.reasoning_effort)

    def awaitable_made(claim: Any) -> None:
        from .claims.awaiting import watch_awaited  # loaded with the first claim in async code

        watch_awaited(config, claim)

    runtime.on_awaitable = awaitable_made
    if settings.min_calibration is not None and not hasattr(config, "workerinput"):
        from .calibration import gate_problem

        problem = gate_problem(settings, runtime.cache_dir)
        if problem is not None:
            raise pytest.UsageError(f"pytest-propositions: {problem}")
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        from .workers import worker_progress  # only xdist loads it

        runtime.progress_factory = worker_progress(workerinput, settings.model)
    elif config.get_verbosity() >= -1:

        def terminal_line() -> ProgressLine:
            from .judging.progress import ProgressLine, display_for

            return ProgressLine(display_for(config, lambda: runtime.current_test), settings.model)

        runtime.progress_factory = terminal_line
    return runtime


def read_settings(config: pytest.Config) -> Settings:
    """The run's settings: flags, environment, ini (and a reference-library ``config.ini`` for
    the judge); a bad value is a usage error naming its source."""
    cli = {option.name: config.getoption("prop_" + option.name) for option in OPTIONS}
    ini = {option.name: config.getini(option.ini) for option in OPTIONS}
    try:
        # A project set up for the reference library names its judge in config.ini: in the
        # rootdir, else where pytest was started. Used only when no --prop-model is given.
        reference = reference_judge([config.rootpath, config.invocation_params.dir])
        return resolve(cli, os.environ, ini, reference)
    except SettingsError as error:
        raise pytest.UsageError(f"pytest-propositions: {error}") from None


def usable_cache_dir(
    config: pytest.Config, settings: Settings, *, clearing: bool = False
) -> CacheFolder:
    """The run's cache folder (``cache_dir``), checked at the start when the cache mode uses it
    (``off`` never touches it): a folder that cannot hold verdicts is a usage error naming it,
    not a traceback at the end. An old cache moved into it is said once, at the session's start.
    ``clearing``: pytest is about to empty its cache folder (see ``move_old_cache``)."""
    folder = cache_dir(config, settings.cache_dir, clearing=clearing)
    if folder.problem is not None:
        raise pytest.UsageError(f"pytest-propositions: {folder.problem}")
    problem = folder_problem(folder.path) if cache_mode(settings.cache).uses_cache else None
    if problem is not None:
        raise pytest.UsageError(
            f"pytest-propositions: {problem}; fix it, give another folder with --prop-cache-dir, "
            "or run with --prop-cache=off"
        )
    if folder.note is not None and not hasattr(config, "workerinput"):
        config.stash[CACHE_NOTE_KEY] = folder.note
    return folder


def move_old_cache(config: pytest.Config) -> None:
    """From pytest_cmdline_main, before any command configures pytest: with ``--cache-clear``,
    pytest's cache plugin empties its folder, where earlier versions kept verdicts, in its own
    pytest_configure (tryfirst: before this plugin's). An old cache there is moved out first, and
    a folder that cannot be used stops the run before anything is deleted. An xdist worker
    starts after its controller did both."""
    if config.getoption("cacheclear", False) and not hasattr(config, "workerinput"):
        usable_cache_dir(config, read_settings(config), clearing=True)


def calibrations(
    folder: Path | None, reasoning_effort: str | None
) -> Callable[[str], Mapping[str, Any] | None]:
    """The judges' calibrations for the reports, by identity: looked for at the first report
    that asks, once (a run without claims asks nothing); calibration.py is imported and the
    record read only when one exists."""
    book: list[Callable[[str], Mapping[str, Any] | None]] = []

    def lookup(identity: str) -> Mapping[str, Any] | None:
        if not book:
            if folder is None or not (folder / CALIBRATION_FILE).is_file():
                book.append(lambda _identity: None)
            else:
                from .calibration import Calibrations

                book.append(Calibrations(folder, reasoning_effort))
        return book[0](identity)

    return lookup


def say_cache_moved(config: pytest.Config) -> None:
    """An old verdict cache moved (or read where it is): said once at the session's start,
    whatever the verbosity (-q hides the header)."""
    note = config.stash.get(CACHE_NOTE_KEY, None)
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if note is not None and reporter is not None:
        reporter.write_line(f"propositions: {note}", yellow=True)


def cache_dir(
    config: pytest.Config, configured: str | None, *, clearing: bool = False
) -> CacheFolder:
    """The configured folder (a relative ini value from the rootdir, as pytest's own cache_dir),
    else the project's own at the rootdir (store/location.py: where an old cache is moved from;
    ``clearing``, as there)."""
    if configured:
        from_ini = not config.getoption("prop_cache_dir") and not os.environ.get("PROP_CACHE_DIR")
        base = config.rootpath if from_ini else config.invocation_params.dir
        return CacheFolder(configured_folder(configured, base))
    try:
        pytest_cache: str | None = config.getini("cache_dir")
    except ValueError:  # -p no:cacheprovider: its option is not registered
        pytest_cache = None
    return default_folder(config.rootpath, pytest_cache, clearing=clearing)


def finish_run(runtime: Runtime, session: pytest.Session) -> str | None:
    """Fail a run that saw a judge error, record what the run used, for prune, and write the
    reports; returns a problem to show."""
    config, exitstatus = session.config, session.exitstatus
    if exitstatus == pytest.ExitCode.OK and runtime.record.judge_errors:
        # A judge error no failed test shows (the test caught it and skipped, or it came after
        # its test ended) is never a pass either: the summary names its tests.
        session.exitstatus = exitstatus = pytest.ExitCode.TESTS_FAILED
    # Passed or failed, the run finished: what it used counts. An interrupted one may have
    # stopped before tests that need their verdicts.
    if exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
        runtime.record_usage()
    problems = []
    if runtime.settings.report:
        from .reports.json_report import save_json_report

        problems.append(save_json_report(runtime, config.invocation_params.dir))
    if runtime.settings.html:
        from .reports.html import save_html_report

        problems.append(save_html_report(runtime, config.invocation_params.dir))
    return "; ".join(problem for problem in problems if problem) or None


def header_lines(runtime: Runtime) -> list[str]:
    """pytest's header: the judge and the cache, the judge's calibration, the shared store."""
    folder = runtime.cache_dir
    lines = [header_line(runtime.settings, str(folder) if folder else None)]
    # calibration.py (and the judge it names) is loaded only when a record or the gate asks.
    if runtime.settings.min_calibration is not None or (
        folder is not None and (folder / CALIBRATION_FILE).is_file()
    ):
        from .calibration import header_line as calibration_line

        calibration = calibration_line(runtime.settings, folder)
        if calibration is not None:
            lines.append(f"propositions: {calibration}")
    if runtime.settings.store and cache_mode(runtime.settings.cache).uses_cache:
        from .store.shared import describe_store

        lines.append(f"propositions: shared verdict store {describe_store(runtime.settings.store)}")
    return lines
