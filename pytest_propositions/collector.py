"""Keeping long-lived heaps out of the garbage collector's way.

A live run imports litellm: ~2,600 modules whose objects live until the process ends. Left
alone, the collector traverses them while they are imported, in every later full collection
(~0.2 s each) and once more at exit, in every process, so in every xdist worker. A cached run
is cheap per claim, and there the full collections over pytest's own heap (its collected items
and reports) are a large share of what claims add; so a session's first claim freezes the heap.
"""

from __future__ import annotations

import atexit
import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_frozen = False
_exit_hook_registered = False


@contextmanager
def paused() -> Iterator[None]:
    """No automatic collection inside (an import only adds live objects); respects a collector
    the user disabled."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def freeze() -> None:
    """Move every object alive now to the collector's permanent generation, until `thaw`.

    Only for a pytest session, whose end thaws: objects alive now that become garbage later are
    then collected at the session's end rather than during it.
    """
    global _frozen
    with _lock:
        gc.freeze()
        _frozen = True


def thaw() -> None:
    """Give what `freeze` set aside back to the collector, so pytest's last end-of-run collection
    (at cleanup, which reports exceptions raised in finalizers) sees everything."""
    global _frozen
    with _lock:
        if _frozen:
            gc.unfreeze()
            _frozen = False


def skip_final_collection_at_exit() -> None:
    """Spare the interpreter one last traversal of litellm's heap at exit (~0.75 s a process).

    pytest has already collected the garbage at unconfigure; what is still alive at exit dies
    with the process either way.
    """
    global _exit_hook_registered
    with _lock:
        if not _exit_hook_registered:
            atexit.register(gc.freeze)
            _exit_hook_registered = True
