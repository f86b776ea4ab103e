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
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

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


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class PostgresServer:
    """One throwaway cluster. ``start``/``stop`` can be called again (a store lost mid-run)."""

    def __init__(self, bindir: Path, port: int | None = None) -> None:
        self.bindir = bindir
        self.port = port or free_port()
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
