"""Model families: what each is sent, what the key records, and each family end to end.

The end-to-end tests reach the scripted server over real HTTP, each once through litellm and
once through the light path, the server behaving as the family does (OpenAI reasoning models,
Azure deployments, local reasoning models).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from pytest_propositions import JudgeUnavailable, Proposition
from pytest_propositions.judging import families
from pytest_propositions.judging.endpoint import Connection
from pytest_propositions.judging.judge import Judge, JudgeRequest
from pytest_propositions.judging.prompts import PROMPT_VERSION
from pytest_propositions.judging.transport_litellm import fault_of, first_response_mode
from pytest_propositions.runtime import Runtime
from pytest_propositions.settings import OPTIONS_BY_NAME, Settings, SettingsError, resolve
from pytest_propositions.store.cache import cache_key
from pytest_propositions.trace import Agent, World
from tests.conftest import LITELLM_PATH
from tests.support.active_run import active
from tests.support.judge_server import (
    AZURE_JSON_SCHEMA_REJECTION,
    AZURE_MODEL_JSON_SCHEMA_REJECTION,
    ScriptedJudge,
    text,
    verdict,
)
from tests.support.outcomes import assert_counts

OPENAI_REASONING_EFFORTS = frozenset({"minimal", "low", "medium", "high"})


@pytest.fixture
def transport_path(both_paths: str) -> str:
    """Every end-to-end test here runs through litellm and through the light path."""
    return both_paths


# -- the table ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "temperature", "efforts"),
    [
        ("openai/gpt-4.1-mini", True, ""),
        ("openai/judge-model", True, ""),
        ("local", True, ""),
        ("azure/gpt-35-turbo", True, ""),
        ("openai/gpt-5-chat-latest", True, ""),
        ("anthropic/claude-sonnet-4-5", True, ""),
        ("openai/gpt-5-mini", False, "minimal low medium high"),
        ("gpt-5", False, "minimal low medium high"),
        ("azure/gpt-5-nano", False, "minimal low medium high"),
        ("openai/gpt-5.1", False, "low medium high"),
        ("openai/gpt-5-search-api", False, ""),
        ("openai/o3-mini", False, "low medium high"),
        ("openrouter/openai/o4-mini", False, "low medium high"),
        ("openai/O1", False, "low medium high"),
        ("openai/o1-mini", False, ""),
    ],
)
def test_the_family_of_a_model_follows_from_its_name(
    model: str, temperature: bool, efforts: str
) -> None:
    family = families.family_of(model)
    assert family.temperature is temperature
    assert family.efforts == frozenset(efforts.split())


def test_ordinary_models_are_sent_the_temperatures_they_always_were() -> None:
    for effort in (None, "high"):
        assert families.sampling("openai/gpt-4.1-mini", "check", effort) == {"temperature": 0.5}
        assert families.sampling("openai/gpt-4.1-mini", "score", effort) == {"temperature": 1.0}


def test_reasoning_models_get_no_temperature_and_the_effort_when_set() -> None:
    assert families.sampling("openai/gpt-5-mini", "check", None) == {}
    assert families.sampling("openai/o3", "score", "low") == {"reasoning_effort": "low"}
    assert families.follow_up_sampling("openai/o3", None) == {}
    assert families.follow_up_sampling("openai/gpt-4o", None) == {"temperature": 0.7}
    with pytest.raises(families.UnsupportedEffort, match="takes low, medium, high"):
        families.sampling("openai/o3-mini", "check", "minimal")


# -- the key -----------------------------------------------------------------------------------

REQUEST = JudgeRequest("check", "Oscar talks.", "m", ({"role": "user", "content": "Oscar talks."},))


def key_material(model: str, effort: str | None = None, kind: str = "check") -> dict[str, Any]:
    judge = Judge(Settings(model=model, reasoning_effort=effort), cache=None)
    request = JudgeRequest(kind, REQUEST.claim, model, REQUEST.messages)  # type: ignore[arg-type]
    return judge._key_material(request, Connection(model, model)).as_json()


def test_the_key_of_an_ordinary_model_is_what_it_was_before_families() -> None:
    # The material exactly as the judge built it before model families existed, so verdicts
    # recorded then are still found (a reasoning effort is not sent to this model).
    material = key_material("openai/judge-model", effort="high")
    assert material == {
        "prompt_version": PROMPT_VERSION,
        "model": "openai/judge-model",
        "messages": [{"role": "user", "content": "Oscar talks."}],
        "sampling": {"temperature": 0.5},
        "kind": "check",
        "double_check": False,
        "sample_index": 0,
    }
    assert json.dumps(material["sampling"]) == '{"temperature": 0.5}'


def test_the_key_records_what_a_reasoning_model_is_sent() -> None:
    assert key_material("openai/gpt-5-mini")["sampling"] == {}
    assert key_material("openai/gpt-5-mini", "low")["sampling"] == {"reasoning_effort": "low"}
    assert cache_key(key_material("openai/gpt-5-mini", "low")) != cache_key(
        key_material("openai/gpt-5-mini", "high")
    )


def test_an_effort_the_model_lacks_is_an_error_naming_the_levels() -> None:
    with pytest.raises(JudgeUnavailable, match="minimal is not a level openai/o3-mini takes"):
        key_material("openai/o3-mini", "minimal")


# -- the option --------------------------------------------------------------------------------


def test_reasoning_effort_has_flag_env_and_ini_twins() -> None:
    assert resolve({}, {"PROP_REASONING_EFFORT": "High"}, {}).reasoning_effort == "high"
    assert (
        resolve({"reasoning_effort": "low"}, {}, {"reasoning_effort": "medium"}).reasoning_effort
        == "low"
    )
    assert resolve({}, {}, {"reasoning_effort": "medium"}).reasoning_effort == "medium"
    assert resolve({}, {}, {}).reasoning_effort is None
    with pytest.raises(SettingsError, match=r"PROP_REASONING_EFFORT.*minimal, low, medium, high"):
        resolve({}, {"PROP_REASONING_EFFORT": "max"}, {})
    assert OPTIONS_BY_NAME["reasoning_effort"].help_text().endswith("Default: not set.")


# -- replies -----------------------------------------------------------------------------------

# -- what litellm knows ------------------------------------------------------------------------


def test_the_table_agrees_with_litellms_map(litellm_preloaded: None) -> None:
    """Every OpenAI and Azure chat model litellm knows: a temperature litellm would refuse is
    never sent, and every effort level the table sends is one litellm passes on."""
    import litellm

    checked = 0
    for name, entry in litellm.model_cost.items():
        if not isinstance(entry, dict) or entry.get("mode") != "chat":
            continue
        provider = entry.get("litellm_provider")
        if provider not in ("openai", "azure"):
            continue
        family = families.family_of(name)
        try:
            litellm.get_optional_params(model=name, custom_llm_provider=provider, temperature=0.5)
        except litellm.UnsupportedParamsError:
            assert not family.temperature, name
        for level in family.efforts:
            sent = litellm.get_optional_params(
                model=name, custom_llm_provider=provider, reasoning_effort=level
            )
            assert sent.get("reasoning_effort") == level, (name, level)
        checked += 1
    assert checked > 100


def test_a_refusal_by_litellm_is_recognised_and_has_no_http_status(
    litellm_preloaded: None,
) -> None:
    import litellm

    try:
        litellm.get_optional_params(
            model="gpt-5-mini", custom_llm_provider="openai", temperature=0.5
        )
    except litellm.UnsupportedParamsError as error:
        assert error.status_code == 400  # what litellm claims
        assert fault_of(error).kind == "client_refused"
        assert fault_of(error).status is None
    else:
        pytest.fail("litellm sent temperature=0.5 to gpt-5-mini")


def test_the_first_response_mode_follows_litellms_map(litellm_preloaded: None) -> None:
    import litellm

    modes = ("json_schema", "json_object", "text")
    assert first_response_mode(litellm, "openai/gpt-4o-mini", modes) == "json_schema"
    assert first_response_mode(litellm, "openai/judge-model", modes) == "json_schema"
    assert first_response_mode(litellm, "openai/gpt-3.5-turbo", modes) == "json_object"
    assert first_response_mode(litellm, "openai/gpt-4", modes) == "text"


# -- end to end: the scripted server as each family ---------------------------------------------


def post(judge: ScriptedJudge, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(
        f"{judge.base_url}/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


MESSAGES = [{"role": "user", "content": "hi"}]


def test_the_server_refuses_parameters_as_openai_does(judge_server: ScriptedJudge) -> None:
    assert post(judge_server, {"messages": MESSAGES, "reasoning_effort": "low"}) == (
        400,
        {
            "error": {
                "message": "Unsupported parameter: 'reasoning_effort' is not supported with this "
                "model.",
                "type": "invalid_request_error",
                "param": "reasoning_effort",
                "code": "unsupported_parameter",
            }
        },
    )
    judge_server.reasoning_efforts = frozenset({"low", "medium", "high"})
    assert post(judge_server, {"messages": MESSAGES, "temperature": 0.5}) == (
        400,
        {
            "error": {
                "message": "Unsupported value: 'temperature' does not support 0.5 with this model. "
                "Only the default (1) value is supported.",
                "type": "invalid_request_error",
                "param": "temperature",
                "code": "unsupported_value",
            }
        },
    )
    code, body = post(judge_server, {"messages": MESSAGES, "reasoning_effort": "minimal"})
    assert code == 400
    assert body["error"]["message"] == (
        "Unsupported value: 'reasoning_effort' does not support 'minimal' with this model. "
        "Supported values are: 'low', 'medium', and 'high'."
    )
    assert post(judge_server, {"messages": MESSAGES, "temperature": 1})[0] == 200


CLAIMS = """
def test_true(world, assert_proposition):
    assert_proposition(world, "Oscar likes quiet cities.")

def test_false(world, assert_proposition):
    assert_proposition(world, "Oscar hates cities.")

def test_score(world, min_score):
    min_score(world, "Oscar is polite.", 5)
"""


def script_claims(judge: ScriptedJudge) -> None:
    judge.on("Oscar hates cities.", verdict(False, justification="He likes them."))
    judge.on("Oscar is polite.", verdict(7))


@pytest.mark.parametrize("effort", [None, "low"])
def test_an_openai_reasoning_model_is_asked_as_it_must_be(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, inner_run: list[str], effort: str | None
) -> None:
    judge_server.reasoning_efforts = OPENAI_REASONING_EFFORTS
    script_claims(judge_server)
    pytester.makepyfile(CLAIMS)
    arguments = [*inner_run, "--prop-model=openai/gpt-5-mini"]
    if effort is not None:
        arguments.append(f"--prop-reasoning-effort={effort}")
    result = pytester.runpytest(*arguments)
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*PropositionFailed*"])
    result.stdout.no_fnmatch_line("*JudgeUnavailable*")
    requests = judge_server.requests
    assert len(requests) == 3
    for request in requests:
        assert request.model == "gpt-5-mini"
        assert "temperature" not in request.body
        assert request.body.get("reasoning_effort") == effort


def test_the_server_refuses_a_temperature_the_table_did_not_foresee(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, inner_run: list[str]
) -> None:
    # A reasoning model behind a name neither the table nor litellm knows: the server's own
    # 400 is reported, with its status, because a server did send it.
    judge_server.reasoning_efforts = OPENAI_REASONING_EFFORTS
    pytester.makepyfile(CLAIMS.split("def test_false")[0])
    result = pytester.runpytest(*inner_run)
    assert_counts(result, judge_errors=1)
    result.stdout.fnmatch_lines(
        ["*JudgeUnavailable*(HTTP 400)*Unsupported value: 'temperature' does not support 0.5*"]
    )


@pytest.fixture
def in_process(
    request: pytest.FixtureRequest,
    judge_server: ScriptedJudge,
    monkeypatch: pytest.MonkeyPatch,
    transport_path: str,
) -> Iterator[None]:
    """The Proposition API judged by the scripted server with the model given as the fixture's
    parameter, with no cache and no retries."""
    monkeypatch.setenv("PROP_API_KEY", "test-key-not-real")
    runtime = Runtime(
        Settings(
            model=request.param,
            api_base=judge_server.base_url,
            cache="off",
            retries=0,
            timeout=10,
            transport=transport_path,
        )
    )
    with active(runtime):
        yield


def world() -> World:
    oscar = Agent("Oscar")
    room = World("Room", agents=[oscar])
    oscar.says("Quiet cities with great architecture.")
    return room


@pytest.mark.parametrize("both_paths", [LITELLM_PATH])  # litellm's own refusal
@pytest.mark.parametrize("in_process", ["openai/gpt-5-mini"], indirect=True)
def test_a_refusal_by_litellm_is_reported_as_one(
    judge_server: ScriptedJudge, in_process: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Were the table to miss a reasoning model litellm knows, litellm refuses the temperature
    # before sending anything: the message says so, and names no HTTP status.
    monkeypatch.setattr(families, "family_of", lambda model: families.STANDARD)
    proposition = Proposition("Oscar likes quiet cities.", world())
    with pytest.raises(JudgeUnavailable) as caught:
        proposition.check()
    message = str(caught.value)
    assert "litellm refused the request before sending it" in message
    assert "no request reached the server" in message
    assert "temperature=0.5" in message
    assert "drop_params would send other parameters" in message
    assert "HTTP" not in message
    assert caught.value.status is None
    assert judge_server.requests == []


@pytest.mark.parametrize("both_paths", [LITELLM_PATH])  # litellm's own refusal
@pytest.mark.parametrize("in_process", ["openai/gpt-5-search-api"], indirect=True)
def test_a_parameter_litellm_lists_as_unsupported_is_refused_up_front(
    judge_server: ScriptedJudge, in_process: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(families, "family_of", lambda model: families.STANDARD)
    proposition = Proposition("Oscar talks.", world())
    with pytest.raises(
        JudgeUnavailable,
        match=r"litellm reports that openai/gpt-5-search-api "
        r"takes no temperature.*no request reached the server",
    ):
        proposition.check()
    assert judge_server.requests == []


@pytest.mark.parametrize(
    ("api_version", "structured", "formats"),
    [
        # litellm knows these versions lack json_schema, and asks for a forced function call;
        # the light path knows it too, and asks for JSON mode.
        ("2024-06-01", True, {"litellm": [None], "openai": ["json_object"]}),
        ("2024-10-21", True, {"litellm": ["json_schema"], "openai": ["json_schema"]}),
        # A deployed model without structured outputs refuses json_schema: JSON mode next.
        ("2024-10-21", False, {p: ["json_schema", "json_object"] for p in ("litellm", "openai")}),
    ],
)
def test_an_azure_deployment_is_asked_in_a_format_it_takes(
    pytester: pytest.Pytester,
    judge_server: ScriptedJudge,
    inner_run: list[str],
    monkeypatch: pytest.MonkeyPatch,
    transport_path: str,
    api_version: str,
    structured: bool,
    formats: dict[str, list[str | None]],
) -> None:
    monkeypatch.setenv("AZURE_API_VERSION", api_version)
    judge_server.azure_structured_outputs = structured
    pytester.makepyfile(CLAIMS.split("def test_false")[0])
    result = pytester.runpytest(
        *inner_run, "--prop-model=azure/judge-deployment", f"--prop-api-base={judge_server.url}"
    )
    result.assert_outcomes(passed=1)
    requests = judge_server.requests
    assert [(r.response_format or {}).get("type") for r in requests] == formats[transport_path]
    for request in requests:
        assert request.path == "/openai/deployments/judge-deployment/chat/completions"
        assert request.headers.get("api-key") == "test-key-not-real"
        assert request.body["temperature"] == 0.5


def test_the_azure_route_refuses_json_schema_on_older_versions(judge_server: ScriptedJudge) -> None:
    body = {"messages": MESSAGES, "response_format": {"type": "json_schema", "json_schema": {}}}
    request = urllib.request.Request(
        f"{judge_server.url}/openai/deployments/d/chat/completions?api-version=2024-06-01",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "api-key": "test-key-not-real"},
    )
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=10)
    assert caught.value.code == 400
    assert json.loads(caught.value.read()) == {
        "error": {"code": "BadRequest", "message": AZURE_JSON_SCHEMA_REJECTION}
    }
    assert "structured outputs" in AZURE_MODEL_JSON_SCHEMA_REJECTION.lower()


# What a local reasoning model thinks before it answers: a block that opens the reply is its
# scratchpad whatever it holds (drafts of the verdict included); a block whose opening tag the
# chat template wrote is seen only by its end, so what comes before that end must state no
# verdict (it might be the answer itself), and here argues for the opposite in prose.
SCRATCHPADS = {
    False: 'Is it false? I would answer {"value": false} and "value": true for the other.\n'
    "VERDICT: false\nFalse.",
    True: "Is it false? He might dislike them after all. False, I would say at first.",
}


@pytest.mark.parametrize("opened_by_template", [False, True])
def test_a_local_reasoning_models_thinking_does_not_decide_the_verdict(
    pytester: pytest.Pytester,
    judge_server: ScriptedJudge,
    inner_run: list[str],
    opened_by_template: bool,
) -> None:
    # The scratchpad argues for the opposite verdict each time; only the answer counts. (litellm
    # itself moves a block that opens the reply into reasoning_content; the judge strips the
    # rest: a block the chat template opened, or one after leading whitespace.)
    judge_server.thinking = SCRATCHPADS[opened_by_template]
    judge_server.thinking_opened_by_template = opened_by_template
    script_claims(judge_server)
    pytester.makepyfile(CLAIMS)
    result = pytester.runpytest(*inner_run)
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*PropositionFailed*Oscar hates cities*", "*He likes them.*"])
    result.stdout.no_fnmatch_line("*VerdictUnparsable*")


@pytest.mark.parametrize("draft", ["VERDICT: false", 'So {"value": false}, I think.'])
def test_a_verdict_before_a_closing_tag_that_does_not_open_the_reply_is_no_verdict(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, inner_run: list[str], draft: str
) -> None:
    # The template opened the block, or the text before the tag is an answer and the tag a quote:
    # the reply reads two ways, so no claim passes; each is a judge error, asked twice.
    judge_server.thinking = f"Let me think.\n{draft}\nNow the answer."
    judge_server.thinking_opened_by_template = True
    pytester.makepyfile(CLAIMS)
    result = pytester.runpytest(*inner_run)
    assert_counts(result, judge_errors=3)
    result.stdout.fnmatch_lines(["*VerdictUnparsable*"])
    result.stdout.no_fnmatch_line("*PropositionFailed*")
    assert len(judge_server.requests) == 6


def test_thinking_that_never_ends_is_no_verdict(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, inner_run: list[str]
) -> None:
    # The model ran out of tokens while thinking: a draft in its scratchpad is no answer.
    draft = verdict(True, reasoning="A first draft.").content()
    judge_server.default = text(f"<think>\nLet me draft it: {draft} Now check the draft")
    pytester.makepyfile(CLAIMS.split("def test_false")[0])
    result = pytester.runpytest(*inner_run)
    assert_counts(result, judge_errors=1)
    result.stdout.fnmatch_lines(["*VerdictUnparsable*"])


@pytest.mark.parametrize("in_process", ["openai/o3-mini"], indirect=True)
def test_a_reasoning_models_follow_up_carries_no_temperature(
    judge_server: ScriptedJudge, in_process: None
) -> None:
    judge_server.reasoning_efforts = frozenset({"low", "medium", "high"})
    judge_server.on("step out of the judging role", text("Let Oscar name a city."))
    proposition = Proposition("Oscar names a city.", world())
    assert proposition.check() is True
    assert proposition.recommendations_for_improvement() == "Let Oscar name a city."
    assert [("temperature" in r.body) for r in judge_server.requests] == [False, False]


def test_an_effort_a_model_does_not_take_is_logged_once_and_not_sent(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level("WARNING", logger="pytest_propositions"):
        material = key_material("openai/gpt-4.1-mini", "high")
        judge = Judge(Settings(reasoning_effort="high"), cache=None)
        connection = Connection("openai/gpt-4.1-mini", "openai/gpt-4.1-mini")
        for _ in range(2):
            judge._key_material(REQUEST, connection)
    assert material["sampling"] == {"temperature": 0.5}
    warnings = [r.getMessage() for r in caplog.records if "not sent" in r.getMessage()]
    assert (
        warnings
        == [
            "--prop-reasoning-effort=high is not sent to openai/gpt-4.1-mini: its model family takes "
            "no reasoning effort"
        ]
        * 2
    )  # once for each judge
