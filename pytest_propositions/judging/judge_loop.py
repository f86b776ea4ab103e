"""The event loop that live judge calls run on: one per process, on a daemon thread.

Synchronous code (a test, a worker thread of a batch) hands it a coroutine and waits.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

_T = TypeVar("_T")


class _JudgeLoop:
    """One event loop on a daemon thread, shared by the whole process.

    litellm caches its async HTTP clients per event loop, so the loop must outlive any one run
    (pytester runs several in one process). Synchronous callers submit coroutines and wait.
    """

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()

    def run(self, coroutine: Coroutine[Any, Any, _T]) -> _T:
        # In a context of its own, not the caller's copy: a trio task's would tell httpx's
        # pool (through sniffio) that this asyncio loop is trio's.
        loop = self._ensure()
        future = contextvars.Context().run(asyncio.run_coroutine_threadsafe, coroutine, loop)
        try:
            return future.result()
        except BaseException:
            future.cancel()  # Ctrl-C while waiting: do not leave the call running
            raise

    def _ensure(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                threading.Thread(
                    target=loop.run_forever, name="prop-judge-loop", daemon=True
                ).start()
                self._loop = loop
            return self._loop


_JUDGE_LOOP = _JudgeLoop()


def run_on_judge_loop(coroutine: Coroutine[Any, Any, _T]) -> _T:
    """Run a judge coroutine to completion from synchronous code, from any thread."""
    return _JUDGE_LOOP.run(coroutine)
