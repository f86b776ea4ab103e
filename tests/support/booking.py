"""One booking conversation written in every transcript format the plugin reads, as plain data.

A user asks for a table, the assistant thinks (where the format can say so), calls the
``book_table`` tool, the tool answers, and the assistant confirms. Ids and timestamps differ from
format to format, as they would in real traces; none of them may reach the judge.
"""

from __future__ import annotations

import json
from typing import Any

ASK = "Book a table for two at Casa Lisboa tonight at 8pm."
THOUGHT = "The user wants a reservation; I should call book_table."
ARGUMENTS = {"party": 2, "restaurant": "Casa Lisboa", "time": "20:00"}
RESULT = {"confirmation": "CL-42", "status": "booked"}
CONFIRM = "Your table for two at Casa Lisboa is booked for 8pm (confirmation CL-42)."

#: What every format shows the judge: the call with its arguments and the tool's answer.
CALL_TEXT = 'book_table({"party": 2, "restaurant": "Casa Lisboa", "time": "20:00"})'
RESULT_TEXT = '{"confirmation": "CL-42", "status": "booked"}'
ARGUMENTS_JSON = json.dumps(ARGUMENTS)
RESULT_JSON = json.dumps(RESULT)

OPENAI_CHAT: list[dict[str, Any]] = [
    {"role": "user", "content": ASK},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_8f2k",
                "type": "function",
                "function": {"name": "book_table", "arguments": ARGUMENTS_JSON},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_8f2k", "content": RESULT_JSON},
    {"role": "assistant", "content": CONFIRM},
]

OPENAI_RESPONSES: list[dict[str, Any]] = [
    {"role": "user", "content": ASK},
    {
        "type": "reasoning",
        "id": "rs_01",
        "summary": [{"type": "summary_text", "text": THOUGHT}],
        "encrypted_content": "gAAAAB-opaque",
    },
    {
        "type": "function_call",
        "id": "fc_01",
        "call_id": "call_8f2k",
        "name": "book_table",
        "arguments": ARGUMENTS_JSON,
        "status": "completed",
    },
    {"type": "function_call_output", "call_id": "call_8f2k", "output": RESULT_JSON},
    {
        "type": "message",
        "id": "msg_02",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": CONFIRM, "annotations": []}],
    },
]

ANTHROPIC: list[dict[str, Any]] = [
    {"role": "user", "content": ASK},
    {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": THOUGHT, "signature": "EqQBCkYIARgC-opaque"},
            {"type": "tool_use", "id": "toolu_01A", "name": "book_table", "input": ARGUMENTS},
        ],
    },
    {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "toolu_01A", "content": RESULT_JSON}],
    },
    {"role": "assistant", "content": [{"type": "text", "text": CONFIRM}]},
]

GEMINI: list[dict[str, Any]] = [
    {"role": "user", "parts": [{"text": ASK}]},
    {
        "role": "model",
        "parts": [
            {"text": THOUGHT, "thought": True},
            {"functionCall": {"name": "book_table", "args": ARGUMENTS}, "thoughtSignature": "Cq0"},
        ],
    },
    {"role": "user", "parts": [{"functionResponse": {"name": "book_table", "response": RESULT}}]},
    {"role": "model", "parts": [{"text": CONFIRM}]},
]

#: A LangGraph state as ``model_dump()`` writes its LangChain messages.
LANGGRAPH_STATE: dict[str, Any] = {
    "messages": [
        {"type": "human", "content": ASK, "id": "5b1c"},
        {
            "type": "ai",
            "content": "",
            "id": "run-7",
            "tool_calls": [
                {"name": "book_table", "args": ARGUMENTS, "id": "call_8f2k", "type": "tool_call"}
            ],
        },
        {"type": "tool", "content": RESULT_JSON, "tool_call_id": "call_8f2k", "name": "book_table"},
        {"type": "ai", "content": CONFIRM, "id": "run-8"},
    ],
    "remaining_steps": 23,
}


def _otlp_value(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    return {"stringValue": value}


def otlp_span(name: str, start: int, end: int, attributes: dict[str, Any]) -> dict[str, Any]:
    """A span as the OTLP/JSON exporter writes it (times in nanoseconds, as strings)."""
    return {
        "traceId": "5b8efff798038103d269b633813fc60c",
        "spanId": f"{start:016x}",
        "name": name,
        "kind": 1,
        "startTimeUnixNano": str(1_790_000_000_000_000_000 + start),
        "endTimeUnixNano": str(1_790_000_000_000_000_000 + end),
        "attributes": [{"key": k, "value": _otlp_value(v)} for k, v in attributes.items()],
    }


def otlp_export(spans: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "resourceSpans": [
            {
                "resource": {
                    "attributes": [{"key": "service.name", "value": {"stringValue": "agent"}}]
                },
                "scopeSpans": [{"scope": {"name": "agent"}, "spans": spans}],
            }
        ]
    }


_USER_GENAI = {"role": "user", "parts": [{"type": "text", "content": ASK}]}
_CALL_GENAI = {
    "role": "assistant",
    "parts": [
        {"type": "reasoning", "content": THOUGHT},
        {"type": "tool_call", "id": "call_8f2k", "name": "book_table", "arguments": ARGUMENTS},
    ],
}
_RESULT_GENAI = {
    "role": "tool",
    "parts": [{"type": "tool_call_response", "id": "call_8f2k", "response": RESULT}],
}
_CONFIRM_GENAI = {"role": "assistant", "parts": [{"type": "text", "content": CONFIRM}]}

#: Attributes of each span of the agent's run, by the GenAI semantic conventions: the first
#: model call, the tool's execution, the second model call (its input repeats the history).
GENAI_SPANS: list[tuple[str, int, int, dict[str, Any]]] = [
    (
        "chat gpt-4.1",
        1_000,
        2_000,
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.input.messages": json.dumps([_USER_GENAI]),
            "gen_ai.output.messages": json.dumps([{**_CALL_GENAI, "finish_reason": "tool_call"}]),
        },
    ),
    (
        "execute_tool book_table",
        3_000,
        4_000,
        {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "book_table",
            "gen_ai.tool.call.id": "call_8f2k",
            "gen_ai.tool.call.arguments": ARGUMENTS_JSON,
            "gen_ai.tool.call.result": RESULT_TEXT,
        },
    ),
    (
        "chat gpt-4.1",
        5_000,
        6_000,
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.input.messages": json.dumps([_USER_GENAI, _CALL_GENAI, _RESULT_GENAI]),
            "gen_ai.output.messages": json.dumps([{**_CONFIRM_GENAI, "finish_reason": "stop"}]),
        },
    ),
]

#: The same run by OpenInference's attribute names.
OPENINFERENCE_SPANS: list[tuple[str, int, int, dict[str, Any]]] = [
    (
        "ChatOpenAI",
        1_000,
        2_000,
        {
            "openinference.span.kind": "LLM",
            "llm.input_messages.0.message.role": "user",
            "llm.input_messages.0.message.content": ASK,
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.tool_calls.0.tool_call.id": "call_8f2k",
            "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "book_table",
            "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": (
                ARGUMENTS_JSON
            ),
        },
    ),
    (
        "book_table",
        3_000,
        4_000,
        {
            "openinference.span.kind": "TOOL",
            "tool.name": "book_table",
            "input.value": ARGUMENTS_JSON,
            "output.value": RESULT_TEXT,
        },
    ),
    (
        "ChatOpenAI",
        5_000,
        6_000,
        {
            "openinference.span.kind": "LLM",
            "llm.input_messages.0.message.role": "user",
            "llm.input_messages.0.message.content": ASK,
            "llm.input_messages.1.message.role": "assistant",
            "llm.input_messages.1.message.tool_calls.0.tool_call.function.name": "book_table",
            "llm.input_messages.1.message.tool_calls.0.tool_call.function.arguments": (
                ARGUMENTS_JSON
            ),
            "llm.input_messages.2.message.role": "tool",
            "llm.input_messages.2.message.tool_call_id": "call_8f2k",
            "llm.input_messages.2.message.content": RESULT_TEXT,
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.content": CONFIRM,
        },
    ),
]

OTEL_GENAI = otlp_export([otlp_span(*span) for span in GENAI_SPANS])
OPENINFERENCE = [otlp_span(*span) for span in OPENINFERENCE_SPANS]

#: Every format's booking, by a name for test ids.
FORMATS: dict[str, Any] = {
    "openai_chat": OPENAI_CHAT,
    "openai_responses": OPENAI_RESPONSES,
    "anthropic": ANTHROPIC,
    "gemini": GEMINI,
    "langgraph": LANGGRAPH_STATE,
    "otel_genai": OTEL_GENAI,
    "openinference": OPENINFERENCE,
}
