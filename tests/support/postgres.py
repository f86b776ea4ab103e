"""A real PostgreSQL server for the store's tests: ``initdb`` and ``pg_ctl`` in a temporary folder,
listening on a free loopback port. PostgreSQL refuses to run as root, so as root the server runs
as the ``postgres`` OS user. Nothing here is reached from outside 127.0.0.1.

The superuser ``postgres`` is trusted on loopback (the tests' own administration); every other
role must give its password (scram-sha-256), so a wrong password is refused as in production.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from pytest_propositions.local.ports import free_loopback_port

ADMIN = "postgres"
REQUIRED = ("initdb", "pg_ctl", "postgres")


def find_bindir() -> Path | None:
    """Where PostgreSQL's server programs are: pg_config's answer, Debian's versioned folders
    (newest first), then PATH; None when there is no server on this machine."""
    candidates: list[Path] = []
    pg_config = shutil.which("pg_config")
    if pg_config:
        try:
            found = subprocess.run(
                [pg_config, "--bindir"], capture_output=True, text=True, check=True
            ).stdout.strip()
            candidates.append(Path(found))
        except (OSError, subprocess.CalledProcessError):
            pass

    def version(path: str) -> tuple[int, ...]:
        name = Path(path).parent.name
        return tuple(int(part) for part in name.split(".") if part.isdigit())

    candidates += [
        Path(p) for p in sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=version)[::-1]
    ]
    initdb = shutil.which("initdb")
    if initdb:
        candidates.append(Path(os.path.realpath(initdb)).parent)
    for folder in candidates:
        if all((folder / name).is_file() for name in REQUIRED):
            return folder
    return None


class PostgresServer:
    """One throwaway cluster. ``start``/``stop`` can be called again (a store lost mid-run)."""

    def __init__(self, bindir: Path, port: int | None = None) -> None:
        self.bindir = bindir
        self.port = port or free_loopback_port()
        self.root = Path(tempfile.mkdtemp(prefix="prop-pg-"))
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self._user: str | None = None
        if os.geteuid() == 0:
            self._user = ADMIN
            entry = pwd.getpwnam(ADMIN)
            os.chown(self.root, entry.pw_uid, entry.pw_gid)
        os.chmod(self.root, 0o755)
        self._run(
            "initdb", "-D", str(self.data), "-U", ADMIN, "-A", "trust", "-E", "UTF8", "--no-locale"
        )
        (self.data / "pg_hba.conf").write_text(
            "local all all trust\n"
            f"host all {ADMIN} 127.0.0.1/32 trust\n"
            "host all all 127.0.0.1/32 scram-sha-256\n"
        )
        with open(self.data / "postgresql.conf", "a", encoding="utf-8") as conf:
            conf.write(
                "\nlisten_addresses = '127.0.0.1'\n"
                f"port = {self.port}\n"
                f"unix_socket_directories = '{self.root}'\n"
                "fsync = off\nfull_page_writes = off\n"
                "max_connections = 100\nshared_buffers = 32MB\n"
            )
        if self._user is not None:
            entry = pwd.getpwnam(ADMIN)
            for path in (self.data / "pg_hba.conf", self.data / "postgresql.conf"):
                os.chown(path, entry.pw_uid, entry.pw_gid)

    def _run(self, program: str, *args: str) -> subprocess.CompletedProcess[str]:
        command = [str(self.bindir / program), *args]
        if self._user is not None:
            command = ["runuser", "-u", self._user, "--", *command]
        return subprocess.run(
            command, capture_output=True, text=True, check=True, cwd=str(self.root)
        )

    def start(self) -> None:
        try:
            self._run(
                "pg_ctl", "-D", str(self.data), "-l", str(self.log), "-w", "-t", "120", "start"
            )
        except subprocess.CalledProcessError as error:
            log = self.log.read_text() if self.log.exists() else ""
            raise RuntimeError(f"PostgreSQL did not start: {error.stderr}\n{log[-2000:]}") from None

    def stop(self, mode: str = "fast") -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop")

    @property
    def running(self) -> bool:
        done = subprocess.run(
            [str(self.bindir / "pg_ctl"), "-D", str(self.data), "status"],
            capture_output=True,
            check=False,
        )
        return done.returncode == 0

    def destroy(self) -> None:
        if self.data.exists() and self.running:
            self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)

    # -- administration, as the trusted superuser --

    def admin_url(self, database: str = "postgres") -> str:
        return f"postgresql://{ADMIN}@127.0.0.1:{self.port}/{database}"

    def url(self, user: str, password: str | None, database: str) -> str:
        secret = f":{password}" if password is not None else ""
        return f"postgresql://{user}{secret}@127.0.0.1:{self.port}/{database}"

    def sql(self, statement: str, database: str = "postgres") -> list[tuple[object, ...]]:
        import psycopg

        with psycopg.connect(self.admin_url(database), autocommit=True) as conn:
            cursor = conn.execute(statement)  # type: ignore[arg-type]
            return list(cursor.fetchall()) if cursor.description else []

    def create_database(self, name: str, owner: str = ADMIN) -> str:
        self.sql(f'CREATE DATABASE "{name}" OWNER "{owner}"')
        return name

    def create_role(self, name: str, password: str) -> None:
        self.sql(f"CREATE ROLE \"{name}\" LOGIN PASSWORD '{password}'")


@contextmanager
def running_server(bindir: Path) -> Iterator[PostgresServer]:
    server = PostgresServer(bindir)
    try:
        server.start()
        yield server
    finally:
        server.destroy()


# The protocol's untyped requests a client may send before its startup message.
_SSL_REQUEST, _GSSENC_REQUEST = 80877103, 80877104


class StallingProxy:
    """A TCP proxy on loopback in front of a server that passes the startup and the login through,
    and queries, up to the first Query or Parse message holding ``hold`` (any one for b""): that
    one it keeps, and it forwards nothing more from that client. The server answered the login;
    the client then waits on a store that stopped answering (no timeout of the server's can
    fire: the query never reaches it). ``held`` is set once a message was kept.

    Bounded: it stops itself after ``lifetime`` seconds, or when its ``with`` block ends.
    """

    def __init__(self, upstream_port: int, hold: bytes = b"", lifetime: float = 300.0) -> None:
        self.upstream_port = upstream_port
        self.hold = hold
        self.held = threading.Event()
        self._deadline = time.monotonic() + lifetime
        self._stop = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.1)
        self.port = int(self._listener.getsockname()[1])
        self._sockets: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()

    def __enter__(self) -> StallingProxy:
        self._spawn(self._accept)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        with self._lock:
            sockets = [self._listener, *self._sockets]
        for sock in sockets:
            sock.close()
        for thread in list(self._threads):
            thread.join(5)

    def _spawn(self, target: Callable[..., None], *args: object) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)
        with self._lock:
            self._threads.append(thread)
        thread.start()

    def _running(self) -> bool:
        if time.monotonic() > self._deadline:
            self._stop.set()
        return not self._stop.is_set()

    def _accept(self) -> None:
        while self._running():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", self.upstream_port))
            for sock in (client, server):
                sock.settimeout(0.1)
            with self._lock:
                self._sockets += [client, server]
            self._spawn(self._to_client, server, client)
            self._spawn(self._to_server, client, server)

    def _receive(self, sock: socket.socket) -> bytes | None:
        """What arrived, b"" for nothing yet, None once the connection is gone."""
        try:
            return sock.recv(65536) or None
        except TimeoutError:
            return b""
        except OSError:
            return None

    def _to_client(self, server: socket.socket, client: socket.socket) -> None:
        while self._running():
            data = self._receive(server)
            if data is None:
                break
            try:
                client.sendall(data)
            except OSError:
                break
        client.close()

    def _to_server(self, client: socket.socket, server: socket.socket) -> None:
        pending, started = b"", False
        while self._running():
            data = self._receive(client)
            if data is None:
                break
            pending += data
            while True:
                if not started:  # untyped: a length, then a request code or the protocol version
                    if len(pending) < 8 or len(pending) < int.from_bytes(pending[:4], "big"):
                        break
                    size = int.from_bytes(pending[:4], "big")
                    started = int.from_bytes(pending[4:8], "big") not in (
                        _SSL_REQUEST,
                        _GSSENC_REQUEST,
                    )
                else:  # a type byte, then a length that counts itself but not the type
                    if len(pending) < 5 or len(pending) < 1 + int.from_bytes(pending[1:5], "big"):
                        break
                    size = 1 + int.from_bytes(pending[1:5], "big")
                    if pending[:1] in (b"Q", b"P") and self.hold in pending[:size]:
                        self.held.set()
                        self._stop.wait(max(0.0, self._deadline - time.monotonic()))
                        return
                message, pending = pending[:size], pending[size:]
                try:
                    server.sendall(message)
                except OSError:
                    return
        server.close()
