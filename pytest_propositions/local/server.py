"""One llama.cpp server process for the local judge: started on demand, watched, stopped for sure.

The server (``python -m pytest_propositions.local.serve``) listens on loopback. It is stopped on
close and at interpreter exit, runs in its own session (so a terminal's Ctrl-C reaches the plugin
first), and on Linux is told by the kernel to exit when the process that started it dies, even by
SIGKILL. A server that exits or never answers raises ``JudgeUnavailable`` carrying the last lines
of its log.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import ctypes.util
import logging
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO

from ..errors import JudgeUnavailable
from ..judging.endpoint import Progress
from .model_file import engine_missing
from .ports import free_loopback_port
from .probes import serves, slots_at

__all__ = [
    "CONTEXT_CAP_TOKENS",
    "DEFAULT_CONTEXT_TOKENS",
    "DEFAULT_STARTUP_TIMEOUT",
    "MAX_PROMPT_THREADS",
    "SERVED_MODEL",
    "LocalServer",
    "server_command",
    "server_threads",
]

logger = logging.getLogger("pytest_propositions")

# The name the server publishes; litellm reaches it as "openai/<this>". Fixed, so that nothing in
# a request depends on where the model file happens to live.
SERVED_MODEL = "prop-local-judge"
# A cap on the threads reading prompts: a 135M model gives each thread little work, and past a
# few threads they mostly wait on each other (only 1-3 were measured, on 2 cores).
MAX_PROMPT_THREADS = 4
# The window when neither --prop-local-context nor the model file says one. SmolLM2 was trained
# with 8192 tokens of context (its file says so); our prompts are ~1,500 plus the trajectory.
DEFAULT_CONTEXT_TOKENS = 8192
# The most the window defaults to, whatever the file was trained for: the server keeps a cache
# of keys and values for each token of window in each of its two slots (SmolLM2-135M: 23 KB a
# token, so 32,768 tokens are 1.5 GB; an 8B model's 128 KB a token would make 131,072 tokens 32
# GB). --prop-local-context asks for more.
CONTEXT_CAP_TOKENS = 32768
# Loading the model takes a second or two; the slack is for cold disks and busy CI machines.
DEFAULT_STARTUP_TIMEOUT = 120.0
STOP_GRACE_SECONDS = 5.0
LOG_TAIL_LINES = 20

_POLL_SECONDS = 0.25
_PORT_ATTEMPTS = 3
_PR_SET_PDEATHSIG = 1


def server_threads() -> int:
    """Threads that read prompts: the cores this process may use, shared among xdist workers
    (each starts its own server), at most ``MAX_PROMPT_THREADS``.

    The count changes speed only, never an answer: without flash attention llama.cpp computes
    the same bits on any number of threads (measured on 1, 2 and 3; ``local.serve``). Replies
    are generated on all of them but one, at most 2 (``local.serve.generation_threads``).
    """
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    try:
        workers = max(1, int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")))
    except ValueError:
        workers = 1
    return max(1, min(MAX_PROMPT_THREADS, cores // workers))


def server_command(
    model: Path,
    port: int,
    *,
    context_tokens: int = DEFAULT_CONTEXT_TOKENS,
    threads: int | None = None,
) -> list[str]:
    """The command line of llama.cpp's OpenAI-compatible server for one model on loopback.

    The server process watches this process too (``--parent``): it exits when pytest is gone.
    """
    threads = threads or server_threads()
    return [
        sys.executable,
        "-m",
        "pytest_propositions.local.serve",
        "--model",
        str(model),
        "--alias",
        SERVED_MODEL,
        "--port",
        str(port),
        "--ctx",
        str(context_tokens),
        "--threads",
        str(threads),
        "--parent",
        str(os.getpid()),
    ]


def _parent_death_signal() -> Callable[[], None] | None:
    """A ``preexec_fn`` asking Linux to SIGTERM the child when its parent thread dies.

    libc is resolved here, in the parent: the child runs only the prepared call, since loading
    libraries between fork and exec is not safe. Elsewhere there is no such call: ``None``.
    """
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        prctl = libc.prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def arrange() -> None:
        prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
        if os.getppid() != parent:  # the parent died before the request took effect
            os.kill(os.getpid(), signal.SIGTERM)

    return arrange


def _tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        with path.open("r", encoding="utf-8", errors="replace") as stream:
            return "".join(deque(stream, maxlen=lines)).rstrip()
    except OSError:
        return "(the server log could not be read)"


class LocalServer:
    """One llama.cpp server process: started once on demand, stopped for sure.

    ``start`` is thread-safe and idempotent; a failed start is remembered and raised again, so a
    run with a broken model fails each claim fast instead of waiting for the deadline each time.
    ``command`` replaces the llama.cpp command line (tests use a stand-in server); ``{port}`` in
    it is replaced by the chosen port. The server's output goes to a file in ``log_dir`` (the
    temporary folder by default), never to a pipe that could fill up and stall it.
    """

    def __init__(
        self,
        model: Path,
        *,
        startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
        context_tokens: int = DEFAULT_CONTEXT_TOKENS,
        threads: int | None = None,
        command: Sequence[str] | None = None,
        log_dir: Path | None = None,
    ) -> None:
        self.model = model
        self.log_dir = log_dir
        self.startup_timeout = startup_timeout
        self.context_tokens = context_tokens
        self.threads = threads
        self.command = list(command) if command is not None else None
        self.port: int | None = None
        self.log_path: Path | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self._failure: str | None = None
        self._release = threading.Event()
        self._lock = threading.RLock()

    # -- public ------------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible endpoint, ``http://127.0.0.1:PORT/v1``; only once started."""
        if self.port is None:
            raise RuntimeError("the local judge server has not been started")
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def is_running(self) -> bool:
        process = self._process
        return process is not None and process.poll() is None

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def progress(self) -> Progress | None:
        """How far the server is with what it answers (llama.cpp's ``/slots``, through the
        front); None when it does not say within a moment. A server that has exited raises
        ``JudgeUnavailable`` with its log's last lines, at once: nothing is coming."""
        process, port = self._process, self.port
        if process is None or port is None:
            return None
        code = process.poll()
        if code is not None:
            with self._lock:
                self._fail(
                    f"the local judge server ({self.model.name}) exited with code {code} "
                    "while it was answering"
                )
        return slots_at(port)

    def hung(self, message: str) -> str:
        """Stop the server, which made no progress, and remember why, so that later calls fail
        at once; the message to raise, with the log's last lines."""
        with self._lock:
            return self._stopped_for(message)

    def start(self) -> str:
        """Start the server if it is not up yet, wait until it answers, and return its base URL."""
        with self._lock:
            if self._failure is not None:
                raise JudgeUnavailable(self._failure)
            if self._process is not None:
                if self._process.poll() is None:
                    return self.base_url
                self._fail(
                    f"the local judge server ({self.model.name}) exited unexpectedly with "
                    f"code {self._process.returncode}"
                )
            missing = engine_missing() if self.command is None else None
            if missing is not None:
                self._failure = f"--prop-model=local needs {missing}"
                raise JudgeUnavailable(self._failure)
            for attempt in range(_PORT_ATTEMPTS):
                if self._launch_and_wait(last_attempt=attempt + 1 == _PORT_ATTEMPTS):
                    return self.base_url
            raise AssertionError("unreachable")  # pragma: no cover

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL after a grace period) and forget any failure.

        The log is deleted, unless a failure message pointed the user to it.
        """
        with self._lock:
            self._terminate()
            if self.log_path is not None and self._failure is None:
                with contextlib.suppress(OSError):
                    self.log_path.unlink()
            self.log_path = None
            self._failure = None
            atexit.unregister(self._stop_at_exit)

    def __enter__(self) -> LocalServer:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    # -- starting ----------------------------------------------------------------------------

    def _argv(self, port: int) -> list[str]:
        if self.command is not None:
            return [part.replace("{port}", str(port)) for part in self.command]
        return server_command(
            self.model, port, context_tokens=self.context_tokens, threads=self.threads
        )

    def _launch_and_wait(self, *, last_attempt: bool) -> bool:
        """One launch on a fresh port; False when the port was taken and another try may work."""
        port = free_loopback_port()
        argv = self._argv(port)
        handle, name = tempfile.mkstemp(prefix="prop-local-judge-", suffix=".log", dir=self.log_dir)
        os.close(handle)
        self.log_path = Path(name)
        self.port = port
        self._log = self.log_path.open("wb")
        self._release = threading.Event()
        started = time.monotonic()
        logger.info("starting the local judge: %s", " ".join(argv))
        self._process = self._spawn(argv)
        atexit.register(self._stop_at_exit)
        deadline = started + self.startup_timeout
        while True:
            code = self._process.poll()
            if code is not None:
                if not last_attempt and self._port_was_taken():
                    logger.info("port %d was taken before the local judge bound it; retrying", port)
                    self.stop()
                    return False
                self._fail(
                    f"the local judge server exited with code {code} while starting "
                    f"(command: {' '.join(argv)})"
                )
            if self._answers():
                logger.info(
                    "local judge %s ready at %s after %.1fs",
                    self.model.name,
                    self.base_url,
                    time.monotonic() - started,
                )
                return True
            if time.monotonic() >= deadline:
                self._fail(
                    f"the local judge server did not answer within {self.startup_timeout:.0f}s "
                    f"(command: {' '.join(argv)})"
                )
            time.sleep(_POLL_SECONDS)

    def _spawn(self, argv: list[str]) -> subprocess.Popen[bytes]:
        """Start the process from a thread that lives until ``stop``.

        Linux sends the parent-death signal when the *thread* that forked the child ends, and the
        judge may start the server from a short-lived worker thread: so a dedicated keeper thread
        forks it and waits for the stop.
        """
        outcome: list[subprocess.Popen[bytes] | BaseException] = []
        ready = threading.Event()
        release = self._release
        log = self._log

        def keeper() -> None:
            try:
                outcome.append(
                    subprocess.Popen(
                        argv,
                        stdin=subprocess.DEVNULL,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,
                        preexec_fn=_parent_death_signal(),
                        close_fds=True,
                    )
                )
            except BaseException as error:
                outcome.append(error)
                ready.set()
                return
            ready.set()
            release.wait()

        threading.Thread(target=keeper, name="prop-local-judge-keeper", daemon=True).start()
        ready.wait()
        result = outcome[0]
        if isinstance(result, BaseException):
            self._close_log()
            self._failure = f"cannot start the local judge server ({' '.join(argv)}): {result}"
            raise JudgeUnavailable(self._failure) from result
        return result

    def _answers(self) -> bool:
        """Whether the server answers ``GET /v1/models`` and lists our model."""
        return serves(self.base_url, SERVED_MODEL)

    def _port_was_taken(self) -> bool:
        if self.log_path is None:
            return False
        log = _tail(self.log_path, 50).lower()
        # llama.cpp's words, then the usual errno text (a stand-in server's).
        return "couldn't bind http server socket" in log or "address already in use" in log

    def _fail(self, reason: str) -> None:
        """Stop what is left of the server, remember why, and raise with the log's last lines."""
        raise JudgeUnavailable(self._stopped_for(reason))

    def _stopped_for(self, reason: str) -> str:
        """Stop what is left of the server and remember why: the message, with the log's tail."""
        self._terminate()
        log = self.log_path
        tail = _tail(log) if log is not None else ""
        message = (
            f"{reason}.\n--- last {LOG_TAIL_LINES} lines of the server log ({log}) ---\n"
            f"{tail or '(empty)'}"
        )
        self._failure = message
        return message

    # -- stopping ----------------------------------------------------------------------------

    def _terminate(self) -> None:
        process = self._process
        if process is not None:
            if process.poll() is None:
                logger.info("stopping the local judge (pid %d)", process.pid)
                self._signal_group(process, signal.SIGTERM)
                try:
                    process.wait(timeout=STOP_GRACE_SECONDS)
                except subprocess.TimeoutExpired:
                    self._signal_group(process, signal.SIGKILL)
                    process.wait()
            self._process = None
        self._release.set()
        self._close_log()

    def _stop_at_exit(self) -> None:
        """Stop at interpreter exit without waiting forever on a start stuck in another thread."""
        if self._lock.acquire(timeout=STOP_GRACE_SECONDS):
            try:
                self.stop()
            finally:
                self._lock.release()
            return
        process = self._process
        if process is not None:
            self._signal_group(process, signal.SIGKILL)

    @staticmethod
    def _signal_group(process: subprocess.Popen[bytes], signum: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signum)

    def _close_log(self) -> None:
        if self._log is not None:
            with contextlib.suppress(OSError):
                self._log.close()
            self._log = None
