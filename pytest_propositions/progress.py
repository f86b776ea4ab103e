"""A terminal line while uncached claims take more than a moment to judge.

The judge reports when live judging starts and ends; a small daemon thread writes a line when
something has been in flight for a while, and again every few seconds while it still is.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

SHOW_AFTER_SECONDS = 1.0
REPEAT_EVERY_SECONDS = 5.0
_TICK_SECONDS = 0.2


class ProgressLine:
    def __init__(self, write_line: Callable[[str], None], model: str) -> None:
        self._write_line = write_line
        self._model = model
        self._in_flight: dict[int, float] = {}
        self._next_id = 0
        self._last_shown = 0.0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def started(self) -> int:
        with self._lock:
            self._next_id += 1
            self._in_flight[self._next_id] = time.monotonic()
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._watch, name="prop-progress", daemon=True
                )
                self._thread.start()
            return self._next_id

    def finished(self, token: int) -> None:
        with self._lock:
            self._in_flight.pop(token, None)

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=1)

    def _watch(self) -> None:
        while not self._stop.wait(_TICK_SECONDS):
            now = time.monotonic()
            with self._lock:
                if not self._in_flight:
                    continue
                waited = now - min(self._in_flight.values())
                count = len(self._in_flight)
                due = (
                    waited >= SHOW_AFTER_SECONDS and now - self._last_shown >= REPEAT_EVERY_SECONDS
                )
                if due:
                    self._last_shown = now
            if due:
                noun = "claim" if count == 1 else "claims"
                self._write_line(
                    f"propositions: judging {count} uncached {noun} with {self._model}, "
                    f"{waited:.0f}s so far..."
                )
