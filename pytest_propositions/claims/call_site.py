"""Where code outside the package called into it: the line that made a claim (``file:line``),
and whether that code is the project's or a library's.

An awaited twin of the Python API (``Proposition.acheck``...) runs its call in a worker thread,
whose stack holds no caller: the twin finds the caller's line in its own thread, before the
hand-off, and the worker reads it from ``AWAITED_FROM``.
"""

from __future__ import annotations

import functools
import os
import sys
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from types import FrameType


def frame_place(frame: FrameType) -> str:
    """``file:line`` of a frame, the file relative to the working folder when it is inside it."""
    path = Path(frame.f_code.co_filename)
    try:
        shown = str(path.relative_to(Path.cwd()))
    except ValueError:
        shown = str(path)
    return f"{shown}:{frame.f_lineno}"


# The package's folder: frames from files under it are the plugin's own, not the caller's.
_PACKAGE_FOLDER = os.path.join(os.path.dirname(os.path.dirname(__file__)), "")
# Folders that hold installed packages, wherever the environment is (a .venv inside a project).
_INSTALLED = frozenset({"site-packages", "dist-packages"})


@dataclass(frozen=True)
class CallSite:
    """Where code outside the package called into it (``place``, ``file:line``), and the module
    of that code when it is a library's rather than the project's (``library``)."""

    place: str
    library: str | None = None


# The call site of an awaited twin's caller, in the worker thread that makes the call.
AWAITED_FROM: ContextVar[CallSite | None] = ContextVar("AWAITED_FROM", default=None)


def call_site_outside_package(project: tuple[Path, ...] = ()) -> CallSite | None:
    """The frame that called into the package: where it is, and whose code it runs (in the
    worker thread of an awaited twin, its caller's, found before the hand-off)."""
    awaited = AWAITED_FROM.get()
    if awaited is not None:
        return awaited
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_FOLDER):
        frame = frame.f_back
    if frame is None:
        return None
    return CallSite(frame_place(frame), library_module(frame, project))


@functools.lru_cache(maxsize=512)
def _resolved(path: str) -> Path:
    """A file or folder as the file system finds it: ``..`` and symbolic links resolved, so
    that a library imported through ``tests/../lib`` is seen outside ``tests``."""
    return Path(os.path.realpath(path))


def library_module(frame: FrameType, project: tuple[Path, ...]) -> str | None:
    """The module's name when ``frame`` runs a library's code: an installed package, or a file
    outside the ``project``'s folders (both compared resolved). None for the project's own
    code, for code made at run time (no file), and when the project is not known (outside
    pytest)."""
    filename = frame.f_code.co_filename
    if not project or not os.path.isabs(filename):
        return None
    path = _resolved(filename)
    folders = [_resolved(str(folder)) for folder in project]
    if _INSTALLED.isdisjoint(path.parts) and any(path.is_relative_to(f) for f in folders):
        return None
    return str(frame.f_globals.get("__name__") or path.stem)


__all__ = [
    "AWAITED_FROM",
    "CallSite",
    "call_site_outside_package",
    "frame_place",
    "library_module",
]
