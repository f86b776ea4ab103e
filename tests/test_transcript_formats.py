"""Transcripts in the formats agent developers hold, judged as trajectories (issue 43).

The same booking conversation (tests/support/booking.py) in each format, as plain data, as the
SDKs' own typed objects (each skipped, saying so, where its SDK is not installed), and through a
claim to the scripted judge over loopback HTTP: the judge's request shows the tool call and what
the tool returned. A part no reader knows is an error naming what was expected.
"""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
from typing import Any

import pytest

from pytest_propositions.claims.targets import (
    RenderOptions,
    as_target_list,
    describe_target,
    render_context,
)
from tests.support import booking
from tests.support.booking import (
    ARGUMENTS,
    ARGUMENTS_JSON,
    ASK,
    CALL_TEXT,
    CONFIRM,
    FORMATS,
    RESULT,
    RESULT_JSON,
    RESULT_TEXT,
    THOUGHT,
)
from tests.support.docs_blocks import DOCS, page_blocks
from tests.support.judge_server import ScriptedJudge

pytest_plugins = ["pytester"]

#: Formats whose booking includes the assistant's reasoning.
THINKING = ("openai_responses", "anthropic", "gemini", "otel_genai")
#: What may change from run to run (ids, signatures, clock times) and must never be shown.
VOLATILE = ("call_8f2k", "toolu_01A", "rs_01", "fc_01", "msg_02", "run-7", "5b1c", "opaque")
VOLATILE_TRACE = ("5b8efff798038103", "1790000000", "Cq0")


def events(text: str) -> list[str]:
    """The event lines of a rendered target, without their numbers."""
    return [
        re.sub(r"^Event #\d+: ", "", line)
        for line in text.splitlines()
        if line.startswith("Event #")
    ]


def rendered(target: Any, **options: Any) -> str:
    return render_context([target], RenderOptions(**options))


def receiver(name: str) -> str:
    return "model" if name == "gemini" else "assistant"


# -- one conversation, every format ---------------------------------------------------------------


@pytest.mark.parametrize("name", FORMATS)
def test_every_format_shows_the_booking_in_order(name: str) -> None:
    text = rendered(FORMATS[name])
    to = receiver(name)
    lines = events(text)
    expected = [
        f"user --> {to}: [CONVERSATION] {ASK}",
        f"{to} acts: [THINK] {THOUGHT}",
        f"{to} acts: [TOOL_CALL] {CALL_TEXT}",
        f"tool:book_table --> {to}: [TOOL_RESULT] {RESULT_TEXT}",
        f"{to} acts: [TALK] {CONFIRM}",
    ]
    if name not in THINKING:
        del expected[1]
    assert lines == expected
    assert text.startswith("## Transcript\n\n---- BEGIN TRANSCRIPT (")
    assert text.endswith("---- END TRANSCRIPT ----")
    for volatile in (*VOLATILE, *VOLATILE_TRACE):
        assert volatile not in text, volatile


def test_the_anthropic_rendering_in_full() -> None:
    assert rendered(booking.ANTHROPIC) == (
        "## Transcript\n\n"
        "---- BEGIN TRANSCRIPT (Anthropic messages, 5 events) ----\n"
        f"Event #0: user --> assistant: [CONVERSATION] {ASK}\n"
        f"Event #1: assistant acts: [THINK] {THOUGHT}\n"
        f"Event #2: assistant acts: [TOOL_CALL] {CALL_TEXT}\n"
        f"Event #3: tool:book_table --> assistant: [TOOL_RESULT] {RESULT_TEXT}\n"
        f"Event #4: assistant acts: [TALK] {CONFIRM}\n"
        "---- END TRANSCRIPT ----"
    )


@pytest.mark.parametrize("name", FORMATS)
def test_describe_names_the_format_and_counts_events(name: str) -> None:
    count = 5 if name in THINKING else 4
    assert describe_target(FORMATS[name]).endswith(f", {count} events)")
    assert as_target_list(FORMATS[name]) == [FORMATS[name]]


@pytest.mark.parametrize("name", FORMATS)
def test_windows_count_events_alike_in_every_format(name: str) -> None:
    total = 5 if name in THINKING else 4
    to = receiver(name)
    last = events(rendered(FORMATS[name], last_n=2))
    assert last == [
        f"tool:book_table --> {to}: [TOOL_RESULT] {RESULT_TEXT}",
        f"{to} acts: [TALK] {CONFIRM}",
    ]
    first = rendered(FORMATS[name], first_n=1)
    assert events(first) == [f"user --> {to}: [CONVERSATION] {ASK}"]
    assert f"... {total - 1} events omitted (#1 to #{total - 1}) ..." in first
    both = rendered(FORMATS[name], first_n=1, last_n=1)
    assert events(both) == [f"user --> {to}: [CONVERSATION] {ASK}", f"{to} acts: [TALK] {CONFIRM}"]


def test_ids_and_times_do_not_change_the_text() -> None:
    chat = copy.deepcopy(booking.OPENAI_CHAT)
    chat[1]["tool_calls"][0]["id"] = chat[2]["tool_call_id"] = "call_other"
    assert rendered(chat) == rendered(booking.OPENAI_CHAT)
    moved = [
        booking.otlp_span(name, start + 7_777, end + 7_777, attributes)
        for name, start, end, attributes in booking.GENAI_SPANS
    ]
    for span in moved:
        span["traceId"] = "0af7651916cd43dd8448eb211c80319c"
    assert rendered(booking.otlp_export(moved)) == rendered(booking.OTEL_GENAI)


def test_a_langgraph_state_is_its_messages_and_any_mapping_with_messages_too() -> None:
    state = booking.LANGGRAPH_STATE
    assert len(events(rendered(state))) == 4
    assert events(rendered(state)) == events(rendered(state["messages"]))
    request = {"model": "gpt-4.1", "messages": booking.OPENAI_CHAT}
    assert events(rendered(request)) == events(rendered(booking.OPENAI_CHAT))
    # A "messages" list that is no transcript leaves the dict an extraction result.
    assert rendered({"messages": ["hi", "bye"]}).startswith("## Extraction result")


# -- spans: order, grouping, conventions ------------------------------------------------------


def test_spans_are_ordered_by_time_and_grouped_by_trace() -> None:
    spans = [booking.otlp_span(*span) for span in booking.GENAI_SPANS]
    other = copy.deepcopy(spans[0])
    other["traceId"] = "ffffffffffffffffffffffffffffffff"
    other["startTimeUnixNano"] = str(int(spans[0]["startTimeUnixNano"]) + 1_500)
    other["attributes"][1]["value"]["stringValue"] = json.dumps(
        [{"role": "user", "parts": [{"type": "text", "content": "A second session."}]}]
    )
    other["attributes"] = other["attributes"][:2]
    # Exported out of order (children end first), and a second trace starting mid-way.
    lines = events(rendered([spans[2], other, spans[1], spans[0]]))
    assert lines[:5] == events(rendered(booking.OTEL_GENAI))
    assert lines[5:] == ["user --> assistant: [CONVERSATION] A second session."]


def test_a_parent_agent_span_repeating_the_conversation_adds_nothing() -> None:
    agent = (
        "invoke_agent booker",
        500,
        6_500,
        {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.input.messages": json.dumps(
                [{"role": "user", "parts": [{"type": "text", "content": ASK}]}]
            ),
            "gen_ai.output.messages": json.dumps(
                [{"role": "assistant", "parts": [{"type": "text", "content": CONFIRM}]}]
            ),
        },
    )
    spans = [booking.otlp_span(*span) for span in [agent, *booking.GENAI_SPANS]]
    shown = events(rendered(booking.otlp_export(spans)))
    assert shown == events(rendered(booking.OTEL_GENAI))
    assert [line.split("[")[1].split("]")[0] for line in shown] == [
        "CONVERSATION",
        "THINK",
        "TOOL_CALL",
        "TOOL_RESULT",
        "TALK",
    ]


def _genai_run(*calls: tuple[list[dict[str, Any]], list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Model-call spans, one after another, each with its input and output messages."""
    return [
        booking.otlp_span(
            "chat",
            10 * i,
            10 * i + 5,
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.input.messages": json.dumps(inputs),
                "gen_ai.output.messages": json.dumps(outputs),
            },
        )
        for i, (inputs, outputs) in enumerate(calls)
    ]


def _text(role: str, content: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"type": "text", "content": content}]}


def test_a_history_that_drops_the_reasoning_is_not_shown_again() -> None:
    first, second, third = (s[3] for s in booking.GENAI_SPANS)
    call = json.loads(first["gen_ai.output.messages"])[0]
    without_reasoning = {"role": "assistant", "parts": call["parts"][1:]}
    history = [json.loads(third["gen_ai.input.messages"])[0], without_reasoning]
    history.append(json.loads(third["gen_ai.input.messages"])[2])
    changed = {**third, "gen_ai.input.messages": json.dumps(history)}
    spans = [
        booking.otlp_span(name, start, end, attributes)
        for (name, start, end, _), attributes in zip(
            booking.GENAI_SPANS, [first, second, changed], strict=True
        )
    ]
    assert events(rendered(spans)) == events(rendered(booking.OTEL_GENAI))


def test_what_is_said_again_later_is_shown_again() -> None:
    yes, ok = _text("user", "Yes."), _text("assistant", "OK.")
    spans = _genai_run(([yes], [ok]), ([yes, ok, yes], [ok]))
    assert events(rendered(spans)) == [
        "user --> assistant: [CONVERSATION] Yes.",
        "assistant acts: [TALK] OK.",
        "user --> assistant: [CONVERSATION] Yes.",
        "assistant acts: [TALK] OK.",
    ]


def test_messages_in_the_inference_details_event_are_read() -> None:
    """Newer GenAI instrumentations may put a model call's messages on an event of its span."""
    spans = [booking.otlp_span(*span) for span in booking.GENAI_SPANS]
    for span in (spans[0], spans[2]):
        messages = [a for a in span["attributes"] if a["key"].endswith("messages")]
        span["attributes"] = [a for a in span["attributes"] if a not in messages]
        span["events"] = [
            {"name": "gen_ai.client.inference.operation.details", "attributes": messages}
        ]
    assert rendered(booking.otlp_export(spans)) == rendered(booking.OTEL_GENAI)


def test_system_instructions_and_media_parts() -> None:
    span = booking.otlp_span(
        "chat",
        1,
        2,
        {
            "gen_ai.system_instructions": json.dumps([{"type": "text", "content": "Be brief."}]),
            "gen_ai.input.messages": json.dumps(
                [
                    {
                        "role": "user",
                        "parts": [
                            {"type": "text", "content": "What is on this menu?"},
                            {
                                "type": "blob",
                                "modality": "image",
                                "mime_type": "image/png",
                                "content": "iVBORw0KGgo",
                            },
                        ],
                    }
                ]
            ),
        },
    )
    text = rendered([span])
    assert events(text) == [
        "system --> assistant: [SYSTEM] Be brief.",
        "user --> assistant: [CONVERSATION] What is on this menu?",
    ]
    assert "What is on this menu?\n    <image part omitted: image/png>\n" in text
    assert "iVBORw0KGgo" not in text


def test_the_attribute_names_are_openinference_s_and_the_genai_conventions() -> None:
    semconv = pytest.importorskip(
        "openinference.semconv.trace", reason="openinference-semantic-conventions not installed"
    )
    assert semconv.SpanAttributes.LLM_INPUT_MESSAGES == "llm.input_messages"
    assert semconv.SpanAttributes.LLM_OUTPUT_MESSAGES == "llm.output_messages"
    assert semconv.MessageAttributes.MESSAGE_ROLE == "message.role"
    assert semconv.MessageAttributes.MESSAGE_CONTENT == "message.content"
    assert semconv.MessageAttributes.MESSAGE_TOOL_CALLS == "message.tool_calls"
    assert semconv.ToolCallAttributes.TOOL_CALL_FUNCTION_NAME == "tool_call.function.name"
    assert (
        semconv.ToolCallAttributes.TOOL_CALL_FUNCTION_ARGUMENTS_JSON
        == "tool_call.function.arguments"
    )
    assert semconv.SpanAttributes.TOOL_NAME == "tool.name"
    assert semconv.SpanAttributes.INPUT_VALUE == "input.value"
    assert semconv.SpanAttributes.OUTPUT_VALUE == "output.value"
    assert semconv.SpanAttributes.OPENINFERENCE_SPAN_KIND == "openinference.span.kind"
    genai = pytest.importorskip(
        "opentelemetry.semconv._incubating.attributes.gen_ai_attributes",
        reason="opentelemetry-semantic-conventions not installed",
    )
    assert genai.GEN_AI_INPUT_MESSAGES == "gen_ai.input.messages"
    assert genai.GEN_AI_OUTPUT_MESSAGES == "gen_ai.output.messages"
    assert genai.GEN_AI_SYSTEM_INSTRUCTIONS == "gen_ai.system_instructions"
    assert genai.GEN_AI_TOOL_NAME == "gen_ai.tool.name"
    assert genai.GEN_AI_TOOL_CALL_ARGUMENTS == "gen_ai.tool.call.arguments"
    assert genai.GEN_AI_TOOL_CALL_RESULT == "gen_ai.tool.call.result"
    assert genai.GenAiOperationNameValues.EXECUTE_TOOL.value == "execute_tool"


# -- images and files named, not dumped ----------------------------------------------------------


def test_images_and_files_are_named_not_dumped() -> None:
    data = "iVBORw0KGgoAAAANSUhEUg"
    anthropic = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Is this menu vegetarian?"},
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": data},
                },
                {
                    "type": "document",
                    "title": "menu.pdf",
                    "source": {"type": "base64", "media_type": "application/pdf", "data": data},
                },
            ],
        },
        {"role": "assistant", "content": [{"type": "redacted_thinking", "data": data}]},
    ]
    assert events(rendered(anthropic)) == [
        "user --> assistant: [CONVERSATION] Is this menu vegetarian?",
        "assistant acts: [THINK] (redacted thinking)",
    ]
    text = rendered(anthropic)
    assert "    <image part omitted: image/png>\n    <document part omitted: menu.pdf>" in text
    gemini = [{"role": "user", "parts": [{"inlineData": {"mimeType": "image/jpeg", "data": data}}]}]
    responses = [
        {
            "role": "user",
            "content": [{"type": "input_image", "image_url": f"data:image/png;base64,{data}"}],
        },
        {"type": "reasoning", "summary": [], "encrypted_content": data},
    ]
    langchain = [
        {"type": "human", "content": [{"type": "image", "base64": data, "mime_type": "image/png"}]}
    ]
    for target, shown in [
        (gemini, "<inline data part omitted: image/jpeg>"),
        (responses, "<image part omitted>"),
        (langchain, "<image part omitted: image/png>"),
    ]:
        text = rendered(target)
        assert shown in text
        assert data not in text
    assert "assistant acts: [THINK] (reasoning not shown)" in events(rendered(responses))


# -- what cannot be read is an error, never left out ---------------------------------------------


def _with(target: Any, change: Any) -> Any:
    copied = copy.deepcopy(target)
    change(copied)
    return copied


UNREADABLE = [
    pytest.param(
        _with(booking.ANTHROPIC, lambda m: m[1]["content"].append({"type": "hologram"})),
        ValueError,
        "Anthropic message #1, content block #2's type is 'hologram'; expected text, image, "
        "document, tool_use",
        id="anthropic-block",
    ),
    pytest.param(
        _with(booking.OPENAI_RESPONSES, lambda m: m.append({"type": "teleport_call"})),
        ValueError,
        "Responses item #5's type is 'teleport_call'; expected message, function_call, "
        "function_call_output, reasoning",
        id="responses-item",
    ),
    pytest.param(
        _with(
            booking.OPENAI_CHAT,
            lambda m: m.append({"role": "user", "content": [{"type": "hologram"}]}),
        ),
        ValueError,
        "chat message #4: content part #0's type is 'hologram'; expected text, refusal, "
        "image_url, input_audio or file",
        id="chat-part",
    ),
    pytest.param(
        _with(booking.GEMINI, lambda m: m[3]["parts"].append({"hologram": {"x": 1}})),
        ValueError,
        "Gemini content #3, part #1 has the keys ['hologram']; expected a part with one of text, "
        "function_call",
        id="gemini-part",
    ),
    pytest.param(
        _with(
            booking.LANGGRAPH_STATE,
            lambda s: s["messages"][3].update(content=[{"type": "hologram"}]),
        ),
        ValueError,
        "LangChain message #3: content block #0's type is 'hologram'; expected text, image",
        id="langchain-block",
    ),
    pytest.param(
        booking.otlp_export(
            [booking.otlp_span("chat", 1, 2, {"gen_ai.input.messages": "[{not json"})]
        ),
        ValueError,
        "resourceSpans[0].scopeSpans[0].spans[0] ('chat'): gen_ai.input.messages is not JSON; expected a JSON list of messages",
        id="genai-not-json",
    ),
    pytest.param(
        booking.otlp_export(
            [
                booking.otlp_span(
                    "chat",
                    1,
                    2,
                    {"gen_ai.input.messages": json.dumps([{"role": "user", "content": "hi"}])},
                )
            ]
        ),
        ValueError,
        "resourceSpans[0].scopeSpans[0].spans[0] ('chat'): gen_ai.input.messages is not a list of messages; "
        "expected",
        id="genai-no-parts",
    ),
    pytest.param(
        booking.otlp_export(
            [
                booking.otlp_span(
                    "chat",
                    1,
                    2,
                    {
                        "gen_ai.output.messages": json.dumps(
                            [{"role": "assistant", "parts": [{"type": "hologram"}]}]
                        )
                    },
                )
            ]
        ),
        ValueError,
        "resourceSpans[0].scopeSpans[0].spans[0] ('chat')'s output, message #0, part #0's type is 'hologram'; "
        "expected text, tool_call, tool_call_response, reasoning",
        id="genai-part",
    ),
    pytest.param(
        booking.otlp_export(
            [booking.otlp_span("execute_tool", 1, 2, {"gen_ai.operation.name": "execute_tool"})]
        ),
        ValueError,
        "resourceSpans[0].scopeSpans[0].spans[0] ('execute_tool') is a tool span without a tool name; expected "
        "gen_ai.tool.name",
        id="tool-span-unnamed",
    ),
    pytest.param(
        {
            "resourceSpans": [
                {
                    "scopeSpans": [
                        {
                            "spans": [
                                {
                                    **booking.otlp_span("chat", 1, 2, {}),
                                    "attributes": [{"key": "x", "value": {"mysteryValue": 1}}],
                                }
                            ]
                        }
                    ]
                }
            ]
        },
        ValueError,
        "resourceSpans[0].scopeSpans[0].spans[0].attributes[0].value's value kind is 'mysteryValue'; expected "
        "stringValue",
        id="otlp-value",
    ),
    pytest.param(
        [
            {
                **booking.otlp_span("chat", 1, 2, {"gen_ai.operation.name": "chat"}),
                "events": [{"name": "gen_ai.user.message", "attributes": []}],
            }
        ],
        ValueError,
        "span #0 ('chat') records its messages as span events (gen_ai.user.message), the GenAI "
        "conventions' older form; expected the gen_ai.input.messages",
        id="genai-events",
    ),
    pytest.param(
        [booking.otlp_span("GET /menu", 1, 2, {"http.method": "GET"})],
        ValueError,
        "none of the 1 spans holds a model's messages or a tool call; expected GenAI spans",
        id="no-genai-span",
    ),
    pytest.param(
        [*booking.OPENINFERENCE, {"name": "half a span", "attributes": []}],
        TypeError,
        "item #3, a dict, is no message of a transcript",
        id="malformed-span-in-list",
    ),
]


@pytest.mark.parametrize(("target", "error", "message"), UNREADABLE)
def test_what_no_reader_knows_is_an_error_naming_what_was_expected(
    target: Any, error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as info:
        as_target_list(target)
    assert message in str(info.value)


@pytest.mark.parametrize(
    "lone",
    [
        booking.GEMINI[0],
        booking.OPENAI_RESPONSES[2],
        booking.LANGGRAPH_STATE["messages"][0],
        booking.OPENINFERENCE[0],
    ],
    ids=["gemini", "responses", "langchain", "span"],
)
def test_a_lone_message_or_span_is_refused_by_name(lone: Any) -> None:
    with pytest.raises(TypeError, match="single message of a transcript"):
        as_target_list(lone)


def test_a_str_target_loads_no_transcript_format() -> None:
    """The load budget: a run judging strings never imports the transcript formats."""
    code = (
        "import sys\n"
        "from pytest_propositions.claims.targets import RenderOptions, as_target_list, "
        "describe_target, render_context\n"
        "render_context(as_target_list('Oscar: hello.'), RenderOptions())\n"
        "describe_target('Oscar: hello.')\n"
        "print(sorted(m for m in sys.modules if 'transcript' in m or 'format_' in m))\n"
        "render_context([[{'role': 'user', 'content': 'hi'}]], RenderOptions())\n"
        "print('pytest_propositions.claims.transcripts' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.splitlines() == ["[]", "True"]


# -- the SDKs' own objects ------------------------------------------------------------------------


def test_anthropic_typed_blocks() -> None:
    types = pytest.importorskip("anthropic.types", reason="the anthropic SDK is not installed")
    reply = types.Message(
        id="msg_01XFD",
        type="message",
        role="assistant",
        model="claude-sonnet-4-5",
        stop_reason="end_turn",
        usage=types.Usage(input_tokens=10, output_tokens=20),
        content=[types.TextBlock(type="text", text=CONFIRM)],
    )
    messages = [
        {"role": "user", "content": ASK},
        {
            "role": "assistant",
            "content": [
                types.ThinkingBlock(type="thinking", thinking=THOUGHT, signature="sig-9"),
                types.ToolUseBlock(
                    type="tool_use", id="toolu_9", name="book_table", input=ARGUMENTS
                ),
            ],
        },
        {
            "role": "user",
            "content": [
                types.ToolResultBlockParam(
                    type="tool_result", tool_use_id="toolu_9", content=RESULT_JSON
                )
            ],
        },
        reply,
    ]
    assert rendered(messages) == rendered(booking.ANTHROPIC)
    assert "msg_01XFD" not in rendered(messages)
    # Without a tool or a thought, the messages read as chat messages would: the same events.
    plain = [messages[0], {"role": "assistant", "content": reply.content}]
    assert events(rendered(plain)) == [
        f"user --> assistant: [CONVERSATION] {ASK}",
        f"assistant acts: [TALK] {CONFIRM}",
    ]


def test_openai_responses_typed_items() -> None:
    responses = pytest.importorskip(
        "openai.types.responses", reason="the openai SDK is not installed"
    )
    items = [
        {"role": "user", "content": ASK},
        responses.ResponseReasoningItem(
            type="reasoning", id="rs_9", summary=[{"type": "summary_text", "text": THOUGHT}]
        ),
        responses.ResponseFunctionToolCall(
            type="function_call",
            id="fc_9",
            call_id="call_9",
            name="book_table",
            arguments=ARGUMENTS_JSON,
        ),
        {"type": "function_call_output", "call_id": "call_9", "output": RESULT_JSON},
        responses.ResponseOutputMessage(
            type="message",
            id="msg_9",
            role="assistant",
            status="completed",
            content=[{"type": "output_text", "text": CONFIRM, "annotations": []}],
        ),
    ]
    assert rendered(items) == rendered(booking.OPENAI_RESPONSES)


def test_openai_chat_completion_message_objects() -> None:
    chat = pytest.importorskip("openai.types.chat", reason="the openai SDK is not installed")
    reply = chat.ChatCompletionMessage(
        role="assistant",
        content=None,
        tool_calls=[
            {
                "id": "call_9",
                "type": "function",
                "function": {"name": "book_table", "arguments": ARGUMENTS_JSON},
            }
        ],
    )
    messages = [
        booking.OPENAI_CHAT[0],
        reply,
        {"role": "tool", "tool_call_id": "call_9", "content": RESULT_JSON},
        chat.ChatCompletionMessage(role="assistant", content=CONFIRM),
    ]
    assert rendered(messages) == rendered(booking.OPENAI_CHAT)


def test_google_genai_contents() -> None:
    types = pytest.importorskip(
        "google.genai.types", reason="the google-genai SDK is not installed"
    )
    contents = [
        types.Content(role="user", parts=[types.Part(text=ASK)]),
        types.Content(
            role="model",
            parts=[
                types.Part(text=THOUGHT, thought=True),
                types.Part(
                    function_call=types.FunctionCall(name="book_table", args=ARGUMENTS),
                    thought_signature=b"\x01\x02",
                ),
            ],
        ),
        types.Content(
            role="user",
            parts=[types.Part.from_function_response(name="book_table", response=RESULT)],
        ),
        types.Content(role="model", parts=[types.Part(text=CONFIRM)]),
    ]
    assert rendered(contents) == rendered(booking.GEMINI)


def test_langchain_messages_in_a_langgraph_state() -> None:
    messages = pytest.importorskip(
        "langchain_core.messages", reason="langchain-core is not installed"
    )
    state = {
        "messages": [
            messages.HumanMessage(content=ASK),
            messages.AIMessage(
                content="",
                tool_calls=[{"name": "book_table", "args": ARGUMENTS, "id": "call_9"}],
            ),
            messages.ToolMessage(content=RESULT_JSON, tool_call_id="call_9"),
            messages.AIMessage(content=CONFIRM),
        ]
    }
    assert rendered(state) == rendered(booking.LANGGRAPH_STATE)
    assert rendered(state["messages"]) == rendered(booking.LANGGRAPH_STATE)
    # Thinking blocks (as an Anthropic model's reply writes them) are marked as thought; the
    # tool_use block that repeats a tool call is shown once.
    thinking = messages.AIMessage(
        content=[
            {"type": "thinking", "thinking": THOUGHT, "signature": "s"},
            {"type": "tool_use", "id": "call_9", "name": "book_table", "input": ARGUMENTS},
        ],
        tool_calls=[{"name": "book_table", "args": ARGUMENTS, "id": "call_9"}],
    )
    state["messages"][1] = thinking
    assert events(rendered(state)) == events(rendered(booking.ANTHROPIC))
    failed = messages.ToolMessage(content="no tables", tool_call_id="call_9", status="error")
    assert "[TOOL_RESULT] (error) no tables" in rendered([*state["messages"][:2], failed])


def _sdk_spans(spans: list[tuple[str, int, int, dict[str, Any]]]) -> Any:
    sdk = pytest.importorskip(
        "opentelemetry.sdk.trace", reason="opentelemetry-sdk is not installed"
    )
    export = pytest.importorskip("opentelemetry.sdk.trace.export")
    memory = pytest.importorskip("opentelemetry.sdk.trace.export.in_memory_span_exporter")
    exporter = memory.InMemorySpanExporter()
    provider = sdk.TracerProvider()
    provider.add_span_processor(export.SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("booking-agent")
    with tracer.start_as_current_span("agent run", start_time=1):
        for name, start, end, attributes in spans:
            span = tracer.start_span(name, start_time=1_000_000 + start, attributes=attributes)
            span.end(end_time=1_000_000 + end)
    return exporter.get_finished_spans()


def test_opentelemetry_sdk_spans_by_the_genai_conventions() -> None:
    spans = _sdk_spans(booking.GENAI_SPANS)
    assert isinstance(spans, tuple)  # what the exporter hands over, children first
    assert rendered(spans) == rendered(booking.OTEL_GENAI)
    # span.to_json(), read back, is the same trace.
    assert rendered([json.loads(span.to_json()) for span in spans]) == rendered(booking.OTEL_GENAI)


def test_opentelemetry_sdk_spans_by_openinference_names() -> None:
    assert rendered(_sdk_spans(booking.OPENINFERENCE_SPANS)) == rendered(booking.OPENINFERENCE)


# -- the judge's request -------------------------------------------------------------------------

INNER_TESTS = """
import pytest
from tests.support.booking import FORMATS

@pytest.mark.parametrize("name", FORMATS)
def test_booked(name, assert_proposition):
    claim = "The assistant books the table with the tool and confirms it."
    assert_proposition(FORMATS[name], claim)
"""


def test_the_judge_is_shown_each_format_s_tool_call_and_result(
    pytester: pytest.Pytester, inner_run: list[str], judge_server: ScriptedJudge
) -> None:
    pytester.makepyfile(test_inner=INNER_TESTS)
    pytester.runpytest(*inner_run).assert_outcomes(passed=len(FORMATS))
    requests = judge_server.requests
    assert len(requests) == len(FORMATS)
    for name, request in zip(FORMATS, requests, strict=True):
        text = request.text
        to = receiver(name)
        begin = re.search(r"<<<RECORDING ([0-9a-f]{16}) BEGINS>>>", text)
        assert begin is not None, name
        recording = text[begin.end() : text.index(f"<<<RECORDING {begin.group(1)} ENDS>>>")]
        assert f"{to} acts: [TOOL_CALL] {CALL_TEXT}\n" in recording, name
        assert f"tool:book_table --> {to}: [TOOL_RESULT] {RESULT_TEXT}\n" in recording, name
        assert f"{to} acts: [TALK] {CONFIRM}" in recording, name


def test_the_docs_show_what_the_judge_sees() -> None:
    """docs/targets.md's sample text is the Anthropic example's rendering, line for line."""
    blocks = page_blocks(DOCS / "targets.md")
    [shown] = [
        b.code for b in blocks if b.lang == "text" and b.code.startswith("---- BEGIN TRANSCRIPT")
    ]
    [example] = [b.code for b in blocks if b.title == "test_anthropic_transcript.py"]
    namespace: dict[str, Any] = {}
    exec(compile(example, "test_anthropic_transcript.py", "exec"), namespace)
    body = rendered(namespace["MESSAGES"]).removeprefix("## Transcript\n\n")
    assert body == shown.rstrip("\n")


# -- the tools the Responses API runs itself -------------------------------------------------------

HOSTED_ITEMS: list[dict[str, Any]] = [
    {"role": "user", "content": "What will the weather be in Lisbon? Plot it."},
    {
        "type": "web_search_call",
        "id": "ws_51",
        "status": "completed",
        "action": {"type": "search", "query": "Lisbon weather tomorrow"},
    },
    {
        "type": "file_search_call",
        "id": "fs_52",
        "status": "completed",
        "queries": ["lisbon climate"],
        "results": [
            {"file_id": "file-53", "filename": "climate.pdf", "score": 0.9, "text": "Mild."}
        ],
    },
    {
        "type": "code_interpreter_call",
        "id": "ci_54",
        "status": "completed",
        "container_id": "cntr_55",
        "code": "print(21)",
        "outputs": [{"type": "logs", "logs": "21"}, {"type": "image", "url": "https://p/56.png"}],
    },
    {"type": "image_generation_call", "id": "ig_57", "status": "completed", "result": "QUJD"},
    {
        "type": "computer_call",
        "id": "cu_58",
        "call_id": "call_59",
        "status": "completed",
        "action": {"type": "click", "x": 10, "y": 20, "button": "left"},
        "pending_safety_checks": [],
    },
    {
        "type": "computer_call_output",
        "call_id": "call_59",
        "output": {"type": "computer_screenshot", "image_url": "data:image/png;base64,QUJD"},
    },
    {
        "type": "local_shell_call",
        "id": "ls_60",
        "call_id": "call_61",
        "status": "completed",
        "action": {"type": "exec", "command": ["ls"], "env": {}},
    },
    {"type": "local_shell_call_output", "id": "call_61", "output": "forecast.csv"},
    {
        "type": "mcp_list_tools",
        "id": "ml_62",
        "server_label": "weather",
        "tools": [{"name": "forecast", "input_schema": {}}],
    },
    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "21C."}]},
]


def test_responses_hosted_tools_are_tool_calls_and_results() -> None:
    """A web search, a file search, code run, an image made, a computer clicked, a shell run and
    an MCP server's tools listed: each a TOOL_CALL with its arguments, and what it returned when
    the item says; ids, containers and images never shown."""
    text = rendered(HOSTED_ITEMS)
    assert events(text) == [
        "user --> assistant: [CONVERSATION] What will the weather be in Lisbon? Plot it.",
        'assistant acts: [TOOL_CALL] web_search({"query": "Lisbon weather tomorrow", '
        '"type": "search"})',
        'assistant acts: [TOOL_CALL] file_search({"queries": ["lisbon climate"]})',
        'tool:file_search --> assistant: [TOOL_RESULT] [{"filename": "climate.pdf", '
        '"score": 0.9, "text": "Mild."}]',
        'assistant acts: [TOOL_CALL] code_interpreter({"code": "print(21)"})',
        "tool:code_interpreter --> assistant: [TOOL_RESULT] 21",
        "assistant acts: [TOOL_CALL] image_generation()",
        "tool:image_generation --> assistant: [TOOL_RESULT] <image part omitted>",
        'assistant acts: [TOOL_CALL] computer({"button": "left", "type": "click", "x": 10, '
        '"y": 20})',
        "tool:computer --> assistant: [TOOL_RESULT] <screenshot part omitted>",
        'assistant acts: [TOOL_CALL] local_shell({"command": ["ls"], "env": {}, "type": "exec"})',
        "tool:local_shell --> assistant: [TOOL_RESULT] forecast.csv",
        'assistant acts: [TOOL_CALL] mcp_list_tools({"server_label": "weather"})',
        "tool:mcp_list_tools --> assistant: [TOOL_RESULT] forecast",
        "assistant acts: [TALK] 21C.",
    ]
    assert "    <image part omitted>" in text  # the plot, under the code's logs
    for volatile in ("ws_51", "fs_52", "file-53", "ci_54", "cntr_55", "56.png", "QUJD"):
        assert volatile not in text
    assert "call_59" not in text and "call_61" not in text
    assert events(rendered(HOSTED_ITEMS, last_n=2)) == events(text)[-2:]


def test_responses_hosted_tool_errors_and_unknown_outputs_are_named() -> None:
    failed = {"type": "mcp_list_tools", "server_label": "weather", "error": "server down"}
    assert events(rendered([HOSTED_ITEMS[0], failed]))[1:] == [
        'assistant acts: [TOOL_CALL] mcp_list_tools({"server_label": "weather"})',
        "tool:mcp_list_tools --> assistant: [TOOL_RESULT] (error) server down",
    ]
    odd = copy.deepcopy(HOSTED_ITEMS[3])
    odd["outputs"].append({"type": "hologram"})
    with pytest.raises(ValueError, match=r"Responses item #1: an output.s type .*logs or image"):
        rendered([HOSTED_ITEMS[0], odd])


def test_responses_hosted_tools_as_the_sdks_typed_items() -> None:
    types = pytest.importorskip("openai.types.responses", reason="the openai SDK is not installed")
    typed = [
        HOSTED_ITEMS[0],
        types.ResponseFunctionWebSearch(**HOSTED_ITEMS[1]),
        types.ResponseFileSearchToolCall(**HOSTED_ITEMS[2]),
        types.ResponseCodeInterpreterToolCall(**HOSTED_ITEMS[3]),
    ]
    assert rendered(typed) == rendered(HOSTED_ITEMS[:4])


# -- issue 48: a malformed trace is refused by the path to the bad value --------------------------


def _export_with(change: Any) -> Any:
    """The booking's OTLP export, changed by ``change`` (malformed inputs are hand-written)."""
    return _with(booking.OTEL_GENAI, change)


def _deep_array(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"stringValue": "x"}
    for _ in range(depth):
        value = {"arrayValue": {"values": [value]}}
    return value


def _first_span(export: Any) -> dict[str, Any]:
    span: dict[str, Any] = export["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    return span


SPAN0 = "resourceSpans[0].scopeSpans[0].spans[0]"
MALFORMED_TRACES = [
    pytest.param(
        _export_with(
            lambda e: _first_span(e)["attributes"].append(
                {"key": "gen_ai.input.messages", "value": {"stringValue": "[" * 100_000}}
            )
        ),
        ValueError,
        f"{SPAN0} ('chat gpt-4.1'): gen_ai.input.messages holds JSON nested too deeply",
        id="deep-json-in-input-messages",
    ),
    pytest.param(
        _export_with(
            lambda e: _first_span(e)["attributes"].insert(
                0, {"key": "x", "value": _deep_array(100_000)}
            )
        ),
        ValueError,
        f"{SPAN0}.attributes[0].value is nested more than 32 levels deep",
        id="deep-array-value",
    ),
    pytest.param(
        {"resourceSpans": [[1, 2]]},
        TypeError,
        "resourceSpans[0]: expected an object (a resource's spans: {'scopeSpans': [...]}), got "
        "list [1, 2]",
        id="resource-not-an-object",
    ),
    pytest.param(
        {"resourceSpans": [{"scopeSpans": [booking.OTEL_GENAI["resourceSpans"][0], 7]}]},
        TypeError,
        "resourceSpans[0].scopeSpans[1]: expected an object (a scope's spans: {'spans': [...]}), "
        "got int 7",
        id="scope-not-an-object",
    ),
    pytest.param(
        _export_with(lambda e: _first_span(e).update(events=[{"name": "ok"}, "boom"])),
        TypeError,
        f"{SPAN0}.events[1]: expected an object (a span event: ",
        id="event-not-an-object",
    ),
    pytest.param(
        {"resourceSpans": [{"scopeSpans": [{"spans": []}, {"spans": 5}]}]},
        TypeError,
        "resourceSpans[0].scopeSpans[1].spans: expected a list (of spans), got int 5",
        id="spans-not-a-list",
    ),
    pytest.param(
        _export_with(
            lambda e: _first_span(e)["attributes"].append(
                {"key": "n", "value": {"intValue": "abc"}}
            )
        ),
        TypeError,
        f"{SPAN0}.attributes[3].value.intValue: expected a 64-bit integer or its decimal text, "
        "got str 'abc'",
        id="int-value-not-a-number",
    ),
    pytest.param(
        _export_with(lambda e: _first_span(e).update(startTimeUnixNano="9" * 5000)),
        TypeError,
        f"{SPAN0}.startTimeUnixNano: expected nanoseconds since the epoch or an ISO time, got a "
        "str of 5000 digits",
        id="time-of-5000-digits",
    ),
    pytest.param(
        [{**booking.otlp_span("chat", 1, 2, {}), "events": [5]}],
        TypeError,
        "span #0.events[0]: expected an object (a span event: ",
        id="event-of-a-listed-span",
    ),
]


@pytest.mark.parametrize(("target", "error", "message"), MALFORMED_TRACES)
def test_a_malformed_trace_is_refused_naming_the_path_to_the_bad_value(
    target: Any, error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as info:
        as_target_list(target)
    assert type(info.value) is error
    assert message in str(info.value)
    assert len(str(info.value)) < 400  # a path and a short repr, never the bad value whole


# -- issue 48: what was dropped without a word is shown ------------------------------------------

# OpenAI's custom tool call, as openai-python's own test writes it (openai/openai-python,
# tests/lib/chat/test_parse_custom_tool_calls.py, commit 27e8ae9a0dd82e09d05aba4fb77ba2b9d8654d80).
CUSTOM_CALL = {
    "id": "call_custom",
    "type": "custom",
    "custom": {"name": "run_python", "input": "print(1)"},
}


def test_an_openai_custom_tool_call_is_a_call_with_its_name_and_input() -> None:
    messages = [
        {"role": "user", "content": "Run it."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [booking.OPENAI_CHAT[1]["tool_calls"][0], CUSTOM_CALL],
        },
        {"role": "tool", "tool_call_id": "call_custom", "content": "1"},
    ]
    assert events(rendered(messages)) == [
        "user --> assistant: [CONVERSATION] Run it.",
        f"assistant acts: [TOOL_CALL] {CALL_TEXT}",
        "assistant acts: [TOOL_CALL] run_python(print(1))",
        "tool:run_python --> assistant: [TOOL_RESULT] 1",
    ]
    # A call of a kind no reader knows is refused by name, never "unknown_tool()".
    odd = _with(messages, lambda m: m[1]["tool_calls"].append({"id": "c", "type": "hologram"}))
    with pytest.raises(ValueError, match=r"chat message #1: tool call #2's type is 'hologram'"):
        as_target_list(odd)


def test_an_openai_custom_tool_call_as_the_sdk_s_typed_message() -> None:
    chat = pytest.importorskip("openai.types.chat", reason="the openai SDK is not installed")
    reply = chat.ChatCompletionMessage.model_validate(
        {"role": "assistant", "content": None, "tool_calls": [CUSTOM_CALL]}
    )
    assert "assistant acts: [TOOL_CALL] run_python(print(1))" in events(
        rendered([{"role": "user", "content": "Run it."}, reply])
    )


# An assistant's spoken reply (chat completions with modalities ["text", "audio"]): its content is
# null and what it said is the audio's transcript. The shape is the openai SDK's ChatCompletionAudio
# (id, data, expires_at, transcript); the values here are ours.
AUDIO_REPLY = {
    "role": "assistant",
    "content": None,
    "refusal": None,
    "audio": {
        "id": "audio_6710d8a9c4f08190a6bb3f70e3cbdf54",
        "data": "UklGRiQAAABXQVZFZm10IBAAAAABAAEA",
        "expires_at": 1729160505,
        "transcript": "Your table for two is booked for 8pm.",
    },
}


def test_an_assistant_s_audio_reply_is_shown_by_its_transcript() -> None:
    messages = [{"role": "user", "content": ASK}, AUDIO_REPLY]
    assert events(rendered(messages)) == [
        f"user --> assistant: [CONVERSATION] {ASK}",
        "assistant acts: [TALK] Your table for two is booked for 8pm.",
    ]
    assert "UklGR" not in rendered(messages)
    # An earlier reply referred to by its id alone (no transcript) is named, never an empty TALK.
    referred = [*messages, {"role": "assistant", "content": None, "audio": {"id": "audio_6710"}}]
    assert events(rendered(referred))[-1] == "assistant acts: [TALK] <audio part omitted>"
    chat = pytest.importorskip("openai.types.chat", reason="the openai SDK is not installed")
    typed = chat.ChatCompletionMessage.model_validate(AUDIO_REPLY)
    assert rendered([messages[0], typed]) == rendered(messages)


def test_langchain_tool_calls_kept_only_in_additional_kwargs_are_calls() -> None:
    # An AIMessage as older LangChain (and adapters that fill only the provider's fields) left
    # it: the OpenAI calls in additional_kwargs, tool_calls empty.
    legacy_call = {
        "id": "call_CwuTl8lGANGtPKvTxwKk2LAH",
        "function": {"arguments": ARGUMENTS_JSON, "name": "book_table"},
        "type": "function",
    }
    state = _with(
        booking.LANGGRAPH_STATE,
        lambda s: s["messages"][1].update(
            tool_calls=[], additional_kwargs={"tool_calls": [legacy_call], "refusal": None}
        ),
    )
    state["messages"][2]["tool_call_id"] = legacy_call["id"]
    assert rendered(state) == rendered(booking.LANGGRAPH_STATE)
    # As LangChain writes it now, the same call is in both places: shown once.
    both = _with(
        booking.LANGGRAPH_STATE,
        lambda s: s["messages"][1].update(
            additional_kwargs={
                "tool_calls": [{**legacy_call, "id": s["messages"][1]["tool_calls"][0]["id"]}]
            }
        ),
    )
    assert rendered(both) == rendered(booking.LANGGRAPH_STATE)
    # The functions agent's single function_call, too.
    functions = _with(
        booking.LANGGRAPH_STATE,
        lambda s: s["messages"][1].update(
            tool_calls=[],
            additional_kwargs={
                "function_call": {"name": "book_table", "arguments": ARGUMENTS_JSON}
            },
        ),
    )
    assert f"assistant acts: [TOOL_CALL] {CALL_TEXT}" in events(rendered(functions))


def _failing_tool_spans() -> Any:
    """A model call, then a tool that raised, recorded by the OpenTelemetry SDK itself (its
    ``start_as_current_span`` sets the ERROR status and records the exception event)."""
    sdk = pytest.importorskip(
        "opentelemetry.sdk.trace", reason="opentelemetry-sdk is not installed"
    )
    export = pytest.importorskip("opentelemetry.sdk.trace.export")
    memory = pytest.importorskip("opentelemetry.sdk.trace.export.in_memory_span_exporter")
    exporter = memory.InMemorySpanExporter()
    provider = sdk.TracerProvider()
    provider.add_span_processor(export.SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("booking-agent")
    first, tool_span, _ = booking.GENAI_SPANS
    tool = {k: v for k, v in tool_span[3].items() if k != "gen_ai.tool.call.result"}
    # The next model call is told of the failure in the framework's own words.
    told = {
        "role": "tool",
        "parts": [
            {"type": "tool_call_response", "id": "call_8f2k", "response": "Error: no tables"}
        ],
    }
    history = [*json.loads(booking.GENAI_SPANS[2][3]["gen_ai.input.messages"])[:2], told]
    sorry = {"role": "assistant", "parts": [{"type": "text", "content": "Sorry, 8pm is full."}]}
    then = {
        "gen_ai.operation.name": "chat",
        "gen_ai.input.messages": json.dumps(history),
        "gen_ai.output.messages": json.dumps([sorry]),
    }
    with tracer.start_as_current_span("agent run", start_time=1):
        tracer.start_span(first[0], start_time=1_000, attributes=first[3]).end(end_time=2_000)
        with (
            pytest.raises(RuntimeError),
            tracer.start_as_current_span(
                tool_span[0], start_time=3_000, attributes=tool, end_on_exit=False
            ) as failing,
        ):
            raise RuntimeError("no tables left at 8pm")
        failing.end(end_time=4_000)
        tracer.start_span("chat gpt-4.1", start_time=5_000, attributes=then).end(end_time=6_000)
    return exporter.get_finished_spans()


def test_a_failed_tool_span_shows_its_error_as_the_result_once() -> None:
    spans = _failing_tool_spans()
    expected = [
        f"user --> assistant: [CONVERSATION] {ASK}",
        f"assistant acts: [THINK] {THOUGHT}",
        f"assistant acts: [TOOL_CALL] {CALL_TEXT}",
        "tool:book_table --> assistant: [TOOL_RESULT] (error) RuntimeError: no tables left at 8pm",
        "assistant acts: [TALK] Sorry, 8pm is full.",
    ]
    assert events(rendered(spans)) == expected
    # The same spans as span.to_json() writes them.
    assert events(rendered([json.loads(span.to_json()) for span in spans])) == expected
    # An OTLP/JSON export writes the status as a code (2, ERROR) and a message.
    otlp = copy.deepcopy(booking.OTEL_GENAI)
    tool_span = otlp["resourceSpans"][0]["scopeSpans"][0]["spans"][1]
    tool_span["attributes"] = [
        a for a in tool_span["attributes"] if a["key"] != "gen_ai.tool.call.result"
    ]
    tool_span["status"] = {"code": 2, "message": "ConnectionError: the booking service is down"}
    tool_span["events"] = [
        {
            "name": "exception",
            "timeUnixNano": "1790000000000003500",
            "attributes": [
                {"key": "exception.type", "value": {"stringValue": "ConnectionError"}},
                {
                    "key": "exception.message",
                    "value": {"stringValue": "the booking service is down"},
                },
            ],
        }
    ]
    assert (
        "tool:book_table --> assistant: [TOOL_RESULT] (error) ConnectionError: the booking "
        "service is down" in events(rendered(otlp))
    )


def test_an_openinference_chain_s_text_output_is_shown_unless_shown_already() -> None:
    semconv = pytest.importorskip(
        "openinference.semconv.trace", reason="openinference-semantic-conventions not installed"
    )
    names = semconv.SpanAttributes
    kind = names.OPENINFERENCE_SPAN_KIND
    chain = semconv.OpenInferenceSpanKindValues.CHAIN.value

    def chain_span(start: int, end: int, output: str, mime: str = "text/plain") -> dict[str, Any]:
        attributes = {
            kind: chain,
            names.INPUT_VALUE: ASK,
            names.OUTPUT_VALUE: output,
            names.OUTPUT_MIME_TYPE: mime,
        }
        return booking.otlp_span("RunnableSequence", start, end, attributes)

    spans = list(booking.OPENINFERENCE)
    # A chain around the run whose output is the model's own answer: shown once.
    same = [chain_span(0, 7_000, CONFIRM), *spans]
    assert events(rendered(same)) == events(rendered(booking.OPENINFERENCE))
    # A chain that returns what no model said (a parser's, a formatter's): shown, at its end.
    other = [chain_span(0, 7_000, "Booked: CL-42, 20:00, party of 2."), *spans]
    assert (
        events(rendered(other))[-1] == "assistant acts: [OUTPUT] Booked: CL-42, 20:00, party of 2."
    )
    # A JSON output is the framework's state (its messages are the model spans'): not repeated.
    state = json.dumps({"messages": [{"type": "ai", "content": CONFIRM}]})
    as_json = [chain_span(0, 7_000, state, "application/json"), *spans]
    assert events(rendered(as_json)) == events(rendered(booking.OPENINFERENCE))
