"""The shared verdict store, against a real PostgreSQL server this session starts on loopback.

Inner runs are real pytest processes ("machines"), each with its own disk cache, judged by the
scripted judge over loopback HTTP, all pointed at one store (--prop-store).
"""

from __future__ import annotations

import itertools
import json
import os
import random
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pytest_propositions.local.ports import free_loopback_port
from pytest_propositions.settings import OPTIONS_BY_NAME
from pytest_propositions.store.cache import VerdictCache
from pytest_propositions.store.postgres import (
    SCHEMA_VERSION,
    PostgresStore,
    StoreError,
    StoreUnavailable,
    describe_store,
)
from tests.conftest import INNER_WORLD
from tests.support.judge_server import RecordedRequest, Reply, ScriptedJudge, echo_fn, verdict
from tests.support.postgres import PostgresServer, StallingProxy, find_bindir

MODEL = "openai/judge-model"
PASSWORD = "pw-Zq81-never-shown"
_names = itertools.count()


def claims_file(count: int) -> str:
    return (
        "import pytest\n\n"
        f"CLAIMS = [f'Oscar talks about subject number {{i}}.' for i in range({count})]\n\n"
        f"@pytest.mark.parametrize('i', range({count}))\n"
        "def test_claim(world, assert_proposition, i):\n"
        "    assert_proposition(world, CLAIMS[i])\n"
    )


@dataclass
class Fleet:
    """One store, one project, and as many machines (disk caches) as a test wants."""

    server: PostgresServer
    judge: ScriptedJudge
    project: Path
    role: str
    database: str
    root: Path
    runs: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return self.server.url(self.role, PASSWORD, self.database)

    def machine(self, name: str) -> Path:
        return self.root / f"machine-{name}"

    def args(self, machine: str, *extra: str, store: str | None = None) -> list[str]:
        return [
            sys.executable,
            "-m",
            "pytest",
            f"--prop-model={MODEL}",
            f"--prop-api-base={self.judge.base_url}",
            "--prop-retries=0",
            f"--prop-cache-dir={self.machine(machine)}",
            f"--prop-store={store or self.url}",
            "-p",
            "no:cacheprovider",
            *extra,
        ]

    def env(self) -> dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("PROP_", "PYTEST_", "PG")) and k != "COV_CORE_SOURCE"
        }
        env.update(PROP_API_KEY="test-key-not-real", LITELLM_LOCAL_MODEL_COST_MAP="True")
        return env

    def start(
        self,
        machine: str,
        *extra: str,
        store: str | None = None,
        env: dict[str, str] | None = None,
    ) -> subprocess.Popen[str]:
        return subprocess.Popen(
            self.args(machine, *extra, store=store),
            cwd=self.project,
            env=env or self.env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )

    def run(
        self,
        machine: str,
        *extra: str,
        store: str | None = None,
        env: dict[str, str] | None = None,
    ) -> tuple[int, str]:
        process = self.start(machine, *extra, store=store, env=env)
        out, _ = process.communicate()
        self.runs.append(out)
        return process.returncode, out

    def rows(self) -> dict[str, dict[str, Any]]:
        found = self.server.sql("SELECT key, record FROM prop_verdicts", self.database)
        return {str(key): json.loads(str(text)) for key, text in found}

    def cli(
        self, *args: str, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "pytest_propositions", *args],
            cwd=self.project,
            env=env or self.env(),
            capture_output=True,
            text=True,
            check=False,
        )


def make_store(server: PostgresServer) -> tuple[str, str]:
    """A role with a password and a database it owns: a fresh, empty store."""
    number = next(_names)
    role, database = f"ci_{os.getpid()}_{number}", f"verdicts_{os.getpid()}_{number}"
    server.create_role(role, PASSWORD)
    server.create_database(database, owner=role)
    return role, database


@pytest.fixture
def fleet(postgres_server: PostgresServer, judge_server: ScriptedJudge, tmp_path: Path) -> Fleet:
    project = tmp_path / "project"
    project.mkdir()
    (project / "conftest.py").write_text(INNER_WORLD)
    (project / "pytest.ini").write_text("[pytest]\n")
    role, database = make_store(postgres_server)
    return Fleet(postgres_server, judge_server, project, role, database, tmp_path)


def summary_counts(output: str) -> tuple[int, int, int]:
    """(claims, from cache, judge calls) from the run's summary line."""
    found = re.search(
        r"propositions: (\d+) claims?, .*?(\d+) from cache, .*?(\d+) judge calls?", output
    )
    assert found is not None, output[-3000:]
    return int(found[1]), int(found[2]), int(found[3])


def store_counts(output: str) -> tuple[int, int, int]:
    """(read from the store, stored in it, judged elsewhere first) from the store's line."""
    found = re.search(
        r"verdict store \S+: (\d+) read from it, (\d+) stored in it, (\d+) judged elsewhere",
        output,
    )
    assert found is not None, output[-3000:]
    return int(found[1]), int(found[2]), int(found[3])


def report_values(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text())
    return {record["test_id"]: record["verdict"]["value"] for record in data["verdicts"]}


# -- the fleet agrees ---------------------------------------------------------------------------


def random_judge_meeting_twice(judge: ScriptedJudge, seed: int) -> dict[str, list[bool]]:
    """A judge answering each request at random, holding a request until a second copy of it
    arrives (or a few seconds pass): two machines then judge the same request at once."""
    rng = random.Random(seed)
    answers: dict[str, list[bool]] = {}
    waiting: dict[str, threading.Event] = {}
    lock = threading.Lock()

    def answer(request: RecordedRequest) -> Reply:
        text = request.text
        with lock:
            event = waiting.setdefault(text, threading.Event())
            first = not event.is_set() and text not in answers
            if not first:
                event.set()
            value = rng.random() < 0.5
            answers.setdefault(text, []).append(value)
        if first:
            event.wait(10)
        return verdict(value, justification=f"coin said {value}")

    judge.default = echo_fn(answer)
    return answers


def test_two_machines_with_two_workers_each_agree_on_every_verdict(fleet: Fleet) -> None:
    """Two pytest processes, each -n 2, judge the same 12 requests at once with a judge that
    answers at random: both report the store's verdict for every test, and it is the only one."""
    count = 12
    (fleet.project / "test_claims.py").write_text(claims_file(count))
    answers = random_judge_meeting_twice(fleet.judge, seed=24)
    reports = [fleet.root / "a.json", fleet.root / "b.json"]
    processes = [
        fleet.start(name, "-n", "2", f"--prop-report={report}", "--prop-outcome=report")
        for name, report in zip("ab", reports, strict=True)
    ]
    outputs = [process.communicate()[0] for process in processes]
    for process, out in zip(processes, outputs, strict=True):
        assert process.returncode == 0, out[-3000:]
    first, second = (report_values(report) for report in reports)
    assert len(first) == count and first == second
    rows = fleet.rows()
    assert len(rows) == count
    stored = {row["claim"]: row["verdict"]["value"] for row in rows.values()}
    assert sorted(stored.values()) == sorted(first.values())
    # The judge was asked twice for requests and answered differently at least once: without
    # the store the two machines would have disagreed.
    assert any(len(set(values)) > 1 for values in answers.values()), answers
    # Every answer was offered to the store; a second one for a request was turned away unless
    # it was byte-identical to the first (same value, same second).
    offered = sum(len(values) for values in answers.values())
    shared = sum(store_counts(out)[1] for out in outputs)
    races = sum(store_counts(out)[2] for out in outputs)
    assert shared + races == offered and shared >= count
    assert races >= sum(1 for values in answers.values() if len(set(values)) > 1) > 0
    # Each machine's disk cache holds the fleet's verdict.
    for machine in "ab":
        with VerdictCache(fleet.machine(machine)) as cache:
            local = {
                json.loads(line)["key"]: json.loads(line)["record"] for line in cache.export_lines()
            }
        assert {key: record["verdict"]["value"] for key, record in local.items()} == {
            key: row["verdict"]["value"] for key, row in rows.items()
        }


# -- served by the store -----------------------------------------------------------------------


def test_a_fresh_machine_is_served_by_the_store_without_a_judge_call(fleet: Fleet) -> None:
    (fleet.project / "test_claims.py").write_text(claims_file(5))
    code, out = fleet.run("a")
    assert code == 0, out[-3000:]
    assert summary_counts(out) == (5, 0, 5)
    assert store_counts(out) == (0, 5, 0)
    fleet.judge.clear_requests()
    code, out = fleet.run("b")
    assert code == 0, out[-3000:]
    assert summary_counts(out) == (5, 5, 0)
    assert store_counts(out) == (5, 0, 0)
    assert fleet.judge.requests == []
    # The store's verdicts were copied to b's disk: its next run needs no store at all.
    with VerdictCache(fleet.machine("b")) as cache:
        assert len(cache) == 5
    dead = fleet.server.url(fleet.role, PASSWORD, fleet.database).replace(
        f":{fleet.server.port}/", f":{free_loopback_port()}/"
    )
    code, out = fleet.run("b", store=dead)
    assert code == 0, out[-3000:]
    assert summary_counts(out) == (5, 5, 0)


def test_a_run_that_judges_nothing_never_connects(fleet: Fleet) -> None:
    (fleet.project / "test_plain.py").write_text("def test_plain():\n    assert True\n")
    dead = f"postgresql://nobody:{PASSWORD}@127.0.0.1:{free_loopback_port()}/nothing"
    code, out = fleet.run("a", store=dead)
    assert code == 0, out[-3000:]
    assert "1 passed" in out and "cannot reach" not in out
    assert not fleet.machine("a").exists()


def test_replay_on_a_fresh_machine_is_served_by_the_store_alone(fleet: Fleet) -> None:
    (fleet.project / "test_claims.py").write_text(claims_file(4))
    code, out = fleet.run("a")
    assert code == 0, out[-3000:]
    fleet.judge.clear_requests()
    code, out = fleet.run("ci", "--prop-cache=replay")
    assert code == 0, out[-3000:]
    assert summary_counts(out) == (4, 4, 0)
    assert store_counts(out) == (4, 0, 0) and fleet.judge.requests == []
    # replay reads only: nothing is written to the fresh machine's disk.
    assert (
        not (fleet.machine("ci") / "cache.db").exists()
        or len(VerdictCache(fleet.machine("ci"))) == 0
    )
    # A claim the fleet never judged is a replay miss, explained as without a store.
    (fleet.project / "test_new.py").write_text(
        "def test_new(world, assert_proposition):\n"
        "    assert_proposition(world, 'Oscar never mentions anything new.')\n"
    )
    code, out = fleet.run("ci", "--prop-cache=replay", "test_new.py")
    assert code == 1
    assert "VerdictMissing" in out and "never calls the judge" in out
    assert fleet.judge.requests == []


# -- faults --------------------------------------------------------------------------------------


def test_a_store_down_at_start_stops_the_run_before_any_judge_call(fleet: Fleet) -> None:
    (fleet.project / "test_claims.py").write_text(claims_file(4))
    port = free_loopback_port()
    dead = f"postgresql://{fleet.role}:{PASSWORD}@127.0.0.1:{port}/{fleet.database}"
    code, out = fleet.run("a", "-n", "2", store=dead)
    assert code != 0
    where = f"postgresql://{fleet.role}@127.0.0.1:{port}/{fleet.database}"
    assert f"cannot reach the verdict store {where}" in out
    assert fleet.judge.requests == []
    # Each of the two workers stops at its first claim: the other claims are never tried.
    errors = re.search(r"propositions: \d+ claims?, 0 passed, 0 failed, (\d+) judge errors?", out)
    assert errors is not None and 1 <= int(errors[1]) <= 2, out[-3000:]
    assert "Interrupted: pytest-propositions: cannot reach the verdict store" in out
    assert PASSWORD not in out


def test_a_wrong_password_is_refused_before_any_judge_call(fleet: Fleet) -> None:
    (fleet.project / "test_claims.py").write_text(claims_file(3))
    wrong = "wrong-Pw-4471-never-shown"
    url = fleet.server.url(fleet.role, wrong, fleet.database)
    junit, report = fleet.root / "junit.xml", fleet.root / "report.json"
    code, out = fleet.run(
        "a", "-l", "-vv", f"--junitxml={junit}", f"--prop-report={report}", store=url
    )
    assert code != 0
    where = f"postgresql://{fleet.role}@127.0.0.1:{fleet.server.port}/{fleet.database}"
    assert f"cannot reach the verdict store {where}" in out
    assert "password authentication failed" in out
    assert fleet.judge.requests == []
    for text in (out, junit.read_text(), report.read_text() if report.exists() else ""):
        assert wrong not in text and PASSWORD not in text


def test_a_store_lost_mid_run_keeps_verdicts_locally_and_push_sends_them(
    postgres_server: PostgresServer, judge_server: ScriptedJudge, tmp_path: Path
) -> None:
    """A server of its own (it is stopped mid-run); the session's fixture skips without one."""
    bindir = find_bindir()
    assert bindir is not None
    server = PostgresServer(bindir)
    try:
        server.start()
        role, database = make_store(server)
        fleet = Fleet(server, judge_server, tmp_path / "project", role, database, tmp_path)
        fleet.project.mkdir()
        (fleet.project / "conftest.py").write_text(INNER_WORLD)
        (fleet.project / "test_claims.py").write_text(claims_file(4))

        def answer(request: RecordedRequest) -> Reply:
            if "subject number 1." in request.text:
                server.stop("immediate")  # the store goes away while claim 1 is being judged
            return verdict(True, justification="He does.")

        judge_server.default = echo_fn(answer)
        code, out = fleet.run("a", "-p", "no:randomly")
        assert code == 0, out[-3000:]  # every claim was judged, and holds
        assert summary_counts(out) == (4, 0, 4)
        assert store_counts(out) == (0, 1, 0)
        assert "3 verdicts NOT shared" in out
        assert "lost the verdict store" in out
        assert f"cache push --store postgresql://{role}@127.0.0.1:{server.port}/{database}" in out
        with VerdictCache(fleet.machine("a")) as cache:
            assert len(cache) == 4  # nothing lost
        server.start()
        env = {**fleet.env(), "PGPASSWORD": PASSWORD}
        done = fleet.cli(
            "cache",
            "push",
            "--cache-dir",
            str(fleet.machine("a")),
            "--store",
            server.url(role, None, database),
            env=env,
        )
        assert done.returncode == 0, done.stderr
        assert "4 verdicts" in done.stdout and "3 new, 1 already there" in done.stdout
        assert len(fleet.rows()) == 4
        # A fresh machine now gets all four from the store.
        judge_server.clear_requests()
        code, out = fleet.run("b")
        assert code == 0 and summary_counts(out) == (4, 4, 0), out[-3000:]
    finally:
        server.destroy()


# The query bound the stalled-store tests set: long enough that a healthy query on a loaded
# machine stays within it (an outcome must not depend on load), short enough to wait out.
BOUND = 3


def hold_lock(fleet: Fleet) -> Any:
    """Another session's transaction holding the verdict table locked until it is closed."""
    import psycopg

    locker = psycopg.connect(fleet.server.admin_url(fleet.database))
    locker.execute("LOCK TABLE prop_verdicts IN ACCESS EXCLUSIVE MODE")
    return locker


def test_a_store_locked_at_the_first_claim_stops_the_run_before_any_judge_call(
    fleet: Fleet,
) -> None:
    """Another session holds the verdict table locked: the first lookup waits past its bound,
    and the run stops there as for an unreachable store, naming it."""
    PostgresStore(fleet.url).connect()  # the tables exist, to be locked
    (fleet.project / "test_claims.py").write_text(claims_file(3))
    locker = hold_lock(fleet)
    try:
        code, out = fleet.run("a", f"--prop-store-timeout={BOUND}")
    finally:
        locker.close()
    assert code != 0, out[-3000:]
    where = f"postgresql://{fleet.role}@127.0.0.1:{fleet.server.port}/{fleet.database}"
    assert (
        f"Interrupted: pytest-propositions: the verdict store {where} did not answer within {BOUND} s"
        in out
    )
    assert "--prop-store-timeout" in out and "Nothing was judged" in out
    assert fleet.judge.requests == []
    assert PASSWORD not in out


def test_a_store_locked_mid_run_keeps_verdicts_locally(fleet: Fleet) -> None:
    """The table is locked while claim 1 is judged: its insert waits past the bound, and the
    store counts as lost (kept locally, counted, named for push), as when it goes away."""
    (fleet.project / "test_claims.py").write_text(claims_file(4))
    lockers: list[Any] = []

    def answer(request: RecordedRequest) -> Reply:
        if "subject number 1." in request.text and not lockers:
            lockers.append(hold_lock(fleet))
        return verdict(True, justification="He does.")

    fleet.judge.default = echo_fn(answer)
    try:
        code, out = fleet.run("a", "-p", "no:randomly", f"--prop-store-timeout={BOUND}")
    finally:
        for locker in lockers:
            locker.close()
    assert code == 0, out[-3000:]
    assert summary_counts(out) == (4, 0, 4)
    assert store_counts(out) == (0, 1, 0)
    assert "3 verdicts NOT shared" in out
    where = f"postgresql://{fleet.role}@127.0.0.1:{fleet.server.port}/{fleet.database}"
    assert f"the verdict store {where} did not answer within {BOUND} s" in out
    assert f"cache push --store {where}" in out
    with VerdictCache(fleet.machine("a")) as cache:
        assert len(cache) == 4
    assert len(fleet.rows()) == 1


@pytest.mark.parametrize("hold", [b"", b"INSERT INTO prop_verdicts"])
def test_a_store_that_stops_answering_after_login_ends_the_run(fleet: Fleet, hold: bytes) -> None:
    """A proxy passes the login through, then holds a query (the first one, or the first
    insert): no timeout of the server's can fire, and the client's bound ends the wait. At the
    first claim, the run stops naming the store; mid-run, the verdicts are kept locally."""
    PostgresStore(fleet.url).connect()
    (fleet.project / "test_claims.py").write_text(claims_file(3))
    with StallingProxy(fleet.server.port, hold=hold) as proxy:
        url = fleet.url.replace(f":{fleet.server.port}/", f":{proxy.port}/")
        code, out = fleet.run("a", "-p", "no:randomly", f"--prop-store-timeout={BOUND}", store=url)
        assert proxy.held.is_set()
    where = f"postgresql://{fleet.role}@127.0.0.1:{proxy.port}/{fleet.database}"
    assert f"the verdict store {where} did not answer within {BOUND} s" in out
    assert PASSWORD not in out
    if hold:
        assert code == 0, out[-3000:]
        assert summary_counts(out) == (3, 0, 3)
        assert "3 verdicts NOT shared" in out
    else:
        assert code != 0, out[-3000:]
        assert "Interrupted: pytest-propositions: the verdict store" in out
        assert fleet.judge.requests == []


@pytest.mark.parametrize("password_in_url", [True, False])
def test_the_store_user_name_is_no_secret(fleet: Fleet, password_in_url: bool) -> None:
    """A long user name (8 characters or more, as long secrets are) in a target, a claim and
    the judge's reply reaches the judge, the store and the reports as written; only the
    password is kept out of them."""
    user = f"verdicts_ci_{os.getpid()}_{next(_names)}"
    fleet.server.create_role(user, PASSWORD)
    database = fleet.server.create_database(f"{user}_db", owner=user)
    url = fleet.server.url(user, PASSWORD if password_in_url else None, database)
    env = {**fleet.env(), **({} if password_in_url else {"PGPASSWORD": PASSWORD})}
    target, claim = f"Oscar writes to {user} every day.", f"Oscar writes to {user}."
    (fleet.project / "test_user.py").write_text(
        f"def test_user(assert_proposition):\n    assert_proposition({target!r}, {claim!r})\n"
    )
    justification = f"He writes to {user} daily."
    fleet.judge.default = verdict(True, justification=justification)
    report = fleet.root / "report.json"
    code, out = fleet.run("a", "-rA", f"--prop-report={report}", store=url, env=env)
    assert code == 0, out[-3000:]
    [request] = fleet.judge.requests
    assert target in request.text and claim in request.text
    assert claim in report.read_text() and justification in report.read_text()
    [row] = fleet.server.sql("SELECT record FROM prop_verdicts", database)
    assert json.loads(str(row[0]))["verdict"]["justification"] == justification
    assert f"propositions: shared verdict store postgresql://{user}@127.0.0.1:" in out
    for text in (out, report.read_text(), str(row[0])):
        assert PASSWORD not in text and "[redacted]" not in text


def test_the_password_never_shows(fleet: Fleet) -> None:
    """In the URL, with -l, -vv, DEBUG logs to a file, JUnit, JSON and HTML reports, a failing
    claim and a judge error: the password is nowhere."""
    (fleet.project / "test_claims.py").write_text(
        claims_file(2) + "\ndef test_fails(world, assert_proposition):\n"
        "    assert_proposition(world, 'Oscar hates cities.')\n"
    )
    fleet.judge.on("hates cities", verdict(False, justification="He likes them."))
    files = {
        "junit": fleet.root / "junit.xml",
        "json": fleet.root / "report.json",
        "html": fleet.root / "report.html",
        "log": fleet.root / "debug.log",
    }
    code, out = fleet.run(
        "a",
        "-l",
        "-vv",
        "-rA",
        f"--junitxml={files['junit']}",
        f"--prop-report={files['json']}",
        f"--prop-html={files['html']}",
        f"--log-file={files['log']}",
        "--log-file-level=DEBUG",
        "--log-level=DEBUG",
    )
    assert code == 1, out[-3000:]
    assert "Oscar hates cities" in out
    assert PASSWORD not in out
    for name, path in files.items():
        assert path.exists(), name
        assert PASSWORD not in path.read_text(errors="replace"), name
    for key, row in fleet.rows().items():
        assert PASSWORD not in json.dumps(row) and fleet.role not in json.dumps(row), key
    with VerdictCache(fleet.machine("a")) as cache:
        assert all(PASSWORD not in line for line in cache.export_lines())


# A base64 password: its "/" ends a URL's authority, so the driver reads "ci" as the host and
# the rest as a port and a database; "@" and "#" misread the same way.
ODD_PASSWORD = "Zm9vQmFy/YmF6cXV4=-h31"


def _pieces(password: str) -> list[str]:
    return [password, *(piece for piece in re.split("[/?#@=]", password) if len(piece) >= 4)]


def test_a_password_a_parser_misreads_never_shows(fleet: Fleet) -> None:
    """Unencoded in --prop-store (the driver then reads it as a host, a port and a database), in
    the header, the error, JUnit, the JSON report and cache stats: the password is nowhere, and
    the error says to percent-encode it."""
    fleet.server.sql(f"ALTER ROLE \"{fleet.role}\" PASSWORD '{ODD_PASSWORD}'")
    (fleet.project / "test_claims.py").write_text(claims_file(2))
    url = fleet.server.url(fleet.role, ODD_PASSWORD, fleet.database)
    junit, report = fleet.root / "junit.xml", fleet.root / "report.json"
    code, out = fleet.run(
        "a", "-l", "-vv", f"--junitxml={junit}", f"--prop-report={report}", store=url
    )
    assert code != 0
    where = f"postgresql://[redacted]@127.0.0.1:{fleet.server.port}/{fleet.database}"
    assert f"propositions: shared verdict store {where}" in out
    assert f"cannot reach the verdict store {where}" in out
    assert "percent-encoded" in out
    assert fleet.judge.requests == []
    stats = fleet.cli("cache", "stats", "--store", url)
    assert stats.returncode != 0 and where in stats.stderr
    texts = [out, junit.read_text(), report.read_text() if report.exists() else ""]
    for text in [*texts, stats.stdout + stats.stderr]:
        for piece in _pieces(ODD_PASSWORD):
            assert piece not in text, piece


def test_a_judge_echoing_the_store_password_cannot_store_it(fleet: Fleet) -> None:
    """Percent-encoded, the odd password works; a judge that quotes it (decoded, as a proxy
    might) in a good reply gets it into no store row, local record, export or report."""
    from urllib.parse import quote

    fleet.server.sql(f"ALTER ROLE \"{fleet.role}\" PASSWORD '{ODD_PASSWORD}'")
    (fleet.project / "test_claims.py").write_text(claims_file(2))
    fleet.judge.default = verdict(True, justification=f"The store's password is {ODD_PASSWORD}.")
    url = fleet.server.url(fleet.role, quote(ODD_PASSWORD, safe=""), fleet.database)
    report = fleet.root / "report.json"
    code, out = fleet.run("a", "-rA", f"--prop-report={report}", store=url)
    assert code == 0, out[-3000:]
    assert "The store's password is [redacted]." in report.read_text()
    rows = fleet.rows()
    assert len(rows) == 2
    with VerdictCache(fleet.machine("a")) as cache:
        exported = "".join(cache.export_lines())
    assert "[redacted]" in exported
    for text in (out, report.read_text(), json.dumps(rows), exported):
        assert ODD_PASSWORD not in text


# -- least privilege -------------------------------------------------------------------------------


def test_a_role_with_select_and_insert_only_works(fleet: Fleet) -> None:
    """The owner prepares the schema once; a CI role that may only read and insert verdicts
    (and read the schema version) runs the suite, races included."""
    PostgresStore(fleet.url).connect()  # the owner creates the tables
    runner = f"{fleet.role}_runner"
    fleet.server.create_role(runner, PASSWORD)
    fleet.server.sql(f'GRANT CONNECT ON DATABASE "{fleet.database}" TO "{runner}"')
    grants = (
        f'GRANT SELECT, INSERT ON prop_verdicts TO "{runner}"; '
        f'GRANT SELECT ON prop_schema TO "{runner}"'
    )
    fleet.server.sql(grants, fleet.database)
    url = fleet.server.url(runner, PASSWORD, fleet.database)
    (fleet.project / "test_claims.py").write_text(claims_file(3))
    code, out = fleet.run("a", store=url)
    assert code == 0, out[-3000:]
    assert store_counts(out) == (0, 3, 0)
    # A verdict someone else stored first: this role reads it back after its insert did nothing.
    store = PostgresStore(url)
    [(key, text)] = list(itertools.islice(store.records(), 1))
    assert store.insert(key, text.replace("He", "She")) == text
    with pytest.raises(StoreError, match="permission denied"):
        store.delete_unused([], datetime_now())
    store.close()


def datetime_now() -> Any:
    from datetime import UTC, datetime

    return datetime.now(UTC)


# -- the store object ------------------------------------------------------------------------------


def record_text(claim: str, value: bool = True) -> str:
    from pytest_propositions.store.cache import canonical_json

    return canonical_json(
        {
            "claim": claim,
            "kind": "check",
            "model": MODEL,
            "recorded_at": "2026-01-01T00:00:00+00:00",
            "verdict": {"kind": "check", "claim": claim, "value": value},
        }
    )


@pytest.fixture
def store(postgres_server: PostgresServer) -> Iterator[PostgresStore]:
    role, database = make_store(postgres_server)
    store = PostgresStore(postgres_server.url(role, PASSWORD, database))
    yield store
    store.close()


def test_concurrent_lookups_share_round_trips(store: PostgresStore) -> None:
    """Sixteen threads looking up at once (soft claims on a pool): the first query runs for
    whoever waits; everyone arriving meanwhile shares the next one."""
    keys = [f"{i:064x}" for i in range(16)]
    for key in keys[:8]:
        store.insert(key, record_text(key))
    original = store._lookup_batch
    calls: list[int] = []

    def slow_first(batch: list[str]) -> dict[str, str]:
        calls.append(len(batch))
        if len(calls) == 1:
            time.sleep(0.3)  # everyone else arrives meanwhile
        return original(batch)

    store._get._run = slow_first  # type: ignore[assignment]
    barrier = threading.Barrier(16)
    results: dict[str, str | None] = {}

    def look(key: str) -> None:
        barrier.wait()
        results[key] = store.get(key)

    threads = [threading.Thread(target=look, args=(key,)) for key in keys]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(calls) <= 3 and sum(calls) == 16
    assert {k for k, v in results.items() if v is not None} == set(keys[:8])


def test_first_stored_verdict_wins(store: PostgresStore) -> None:
    key = "a" * 64
    first, second = record_text("x", True), record_text("x", False)
    assert store.insert(key, first) == first
    assert store.insert(key, second) == first
    new, standing = store.insert_many({key: second, "b" * 64: second})
    assert new == 1 and standing == {key: first, "b" * 64: second}


def test_schema_is_versioned_and_migrated(
    store: PostgresStore, postgres_server: PostgresServer
) -> None:
    store.connect()
    assert store.schema_version == SCHEMA_VERSION
    database = store.where.rsplit("/", 1)[1]
    postgres_server.sql("UPDATE prop_schema SET version = 0", database)
    store.close()
    store.connect()  # an older store is brought up to date
    assert postgres_server.sql("SELECT version FROM prop_schema", database) == [(SCHEMA_VERSION,)]
    postgres_server.sql(f"UPDATE prop_schema SET version = {SCHEMA_VERSION + 1}", database)
    store.close()
    with pytest.raises(StoreError, match="newer pytest-propositions"):
        store.connect()


def test_a_missing_driver_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)
    store = PostgresStore(f"postgresql://u:{PASSWORD}@127.0.0.1:1/db")
    with pytest.raises(
        StoreError, match=re.escape('pip install "pytest-propositions[postgres]"')
    ) as info:
        store.connect()
    assert PASSWORD not in str(info.value) and PASSWORD not in repr(store)


def test_errors_and_reprs_never_show_the_password() -> None:
    url = f"postgresql://u:{PASSWORD}@127.0.0.1:{free_loopback_port()}/db?sslmode=disable"
    store = PostgresStore(url, connect_timeout=2)
    with pytest.raises(StoreUnavailable) as info:
        store.connect()
    assert "postgresql://u@127.0.0.1:" in str(info.value)
    for shown in (str(info.value), repr(store), repr(store._url), repr(vars(store))):
        assert PASSWORD not in shown
    assert describe_store("postgresql:///verdicts", {"PGHOST": "db.internal", "PGUSER": "ci"}) == (
        "postgresql://ci@db.internal:5432/verdicts"
    )


def test_a_store_flag_that_is_no_url_is_refused_without_echoing_it(
    pytester: pytest.Pytester,
) -> None:
    result = pytester.runpytest(
        f"--prop-store=host=db password={PASSWORD}", "-p", "no:cacheprovider"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--prop-store*expected a PostgreSQL URL*"])
    assert PASSWORD not in result.stderr.str() + result.stdout.str()


def test_a_store_timeout_that_is_no_positive_number_is_refused(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    """By the plugin at parse time, and by the cache commands (PROP_STORE_TIMEOUT), naming it."""
    result = pytester.runpytest("--prop-store-timeout=0", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--prop-store-timeout*expected a finite positive number*"])
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PROP_", "PG"))}
    store = f"postgresql://ci@127.0.0.1:{free_loopback_port()}/verdicts"
    done = subprocess.run(
        [sys.executable, "-m", "pytest_propositions", "cache", "stats", "--store", store],
        cwd=tmp_path,
        env={**env, "PROP_STORE_TIMEOUT": "soon"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "PROP_STORE_TIMEOUT: expected a positive number, got 'soon'" in done.stderr


LONGEST_WAIT = f"{threading.TIMEOUT_MAX:.0f}"


@pytest.mark.parametrize(
    ("flag", "how"),
    [
        ("--prop-store-timeout", "flag"),
        ("--prop-timeout", "flag"),
        ("PROP_STORE_TIMEOUT", "env"),
        ("prop_timeout", "ini"),
    ],
)
def test_a_wait_beyond_the_platforms_timers_is_refused_at_parse_time_with_the_range(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, flag: str, how: str
) -> None:
    """1e308 s would crash the store's timer thread on every query, leaving the query unbounded:
    every option that is a wait in seconds takes one rule, the platform's timer limit its top."""
    for name in [name for name in os.environ if name.startswith("PROP_")]:
        monkeypatch.delenv(name)
    args = ["-p", "no:cacheprovider"]
    if how == "flag":
        args.append(f"{flag}=1e308")
    elif how == "env":
        monkeypatch.setenv(flag, "1e308")
    else:
        pytester.makeini(f"[pytest]\n{flag} = 1e308\n")
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [f"*{flag}: expected a finite positive number of seconds, at most {LONGEST_WAIT} *"]
    )
    result.stderr.fnmatch_lines(["*the longest wait this platform's timers take), got '1e308'*"])


def test_the_platforms_longest_wait_is_taken_and_one_rule_parses_every_wait(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    pytester.makepyfile("def test_plain():\n    pass\n")
    longest = repr(threading.TIMEOUT_MAX)
    result = pytester.runpytest(
        f"--prop-store-timeout={longest}", f"--prop-timeout={longest}", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=1)
    waits = [OPTIONS_BY_NAME[name].parse for name in ("timeout", "store_timeout")]
    assert waits[0] is waits[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PROP_", "PG"))}
    store = f"postgresql://ci@127.0.0.1:{free_loopback_port()}/verdicts"
    done = subprocess.run(
        [sys.executable, "-m", "pytest_propositions", "cache", "stats", "--store", store],
        cwd=tmp_path,
        env={**env, "PROP_STORE_TIMEOUT": "1e308"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert (
        f"PROP_STORE_TIMEOUT: expected a finite positive number of seconds, at most "
        f"{LONGEST_WAIT}" in done.stderr
    )
    assert "Traceback" not in done.stderr


# -- the cache commands on a store -----------------------------------------------------------------


def test_cache_commands_act_on_the_store(fleet: Fleet) -> None:
    (fleet.project / "test_claims.py").write_text(claims_file(3))
    code, out = fleet.run("a")
    assert code == 0, out[-3000:]
    env = {**fleet.env(), "PROP_STORE": fleet.server.url(fleet.role, None, fleet.database)}
    env["PGPASSWORD"] = PASSWORD
    stats = fleet.cli("cache", "stats", env=env)
    assert stats.returncode == 0, stats.stderr
    assert "entries: 3" in stats.stdout and f"{MODEL}: 3" in stats.stdout
    assert f"schema version: {SCHEMA_VERSION}" in stats.stdout
    # The store exports what the disk cache beside it exports, byte for byte.
    exported = fleet.cli("cache", "export", env=env)
    local = fleet.cli("cache", "export", "--cache-dir", str(fleet.machine("a")))
    assert exported.returncode == 0 and exported.stdout == local.stdout and exported.stdout
    # import: into another, empty store; the first verdict stored stays.
    role, database = make_store(fleet.server)
    other = {**env, "PROP_STORE": fleet.server.url(role, None, database)}
    export_file = fleet.root / "verdicts.jsonl"
    export_file.write_text(exported.stdout)
    done = fleet.cli("cache", "import", str(export_file), env=other)
    assert done.returncode == 0 and "imported 3 verdicts" in done.stdout, done.stderr
    done = fleet.cli("cache", "import", str(export_file), env=other)
    assert "imported 0 verdicts" in done.stdout
    bad = fleet.root / "bad.jsonl"
    bad.write_text(exported.stdout + "{not json\n")
    done = fleet.cli("cache", "import", str(bad), env=other)
    assert done.returncode == 1 and "bad.jsonl:4" in done.stderr
    # prune: what the last complete run (of machine a) did not use goes.
    fleet.server.sql(
        "INSERT INTO prop_verdicts (key, record, model, recorded_at, stored_at) "
        "SELECT repeat('f', 64), record, model, recorded_at, now() - interval '1 day' "
        "FROM prop_verdicts LIMIT 1",
        fleet.database,
    )
    done = fleet.cli("cache", "prune", "--cache-dir", str(fleet.machine("a")), env=env)
    assert done.returncode == 0 and "pruned 1 verdicts" in done.stdout, done.stderr
    assert len(fleet.rows()) == 3
    done = fleet.cli("cache", "clear", env=env)
    assert done.returncode == 2 and "does not act on a shared store" in done.stderr
    for result in (stats, exported, done):
        assert PASSWORD not in result.stdout + result.stderr


def test_pg_variables_and_pgpass_reach_libpq(
    postgres_server: PostgresServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bare URL: host, port, user and database from PG* variables, the password from a
    .pgpass file; the store is named from them, and reached."""
    role, database = make_store(postgres_server)
    passfile = tmp_path / "pgpass"
    passfile.write_text(f"127.0.0.1:{postgres_server.port}:{database}:{role}:{PASSWORD}\n")
    passfile.chmod(0o600)
    for name, value in (
        ("PGHOST", "127.0.0.1"),
        ("PGPORT", str(postgres_server.port)),
        ("PGUSER", role),
        ("PGDATABASE", database),
        ("PGPASSFILE", str(passfile)),
        ("PGSSLMODE", "disable"),
    ):
        monkeypatch.setenv(name, value)
    store = PostgresStore("postgresql://")
    assert store.where == f"postgresql://{role}@127.0.0.1:{postgres_server.port}/{database}"
    store.connect()
    assert store.schema_version == SCHEMA_VERSION
    store.close()
    passfile.write_text(f"127.0.0.1:{postgres_server.port}:{database}:{role}:not-it\n")
    with pytest.raises(StoreUnavailable, match="password authentication failed"):
        PostgresStore("postgresql://").connect()


@pytest.mark.parametrize("password", ["ab%zz-never-shown", "with space-never-shown"])
def test_libpq_quoting_a_malformed_password_is_redacted(password: str) -> None:
    """libpq quotes a malformed URL's parts in its message, the password included."""
    store = PostgresStore(f"postgresql://u:{password}@127.0.0.1:{free_loopback_port()}/db")
    with pytest.raises(StoreUnavailable) as info:
        store.connect()
    assert "[redacted]" in str(info.value) and "postgresql://u@127.0.0.1:" in str(info.value)
    assert password not in str(info.value) and "never-shown" not in str(info.value)


# -- damaged rows, repair, push --------------------------------------------------------------------


def damaged_shapes(good: str) -> list[str]:
    """Thirteen ways a row can be damaged, each from a good row's text."""
    record = json.loads(good)

    def changed(**verdict_fields: Any) -> str:
        return json.dumps({**record, "verdict": {**record["verdict"], **verdict_fields}})

    score = {
        **record,
        "kind": "score",
        "verdict": {**record["verdict"], "kind": "score", "value": 9},
    }
    return [
        "{not json",
        good[: len(good) // 2],  # truncated
        json.dumps([record]),  # a list
        json.dumps("a verdict"),
        "null",
        changed(value="true"),
        changed(confidence=float("nan")),
        json.dumps(score),  # a score verdict under a check claim's key
        json.dumps({**record, "kind": "score"}),  # the record's kind and its verdict's disagree
        json.dumps({k: v for k, v in record.items() if k != "verdict"}),
        changed(extra_field=1),
        json.dumps({**record, "recorded_at": "yesterday"}),
        changed(value=1),
    ]


def damage_rows(fleet: Fleet, texts: dict[str, str]) -> None:
    import psycopg

    with psycopg.connect(fleet.server.admin_url(fleet.database), autocommit=True) as conn:
        for key, text in texts.items():
            conn.execute("UPDATE prop_verdicts SET record = %s WHERE key = %s", (text, key))


def raw_rows(fleet: Fleet) -> dict[str, str]:
    return {
        str(key): str(text)
        for key, text in fleet.server.sql("SELECT key, record FROM prop_verdicts", fleet.database)
    }


def test_damaged_store_rows_are_named_missed_kept_locally_and_repaired(fleet: Fleet) -> None:
    """Thirteen damaged rows: each is a warning naming its key, never a traceback or a failure;
    the run judges once and keeps its verdict on disk, the rows are left as they are; the next
    run is served locally; export names them (exit 1); the owner's repair removes them and push
    refills them."""
    count = 15
    (fleet.project / "test_claims.py").write_text(claims_file(count))
    code, out = fleet.run("a")
    assert code == 0, out[-3000:]
    good = raw_rows(fleet)
    keys = sorted(good)[:13]
    damaged = {key: text for key, text in zip(keys, damaged_shapes(good[keys[0]]), strict=True)}
    damage_rows(fleet, damaged)
    fleet.judge.clear_requests()
    code, out = fleet.run("b", "-p", "no:randomly")
    assert code == 0, out[-3000:]
    assert summary_counts(out) == (count, count - 13, 13)
    assert len(fleet.judge.requests) == 13
    for key in keys:
        assert f"holds a damaged record {key}" in out, key
    for word in ("Traceback", "InvalidRecordError", "JSONDecodeError", "FAILED", "AssertionError"):
        assert word not in out, word
    assert "13 damaged records in the store" in out
    assert f"cache repair --store postgresql://{fleet.role}@" in out
    assert raw_rows(fleet) == {**good, **damaged}  # no row written over
    with VerdictCache(fleet.machine("b")) as cache:
        assert len(cache) == count  # the fresh verdicts are kept locally
    # The next run on this machine is served by its disk cache: no judge call.
    fleet.judge.clear_requests()
    code, out = fleet.run("b")
    assert code == 0 and summary_counts(out) == (count, count, 0), out[-3000:]
    # export: every good row, each damaged one named, exit 1.
    env = {**fleet.env(), "PROP_STORE": fleet.url}
    exported = fleet.cli("cache", "export", env=env)
    assert exported.returncode == 1, exported.stderr
    assert len(exported.stdout.splitlines()) == count - 13
    for key in keys:
        assert key in exported.stderr
    assert "verdict cache at" not in exported.stderr and "Traceback" not in exported.stderr
    # push cannot refill a damaged row: it says so, and changes nothing locally.
    pushed = fleet.cli("cache", "push", "--cache-dir", str(fleet.machine("b")), env=env)
    assert pushed.returncode == 1 and "13 damaged in the store" in pushed.stdout, pushed.stderr
    assert raw_rows(fleet) == {**good, **damaged}
    # The owner's repair removes the damaged rows; push then refills them.
    repaired = fleet.cli("cache", "repair", env=env)
    assert repaired.returncode == 0, repaired.stderr
    assert "removed 13 damaged record(s)" in repaired.stdout
    assert sorted(raw_rows(fleet)) == sorted(set(good) - set(keys))
    pushed = fleet.cli("cache", "push", "--cache-dir", str(fleet.machine("b")), env=env)
    assert pushed.returncode == 0, pushed.stderr
    assert "13 new" in pushed.stdout
    exported = fleet.cli("cache", "export", env=env)
    assert exported.returncode == 0 and len(exported.stdout.splitlines()) == count
    for result in (exported, pushed, repaired):
        assert PASSWORD not in result.stdout + result.stderr


def test_import_keeps_the_good_lines_and_names_the_bad_ones(fleet: Fleet) -> None:
    (fleet.project / "test_claims.py").write_text(claims_file(3))
    code, out = fleet.run("a")
    assert code == 0, out[-3000:]
    lines = fleet.cli("cache", "export", "--cache-dir", str(fleet.machine("a"))).stdout
    first = json.loads(lines.splitlines()[0])
    other_kind = {
        **first["record"],
        "kind": "score",
        "verdict": {**first["record"]["verdict"], "kind": "check"},
    }
    bad = "{not json\n" + json.dumps({"key": "b" * 64, "record": other_kind}) + "\n"
    path = fleet.root / "verdicts.jsonl"
    path.write_text(bad + lines)
    role, database = make_store(fleet.server)
    env = {**fleet.env(), "PROP_STORE": fleet.server.url(role, PASSWORD, database)}
    done = fleet.cli("cache", "import", str(path), env=env)
    assert done.returncode == 1, done.stderr
    assert "imported 3 verdicts" in done.stdout
    assert "verdicts.jsonl:1:" in done.stderr and "verdicts.jsonl:2:" in done.stderr
    local = fleet.cli("cache", "import", str(path), "--cache-dir", str(fleet.root / "fresh"))
    assert local.returncode == 1 and "imported 3 verdicts" in local.stdout, local.stderr
    assert "verdicts.jsonl:2:" in local.stderr and "a check verdict in a record" in local.stderr


def test_push_never_changes_a_local_verdict_and_a_refused_refresh_names_the_owners_command(
    fleet: Fleet,
) -> None:
    """A CI role that may not UPDATE refreshes: the store refuses, the refreshed verdicts stay
    local, the warning names 'cache push --replace'; push keeps them, counts only differing
    values as different; the owner's push --replace makes them the fleet's."""
    (fleet.project / "test_claims.py").write_text(claims_file(3))
    code, out = fleet.run("a")
    assert code == 0, out[-3000:]
    runner = f"{fleet.role}_ci"
    fleet.server.create_role(runner, PASSWORD)
    fleet.server.sql(f'GRANT CONNECT ON DATABASE "{fleet.database}" TO "{runner}"')
    fleet.server.sql(
        f'GRANT SELECT, INSERT ON prop_verdicts TO "{runner}"; '
        f'GRANT SELECT ON prop_schema TO "{runner}"',
        fleet.database,
    )
    ci = fleet.server.url(runner, PASSWORD, fleet.database)
    before = raw_rows(fleet)
    # The judge now says claim 0 fails, and words the others differently (same value).
    fleet.judge.on("subject number 0.", verdict(False, justification="Not any more."))
    fleet.judge.default = echo_fn(lambda request: verdict(True, justification="Still so."))
    code, out = fleet.run("a", "--prop-cache=refresh", "-p", "no:randomly", store=ci)
    assert code == 1, out[-3000:]
    where = f"postgresql://{runner}@127.0.0.1:{fleet.server.port}/{fleet.database}"
    assert f"cache push --replace --store {where}" in out
    assert "3 refreshed verdicts NOT written to the store" in out
    assert raw_rows(fleet) == before

    def local_values() -> dict[str, Any]:
        with VerdictCache(fleet.machine("a")) as cache:
            return {
                json.loads(line)["key"]: json.loads(line)["record"]["verdict"]
                for line in cache.export_lines()
            }

    refreshed = local_values()
    assert sorted(v["value"] for v in refreshed.values()) == [False, True, True]
    env = {**fleet.env(), "PROP_STORE": ci}
    pushed = fleet.cli("cache", "push", "--cache-dir", str(fleet.machine("a")), env=env)
    assert pushed.returncode == 0, pushed.stderr
    assert "0 new, 3 already there" in pushed.stdout
    assert "1 with a different value" in pushed.stdout  # not 3: two differ only in wording
    assert "cache push --replace" in pushed.stdout
    assert local_values() == refreshed and raw_rows(fleet) == before
    # The CI role may not replace; the owner may.
    refused = fleet.cli(
        "cache", "push", "--replace", "--cache-dir", str(fleet.machine("a")), env=env
    )
    assert refused.returncode == 2 and "permission denied" in refused.stderr
    assert "verdict cache at" not in refused.stderr
    owner = {**fleet.env(), "PROP_STORE": fleet.url}
    replaced = fleet.cli(
        "cache", "push", "--replace", "--cache-dir", str(fleet.machine("a")), env=owner
    )
    assert replaced.returncode == 0 and "3 added or replaced" in replaced.stdout, replaced.stderr
    assert {k: json.loads(v)["verdict"] for k, v in raw_rows(fleet).items()} == refreshed
