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
import reprlib
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..checks import TOO_DEEP
from .data_text import MAX_TARGET_NESTING, check_plain_data, one_line, type_name
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
#: A nanosecond time has at most 20 digits (OTLP's fixed64); longer is no time.
_MAX_TIME_DIGITS = 20
#: The status code of a span that failed, as each form writes it (SDK, to_json, OTLP/JSON).
_ERROR_CODES = frozenset({"ERROR", "STATUS_CODE_ERROR", 2, "2"})


@dataclass(frozen=True)
class Span:
    """What a span says, whatever form it came in; no ids or clock times beyond ordering."""

    label: str
    trace: str
    start: int
    end: int
    attributes: Mapping[str, Any]
    event_names: tuple[str, ...]
    #: What the span says of its failure: its status's description and its exception events'
    #: "type: message" (empty when it did not fail).
    errors: tuple[str, ...] = ()


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


_SHORT = reprlib.Repr()
_SHORT.maxlevel, _SHORT.maxstring, _SHORT.maxother, _SHORT.maxlist, _SHORT.maxdict = 2, 40, 40, 4, 4


def _got(value: Any) -> str:
    """A value as an error names it: its type and a short repr (``int 5``, ``list [1, 2]``)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        return f"an int of {value.bit_length()} bits"
    if isinstance(value, str) and value.isdigit() and len(value) > _MAX_TIME_DIGITS:
        return f"a str of {len(value)} digits"
    return f"{type_name(value)} {_SHORT.repr(value)}"


def _expected(path: str, what: str, value: Any) -> TypeError:
    return TypeError(f"{path}: expected {what}, got {_got(value)}")


def _list_at(value: Any, path: str, what: str) -> list[Any] | tuple[Any, ...]:
    """A list field of the export (absent: empty); anything else refused by its path."""
    if value is None:
        return []
    if not isinstance(value, list | tuple):
        raise _expected(path, f"a list ({what})", value)
    return value


def _mapping_at(value: Any, path: str, what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise _expected(path, f"an object ({what})", value)
    return value


def _any_value(value: Any, path: str, depth: int = 0, top: str = "") -> Any:
    """An OTLP/JSON ``AnyValue`` at ``path`` as plain data; of a kind or value no reader knows,
    it is refused by its path, and nested past MAX_TARGET_NESTING levels by the path of the
    attribute's value (``top``)."""
    if not isinstance(value, Mapping) or len(value) != 1:
        raise unreadable(path, value, "an OTLP AnyValue such as {'stringValue': '...'}")
    top = top or path
    if depth >= MAX_TARGET_NESTING:
        raise ValueError(
            f"{top} is nested more than {MAX_TARGET_NESTING} levels deep; expected plain data"
        )
    [(kind, inner)] = value.items()
    at = f"{path}.{kind}"
    if kind in ("stringValue", "boolValue", "doubleValue"):
        return inner
    if kind == "intValue":
        return _int_value(inner, at)
    if kind == "arrayValue":
        items = _mapping_at(inner or {}, at, "{'values': [...]}").get("values")
        values = _list_at(items, f"{at}.values", "of AnyValues")
        return [_any_value(v, f"{at}.values[{k}]", depth + 1, top) for k, v in enumerate(values)]
    if kind == "kvlistValue":
        pairs = _mapping_at(inner or {}, at, "{'values': [...]}").get("values")
        return _otlp_attributes(pairs, f"{at}.values", depth + 1, top)
    if kind == "bytesValue":
        return omitted("bytes")
    raise unreadable(
        f"{path}'s value kind",
        kind,
        "stringValue, boolValue, intValue, doubleValue, arrayValue, kvlistValue or bytesValue",
    )


def _int_value(value: Any, path: str) -> int:
    """An OTLP int64: a JSON number or its decimal text."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() <= 64:
        return value
    if isinstance(value, str) and len(value) <= _MAX_TIME_DIGITS:
        text = value.strip()
        if text.removeprefix("-").isdigit():
            return int(text)
    raise _expected(path, "a 64-bit integer or its decimal text", value)


def _otlp_attributes(pairs: Any, path: str, depth: int = 0, top: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, pair in enumerate(_list_at(pairs, path, "of {key, value}")):
        at = f"{path}[{k}]"
        if not isinstance(pair, Mapping) or not isinstance(pair.get("key"), str):
            raise unreadable(f"{at}, an attribute,", pair, "{'key': ..., 'value': {...}}")
        out[pair["key"]] = _any_value(pair.get("value"), f"{at}.value", depth, top)
    return out


def _nanos(value: Any, path: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        if value.isdigit() and len(value) <= _MAX_TIME_DIGITS:
            return int(value)
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            pass
        else:
            return int(moment.timestamp() * 1_000_000) * 1000
    raise _expected(path, "nanoseconds since the epoch or an ISO time", value)


def _raw_spans(value: Any) -> list[tuple[str, Any]]:
    """Every span in the target with its path, in the order given."""
    raw: list[tuple[str, Any]] = []
    single = _is_export(value)
    for i, item in enumerate([value] if single else value):
        if not _is_export(item):
            raw.append((f"span #{i}", item))
            continue
        top = "resourceSpans" if single else f"[{i}].resourceSpans"
        for r, resource in enumerate(item["resourceSpans"]):
            at = f"{top}[{r}]"
            resource = _mapping_at(resource, at, "a resource's spans: {'scopeSpans': [...]}")
            scopes = _list_at(resource.get("scopeSpans"), f"{at}.scopeSpans", "of scopes' spans")
            for c, scope in enumerate(scopes):
                where = f"{at}.scopeSpans[{c}]"
                scope = _mapping_at(scope, where, "a scope's spans: {'spans': [...]}")
                spans = _list_at(scope.get("spans"), f"{where}.spans", "of spans")
                raw += [(f"{where}.spans[{n}]", span) for n, span in enumerate(spans)]
    return raw


def _events_of(events: Any, path: str) -> list[tuple[str, dict[str, Any]]]:
    """A dict span's events: each one's name and attributes (OTLP's list, or to_json's dict)."""
    found: list[tuple[str, dict[str, Any]]] = []
    for k, event in enumerate(_list_at(events, f"{path}.events", "of span events")):
        at = f"{path}.events[{k}]"
        event = _mapping_at(event, at, "a span event: {'name': ..., 'attributes': ...}")
        attributes = event.get("attributes")
        if isinstance(attributes, Mapping):
            found.append((str(event.get("name", "")), dict(attributes)))
        else:
            found.append(
                (str(event.get("name", "")), _otlp_attributes(attributes, f"{at}.attributes"))
            )
    return found


def _status(span: Any, path: str) -> tuple[Any, Any]:
    """A span's status code and description, in whichever form it came."""
    if _is_sdk_span(span):
        status = getattr(span, "status", None)
        code = getattr(getattr(status, "status_code", None), "name", None)
        return code, getattr(status, "description", None)
    status = span.get("status")
    if status is None:
        return None, None
    status = _mapping_at(status, f"{path}.status", "a span status")
    if "status_code" in status:  # span.to_json()
        return status.get("status_code"), status.get("description")
    return status.get("code"), status.get("message")


def _errors(
    code: Any, description: Any, events: list[tuple[str, dict[str, Any]]], error_type: Any
) -> tuple[str, ...]:
    """What a span says of its failure, each thing once: the status's description, then each
    exception event's ``type: message`` that the description does not already say; a failed
    status with neither says the GenAI conventions' ``error.type``, or that it failed."""
    said: list[str] = []
    if code in _ERROR_CODES and isinstance(description, str) and description.strip():
        said.append(description.strip())
    for name, details in events:
        if name != "exception":
            continue
        kind, message = details.get("exception.type"), details.get("exception.message")
        text = ": ".join(str(part) for part in (kind, message) if part not in (None, ""))
        if text and not any(text in earlier for earlier in said):
            said.append(text)
    if code in _ERROR_CODES and not said:
        kind = error_type if isinstance(error_type, str) and error_type.strip() else None
        said.append(kind or "the span's status is ERROR, with no description")
    return tuple(said)


def _spans(value: Any) -> list[Span]:
    """Every span in the target, in the form above, in the order given."""
    spans: list[Span] = []
    for path, span in _raw_spans(value):
        if _is_sdk_span(span):
            name = getattr(span, "name", "")
            start = _nanos(span.start_time, f"{path}.start_time")
            end = _nanos(span.end_time if span.end_time is not None else start, f"{path}.end_time")
            trace = str(getattr(span.context, "trace_id", ""))
            attributes = dict(span.attributes)
            found = []
            for k, e in enumerate(getattr(span, "events", ()) or ()):
                details = getattr(e, "attributes", None) or {}
                if not isinstance(details, Mapping):
                    raise _expected(f"{path}.events[{k}].attributes", "a mapping", details)
                found.append((str(getattr(e, "name", "")), dict(details)))
        elif _is_otlp_span(span):
            name = span.get("name", "")
            start = _nanos(span["startTimeUnixNano"], f"{path}.startTimeUnixNano")
            end = _nanos(span.get("endTimeUnixNano") or start, f"{path}.endTimeUnixNano")
            trace = str(span["traceId"])
            attributes = _otlp_attributes(span.get("attributes"), f"{path}.attributes")
            found = _events_of(span.get("events"), path)
        elif _is_json_span(span):
            name = span.get("name", "")
            start = _nanos(span["start_time"], f"{path}.start_time")
            end = _nanos(span.get("end_time") or start, f"{path}.end_time")
            trace = str(span["context"].get("trace_id", ""))
            attributes = dict(span.get("attributes") or {})
            found = _events_of(span.get("events"), path)
        else:
            raise TypeError(
                f"{path} is a {type_name(span)}; expected an OpenTelemetry span: an SDK span "
                "object, an OTLP/JSON span (traceId, startTimeUnixNano, attributes) or "
                "span.to_json()'s dict"
            )
        label = f"{path} ({one_line(str(name))!r})"
        for event_name, details in found:
            if event_name == _DETAILS_EVENT:  # where newer instrumentations put the messages
                attributes = {**details, **attributes}
        names = tuple(event_name for event_name, _ in found)
        errors = _errors(*_status(span, path), found, attributes.get("error.type"))
        spans.append(Span(label, trace, start, end, attributes, names, errors))
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
