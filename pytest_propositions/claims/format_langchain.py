"""LangChain messages (a LangGraph state's ``messages``), read through their public attributes.

``as_data`` reads a message object's ``type``, ``content``, ``tool_calls``, ``tool_call_id``,
``name``, ``additional_kwargs`` and ``status`` into a dict; dicts of that shape
(``model_dump()``'s) are read the same, and so are the two shapes LangChain stores messages in
(``messages_to_dict``, ``dumpd``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .data_text import type_name
from .transcript_notation import (
    LANGCHAIN_TYPES,
    Event,
    TranscriptFormat,
    act,
    call_text,
    heard,
    items_of,
    omitted,
    tool_result,
    unreadable,
)

_MEDIA = ("image", "image_url", "file", "audio", "input_audio", "video")
#: A provider's spelling of a call that ``tool_calls`` also holds (shown once, from there).
_CALL_BLOCKS = ("tool_use", "tool_call", "function_call")
_EXPECTED = "text, image, image_url, file, audio, thinking, reasoning, tool_use or tool_call"


def _kind(message: Mapping[str, Any]) -> str:
    """``ai``, ``human``, ... for a message and its streamed chunk alike."""
    kind = str(message["type"])
    return kind.removesuffix("MessageChunk").lower() if kind.endswith("MessageChunk") else kind


#: The message classes ``dumpd`` names (``"id": ["langchain", ..., "AIMessage"]``), by the
#: ``type`` their messages have.
_CLASS_TYPES = {
    "HumanMessage": "human",
    "AIMessage": "ai",
    "ToolMessage": "tool",
    "SystemMessage": "system",
    "FunctionMessage": "function",
    "ChatMessage": "chat",
} | {name: name for name in LANGCHAIN_TYPES if name.endswith("MessageChunk")}


def stored_message(value: Any) -> Any:
    """A message as LangChain stores it, read as the message: ``messages_to_dict``'s
    ``{"type": "human", "data": {...}}`` and ``dumpd``'s ``{"lc": 1, "type": "constructor",
    "id": [..., "HumanMessage"], "kwargs": {...}}``; anything else unchanged."""
    if not isinstance(value, Mapping) or "content" in value:
        return value
    data, kind = value.get("data"), value.get("type")
    if isinstance(data, Mapping) and kind in LANGCHAIN_TYPES and "content" in data:
        return {**data, "type": data.get("type", kind)}
    kwargs, path = value.get("kwargs"), value.get("id")
    if (
        value.get("lc") == 1
        and kind == "constructor"
        and isinstance(kwargs, Mapping)
        and isinstance(path, list | tuple)
        and path
        and path[-1] in _CLASS_TYPES
    ):
        return {**kwargs, "type": kwargs.get("type", _CLASS_TYPES[path[-1]])}
    return value


def _is_message(value: Any) -> bool:
    value = stored_message(value)
    return (
        isinstance(value, Mapping) and value.get("type") in LANGCHAIN_TYPES and "content" in value
    )


def _recognise(value: Any) -> bool:
    return isinstance(value, list | tuple) and all(_is_message(item) for item in value)


def _reasoning(block: Mapping[str, Any]) -> str:
    text = block.get("thinking", block.get("reasoning"))
    if isinstance(text, str):
        return text
    summary = block.get("summary")
    if isinstance(summary, list | tuple):
        return "\n".join(str(s.get("text", "")) for s in summary if isinstance(s, Mapping))
    return "(reasoning not shown)"


def _content(content: Any, where: str, call_ids: set[str]) -> tuple[str, list[str], list[str]]:
    """The text, the thoughts and the calls not already in ``tool_calls`` of a content list."""
    if content is None or isinstance(content, str):
        return content or "", [], []
    said: list[str] = []
    thoughts: list[str] = []
    calls: list[str] = []
    for j, block in enumerate(items_of(content, where, "content")):
        if isinstance(block, str):
            said.append(block)
            continue
        if not isinstance(block, Mapping):
            raise TypeError(f"{where}: content block #{j} must be a dict, got {type_name(block)}")
        kind = block.get("type")
        if kind == "text":
            said.append(str(block.get("text", "")))
        elif kind in _MEDIA:
            said.append(omitted(str(kind), block.get("mime_type")))
        elif kind in ("thinking", "reasoning"):
            thoughts.append(_reasoning(block))
        elif kind == "redacted_thinking":
            thoughts.append("(redacted thinking)")
        elif kind in _CALL_BLOCKS:
            if block.get("id") not in call_ids:
                arguments = block.get("input", block.get("args", block.get("arguments")))
                calls.append(call_text(block.get("name"), arguments))
        else:
            raise unreadable(f"{where}: content block #{j}'s type", kind, _EXPECTED)
    return "\n".join(said), thoughts, calls


def _provider_calls(
    message: Mapping[str, Any], where: str, known: set[str] | None, tool_names: dict[str, str]
) -> list[str]:
    """The calls an AI message holds only in ``additional_kwargs``, in the provider's own
    (OpenAI) spelling: older LangChain and some adapters leave ``tool_calls`` empty and keep
    them there. When ``tool_calls`` or ``invalid_tool_calls`` hold calls (``known``: their
    ids), LangChain read them from there: only a call with another id is shown."""
    extra = message.get("additional_kwargs")
    if extra is None:
        return []
    if not isinstance(extra, Mapping):
        raise TypeError(f"{where}: additional_kwargs must be a dict, got {type_name(extra)}")
    calls: list[str] = []
    for j, call in enumerate(
        items_of(extra.get("tool_calls"), where, "additional_kwargs.tool_calls")
    ):
        if not isinstance(call, Mapping) or not isinstance(call.get("function"), Mapping):
            raise unreadable(
                f"{where}: additional_kwargs.tool_calls[{j}]",
                call,
                'an OpenAI tool call {"id": ..., "function": {"name": ..., "arguments": ...}}',
            )
        call_id, name = call.get("id"), call["function"].get("name")
        if known is not None and not (isinstance(call_id, str) and call_id not in known):
            continue
        if isinstance(call_id, str) and isinstance(name, str):
            tool_names[call_id] = name
        calls.append(call_text(name, call["function"].get("arguments")))
    legacy = extra.get("function_call")
    if legacy is not None and known is None:
        if not isinstance(legacy, Mapping):
            raise unreadable(
                f"{where}: additional_kwargs.function_call",
                legacy,
                'an OpenAI function call {"name": ..., "arguments": ...}',
            )
        calls.append(call_text(legacy.get("name"), legacy.get("arguments")))
    return calls


def _events(messages: Sequence[Any]) -> list[Event]:
    tool_names: dict[str, str] = {}
    events: list[Event] = []
    for i, message in enumerate(map(stored_message, messages)):
        where = f"LangChain message #{i}"
        kind = _kind(message)
        name = message.get("name") if isinstance(message.get("name"), str) else None
        calls = items_of(message.get("tool_calls"), where, "tool_calls")
        call_ids = {
            c["id"] for c in calls if isinstance(c, Mapping) and isinstance(c.get("id"), str)
        }
        text, thoughts, extra_calls = _content(message.get("content"), where, call_ids)
        if kind == "ai":
            invalid = items_of(message.get("invalid_tool_calls"), where, "invalid_tool_calls")
            known = (
                call_ids | {c.get("id") for c in invalid if isinstance(c, Mapping)} - {None}
                if calls or invalid
                else None
            )
            extra_calls += _provider_calls(message, where, known, tool_names)
            actor = name or "assistant"
            events += [act(actor, "THINK", thought) for thought in thoughts]
            if text or not (calls or extra_calls):
                events.append(act(actor, "TALK", text))
            for call in calls:
                if not isinstance(call, Mapping):
                    raise TypeError(f"{where}: a tool call must be a dict, got {type_name(call)}")
                events.append(
                    act(actor, "TOOL_CALL", call_text(call.get("name"), call.get("args")))
                )
                if call.get("id") in call_ids and isinstance(call.get("name"), str):
                    tool_names[call["id"]] = call["name"]
            events += [act(actor, "TOOL_CALL", shown) for shown in extra_calls]
            for bad in items_of(message.get("invalid_tool_calls"), where, "invalid_tool_calls"):
                shown = call_text(bad.get("name"), bad.get("args"))
                events.append(act(actor, "TOOL_CALL", f"{shown} (invalid: {bad.get('error')})"))
        elif thoughts or extra_calls:
            raise ValueError(
                f"{where} is a {kind} message holding thinking or tool-call blocks; expected "
                "those in an AI message"
            )
        elif kind in ("tool", "function"):
            call_id = message.get("tool_call_id")
            tool = name or (tool_names.get(call_id) if isinstance(call_id, str) else None)
            events.append(tool_result(tool, text, error=message.get("status") == "error"))
        elif kind == "system":
            events.append(heard(name or "system", "SYSTEM", text))
        elif kind == "human":
            events.append(heard(name or "user", "CONVERSATION", text))
        else:
            role = message.get("role") if isinstance(message.get("role"), str) else kind
            events.append(heard(name or role, "MESSAGE", text))
    return events


LANGCHAIN = TranscriptFormat(
    name="LangChain messages",
    is_message=_is_message,
    recognise=_recognise,
    events=_events,
)
