"""OpenTelemetry spans of an agent's run, read by the GenAI semantic conventions or OpenInference's.

Spans come in the forms ``otel_spans`` reads. They are grouped by trace and ordered by time: a
span's input messages at its start, its output and a tool's result at its end. A model call's
input repeats the conversation so far, so what was shown already in the trace (the messages
before, a tool span's call and result) is not shown again, and a trace that begins with what
the traces before it ended with (each model call a trace of its own) continues them. A tool
span answering a call the messages showed is that call's result, not a second call; what an
instrumentation did not record is said to be missing, never shown as empty.
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
    NOT_RECORDED,
    Event,
    TranscriptFormat,
    act,
    call_not_recorded,
    call_text,
    data_text,
    heard,
    omitted,
    tool_result,
    unreadable,
)

_GENAI_PARTS = "text, tool_call, tool_call_response, reasoning, blob, file or uri"
#: Where each pydantic-ai version puts a tool span's arguments and result: the GenAI
#: conventions' names, then those of its instrumentation version 2.
_TOOL_ARGUMENTS = ("gen_ai.tool.call.arguments", "tool_arguments")
_TOOL_RESULTS = ("gen_ai.tool.call.result", "tool_response")
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
            part = {"type": "tool_call_response", "response": content, "id": call_id}
            parts.append({**part, "name": flat.get("message.name")})
        elif content is not None:
            parts.append({"type": "text", "content": content})
        parts += _indexed(flat, "message.contents.", _openinference_content)
        # openinference-anthropic writes each tool_use block in the contents, in its place, and
        # again in tool_calls: a call is shown once, where the model wrote it.
        placed = {p.get("id") for p in parts if p["type"] == "tool_call" and p.get("id")}
        calls = _indexed(flat, "message.tool_calls.", _openinference_call)
        parts += [call for call in calls if not call.get("id") or call["id"] not in placed]
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
    if "tool_call.function.name" in flat:  # a tool_use block (openinference-anthropic)
        return _openinference_call(flat)
    return {"type": "blob", "modality": kind}


def _openinference_call(flat: Mapping[str, Any]) -> dict[str, Any]:
    call = {
        "type": "tool_call",
        "id": flat.get("tool_call.id"),
        "name": flat.get("tool_call.function.name"),
    }
    if "tool_call.function.arguments" in flat:
        call["arguments"] = flat["tool_call.function.arguments"]
    return call


# --------------------------------------------------------------------------------------------
# A trace's events


#: Model calls: their output is new. Any other span's output (an agent's answer) repeats what
#: the model calls under it said, and is shown only where it does not.
_MODEL_CALLS = frozenset({"chat", "generate_content", "text_completion"})


@dataclass(frozen=True)
class _Call:
    """A tool call shown from a model's messages, not yet matched by a tool span."""

    text: str
    name: str | None
    id: str | None


@dataclass
class _Trace:
    """What one trace has shown so far, so that repeated history is shown once."""

    #: The ids of the trace's spans: a span whose parent is not among them is a root.
    ids: frozenset[str] = frozenset()
    #: Every event its messages gave, shown or not, by how often.
    said: Counter[Event] = field(default_factory=Counter)
    calls: list[_Call] = field(default_factory=list)  # shown from messages, not yet a tool span
    tool_calls: list[str] = field(default_factory=list)  # shown from tool spans, not yet messages
    #: Of those, the ones whose id is known: id, the call as the tool span showed it.
    tool_call_ids: dict[str, str] = field(default_factory=dict)
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


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _call_shown(name: Any, part: Mapping[str, Any], key: str) -> str:
    """A call as shown: ``name(arguments)``, or that its arguments were not recorded."""
    if key not in part:
        return call_not_recorded(name)
    return call_text(name, part[key])


def _message_events(
    trace: _Trace, message: Mapping[str, Any], where: str
) -> list[tuple[Event, str | None, str | None]]:
    """One GenAI message's events, each with the call id it makes or answers and the tool it
    names; consecutive text and media parts are one. A part whose content was not recorded
    says so."""
    role = str(message.get("role") or "user")
    actor = one_line(str(message.get("name") or "")) or (
        "assistant" if role == "assistant" else role
    )
    said: list[str] = []
    events: list[tuple[Event, str | None, str | None]] = []
    for j, part in enumerate(message.get("parts") or []):
        at = f"{where}, part #{j}"
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind == "text":
            said.append(str(part.get("content", "")) if "content" in part else NOT_RECORDED)
            continue
        if kind in ("blob", "file", "uri"):
            said.append(omitted(str(part.get("modality") or kind), part.get("mime_type")))
            continue
        if said:
            events.append((_spoken(role, actor, "\n".join(said)), None, None))
            said = []
        call_id, name = _text(part.get("id")), _text(part.get("name"))
        if kind == "reasoning":
            events.append((act(actor, "THINK", str(part.get("content", ""))), None, None))
        elif kind == "tool_call":
            if call_id and name:
                trace.tools[call_id] = name
            events.append(
                (act(actor, "TOOL_CALL", _call_shown(name, part, "arguments")), call_id, name)
            )
        elif kind == "tool_call_response":
            # "response" in the conventions; "result" as pydantic-ai writes it
            key = "response" if "response" in part else "result"
            text = data_text(part[key], at) if key in part else NOT_RECORDED
            name = name or trace.tools.get(str(call_id))
            events.append((tool_result(name, text), call_id, name))
        else:
            raise unreadable(f"{at}'s type", kind if isinstance(kind, str) else part, _GENAI_PARTS)
    if said:
        events.append((_spoken(role, actor, "\n".join(said)), None, None))
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
        for event, call_id, name in _message_events(trace, message, f"{where}, message #{index}"):
            seen[event] += 1
            if repeats and seen[event] <= trace.said[event]:
                continue
            trace.said[event] += 1
            if event.kind == "TOOL_CALL":
                if call_id in trace.tool_call_ids:
                    _claim(trace.tool_calls, trace.tool_call_ids.pop(call_id))
                    continue
                if _claim(trace.tool_calls, event.text):
                    continue
                trace.calls.append(_Call(event.text, name, call_id))
            if event.kind == "TOOL_RESULT":
                if _claim(trace.results, event.text):
                    continue
                if call_id in trace.failed:
                    trace.failed.discard(call_id)
                    continue
            trace.events.append(event)


def _answered(trace: _Trace, name: str, text: str | None, call_id: str | None) -> bool:
    """Whether a tool span answers a call the model's messages showed: by its id; else (one of
    them without an id) by the same arguments, else by the tool's name, the first such call
    (a span may write the arguments otherwise than the model, as OpenInference's LangChain
    tool span writes a one-argument tool's input as the bare value). That call is then
    accounted for."""
    unmatched = [found for found in trace.calls if call_id is None or found.id is None]
    candidates = (
        [found for found in trace.calls if call_id is not None and found.id == call_id],
        [found for found in unmatched if text is not None and found.text == text],
        [found for found in unmatched if found.name == name],
    )
    for found in candidates:
        if found:
            trace.calls.remove(found[0])
            return True
    return False


def _tool_call(trace: _Trace, span: Span, name: Any, arguments: Any, call_id: Any) -> None:
    """A tool span's call, unless it answers a call shown already. ``arguments`` is a tuple
    holding them, or empty when the span did not record them."""
    if not isinstance(name, str) or not name.strip():
        raise ValueError(
            f"{span.label} is a tool span without a tool name; expected gen_ai.tool.name or "
            "tool.name"
        )
    call_id = _text(call_id)
    text = call_text(name, arguments[0]) if arguments else None
    if _answered(trace, name, text, call_id):
        return
    shown = text or _call_shown(name, {}, "arguments")
    trace.tool_calls.append(shown)
    if call_id:
        trace.tool_call_ids[call_id] = shown
    trace.events.append(act("assistant", "TOOL_CALL", shown))


def _tool_result(
    trace: _Trace, span: Span, name: str, result: Any, call_id: Any, *, failed: bool = False
) -> None:
    """What a tool span returned; when it failed (its status, or the tool message it returned
    says so: ``failed``), its error (and anything it returned) as an error result."""
    text = None if result is None else data_text(result, f"{span.label}'s result")
    if text is not None:
        trace.results.append(text)
    if span.errors or (failed and text is not None):
        if isinstance(call_id, str):
            trace.failed.add(call_id)
        shown = "\n".join([*span.errors, *([text] if text else [])])
        trace.events.append(tool_result(name, shown, error=True))
    elif text is not None:
        trace.events.append(tool_result(name, text))


def _tool_message(value: Any) -> tuple[Any, str | None, bool]:
    """An OpenInference TOOL span's ``output.value``: the content of the tool message a
    framework returns (LangChain's ``{"type": "tool", "data": {...}}`` or its ``dumpd`` form),
    the call id it answers and whether its status is ``error`` (LangGraph's ToolNode returns a
    tool's exception so); any other value as it is."""
    data: Any = value
    if isinstance(value, str) and value.lstrip()[:1] == "{":
        try:
            data = json.loads(value)
        except (ValueError, RecursionError):
            return value, None, False
    if not isinstance(data, Mapping):
        return value, None, False
    if data.get("type") == "tool" and isinstance(data.get("data"), Mapping):
        inner = data["data"]
    elif data.get("type") == "constructor" and isinstance(data.get("kwargs"), Mapping):
        inner = data["kwargs"]
        if list(data.get("id") or [])[-1:] != ["ToolMessage"]:
            return value, None, False
    else:
        return value, None, False
    if "content" not in inner:
        return value, None, False
    return inner["content"], _text(inner.get("tool_call_id")), inner.get("status") == "error"


def _is_root(trace: _Trace, span: Span) -> bool:
    return not span.parent or span.parent not in trace.ids


def _chain_output(trace: _Trace, span: Span) -> None:
    """An OpenInference CHAIN or AGENT span's text output (an answer a framework returns), from
    the root of what the user holds (an inner chain's output is a step of the framework's: a
    LangGraph route such as ``__end__``, a prompt), where the trace has not shown the same text
    already. A JSON output is the framework's state (prompt values, message lists): its
    messages are the model spans' own, and it is not shown."""
    value = span.attributes.get("output.value")
    if value is None or span.attributes.get("output.mime_type") == "application/json":
        return
    if not _is_root(trace, span):
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


def _first(attributes: Mapping[str, Any], keys: tuple[str, ...]) -> tuple[Any, ...]:
    """The first of ``keys`` the span holds, in a tuple; empty when it holds none."""
    return next(((attributes[key],) for key in keys if key in attributes), ())


def _reads_messages(span: Span) -> bool:
    """Whether a span's ``llm.*_messages`` are a model call's: an OpenInference LLM span's
    (an AGENT or CHAIN span copies the state's messages or its model's calls)."""
    return str(span.attributes.get("openinference.span.kind", "LLM")) == "LLM"


def _openinference_at(span: Span, prefix: str) -> list[Mapping[str, Any]]:
    return _openinference_messages(span, prefix) if _reads_messages(span) else []


def _at_start(trace: _Trace, span: Span) -> None:
    attributes = span.attributes
    if attributes.get("gen_ai.operation.name") == "execute_tool":
        _tool_call(
            trace,
            span,
            attributes.get("gen_ai.tool.name"),
            _first(attributes, _TOOL_ARGUMENTS),
            attributes.get("gen_ai.tool.call.id"),
        )
    elif attributes.get("openinference.span.kind") == "TOOL":
        _, answers, _ = _tool_message(attributes.get("output.value"))
        arguments = _first(attributes, ("input.value",))
        name = attributes.get("tool.name")
        _tool_call(trace, span, name, arguments, answers or attributes.get("tool.id"))
    system = _genai_messages(span, "gen_ai.system_instructions")
    if system:
        _show_messages(trace, system, f"{span.label}'s system instructions", repeats=True)
    inputs = _genai_messages(span, "gen_ai.input.messages") or _openinference_at(
        span, "llm.input_messages."
    )
    _show_messages(trace, inputs, f"{span.label}'s input", repeats=True)


def _at_end(trace: _Trace, span: Span) -> None:
    attributes = span.attributes
    outputs = _genai_messages(span, "gen_ai.output.messages") or _openinference_at(
        span, "llm.output_messages."
    )
    model_call = (
        attributes.get("gen_ai.operation.name", "chat") in _MODEL_CALLS
        or attributes.get("openinference.span.kind") == "LLM"
    )
    _show_messages(trace, outputs, f"{span.label}'s output", repeats=not model_call)
    kind = attributes.get("openinference.span.kind")
    if attributes.get("gen_ai.operation.name") == "execute_tool":
        result = _first(attributes, _TOOL_RESULTS)
        _tool_result(
            trace,
            span,
            attributes["gen_ai.tool.name"],
            result[0] if result else None,
            attributes.get("gen_ai.tool.call.id"),
        )
    elif kind == "TOOL":
        content, answers, failed = _tool_message(attributes.get("output.value"))
        call_id = answers or attributes.get("tool.id")
        _tool_result(trace, span, attributes["tool.name"], content, call_id, failed=failed)
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


def _repeated(shown: list[Event], new: list[Event]) -> int:
    """How many of a trace's first events repeat the last ones shown: a trace that begins with
    what the traces before it ended with continues them (each model call a trace of its own,
    its input the history; a tool span in a trace of its own). The trace must add something:
    one that only says again what was shown (the same run twice) is shown whole."""
    for start in range(max(0, len(shown) - len(new) + 1), len(shown)):
        if shown[start] == new[0] and shown[start:] == new[: len(shown) - start]:
            return len(shown) - start
    return 0


def _events(value: Any) -> list[Event]:
    spans = read_spans(value)
    by_trace: dict[str, list[tuple[int, Span]]] = {}
    for index, span in enumerate(spans):
        _check_conventions(span)
        by_trace.setdefault(span.trace, []).append((index, span))
    ordered = sorted(by_trace.values(), key=lambda group: min(s.start for _, s in group))
    events: list[Event] = []
    for group in ordered:
        trace = _Trace(ids=frozenset(s.span_id for _, s in group if s.span_id))
        points = sorted(
            [(s.start, 0, i, s) for i, s in group] + [(s.end, 1, i, s) for i, s in group],
            key=lambda point: point[:3],
        )
        for _, end, _, span in points:
            (_at_end if end else _at_start)(trace, span)
        events += trace.events[_repeated(events, trace.events) :]
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
