"""The pytest11 entry point: hooks in the order pytest calls them, then fixtures. Logic lives elsewhere."""

from __future__ import annotations

import os
from collections.abc import Callable, Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from . import runtime as runtime_module
from .errors import JudgeError, PropositionFailed
from .settings import OPTIONS, SettingsError, argparse_type, resolve

if TYPE_CHECKING:
    from .verdict import Verdict

RUNTIME_KEY = pytest.StashKey[runtime_module.Runtime]()
# How many of a test's outcomes are already JUnit properties (claims may come in any phase).
JUNIT_DONE_KEY = pytest.StashKey[int]()
FALLBACK_CACHE_FOLDER = ".pytest_propositions_cache"


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
        "proposition(claim, target='fixture_name', min_score=None, **options): a claim judged "
        "after the test body against the named fixture's value; stackable.",
    )
    cli = {option.name: config.getoption("prop_" + option.name) for option in OPTIONS}
    ini = {option.name: config.getini(option.ini) for option in OPTIONS}
    try:
        settings = resolve(cli, os.environ, ini)
    except SettingsError as error:
        raise pytest.UsageError(f"pytest-propositions: {error}") from None
    if settings.report:
        from .report import report_path

        try:
            report_path(settings.report, config.invocation_params.dir)
        except ValueError as error:
            raise pytest.UsageError(f"pytest-propositions: {error}") from None
    runtime = runtime_module.Runtime(settings, _cache_dir(config, settings.cache_dir))
    if not hasattr(config, "workerinput") and config.get_verbosity() >= 0:
        from .progress import ProgressLine

        def write_line(line: str) -> None:
            reporter = config.pluginmanager.get_plugin("terminalreporter")
            if reporter is not None:
                reporter.write_line(line)

        runtime.progress = ProgressLine(write_line, settings.model)
    config.stash[RUNTIME_KEY] = runtime
    runtime_module.activate(runtime)

    from . import targets

    def hook_renderer(target: Any, options: Any) -> str | None:
        result: str | None = config.hook.pytest_proposition_render_target(
            target=target, options=options
        )
        return result

    targets.set_hook_renderer(hook_renderer)
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(XdistHooks(), "propositions-xdist")


def _cache_dir(config: pytest.Config, configured: str | None) -> Path:
    """The configured folder, else one inside pytest's cache, else one at the rootdir."""
    if configured:
        path = Path(configured).expanduser()
        from_ini = not config.getoption("prop_cache_dir") and not os.environ.get("PROP_CACHE_DIR")
        if from_ini and not path.is_absolute():
            # Like pytest's own cache_dir: a relative ini value is relative to the rootdir.
            path = config.rootpath / path
        return path.resolve()
    cache = getattr(config, "cache", None)
    if cache is not None:
        return Path(cache.mkdir("propositions"))
    return config.rootpath / FALLBACK_CACHE_FOLDER


def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    # Check proposition markers now, so a typo is a usage error before anything runs, and make
    # sure each marker's target fixture is set up even when the test does not request it.
    from .markers import marker_claims

    for item in items:
        claims = marker_claims(item)
        fixturenames = getattr(item, "fixturenames", None)
        if claims and fixturenames is not None:
            for target in sorted({claim.target for claim in claims}):
                if target not in fixturenames:
                    fixturenames.append(target)


def pytest_deselected(items: list[pytest.Item]) -> None:
    # Any deselection (-k, -m, --lf) makes the run partial: prune must not trust its key set.
    if items:
        items[0].config.stash[RUNTIME_KEY].partial_reasons.add("tests were deselected")


def pytest_report_header(config: pytest.Config) -> str:
    from .report import header_line

    runtime = config.stash[RUNTIME_KEY]
    return header_line(runtime.settings, str(runtime.cache_dir) if runtime.cache_dir else None)


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
    result = yield
    from .assertions import judge_pending
    from .markers import pending_for

    runtime = item.config.stash[RUNTIME_KEY]
    judge_pending(runtime, pending_for(item))
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    runtime = item.config.stash[RUNTIME_KEY]
    if report.when != "setup" and runtime.outcomes:
        # Every verdict becomes JUnit properties, pass or fail. junitxml reads the teardown
        # report, which copies item.user_properties; claims judged in teardown are added there.
        from .report import junit_properties

        outcomes = runtime.outcomes_of(item.nodeid)
        done = item.stash.get(JUNIT_DONE_KEY, 0)
        if len(outcomes) > done:
            properties = junit_properties(outcomes[done:], start=done + 1)
            item.user_properties.extend(properties)
            report.user_properties.extend(properties)
            item.stash[JUNIT_DONE_KEY] = len(outcomes)
    if report.when != "call" or not report.failed or call.excinfo is None:
        return report
    from .report import SECTION_TITLE, failure_section

    outcomes = runtime.outcomes_of(item.nodeid)
    if outcomes:
        report.sections.append((SECTION_TITLE, failure_section(outcomes)))
    if isinstance(call.excinfo.value, JudgeError):
        report.sections.append(
            (
                f"{SECTION_TITLE} judge error",
                f"{type(call.excinfo.value).__name__}: {call.excinfo.value}",
            )
        )
    return report


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    # Only the controller (or a run without xdist) summarizes; it holds the workers' results.
    runtime = config.stash.get(RUNTIME_KEY, None)
    if runtime is None or not runtime.used or hasattr(config, "workerinput"):
        return
    from .report import dry_run_line, lowest_scores_table, summary_line

    stats = runtime.stats()
    failed = sum(1 for outcome in runtime.outcomes if not outcome.passed)
    terminalreporter.write_line(summary_line(stats, failed, len(runtime.judge_errors)))
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
        # An xdist worker hands its used keys to the controller, which records the run.
        output = session.config.workeroutput  # type: ignore[attr-defined]
        output["prop_used_keys"] = sorted(runtime.used_keys())
        output["prop_partial"] = sorted(runtime.partial_reasons)
        if runtime.used:
            # ...and what it judged, so the summary and reports cover the whole run.
            from .report import outcome_record, stats_record

            output["prop_outcomes"] = [outcome_record(outcome) for outcome in runtime.outcomes]
            output["prop_judge_errors"] = [list(error) for error in runtime.judge_errors]
            output["prop_stats"] = stats_record(runtime.stats())
            output["prop_used"] = True
        return
    if exitstatus != pytest.ExitCode.OK:
        runtime.partial_reasons.add(f"exit status {int(exitstatus)}")
    runtime.partial_reasons.update(_partial_selection(session.config))
    runtime.record_complete_run()
    if runtime.settings.report:
        from .report import save_json_report

        problem = save_json_report(runtime, session.config.invocation_params.dir)
        if problem is not None:
            # Too late for a UsageError, which would hide the run's failures: say so, exit 4.
            reporter = session.config.pluginmanager.get_plugin("terminalreporter")
            if reporter is not None:
                reporter.write_line(f"ERROR: pytest-propositions: {problem}", red=True, bold=True)
            session.exitstatus = pytest.ExitCode.USAGE_ERROR


def _partial_selection(config: pytest.Config) -> set[str]:
    """Ways a run can leave tests out without deselecting them."""
    reasons = set()
    if config.args_source == pytest.Config.ArgsSource.ARGS:
        reasons.add("only some paths were collected")
    arguments = [str(argument) for argument in config.invocation_params.args]
    if any(argument.startswith(("--ignore", "--deselect")) for argument in arguments):
        reasons.add("paths were ignored")
    for option in ("lf", "stepwise", "stepwise_skip"):
        if config.getoption(option, default=False):
            reasons.add(f"--{option.replace('_', '-')} selected the tests")
    return reasons


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    # A skipped test used none of its verdicts; prune must not drop them.
    if report.skipped:
        runtime = runtime_module.current()
        runtime.partial_reasons.add("tests were skipped")


class XdistHooks:
    """Registered only when pytest-xdist is installed: gather workers' results on the controller."""

    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        runtime = node.config.stash[RUNTIME_KEY]
        output = getattr(node, "workeroutput", None) or {}
        runtime.merge_used_keys(output.get("prop_used_keys", ()))
        runtime.partial_reasons.update(output.get("prop_partial", ()))
        if output.get("prop_used"):
            from .report import outcome_from_record

            runtime.merge_worker(
                [outcome_from_record(record) for record in output.get("prop_outcomes", ())],
                [(test_id, message) for test_id, message in output.get("prop_judge_errors", ())],
                output.get("prop_stats", {}),
                used=True,
            )
        if error:
            runtime.partial_reasons.add("a worker crashed")


def pytest_unconfigure(config: pytest.Config) -> None:
    runtime = config.stash.get(RUNTIME_KEY, None)
    if runtime is None:
        return
    from . import targets

    targets.set_hook_renderer(None)
    runtime.close()
    runtime_module.deactivate(runtime)


# -- fixtures ------------------------------------------------------------------------------------


def _marker_threshold(request: pytest.FixtureRequest) -> int | None:
    from .assertions import validate_threshold

    marker = request.node.get_closest_marker("min_score")
    if marker is None:
        return None
    if len(marker.args) != 1 or marker.kwargs:
        raise pytest.UsageError(
            f"{request.node.nodeid}: @pytest.mark.min_score takes exactly one argument, the "
            f"minimum score, got args={marker.args!r} kwargs={marker.kwargs!r}"
        )
    try:
        return validate_threshold(marker.args[0], f"{request.node.nodeid}: @pytest.mark.min_score")
    except ValueError as error:
        raise pytest.UsageError(str(error)) from None


@pytest.fixture
def assert_proposition(request: pytest.FixtureRequest) -> Callable[..., Verdict]:
    """Assert a claim about a target with an LLM judge: True/False, or a score gate with min_score=N."""
    from .assertions import assert_claim, resolve_threshold, validate_options

    runtime = request.config.stash[RUNTIME_KEY]

    def assert_proposition(
        target: Any, claim: str, *, min_score: int | None = None, **options: Any
    ) -> Verdict:
        __tracebackhide__ = True
        validate_options(options, "assert_proposition")
        threshold = None
        if min_score is not None:
            threshold = resolve_threshold(min_score, None, runtime.settings.min_score)
        return assert_claim(runtime, target, claim, threshold=threshold, **options)

    return assert_proposition


@pytest.fixture
def min_score(request: pytest.FixtureRequest) -> Callable[..., Verdict]:
    """Assert that a claim about a target scores at least a threshold (argument, mark, option, 7)."""
    from .assertions import assert_claim, resolve_threshold, validate_options

    runtime = request.config.stash[RUNTIME_KEY]
    marker_value = _marker_threshold(request)

    def min_score(target: Any, claim: str, threshold: int | None = None, **options: Any) -> Verdict:
        __tracebackhide__ = True
        validate_options(options, "min_score")
        bar = resolve_threshold(threshold, marker_value, runtime.settings.min_score)
        return assert_claim(runtime, target, claim, threshold=bar, **options)

    return min_score


@pytest.fixture
def expect_proposition(request: pytest.FixtureRequest) -> Callable[..., None]:
    """Soft claims: collected during the test, judged together at its end, all failures reported."""
    from .assertions import PendingClaim, validate_options, validate_threshold
    from .markers import SOFT_CLAIMS_KEY

    pending: list[PendingClaim] = []
    request.node.stash[SOFT_CLAIMS_KEY] = pending

    def expect_proposition(
        target: Any, claim: str, *, min_score: int | None = None, **options: Any
    ) -> None:
        __tracebackhide__ = True
        validate_options(options, "expect_proposition")
        if min_score is not None:
            validate_threshold(min_score, "expect_proposition min_score")
        if not isinstance(claim, str) or not claim.strip():
            raise ValueError(f"expect_proposition: claim must be a non-empty string, got {claim!r}")
        pending.append(PendingClaim(target, claim, min_score, dict(options)))

    return expect_proposition


@pytest.fixture
def assert_propositions(request: pytest.FixtureRequest) -> Callable[..., list[Verdict]]:
    """Assert several claims about one target, judged together; every failure reported at once."""
    from .assertions import PendingClaim, judge_pending, validate_options, validate_threshold

    runtime = request.config.stash[RUNTIME_KEY]

    def assert_propositions(target: Any, claims: Any, **options: Any) -> list[Verdict]:
        __tracebackhide__ = True
        validate_options(options, "assert_propositions")
        if isinstance(claims, str) or not claims:
            raise TypeError(
                "assert_propositions: claims must be a non-empty list of claims (strings) or "
                "(claim, min_score) pairs"
            )
        pending = []
        for item in claims:
            claim, threshold = (item, None) if isinstance(item, str) else tuple(item)
            if threshold is not None:
                validate_threshold(threshold, f"assert_propositions min_score for {claim!r}")
            pending.append(PendingClaim(target, claim, threshold, dict(options), "batch"))
        return judge_pending(runtime, pending)

    return assert_propositions


@pytest.fixture
def proposition_judge(request: pytest.FixtureRequest) -> Callable[..., Verdict]:
    """Evaluate a claim without asserting: returns the Verdict (kind="check" or "score")."""
    from .assertions import judge_claim, validate_options

    runtime = request.config.stash[RUNTIME_KEY]

    def proposition_judge(
        target: Any, claim: str, *, kind: str = "check", **options: Any
    ) -> Verdict:
        __tracebackhide__ = True
        validate_options(options, "proposition_judge")
        verdict = judge_claim(runtime, target, claim, kind=kind, **options)
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
