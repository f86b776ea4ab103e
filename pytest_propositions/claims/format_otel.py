"""OpenTelemetry spans of an agent's run, read by the GenAI semantic conventions or OpenInference's.

Spans come as the SDK's span objects (``InMemorySpanExporter.get_finished_spans()``), as OTLP/JSON
(``{"resourceSpans": [...]}`` or its spans), or as ``span.to_json()`` dicts. They are grouped by
trace and ordered by time: a span's input messages at its start, its output and a tool's result
at its end. A model call's input repeats the conversation so far, so what was shown already in
the trace (the messages before, a tool span's call and result) is not shown again. A value that
cannot be read is refused with its path in the target (``resourceSpans[0].scopeSpans[1].spans``).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..checks import TOO_DEEP
from .data_text import check_plain_data, one_line
from .otel_spans import Span, is_span, read_spans, recognise
from .transcript_notation import (
    Event,
    TranscriptFormat,
    act,
    call_text,
    data_text,
    heard,
    omitted,
    tool_result,
    unreadable,
)

_GENAI_PARTS = "text, tool_call, tool_call_response, reasoning, blob, file or uri"
# --------------------------------------------------------------------------------------------
# Messages: the GenAI conventions' JSON, and OpenInference's flattened attributes in that shape


def _genai_messages(span: Span, key: str) -> list[Mapping[str, Any]]:
    raw = span.attributes.get(key)
    if raw is None:
        return []
    try:
        messages = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        raise ValueError(
            f"{span.label}: {key} is not JSON; expected a JSON list of messages"
        ) from None
    except RecursionError:
        raise ValueError(f"{span.label}: {key} holds {TOO_DEEP}") from None
    check_plain_data(messages, f"{span.label}: {key}")
    if key == "gen_ai.system_instructions":
        messages = [{"role": "system", "parts": messages}]
    if not isinstance(messages, list) or not all(
        isinstance(m, Mapping) and isinstance(m.get("parts"), list) for m in messages
    ):
        raise ValueError(
            f"{span.label}: {key} is not a list of messages; expected "
            '[{"role": ..., "parts": [{"type": "text", "content": ...}, ...]}, ...]'
        )
    return messages


def _openinference_messages(span: Span, prefix: str) -> list[Mapping[str, Any]]:
    """``llm.input_messages.0.message.role`` and friends, as messages of GenAI parts."""
    found: dict[int, dict[str, Any]] = {}
    for key, value in span.attributes.items():
        if key.startswith(prefix):
            index, _, rest = key[len(prefix) :].partition(".")
            if not index.isdigit():
                raise unreadable(f"{span.label}: attribute", key, f"{prefix}<N>.message...")
            found.setdefault(int(index), {})[rest] = value
    messages: list[Mapping[str, Any]] = []
    for number in sorted(found):
        flat = found[number]
        role = flat.get("message.role", "user")
        parts: list[dict[str, Any]] = []
        content = flat.get("message.content")
        if content is not None and role == "tool":
            call_id = flat.get("message.tool_call_id")
            parts.append({"type": "tool_call_response", "response": content, "id": call_id})
        elif content is not None:
            parts.append({"type": "text", "content": content})
        parts += _indexed(flat, "message.contents.", _openinference_content)
        parts += _indexed(flat, "message.tool_calls.", _openinference_call)
        message = {"role": role, "parts": parts}
        if isinstance(flat.get("message.name"), str):
            message["name"] = flat["message.name"]
        messages.append(message)
    return messages


def _indexed(flat: Mapping[str, Any], prefix: str, read: Any) -> list[dict[str, Any]]:
    groups: dict[int, dict[str, Any]] = {}
    for key, value in flat.items():
        if key.startswith(prefix):
            index, _, rest = key[len(prefix) :].partition(".")
            if index.isdigit():
                groups.setdefault(int(index), {})[rest] = value
    return [read(groups[i]) for i in sorted(groups)]


def _openinference_content(flat: Mapping[str, Any]) -> dict[str, Any]:
    kind = flat.get("message_content.type", "text")
    if kind == "text":
        return {"type": "text", "content": flat.get("message_content.text", "")}
    return {"type": "blob", "modality": kind}


def _openinference_call(flat: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "type": "tool_call",
        "name": flat.get("tool_call.function.name"),
        "arguments": flat.get("tool_call.function.arguments"),
    }


# --------------------------------------------------------------------------------------------
# A trace's events


#: Model calls: their output is new. Any other span's output (an agent's answer) repeats what
#: the model calls under it said, and is shown only where it does not.
_MODEL_CALLS = frozenset({"chat", "generate_content", "text_completion"})


@dataclass
class _Trace:
    """What one trace has shown so far, so that repeated history is shown once."""

    #: Every event its messages gave, shown or not, by how often.
    said: Counter[Event] = field(default_factory=Counter)
    calls: list[str] = field(default_factory=list)  # shown from messages, not yet from a tool span
    tool_calls: list[str] = field(default_factory=list)  # shown from tool spans, not yet messages
    results: list[str] = field(default_factory=list)  # shown from tool spans, not yet messages
    tools: dict[str, str] = field(default_factory=dict)  # a call's id: its tool
    #: The ids of calls whose tool span failed (its error shown as the result): the message
    #: that later tells the model of that failure, in the framework's words, is the same result.
    failed: set[str] = field(default_factory=set)
    events: list[Event] = field(default_factory=list)


def _claim(pending: list[str], text: str) -> bool:
    """Whether ``text`` was shown already (and is now accounted for)."""
    if text in pending:
        pending.remove(text)
        return True
    return False


def _spoken(role: str, actor: str, text: str) -> Event:
    if role == "assistant":
        return act(actor, "TALK", text)
    if role == "system":
        return heard(actor, "SYSTEM", text)
    return heard(actor, "CONVERSATION" if role == "user" else "MESSAGE", text)


def _message_events(
    trace: _Trace, message: Mapping[str, Any], where: str
) -> list[tuple[Event, str | None]]:
    """One GenAI message's events, each with the call id it answers (a tool result's);
    consecutive text and media parts are one."""
    role = str(message.get("role") or "user")
    actor = one_line(str(message.get("name") or "")) or (
        "assistant" if role == "assistant" else role
    )
    said: list[str] = []
    events: list[tuple[Event, str | None]] = []
    for j, part in enumerate(message.get("parts") or []):
        at = f"{where}, part #{j}"
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind == "text":
            said.append(str(part.get("content", "")))
            continue
        if kind in ("blob", "file", "uri"):
            said.append(omitted(str(part.get("modality") or kind), part.get("mime_type")))
            continue
        if said:
            events.append((_spoken(role, actor, "\n".join(said)), None))
            said = []
        if kind == "reasoning":
            events.append((act(actor, "THINK", str(part.get("content", ""))), None))
        elif kind == "tool_call":
            if isinstance(part.get("id"), str) and isinstance(part.get("name"), str):
                trace.tools[part["id"]] = part["name"]
            shown = call_text(part.get("name"), part.get("arguments"))
            events.append((act(actor, "TOOL_CALL", shown), None))
        elif kind == "tool_call_response":
            text = data_text(part.get("response"), at)
            call_id = part.get("id") if isinstance(part.get("id"), str) else None
            events.append((tool_result(trace.tools.get(str(call_id)), text), call_id))
        else:
            raise unreadable(f"{at}'s type", kind if isinstance(kind, str) else part, _GENAI_PARTS)
    if said:
        events.append((_spoken(role, actor, "\n".join(said)), None))
    return events


def _show_messages(
    trace: _Trace, messages: list[Mapping[str, Any]], where: str, *, repeats: bool
) -> None:
    """The messages' events the trace has not shown. Where they may repeat it (a model call's
    input history, an agent's answer), the n-th time an event occurs in them is new only if
    the trace has said it fewer than n times; a tool call or result a tool span showed (its
    failure included) is not shown again."""
    seen: Counter[Event] = Counter()
    for index, message in enumerate(messages):
        for event, call_id in _message_events(trace, message, f"{where}, message #{index}"):
            seen[event] += 1
            if repeats and seen[event] <= trace.said[event]:
                continue
            trace.said[event] += 1
            if event.kind == "TOOL_CALL":
                if _claim(trace.tool_calls, event.text):
                    continue
                trace.calls.append(event.text)
            if event.kind == "TOOL_RESULT":
                if _claim(trace.results, event.text):
                    continue
                if call_id in trace.failed:
                    trace.failed.discard(call_id)
                    continue
            trace.events.append(event)


def _tool_call(trace: _Trace, span: Span, name: Any, arguments: Any) -> None:
    if not isinstance(name, str) or not name.strip():
        raise ValueError(
            f"{span.label} is a tool span without a tool name; expected gen_ai.tool.name or "
            "tool.name"
        )
    text = call_text(name, arguments)
    if not _claim(trace.calls, text):
        trace.tool_calls.append(text)
        trace.events.append(act("assistant", "TOOL_CALL", text))


def _tool_result(trace: _Trace, span: Span, name: str, result: Any, call_id: Any) -> None:
    """What a tool span returned; when it failed, its error (and anything it returned) as an
    error result."""
    text = None if result is None else data_text(result, f"{span.label}'s result")
    if text is not None:
        trace.results.append(text)
    if span.errors:
        if isinstance(call_id, str):
            trace.failed.add(call_id)
        shown = "\n".join([*span.errors, *([text] if text else [])])
        trace.events.append(tool_result(name, shown, error=True))
    elif text is not None:
        trace.events.append(tool_result(name, text))


def _chain_output(trace: _Trace, span: Span) -> None:
    """An OpenInference CHAIN or AGENT span's text output (an answer a framework returns),
    where the trace has not shown the same text already (the model's own answer, an inner
    chain's). A JSON output is the framework's state (prompt values, message lists): its
    messages are the model spans' own, and it is not shown."""
    value = span.attributes.get("output.value")
    if value is None or span.attributes.get("output.mime_type") == "application/json":
        return
    if isinstance(value, str):
        if value.lstrip()[:1] in ("{", "["):
            try:
                json.loads(value)
            except (ValueError, RecursionError):
                pass
            else:
                return
        text = value.strip()
    else:
        text = data_text(value, f"{span.label}'s output.value")
    folded = " ".join(text.split())
    if folded and all(" ".join(event.text.split()) != folded for event in trace.events):
        trace.events.append(act("assistant", "OUTPUT", text))


def _at_start(trace: _Trace, span: Span) -> None:
    attributes = span.attributes
    if attributes.get("gen_ai.operation.name") == "execute_tool":
        _tool_call(
            trace,
            span,
            attributes.get("gen_ai.tool.name"),
            attributes.get("gen_ai.tool.call.arguments"),
        )
    elif attributes.get("openinference.span.kind") == "TOOL":
        _tool_call(trace, span, attributes.get("tool.name"), attributes.get("input.value"))
    system = _genai_messages(span, "gen_ai.system_instructions")
    if system:
        _show_messages(trace, system, f"{span.label}'s system instructions", repeats=True)
    inputs = _genai_messages(span, "gen_ai.input.messages") or _openinference_messages(
        span, "llm.input_messages."
    )
    _show_messages(trace, inputs, f"{span.label}'s input", repeats=True)


def _at_end(trace: _Trace, span: Span) -> None:
    attributes = span.attributes
    outputs = _genai_messages(span, "gen_ai.output.messages") or _openinference_messages(
        span, "llm.output_messages."
    )
    model_call = (
        attributes.get("gen_ai.operation.name", "chat") in _MODEL_CALLS
        or attributes.get("openinference.span.kind") == "LLM"
    )
    _show_messages(trace, outputs, f"{span.label}'s output", repeats=not model_call)
    kind = attributes.get("openinference.span.kind")
    if attributes.get("gen_ai.operation.name") == "execute_tool":
        _tool_result(
            trace,
            span,
            attributes["gen_ai.tool.name"],
            attributes.get("gen_ai.tool.call.result"),
            attributes.get("gen_ai.tool.call.id"),
        )
    elif kind == "TOOL":
        _tool_result(
            trace,
            span,
            attributes["tool.name"],
            attributes.get("output.value"),
            attributes.get("tool.id"),
        )
    elif kind in ("CHAIN", "AGENT"):
        _chain_output(trace, span)


def _check_conventions(span: Span) -> None:
    """A model span that recorded its messages as span events (the older GenAI conventions) is
    refused by name rather than shown without them."""
    legacy = sorted(
        {
            n
            for n in span.event_names
            if (n.startswith("gen_ai.") and "message" in n) or n == "gen_ai.choice"
        }
    )
    if legacy and "gen_ai.input.messages" not in span.attributes:
        raise ValueError(
            f"{span.label} records its messages as span events ({', '.join(legacy)}), the "
            "GenAI conventions' older form; expected the gen_ai.input.messages and "
            "gen_ai.output.messages attributes"
        )


def _events(value: Any) -> list[Event]:
    spans = read_spans(value)
    by_trace: dict[str, list[tuple[int, Span]]] = {}
    for index, span in enumerate(spans):
        _check_conventions(span)
        by_trace.setdefault(span.trace, []).append((index, span))
    ordered = sorted(by_trace.values(), key=lambda group: min(s.start for _, s in group))
    events: list[Event] = []
    for group in ordered:
        trace = _Trace()
        points = sorted(
            [(s.start, 0, i, s) for i, s in group] + [(s.end, 1, i, s) for i, s in group],
            key=lambda point: point[:3],
        )
        for _, end, _, span in points:
            (_at_end if end else _at_start)(trace, span)
        events += trace.events
    if not events:
        raise ValueError(
            f"none of the {len(spans)} spans holds a model's messages or a tool call; expected "
            "GenAI spans (gen_ai.input.messages, gen_ai.output.messages, an execute_tool span) "
            "or OpenInference LLM and TOOL spans (llm.input_messages..., tool.name)"
        )
    return events


OTEL = TranscriptFormat(
    name="OpenTelemetry spans",
    is_message=is_span,
    recognise=recognise,
    events=_events,
)
