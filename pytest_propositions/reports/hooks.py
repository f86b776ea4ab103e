"""The per-test reporting hooks: JUnit properties, failure sections, the judge-error and
not-upheld outcomes, pytest-html's extras, and the terminal summary's lines.

Registered by the plugin at the session's first claim (``Runtime.on_first_claim``), so a suite
that makes none pays nothing for them on each test; on an xdist controller, as workers are
configured. Each holds the run's ``Runtime`` it reports on. The longer reports (``summary``,
``junit``, ``html``) are imported where a report needs them: a run whose claims all pass, with no
JUnit file, prints only its counts and never loads them (tests/test_cache_plugin.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Generator
from typing import TYPE_CHECKING, Any

import pytest
from _pytest._code.code import ExceptionRepr

from ..errors import JudgeError, PropositionFailed
from ..redaction import redact_repr
from ..settings import cache_mode
from ..store.cache import unstored_lines
from .counts import (
    after_its_test_line,
    all_cached_line,
    caught_judge_errors_line,
    dry_run_line,
    run_calibrations,
    run_counts,
    summary_line,
    unshown_judge_errors_line,
)

if TYPE_CHECKING:
    from ..runtime import Runtime

CLAIM_REPORTS = "propositions-reports"
OUTCOME_STATUS = "propositions-outcome-status"
# How many of a test's outcomes are already JUnit properties (claims may come in any phase).
JUNIT_DONE_KEY = pytest.StashKey[int]()
# How many of a test's outcomes a failing phase's report section has shown.
SHOWN_KEY = pytest.StashKey[int]()
# Set on a test's report (xdist carries them to the controller): the JudgeError's class name
# (CAUGHT for a report made a judge error because the test caught one), how many judge errors
# the test's own code caught, and how many of the test's claims were not upheld under
# --prop-outcome=report.
JUDGE_ERROR_ATTR = "propositions_judge_error"
CAUGHT_ATTR = "propositions_caught_judge_errors"
NOT_UPHELD_ATTR = "propositions_not_upheld"
CAUGHT = "caught"


def report_claims(config: pytest.Config, runtime: Runtime, *, with_status: bool = False) -> None:
    """Start the per-test reporting hooks, once per session; ``with_status``: the hooks that
    read a report's marks too (an xdist controller, whose reports arrive already made)."""
    if config.pluginmanager.get_plugin(CLAIM_REPORTS) is None:
        config.pluginmanager.register(ClaimReports(config, runtime), CLAIM_REPORTS)
    if with_status:
        report_statuses(config, runtime)


def report_statuses(config: pytest.Config, runtime: Runtime) -> None:
    """Start the hooks that read a report's judge-error and not-upheld marks, at the first report
    that carries one: they run for every report, and most runs mark none."""
    if config.pluginmanager.get_plugin(OUTCOME_STATUS) is None:
        config.pluginmanager.register(OutcomeStatus(config, runtime), OUTCOME_STATUS)


def terminal_summary(terminalreporter: Any, config: pytest.Config, runtime: Runtime) -> None:
    """The run's summary lines: verdicts (report mode or -vv), counts, store, dry run, lowest."""
    stats = runtime.stats()
    mode = runtime.settings.outcome
    very_verbose = config.option.verbose > 1
    record = runtime.record
    if (record.outcomes or record.judge_errors) and (mode == "report" or very_verbose):
        from .summary import verdict_listing

        terminalreporter.write_sep("=", "propositions: claims and the judge's verdicts")
        listing = verdict_listing(record.outcomes, mode, very_verbose, record.judge_errors)
        for line in listing:
            terminalreporter.write_line(line)
    counts = run_counts(runtime.record.outcomes, runtime.record.judge_errors, stats)
    terminalreporter.write_line(summary_line(counts, mode))
    cached = all_cached_line(counts)
    if cached is not None:
        terminalreporter.write_line(cached)
    late = after_its_test_line(runtime.record.outcomes)
    if late is not None:
        terminalreporter.write_line(late)
    # Judge errors no failing test's own exception shows: each fails the run all the same.
    unraised = [
        caught_judge_errors_line(runtime.record.caught_judge_errors),
        unshown_judge_errors_line(runtime.record.judge_errors_unshown()),
    ]
    for line in filter(None, unraised):
        terminalreporter.write_line(line, red=True)
    # The measured error of each calibrated judge that decided a claim (calibrate's record).
    for view in run_calibrations(runtime.record.outcomes, runtime.record.calibrations).values():
        from .summary import calibration_line

        terminalreporter.write_line(f"propositions: {calibration_line(view)}")
    if runtime.settings.store and cache_mode(runtime.settings.cache).uses_cache:
        # The shared store's modules load only in a run that has a store.
        from ..store.shared import describe_store
        from ..store.tiered import store_summary

        where = describe_store(runtime.settings.store)
        for line in store_summary(runtime.store_counts(), where):
            terminalreporter.write_line(line, yellow="NOT shared" in line)
    if cache_mode(runtime.settings.cache).uses_cache:
        for line in unstored_lines(runtime.store_counts(), runtime.cache_dir):
            terminalreporter.write_line(line, yellow=True)
    if runtime.settings.dry_run:
        terminalreporter.write_line(
            dry_run_line(
                stats.dry_run_misses,
                stats.dry_run_prompt_tokens,
                stats.dry_run_cost_usd,
                stats.dry_run_unpriced,
            )
        )
    if config.option.verbose > 0:
        from .summary import lowest_scores_table

        for line in lowest_scores_table(runtime.record.outcomes):
            terminalreporter.write_line(line)


def failure_text_section(report: pytest.TestReport, title: str, text: str) -> None:
    """A section of the failure's own text, which junitxml writes into ``<failure>`` (or
    ``<error>``) and the terminal shows after the traceback; ``report.sections`` never reach
    JUnit. A failure that is plain text (a plugin's own item) keeps it as a report section."""
    if isinstance(report.longrepr, ExceptionRepr):
        report.longrepr.addsection(title, text)
    else:
        report.sections.append((title, text))


def redact_failure(report: pytest.TestReport) -> None:
    """The failure of a test that made claims as the terminal and JUnit show it, redacted of the
    known secrets: a target or a claim variable holding a key reaches a traceback's locals
    (``-l``), the assertion's details and the report's sections. Done before xdist carries it."""
    report.longrepr = _redacted_repr(report.longrepr, set())
    report.sections = [(title, redact_repr(text)) for title, text in report.sections]


def _redacted_repr(value: Any, seen: set[int]) -> Any:
    """``value`` (pytest's failure representation: dataclasses of strings, lists and tuples)
    with its strings redacted; its dataclasses changed in place."""
    if isinstance(value, str):
        return redact_repr(value)
    if isinstance(value, list | tuple):
        items = [_redacted_repr(item, seen) for item in value]
        return items if isinstance(value, list) else tuple(items)
    # (Each once: pytest shares the crash's location and traceback between fields.)
    if dataclasses.is_dataclass(value) and not isinstance(value, type) and id(value) not in seen:
        seen.add(id(value))
        for field in dataclasses.fields(value):
            item = getattr(value, field.name, None)
            shown = _redacted_repr(item, seen)
            if shown is not item:
                setattr(value, field.name, shown)
    return value


class ClaimReports:
    """Per-test reporting of claims: JUnit properties, the failure report's sections, and the
    outcomes of their own (a judge error, a claim not upheld in report mode)."""

    def __init__(self, config: pytest.Config, runtime: Runtime) -> None:
        self.config = config
        self.runtime = runtime
        # Verdicts become JUnit properties only when a JUnit file is written (an xdist worker
        # has the option too, and its reports carry them to the controller, which writes it).
        self.junit = bool(config.getoption("xmlpath", None))
        self.report_mode = runtime.settings.outcome == "report"
        # How many of the run's judge errors the reports made so far have looked at.
        self.judge_errors_seen = 0

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        runtime = self.runtime
        caught: list[str] = []
        # A setup that went through leaves its judge errors to the call's report: failing it
        # would keep the test from running.
        looks = report.when != "setup" or report.outcome != "passed"
        if looks and len(runtime.record.judge_errors) > self.judge_errors_seen:
            caught = self.caught_judge_errors(item, report, call)
        quiet = report.when != "call" or not (self.report_mode or runtime.record.over_runs)
        if report.outcome == "passed" and not self.junit and quiet:
            return report  # most reports: a passing phase, with nothing to add
        if self.junit and report.when != "setup" and runtime.record.outcomes:
            # Every verdict becomes JUnit properties, pass or fail. junitxml reads the teardown
            # report, which copies item.user_properties; claims judged in teardown are added there.
            done = item.stash.get(JUNIT_DONE_KEY, 0)
            new = runtime.record.outcomes_of(item.nodeid, start=done)
            if new:
                from .junit import junit_properties

                properties = junit_properties(
                    new, done + 1, runtime.settings.outcome, runtime.record.calibrations
                )
                item.user_properties.extend(properties)
                report.user_properties.extend(properties)
                item.stash[JUNIT_DONE_KEY] = done + len(new)
        if report.outcome == "passed" and report.when == "call":
            mine = runtime.record.outcomes_of(item.nodeid)
            if self.report_mode:
                # A claim judged by a call (check_proposition...) fails nothing, in any mode.
                not_upheld = sum(1 for o in mine if not o.passed and o.by_call is None)
                if not_upheld:
                    setattr(report, NOT_UPHELD_ATTR, not_upheld)
                    report_statuses(self.config, runtime)
            if any(o.runs is not None for o in mine):
                # A passing claim over runs shows its figures under -rA (pytest's PASSES section).
                from .summary import runs_sections

                report.sections.extend(runs_sections(mine, runtime.record.calibrations))
        if report.outcome != "failed" or (call.excinfo is None and not caught):
            return report
        raised = None if call.excinfo is None else call.excinfo.value
        judge_error = isinstance(raised, JudgeError)
        if judge_error:
            setattr(report, JUDGE_ERROR_ATTR, type(raised).__name__)
            report_statuses(self.config, runtime)
            if getattr(raised, "stops_run", False):
                # Every further claim would fail the same way (the shared store never answered,
                # a model no provider serves): said once.
                item.session.shouldstop = f"pytest-propositions: {raised}"
        from .summary import SECTION_TITLE, by_call_short_failure, failure_section, short_failure

        # A failing setup or teardown (a claim in a fixture) gets the section too, with the
        # test's claims no earlier phase's section has shown.
        shown = item.stash.get(SHOWN_KEY, 0)
        outcomes = runtime.record.outcomes_of(item.nodeid, start=shown)
        item.stash[SHOWN_KEY] = shown + len(outcomes)
        if outcomes:
            # The judge's reasoning is long: shown under -vv only (the HTML report has it too).
            section = failure_section(
                outcomes,
                runtime.settings.outcome,
                reasoning=item.config.option.verbose > 1,
                calibrations=runtime.record.calibrations,
                verbose=item.config.option.verbose > 0,
            )
            failure_text_section(report, SECTION_TITLE, section)
        if isinstance(raised, PropositionFailed):
            # The short summary (-rf) shows the claim, not mostly the exception's module path.
            short_failure(report, raised)
        elif isinstance(raised, AssertionError) and outcomes:
            # `assert check_proposition(...)`: "assert False" alone does not say which claim.
            by_call_short_failure(report, outcomes)
        if judge_error:
            report.sections.append(
                (f"{SECTION_TITLE} judge error", f"{type(raised).__name__}: {raised}")
            )
        elif caught and getattr(report, JUDGE_ERROR_ATTR, None) != CAUGHT:
            # The test failed for another reason (a false claim, its own assert) and had judge
            # errors too: it is a judge error all the same, as the claims' summary counts it;
            # its failure stays its text and crash line, the judge errors shown beside it.
            from .summary import with_judge_errors_noted

            report.sections.append((f"{SECTION_TITLE} judge error (caught)", "\n".join(caught)))
            with_judge_errors_noted(report, len(caught))
            setattr(report, JUDGE_ERROR_ATTR, CAUGHT)
        redact_failure(report)
        return report

    def caught_judge_errors(
        self, item: pytest.Item, report: pytest.TestReport, call: pytest.CallInfo[None]
    ) -> list[str]:
        """The judge errors filed under this test since its last report, when the phase did not
        end with one: its own code caught them (a try/except, TinyTroupe's parallel
        ``world.run()`` logging an agent's error and carrying on). A judge error is never a pass:
        a phase that passed is reported as a judge error instead; the report is marked, so the
        run fails whatever the phase's outcome (see ``pytest_sessionfinish``)."""
        new = self.runtime.record.judge_errors_since(self.judge_errors_seen)
        self.judge_errors_seen += len(new)
        # Another test's judge error here came after that test ended: the run's summary names it.
        caught = [error.message for error in new if error.test_id == item.nodeid]
        if not caught or (call.excinfo is not None and isinstance(call.excinfo.value, JudgeError)):
            return []  # none, or the phase ended with one: a judge error as it is
        setattr(report, CAUGHT_ATTR, len(caught))
        report_statuses(self.config, self.runtime)
        if report.outcome == "passed":
            from .summary import caught_judge_error_repr

            report.outcome = "failed"
            report.longrepr = caught_judge_error_repr(item, caught)
            setattr(report, JUDGE_ERROR_ATTR, CAUGHT)
        return caught

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_terminal_summary(self, terminalreporter: Any) -> Generator[None, None, None]:
        # Outermost, so this runs after pytest's failure sections and short summary, and just
        # before its last line counts the categories: judge errors get a count of their own.
        try:
            return (yield)
        finally:
            failed = terminalreporter.stats.get("failed", [])
            errors = [report for report in failed if getattr(report, JUDGE_ERROR_ATTR, None)]
            if errors:
                # The "failed" key stays, even empty: it keeps pytest's last line red.
                failed[:] = [report for report in failed if report not in errors]
                word = "judge error" if len(errors) == 1 else "judge errors"
                terminalreporter.stats.setdefault(word, []).extend(errors)
            if self.runtime.record.judge_errors:
                # The run fails for any judge error (pytest_sessionfinish): its last line is red.
                terminalreporter.stats.setdefault("failed", [])

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        # Before junitxml writes its file: the run's counts as testsuite properties.
        runtime = self.runtime
        if hasattr(self.config, "workerinput") or not runtime.used or not self.junit:
            return
        from .junit import add_junit_run_properties

        add_junit_run_properties(self.config, runtime)


class OutcomeStatus:
    """The status word of a report ``ClaimReports`` marked (a judge error, a claim not upheld),
    and a judge error written to JUnit as an ``<error>``. Registered by ``report_statuses``."""

    def __init__(self, config: pytest.Config, runtime: Runtime) -> None:
        self.config = config
        self.runtime = runtime

    def pytest_report_teststatus(
        self, report: pytest.TestReport, config: pytest.Config
    ) -> tuple[str, str, tuple[str, dict[str, bool]]] | None:
        # A judge error stays in pytest's "failed" category while the run goes on, so pytest
        # shows its traceback and lists it in the short summary (with this word); the terminal
        # summary then counts it apart (ClaimReports.pytest_terminal_summary).
        # (outcome compared directly: these run for every report, and .failed is a property)
        if report.outcome == "failed" and getattr(report, JUDGE_ERROR_ATTR, None):
            return "failed", "J", ("JUDGE ERROR", {"red": True})
        if report.outcome == "passed" and getattr(report, NOT_UPHELD_ATTR, None):
            return "not upheld", "n", ("NOT UPHELD", {"yellow": True})
        return None

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # Where reports are logged (an xdist controller gets its workers'): which tests showed
        # a judge error, and how many their code caught, for the run's summary and exit status.
        judge_error = report.outcome == "failed" and getattr(report, JUDGE_ERROR_ATTR, None)
        caught = getattr(report, CAUGHT_ATTR, 0)
        if judge_error or caught:
            self.runtime.record.judge_error_shown(report.nodeid, caught)
        # junitxml writes a failing call as <failure>; a judge that could not answer is an
        # <error> (like a broken fixture), so CI tells it apart from a false claim.
        if judge_error and report.when == "call":
            from .junit import junit_failure_to_error

            junit_failure_to_error(self.config, report)


class PytestHtmlExtras:
    """Registered only when pytest-html is active: each test's claims go into its report."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        if report.when == "call":
            runtime = self.runtime
            outcomes = runtime.record.outcomes_of(item.nodeid)
            if outcomes:
                from .html import pytest_html_extra

                extra = pytest_html_extra(outcomes, runtime)
                report.extras = [*getattr(report, "extras", []), extra]  # type: ignore[attr-defined]
        return report
