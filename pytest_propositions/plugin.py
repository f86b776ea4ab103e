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
FALLBACK_CACHE_FOLDER = ".pytest_propositions_cache"


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from . import hooks

    pluginmanager.add_hookspecs(hooks)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("propositions", "claims judged by an LLM (pytest-propositions)")
    for option in OPTIONS:
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
    cli = {option.name: config.getoption("prop_" + option.name) for option in OPTIONS}
    ini = {option.name: config.getini(option.ini) for option in OPTIONS}
    try:
        settings = resolve(cli, os.environ, ini)
    except SettingsError as error:
        raise pytest.UsageError(f"pytest-propositions: {error}") from None
    runtime = runtime_module.Runtime(settings, _cache_dir(config, settings.cache_dir))
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
        return Path(configured).expanduser().resolve()
    cache = getattr(config, "cache", None)
    if cache is not None:
        return Path(cache.mkdir("propositions"))
    return config.rootpath / FALLBACK_CACHE_FOLDER


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
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.when != "call" or not report.failed or call.excinfo is None:
        return report
    runtime = item.config.stash[RUNTIME_KEY]
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
    runtime = config.stash.get(RUNTIME_KEY, None)
    if runtime is None or not runtime.used:
        return
    from .report import summary_line

    failed = sum(1 for outcome in runtime.outcomes if not outcome.passed)
    terminalreporter.write_line(
        summary_line(runtime.judge.stats, failed, len(runtime.judge_errors))
    )


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    runtime = session.config.stash.get(RUNTIME_KEY, None)
    if runtime is None:
        return
    if hasattr(session.config, "workerinput"):
        # An xdist worker hands its used keys to the controller, which records the run.
        output = session.config.workeroutput  # type: ignore[attr-defined]
        output["prop_used_keys"] = sorted(runtime.used_keys())
        output["prop_partial"] = sorted(runtime.partial_reasons)
        return
    if exitstatus != pytest.ExitCode.OK:
        runtime.partial_reasons.add(f"exit status {int(exitstatus)}")
    if session.config.args_source == pytest.Config.ArgsSource.ARGS:
        runtime.partial_reasons.add("only some paths were collected")
    runtime.record_complete_run()


class XdistHooks:
    """Registered only when pytest-xdist is installed: gather workers' results on the controller."""

    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        runtime = node.config.stash[RUNTIME_KEY]
        output = getattr(node, "workeroutput", None) or {}
        runtime.merge_used_keys(output.get("prop_used_keys", ()))
        runtime.partial_reasons.update(output.get("prop_partial", ()))
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
    from .assertions import assert_claim, resolve_threshold

    runtime = request.config.stash[RUNTIME_KEY]

    def assert_proposition(
        target: Any, claim: str, *, min_score: int | None = None, **options: Any
    ) -> Verdict:
        __tracebackhide__ = True
        threshold = None
        if min_score is not None:
            threshold = resolve_threshold(min_score, None, runtime.settings.min_score)
        return assert_claim(runtime, target, claim, threshold=threshold, **options)

    return assert_proposition


@pytest.fixture
def min_score(request: pytest.FixtureRequest) -> Callable[..., Verdict]:
    """Assert that a claim about a target scores at least a threshold (argument, mark, option, 7)."""
    from .assertions import assert_claim, resolve_threshold

    runtime = request.config.stash[RUNTIME_KEY]
    marker_value = _marker_threshold(request)

    def min_score(target: Any, claim: str, threshold: int | None = None, **options: Any) -> Verdict:
        __tracebackhide__ = True
        bar = resolve_threshold(threshold, marker_value, runtime.settings.min_score)
        return assert_claim(runtime, target, claim, threshold=bar, **options)

    return min_score


__all__ = ["PropositionFailed", "assert_proposition", "min_score"]
