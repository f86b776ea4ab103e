"""Secrets stay secret under every flag: no API key, and no password inside --prop-api-base,
in the terminal output (``-l``, ``--tb=long``, ``-rA``, ``--log-level=DEBUG``), the JUnit file
or the cache folder, whatever way the judge fails, and whatever holds the key: a reply, or what
is judged (a target, a claim variable)."""

from __future__ import annotations

import re
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_propositions.judging.endpoint import Connection
from pytest_propositions.local.ports import free_loopback_port
from pytest_propositions.redaction import Secret, redact, redact_url
from pytest_propositions.settings import Settings
from tests.support.active_run import active
from tests.support.judge_server import (
    RecordedRequest,
    Reply,
    ScriptedJudge,
    echo_fn,
    null_message,
    sequence,
    status,
    text,
    verdict,
)
from tests.support.outcomes import assert_counts

pytest_plugins = ["pytester"]

KEY = "sk-test-h13-0123456789-secret"
# A key of no known shape: only the plugin's own bookkeeping can keep it out of the output.
PLAIN_KEY = "plainkey-h13-9876543210-secret"
PASSWORD = "pw-h13-hunter2-secret"

FLAGS = ["-l", "--tb=long", "--full-trace", "-rA", "--log-level=DEBUG", "-p", "no:randomly"]

INNER_TEST = """
from pytest_propositions import Proposition

def test_claim(world, assert_proposition):
    api_key_seen_by_the_test = None  # a local of the test's own frame, shown by -l
    assert_proposition(world, "Oscar mentions travel.")

def test_direct(world):
    # The plain API keeps the plugin's frames in the traceback, so -l shows their locals.
    assert Proposition("Oscar mentions his travels.", world).check()
"""


def _quote_the_key(request: RecordedRequest) -> Reply:
    """OpenAI's 401 quotes the key it was sent; so does this one."""
    sent = request.headers.get("authorization", "").removeprefix("Bearer ")
    return status(
        401,
        f"Incorrect API key provided: {sent}. You can find your API key at your dashboard.",
        "invalid_request_error",
    )


@pytest.fixture
def transport_path(both_paths: str) -> str:
    """Every judge call here goes through litellm and through the light path."""
    return both_paths


SCENARIOS: dict[str, Reply | None] = {
    "rejected-key-401": echo_fn(_quote_the_key),
    "server-error-500-after-retries": status(500, "upstream trouble"),
    "unparsable": text("Yes, I can help with that. Let me analyze..."),
    "reply-invalid": null_message(),
    "connection-refused": None,
    "false-verdict": verdict(False, justification="Oscar never mentions travel."),
}


@pytest.fixture
def project(pytester: pytest.Pytester, inner_run: list[str]) -> Iterator[Path]:
    pytester.makepyfile(test_inner=INNER_TEST)
    yield pytester.path


def _everything_written(
    result: pytest.RunResult, junit: Path, cache_dir: Path
) -> list[tuple[str, bytes]]:
    written = [
        ("stdout", result.stdout.str().encode()),
        ("stderr", result.stderr.str().encode()),
        ("junit", junit.read_bytes()),
    ]
    if cache_dir.exists():
        written.extend(
            (str(path), path.read_bytes())
            for path in sorted(cache_dir.rglob("*"))
            if path.is_file()
        )
    return written


@pytest.mark.parametrize("scenario", list(SCENARIOS))
@pytest.mark.parametrize("key", [KEY, PLAIN_KEY], ids=["sk-key", "plain-key"])
def test_no_flag_and_no_failure_shows_the_key_or_the_password(
    pytester: pytest.Pytester,
    project: Path,
    judge_server: ScriptedJudge,
    monkeypatch: pytest.MonkeyPatch,
    transport_path: str,
    scenario: str,
    key: str,
) -> None:
    monkeypatch.setenv("PROP_API_KEY", key)
    reply = SCENARIOS[scenario]
    port = judge_server.port if reply is not None else free_loopback_port()
    if reply is not None:
        judge_server.default = reply
    api_base = f"http://127.0.0.1:{port}/v1"
    junit = project / "junit.xml"
    cache_dir = project / "verdicts"
    result = pytester.runpytest(
        "--prop-model=openai/judge-model",
        f"--prop-api-base={api_base}",
        "--prop-cache=use",
        f"--prop-transport={transport_path}",
        f"--prop-cache-dir={cache_dir}",
        "--prop-retries=1",
        "-p",
        "no:cacheprovider",
        f"--junitxml={junit}",
        *FLAGS,
    )
    if scenario == "false-verdict":
        assert_counts(result, failed=2)
    else:
        assert_counts(result, judge_errors=2)
    out = result.stdout.str()
    # The flags took effect: -l printed the plugin's frames' locals, with the connection.
    assert "api_key_seen_by_the_test = None" in out
    if scenario != "false-verdict":
        assert "connection = Connection(" in out
    if reply is not None:
        # The key was really sent, so there was something to leak.
        assert any(key in r.headers.get("authorization", "") for r in judge_server.requests)
    for where, data in _everything_written(result, junit, cache_dir):
        assert key.encode() not in data, where
        assert key.encode("utf-16-le") not in data, where


# Passwords that parsers misread: "/" ends the authority (the password becomes a port and a
# path), "?" and "#" a query and a fragment, an "@" before the last one a host.
ODD_PASSWORDS = ["Zq8x/Pw-h13-secret", "Zq8x#Yv9?P@w-h13-secret"]


@pytest.mark.parametrize("password", [PASSWORD, *ODD_PASSWORDS])
@pytest.mark.parametrize("refused", [False, True], ids=["server-up", "connection-refused"])
def test_credentials_in_the_api_base_are_redacted_and_explained(
    pytester: pytest.Pytester,
    project: Path,
    judge_server: ScriptedJudge,
    monkeypatch: pytest.MonkeyPatch,
    transport_path: str,
    refused: bool,
    password: str,
) -> None:
    monkeypatch.setenv("PROP_API_KEY", PLAIN_KEY)
    port = free_loopback_port() if refused else judge_server.port
    junit = project / "junit.xml"
    cache_dir = project / "verdicts"
    result = pytester.runpytest(
        "--prop-model=openai/judge-model",
        f"--prop-api-base=http://h13user:{password}@127.0.0.1:{port}/v1",
        "--prop-cache=use",
        f"--prop-transport={transport_path}",
        f"--prop-cache-dir={cache_dir}",
        "--prop-retries=2",
        "-p",
        "no:cacheprovider",
        f"--junitxml={junit}",
        "-v",
        *FLAGS,
    )
    assert_counts(result, judge_errors=2)
    out = result.stdout.str()
    assert "connection = Connection(" in out  # -l and --full-trace showed the judge's frames
    # Not a transient fault: said at once, with what to do, and the URL shown without them.
    result.stdout.fnmatch_lines(
        [
            "*JudgeUnavailable: the judge (model openai/judge-model at "
            f"http://[[]redacted]@127.0.0.1:{port}/v1) cannot be called with a user and password"
            "*Remove them from the URL*"
        ]
    )
    assert "--prop-retries" not in out
    assert judge_server.requests == []
    pieces = [piece for piece in re.split("[/#?@]", password) if len(piece) >= 3]
    for where, data in _everything_written(result, junit, cache_dir):
        for secret in (password, PLAIN_KEY, "h13user", *pieces):
            assert secret.encode() not in data, (where, secret)


# --------------------------------------------------------------------------- the pieces


def test_a_secret_never_shows_itself() -> None:
    secret = Secret(PLAIN_KEY)
    for shown in (repr(secret), str(secret), f"{secret}", repr([secret]), repr({"k": secret})):
        assert PLAIN_KEY not in shown
    assert secret.reveal() == PLAIN_KEY
    assert secret == Secret(PLAIN_KEY) and hash(secret) == hash(Secret(PLAIN_KEY))
    with pytest.raises(TypeError, match="pickled"):
        import pickle

        pickle.dumps(secret)


def test_the_connection_and_settings_reprs_hide_credentials() -> None:
    base = f"https://h13user:{PASSWORD}@judge.invalid/v1?api_key={PLAIN_KEY}"
    connection = Connection("m", "openai/m", base, PLAIN_KEY)
    shown = repr(connection)
    assert PLAIN_KEY not in shown and PASSWORD not in shown and "h13user" not in shown
    assert "judge.invalid/v1" in shown
    assert connection.api_key == PLAIN_KEY  # held, for the call
    settings_shown = repr(Settings(api_base=base))
    assert PASSWORD not in settings_shown and PLAIN_KEY not in settings_shown


@pytest.mark.parametrize(
    ("url", "want"),
    [
        ("http://u:p@127.0.0.1:8000/v1", "http://[redacted]@127.0.0.1:8000/v1"),
        ("https://token@host/v1", "https://[redacted]@host/v1"),
        ("https://host/v1?api-key=abc&x=1", "https://host/v1?api-key=[redacted]&x=1"),
        ("https://host/v1", "https://host/v1"),
    ],
)
def test_redact_url(url: str, want: str) -> None:
    assert redact_url(url) == want
    assert redact(f"cannot reach {url}: refused") == f"cannot reach {want}: refused"


def test_redact_removes_given_secrets_of_any_shape() -> None:
    message = f"Incorrect API key provided: {PLAIN_KEY}."
    assert PLAIN_KEY not in redact(message, (Secret(PLAIN_KEY),))
    assert PLAIN_KEY not in redact(message, (PLAIN_KEY,))


def test_a_retried_call_logs_no_secret(
    judge_server: ScriptedJudge,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    transport_path: str,
) -> None:
    import logging

    from pytest_propositions import Proposition
    from pytest_propositions.runtime import Runtime

    caplog.set_level(logging.DEBUG)
    # The plugin holds litellm's own loggers at WARNING unless asked: ask, to see all it says.
    caplog.set_level(logging.DEBUG, logger="LiteLLM")
    monkeypatch.setenv("PROP_API_KEY", PLAIN_KEY)
    judge_server.default = sequence(status(503, "busy"), verdict(True))
    runtime = Runtime(
        Settings(
            model="openai/judge-model",
            api_base=judge_server.base_url,
            retries=2,
            transport=transport_path,
        ),
        cache_dir=tmp_path,
    )
    with active(runtime):
        assert Proposition("Ana greets.", "Ana acts: [TALK] hi").check() is True
    assert len(judge_server.requests) == 2
    logged = "\n".join(f"{r.name} {r.getMessage()} {r.args!r}" for r in caplog.records)
    assert "retry 1 of 2" in logged
    if transport_path == "openai":
        # The client's DEBUG lines were captured (httpcore's: this process imported litellm
        # directly, which quiets httpx's own request lines).
        assert any(
            r.name.startswith("httpcore") and "request" in r.getMessage() for r in caplog.records
        )
    else:
        # The clients' DEBUG lines were captured: the SDK's request lines and litellm's own dump.
        assert any(r.name.startswith("openai") and "POST" in r.getMessage() for r in caplog.records)
        assert any(r.name == "LiteLLM" and r.levelno == logging.DEBUG for r in caplog.records)
    assert PLAIN_KEY not in logged


def test_a_provider_error_quoting_the_password_alone_is_redacted() -> None:
    from pytest_propositions.judging.transport_litellm import fault_of
    from pytest_propositions.redaction import url_credentials

    base = Secret(f"http://h13user:{PASSWORD}@127.0.0.1:9/v1")
    error = RuntimeError(f"proxy auth failed for password {PASSWORD} (user h13user:{PASSWORD})")
    fault = fault_of(error, (Secret(PLAIN_KEY), *url_credentials(base)))
    assert PASSWORD not in fault.detail
    assert "proxy auth failed" in fault.detail
    assert url_credentials(Secret("http://127.0.0.1:9/v1")) == ()


# --------------------------------------------------------------------------- echoed in a reply

ECHO_TESTS = """
def test_holds(world, assert_proposition):
    assert_proposition(world, "Oscar mentions travel.")

def test_fails(world, assert_proposition):
    assert_proposition(world, "Oscar hates cities.")
"""


def _echo_the_header(request: RecordedRequest) -> Reply:
    """A judge (or a proxy in front of it) that quotes the request's headers in a good reply."""
    header = request.headers.get("authorization", "")
    holds = "hates cities" not in request.text
    return verdict(
        holds,
        justification=f"Request had Authorization: {header} and key {header[7:]}.",
    )


def test_a_successful_reply_echoing_the_key_keeps_it_out_of_everything_written(
    pytester: pytest.Pytester,
    inner_run: list[str],
    judge_server: ScriptedJudge,
    monkeypatch: pytest.MonkeyPatch,
    transport_path: str,
) -> None:
    """The key reaches no cache record, export, terminal, JUnit, JSON or HTML report: the reply
    is redacted before it is parsed, cached or shown."""
    pytester.makepyfile(test_echo=ECHO_TESTS)
    monkeypatch.setenv("PROP_API_KEY", PLAIN_KEY)
    judge_server.default = echo_fn(_echo_the_header)
    junit, report, html = (pytester.path / name for name in ("j.xml", "r.json", "r.html"))
    cache_dir = pytester.path / "verdicts"
    result = pytester.runpytest(
        "--prop-model=openai/judge-model",
        f"--prop-api-base={judge_server.base_url}",
        "--prop-cache=use",
        f"--prop-transport={transport_path}",
        f"--prop-cache-dir={cache_dir}",
        f"--junitxml={junit}",
        f"--prop-report={report}",
        f"--prop-html={html}",
        "-p",
        "no:cacheprovider",
        "-rA",
        "-vv",
    )
    assert_counts(result, passed=1, failed=1)
    assert any(PLAIN_KEY in r.headers.get("authorization", "") for r in judge_server.requests)
    out = result.stdout.str()
    assert "Request had Authorization: Bearer [redacted] and key [redacted]." in out
    exported = pytester.path / "export.jsonl"
    assert (
        pytester.run(
            sys.executable,
            "-m",
            "pytest_propositions",
            "cache",
            "export",
            "--cache-dir",
            str(cache_dir),
            "--output",
            str(exported),
        ).ret
        == 0
    )
    # The failure's message in JUnit gives the judge's justification, redacted like all else.
    [failure] = ET.parse(junit).getroot().iter("failure")
    assert (
        "justification: Request had Authorization: Bearer [redacted]" in failure.attrib["message"]
    )
    written = _everything_written(result, junit, cache_dir)
    for path in (report, html, exported):
        written.append((str(path), path.read_bytes()))
    assert b"[redacted]" in exported.read_bytes()
    for where, data in written:
        assert PLAIN_KEY.encode() not in data, where


def test_logs_hide_credentials_from_the_start_of_the_session(pytester: pytest.Pytester) -> None:
    # A simulation logs before any claim is made (its client's DEBUG lines, here a warning):
    # the filter is on pytest's log handlers from the session's start, claims or not.
    pytester.makepyfile(
        test_logs="""
import logging

def test_simulation_logs_then_fails():
    password, token = "-".join(["hunter2", "secret"]), "".join(["tok-abcdefgh", "12345678"])
    logging.getLogger("simulation.client").warning(
        "POST https://alice:%s@llm.example.test/v1 with Bearer %s", password, token
    )
    assert False
"""
    )
    # (The values are built at run time: the failure's traceback shows the test's source.)
    result = pytester.runpytest_subprocess("-rA", "--log-level=DEBUG", "-p", "no:randomly")
    result.assert_outcomes(failed=1)
    output = result.stdout.str()
    assert "Captured log call" in output
    assert "hunter2-secret" not in output and "tok-abcdefgh12345678" not in output, output
    assert "[redacted]" in output


# --------------------------------------------------------------------------- inside what is judged

# The judge's own key inside what a claim is about: a tool result that printed the environment,
# a claim variable, the extra context. The conftest holds the value (the failing test's source,
# which tracebacks show, does not); the runs below set PROP_API_KEY to it, or nothing.
KEY_INSIDE_CONFTEST = f"""
import pytest

THE_KEY = {PLAIN_KEY!r}


@pytest.fixture
def trajectory():
    return (
        "Ana acts: [TOOL_CALL] read_env()\\n"
        f"--> Ana: [TOOL_RESULT] PROP_API_KEY={{THE_KEY}} HOME=/home/ana\\n"
        "Ana acts: [TALK] I have what I need."
    )


@pytest.fixture
def the_key():
    return THE_KEY
"""

KEY_INSIDE_TESTS = """
from pytest_propositions import Proposition


def test_holds(trajectory, the_key, assert_proposition):
    assert_proposition(
        trajectory,
        "Ana reads the variable whose value is {{value}}.",
        claim_variables={"value": the_key},
        additional_context="The operator's key is " + the_key + ".",
    )


def test_fails(trajectory, the_key, assert_proposition):
    assert_proposition(
        trajectory,
        "Ana never prints {{value}}.",
        claim_variables={"value": the_key},
    )


def test_fails_by_call(trajectory, the_key):
    assert Proposition("Ana never prints the key " + the_key + ".", trajectory).check()
"""


def _judge_by_claim(request: RecordedRequest) -> Reply:
    holds = "never prints" not in request.text
    return verdict(holds, justification="Ana ran read_env and then spoke.")


def test_the_key_inside_a_target_or_claim_is_kept_out_of_everything_written(
    pytester: pytest.Pytester,
    inner_run: list[str],
    judge_server: ScriptedJudge,
    monkeypatch: pytest.MonkeyPatch,
    transport_path: str,
) -> None:
    """Item 6 of issue 48: the requests, claims and contexts stored and shown are redacted of
    the known secrets (replies already were); the key is the real request's, so a replay with
    the key set, or with no key at all, is served from the cache without a judge call."""
    from pytest_propositions import redaction

    pytester.makeconftest(pytester.path.joinpath("conftest.py").read_text() + KEY_INSIDE_CONFTEST)
    pytester.makepyfile(test_inside=KEY_INSIDE_TESTS)
    monkeypatch.setenv("PROP_API_KEY", PLAIN_KEY)
    judge_server.default = echo_fn(_judge_by_claim)
    cache_dir = pytester.path / "verdicts"

    def run(
        name: str, mode: str, *flags: str, where: Path = cache_dir
    ) -> tuple[pytest.RunResult, list[tuple[str, bytes]]]:
        junit, report, html = (pytester.path / f"{name}.{ext}" for ext in ("xml", "json", "html"))
        # Each run in a process of its own would know no secret at its start: what this process
        # remembered earlier (another test, a run before) must not hide a leak.
        monkeypatch.setattr(redaction, "_known", frozenset())
        result = pytester.runpytest(
            "--prop-model=openai/judge-model",
            f"--prop-api-base={judge_server.base_url}",
            f"--prop-cache={mode}",
            f"--prop-transport={transport_path}",
            f"--prop-cache-dir={where}",
            f"--junitxml={junit}",
            f"--prop-report={report}",
            f"--prop-html={html}",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:randomly",
            *flags,
        )
        written = _everything_written(result, junit, where)
        written += [(str(path), path.read_bytes()) for path in (report, html)]
        return result, written

    first, written = run("first", "use", "-rA", "-vv", "--tb=long")
    assert_counts(first, passed=1, failed=2)
    assert len(judge_server.requests) == 3
    # The key really was in what the judge was sent: there was something to leak.
    assert all(PLAIN_KEY in r.text for r in judge_server.requests)
    out = first.stdout.str()
    assert "Ana never prints [redacted]" in out
    locals_run, locals_written = run("locals", "use", "-l", "--full-trace", "-rA")
    assert_counts(locals_run, passed=1, failed=2)
    assert "trajectory = " in locals_run.stdout.str()  # -l showed the test's locals
    exported = pytester.path / "export.jsonl"
    export = pytester.run(
        sys.executable, "-m", "pytest_propositions", "cache", "export",
        "--cache-dir", str(cache_dir), "--output", str(exported),
    )  # fmt: skip
    assert export.ret == 0, export.stderr.str()
    assert b"[redacted]" in exported.read_bytes()
    for where, data in [*written, *locals_written, (str(exported), exported.read_bytes())]:
        assert PLAIN_KEY.encode() not in data, where
        assert PLAIN_KEY.encode("utf-16-le") not in data, where
    # Keyed by the real request: a replay hits, with the key set and with none (CI).
    calls = len(judge_server.requests)
    replayed, replay_written = run("replay", "replay", "-rA")
    assert_counts(replayed, passed=1, failed=2)
    for where, data in replay_written:
        assert PLAIN_KEY.encode() not in data, where
    # CI: no key, the verdicts imported from the export (each redacted request by its seal).
    monkeypatch.delenv("PROP_API_KEY")
    imported = pytester.path / "imported"
    done = pytester.run(
        sys.executable, "-m", "pytest_propositions", "cache", "import", str(exported),
        "--cache-dir", str(imported),
    )  # fmt: skip
    assert done.ret == 0, done.stdout.str() + done.stderr.str()
    assert "imported 3 verdicts" in done.stdout.str()
    keyless, _ = run("keyless", "replay", "-rA", where=imported)
    assert_counts(keyless, passed=1, failed=2)
    assert len(judge_server.requests) == calls


@pytest.fixture
def known_key(monkeypatch: pytest.MonkeyPatch) -> str:
    """PLAIN_KEY known to redaction, as a run's judge makes it known (and nothing else)."""
    from pytest_propositions import redaction

    monkeypatch.setattr(redaction, "_known", frozenset())
    redaction.remember_secrets(PLAIN_KEY)
    return PLAIN_KEY


def _material(secret: str) -> dict[str, object]:
    return {
        "prompt_version": "p1",
        "model": "openai/judge-model",
        "messages": [
            {"role": "system", "content": "Judge the claim."},
            {"role": "user", "content": f"--> Ana: [TOOL_RESULT] PROP_API_KEY={secret}"},
        ],
        "sampling": {"temperature": 0},
        "kind": "check",
        "double_check": False,
        "sample_index": 0,
    }


def _recorded(material: dict[str, object], claim: str) -> tuple[str, dict[str, object]]:
    from pytest_propositions.store.cache_record import new_record
    from pytest_propositions.store.key_material import KeyMaterial
    from pytest_propositions.store.keys import cache_key
    from pytest_propositions.verdict import Verdict

    key = cache_key(material)
    verdict = Verdict(
        kind="check",
        claim=claim,
        value=True,
        justification="Ana read it.",
        model="openai/judge-model",
        recorded_at="2026-01-02T03:04:05+00:00",
        key=key,
    )
    made = KeyMaterial.from_json(material)
    assert made.key == key
    return key, new_record(verdict, made, f"test_x.py::test_key[{PLAIN_KEY}]")


def test_a_record_keeps_its_request_redacted_and_sealed_to_the_real_key(known_key: str) -> None:
    from pytest_propositions.store.cache_record import (
        export_line,
        read_lines,
        request_redacted,
        unpack_request,
    )
    from pytest_propositions.store.keys import canonical_json

    key, record = _recorded(_material(known_key), f"Ana never prints {known_key}.")
    assert known_key not in canonical_json(record)
    assert record["claim"] == "Ana never prints [redacted]."
    assert record["test_id"] == "test_x.py::test_key[[redacted]]"
    kept = unpack_request(record)
    assert kept is not None and "PROP_API_KEY=[redacted]" in kept["messages"][1]["content"]
    assert request_redacted(record)
    # Imported by its seal (its request no longer hashes to its key)...
    entries, errors = read_lines([export_line(key, record)])
    assert errors == [] and list(entries) == [key]
    # ...which a key moved onto it does not carry: refused, as for any other record.
    other, _ = _recorded(_material("another-value-entirely"), "Ana reads it.")
    entries, errors = read_lines([export_line(other, record)])
    assert entries == {}
    [error] = errors
    assert "redacted of a secret, and its seal is not that of key" in str(error)
    # A request without a secret is kept as it was asked: its key checked by hashing it.
    plain_key, plain = _recorded(_material("nothing-secret-here"), "Ana reads it.")
    assert not request_redacted(plain)
    assert read_lines([export_line(plain_key, plain)])[1] == []


def test_rejudge_leaves_out_a_request_kept_redacted(known_key: str, tmp_path: Path) -> None:
    """Asked again as stored, it would be another request, under a key no test run computes."""
    from pytest_propositions.cli.rejudge import plan
    from pytest_propositions.store.cache import VerdictCache

    key, record = _recorded(_material(known_key), "Ana reads the key.")
    with VerdictCache(tmp_path, "use") as cache:
        cache.put(key, record)
        planned = plan(cache, "openai/newer")
    assert planned.requests == []
    assert planned.skipped == {
        "whose request held a secret, kept redacted (a test run asks them)": 1
    }


def test_a_replay_miss_names_what_changed_without_the_key(known_key: str, tmp_path: Path) -> None:
    from pytest_propositions.store.cache import VerdictCache
    from pytest_propositions.store.key_material import KeyMaterial
    from pytest_propositions.store.replay_miss import explain_miss

    claim = f"Ana never prints {known_key}."
    key, record = _recorded(_material(known_key), claim)
    wanted = _material(known_key)
    wanted["messages"][1]["content"] += " at noon"  # type: ignore[index]
    with VerdictCache(tmp_path, "use") as cache:
        cache.put(key, record)
        said = explain_miss(cache, KeyMaterial.from_json(wanted), claim, None)
    assert "The nearest recorded request for this claim" in said
    assert "added 'at noon'" in said and known_key not in said


def test_a_repr_cut_short_by_pytest_shows_no_piece_of_the_key(known_key: str) -> None:
    from _pytest._io.saferepr import saferepr

    from pytest_propositions.redaction import redact_repr

    # -l shows each local through saferepr, which keeps the two ends of a long value.
    for padding in range(0, 260, 7):
        shown = saferepr({"a": "x" * padding + known_key, "b": known_key + "y" * padding})
        redacted = redact_repr(shown)
        for n in range(4, len(known_key) + 1):
            for piece in (known_key[:n], known_key[-n:]):
                assert piece not in redacted, (padding, shown, redacted)
    assert redact_repr("'ana...home'") == "'ana...home'"  # nothing known there: left as it is


def test_every_text_field_of_an_outcome_is_filed_redacted(known_key: str) -> None:
    """A field added to ``Outcome`` or ``Verdict`` is redacted with no edit to the record: every
    text field, in the verdicts and in the runs' data too, is filed without the key."""
    import dataclasses

    from pytest_propositions.record import Outcome, RunRecord
    from pytest_propositions.verdict import Verdict

    def texts_of(cls: type) -> dict[str, str]:
        return {
            item.name: f"x {known_key} y"
            for item in dataclasses.fields(cls)
            if item.type in ("str", "str | None")
        }

    verdict_texts = texts_of(Verdict)
    verdict = Verdict(kind="check", value=True, **verdict_texts)  # type: ignore[arg-type]
    outcome_texts = texts_of(Outcome)
    assert {"claim", "justification", "reasoning", "raw_reply"} <= set(verdict_texts)
    assert {"test_id", "where", "by_call", "made_by"} <= set(outcome_texts)
    outcome = Outcome(  # type: ignore[arg-type]
        verdict=verdict,
        threshold=None,
        passed=True,
        runs={"runs": [{"justification": known_key}]},
        escalated_from=verdict,
        **outcome_texts,
    )
    record = RunRecord()
    record.add(outcome)
    (filed,) = record.outcomes
    assert known_key not in repr(filed)
    assert known_key in repr(outcome)  # the test's own outcome did hold it everywhere
