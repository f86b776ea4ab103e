"""A line while uncached claims take more than a moment to judge.

The judge reports when live judging starts and ends; a small daemon thread shows a line when
something has been in flight for a while, and again while it still is. Where it goes is one
``Display`` per kind of output: on a terminal, drawn after what pytest has written on its
current line and erased before pytest writes again (redrawn each second); in a log (CI, a pipe),
a line of its own, once something is slow and then at most once a minute. Either way it goes to
pytest's terminal, past its output capture. Under pytest-xdist each worker publishes what it is
judging to a small file, and the controller, which owns the terminal, shows the line for all.

The transport tells the line about each attempt (``transport.Attempt``): a retry and why ("attempt
2 of 4 after a timeout", shown at once, in a log too), and an attempt that is slow ("still
answering, 45s, 120 tokens so far" for the local judge, "still answering, 45s of 60s" for a
remote one).
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import pytest

if TYPE_CHECKING:
    from .transport import Attempt

SHOW_AFTER_SECONDS = 1.0
# A terminal's line is redrawn in place, so it can keep time; a log keeps every line it is given
# (and each one splits pytest's row of letters), so it gets one when a claim is slow, then one a
# minute while claims are still in flight: enough to show a CI job is alive.
TERMINAL_EVERY_SECONDS = 1.0
LOG_EVERY_SECONDS = 60.0
_TICK_SECONDS = 0.2
# An attempt that has taken this long is slow: the line says how long, and how far it is.
SLOW_ATTEMPT_SECONDS = 5.0

# Claims in flight elsewhere (xdist workers): pairs of (how many, seconds the oldest has taken).
Source = Callable[[], Iterable[tuple[int, float]]]


def attempt_text(attempt: Attempt, now: float) -> str | None:
    """What the line says of an attempt in flight at ``now`` (monotonic seconds): a retry and
    why, and a slow attempt's time and how far the judge is; None for a first attempt that is
    not slow."""
    parts = []
    if attempt.number > 1:
        after = f" after {attempt.after}" if attempt.after else ""
        parts.append(f"attempt {attempt.number} of {attempt.attempts}{after}")
    took = max(now - attempt.started, 0.0)
    if took >= SLOW_ATTEMPT_SECONDS:
        if attempt.limit is not None:
            parts.append(f"still answering, {took:.0f}s of {attempt.limit:g}s")
        elif attempt.tokens is None:
            parts.append(f"still answering, {took:.0f}s")
        elif attempt.tokens == 0:
            parts.append(f"still answering, {took:.0f}s, reading the prompt")
        else:
            parts.append(f"still answering, {took:.0f}s, {attempt.tokens} tokens so far")
    return ", ".join(parts) or None


class Display(Protocol):
    """Where the line goes (``TerminalSuffix`` on a terminal, ``TerminalLine`` in a log): shown
    at most every ``every`` seconds while claims are in flight, and cleared when none is."""

    every: float

    def show(self, line: str) -> None: ...

    def clear(self) -> None: ...


def display_for(config: Any, current_test: Callable[[], str | None]) -> Display | None:
    """The display for pytest's terminal: drawn in place on a terminal, lines in a log; None
    without pytest's terminal reporter."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None:
        return None
    if reporter.isatty():
        return TerminalSuffix(config)
    return TerminalLine(config, current_test)


class ProgressLine:
    """Tracks live judging in this process (and, on an xdist controller, in its workers).

    ``display`` shows the line (None on an xdist worker, which has no terminal); ``publish``
    is told, at each start and end, how many claims are in flight and since when (wall clock),
    which is how a worker tells its controller.
    """

    def __init__(
        self,
        display: Display | None,
        model: str,
        *,
        others: Source | None = None,
        publish: Callable[[int, float], None] | None = None,
        tick_seconds: float | None = _TICK_SECONDS,
    ) -> None:
        self._display = display
        self._model = model
        self._others = others
        self._publish = publish
        # None: no watching thread, the caller ticks (tests).
        self._tick_seconds = tick_seconds
        # token -> (monotonic start, wall-clock start)
        self._in_flight: dict[int, tuple[float, float]] = {}
        # token -> its attempt in flight, as the transport last told it
        self._attempts: dict[int, Attempt] = {}
        # The retry last shown, (token, number): a new one is shown at once.
        self._retry_shown: tuple[int, int] | None = None
        self._next_id = 0
        self._last_shown = float("-inf")
        self._shown = False
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def started(self) -> int:
        with self._lock:
            self._next_id += 1
            self._in_flight[self._next_id] = (time.monotonic(), time.time())
            self._published()
            if self._display is not None:
                self._start_watching()
            return self._next_id

    def note(self, token: int, attempt: Attempt | None) -> None:
        """The transport's news of the claim's attempt in flight (None: it ended)."""
        with self._lock:
            if attempt is None or token not in self._in_flight:
                self._attempts.pop(token, None)
            else:
                self._attempts[token] = attempt

    def finished(self, token: int) -> None:
        # Waits for a line being written: the judging thread then goes on only once the terminal
        # is back as pytest left it (its capture resumed).
        with self._lock:
            self._in_flight.pop(token, None)
            self._attempts.pop(token, None)
            self._published()
            if not self._in_flight:
                self._cleared()

    def watch_others(self, others: Source) -> None:
        """Also show claims in flight elsewhere (an xdist controller's workers), from now on."""
        with self._lock:
            self._others = others
            if self._display is not None:
                self._start_watching()

    def _published(self) -> None:
        if self._publish is not None:
            since = min((wall for _, wall in self._in_flight.values()), default=0.0)
            self._publish(len(self._in_flight), since)

    def _start_watching(self) -> None:
        if self._thread is None and self._tick_seconds is not None:
            self._thread = threading.Thread(target=self._watch, name="prop-progress", daemon=True)
            self._thread.start()

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=1)
        with self._lock:
            self._in_flight.clear()
            self._attempts.clear()
            self._published()
            self._cleared()

    def _cleared(self) -> None:
        """Take the line away (a terminal's), under the lock."""
        if self._shown and self._display is not None:
            self._shown = False
            with contextlib.suppress(Exception):
                self._display.clear()

    def _watch(self) -> None:
        assert self._tick_seconds is not None
        while not self._stop.wait(self._tick_seconds):
            self.tick(time.monotonic())

    def tick(self, now: float) -> str | None:
        """Show the line if it is due at ``now`` (monotonic seconds); returns what was shown."""
        source = self._others
        others = list(source()) if source is not None else []
        with self._lock:
            flights = [(1, now - since) for since, _ in self._in_flight.values()] + others
            count = sum(number for number, _ in flights)
            if self._display is None:
                return None
            if not count:
                self._cleared()  # the workers' claims are done
                return None
            waited = max(seconds for _, seconds in flights)
            # The attempt that has run longest: with the local judge, the one being answered.
            token, attempt = min(
                self._attempts.items(), key=lambda item: item[1].started, default=(0, None)
            )
            retry = (token, attempt.number) if attempt is not None and attempt.number > 1 else None
            news = retry is not None and retry != self._retry_shown
            if waited < SHOW_AFTER_SECONDS or (
                now - self._last_shown < self._display.every and not news
            ):
                return None
            self._last_shown = now
            self._shown = True
            self._retry_shown = retry or self._retry_shown
            noun = "claim" if count == 1 else "claims"
            said = attempt_text(attempt, now) if attempt is not None else None
            line = (
                f"propositions: judging {count} uncached {noun} with {self._model}, "
                f"{waited:.0f}s so far" + (f"; {said}" if said else "") + "..."
            )
            # Written under the lock: see finished(). A terminal that fails to take the line
            # must not stop the watching.
            with contextlib.suppress(Exception):
                self._display.show(line)
            return line


def _uncaptured(config: Any) -> contextlib.AbstractContextManager[Any]:
    """pytest's output capture suspended (as its own live logging does), so a write from any
    thread reaches the terminal, never a test's captured output."""
    capman = config.pluginmanager.get_plugin("capturemanager")
    if capman is None:
        return contextlib.nullcontext()
    manager: contextlib.AbstractContextManager[Any] = capman.global_and_fixture_disabled()
    return manager


class TerminalSuffix:
    """On a terminal: the line drawn after what pytest has written on its current line (its
    file name and letters, or a test's name under -v), and erased before pytest writes again,
    so pytest's rows stay as they would be without it.

    Drawn with ``write_raw``, which pytest's writer does not count in its line's width, and
    cut to end before the last column (so the cursor never wraps); erased with backspaces.
    Hook wrappers around pytest's writes (a test starting, its report, its end) erase it and
    hold it off until pytest has written; too little room left on the line draws nothing.
    """

    every = TERMINAL_EVERY_SECONDS
    MIN_ROOM = 24

    def __init__(self, config: Any) -> None:
        self._config = config
        self._drawn = 0
        # Held by pytest's writes (the wrappers below); the watching thread never waits for it.
        self._lock = threading.RLock()
        config.pluginmanager.register(self, "propositions-progress-suffix")

    def show(self, line: str) -> None:
        if not self._lock.acquire(blocking=False):
            return  # pytest is writing: the next tick draws
        try:
            writer = self._config.get_terminal_writer()
            with _uncaptured(self._config):
                self._erase(writer)
                used = writer.width_of_current_line
                text = f" {line}" if used else line
                room = writer.fullwidth - used - 1
                if len(text) > room:
                    if room < self.MIN_ROOM:
                        return
                    text = text[: room - 3] + "..."
                writer.write_raw(text, flush=True)
                self._drawn = len(text)
        finally:
            self._lock.release()

    def clear(self) -> None:
        if not self._lock.acquire(blocking=False):
            return  # pytest is writing, and erased the line first
        try:
            if self._drawn:
                with _uncaptured(self._config):
                    self._erase(self._config.get_terminal_writer())
        finally:
            self._lock.release()

    def _erase(self, writer: Any) -> None:
        if self._drawn:
            width, self._drawn = self._drawn, 0
            writer.write_raw("\b" * width + " " * width + "\b" * width, flush=True)

    @contextlib.contextmanager
    def _held(self) -> Iterator[None]:
        with self._lock:
            if self._drawn:
                with _uncaptured(self._config):
                    self._erase(self._config.get_terminal_writer())
            yield

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_logstart(self) -> Iterator[None]:
        with self._held():
            return (yield)

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_logreport(self) -> Iterator[None]:
        with self._held():
            return (yield)

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_logfinish(self) -> Iterator[None]:
        with self._held():
            return (yield)


class TerminalLine:
    """In a log (pytest's output is not a terminal): a line of its own, from any thread while a
    test runs, once a claim is slow and then at most once a minute.

    The line starts on a line of its own. Where pytest prints a file name and then a letter per
    test, the running test's letter goes on below, after blanks as wide as the file name (named
    once, when its first test started), where pytest expects it.
    """

    every = LOG_EVERY_SECONDS

    def __init__(self, config: Any, current_test: Callable[[], str | None]) -> None:
        self._config = config
        self._current_test = current_test
        self._prefix_for: str | None = None
        self._listening = False

    def clear(self) -> None:
        """A log keeps its lines."""

    def show(self, line: str) -> None:
        plugins = self._config.pluginmanager
        reporter = plugins.get_plugin("terminalreporter")
        if reporter is None:
            return
        with _uncaptured(self._config):
            writer = self._config.get_terminal_writer()
            reporter.ensure_newline()
            if writer.width_of_current_line:
                writer.line()
            writer.line(line)
            writer.flush()
        test_id = self._current_test()
        if test_id is not None and self._config.get_verbosity() == 0 and reporter.showfspath:
            self._prefix_for = test_id
            if not self._listening:
                self._listening = True
                plugins.register(self, "propositions-progress-line")

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # Before the terminal reporter writes this test's letter after the progress line.
        test_id, self._prefix_for = self._prefix_for, None
        reporter = self._config.pluginmanager.get_plugin("terminalreporter")
        if test_id is None or reporter is None or reporter.currentfspath is not None:
            return
        path = self._config.rootpath / test_id.split("::")[0]
        # pytest named the file when the test started; blanks as wide as its name keep the
        # letters in their column without naming it again.
        name = os.path.relpath(path, reporter.startpath) + " "
        self._config.get_terminal_writer().write(" " * len(name))
        reporter.currentfspath = path


# -- xdist: workers publish, the controller shows ---------------------------------------------


def file_publisher(path: Path) -> Callable[[int, float], None]:
    """For an xdist worker's ProgressLine: keep ``path`` saying what is in flight, or gone."""

    def publish(count: int, since: float) -> None:
        # Progress is a courtesy: a folder that went away must not fail the claim.
        with contextlib.suppress(OSError):
            if not count:
                path.unlink(missing_ok=True)
                return
            temporary = path.with_name(f".{path.name}.tmp")
            temporary.write_text(json.dumps({"count": count, "since": since}), encoding="utf-8")
            os.replace(temporary, path)

    return publish


def worker_flights(folder: Path) -> list[tuple[int, float]]:
    """On the controller: what each worker's file says is in flight, as (count, seconds)."""
    now = time.time()
    flights = []
    try:
        files = [entry for entry in os.scandir(folder) if not entry.name.startswith(".")]
    except OSError:
        return []
    for entry in files:
        try:
            state = json.loads(Path(entry.path).read_text(encoding="utf-8"))
            count, since = int(state["count"]), float(state["since"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if count > 0:
            flights.append((count, max(now - since, 0.0)))
    return flights
