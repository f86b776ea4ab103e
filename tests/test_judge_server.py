"""The scripted judge server, exercised through real HTTP with litellm (the plugin's own path).

Several tests also pin down how litellm/openai map failures to exceptions and when they retry
on their own, because the plugin's retry logic depends on that behaviour.
"""

from __future__ import annotations

import json
import os
import threading
import time
import urllib.error
import urllib.request
from typing import Any

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import litellm  # after the env var, so no price map is fetched
import openai

from tests.conftest import LITELLM_PATH
from tests.support.judge_server import (
    CREATED,
    RecordedRequest,
    Reply,
    ScriptedJudge,
    delay,
    disconnect,
    echo_fn,
    malformed_body,
    message_text,
    refusal,
    sequence,
    status,
    text,
    verdict,
    wrong_shape,
)

litellm.suppress_debug_info = True

API_KEY = "sk-test-not-real"
MODEL = "openai/judge-model"
JSON_SCHEMA_FORMAT = {
    "type": "json_schema",
    "json_schema": {"name": "verdict", "schema": {"type": "object"}, "strict": True},
}


def complete(judge: ScriptedJudge, content: str = "Is the claim true?", **kwargs: Any) -> Any:
    """One litellm call at the judge; no SDK retries unless a test asks for them."""
    kwargs.setdefault("max_retries", 0)
    kwargs.setdefault("model", MODEL)
    return litellm.completion(
        api_base=judge.base_url,
        api_key=API_KEY,
        messages=[{"role": "user", "content": content}],
        **kwargs,
    )


def get_json(url: str) -> tuple[int, dict[str, Any]]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def post_json(url: str, payload: object | bytes) -> tuple[int, dict[str, Any]]:
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    request = urllib.request.Request(
        url, data=data, headers={"Content-Type": "application/json"}, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


# --------------------------------------------------------------------------- lifecycle & plain HTTP


def test_base_url_points_at_loopback_v1(judge_server: ScriptedJudge) -> None:
    assert judge_server.base_url == f"http://127.0.0.1:{judge_server.port}/v1"
    assert judge_server.port > 0
    assert judge_server.running


def test_health_and_models_over_urllib(judge_server: ScriptedJudge) -> None:
    assert get_json(f"{judge_server.url}/health") == (200, {"status": "ok"})
    code, models = get_json(f"{judge_server.base_url}/models")
    assert code == 200
    assert models["object"] == "list"
    assert [m["id"] for m in models["data"]] == ["judge-model"]
    code, body = get_json(f"{judge_server.url}/nope")
    assert code == 404
    assert "error" in body


def test_context_manager_stops_and_stop_is_idempotent() -> None:
    with ScriptedJudge() as judge:
        url = f"{judge.url}/health"
        assert get_json(url)[0] == 200
    assert not judge.running
    judge.stop()
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(url, timeout=2)


def test_start_twice_is_an_error(judge_server: ScriptedJudge) -> None:
    with pytest.raises(RuntimeError):
        judge_server.start()


def test_chat_completions_without_v1_prefix(judge_server: ScriptedJudge) -> None:
    code, body = post_json(
        f"{judge_server.url}/chat/completions",
        {"model": "m", "messages": [{"role": "user", "content": "hi"}]},
    )
    assert code == 200
    assert body["object"] == "chat.completion"
    assert judge_server.requests[0].path == "/chat/completions"


def test_stream_requests_are_refused_with_400(judge_server: ScriptedJudge) -> None:
    code, body = post_json(
        f"{judge_server.base_url}/chat/completions",
        {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]},
    )
    assert code == 400
    assert "stream" in body["error"]["message"]


def test_non_json_request_body_is_a_400(judge_server: ScriptedJudge) -> None:
    code, body = post_json(f"{judge_server.base_url}/chat/completions", b"{not json")
    assert code == 400
    assert body["error"]["type"] == "invalid_request_error"
    assert judge_server.requests == []


def test_stop_is_prompt_while_a_handler_sleeps() -> None:
    judge = ScriptedJudge().start()
    judge.default = delay(60, verdict(True))
    results: list[int] = []

    def call() -> None:
        results.append(post_json(f"{judge.base_url}/chat/completions", {"messages": []})[0])

    client = threading.Thread(target=call, daemon=True)
    client.start()
    deadline = time.monotonic() + 10
    while not judge.requests and time.monotonic() < deadline:
        time.sleep(0.01)
    assert judge.requests, "the request never reached the server"
    started = time.monotonic()
    judge.stop()
    assert time.monotonic() - started < 10  # far below the 60 s delay
    client.join(timeout=10)
    # The sleeping handler was woken and still answered its client.
    assert results == [200]


# --------------------------------------------------------------------------- replies via litellm


def test_verdict_reply_through_litellm(judge_server: ScriptedJudge) -> None:
    judge_server.default = verdict(False, justification="No refund was offered.", confidence=0.75)
    response = complete(judge_server)
    content = json.loads(response.choices[0].message.content)
    assert content == {
        "reasoning": "Scripted reasoning.",
        "justification": "No refund was offered.",
        "value": False,
        "confidence": 0.75,
    }
    assert list(content) == ["reasoning", "justification", "value", "confidence"]
    assert response.choices[0].finish_reason == "stop"
    assert response.model == "judge-model"
    assert response.created == CREATED
    assert response.usage.prompt_tokens > 0
    assert response.usage.completion_tokens > 0
    assert response.usage.total_tokens == (
        response.usage.prompt_tokens + response.usage.completion_tokens
    )


def test_usage_is_deterministic(judge_server: ScriptedJudge) -> None:
    first = complete(judge_server, "same prompt every time").usage
    second = complete(judge_server, "same prompt every time").usage
    assert (first.prompt_tokens, first.completion_tokens) == (
        second.prompt_tokens,
        second.completion_tokens,
    )


def test_default_is_a_true_verdict(judge_server: ScriptedJudge) -> None:
    content = json.loads(complete(judge_server).choices[0].message.content)
    assert content["value"] is True


def test_text_reply_is_sent_raw(judge_server: ScriptedJudge) -> None:
    judge_server.default = text('Sure! ```json\n{"value": true}\n```')
    response = complete(judge_server)
    assert response.choices[0].message.content == 'Sure! ```json\n{"value": true}\n```'


def test_text_reply_can_set_finish_reason(judge_server: ScriptedJudge) -> None:
    judge_server.default = text('{"reasoning": "cut', finish_reason="length")
    response = complete(judge_server)
    assert response.choices[0].finish_reason == "length"


def test_a_refusal_litellm_returns_is_read_as_one(judge_server: ScriptedJudge) -> None:
    # Where litellm puts OpenAI's `refusal` field depends on its release (1.106 moved it into
    # provider_specific_fields, 1.110 keeps it on the message): the plugin must find it in both.
    from pytest_propositions.judging.response import reply_content

    judge_server.default = refusal("I won't judge that.")
    response = complete(judge_server)
    assert response.choices[0].message.content is None
    assert reply_content(response) == ("", "I won't judge that.")


def test_malformed_body_makes_litellm_raise(judge_server: ScriptedJudge) -> None:
    judge_server.default = malformed_body()
    with pytest.raises(litellm.InternalServerError) as info:
        complete(judge_server)
    assert "invalid response" in str(info.value)


def test_wrong_shape_makes_litellm_raise(judge_server: ScriptedJudge) -> None:
    judge_server.default = wrong_shape()
    with pytest.raises(litellm.InternalServerError) as info:
        complete(judge_server)
    assert "choices" in str(info.value)


def test_echo_fn_builds_the_reply_from_the_request(judge_server: ScriptedJudge) -> None:
    judge_server.default = echo_fn(lambda req: verdict("refund" in req.text))
    yes = json.loads(complete(judge_server, "a refund was offered").choices[0].message.content)
    no = json.loads(complete(judge_server, "nothing happened").choices[0].message.content)
    assert (yes["value"], no["value"]) == (True, False)


# --------------------------------------------------------------------------- recording & rules


def test_requests_are_recorded_with_messages_and_headers(judge_server: ScriptedJudge) -> None:
    complete(
        judge_server,
        "Claim: the agent apologised.",
        response_format={"type": "json_object"},
        temperature=0,
    )
    [request] = judge_server.requests
    assert request.path == "/v1/chat/completions"
    assert request.model == "judge-model"
    assert request.messages == [{"role": "user", "content": "Claim: the agent apologised."}]
    assert request.text == "Claim: the agent apologised."
    assert request.response_format == {"type": "json_object"}
    assert request.body["temperature"] == 0
    assert request.headers["authorization"] == f"Bearer {API_KEY}"


def test_message_text_joins_string_and_part_contents() -> None:
    messages: list[Any] = [
        {"role": "system", "content": "You are a judge."},
        {"role": "user", "content": [{"type": "text", "text": "part one"}, {"type": "image_url"}]},
        {"role": "assistant", "content": None},
        {"role": "user", "content": [{"type": "text", "text": "part two"}]},
    ]
    assert message_text(messages) == "You are a judge.\npart one\npart two"
    request = RecordedRequest(path="/v1/chat/completions", headers={}, body={"messages": messages})
    assert request.text == "You are a judge.\npart one\npart two"
    assert request.model is None
    assert request.response_format is None


def test_rules_match_by_substring_and_callable_first_wins(judge_server: ScriptedJudge) -> None:
    by_text = judge_server.on("refund", verdict(False, justification="text rule"))
    by_fn = judge_server.on(
        lambda req: req.body.get("temperature") == 0.5, verdict(True, justification="fn rule")
    )
    judge_server.on("refund", verdict(True, justification="shadowed"))

    def justification(content: str, **kwargs: Any) -> str:
        reply = complete(judge_server, content, **kwargs).choices[0].message.content
        return str(json.loads(reply)["justification"])

    assert justification("did they refund?") == "text rule"
    assert justification("anything", temperature=0.5) == "fn rule"
    assert justification("no match here") == "Scripted justification."
    assert (by_text.hits, by_fn.hits) == (1, 1)


def test_scripted_rule_applies_only_inside_the_block(judge_server: ScriptedJudge) -> None:
    with judge_server.scripted("claim", verdict(False)):
        inside = json.loads(complete(judge_server, "claim").choices[0].message.content)
    outside = json.loads(complete(judge_server, "claim").choices[0].message.content)
    assert (inside["value"], outside["value"]) == (False, True)


def test_reset_clears_requests_rules_and_settings(judge_server: ScriptedJudge) -> None:
    judge_server.on("x", status(500))
    judge_server.default = verdict(False)
    judge_server.reject_json_schema = 500
    complete(judge_server, "y")
    judge_server.reset()
    assert judge_server.requests == []
    assert judge_server.rules == []
    assert judge_server.reject_json_schema is None
    content = json.loads(complete(judge_server, "x").choices[0].message.content)
    assert content["value"] is True


# --------------------------------------------------------------------------- json_schema rejection


def test_json_schema_rejected_with_500_like_llama_cpp(judge_server: ScriptedJudge) -> None:
    judge_server.reject_json_schema = 500
    judge_server.on("claim", verdict(True))  # rules never override the rejection
    with pytest.raises(litellm.InternalServerError) as info:
        complete(judge_server, "claim", response_format=JSON_SCHEMA_FORMAT)
    assert info.value.status_code == 500
    assert "json_schema" in str(info.value)
    assert "response_format" in str(info.value)
    assert len(judge_server.requests) == 1
    assert judge_server.requests[0].response_format == JSON_SCHEMA_FORMAT


def test_json_schema_rejected_with_400_like_azure(judge_server: ScriptedJudge) -> None:
    judge_server.reject_json_schema = 400
    with pytest.raises(litellm.BadRequestError) as info:
        complete(judge_server, response_format=JSON_SCHEMA_FORMAT)
    assert info.value.status_code == 400
    assert "json_schema" in str(info.value)


@pytest.mark.parametrize(
    "response_format",
    [None, {"type": "json_object"}, {"type": "json_object", "schema": {"type": "object"}}],
)
def test_json_object_and_plain_requests_pass_when_json_schema_is_rejected(
    judge_server: ScriptedJudge, response_format: dict[str, Any] | None
) -> None:
    judge_server.reject_json_schema = 500
    kwargs = {} if response_format is None else {"response_format": response_format}
    content = json.loads(complete(judge_server, **kwargs).choices[0].message.content)
    assert content["value"] is True
    assert judge_server.requests[0].response_format == response_format


# ---------------------------------------------------------------- errors, retries, latency


def test_sequence_rate_limit_then_success(judge_server: ScriptedJudge) -> None:
    rule = judge_server.on("claim", sequence(status(429), verdict(False)))
    with pytest.raises(litellm.RateLimitError) as info:
        complete(judge_server, "claim")
    assert info.value.status_code == 429
    second = json.loads(complete(judge_server, "claim").choices[0].message.content)
    third = json.loads(complete(judge_server, "claim").choices[0].message.content)
    assert (second["value"], third["value"]) == (False, False)  # the last reply repeats
    assert rule.hits == 3
    assert len(judge_server.requests) == 3


def test_429_carries_retry_after_zero(judge_server: ScriptedJudge) -> None:
    judge_server.default = status(429, "slow down", error_type="rate_limit_error")
    request = urllib.request.Request(
        f"{judge_server.base_url}/chat/completions",
        data=b'{"messages": []}',
        headers={"Content-Type": "application/json"},
    )
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(request, timeout=10)
    assert info.value.code == 429
    assert info.value.headers["Retry-After"] == "0"
    body = json.loads(info.value.read())
    assert body == {"error": {"message": "slow down", "type": "rate_limit_error", "code": 429}}


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (status(400, error_type="invalid_request_error"), litellm.BadRequestError),
        (status(401, error_type="authentication_error"), litellm.AuthenticationError),
        (status(403), litellm.APIError),
        (status(404), litellm.NotFoundError),
        (status(408), litellm.Timeout),
        (status(422), litellm.BadRequestError),
        (status(429), litellm.RateLimitError),
        (status(500), litellm.InternalServerError),
        (status(502), litellm.BadGatewayError),
        (status(503), litellm.ServiceUnavailableError),
    ],
    ids=[
        "400",
        "401",
        "403",
        "404",
        "408",
        "422",
        "429",
        "500",
        "502",
        "503",
    ],
)
def test_litellm_exception_mapping(
    judge_server: ScriptedJudge, reply: Reply, expected: type[Exception]
) -> None:
    judge_server.default = reply
    with pytest.raises(expected) as info:
        complete(judge_server)
    assert getattr(info.value, "status_code", None) == getattr(reply, "code", None)
    assert len(judge_server.requests) == 1  # max_retries=0: the SDK did not retry


def test_dropped_connection_is_an_internal_server_error(judge_server: ScriptedJudge) -> None:
    judge_server.default = disconnect()
    with pytest.raises(litellm.InternalServerError) as info:
        complete(judge_server)
    # litellm reports a transport failure as a 500; only the chain tells it apart.
    chain: list[BaseException] = []
    error: BaseException | None = info.value
    while error is not None:
        chain.append(error)
        error = error.__cause__ or error.__context__
    assert any(isinstance(link, openai.APIConnectionError) for link in chain)
    assert "Connection error" in str(info.value)


def test_client_timeout_during_delay_raises_litellm_timeout(judge_server: ScriptedJudge) -> None:
    judge_server.default = delay(30, verdict(True))
    with pytest.raises(litellm.Timeout):
        complete(judge_server, timeout=0.3)
    assert len(judge_server.requests) == 1


def test_delay_is_observed(judge_server: ScriptedJudge) -> None:
    judge_server.default = delay(0.3, verdict(True))
    started = time.monotonic()
    response = complete(judge_server)
    assert time.monotonic() - started >= 0.3
    assert json.loads(response.choices[0].message.content)["value"] is True


@pytest.mark.parametrize(
    "kwargs", [{"max_retries": 0}, {"num_retries": 0}], ids=["max_retries=0", "num_retries=0"]
)
def test_zero_retries_means_one_request(
    judge_server: ScriptedJudge, kwargs: dict[str, Any]
) -> None:
    judge_server.default = status(503)
    with pytest.raises(litellm.ServiceUnavailableError):
        litellm.completion(
            model=MODEL,
            api_base=judge_server.base_url,
            api_key=API_KEY,
            messages=[{"role": "user", "content": "hi"}],
            **kwargs,
        )
    assert len(judge_server.requests) == 1


def test_openai_sdk_retries_twice_by_default(judge_server: ScriptedJudge) -> None:
    """Without max_retries the openai SDK makes 3 attempts; the plugin must pass max_retries=0."""
    judge_server.default = sequence(status(500), status(500), verdict(True))
    response = litellm.completion(
        model=MODEL,
        api_base=judge_server.base_url,
        api_key=API_KEY,
        messages=[{"role": "user", "content": "hi"}],
    )
    assert json.loads(response.choices[0].message.content)["value"] is True
    retry_counts = [req.headers.get("x-stainless-retry-count") for req in judge_server.requests]
    assert retry_counts == ["0", "1", "2"]


# --------------------------------------------------------------------------- concurrency


def test_concurrent_requests_are_all_answered_and_recorded(judge_server: ScriptedJudge) -> None:
    judge_server.default = echo_fn(lambda req: verdict(True, justification=req.text))
    prompts = [f"claim number {i}" for i in range(8)]
    answers: dict[str, str] = {}
    errors: list[BaseException] = []
    barrier = threading.Barrier(len(prompts))

    def call(prompt: str) -> None:
        try:
            barrier.wait(timeout=10)
            content = complete(judge_server, prompt).choices[0].message.content
            answers[prompt] = json.loads(content)["justification"]
        except BaseException as error:  # surfaced by the assert below
            errors.append(error)

    threads = [threading.Thread(target=call, args=(prompt,)) for prompt in prompts]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert errors == []
    assert answers == {prompt: prompt for prompt in prompts}
    assert sorted(req.text for req in judge_server.requests) == sorted(prompts)


# --------------------------------------------------------------------------- the light path
# The plugin's other path to OpenAI-compatible servers (plain HTTP, no litellm): the same
# server answers, and each failure must surface as the Fault that litellm's table makes of
# litellm's exception (its kind, its status, its Retry-After).


def light(judge: ScriptedJudge, content: str = "Is the claim true?", **kwargs: Any) -> Any:
    """One call at the judge through the light path, as the transport makes it."""
    import asyncio

    from pytest_propositions.judging.families import profile_of
    from pytest_propositions.judging.transport_http import HttpPath
    from pytest_propositions.redaction import Secret

    model = kwargs.pop("model", MODEL)
    base = kwargs.pop("api_base", judge.base_url)
    path = HttpPath(kwargs.pop("timeout", 10.0))
    body = {"messages": [{"role": "user", "content": content}], **kwargs}

    async def call() -> Any:
        try:
            return await path.send(profile_of(model), body, Secret(base), Secret(API_KEY))
        finally:
            await path.aclose()

    return asyncio.run(call())


def chain_of(error: BaseException) -> list[BaseException]:
    chain: list[BaseException] = []
    current: BaseException | None = error
    while current is not None:
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


@pytest.mark.parametrize("path", [LITELLM_PATH, "openai"])
def test_both_paths_read_the_same_reply(judge_server: ScriptedJudge, path: str) -> None:
    from pytest_propositions.judging.response import reply_content, reply_usage

    judge_server.default = verdict(False, justification="No.")
    response = (complete if path == "litellm" else light)(judge_server, "one two three")
    content, refused = reply_content(response)
    assert json.loads(content)["value"] is False and refused is None
    assert reply_usage(response) == (3, len(verdict(False, justification="No.").content().split()))
    [request] = judge_server.requests
    assert request.model == "judge-model"
    assert request.headers["authorization"] == f"Bearer {API_KEY}"


def test_the_light_path_reads_a_refusal_from_the_message(judge_server: ScriptedJudge) -> None:
    from pytest_propositions.judging.response import reply_content

    judge_server.default = refusal("I must decline.")
    assert reply_content(light(judge_server)) == ("", "I must decline.")


def test_both_paths_price_a_call_alike(judge_server: ScriptedJudge) -> None:
    # The light path reads litellm's price table as data; litellm prices the same usage.
    from pytest_propositions.judging.response import reply_cost
    from pytest_propositions.judging.transport_http import price_entry

    model = "openai/gpt-4o-mini"
    judge_server.default = verdict(True)
    through_litellm = litellm.completion_cost(
        completion_response=complete(judge_server, model=model)
    )
    through_light = reply_cost(light(judge_server, model=model))
    assert through_light is not None and through_light > 0
    assert through_light == pytest.approx(through_litellm, rel=1e-9)
    entry = price_entry("gpt-4o-mini")
    assert entry is not None and entry["input_cost_per_token"] > 0
    assert price_entry("judge-model") is None
    assert reply_cost(light(judge_server)) is None  # an unknown model has no price


@pytest.mark.parametrize(
    ("code", "kind", "transient"),
    [
        (400, "bad_request", False),
        (401, "auth", False),
        (403, "auth", False),
        (404, "not_found", False),
        (408, "timeout", True),
        (409, "conflict", True),
        (422, "bad_request", False),
        (429, "rate_limited", True),
        (500, "server", True),
        (502, "server", True),
        (503, "server", True),
    ],
)
def test_the_light_paths_faults_by_status(
    judge_server: ScriptedJudge, code: int, kind: str, transient: bool
) -> None:
    from pytest_propositions.judging.faults import Fault

    judge_server.default = status(code, f"scripted {code}")
    with pytest.raises(Fault) as info:
        light(judge_server)
    assert info.value.kind == kind
    assert info.value.status == code
    assert f"scripted {code}" in str(info.value)
    assert info.value.transient is transient
    assert len(judge_server.requests) == 1  # the client itself never retries
    assert info.value.retry_after == (0.0 if code == 429 else None)


@pytest.mark.parametrize(("code", "kind"), [(429, "rate_limited"), (503, "server"), (401, "auth")])
def test_litellms_exceptions_make_the_same_faults(
    judge_server: ScriptedJudge, code: int, kind: str
) -> None:
    import asyncio

    from pytest_propositions.judging.transport_litellm import fault_of

    judge_server.default = status(code, f"scripted {code}")
    with pytest.raises(Exception) as info:
        asyncio.run(
            litellm.acompletion(
                model=MODEL,
                messages=[{"role": "user", "content": "Is the claim true?"}],
                api_base=judge_server.base_url,
                api_key=API_KEY,
                max_retries=0,
            )
        )
    fault = fault_of(info.value)
    assert (fault.kind, fault.status) == (kind, code)
    assert f"scripted {code}" in fault.detail
    assert fault.retry_after == (0.0 if code == 429 else None)


@pytest.mark.parametrize(
    "reply", [malformed_body(), wrong_shape()], ids=["not-json", "wrong-shape"]
)
def test_a_body_that_is_no_completion_is_an_invalid_response(
    judge_server: ScriptedJudge, reply: Reply
) -> None:
    from pytest_propositions.judging.faults import Fault

    judge_server.default = reply
    with pytest.raises(Fault, match="invalid response object") as info:
        light(judge_server)
    assert info.value.kind == "invalid_response"
    assert info.value.status is None and info.value.transient


def test_the_light_path_names_a_dropped_connection_and_a_timeout(
    judge_server: ScriptedJudge,
) -> None:
    from pytest_propositions.judging.faults import Fault

    judge_server.default = disconnect()
    with pytest.raises(Fault, match="Connection error") as info:
        light(judge_server)
    assert info.value.kind == "connection"
    judge_server.default = delay(30, verdict(True))
    with pytest.raises(Fault) as info:
        light(judge_server, timeout=0.3)
    assert info.value.kind == "timeout"


def test_the_light_path_says_a_connection_was_refused() -> None:
    import httpx

    from pytest_propositions.judging.faults import Fault
    from pytest_propositions.local.ports import free_loopback_port

    port = free_loopback_port()  # nobody listens there
    with ScriptedJudge() as judge, pytest.raises(Exception) as info:
        light(judge, api_base=f"http://127.0.0.1:{port}/v1")
    assert any(isinstance(link, httpx.ConnectError) for link in chain_of(info.value))
    assert isinstance(info.value, Fault) and info.value.kind == "refused_connection"
    assert "attempts" not in str(info.value)


def test_the_light_path_reaches_an_azure_deployment(
    judge_server: ScriptedJudge, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AZURE_API_VERSION", "2024-10-21")
    response = light(judge_server, model="azure/my-deployment", api_base=judge_server.url)
    assert response.choices[0].message.content
    [request] = judge_server.requests
    assert request.path == "/openai/deployments/my-deployment/chat/completions"
    assert request.headers["api-key"] == API_KEY
    assert "authorization" not in request.headers


def test_headers_and_body_leave_in_one_write(
    judge_server: ScriptedJudge, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two small writes on a keep-alive connection wait ~40 ms on Nagle and delayed ACKs.
    import socketserver

    writes: list[bytes] = []
    original = socketserver._SocketWriter.write  # type: ignore[attr-defined]

    def write(self: Any, data: bytes) -> int:
        writes.append(bytes(data))
        return original(self, data)  # type: ignore[no-any-return]

    monkeypatch.setattr(socketserver._SocketWriter, "write", write)  # type: ignore[attr-defined]
    complete(judge_server)
    [written] = writes
    assert written.startswith(b"HTTP/1.0 200 OK\r\n")
    head, _, body = written.partition(b"\r\n\r\n")
    assert b"Content-Length: %d" % len(body) in head
    assert json.loads(body)["object"] == "chat.completion"


def test_the_azure_route_wants_its_api_key_header(judge_server: ScriptedJudge) -> None:
    """As Azure does: no api-key header (or another key than the deployment's) is a 401, before
    the body is read."""
    from tests.support.judge_server import AZURE_ACCESS_DENIED

    url = f"{judge_server.url}/openai/deployments/d/chat/completions?api-version=2024-10-21"
    body = json.dumps({"messages": [{"role": "user", "content": "hi"}]}).encode()

    def post(headers: dict[str, str]) -> int:
        request = urllib.request.Request(
            url, data=body, headers={"Content-Type": "application/json", **headers}
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return int(response.status)
        except urllib.error.HTTPError as error:
            assert json.loads(error.read()) == AZURE_ACCESS_DENIED
            return error.code

    assert post({}) == 401
    assert post({"api-key": "any"}) == 200
    judge_server.azure_api_key = "the-key"
    assert post({"api-key": "any"}) == 401
    assert post({"api-key": "the-key"}) == 200
    assert len(judge_server.requests) == 2  # refused requests never reach the rules


# --------------------------------------------------------------------------- hostile replies
# What an attacker's server sends, over a raw socket client (no library in between to tidy it).


def raw_post(judge: ScriptedJudge, read_body: bool = True) -> tuple[Any, bytes]:
    """One chat request with http.client: the response (headers) and its body as sent."""
    import http.client

    connection = http.client.HTTPConnection("127.0.0.1", judge.port, timeout=10)
    payload = json.dumps({"model": "judge-model", "messages": [{"role": "user", "content": "x"}]})
    connection.request(
        "POST", "/v1/chat/completions", payload, {"Content-Type": "application/json"}
    )
    response = connection.getresponse()
    body = response.read() if read_body else b""
    connection.close()
    return response, body


def test_a_redirect_carries_its_location_and_a_verdict_in_its_body(
    judge_server: ScriptedJudge,
) -> None:
    from tests.support.judge_server import redirect

    judge_server.default = redirect(302, "http://127.0.0.1:9/v1/chat/completions")
    response, body = raw_post(judge_server)
    assert response.status == 302
    assert response.getheader("Location") == "http://127.0.0.1:9/v1/chat/completions"
    content = json.loads(json.loads(body)["choices"][0]["message"]["content"])
    assert content["value"] is True
    with pytest.raises(ValueError, match="3xx"):
        redirect(200, "/x")


def test_a_gzip_bomb_is_small_on_the_wire_and_a_valid_completion_inflated(
    judge_server: ScriptedJudge,
) -> None:
    import zlib

    from tests.support.judge_server import gzip_bomb

    judge_server.default = gzip_bomb(8 * 1024 * 1024)
    response, body = raw_post(judge_server)
    assert response.getheader("Content-Encoding") == "gzip"
    assert len(body) < 64 * 1024
    inflated = zlib.decompress(body, zlib.MAX_WBITS | 16)  # checks the crc and length too
    assert len(inflated) >= 8 * 1024 * 1024
    completion = json.loads(inflated)
    assert json.loads(completion["choices"][0]["message"]["content"])["value"] is True


def test_repeated_keys_and_several_choices_are_sent_as_written(
    judge_server: ScriptedJudge,
) -> None:
    from tests.support.judge_server import choices, repeated_key

    judge_server.default = repeated_key("content", "first", "second")
    _, body = raw_post(judge_server)
    assert body.count(b'"content": ') == 2
    assert b'"content": "first", "content": "second"' in body
    judge_server.default = repeated_key("model", "a", "b")
    _, body = raw_post(judge_server)
    assert b'"model": "a", "model": "b"' in body
    judge_server.default = choices("true", "false")
    _, body = raw_post(judge_server)
    assert [c["message"]["content"] for c in json.loads(body)["choices"]] == ["true", "false"]


def test_a_trickle_sends_headers_at_once_and_stops_with_the_server() -> None:
    from tests.support.judge_server import trickle

    judge = ScriptedJudge().start()
    judge.default = trickle(0.05)
    try:
        response, _ = raw_post(judge, read_body=False)
        assert response.status == 200
        first = response.read(5)  # arrives a byte at a time
        assert first == b'{"id"'
    finally:
        judge.stop()  # the handler ends its loop, however much body is left


@pytest.mark.parametrize("coding", ["gzip", "deflate", "raw-deflate", "identity", ""])
def test_the_light_path_decodes_what_it_asks_for_in_small_steps(coding: str) -> None:
    import asyncio
    import zlib
    from collections.abc import AsyncIterator

    import httpx

    from pytest_propositions.judging.faults import Fault
    from pytest_propositions.judging.transport_http import _read_body

    data = b'{"value": true} ' * 1000
    encoded = {
        "gzip": zlib.compress(data, wbits=31),
        "deflate": zlib.compress(data),
        "raw-deflate": zlib.compress(data)[2:-4],  # "deflate" as many servers send it
    }.get(coding, data)

    class Chunks(httpx.AsyncByteStream):
        async def __aiter__(self) -> AsyncIterator[bytes]:
            for start in range(0, len(encoded), 7):
                yield encoded[start : start + 7]

    def response() -> httpx.Response:
        header = "deflate" if coding == "raw-deflate" else coding
        return httpx.Response(200, headers={"content-encoding": header}, stream=Chunks())

    assert asyncio.run(_read_body(response(), len(data), cut=False)) == data
    with pytest.raises(Fault, match=f"larger than {len(data) - 1} bytes") as info:
        asyncio.run(_read_body(response(), len(data) - 1, cut=False))
    assert info.value.kind == "refused_reply"
    assert asyncio.run(_read_body(response(), 100, cut=True)) == data[:100]


def test_the_light_path_refuses_a_coding_it_did_not_ask_for() -> None:
    import asyncio

    import httpx

    from pytest_propositions.judging.faults import Fault
    from pytest_propositions.judging.transport_http import _read_body

    response = httpx.Response(200, headers={"content-encoding": "br"}, content=b"x")
    with pytest.raises(Fault, match="'br', which the client did not ask for") as info:
        asyncio.run(_read_body(response, 100, cut=False))
    assert info.value.kind == "refused_reply"
