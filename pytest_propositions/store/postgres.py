"""The shared verdict store: one PostgreSQL table that every machine of a CI fleet reads and writes.

It owns the connection (opened on first need, credentials from the URL, the ``PG*`` variables or
``.pgpass``, never shown), the versioned schema and its migrations, batched lookups, and the
insert-if-absent that makes the first stored verdict of a request the fleet's only one, and the
bound on every query (a lock held elsewhere or a silent peer must not hang the run).
psycopg is imported only when the store is first reached.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar
from urllib.parse import unquote, urlsplit

from ..errors import install_hint
from ..redaction import Secret, redact, redact_url, redact_values, remember_secrets, url_credentials
from ..settings import Settings
from .errors import NOTHING_JUDGED, StoreError, StoreLost, StoreUnavailable

__all__ = [
    "EXTRA_HINT",
    "SCHEMA_VERSION",
    "PostgresStore",
    "StoreError",
    "StoreLost",
    "StoreStats",
    "StoreUnavailable",
    "describe_store",
]

#: The schema this version of the plugin reads and writes; MIGRATIONS bring older ones here.
SCHEMA_VERSION = 1
VERDICT_TABLE = "prop_verdicts"
SCHEMA_TABLE = "prop_schema"
EXTRA_HINT = install_hint("postgres")

# Held while the schema is created or migrated, so two jobs starting at once do it once.
_SCHEMA_LOCK_ID = 0x70726F70  # "prop"

#: Statements that take a store from version N-1 to N, applied in one transaction each.
MIGRATIONS: dict[int, tuple[str, ...]] = {
    1: (
        f"CREATE TABLE IF NOT EXISTS {SCHEMA_TABLE} (version integer NOT NULL)",
        f"""CREATE TABLE IF NOT EXISTS {VERDICT_TABLE} (
            key text PRIMARY KEY CHECK (key ~ '^[0-9a-f]{{64}}$'),
            record text NOT NULL,
            model text NOT NULL,
            recorded_at timestamptz NOT NULL,
            stored_at timestamptz NOT NULL DEFAULT now()
        )""",
        f"CREATE INDEX IF NOT EXISTS {VERDICT_TABLE}_stored_at ON {VERDICT_TABLE} (stored_at)",
        f"COMMENT ON TABLE {VERDICT_TABLE} IS 'pytest-propositions: one judge verdict per "
        "request key, shared by every machine; the first verdict stored wins'",
    ),
}

# Lookups and inserts go in slices of this many keys (one round trip each).
BATCH = 500

#: Seconds a query may take unless told otherwise (--prop-store-timeout, PROP_STORE_TIMEOUT).
DEFAULT_QUERY_TIMEOUT = Settings().store_timeout
# Once a query is past its bound: how long the cancel, and then the answer to it, may take
# before the connection is cut (a peer that stopped answering answers no cancel either).
CANCEL_GRACE = 5.0

_K = TypeVar("_K")
_V = TypeVar("_V")


@dataclass(frozen=True)
class StoreStats:
    """What a store holds, for ``cache stats --store``."""

    where: str
    schema_version: int
    entries: int
    size_bytes: int
    models: dict[str, int]
    oldest: datetime | None
    newest: datetime | None


def describe_store(url: str, env: Mapping[str, str] | None = None) -> str:
    """The store as messages name it: ``postgresql://user@host:port/dbname``, never a password.

    What the URL leaves out comes from the ``PG*`` variables, as libpq would take it. A password
    holding "/", "?", "#" or "@" unencoded is read by the driver as a host, a port or a database:
    the URL is then named as its credentials end (at its last "@"), with them masked.
    """
    env = os.environ if env is None else env
    parts = _driver_reading(url)
    credentials = url_credentials(url)
    masked = False
    if credentials:
        user, _, password = credentials[0].reveal().partition(":")
        if (unquote(user), unquote(password)) != (parts.get("user", ""), parts.get("password", "")):
            parts = _driver_reading(redact_url(url.strip(), mask=""))
            masked = True
    host = parts.get("host") or env.get("PGHOST") or "localhost"
    port = parts.get("port") or env.get("PGPORT") or "5432"
    user = "[redacted]" if masked else parts.get("user") or env.get("PGUSER") or ""
    dbname = parts.get("dbname") or env.get("PGDATABASE") or user or "?"
    shown_user = f"{user}@" if user else ""
    if host.startswith("/"):
        shown = f"postgresql://{shown_user}/{dbname} (socket {host}, port {port})"
    else:
        shown = f"postgresql://{shown_user}{host}:{port}/{dbname}"
    return redact_values(shown, credentials[1:])


def _misread(url: str) -> tuple[str, ...]:
    """The pieces of a URL's password that the driver reads as something else (a host, a port,
    a database: the password holds "/", "?", "#" or "@" unencoded); none if read as a password.
    Its error messages may quote these pieces, which are redacted from them."""
    credentials = url_credentials(url)
    if len(credentials) < 2 or unquote(credentials[1].reveal()) == _driver_reading(url).get(
        "password", ""
    ):
        return ()
    pieces = re.split(r"[/?#@:]", credentials[1].reveal())
    return tuple(piece for piece in pieces if len(piece) >= 3)


def _driver_reading(url: str) -> dict[str, str]:
    """The URL's parts as the driver reads them (roughly, without the driver)."""
    try:
        from psycopg.conninfo import conninfo_to_dict

        return {k: str(v) for k, v in conninfo_to_dict(url).items() if v is not None}
    except Exception:
        return _parse_url_roughly(url)


def _parse_url_roughly(url: str) -> dict[str, str]:
    """Host, port, user, password and database of a URL when psycopg cannot parse it."""

    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return {}
    found = {
        "host": parts.hostname or "",
        "port": str(port) if port else "",
        "user": unquote(parts.username or ""),
        "password": unquote(parts.password or ""),
        "dbname": parts.path.lstrip("/"),
    }
    return {k: v for k, v in found.items() if v}


def _load_psycopg(where: str) -> Any:
    try:
        import psycopg
    except ImportError:
        raise StoreError(
            f"--prop-store={where} needs the PostgreSQL driver psycopg 3, which is not "
            f"installed: {EXTRA_HINT}"
        ) from None
    return psycopg


class _QueryBound:
    """One step on the connection, bounded from a timer thread (psycopg's blocking calls have no
    timeout of their own).

    Past the bound, the server is asked to cancel the query: a wait on another session's lock
    ends with an error. A peer that answers nothing within the grace after that (a stalled server
    or proxy, where no timeout of the server's can fire) is cut off: its socket is shut down, so
    the blocked read returns with an error. ``fired`` says the bound was passed.
    """

    def __init__(self, conn: Any, seconds: float) -> None:
        self._conn = conn
        self._grace = min(seconds, CANCEL_GRACE)
        self._lock = threading.Lock()
        self._ended = threading.Event()
        self._cancelling: threading.Thread | None = None
        self.fired = False
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    def __enter__(self) -> _QueryBound:
        self._timer.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        with self._lock:
            self._ended.set()
        self._timer.cancel()
        if self._cancelling is not None:
            # The caller may close the connection next: not while a cancel is being made of it.
            self._cancelling.join(self._grace)

    def _expire(self) -> None:
        with self._lock:
            if self._ended.is_set():
                return
            self.fired = True
            # A thread of its own: before psycopg 3.2 (no cancel_safe) a cancel may block.
            self._cancelling = threading.Thread(target=self._cancel, daemon=True)
            self._cancelling.start()
        if self._ended.wait(self._grace):
            return
        # Under the lock, and only while the step is still running: once it ended, the caller
        # may close the connection and its descriptor number may belong to another file.
        with self._lock, contextlib.suppress(Exception):
            if not self._ended.is_set():
                peer = socket.socket(fileno=os.dup(self._conn.fileno()))
                try:
                    peer.shutdown(socket.SHUT_RDWR)
                finally:
                    peer.close()

    def _cancel(self) -> None:
        with contextlib.suppress(Exception):
            cancel_safe = getattr(self._conn, "cancel_safe", None)
            if cancel_safe is not None:
                cancel_safe(timeout=self._grace)
            else:
                self._conn.cancel()


class _Coalescer(Generic[_K, _V]):
    """Calls from many threads at once become one batch: whoever arrives first runs the batch,
    for everyone waiting by then, and again for those who arrived meanwhile (group commit).

    Soft claims and markers are judged on a thread pool; their lookups then share round trips.
    """

    def __init__(self, run: Callable[[list[_K]], Mapping[_K, _V]]) -> None:
        self._run = run
        self._lock = threading.Lock()
        self._queue: list[tuple[_K, Future[_V | None]]] = []
        self._leading = False

    def __call__(self, item: _K) -> _V | None:
        future: Future[_V | None] = Future()
        with self._lock:
            self._queue.append((item, future))
            lead = not self._leading
            self._leading = True
        if lead:
            while True:
                with self._lock:
                    batch, self._queue = self._queue, []
                    if not batch:
                        self._leading = False
                        break
                try:
                    found = self._run([key for key, _ in batch])
                except BaseException as error:
                    for _, waiting in batch:
                        waiting.set_exception(error)
                else:
                    for key, waiting in batch:
                        waiting.set_result(found.get(key))
        return future.result()


class PostgresStore:
    """Verdict records in one PostgreSQL table; the connection opens at the first call.

    ``url`` is kept as a :class:`Secret`: it may carry a password, and a traceback with locals
    (``pytest -l``) or a repr must not show it. Every error message is redacted of it too.
    ``query_timeout``: seconds each query may take (``_QueryBound``).
    """

    def __init__(
        self,
        url: str,
        *,
        connect_timeout: int = 10,
        query_timeout: float = DEFAULT_QUERY_TIMEOUT,
    ) -> None:
        self.where = describe_store(url)
        self._url = Secret(url, shown=self.where)
        self._password = Secret(_driver_reading(url).get("password", ""))
        self._misread = tuple(Secret(piece) for piece in _misread(url))
        # Whatever shows the store or its errors is redacted of its password, however given.
        # The user name alone is no secret: a URL without a password names only the user.
        credentials = url_credentials(url)
        remember_secrets(
            self._password,
            *(credentials if len(credentials) > 1 else ()),
            os.environ.get("PGPASSWORD"),
        )
        self._connect_timeout = connect_timeout
        self._query_timeout = query_timeout
        self._conn: Any = None
        self._lock = threading.RLock()
        self.round_trips = 0
        self.schema_version: int | None = None
        self._get = _Coalescer(self._lookup_batch)
        self._insert = _Coalescer(self._insert_batch)

    def __repr__(self) -> str:
        return f"PostgresStore({self.where!r})"

    # -- the judge's traffic --

    def get(self, key: str) -> str | None:
        """The stored record's JSON text for ``key``, or None; concurrent calls share a query."""
        return self._get(key)

    def get_many(self, keys: Sequence[str]) -> dict[str, str]:
        """The stored records of ``keys`` that exist, in one round trip per ``BATCH`` keys."""
        return self._lookup_batch(list(keys))

    def insert(self, key: str, text: str) -> str:
        """Store ``text`` under ``key`` unless a record is there; the record that stands."""
        found = self._insert((key, text))
        assert found is not None
        return found

    def upsert(self, key: str, text: str) -> str:
        """Store ``text`` under ``key``, replacing a record there (``--prop-cache=refresh``)."""
        self._write({key: text}, _REPLACE)
        return text

    def insert_many(self, items: Mapping[str, str]) -> tuple[int, dict[str, str]]:
        """Insert-if-absent, then read back whatever stood already: the first writer wins.
        (How many were new, the record standing per key.)"""
        inserted = self._write(items, "DO NOTHING")
        standing = {key: items[key] for key in inserted}
        others = sorted(set(items) - inserted)
        if others:
            # A separate statement: it sees rows that concurrent writers committed meanwhile.
            standing.update(self._lookup_batch(others))
            missing = [key for key in others if key not in standing]
            if missing:
                raise StoreError(
                    f"the verdict store {self.where} neither took nor holds the verdict "
                    f"{missing[0][:16]} (was it deleted meanwhile?)"
                )
        return len(inserted), standing

    # -- maintenance (the CLI) --

    def replace_many(self, items: Mapping[str, str]) -> int:
        """Store each pair, replacing what the store holds (the owner's ``cache push
        --replace``; the role needs UPDATE); how many rows were added or changed."""
        return len(
            self._write(items, f"{_REPLACE} WHERE t.record IS DISTINCT FROM EXCLUDED.record")
        )

    def delete_records(self, rows: Mapping[str, str]) -> int:
        """Remove each row whose record is still the text given (a row replaced meanwhile
        stays); how many were removed."""
        removed = 0
        for chunk in _chunks(rows):
            removed += len(
                self._rows(
                    f"DELETE FROM {VERDICT_TABLE} t USING unnest(%s::text[], %s::text[]) "
                    "AS d(key, record) WHERE t.key = d.key AND t.record = d.record "
                    "RETURNING t.key",
                    (chunk, [rows[key] for key in chunk]),
                )
            )
        return removed

    def keys(self) -> list[str]:
        return [row[0] for row in self._rows(f"SELECT key FROM {VERDICT_TABLE} ORDER BY key")]

    def records(self) -> Iterator[tuple[str, str]]:
        """Every (key, record text), sorted by key, fetched ``BATCH`` at a time."""
        after = ""
        while True:
            rows = self._rows(
                f"SELECT key, record FROM {VERDICT_TABLE} WHERE key > %s ORDER BY key LIMIT %s",
                (after, BATCH),
            )
            if not rows:
                return
            yield from ((str(key), str(text)) for key, text in rows)
            after = rows[-1][0]

    def stats(self) -> StoreStats:
        [(entries, size, oldest, newest)] = self._rows(
            f"SELECT count(*), COALESCE(sum(pg_column_size(t.*)), 0), min(recorded_at), "
            f"max(recorded_at) FROM {VERDICT_TABLE} t"
        )
        models = dict(
            (str(model), int(count))
            for model, count in self._rows(
                f"SELECT model, count(*) FROM {VERDICT_TABLE} GROUP BY model "
                "ORDER BY count(*) DESC, model"
            )
        )
        return StoreStats(
            where=self.where,
            schema_version=self.schema_version or SCHEMA_VERSION,
            entries=int(entries),
            size_bytes=int(size),
            models=models,
            oldest=oldest,
            newest=newest,
        )

    def delete_unused(self, used: Iterable[str], stored_before: datetime) -> int:
        """Remove verdicts not in ``used`` stored before ``stored_before``; how many."""
        keys = sorted(set(used))
        rows = self._rows(
            f"DELETE FROM {VERDICT_TABLE} WHERE stored_at < %s AND NOT (key = ANY(%s)) "
            "RETURNING key",
            (stored_before, keys),
        )
        return len(rows)

    def close(self) -> None:
        with self._lock:
            conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):  # a dropped connection may fail to close
                conn.close()

    # -- connection and schema --

    def connect(self) -> None:
        """Reach the store now (and create or migrate its schema); StoreUnavailable if not."""
        self._connection()

    def _connection(self) -> Any:
        with self._lock:
            if self._conn is not None and not self._conn.closed:
                return self._conn
            psycopg = _load_psycopg(self.where)
            try:
                # No server-side prepared statements: a pooler (PgBouncer in transaction mode)
                # in front of the store would hand them to another session.
                conn = psycopg.connect(
                    self._url.reveal(),
                    autocommit=True,
                    prepare_threshold=None,
                    **self._defaults(psycopg),
                )
            except psycopg.Error as error:
                hint = (
                    " (a password in the URL holding /, ?, # or @ must have them percent-"
                    "encoded: %2F, %3F, %23, %40)"
                    if self._misread
                    else ""
                )
                raise StoreUnavailable(
                    f"cannot reach the verdict store {self.where}: {self._shown(error)}. Nothing "
                    "was judged. Check the server, the user and the password (from the URL, "
                    f"PGPASSWORD or ~/.pgpass){hint}, or run without --prop-store"
                ) from None
            # The password libpq used, from the URL, PGPASSWORD or the .pgpass line it matched.
            remember_secrets(getattr(conn.info, "password", None))
            bound = _QueryBound(conn, self._query_timeout)
            try:
                with bound:
                    self.schema_version = self._ensure_schema(conn)
            except BaseException as error:
                conn.close()
                if bound.fired or isinstance(error, psycopg.OperationalError):
                    why = (
                        self._timed_out()
                        if bound.fired
                        else f"cannot reach the verdict store {self.where}: {self._shown(error)}"
                    )
                    raise StoreUnavailable(why + NOTHING_JUDGED) from None
                raise
            self._conn = conn
            return conn

    def _defaults(self, psycopg: Any) -> dict[str, Any]:
        """Connection settings the URL and the ``PG*`` variables leave open: a bounded wait to
        connect, and a dead peer noticed (a lost store must not hang the run)."""
        given = psycopg.conninfo.conninfo_to_dict(self._url.reveal())
        defaults: dict[str, Any] = {}
        for name, env, value in (
            ("connect_timeout", "PGCONNECT_TIMEOUT", self._connect_timeout),
            ("application_name", "PGAPPNAME", "pytest-propositions"),
            ("tcp_user_timeout", None, 60_000),
            ("keepalives_idle", None, 30),
        ):
            if name not in given and (env is None or env not in os.environ):
                defaults[name] = value
        return defaults

    def _ensure_schema(self, conn: Any) -> int:
        """The store's schema version, after creating or migrating it to SCHEMA_VERSION.

        A role that may only read and insert verdicts never needs more than two SELECTs here.
        """
        import psycopg

        version = self._schema_version(conn)
        if version == SCHEMA_VERSION:
            return version
        if version is not None and version > SCHEMA_VERSION:
            raise StoreError(
                f"the verdict store {self.where} has schema version {version}, written by a "
                f"newer pytest-propositions; this one reads version {SCHEMA_VERSION}: upgrade "
                "the plugin"
            )
        try:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK_ID,))
                self.round_trips += 1
                version = self._schema_version(conn) or 0
                for step in range(version + 1, SCHEMA_VERSION + 1):
                    for statement in MIGRATIONS[step]:
                        conn.execute(statement)
                    conn.execute(f"DELETE FROM {SCHEMA_TABLE}")
                    conn.execute(f"INSERT INTO {SCHEMA_TABLE} (version) VALUES (%s)", (step,))
                    self.round_trips += len(MIGRATIONS[step]) + 2
        except psycopg.errors.InsufficientPrivilege as error:
            raise StoreError(
                f"the verdict store {self.where} needs its schema "
                f"{'created' if not version else f'migrated from version {version}'} "
                f"(version {SCHEMA_VERSION}), and this role may not do it "
                f"({self._shown(error)}): run the plugin once as the tables' owner, or create "
                "them as the README shows"
            ) from None
        except psycopg.Error as error:
            raise StoreError(
                f"cannot prepare the verdict store {self.where}: {self._shown(error)}"
            ) from None
        return SCHEMA_VERSION

    def _schema_version(self, conn: Any) -> int | None:
        """None when there is no schema yet; else the version the store records."""
        import psycopg

        self.round_trips += 1
        row = conn.execute(
            "SELECT to_regclass(%s) IS NOT NULL, to_regclass(%s) IS NOT NULL",
            (SCHEMA_TABLE, VERDICT_TABLE),
        ).fetchone()
        if not row[0]:
            return None
        try:
            self.round_trips += 1
            found = conn.execute(f"SELECT max(version) FROM {SCHEMA_TABLE}").fetchone()
        except psycopg.errors.InsufficientPrivilege as error:
            raise StoreError(
                f"the verdict store {self.where}: this role cannot read the schema version "
                f"({self._shown(error)}); grant it SELECT on {SCHEMA_TABLE}"
            ) from None
        return int(found[0]) if found and found[0] is not None else None

    # -- queries --

    def _timed_out(self) -> str:
        return (
            f"the verdict store {self.where} did not answer within {self._query_timeout:g} s "
            "(another session may hold a lock on its table, or the server or a proxy before it "
            "stopped answering); --prop-store-timeout (PROP_STORE_TIMEOUT) sets how long a "
            "query may take"
        )

    def _shown(self, error: BaseException) -> str:
        """A driver error as it may be shown: one line, no password, no URL credentials."""
        text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        return redact(text, (self._password, self._url, *self._misread))

    def _rows(self, sql: str, params: Sequence[Any] = (), *, fetch: bool = True) -> list[Any]:
        import psycopg

        conn = self._connection()
        with self._lock:
            bound = _QueryBound(conn, self._query_timeout)
            try:
                self.round_trips += 1
                with bound:
                    cursor = conn.execute(sql, params)
                    return list(cursor.fetchall()) if fetch and cursor.description else []
            except psycopg.Error as error:
                if bound.fired or isinstance(error, psycopg.OperationalError):
                    self.close()
                    raise StoreLost(
                        self._timed_out()
                        if bound.fired
                        else f"lost the verdict store {self.where}: {self._shown(error)}"
                    ) from None
                if isinstance(error, psycopg.errors.InsufficientPrivilege):
                    raise StoreError(
                        f"the verdict store {self.where} refused: {self._shown(error)}"
                    ) from None
                raise StoreError(
                    f"the verdict store {self.where} failed: {self._shown(error)}"
                ) from None

    def _lookup_batch(self, keys: list[str]) -> dict[str, str]:
        found: dict[str, str] = {}
        for chunk in _chunks(keys):
            rows = self._rows(
                f"SELECT key, record FROM {VERDICT_TABLE} WHERE key = ANY(%s)", (chunk,)
            )
            found.update((str(key), str(text)) for key, text in rows)
        return found

    def _insert_batch(self, items: list[tuple[str, str]]) -> dict[tuple[str, str], str]:
        # One record per key; the same key twice in a batch: the last one.
        _, standing = self.insert_many(dict(items))
        return {(key, text): standing[key] for key, text in items}

    def _write(self, items: Mapping[str, str], on_conflict: str) -> set[str]:
        """Insert each pair, ``on_conflict`` deciding what a key already there does, ``BATCH``
        keys a statement in key order; the keys written."""
        written: set[str] = set()
        for chunk in _chunks(items):
            texts = [items[key] for key in chunk]
            columns = [_columns(text) for text in texts]
            rows = self._rows(
                f"INSERT INTO {VERDICT_TABLE} AS t (key, record, model, recorded_at) "
                "SELECT * FROM unnest(%s::text[], %s::text[], %s::text[], %s::timestamptz[]) "
                f"ON CONFLICT (key) {on_conflict} RETURNING t.key",
                (chunk, texts, [model for model, _ in columns], [at for _, at in columns]),
            )
            written.update(str(row[0]) for row in rows)
        return written


# Replacing a stored record: its row's columns follow, and it counts as stored now (for prune).
_REPLACE = (
    "DO UPDATE SET record = EXCLUDED.record, model = EXCLUDED.model, "
    "recorded_at = EXCLUDED.recorded_at, stored_at = now()"
)


def _chunks(keys: Iterable[str]) -> Iterator[list[str]]:
    """The keys, sorted and unique, ``BATCH`` at a time (one round trip each)."""
    unique = sorted(set(keys))
    for start in range(0, len(unique), BATCH):
        yield unique[start : start + BATCH]


def _columns(text: str) -> tuple[str, str]:
    """The model and recorded time a record's row carries beside its text (for stats, prune)."""
    record = json.loads(text)
    return str(record["model"]), str(record["recorded_at"])
