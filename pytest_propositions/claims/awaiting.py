"""Claims awaited in async code. A claim fixture called while its thread runs an event loop (an
``async def`` test under pytest-asyncio or anyio, or sync code such a test called) returns a
coroutine: awaited, the blocking judge works in a worker thread while the loop goes on, so
claims gathered are judged at once; never awaited, its test fails naming the line
(``AwaitedCheck``), never a silent pass. The Python API's ``a`` twins (``Proposition.acheck``...)
hand their call to a worker thread the same way.

Neither asyncio nor trio is imported here: a library that is not loaded runs no loop.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import contextvars
import sys
import threading
import types
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar

import pytest

if TYPE_CHECKING:
    from ..runtime import Runtime
    from ..verdict import Verdict

_T = TypeVar("_T")
# What a claim fixture returns: its value now, or in async code a coroutine giving it when awaited.
OrAwaitable: TypeAlias = _T | Coroutine[Any, Any, _T]
Claimed: TypeAlias = "OrAwaitable[Verdict]"

# The test's check of its claims made in async code, registered at the first such claim.
_CHECK = "propositions-awaited-claims"


def loop_library() -> str | None:
    """``"trio"`` or ``"asyncio"`` when the calling thread runs that library's event loop; None
    in sync code (a sync test or fixture, a worker thread)."""
    trio = sys.modules.get("trio")
    if trio is not None:
        try:
            trio.lowlevel.current_task()
        except RuntimeError:
            pass
        else:
            return "trio"
    asyncio = sys.modules.get("asyncio")
    # _get_running_loop: get_running_loop without raising in sync code (asyncio.events exports it).
    if asyncio is None or asyncio._get_running_loop() is None:
        return None
    return "asyncio"


class AwaitedClaim:
    """A claim's coroutine as its test's check sees it: where it was made, whether it was awaited
    (its coroutine started, its work handed to a thread) and whether whoever awaited it got the
    outcome. (Mutable state, not a value: a plain class.)"""

    def __init__(self, label: str, place: str | None, test_id: str) -> None:
        self.label = label
        self.place = place
        self.test_id = test_id
        self.coroutine: Coroutine[Any, Any, Any] | None = None
        self.started = False
        self.ended = False
        self.work: concurrent.futures.Future[Any] | None = None
        # The asyncio loop it was made on (None: another library's, or none), where a task
        # may hold its coroutine.
        self.loop: Any = None

    def in_a_task(self) -> bool:
        """Whether an asyncio task holds the coroutine (``create_task``, ``ensure_future``)."""
        if self.loop is None:
            return False
        tasks = sys.modules["asyncio"].all_tasks(self.loop)
        return any(task.get_coro() is self.coroutine for task in tasks)

    def close(self) -> None:
        if self.coroutine is not None:
            self.coroutine.close()

    def named(self) -> str:
        return f"{self.place}: {self.label}" if self.place else self.label


def awaitable(
    work: Callable[[], _T],
    label: str,
    place: str | None,
    runtime: Runtime | None,
    name: str | None = None,
) -> Coroutine[Any, Any, _T]:
    """A coroutine that runs ``work`` in a worker thread when awaited. While a test runs (the
    plugin watches the runtime), the test fails if it is never awaited. ``label``: the call as the
    failure names it; ``place``: where it was made; ``name``: the coroutine's name, which Python's
    own "never awaited" warning shows."""
    test_id = runtime.current_test if runtime is not None else None
    watch = runtime.on_awaitable if runtime is not None else None
    claim = AwaitedClaim(label, place, test_id) if test_id is not None and watch else None
    coroutine = _awaited(work, claim)
    if name is not None and isinstance(coroutine, types.CoroutineType):
        coroutine.__name__ = coroutine.__qualname__ = name
    if claim is not None and watch is not None:
        claim.coroutine = coroutine
        if loop_library() == "asyncio":
            claim.loop = sys.modules["asyncio"].get_running_loop()
        watch(claim)
    return coroutine


async def _awaited(work: Callable[[], _T], claim: AwaitedClaim | None) -> _T:
    __tracebackhide__ = True
    if claim is not None:
        claim.started = True
    try:
        value = await in_worker_thread(work, claim)
    except GeneratorExit:  # closed unfinished (its loop shut down): nobody got its outcome
        raise
    except BaseException:
        if claim is not None:
            claim.ended = True
        raise
    if claim is not None:
        claim.ended = True
    return value


async def in_worker_thread(work: Callable[[], _T], claim: AwaitedClaim | None = None) -> _T:
    """``work()`` run in a thread of its own (in a copy of the caller's context variables) while
    the caller's event loop goes on; its error raised here with the frames it came through."""
    __tracebackhide__ = True
    library = loop_library()
    if library is None:
        raise RuntimeError("awaited outside an asyncio or trio event loop")
    future: concurrent.futures.Future[_T] = concurrent.futures.Future()
    context = contextvars.copy_context()

    def run() -> None:
        __tracebackhide__ = True
        if not future.set_running_or_notify_cancel():
            return  # cancelled before it started: nothing judged, nothing to report
        try:
            future.set_result(context.run(_in_no_async_library, work))
        except BaseException as error:
            future.set_exception(error)

    if claim is not None:
        claim.work = future
    threading.Thread(target=run, name="prop-awaited-claim", daemon=True).start()
    if library == "trio":
        await _trio_wait(future)
    else:
        await sys.modules["asyncio"].wrap_future(future)
    error = future.exception()
    if error is not None:
        # Raised from here: the report shows the caller's line and the worker's frames, none of
        # the future's plumbing.
        raise error
    return future.result()


def _in_no_async_library(work: Callable[[], _T]) -> _T:
    """``work()`` told (as trio's own worker threads tell it) that no async library runs in its
    thread: the caller's context says which one runs in the caller's (sniffio)."""
    __tracebackhide__ = True
    sniffio = sys.modules.get("sniffio")
    if sniffio is not None:
        sniffio.current_async_library_cvar.set(None)
    return work()


async def _trio_wait(future: concurrent.futures.Future[Any]) -> None:
    """Wait for ``future`` in a trio task, which a cancellation can end."""
    trio = sys.modules["trio"]
    token = trio.lowlevel.current_trio_token()
    done = trio.Event()

    def wake(_: object) -> None:
        with contextlib.suppress(trio.RunFinishedError):  # its run ended: nobody waits
            token.run_sync_soon(done.set)

    future.add_done_callback(wake)
    await done.wait()


# -- the test's check, in pytest -----------------------------------------------------------------


def watch_awaited(config: pytest.Config, claim: AwaitedClaim) -> None:
    """Have the test that made ``claim`` check that it is awaited (the check is registered at
    the run's first claim made in async code: a suite that makes none pays nothing per test)."""
    check = config.pluginmanager.get_plugin(_CHECK)
    if check is None:
        check = AwaitedCheck()
        config.pluginmanager.register(check, _CHECK)
    check.add(claim)


class AwaitedCheck:
    """Once a test's call (then its teardown) ends: waits for the judging its claims started, and
    fails the test for each claim it never awaited or left unfinished, naming its line. A test
    that failed already keeps its error, with a note naming them."""

    def __init__(self) -> None:
        self._claims: dict[str, list[AwaitedClaim]] = {}
        self._lock = threading.Lock()

    def add(self, claim: AwaitedClaim) -> None:
        with self._lock:
            self._claims.setdefault(claim.test_id, []).append(claim)

    def take(self, test_id: str) -> list[AwaitedClaim]:
        with self._lock:
            return self._claims.pop(test_id, [])

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> None:
        # Before the report is made from ``call``: its outcome may change here.
        if call.when == "setup" and call.excinfo is None:
            return  # the test's own check comes after its call
        claims = self.take(item.nodeid)
        if not claims:
            return
        # No judging of this test may outlive it: it is filed under the test running.
        concurrent.futures.wait([c.work for c in claims if c.work is not None])
        for claim in claims:
            if not claim.started and not claim.in_a_task():
                # Python's own "never awaited" warning would only repeat ours, later (a task's
                # coroutine is left to its loop, which cancels it).
                claim.close()
        problems = unawaited_problems(claims)
        if not problems:
            return
        error = call.excinfo.value if call.excinfo is not None else None
        if isinstance(error, Exception):
            error.add_note("\n".join(problems))
        elif error is None:
            try:
                pytest.fail("\n".join(problems), pytrace=False)
            except pytest.fail.Exception:
                call.excinfo = pytest.ExceptionInfo.from_current()


def unawaited_problems(claims: list[AwaitedClaim]) -> list[str]:
    """A line for each claim never awaited (so never judged), or awaited but left unfinished
    when its test ended (a task nobody awaited): its outcome reached nobody."""
    problems = []
    for claim in claims:
        if not claim.started:
            problems.append(
                f"{claim.named()} was never awaited, so it was not judged: in async code a "
                "claim returns an awaitable; write `await` before it (or gather it)"
            )
        elif not claim.ended:
            problems.append(
                f"{claim.named()} was still being awaited when its test ended (a task nobody "
                "awaited?), so its outcome reached nobody: await it, or the task running it, "
                "before the test ends"
            )
    return problems


__all__ = [
    "AwaitedCheck",
    "AwaitedClaim",
    "Claimed",
    "OrAwaitable",
    "awaitable",
    "in_worker_thread",
    "loop_library",
    "watch_awaited",
]
