"""A terminal line while uncached claims take more than a moment to judge.

The judge reports when live judging starts and ends; a small daemon thread writes a line when
something has been in flight for a while, and again every few seconds while it still is. The
line goes to pytest's terminal, past its output capture, without breaking its progress display.
Under pytest-xdist each worker publishes what it is judging to a small file, and the controller,
which owns the terminal, shows the line for all of them.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

SHOW_AFTER_SECONDS = 1.0
REPEAT_EVERY_SECONDS = 5.0
_TICK_SECONDS = 0.2

# Claims in flight elsewhere (xdist workers): pairs of (how many, seconds the oldest has taken).
Source = Callable[[], Iterable[tuple[int, float]]]


class ProgressLine:
    """Tracks live judging in this process (and, on an xdist controller, in its workers).

    ``write_line`` shows the line (None on an xdist worker, which has no terminal); ``publish``
    is told, at each start and end, how many claims are in flight and since when (wall clock),
    which is how a worker tells its controller.
    """

    def __init__(
        self,
        write_line: Callable[[str], None] | None,
        model: str,
        *,
        others: Source | None = None,
        publish: Callable[[int, float], None] | None = None,
        tick_seconds: float | None = _TICK_SECONDS,
    ) -> None:
        self._write_line = write_line
        self._model = model
        self._others = others
        self._publish = publish
        # None: no watching thread, the caller ticks (tests).
        self._tick_seconds = tick_seconds
        # token -> (monotonic start, wall-clock start)
        self._in_flight: dict[int, tuple[float, float]] = {}
        self._next_id = 0
        self._last_shown = float("-inf")
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def started(self) -> int:
        with self._lock:
            self._next_id += 1
            self._in_flight[self._next_id] = (time.monotonic(), time.time())
            self._published()
            if self._write_line is not None:
                self._start_watching()
            return self._next_id

    def finished(self, token: int) -> None:
        # Waits for a line being written: the judging thread then goes on only once the terminal
        # is back as pytest left it (its capture resumed).
        with self._lock:
            self._in_flight.pop(token, None)
            self._published()

    def watch_others(self, others: Source) -> None:
        """Also show claims in flight elsewhere (an xdist controller's workers), from now on."""
        with self._lock:
            self._others = others
            if self._write_line is not None:
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
            self._published()

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
            if not count or self._write_line is None:
                return None
            waited = max(seconds for _, seconds in flights)
            if waited < SHOW_AFTER_SECONDS or now - self._last_shown < REPEAT_EVERY_SECONDS:
                return None
            self._last_shown = now
            noun = "claim" if count == 1 else "claims"
            line = (
                f"propositions: judging {count} uncached {noun} with {self._model}, "
                f"{waited:.0f}s so far..."
            )
            # Written under the lock: see finished(). A terminal that fails to take the line
            # must not stop the watching.
            with contextlib.suppress(Exception):
                self._write_line(line)
            return line


class TerminalLine:
    """Writes a line to pytest's terminal from any thread while a test runs.

    Output capture is suspended around the write (as pytest's own live logging does) and the
    line starts on a line of its own. Where pytest prints a file name and then a letter per
    test, the running test's letter goes on below, after blanks as wide as the file name (named
    once, when its first test started), where pytest expects it.
    """

    def __init__(self, config: Any, current_test: Callable[[], str | None]) -> None:
        self._config = config
        self._current_test = current_test
        self._prefix_for: str | None = None
        self._listening = False

    def __call__(self, line: str) -> None:
        plugins = self._config.pluginmanager
        reporter = plugins.get_plugin("terminalreporter")
        if reporter is None:
            return
        capman = plugins.get_plugin("capturemanager")
        suspended = (
            capman.global_and_fixture_disabled() if capman is not None else contextlib.nullcontext()
        )
        with suspended:
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
