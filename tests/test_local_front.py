"""The local judge's front (``local_serve.PromptReuse``): which slot a request goes to, and when
llama.cpp may reuse what that slot read before.

Pure logic against a recording stand-in for llama.cpp; ``test_local_server.py`` checks against
the real engine that these decisions keep every answer identical to a cold read.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
from typing import Any

import pytest

from pytest_propositions.local import serve as local_serve
from pytest_propositions.local.ports import free_loopback_port
from pytest_propositions.local.serve import GONE, PromptReuse, Reply
from tests.support.judge_server import RecordedRequest, ScriptedJudge, echo_fn, verdict
from tests.support.judge_server import Reply as JudgeReply

CHECK = {"role": "system", "content": "Decide whether the claim is true."}
SCORE = {"role": "system", "content": "Rate the claim from 0 to 9."}
OTHER = {"role": "system", "content": "Something else entirely."}


def body(instructions: dict[str, str], claim: str, **extra: Any) -> bytes:
    messages = [instructions, {"role": "user", "content": claim}]
    return json.dumps({"model": "m", "messages": messages, **extra}).encode()


def ok(prompt_tokens: int = 500, read: int = 200) -> Reply:
    answer = {
        "choices": [{"message": {"content": "{}"}}],
        "usage": {"prompt_tokens": prompt_tokens},
        "timings": {"prompt_n": read},
    }
    return 200, "application/json", json.dumps(answer).encode()


class Engine:
    """Records what llama.cpp would receive and answers from a script (default: a normal read)."""

    def __init__(self, *replies: Reply) -> None:
        self.sent: list[dict[str, Any]] = []
        self.raw: list[bytes] = []
        self.replies = list(replies)

    def __call__(self, path: str, payload: bytes) -> Reply:
        self.raw.append(payload)
        try:
            self.sent.append(json.loads(payload))
        except ValueError:
            self.sent.append({})
        return self.replies.pop(0) if self.replies else ok()


def test_a_new_conversation_may_reuse_the_slots_cache() -> None:
    engine = Engine()
    front = PromptReuse(engine, slots=2)
    front.exchange("/v1/chat/completions", body(CHECK, "Ana cooks."))
    front.exchange("/v1/chat/completions", body(CHECK, "Bob sings."))
    assert [sent.get("cache_prompt", True) for sent in engine.sent] == [True, True]
    assert engine.sent[0]["id_slot"] == engine.sent[1]["id_slot"]


def test_the_same_conversation_again_is_read_whole() -> None:
    """Otherwise llama.cpp reads only its last token, alone, and the logits differ."""
    engine = Engine()
    front = PromptReuse(engine, slots=2)
    for _ in range(3):
        front.exchange("/v1/chat/completions", body(CHECK, "Ana cooks.", temperature=0))
    assert [sent.get("cache_prompt", True) for sent in engine.sent] == [True, False, False]
    # Everything else is passed on as sent.
    assert all(sent["temperature"] == 0 and sent["model"] == "m" for sent in engine.sent)


def test_each_kind_of_instructions_keeps_its_own_slot() -> None:
    engine = Engine()
    front = PromptReuse(engine, slots=2)
    for instructions, claim in [(CHECK, "a"), (SCORE, "b"), (CHECK, "c"), (SCORE, "d")]:
        front.exchange("/v1/chat/completions", body(instructions, claim))
    slots = [sent["id_slot"] for sent in engine.sent]
    assert slots[0] == slots[2] != slots[1] == slots[3]
    assert sorted({*slots}) == [0, 1]


def test_new_instructions_take_the_slot_used_least_recently() -> None:
    engine = Engine()
    front = PromptReuse(engine, slots=2)
    for instructions in (CHECK, SCORE, CHECK, OTHER, CHECK):
        front.exchange("/v1/chat/completions", body(instructions, "x"))
    check, score, _, other, check_again = (sent["id_slot"] for sent in engine.sent)
    assert other == score  # the score slot was the older one
    assert check_again == check
    # OTHER replaced SCORE: a score prompt now goes to the slot CHECK left longest ago.
    front.exchange("/v1/chat/completions", body(SCORE, "x"))
    assert engine.sent[-1]["id_slot"] == other


def test_a_reply_that_read_one_token_alone_is_asked_again_whole() -> None:
    """Whatever the front believes a slot holds, the engine's own timings have the last word."""
    alone, whole = ok(read=1), ok(read=500)
    engine = Engine(alone, whole)
    front = PromptReuse(engine, slots=1)
    reply = front.exchange("/v1/chat/completions", body(CHECK, "Ana cooks."))
    assert reply == whole
    assert [sent.get("cache_prompt", True) for sent in engine.sent] == [True, False]


def test_a_one_token_prompt_read_whole_is_not_asked_again() -> None:
    engine = Engine(ok(prompt_tokens=1, read=1))
    PromptReuse(engine).exchange("/v1/chat/completions", body(CHECK, "x"))
    assert len(engine.sent) == 1


def test_after_a_failure_the_slot_is_not_trusted_to_hold_anything() -> None:
    """The same conversation after an error goes with the cache allowed; if the slot did hold it
    whole, the one-token read is caught from the timings."""
    error: Reply = (400, "application/json", b'{"error": {"message": "bad"}}')
    engine = Engine(ok(), error, ok(read=1), ok())
    front = PromptReuse(engine, slots=1)
    front.exchange("/v1/chat/completions", body(CHECK, "a"))
    assert front.exchange("/v1/chat/completions", body(CHECK, "b")) == error
    front.exchange("/v1/chat/completions", body(CHECK, "b"))
    assert [sent.get("cache_prompt", True) for sent in engine.sent] == [True, True, True, False]


def test_errors_and_bodies_that_are_not_json_objects_pass_through_untouched() -> None:
    error: Reply = (500, "text/plain", b"engine trouble")
    engine = Engine(error, error)
    front = PromptReuse(engine)
    assert front.exchange("/v1/chat/completions", b"not json") == error
    assert front.exchange("/v1/chat/completions", b"[1, 2]") == error
    assert engine.raw == [b"not json", b"[1, 2]"]


def test_a_malformed_timings_block_is_not_a_one_token_read() -> None:
    for answer in (
        {"usage": {"prompt_tokens": 9}},
        {"usage": {"prompt_tokens": 9}, "timings": {"prompt_n": "1"}},
        {"usage": "x", "timings": {"prompt_n": 1}},
    ):
        engine = Engine((200, "application/json", json.dumps(answer).encode()))
        PromptReuse(engine).exchange("/v1/chat/completions", body(CHECK, "x"))
        assert len(engine.sent) == 1


def test_requests_reach_the_engine_one_at_a_time() -> None:
    """What a slot holds is only known if no two requests are read at once."""
    inside = threading.Semaphore(1)
    overlaps: list[str] = []

    def engine(path: str, payload: bytes) -> Reply:
        if not inside.acquire(blocking=False):
            overlaps.append(path)
            return ok()
        try:
            time.sleep(0.01)
            return ok()
        finally:
            inside.release()

    front = PromptReuse(engine, slots=2)
    threads = [
        threading.Thread(target=front.exchange, args=("/v1/chat/completions", body(CHECK, str(n))))
        for n in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert overlaps == []


@pytest.mark.parametrize("slots", [1, 2, 3])
def test_slot_numbers_stay_within_the_engines_slots(slots: int) -> None:
    engine = Engine()
    front = PromptReuse(engine, slots=slots)
    for n in range(10):
        front.exchange("/v1/chat/completions", body({"role": "system", "content": str(n)}, "x"))
    assert {sent["id_slot"] for sent in engine.sent} == set(range(slots))


def test_a_request_whose_client_has_gone_is_dropped_unread() -> None:
    engine = Engine()
    front = PromptReuse(engine, slots=1)
    assert front.exchange("/v1/chat/completions", body(CHECK, "a"), lambda: True) == GONE
    assert engine.sent == []
    # Nothing was read, so the slot is not believed to hold that conversation.
    front.exchange("/v1/chat/completions", body(CHECK, "a"))
    assert engine.sent[0].get("cache_prompt", True) is True


def test_over_http_a_client_that_timed_out_in_the_queue_costs_the_engine_nothing() -> None:
    """The real front on loopback before a stand-in engine: a client that gave up while another
    request held the engine is not passed on when its turn comes (llama.cpp alone would have
    seen the closed connection; behind the front it cannot)."""
    seen: list[str] = []
    release = threading.Event()

    def answer(request: RecordedRequest) -> JudgeReply:
        claim = request.messages[-1]["content"]
        seen.append(claim)
        if claim == "first":
            release.wait(30)
        return verdict(True)

    engine = ScriptedJudge().start()
    engine.default = echo_fn(answer)
    front = local_serve._front(0, engine.url, 1)
    threading.Thread(target=front.serve_forever, daemon=True).start()
    port = front.server_address[1]

    def post(claim: str, timeout: float) -> int:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        try:
            payload = body(CHECK, claim)
            connection.request("POST", "/v1/chat/completions", body=payload)
            return connection.getresponse().status
        finally:
            connection.close()

    try:
        first = threading.Thread(target=post, args=("first", 30))
        first.start()
        while "first" not in seen:
            time.sleep(0.01)
        with pytest.raises(TimeoutError):
            post("gave up", 0.2)
        release.set()
        first.join()
        assert post("third", 30) == 200
        time.sleep(0.5)  # room for the dropped request's handler, had it been passed on late
        assert seen == ["first", "third"]
    finally:
        release.set()
        front.shutdown()
        front.server_close()
        engine.stop()


def test_generation_leaves_a_core_to_the_machine_and_uses_at_most_two() -> None:
    assert [local_serve.generation_threads(n) for n in (1, 2, 3, 4, 8)] == [1, 1, 2, 2, 2]


def test_an_engine_that_cannot_be_reached_is_a_502_that_says_so() -> None:
    port = free_loopback_port()  # nobody listens there
    status, content_type, payload = local_serve._Engine(f"http://127.0.0.1:{port}").post(
        "/v1/chat/completions", b"{}"
    )
    assert (status, content_type) == (502, "text/plain")
    assert b"did not answer" in payload
