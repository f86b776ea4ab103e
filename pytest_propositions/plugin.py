"""The pytest11 entry point: hooks in the order pytest calls them, then fixtures. Logic lives elsewhere."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any

import pytest

from . import runtime as runtime_module
from .errors import JudgeError, PropositionFailed
from .session import (
    SOFT_CLAIMS_KEY,
    build_runtime,
    finish_run,
    merge_worker_output,
    worker_output,
)
from .settings import OPTIONS, argparse_type

if TYPE_CHECKING:
    from .verdict import Verdict

RUNTIME_KEY = pytest.StashKey[runtime_module.Runtime]()
# How many of a test's outcomes are already JUnit properties (claims may come in any phase).
JUNIT_DONE_KEY = pytest.StashKey[int]()
CLAIM_REPORTS = "propositions-reports"


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from . import hooks

    pluginmanager.add_hookspecs(hooks)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("propositions", "claims judged by an LLM (pytest-propositions)")
    for option in OPTIONS:
        if option.is_switch:
            # A switch on the command line stores the string "true", keeping values plain strings.
            group.addoption(
                option.flag,
                dest="prop_" + option.name,
                action="store_const",
                const="true",
                default=None,
                help=option.help_text(),
            )
        else:
            group.addoption(
                option.flag,
                dest="prop_" + option.name,
                metavar=option.metavar,
                type=argparse_type(option),
                default=None,
                help=option.help_text(),
            )
        parser.addini(option.ini, option.help, default=None)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "min_score(n): the default minimum score (0..9) for score claims in this test.",
    )
    config.addinivalue_line(
        "markers",
        "proposition(claim, target='fixture_name', min_score=None, max_score=None, holds=True, "
        "**options): a claim judged after the test body against the named fixture's value "
        "(holds=False or max_score=N: it must not hold); stackable.",
    )
    runtime = build_runtime(config)
    config.stash[RUNTIME_KEY] = runtime
    runtime_module.activate(runtime)

    def hook_renderer(target: Any, options: Any) -> str | None:
        result: str | None = config.hook.pytest_proposition_render_target(
            target=target, options=options
        )
        return result

    runtime.render_hook = hook_renderer

    runtime.on_first_claim = lambda: _report_claims(config)
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(XdistHooks(), "propositions-xdist")
    if config.pluginmanager.hasplugin("html") and config.getoption("htmlpath", None):
        runtime.keep_contexts = True
        config.pluginmanager.register(PytestHtmlExtras(), "propositions-pytest-html")


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    # Credentials inside --prop-api-base reach other libraries' DEBUG logs (the request URL);
    # pytest's logging plugin, registered by now, is where they would be shown or written.
    runtime = session.config.stash.get(RUNTIME_KEY, None)
    logging_plugin = session.config.pluginmanager.get_plugin("logging-plugin")
    if runtime is None or logging_plugin is None:
        return
    from .redaction import hide_credentials_in_logs

    handlers = [
        getattr(logging_plugin, name, None)
        for name in ("caplog_handler", "report_handler", "log_file_handler", "log_cli_handler")
    ]
    hide_credentials_in_logs(
        [h for h in handlers if isinstance(h, logging.Handler)], runtime.settings.api_base
    )


def _report_claims(config: pytest.Config) -> None:
    if config.pluginmanager.get_plugin(CLAIM_REPORTS) is None:
        config.pluginmanager.register(ClaimReports(config), CLAIM_REPORTS)


def _has_proposition_marker(item: pytest.Item) -> bool:
    # A node's keywords hold its markers' names (and node names): a dict lookup per level, where
    # the marker lookup itself costs every test of a suite several microseconds.
    return "proposition" in item.keywords and item.get_closest_marker("proposition") is not None


def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    # Check proposition markers now, so a typo is a usage error before anything runs, and make
    # sure each marker's target fixture is set up even when the test does not request it.
    marked = [item for item in items if _has_proposition_marker(item)]
    if not marked:
        return
    from .markers import marker_claims

    for item in marked:
        claims = marker_claims(item)
        fixturenames = getattr(item, "fixturenames", None)
        if claims and fixturenames is not None:
            for target in sorted({claim.target for claim in claims}):
                if target not in fixturenames:
                    fixturenames.append(target)


def pytest_report_header(config: pytest.Config) -> list[str]:
    from .calibration import header_line as calibration_line
    from .reports.summary import header_line

    runtime = config.stash[RUNTIME_KEY]
    lines = [header_line(runtime.settings, str(runtime.cache_dir) if runtime.cache_dir else None)]
    calibration = calibration_line(runtime.settings, runtime.cache_dir)
    if calibration is not None:
        lines.append(f"propositions: {calibration}")
    if runtime.settings.store and runtime.settings.cache != "off":
        from .store.postgres import describe_store

        lines.append(f"propositions: shared verdict store {describe_store(runtime.settings.store)}")
    return lines


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, object, object]:
    # Claims judged during this test are filed under its node id.
    runtime = item.config.stash[RUNTIME_KEY]
    runtime.current_test = item.nodeid
    try:
        return (yield)
    finally:
        runtime.current_test = None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    # After the body: soft claims and proposition markers, judged together.
    __tracebackhide__ = True
    try:
        result = yield
    except (Exception, pytest.fail.Exception) as error:
        # Soft claims made before the body raised are still judged, and reported with it.
        if SOFT_CLAIMS_KEY in item.stash:
            from .markers import judge_soft_claims_after

            judge_soft_claims_after(item.config.stash[RUNTIME_KEY], item, error)
        raise
    if SOFT_CLAIMS_KEY not in item.stash and not _has_proposition_marker(item):
        return result
    from .markers import judge_after_body

    judge_after_body(item.config.stash[RUNTIME_KEY], item)
    return result


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    # Only the controller (or a run without xdist) summarizes; it holds the workers' results.
    runtime = config.stash.get(RUNTIME_KEY, None)
    if runtime is None or not runtime.used or hasattr(config, "workerinput"):
        return
    from .reports.summary import (
        all_cached_line,
        dry_run_line,
        lowest_scores_table,
        run_counts,
        summary_line,
        verdict_listing,
    )

    stats = runtime.stats()
    mode = runtime.settings.outcome
    very_verbose = config.option.verbose > 1
    if runtime.outcomes and (mode == "report" or very_verbose):
        terminalreporter.write_sep("=", "propositions: claims and the judge's verdicts")
        for line in verdict_listing(runtime.outcomes, mode, reasoning=very_verbose):
            terminalreporter.write_line(line)
    counts = run_counts(runtime.outcomes, runtime.judge_errors, stats)
    terminalreporter.write_line(summary_line(counts, mode))
    cached = all_cached_line(counts)
    if cached is not None:
        terminalreporter.write_line(cached)
    if runtime.settings.store and runtime.settings.cache != "off":
        from .store.postgres import describe_store
        from .store.tiered import store_summary

        where = describe_store(runtime.settings.store)
        for line in store_summary(runtime.store_counts(), where):
            terminalreporter.write_line(line, yellow="NOT shared" in line)
    if runtime.settings.dry_run:
        terminalreporter.write_line(dry_run_line(stats.dry_run_misses))
    if config.option.verbose > 0:
        for line in lowest_scores_table(runtime.outcomes):
            terminalreporter.write_line(line)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    runtime = session.config.stash.get(RUNTIME_KEY, None)
    if runtime is None:
        return
    if hasattr(session.config, "workerinput"):
        # A worker hands its results to the controller, which records and reports the run.
        session.config.workeroutput.update(worker_output(runtime))  # type: ignore[attr-defined]
        return
    problem = finish_run(runtime, session.config, exitstatus)
    if problem is not None:
        # Too late for a UsageError, which would hide the run's failures: say so, exit 4.
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(f"ERROR: pytest-propositions: {problem}", red=True, bold=True)
        session.exitstatus = pytest.ExitCode.USAGE_ERROR


# Set on a test's report (xdist carries them to the controller): the JudgeError's class name,
# and how many of the test's claims were not upheld under --prop-outcome=report.
JUDGE_ERROR_ATTR = "propositions_judge_error"
NOT_UPHELD_ATTR = "propositions_not_upheld"


class ClaimReports:
    """Per-test reporting of claims: JUnit properties, the failure report's sections, and the
    outcomes of their own (a judge error, a claim not upheld in report mode).

    Registered at the session's first claim (``Runtime.on_first_claim``), so a suite that makes
    none pays nothing for it on each test; on an xdist controller, as workers are configured.
    """

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        runtime = item.config.stash[RUNTIME_KEY]
        if report.when != "setup" and runtime.outcomes:
            # Every verdict becomes JUnit properties, pass or fail. junitxml reads the teardown
            # report, which copies item.user_properties; claims judged in teardown are added there.
            done = item.stash.get(JUNIT_DONE_KEY, 0)
            new = runtime.outcomes_of(item.nodeid, start=done)
            if new:
                from .reports.summary import junit_properties

                properties = junit_properties(new, done + 1, runtime.settings.outcome)
                item.user_properties.extend(properties)
                report.user_properties.extend(properties)
                item.stash[JUNIT_DONE_KEY] = done + len(new)
        if report.passed and report.when == "call":
            mine = runtime.outcomes_of(item.nodeid)
            if runtime.settings.outcome == "report":
                not_upheld = sum(1 for o in mine if not o.passed)
                if not_upheld:
                    setattr(report, NOT_UPHELD_ATTR, not_upheld)
            if any(o.runs is not None for o in mine):
                # A passing claim over runs shows its figures under -rA (pytest's PASSES section).
                from .reports.summary import runs_sections

                report.sections.extend(runs_sections(mine))
        if not report.failed or call.excinfo is None:
            return report
        judge_error = isinstance(call.excinfo.value, JudgeError)
        if judge_error:
            setattr(report, JUDGE_ERROR_ATTR, type(call.excinfo.value).__name__)
            if getattr(call.excinfo.value, "stops_run", False):
                # The shared store never answered: every further claim would fail the same way.
                item.session.shouldstop = f"pytest-propositions: {call.excinfo.value}"
        if report.when != "call":
            return report
        from .reports.summary import SECTION_TITLE, failure_section

        outcomes = runtime.outcomes_of(item.nodeid)
        if outcomes:
            # The judge's reasoning is long: shown under -vv only (the HTML report has it too).
            section = failure_section(
                outcomes, runtime.settings.outcome, reasoning=item.config.option.verbose > 1
            )
            report.sections.append((SECTION_TITLE, section))
        if isinstance(call.excinfo.value, PropositionFailed):
            from .reports.summary import short_failure

            # The short summary (-rf) shows the claim, not mostly the exception's module path.
            short_failure(report, call.excinfo.value)
        if judge_error:
            report.sections.append(
                (
                    f"{SECTION_TITLE} judge error",
                    f"{type(call.excinfo.value).__name__}: {call.excinfo.value}",
                )
            )
        return report

    def pytest_report_teststatus(
        self, report: pytest.TestReport, config: pytest.Config
    ) -> tuple[str, str, tuple[str, dict[str, bool]]] | None:
        # A judge error stays in pytest's "failed" category while the run goes on, so pytest
        # shows its traceback and lists it in the short summary (with this word); the terminal
        # summary then counts it apart (pytest_terminal_summary below).
        if report.failed and getattr(report, JUDGE_ERROR_ATTR, None):
            return "failed", "J", ("JUDGE ERROR", {"red": True})
        if report.passed and getattr(report, NOT_UPHELD_ATTR, None):
            return "not upheld", "n", ("NOT UPHELD", {"yellow": True})
        return None

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

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        # Before junitxml writes its file: the run's counts as testsuite properties.
        runtime = self.config.stash[RUNTIME_KEY]
        if hasattr(self.config, "workerinput") or not runtime.used:
            return
        from .reports.summary import add_junit_run_properties

        add_junit_run_properties(self.config, runtime)

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # junitxml writes a failing call as <failure>; a judge that could not answer is an
        # <error> (like a broken fixture), so CI tells it apart from a false claim.
        if report.when == "call" and report.failed and getattr(report, JUDGE_ERROR_ATTR, None):
            from .reports.summary import junit_failure_to_error

            junit_failure_to_error(self.config, report)


class PytestHtmlExtras:
    """Registered only when pytest-html is active: each test's claims go into its report."""

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        if report.when == "call":
            runtime = item.config.stash[RUNTIME_KEY]
            outcomes = runtime.outcomes_of(item.nodeid)
            if outcomes:
                from .reports.html import pytest_html_extra

                extra = pytest_html_extra(outcomes, runtime.contexts, runtime.settings.outcome)
                report.extras = [*getattr(report, "extras", []), extra]  # type: ignore[attr-defined]
        return report


class XdistHooks:
    """Registered only when pytest-xdist is installed: gather workers' results on the controller."""

    def pytest_configure_node(self, node: Any) -> None:
        # The controller shows the workers' judge errors and progress: its reporting starts now.
        from .session import start_progress_relay

        config = node.config
        _report_claims(config)
        start_progress_relay(config.stash[RUNTIME_KEY], node.workerinput)

    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        output = getattr(node, "workeroutput", None) or {}
        merge_worker_output(node.config.stash[RUNTIME_KEY], output, crashed=bool(error))


def pytest_unconfigure(config: pytest.Config) -> None:
    runtime = config.stash.get(RUNTIME_KEY, None)
    if runtime is None:
        return
    runtime.close()
    runtime_module.deactivate(runtime)


# -- fixtures ------------------------------------------------------------------------------------
# Fixtures that need only the session's runtime are session-scoped, take no arguments and ask
# runtime.current(), the runtime pytest_configure activated: a function-scoped fixture, or one
# requesting `request` (pytestconfig does too), costs pytest work on every test, which a fully
# cached suite pays per claim. Claims are filed under the test running when they are judged.


@pytest.fixture(scope="session")
def assert_proposition() -> Callable[..., Verdict]:
    """Assert a claim about a target with an LLM judge: True/False, or a score gate with min_score=N;
    holds=False (or max_score=N for a score) asserts that it does not hold."""
    from .assertions import assert_claim, expectation, normalise_claim, validate_options

    runtime = runtime_module.current()

    def assert_proposition(
        target: Any,
        claim: Any,
        *,
        min_score: int | None = None,
        max_score: int | None = None,
        holds: bool = True,
        **options: Any,
    ) -> Verdict:
        __tracebackhide__ = True
        threshold, expected = expectation(min_score, max_score, holds, "assert_proposition")
        # A proposition object's own options are checked like the call's, which win over them.
        target, claim, options = normalise_claim(target, claim, options)
        validate_options(options, "assert_proposition")
        return assert_claim(runtime, target, claim, threshold=threshold, holds=expected, **options)

    return assert_proposition


@pytest.fixture
def min_score(request: pytest.FixtureRequest) -> Callable[..., Verdict]:
    """Assert that a claim about a target scores at least a threshold (argument, mark, option, 7)."""
    from .assertions import assert_claim, normalise_claim, resolve_threshold, validate_options
    from .markers import min_score_marker

    runtime = request.config.stash[RUNTIME_KEY]
    marker_value = min_score_marker(request.node)

    def min_score(target: Any, claim: Any, threshold: int | None = None, **options: Any) -> Verdict:
        __tracebackhide__ = True
        # A proposition object's own options are checked like the call's, which win over them.
        target, claim, options = normalise_claim(target, claim, options)
        validate_options(options, "min_score")
        if "better_than" in options:
            # Over runs: mean scores compared with the control's; no bar is involved.
            if threshold is not None:
                raise TypeError(
                    "min_score: better_than= compares mean scores; give no threshold with it"
                )
            return assert_claim(
                runtime, target, claim, threshold=None, compare_scores=True, **options
            )
        bar = resolve_threshold(threshold, marker_value, runtime.settings.min_score)
        return assert_claim(runtime, target, claim, threshold=bar, **options)

    return min_score


@pytest.fixture
def expect_proposition(request: pytest.FixtureRequest) -> Callable[..., None]:
    """Soft claims: collected during the test, judged together at its end, all failures reported."""
    from .assertions import PendingClaim, normalise_claim, soft_claim

    pending: list[PendingClaim] = []
    request.node.stash[SOFT_CLAIMS_KEY] = pending

    def expect_proposition(
        target: Any,
        claim: Any,
        *,
        min_score: int | None = None,
        max_score: int | None = None,
        holds: bool = True,
        **options: Any,
    ) -> None:
        __tracebackhide__ = True
        target, claim, options = normalise_claim(target, claim, options)
        # Checked now: a bad soft claim raises at its own line, not after the body; a failure
        # judged after the body points back at this line (the caller's frame).
        pending.append(
            soft_claim(
                target,
                claim,
                min_score,
                options,
                "expect_proposition",
                sys._getframe(1),
                max_score=max_score,
                holds=holds,
            )
        )

    return expect_proposition


@pytest.fixture(scope="session")
def assert_propositions() -> Callable[..., list[Verdict]]:
    """Assert several claims about one target, judged together; every failure reported at once."""
    from .assertions import (
        batch_items,
        judge_pending,
        normalise_claim,
        soft_claim,
        validate_options,
    )

    runtime = runtime_module.current()

    def assert_propositions(target: Any, claims: Any, **options: Any) -> list[Verdict]:
        __tracebackhide__ = True
        validate_options(options, "assert_propositions")
        # Every item is checked before any is judged: one bad item judges none.
        pending = []
        for item, threshold, holds in batch_items(claims):
            own_target, claim, own_options = normalise_claim(target, item, options)
            # batch_items has checked the expectation: hand it on as a floor or a ceiling.
            low, high = (threshold, None) if holds else (None, threshold)
            pending.append(
                soft_claim(
                    own_target,
                    claim,
                    low,
                    own_options,
                    "assert_propositions",
                    max_score=high,
                    holds=holds if threshold is None else True,
                )
            )
        return judge_pending(runtime, pending)

    return assert_propositions


@pytest.fixture(scope="session")
def proposition_judge() -> Callable[..., Verdict]:
    """Evaluate a claim without asserting: returns the Verdict (kind="check" or "score")."""
    from .assertions import judge_claim, normalise_claim, validate_options

    runtime = runtime_module.current()

    def proposition_judge(
        target: Any, claim: Any, *, kind: str = "check", **options: Any
    ) -> Verdict:
        __tracebackhide__ = True
        # A proposition object's own options are checked like the call's, which win over them.
        target, claim, options = normalise_claim(target, claim, options)
        validate_options(options, "proposition_judge")
        try:
            verdict = judge_claim(runtime, target, claim, kind=kind, **options)
        except JudgeError as error:
            runtime.note_error(error)
            raise error.with_traceback(None) from None
        runtime.note(verdict, None, True)
        return verdict

    return proposition_judge


__all__ = [
    "PropositionFailed",
    "assert_proposition",
    "assert_propositions",
    "expect_proposition",
    "min_score",
    "proposition_judge",
]
