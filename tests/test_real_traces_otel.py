"""What the judge is shown for real trace exports (tests/data/real_traces/otel/, SOURCES.md there).

Each file was written by a real SDK and instrumentation (opentelemetry-instrumentation-openai-v2,
openinference-instrumentation-openai and -langchain with LangGraph, pydantic-ai's own) from a
public project's recorded HTTP traffic, so these pin the shapes the instrumentations write, not
shapes written here. Each expected list is the run's real events, in order, each once.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from pytest_propositions import render_target

CORPUS = Path(__file__).parent / "data" / "real_traces" / "otel"
MAKE = CORPUS / "make" / "make_traces.py"

SYSTEM = "system --> assistant: [SYSTEM] You're a helpful assistant."
ASK = "user --> assistant: [CONVERSATION] What's the weather in Seattle and San Francisco today?"
CALL_SEATTLE = 'assistant acts: [TOOL_CALL] get_current_weather({"location": "Seattle, WA"})'
CALL_SF = 'assistant acts: [TOOL_CALL] get_current_weather({"location": "San Francisco, CA"})'
RAINING = "tool:get_current_weather --> assistant: [TOOL_RESULT] 50 degrees and raining"
SUNNY = "tool:get_current_weather --> assistant: [TOOL_RESULT] 70 degrees and sunny"
ANSWER = (
    "assistant acts: [TALK] Today, the weather in Seattle is 50 degrees and raining, while in "
    "San Francisco, it's 70 degrees and sunny."
)
#: The contrib cassette's conversation: two model calls, each its own trace.
WEATHER = [SYSTEM, ASK, CALL_SEATTLE, CALL_SF, RAINING, SUNNY, ANSWER]

TOKYO = [
    "system --> assistant: [SYSTEM] You are a helpful assistant.",
    "user --> assistant: [CONVERSATION] What is the temperature in Tokyo?",
    'assistant acts: [TOOL_CALL] get_temperature({"city": "Tokyo"})',
    "tool:get_temperature --> assistant: [TOOL_RESULT] 20.0",
    "assistant acts: [TALK] The temperature in Tokyo is currently 20.0 degrees Celsius.",
]

EXPECTED: dict[str, list[str]] = {
    "openai_v2_tool_calls.json": WEATHER,
    "openai_v2_tool_calls.otlp.json": WEATHER,
    "openinference_openai_two_calls.json": WEATHER,
    "openai_v2_with_content.json": [
        "user --> assistant: [CONVERSATION] Say this is a test",
        "assistant acts: [TALK] This is a test.",
    ],
    "openai_v2_tools_streaming.json": [SYSTEM, ASK, CALL_SEATTLE, CALL_SF],
    "openinference_openai_tool_calls.json": [
        'assistant acts: [TOOL_CALL] get_weather({"city": "New York"})',
        'assistant acts: [TOOL_CALL] get_population({"city": "New York"})',
        'tool:get_weather --> assistant: [TOOL_RESULT] {"city": "New York", "weather": "fine"}',
        'tool:get_population --> assistant: [TOOL_RESULT] {"city": "New York", "weather": "large"}',
        "assistant acts: [TALK] In New York the weather is fine and the population is large.",
        "user --> assistant: [CONVERSATION] What's the weather and population in San Francisco?",
        'assistant acts: [TOOL_CALL] get_weather({"city": "San Francisco"})',
        'assistant acts: [TOOL_CALL] get_population({"city": "San Francisco"})',
    ],
    # The two tools ran in parallel; San Francisco's finished first.
    "openinference_langgraph_weather.json": [
        SYSTEM,
        ASK,
        CALL_SEATTLE,
        CALL_SF,
        SUNNY,
        RAINING,
        ANSWER,
    ],
    "openinference_langgraph_weather.otlp.json": [
        *[SYSTEM, ASK, CALL_SEATTLE, CALL_SF, SUNNY, RAINING, ANSWER]
    ],
    "openinference_langchain_tool_call.json": [
        "user --> assistant: [CONVERSATION] What is 3 * 12? Also, what is 11 + 49?",
        'assistant acts: [TOOL_CALL] multiply({"a": 3, "b": 12})',
        'assistant acts: [TOOL_CALL] add({"a": 11, "b": 49})',
    ],
    "openinference_anthropic_tool_use_in_input.json": [
        "user --> assistant: [CONVERSATION] What is the weather like in San Francisco in "
        "Fahrenheit?",
        "assistant acts: [TALK] Certainly! I can help you get the current weather information "
        "for San Francisco in Fahrenheit. To do this, I'll use the get_weather function. Let me "
        "fetch that information for you right away.",
        'assistant acts: [TOOL_CALL] get_weather({"location": "San Francisco, CA", "unit": '
        '"fahrenheit"})',
        'tool:get_weather --> assistant: [TOOL_RESULT] {"weather": "sunny", "temperature": "75"}',
        "assistant acts: [TALK] The current weather in San Francisco, CA is **sunny** with a "
        "temperature of **75\u00b0F**. It sounds like a beautiful day! \u2600\ufe0f Is there "
        "anything else you'd like to know?",
    ],
    "openinference_anthropic_multiple_tool_calling.json": [
        "user --> assistant: [CONVERSATION] What is the weather like right now in New York? Also "
        "what time is it there? Use necessary tools simultaneously.",
        "assistant acts: [TALK] Sure! Let me fetch the current weather and time in New York "
        "simultaneously!",
        'assistant acts: [TOOL_CALL] get_weather({"location": "New York, NY"})',
        'assistant acts: [TOOL_CALL] get_time({"timezone": "America/New_York"})',
    ],
    "pydantic_ai_v2.json": TOKYO,
    "pydantic_ai_v3.json": TOKYO,
    "pydantic_ai_v4.json": TOKYO,
    "pydantic_ai_v5.json": TOKYO,
    "pydantic_ai_v6.json": TOKYO,
    "pydantic_ai_v5_no_content.json": [
        "user --> assistant: [CONVERSATION] (content not recorded)",
        "assistant acts: [TOOL_CALL] get_temperature(arguments not recorded)",
        "tool:get_temperature --> assistant: [TOOL_RESULT] (content not recorded)",
        "assistant acts: [TALK] (content not recorded)",
    ],
}


def load(name: str) -> Any:
    return json.loads((CORPUS / name).read_text(encoding="utf-8"))


def shown(target: Any) -> list[str]:
    """The events the judge is shown for one target, without their numbers; an event's further
    lines (a text's, an omitted part's) are part of it."""
    text = render_target(target)
    events: list[str] = []
    for line in text.splitlines():
        if line.startswith("Event #"):
            events.append(line.split(": ", 1)[1])
        elif events and not line.startswith("---- END"):
            events[-1] += "\n" + line
    return events


def test_the_corpus_is_every_file_listed_in_sources() -> None:
    files = sorted(p.name for p in CORPUS.glob("*.json"))
    assert files == sorted(EXPECTED)
    sources = (CORPUS / "SOURCES.md").read_text(encoding="utf-8")
    assert all(f"| {name} |" in sources for name in files)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_real_trace_is_shown_as_its_events_in_order_each_once(name: str) -> None:
    assert shown(load(name)) == EXPECTED[name]


@pytest.mark.parametrize(
    "name",
    [
        "openai_v2_tool_calls.json",
        "openai_v2_tool_calls.otlp.json",
        "openinference_openai_two_calls.json",
    ],
)
def test_history_each_call_s_trace_repeats_is_shown_once(name: str) -> None:
    """Each model call is a trace of its own; the second repeats the first's history."""
    events = shown(load(name))
    assert len(events) == 7
    assert sum("[TOOL_CALL]" in event for event in events) == 2
    assert events.count(SYSTEM) == events.count(ASK) == 1


def test_a_conversation_that_does_not_continue_the_one_before_is_shown_whole() -> None:
    """Two runs in one export: the second run's first trace starts over, and is shown whole,
    though it says what the first run said."""
    first = load("openai_v2_tool_calls.json")
    second = _an_hour_later(load("openai_v2_tool_calls.json"))
    assert shown([*first, *second]) == WEATHER + WEATHER
    other = load("openai_v2_with_content.json")
    # Given first, but recorded after: shown in time order.
    assert shown([*other, *first]) == WEATHER + EXPECTED["openai_v2_with_content.json"]


def _an_hour_later(spans: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The same run again, an hour later, in traces of its own."""
    for span in spans:
        span["context"]["trace_id"] += "-again"
        for key in ("start_time", "end_time"):
            span[key] = (datetime.fromisoformat(span[key]) + timedelta(hours=1)).isoformat()
    return spans


def test_the_same_single_call_run_twice_is_shown_twice() -> None:
    """A trace that only says again what was shown adds nothing, so it continues nothing: it is
    another run."""
    once = load("openai_v2_with_content.json")
    twice = [*once, *_an_hour_later(load("openai_v2_with_content.json"))]
    assert shown(twice) == EXPECTED["openai_v2_with_content.json"] * 2


def test_a_tool_span_in_a_trace_of_its_own_continues_the_conversation() -> None:
    """Every span a trace of its own (no parent span anywhere): the tool span's call is the
    call the model's trace ended with, and the next model call's history is not repeated."""
    spans = load("pydantic_ai_v5.json")
    for number, span in enumerate(spans):
        span["context"]["trace_id"] = f"0x{number:032x}"
        span["parent_id"] = None
    assert shown(spans) == TOKYO


def test_an_openinference_tool_span_is_the_result_of_the_call_it_answers() -> None:
    """LangGraph's tool spans answer the model's calls: no second call from their input.value,
    their output.value (a LangChain tool message) shown as its content, and the AGENT and
    CHAIN spans' messages (the graph's state) not read as a model's, so the system prompt
    comes first."""
    for name in (
        "openinference_langgraph_weather.json",
        "openinference_langgraph_weather.otlp.json",
    ):
        events = shown(load(name))
        assert [e for e in events if "[TOOL_CALL]" in e] == [CALL_SEATTLE, CALL_SF]
        assert events[:2] == [SYSTEM, ASK]
        assert not any('"type": "tool"' in e or "__end__" in e for e in events)
        assert sorted(e for e in events if "[TOOL_RESULT]" in e) == [RAINING, SUNNY]
    # A tool message without the call's id: the tool span (input.value "Seattle, WA") still
    # answers the model's call of that tool.
    spans = load("openinference_langgraph_weather.json")
    for span in spans:
        if span["attributes"].get("openinference.span.kind") == "TOOL":
            message = json.loads(span["attributes"]["output.value"])
            del message["data"]["tool_call_id"]
            span["attributes"]["output.value"] = json.dumps(message)
    assert [e for e in shown(spans) if "[TOOL_CALL]" in e] == [CALL_SEATTLE, CALL_SF]


def test_a_tool_message_with_an_error_status_is_an_error_result_once() -> None:
    """LangGraph's ToolNode returns a tool's exception as a tool message with status "error"
    (the span itself ends OK): its content is shown as an error result, and the same message
    in the next model call's history is not shown again."""
    spans = load("openinference_langgraph_weather.json")
    for span in spans:
        output = span["attributes"].get("output.value", "")
        if span["attributes"].get("openinference.span.kind") == "TOOL" and "raining" in output:
            message = json.loads(output)
            message["data"]["status"] = "error"
            span["attributes"]["output.value"] = json.dumps(message)
    results = [e for e in shown(spans) if "[TOOL_RESULT]" in e]
    assert results == [SUNNY, RAINING.replace("[TOOL_RESULT] ", "[TOOL_RESULT] (error) ")]


def test_pydantic_ai_s_tool_results_and_tool_spans_are_read_in_every_version() -> None:
    """``tool_call_response`` parts carry "result"; version 2's tool span writes
    ``tool_arguments``/``tool_response``; neither is a second call or an empty result."""
    for version in (2, 3, 4, 5, 6):
        name = f"pydantic_ai_v{version}.json"
        events = shown(load(name))
        assert [e for e in events if "[TOOL_CALL]" in e] == [TOKYO[2]], name
        assert [e for e in events if "[TOOL_RESULT]" in e] == [TOKYO[3]], name
        assert events[-1] == TOKYO[-1], name


def test_what_an_instrumentation_did_not_record_is_said_to_be_missing() -> None:
    events = shown(load("pydantic_ai_v5_no_content.json"))
    assert "assistant acts: [TOOL_CALL] get_temperature(arguments not recorded)" in events
    assert "assistant acts: [TOOL_CALL] get_temperature()" not in events
    assert all(not e.endswith("]") for e in events)  # no empty event


def test_an_execute_tool_span_without_arguments_says_they_were_not_recorded() -> None:
    """The tool span alone (the model spans left out), as content capture off writes it."""
    spans = [s for s in load("pydantic_ai_v5_no_content.json") if s["name"].startswith("execute")]
    assert shown(spans) == ["assistant acts: [TOOL_CALL] get_temperature(arguments not recorded)"]


def test_openinference_tool_results_are_named_by_tool_call_id_and_message_name() -> None:
    """``message.tool_call_id`` names a result by the call it answers; ``message.name`` names
    it where the call's id is not in the span."""
    events = shown(load("openinference_openai_tool_calls.json"))
    assert [e.split(" --> ")[0] for e in events if "[TOOL_RESULT]" in e] == [
        "tool:get_weather",
        "tool:get_population",
    ]
    last_call = [
        s
        for s in load("openinference_langgraph_weather.json")
        if s["attributes"].get("openinference.span.kind") == "LLM"
    ][-1]
    alone = copy.deepcopy(last_call)
    alone["attributes"] = {
        k: v for k, v in alone["attributes"].items() if not k.endswith("tool_call.id")
    }
    assert [e for e in shown([alone]) if "[TOOL_RESULT]" in e] == [RAINING, SUNNY]


def test_an_openinference_tool_use_block_is_the_call_once_where_the_model_wrote_it() -> None:
    """openinference-anthropic writes a tool_use block in ``message.contents`` and again in
    ``message.tool_calls``: one call, after the text it follows, and no omitted part."""
    for name, count in (
        ("openinference_anthropic_tool_use_in_input.json", 1),
        ("openinference_anthropic_multiple_tool_calling.json", 2),
    ):
        events = shown(load(name))
        assert not any("part omitted" in event for event in events), name
        calls = [e for e in events if "[TOOL_CALL]" in e]
        assert len(calls) == len(set(calls)) == count, name
        assert "[TALK]" in events[1], name


def test_a_part_of_an_otlp_document_is_read_as_the_whole() -> None:
    """One resource's ``{"scopeSpans": [...]}`` or one scope's ``{"spans": [...]}``."""
    document = load("openai_v2_tool_calls.otlp.json")
    [resource] = document["resourceSpans"]
    [scope] = resource["scopeSpans"]
    assert shown(resource) == WEATHER
    assert shown(scope) == WEATHER


def test_span_dicts_in_no_form_read_are_refused_by_the_forms_read() -> None:
    """A home-made exporter's dicts (name and gen_ai.* attributes, no trace context) and a
    document whose spans are no OTLP spans are refused naming the forms read, never shown as
    an extraction dict."""
    home_made = [
        {"name": s["name"], "attributes": s["attributes"]} for s in load("pydantic_ai_v5.json")
    ]
    for target in (home_made, {"spans": home_made}, home_made[0]):
        with pytest.raises(TypeError, match="no OpenTelemetry span form read here") as info:
            render_target(target)
        assert "span.to_json() dicts" in str(info.value)
        assert "OTLP/JSON documents" in str(info.value)


def test_a_dict_that_only_mentions_spans_or_a_trace_id_is_still_an_extraction_result() -> None:
    """Only the OTLP names, span-like dicts or the conventions' attributes make a trace: an
    extraction result with text spans and a run's trace id is shown as data."""
    text = render_target({"spans": ["New York", "Paris"], "trace_id": "run-7"})
    assert "---- BEGIN EXTRACTION RESULT ----" in text
    assert "  - Paris" in text


# --------------------------------------------------------------------------------------------
# The stored export is what the real instrumentation writes now


def _comparable(spans: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A span.to_json() list without what differs between runs (ids, times, the resource)."""
    kept = ("name", "kind", "attributes", "status")
    return [
        {**{k: span.get(k) for k in kept}, "events": [e["name"] for e in span["events"]]}
        for span in spans
    ]


@pytest.mark.slow
def test_the_stored_openai_v2_export_is_what_the_instrumentation_writes_now() -> None:
    for module in ("opentelemetry.instrumentation.openai_v2", "openai", "yaml"):
        pytest.importorskip(
            module, reason=f"{module} is not installed (the test extra installs it)"
        )
    name = "openai_v2_tool_calls.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    made = subprocess.run(
        [sys.executable, str(MAKE), "--print", name],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert made.returncode == 0, made.stderr
    assert _comparable(json.loads(made.stdout)) == _comparable(load(name))
