"""OpenTelemetry spans of an agent's run, read by the GenAI semantic conventions or OpenInference's.

Spans come as the SDK's span objects (``InMemorySpanExporter.get_finished_spans()``), as OTLP/JSON
(``{"resourceSpans": [...]}`` or its spans), or as ``span.to_json()`` dicts. They are grouped by
trace and ordered by time: a span's input messages at its start, its output and a tool's result
at its end. A model call's input repeats the conversation so far, so what was shown already in
the trace (the messages before, a tool span's call and result) is not shown again.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .data_text import one_line, type_name
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
#: The GenAI conventions' event that may carry a model call's messages instead of its span.
_DETAILS_EVENT = "gen_ai.client.inference.operation.details"


@dataclass(frozen=True)
class Span:
    """What a span says, whatever form it came in; no ids or clock times beyond ordering."""

    label: str
    trace: str
    start: int
    end: int
    attributes: Mapping[str, Any]
    event_names: tuple[str, ...]


# --------------------------------------------------------------------------------------------
# Spans in their three forms


def _is_sdk_span(value: Any) -> bool:
    return (
        not isinstance(value, Mapping | type)
        and isinstance(getattr(value, "attributes", None), Mapping)
        and hasattr(value, "start_time")
        and hasattr(value, "context")
    )


def _is_otlp_span(value: Any) -> bool:
    return isinstance(value, Mapping) and "traceId" in value and "startTimeUnixNano" in value


def _is_json_span(value: Any) -> bool:
    return (
        isinstance(value, Mapping)
        and isinstance(value.get("context"), Mapping)
        and "start_time" in value
        and isinstance(value.get("attributes", {}), Mapping)
    )


def _is_export(value: Any) -> bool:
    return isinstance(value, Mapping) and isinstance(value.get("resourceSpans"), list | tuple)


def is_span(value: Any) -> bool:
    return _is_sdk_span(value) or _is_otlp_span(value) or _is_json_span(value)


def _recognise(value: Any) -> bool:
    if _is_export(value):
        return True
    return (
        isinstance(value, list | tuple)
        and bool(value)
        and all(is_span(item) or _is_export(item) for item in value)
    )


def _any_value(value: Any, where: str) -> Any:
    """An OTLP/JSON ``AnyValue`` as plain data."""
    if not isinstance(value, Mapping) or len(value) != 1:
        raise unreadable(where, value, "an OTLP AnyValue such as {'stringValue': '...'}")
    [(kind, inner)] = value.items()
    if kind in ("stringValue", "boolValue", "doubleValue"):
        return inner
    if kind == "intValue":
        return int(inner)
    if kind == "arrayValue":
        return [_any_value(v, where) for v in (inner or {}).get("values", [])]
    if kind == "kvlistValue":
        return _otlp_attributes((inner or {}).get("values", []), where)
    if kind == "bytesValue":
        return omitted("bytes")
    raise unreadable(
        f"{where}'s value kind",
        kind,
        "stringValue, boolValue, intValue, doubleValue, arrayValue, kvlistValue or bytesValue",
    )


def _otlp_attributes(pairs: Any, where: str) -> dict[str, Any]:
    if not isinstance(pairs, list | tuple):
        raise TypeError(
            f"{where}: attributes must be a list of {{key, value}}, got {type_name(pairs)}"
        )
    out: dict[str, Any] = {}
    for pair in pairs:
        if not isinstance(pair, Mapping) or not isinstance(pair.get("key"), str):
            raise unreadable(f"{where}: an attribute", pair, "{'key': ..., 'value': {...}}")
        out[pair["key"]] = _any_value(pair.get("value"), f"{where}: attribute {pair['key']}")
    return out


def _nanos(value: Any, where: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        if value.isdigit():
            return int(value)
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            pass
        else:
            return int(moment.timestamp() * 1_000_000) * 1000
    raise unreadable(f"{where}'s start or end time", value, "nanoseconds or an ISO time")


def _spans(value: Any) -> list[Span]:
    """Every span in the target, in the form above, in the order given."""
    raw: list[Any] = []
    for item in [value] if _is_export(value) else value:
        if _is_export(item):
            for resource in item["resourceSpans"]:
                for scope in (resource or {}).get("scopeSpans", []):
                    raw.extend((scope or {}).get("spans", []))
        else:
            raw.append(item)
    spans: list[Span] = []
    for i, span in enumerate(raw):
        where = f"span #{i}"
        if _is_sdk_span(span):
            name = getattr(span, "name", "")
            start = _nanos(span.start_time, where)
            end = _nanos(span.end_time if span.end_time is not None else start, where)
            trace = str(getattr(span.context, "trace_id", ""))
            attributes = dict(span.attributes)
            found = [
                (str(getattr(e, "name", "")), dict(getattr(e, "attributes", None) or {}))
                for e in getattr(span, "events", ()) or ()
            ]
        elif _is_otlp_span(span):
            name = span.get("name", "")
            start = _nanos(span["startTimeUnixNano"], where)
            end = _nanos(span.get("endTimeUnixNano") or start, where)
            trace = str(span["traceId"])
            attributes = _otlp_attributes(span.get("attributes", []), where)
            found = [
                (str(e.get("name", "")), _otlp_attributes(e.get("attributes", []), where))
                for e in span.get("events", []) or []
            ]
        elif _is_json_span(span):
            name = span.get("name", "")
            start = _nanos(span["start_time"], where)
            end = _nanos(span.get("end_time") or start, where)
            trace = str(span["context"].get("trace_id", ""))
            attributes = dict(span.get("attributes") or {})
            found = [
                (str(e.get("name", "")), dict(e.get("attributes") or {}))
                for e in span.get("events", []) or []
            ]
        else:
            raise TypeError(
                f"{where} is a {type_name(span)}; expected an OpenTelemetry span: an SDK span "
                "object, an OTLP/JSON span (traceId, startTimeUnixNano, attributes) or "
                "span.to_json()'s dict"
            )
        label = f"span #{i} ({one_line(str(name))!r})"
        for event_name, details in found:
            if event_name == _DETAILS_EVENT:  # where newer instrumentations put the messages
                attributes = {**details, **attributes}
        names = tuple(event_name for event_name, _ in found)
        spans.append(Span(label, trace, start, end, attributes, names))
    return spans


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
            parts.append({"type": "tool_call_response", "response": content})
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


def _message_events(trace: _Trace, message: Mapping[str, Any], where: str) -> list[Event]:
    """One GenAI message's events; consecutive text and media parts are one."""
    role = str(message.get("role") or "user")
    actor = one_line(str(message.get("name") or "")) or (
        "assistant" if role == "assistant" else role
    )
    said: list[str] = []
    events: list[Event] = []
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
            events.append(_spoken(role, actor, "\n".join(said)))
            said = []
        if kind == "reasoning":
            events.append(act(actor, "THINK", str(part.get("content", ""))))
        elif kind == "tool_call":
            if isinstance(part.get("id"), str) and isinstance(part.get("name"), str):
                trace.tools[part["id"]] = part["name"]
            events.append(
                act(actor, "TOOL_CALL", call_text(part.get("name"), part.get("arguments")))
            )
        elif kind == "tool_call_response":
            text = data_text(part.get("response"), at)
            events.append(tool_result(trace.tools.get(str(part.get("id"))), text))
        else:
            raise unreadable(f"{at}'s type", kind if isinstance(kind, str) else part, _GENAI_PARTS)
    if said:
        events.append(_spoken(role, actor, "\n".join(said)))
    return events


def _show_messages(
    trace: _Trace, messages: list[Mapping[str, Any]], where: str, *, repeats: bool
) -> None:
    """The messages' events the trace has not shown. Where they may repeat it (a model call's
    input history, an agent's answer), the n-th time an event occurs in them is new only if
    the trace has said it fewer than n times; a tool call or result a tool span showed is not
    shown again."""
    seen: Counter[Event] = Counter()
    for index, message in enumerate(messages):
        for event in _message_events(trace, message, f"{where}, message #{index}"):
            seen[event] += 1
            if repeats and seen[event] <= trace.said[event]:
                continue
            trace.said[event] += 1
            if event.kind == "TOOL_CALL":
                if _claim(trace.tool_calls, event.text):
                    continue
                trace.calls.append(event.text)
            if event.kind == "TOOL_RESULT" and _claim(trace.results, event.text):
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


def _tool_result(trace: _Trace, span: Span, name: str, result: Any) -> None:
    text = data_text(result, f"{span.label}'s result")
    trace.results.append(text)
    trace.events.append(tool_result(name, text))


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
    if attributes.get("gen_ai.operation.name") == "execute_tool":
        if "gen_ai.tool.call.result" in attributes:
            _tool_result(
                trace, span, attributes["gen_ai.tool.name"], attributes["gen_ai.tool.call.result"]
            )
    elif attributes.get("openinference.span.kind") == "TOOL" and "output.value" in attributes:
        _tool_result(trace, span, attributes["tool.name"], attributes["output.value"])


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
    spans = _spans(value)
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
    recognise=_recognise,
    events=_events,
)
