"""Real message lists, as their producers wrote them, shown to the judge faithfully (issue 50).

The corpus (tests/data/real_traces/messages/, SOURCES.md says where each file comes from and
how it was made) holds published trajectories (tau-bench, SWE-agent) and recorded replies
replayed offline through the real SDKs (openai's Responses from pydantic-ai's cassettes,
google-genai's streamed chat from opentelemetry-python-contrib's), and LangChain's storage
dicts of a real conversation; and whole agent runs replayed from the cassettes of crewAI (OpenAI
chat, Anthropic with thinking), llm-anthropic (a streamed tool chain with thinking) and
llm-gemini (Gemini REST contents). What the judge reads is ``render_target``'s text.
"""

from __future__ import annotations

import json
import re
import typing
import uuid
from pathlib import Path
from typing import Any

import pytest

import pytest_propositions
from pytest_propositions.claims.targets import RenderOptions, as_target_list, render_context

CORPUS = Path(__file__).parent / "data" / "real_traces" / "messages"


def load(name: str) -> Any:
    return json.loads((CORPUS / name).read_text(encoding="utf-8"))


def shown(target: Any, **window: Any) -> str:
    return pytest_propositions.render_target(target, **window)


def event_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("Event #")]


# -- SWE-agent: results name their tool through tool_call_ids ------------------------------------

SWE_AGENT = [
    "swe_agent_function_calling_simple.json",
    "swe_agent_marshmallow_1867_function_calling_replace.json",
]


@pytest.mark.parametrize("name", SWE_AGENT)
def test_swe_agent_results_are_named_by_the_calls_they_answer(name: str) -> None:
    history = load(name)["history"]
    lines = event_lines(shown(history))
    calls = [m for m in history if m["role"] == "assistant" for _ in m.get("tool_calls") or ()]
    results = [line for line in lines if "[TOOL_RESULT]" in line]
    assert len(results) == len(calls) == sum(m["role"] == "tool" for m in history)
    # Each result, in order, is named by the tool of the call just before it.
    called = [re.search(r"\[TOOL_CALL\] (\w+)\(", line) for line in lines]
    named = [re.match(r"Event #\d+: tool:(\w+) -->", line) for line in results]
    assert [m.group(1) for m in named if m] == [m.group(1) for m in called if m]


# -- LangChain's storage dicts: read as messages, the same text in every run ---------------------

LANGCHAIN = [
    (f"langchain_tau_bench_task{task}_{shape}.json", f"tau_bench_airline_task{task}.json")
    for task in (2, 6)
    for shape in ("messages_to_dict", "dumpd")
]


def _with_fresh_ids(stored: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The same messages as another run stores them: every message with a new run id."""
    fresh = json.loads(json.dumps(stored))
    for message in fresh:
        body = message.get("data", message.get("kwargs"))
        body["id"] = f"run-{uuid.uuid4()}"
    return fresh


@pytest.mark.parametrize(("name", "conversation"), LANGCHAIN)
def test_langchain_storage_dicts_are_the_conversation(name: str, conversation: str) -> None:
    stored = load(name)["messages"]
    text = shown(stored)
    assert text.startswith("## Transcript\n")
    assert "(LangChain messages, " in text
    # The very events of the conversation LangChain read them from (tau-bench's, as OpenAI chat).
    assert event_lines(text) == event_lines(shown(load(conversation)["traj"]))
    # Another run's ids change nothing: the same text, so the same cache key.
    assert shown(_with_fresh_ids(stored)) == text
    assert shown({"messages": stored}) == text  # a LangGraph state holding them


# -- Gemini: a streamed answer is one event ------------------------------------------------------

GEMINI = [
    "gemini_stream_history_sync.json",
    "gemini_stream_history_async.json",
    "gemini_stream_history_sync_2.json",
]


@pytest.mark.parametrize("name", GEMINI)
def test_gemini_streamed_answer_is_one_event_and_last_n_keeps_it_whole(name: str) -> None:
    recorded = load(name)
    history = recorded["history"]
    assert len(history) == recorded["chunks"] + 1  # the prompt, then one content per chunk
    answer = "".join(part["text"] for content in history[1:] for part in content["parts"])
    text = shown(history)
    assert "(Gemini contents, 2 events)" in text
    last = shown(history, last_n=1)
    assert "... 1 event omitted (#0) ..." in last
    body = last.split("Event #1: model acts: [TALK] ", 1)[1].rsplit("\n---- END", 1)[0]
    assert body.replace("\n    ", "\n") == answer  # whole, with no sentence cut
    # The same history as the SDK's own Content objects, as get_history() returns it.
    genai_types = pytest.importorskip("google.genai.types", reason="google-genai not installed")
    assert shown([genai_types.Content.model_validate(content) for content in history]) == text


# -- OpenAI Responses: citations, compaction, tool search ----------------------------------------

CITATIONS = ["responses_web_search_citations.json", "responses_web_search_raw_annotations.json"]


def _responses(name: str) -> list[Any]:
    recorded = load(name)
    return [*recorded["input"], *recorded["output"]]


@pytest.mark.parametrize("name", CITATIONS)
def test_responses_url_citations_reach_the_judge(name: str) -> None:
    items = _responses(name)
    cited = [
        note
        for item in items
        if item.get("type") == "message"
        for part in item["content"]
        for note in part.get("annotations") or ()
    ]
    assert cited
    text = shown(items)
    for note in cited:
        assert f"- {note['title']} <{note['url']}>" in text


@pytest.mark.parametrize("name", CITATIONS[:1])
def test_responses_citations_of_the_sdks_typed_output(name: str) -> None:
    responses = pytest.importorskip("openai.types.responses", reason="openai not installed")
    from pydantic import TypeAdapter

    recorded = load(name)
    adapter: TypeAdapter[Any] = TypeAdapter(responses.ResponseOutputItem)
    typed = [adapter.validate_python(item) for item in recorded["output"]]
    text = shown([*recorded["input"], *typed])
    assert text.count("Sources cited:") == 1
    assert "- Death toll rises to 46 in Israeli raids on Yemen <https://www.reuters.com/" in text


def test_responses_compaction_is_read_where_it_stands() -> None:
    recorded = load("responses_compaction.json")
    # The request as sent: the compaction item, then the next question.
    sent = event_lines(shown(recorded["input"]))
    assert len(sent) == 2
    assert sent == [
        "Event #0: openai --> assistant: [COMPACTION] the earlier conversation was compacted "
        "into an encrypted item; its content is not visible here",
        "Event #1: user --> assistant: [CONVERSATION] And 5+5?",
    ]
    lines = event_lines(shown(_responses("responses_compaction.json")))
    assert [line.split("[", 1)[1].split("]")[0] for line in lines] == [
        "COMPACTION",
        "CONVERSATION",
        "TALK",
    ]
    assert lines[-1].endswith("[TALK] 5 + 5 = 10")
    # What responses.compact returned: the user's turns kept, the rest compacted.
    kept = event_lines(shown(recorded["compacted"]))
    assert [line.split("] ", 1)[1][:12] for line in kept] == [
        "What is 2+2?",
        "And 3+3?",
        "the earlier ",
    ]


def test_responses_tool_search_is_a_call_and_its_result() -> None:
    lines = event_lines(shown(_responses("responses_tool_search.json")))
    assert lines[1:] == [
        'Event #1: assistant acts: [TOOL_CALL] tool_search({"paths": ["tools"]})',
        "Event #2: tool:tool_search --> assistant: [TOOL_RESULT] tools found: "
        "tools.get_exchange_rate, tools.stock_lookup, tools.mortgage_calculator",
        "Event #3: assistant acts: [TOOL_CALL] get_exchange_rate("
        '{"from_currency": "USD", "to_currency": "EUR"})',
    ]


def _union_types(union: Any) -> set[str]:
    """The ``type`` literals of a union of the SDK's item classes (models or TypedDicts)."""
    if typing.get_origin(union) is typing.Annotated:
        union = typing.get_args(union)[0]
    found: set[str] = set()
    for member in typing.get_args(union):
        fields = getattr(member, "model_fields", None)
        annotation = fields["type"].annotation if fields else member.__annotations__["type"]
        # A model's annotation is a Literal; a TypedDict's a ForwardRef to "Required[Literal[..]]".
        found.update(re.findall(r"'([a-z_]+)'", str(annotation)))
    return found


def test_every_responses_item_type_of_the_sdk_is_read_or_refused_by_name() -> None:
    from pytest_propositions.claims.format_openai import RESPONSES_ITEM_TYPES

    responses = pytest.importorskip("openai.types.responses", reason="openai not installed")
    unions = ("ResponseInputItem", "ResponseOutputItem", "ResponseItem", "ResponseInputItemParam")
    sdk = set().union(*(_union_types(getattr(responses, name)) for name in unions))
    assert len(sdk) > 25
    assert sdk - RESPONSES_ITEM_TYPES == set(), "a Responses item type nobody decided about"
    user = {"role": "user", "content": [{"type": "input_text", "text": "Go on."}]}
    for kind in sorted(sdk - {"message"}):
        for items in ([user, {"type": kind}], [{"type": kind}, {"role": "user", "content": "x"}]):
            try:
                text = shown(items)
            except (TypeError, ValueError) as error:
                assert repr(kind) in str(error), (kind, str(error))
                assert "OpenAI Responses item" in str(error), (kind, str(error))
                assert "chat message" not in str(error), (kind, str(error))
            else:
                assert "(OpenAI Responses items, 2 events)" in text or (
                    "(OpenAI Responses items, 3 events)" in text
                ), (kind, text)


def test_an_unknown_item_type_is_named_not_blamed_on_a_missing_role() -> None:
    items = [{"type": "hologram_call", "id": "h_1"}, {"role": "user", "content": "Hello"}]
    with pytest.raises(ValueError, match=r"item #0 of the list has the type 'hologram_call'"):
        shown(items)


# -- agent runs from cassettes: crewAI (OpenAI chat, Anthropic), llm-anthropic, llm-gemini -------

CREWAI_CHATS = [
    "crewai_parallel_native_tool_calls.json",
    "crewai_max_usage_count_native_tool_calls.json",
    "crewai_native_tool_calling_error.json",
]


def _kinds(lines: list[str]) -> list[str]:
    return [line.split(": [", 1)[1].split("]", 1)[0] for line in lines]


@pytest.mark.parametrize("name", CREWAI_CHATS)
def test_crewai_runs_show_each_call_and_its_named_result_in_order(name: str) -> None:
    messages = load(name)["messages"]
    lines = event_lines(shown(messages))
    calls = [c for m in messages if m["role"] == "assistant" for c in m.get("tool_calls") or ()]
    shown_calls = [line for line in lines if "[TOOL_CALL]" in line]
    assert len(shown_calls) == len(calls)  # no phantom call, none lost
    for line, call in zip(shown_calls, calls, strict=True):
        assert f"[TOOL_CALL] {call['function']['name']}(" in line
    # Each result named by the call it answers (crewAI writes "name" on some, the id on all).
    called = {call["id"]: call["function"]["name"] for call in calls}
    results = [m for m in messages if m["role"] == "tool"]
    shown_results = [line for line in lines if "[TOOL_RESULT]" in line]
    assert [line.split(" -->", 1)[0].split(": ", 1)[1] for line in shown_results] == [
        f"tool:{called[m['tool_call_id']]}" for m in results
    ]
    for line, result in zip(shown_results, results, strict=True):
        assert line.endswith(result["content"].splitlines()[0])
    # The answer the SDK returned last is the last event, as the assistant's.
    assert lines[-1].startswith(f"Event #{len(lines) - 1}: assistant acts: [TALK] ")


def test_crewai_parallel_calls_come_before_their_results() -> None:
    lines = event_lines(shown(load("crewai_parallel_native_tool_calls.json")["messages"]))
    assert _kinds(lines) == [
        "SYSTEM",
        "CONVERSATION",
        *["TOOL_CALL"] * 3,
        *["TOOL_RESULT"] * 3,
        "TALK",
    ]
    assert lines[5] == (
        "Event #5: tool:parallel_local_search_one --> assistant: [TOOL_RESULT] "
        "[one] latest OpenAI model release notes"
    )


def test_crewai_refused_call_keeps_the_refusal_the_agent_was_given() -> None:
    text = shown(load("crewai_max_usage_count_native_tool_calls.json")["messages"])
    assert (
        "Event #9: tool:counting_tool --> assistant: [TOOL_RESULT] Tool 'counting_tool' has "
        "reached its usage limit of 3 times and cannot be used anymore." in text
    )


ANTHROPIC_THINKING = [
    ("crewai_anthropic_thinking_across_turns.json", 2),
    ("llm_anthropic_thinking_tool_chain_stream.json", 1),
]


@pytest.mark.parametrize(("name", "thoughts"), ANTHROPIC_THINKING)
def test_anthropic_thinking_is_shown_before_what_it_led_to(name: str, thoughts: int) -> None:
    messages = load(name)["messages"]
    text = shown(messages)
    assert f"(Anthropic messages, {len(event_lines(text))} events)" in text
    lines = event_lines(text)
    blocks = [b for m in messages if m["role"] == "assistant" for b in m["content"]]
    thinking = [b["thinking"] for b in blocks if b["type"] == "thinking"]
    assert len(thinking) == thoughts == sum("[THINK]" in line for line in lines)
    for line, thought in zip([line for line in lines if "[THINK]" in line], thinking, strict=True):
        assert line.endswith(f"[THINK] {thought.splitlines()[0]}")
    # A signature is not the model's words: not shown.
    assert not [b for b in blocks if b.get("signature") and b["signature"][:24] in text]
    # Thinking, then what it led to, in the order the model wrote them.
    for i, kind in enumerate(_kinds(lines)):
        if kind == "THINK":
            assert _kinds(lines)[i + 1] in ("TALK", "TOOL_CALL")


def test_anthropic_streamed_tool_chain_names_the_result_and_keeps_the_answer_whole() -> None:
    messages = load("llm_anthropic_thinking_tool_chain_stream.json")["messages"]
    lines = event_lines(shown(messages))
    assert _kinds(lines) == ["CONVERSATION", "THINK", "TOOL_CALL", "TOOL_RESULT", "TALK"]
    assert lines[2:4] == [
        "Event #2: assistant acts: [TOOL_CALL] fixed_version({})",
        "Event #3: tool:fixed_version --> assistant: [TOOL_RESULT] 0.32a0",
    ]
    answer = messages[-1]["content"][0]["text"]
    assert shown(messages).count("0.32a good time") == answer.count("0.32a good time") == 1


def test_gemini_rest_call_after_an_empty_text_part_is_no_empty_talk() -> None:
    recorded = load("llm_gemini_tools_thought_signatures.json")
    contents = recorded["contents"]
    assert contents[1]["parts"][0] == {"text": ""}  # what Gemini 3 wrote before its call
    assert len(contents) == 3 + recorded["chunks"]
    lines = event_lines(shown(contents))
    assert lines == [
        "Event #0: user --> model: [CONVERSATION] What is 5 times 3?",
        'Event #1: model acts: [TOOL_CALL] multiply({"x": 5, "y": 3})',
        'Event #2: tool:multiply --> model: [TOOL_RESULT] {"output": "15"}',
        "Event #3: model acts: [TALK] 5 times 3 is 15.",
    ]
    # A reply that says nothing at all is still an event, shown empty.
    empty = shown([contents[0], {"role": "model", "parts": [{"text": ""}]}])
    assert event_lines(empty)[-1] == "Event #1: model acts: [TALK]"


# -- what the judge is shown, by its public name -------------------------------------------------


def test_render_target_is_what_a_claim_sends() -> None:
    assert "render_target" in pytest_propositions.__all__
    items = load("tau_bench_airline_task2.json")["traj"]
    expected = render_context(as_target_list(items), RenderOptions(first_n=1, last_n=2))
    assert pytest_propositions.render_target(items, first_n=1, last_n=2) == expected
    with pytest.raises(ValueError, match="last_n"):
        pytest_propositions.render_target(items, last_n=-1)
