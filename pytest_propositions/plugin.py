"""The pytest11 entry point: hooks in the order pytest calls them, then fixtures. Logic lives elsewhere."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any

import pytest

from . import runtime as runtime_module
from .errors import PropositionFailed
from .session import SOFT_CLAIMS_KEY, build_runtime, finish_run, move_old_cache, say_cache_moved
from .settings import OPTIONS, argparse_type, cache_mode

if TYPE_CHECKING:
    from .claims.awaiting import Claimed, OrAwaitable
    from .verdict import Verdict

# The run's runtime, for hooks (they get the config). Fixtures and the API reach it through
# runtime.current(), the one documented way (see runtime.py).
RUNTIME_KEY = pytest.StashKey[runtime_module.Runtime]()


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


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    move_old_cache(config)  # before --cache-clear empties pytest's cache folder (its configure)


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
    if not cache_mode(runtime.settings.cache).judges and config.pluginmanager.hasplugin(
        "recording"
    ):
        from .store.cassettes import replay_cassettes  # the simulation's calls replay too

        replay_cassettes(config)
    config.stash[RUNTIME_KEY] = runtime
    runtime_module.activate(runtime)

    def hook_renderer(target: Any, options: Any) -> str | None:
        caller = config.hook.pytest_proposition_render_target
        if not caller.get_hookimpls():
            return None  # no conftest or plugin renders targets: every target's own text
        result: str | None = caller(target=target, options=options)
        return result

    runtime.render_hook = hook_renderer

    def first_claim() -> None:
        # Imported at the first claim: a suite that makes none never loads the reporting hooks.
        from .reports.hooks import report_claims

        report_claims(config, runtime)

    runtime.on_first_claim = first_claim
    # An xdist controller with workers (xdist's own test); xdist merely installed needs nothing.
    if config.getoption("dist", "no") != "no" and config.getoption("tx", None):
        from .workers import XdistHooks

        config.pluginmanager.register(XdistHooks(runtime), "propositions-xdist")
    if config.pluginmanager.hasplugin("html") and config.getoption("htmlpath", None):
        from .reports.hooks import PytestHtmlExtras

        runtime.record.keep_contexts = True
        config.pluginmanager.register(PytestHtmlExtras(runtime), "propositions-pytest-html")


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    say_cache_moved(session.config)
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
    hide_credentials_in_logs([h for h in handlers if isinstance(h, logging.Handler)])


def _has_marker(item: pytest.Item, name: str = "proposition") -> bool:
    # A node's keywords hold its markers' names (and node names): a dict lookup per level, where
    # the marker lookup itself costs every test of a suite several microseconds.
    return name in item.keywords and item.get_closest_marker(name) is not None


def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    # Check the markers now: a test with a bad one errors at its setup, naming every problem, and
    # the others run. Each marker's target fixture is set up even when the test does not request it.
    marked = [item for item in items if _has_marker(item) or _has_marker(item, "min_score")]
    if not marked:
        return
    from .markers import check_collected

    check_collected(config, marked)


def pytest_report_header(config: pytest.Config) -> list[str]:
    from .session import header_lines

    return header_lines(config.stash[RUNTIME_KEY])


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

            pending = item.stash[SOFT_CLAIMS_KEY].take()
            judge_soft_claims_after(item.config.stash[RUNTIME_KEY], item, pending, error)
        raise
    if SOFT_CLAIMS_KEY not in item.stash and not _has_marker(item):
        return result
    from .markers import judge_after_body

    judge_after_body(item.config.stash[RUNTIME_KEY], item)
    return result


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    # Only the controller (or a run without xdist) summarizes; it holds the workers' results.
    runtime = config.stash.get(RUNTIME_KEY, None)
    if runtime is None or not runtime.used or hasattr(config, "workerinput"):
        return
    from .reports.hooks import terminal_summary

    terminal_summary(terminalreporter, config, runtime)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    runtime = session.config.stash.get(RUNTIME_KEY, None)
    if runtime is None:
        return
    if hasattr(session.config, "workerinput"):
        # A worker hands its results to the controller, which records and reports the run.
        from .workers import worker_output

        session.config.workeroutput.update(worker_output(runtime))  # type: ignore[attr-defined]
        return
    problem = finish_run(runtime, session)
    if problem is not None:
        # Too late for a UsageError, which would hide the run's failures: say so, exit 4.
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(f"ERROR: pytest-propositions: {problem}", red=True, bold=True)
        session.exitstatus = pytest.ExitCode.USAGE_ERROR


def pytest_unconfigure(config: pytest.Config) -> None:
    runtime = config.stash.get(RUNTIME_KEY, None)
    if runtime is not None:
        runtime.close()
        runtime_module.deactivate(runtime)


# -- fixtures ------------------------------------------------------------------------------------
# Fixtures needing only the session's runtime are session-scoped, argument-free, and ask
# runtime.current(): a function-scoped one, or one requesting `request`, costs pytest work on every
# test, paid per claim by a cached suite. Claims are filed under the test running when judged.


@pytest.fixture(scope="session")
def assert_proposition() -> Callable[..., Claimed]:
    """Assert a claim about a target with an LLM judge: True/False, or a score gate with min_score=N;
    holds=False (or max_score=N for a score) asserts that it does not hold. Awaited in async code."""
    from .assertions import assert_one

    runtime = runtime_module.current()

    def assert_proposition(
        target: Any,
        claim: Any,
        *,
        min_score: int | None = None,
        max_score: int | None = None,
        holds: bool = True,
        **options: Any,
    ) -> Claimed:
        __tracebackhide__ = True
        return assert_one(
            runtime, target, claim, options, min_score=min_score, max_score=max_score, holds=holds
        )

    return assert_proposition


@pytest.fixture
def min_score(request: pytest.FixtureRequest) -> Callable[..., Claimed]:
    """Assert that a claim about a target scores at least a threshold (argument, mark, option, 7)."""
    from .assertions import assert_min_score
    from .markers import min_score_marker

    runtime = runtime_module.current()
    marker_value = min_score_marker(request.node)

    def min_score(target: Any, claim: Any, threshold: int | None = None, **options: Any) -> Claimed:
        __tracebackhide__ = True
        return assert_min_score(runtime, target, claim, threshold, marker_value, options)

    return min_score


@pytest.fixture
def expect_proposition(request: pytest.FixtureRequest) -> Callable[..., None]:
    """Soft claims: collected during the test, judged together at its end, all failures reported."""
    from .markers import soft_claim, start_soft_claims

    pending = start_soft_claims(request.node, request.config.stash[RUNTIME_KEY])

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
        # Checked now: a bad soft claim raises at its own line, not after the body; a failure
        # judged after the body points back at this line (the caller's frame).
        pending.add(
            soft_claim(
                target,
                claim,
                options,
                sys._getframe(1),
                min_score=min_score,
                max_score=max_score,
                holds=holds,
            )
        )

    return expect_proposition


@pytest.fixture(scope="session")
def assert_propositions() -> Callable[..., OrAwaitable[list[Verdict]]]:
    """Assert several claims about one target, judged together; every failure reported at once."""
    from .markers import assert_batch

    runtime = runtime_module.current()

    def assert_propositions(target: Any, claims: Any, **options: Any) -> OrAwaitable[list[Verdict]]:
        __tracebackhide__ = True
        return assert_batch(runtime, target, claims, options)

    return assert_propositions


@pytest.fixture(scope="session")
def proposition_judge() -> Callable[..., Verdict]:
    """Evaluate a claim without asserting: returns the Verdict (kind="check" or "score")."""
    from .assertions import judge_without_asserting

    runtime = runtime_module.current()

    def proposition_judge(
        target: Any, claim: Any, *, kind: str = "check", **options: Any
    ) -> Verdict:
        __tracebackhide__ = True
        return judge_without_asserting(runtime, target, claim, kind, options)

    return proposition_judge


@pytest.fixture
def route_tinytroupe_propositions(monkeypatch: pytest.MonkeyPatch) -> None:
    """For this test, TinyTroupe's own propositions are judged here: cached, counted, reported."""
    from .claims.tinytroupe_routing import route  # TinyTroupe loads only in a test that asks for it

    route(monkeypatch)


__all__ = [
    "PropositionFailed",
    "assert_proposition",
    "assert_propositions",
    "expect_proposition",
    "min_score",
    "proposition_judge",
    "route_tinytroupe_propositions",
]
