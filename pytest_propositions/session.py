"""What a pytest run adds to the runtime: building it from the options, and finishing the run
(what it used, for ``cache prune``; its reports). xdist's side is in workers.py."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .reports.counts import header_line
from .runtime import Runtime
from .settings import OPTIONS, SettingsError, reference_judge, resolve

if TYPE_CHECKING:
    from .judging.progress import ProgressLine
    from .markers import SoftClaims

FALLBACK_CACHE_FOLDER = ".pytest_propositions_cache"
# calibration.RECORD_NAME: the calibrations beside the cache, looked for without importing it.
CALIBRATION_RECORD = "calibrations.json"
# A test's soft claims (expect_proposition), kept on its item until its teardown has run.
SOFT_CLAIMS_KEY: pytest.StashKey[SoftClaims] = pytest.StashKey()


def build_runtime(config: pytest.Config) -> Runtime:
    """Settings from flags, environment and ini; a bad value is a usage error naming its source."""
    cli = {option.name: config.getoption("prop_" + option.name) for option in OPTIONS}
    ini = {option.name: config.getini(option.ini) for option in OPTIONS}
    try:
        # A project set up for the reference library names its judge in config.ini: in the
        # rootdir, else where pytest was started. Used only when no --prop-model is given.
        reference = reference_judge([config.rootpath, config.invocation_params.dir])
        settings = resolve(cli, os.environ, ini, reference)
    except SettingsError as error:
        raise pytest.UsageError(f"pytest-propositions: {error}") from None
    if settings.report:
        from .reports.json_report import report_path

        try:
            report_path(settings.report, config.invocation_params.dir)
        except ValueError as error:
            raise pytest.UsageError(f"pytest-propositions: {error}") from None
    runtime = Runtime(settings, cache_dir(config, settings.cache_dir))
    runtime.project_folders = (config.rootpath, config.invocation_params.dir)
    runtime.record.calibrations = calibrations(runtime.cache_dir, settings.reasoning_effort)
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
            from .judging.progress import ProgressLine, TerminalLine

            return ProgressLine(TerminalLine(config, lambda: runtime.current_test), settings.model)

        runtime.progress_factory = terminal_line
    return runtime


def calibrations(
    folder: Path | None, reasoning_effort: str | None
) -> Callable[[str], Mapping[str, Any] | None]:
    """The judges' calibrations for the reports, by identity: looked for at the first report
    that asks, once (a run without claims asks nothing); calibration.py is imported and the
    record read only when one exists."""
    book: list[Callable[[str], Mapping[str, Any] | None]] = []

    def lookup(identity: str) -> Mapping[str, Any] | None:
        if not book:
            if folder is None or not (folder / CALIBRATION_RECORD).is_file():
                book.append(lambda _identity: None)
            else:
                from .calibration import Calibrations

                book.append(Calibrations(folder, reasoning_effort))
        return book[0](identity)

    return lookup


def cache_dir(config: pytest.Config, configured: str | None) -> Path:
    """The configured folder, else one inside pytest's cache, else one at the rootdir."""
    if configured:
        path = Path(configured).expanduser()
        from_ini = not config.getoption("prop_cache_dir") and not os.environ.get("PROP_CACHE_DIR")
        if from_ini and not path.is_absolute():
            # Like pytest's own cache_dir: a relative ini value is relative to the rootdir.
            path = config.rootpath / path
        return path.resolve()
    if getattr(config, "cache", None) is not None:
        # pytest's own cache folder, resolved as pytest does, but not created: an unused plugin
        # leaves no trace, and the verdict cache makes its folder on its first write.
        base = Path(os.path.expanduser(os.path.expandvars(config.getini("cache_dir"))))
        if not base.is_absolute():
            base = config.rootpath / base
        return base / "d" / "propositions"
    return config.rootpath / FALLBACK_CACHE_FOLDER


def finish_run(runtime: Runtime, config: pytest.Config, exitstatus: int) -> str | None:
    """Record what the run used, for prune, and write the reports; returns a problem to show."""
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
        folder is not None and (folder / CALIBRATION_RECORD).is_file()
    ):
        from .calibration import header_line as calibration_line

        calibration = calibration_line(runtime.settings, folder)
        if calibration is not None:
            lines.append(f"propositions: {calibration}")
    if runtime.settings.store and runtime.settings.cache != "off":
        from .store.postgres import describe_store

        lines.append(f"propositions: shared verdict store {describe_store(runtime.settings.store)}")
    return lines
