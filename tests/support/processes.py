"""Process checks shared by the local-judge tests: is a pid alive, and does a child die with
its parent."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def pid_alive(pid: int) -> bool:
    """Whether a process exists and is not a zombie waiting for a reaper that never comes."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    status = Path(f"/proc/{pid}/status")
    try:
        return "\nState:\tZ" not in status.read_text()
    except OSError:
        return not sys.platform.startswith("linux")


def wait_until(condition: Callable[[], bool], seconds: float = 20.0) -> bool:
    """Poll until the condition holds or the (generous) deadline passes; no timing asserts."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return condition()


def assert_child_dies_with_parent(command: Sequence[str]) -> None:
    """Run ``command`` (it prints a child's pid, then waits), SIGKILL it, and check the child
    goes too."""
    parent = subprocess.Popen(list(command), stdout=subprocess.PIPE, text=True, cwd=str(REPO))
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        assert pid_alive(child)
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        assert wait_until(lambda: not pid_alive(child)), "the server outlived its parent"
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
        if parent.stdout is not None:
            parent.stdout.close()
