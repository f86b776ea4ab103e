"""Anthropic's messages: a role and a list of content blocks (text, tool use and result, thinking).

Blocks may be plain dicts (``MessageParam``) or the SDK's typed blocks, as a reply's
``content`` is often appended as it came.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .data_text import type_name
from .transcript_notation import (
    Event,
    TranscriptFormat,
    act,
    as_data,
    call_text,
    data_text,
    heard,
    items_of,
    omitted,
    tool_result,
    unreadable,
)

_CALLS = ("tool_use", "server_tool_use", "mcp_tool_use")
_THOUGHTS = ("thinking", "redacted_thinking")
_MEDIA = ("image", "document", "container_upload")
#: Block types no other format writes: one of them makes a list of messages Anthropic's.
_ANTHROPIC_ONLY = frozenset({*_CALLS, *_THOUGHTS, *_MEDIA, "tool_result", "mcp_tool_result"})
_EXPECTED = (
    "text, image, document, tool_use, server_tool_use, mcp_tool_use, tool_result, a server "
    "tool's *_tool_result, thinking or redacted_thinking"
)


def _block_type(block: Any) -> Any:
    data = as_data(block)
    return data.get("type") if isinstance(data, Mapping) else None


def _is_message(value: Any) -> bool:
    if not isinstance(value, Mapping) or "role" not in value:
        return False
    content = value.get("content")
    return isinstance(content, list | tuple) and any(
        _block_type(block) in _ANTHROPIC_ONLY for block in content
    )


def _recognise(value: Any) -> bool:
    return (
        isinstance(value, list | tuple)
        and all(isinstance(m, Mapping) and "role" in m for m in value)
        and any(_is_message(m) for m in value)
    )


def _media(block: Mapping[str, Any]) -> str:
    source = block.get("source")
    media_type = source.get("media_type") if isinstance(source, Mapping) else None
    title = block.get("title")
    return omitted(block["type"], title if isinstance(title, str) else media_type)


def _result_text(content: Any, where: str) -> str:
    """A tool result's content: a str, or text and media blocks."""
    if content is None or isinstance(content, str):
        return content or ""
    if not isinstance(content, list | tuple):
        return data_text(content, f"{where}'s content")
    pieces: list[str] = []
    for block in items_of(content, where, "content"):
        kind = block.get("type") if isinstance(block, Mapping) else None
        if kind == "text":
            pieces.append(str(block.get("text", "")))
        elif kind in _MEDIA:
            pieces.append(_media(block))
        else:
            pieces.append(data_text(block, f"{where}'s content"))
    return "\n".join(pieces)


def _spoken(role: str, text: str) -> Event:
    if role == "assistant":
        return act("assistant", "TALK", text)
    return heard(role, "CONVERSATION" if role == "user" else "MESSAGE", text)


def _message_events(
    message: Mapping[str, Any], where: str, tool_names: dict[str, str]
) -> list[Event]:
    role = message.get("role")
    if not isinstance(role, str) or not role.strip():
        raise TypeError(f'{where}: "role" must be a non-empty str, got {role!r}')
    content = message.get("content")
    blocks = [content] if isinstance(content, str) else items_of(content, where, "content")
    events: list[Event] = []
    said: list[str] = []  # consecutive text and media blocks are one event
    for j, block in enumerate(blocks):
        at = f"{where}, content block #{j}"
        if isinstance(block, str):
            said.append(block)
            continue
        if not isinstance(block, Mapping):
            raise TypeError(f"{at} must be a dict or a typed block, got {type_name(block)}")
        kind = block.get("type")
        if kind == "text":
            said.append(str(block.get("text", "")))
            continue
        if kind in _MEDIA:
            said.append(_media(block))
            continue
        if said:
            events.append(_spoken(role, "\n".join(said)))
            said = []
        if kind in _CALLS:
            name = block.get("name")
            events.append(act("assistant", "TOOL_CALL", call_text(name, block.get("input"))))
            if isinstance(block.get("id"), str) and isinstance(name, str):
                tool_names[block["id"]] = name
        elif kind == "tool_result" or (isinstance(kind, str) and kind.endswith("_tool_result")):
            call_id = block.get("tool_use_id")
            tool = tool_names.get(call_id) if isinstance(call_id, str) else None
            text = _result_text(block.get("content"), at)
            events.append(tool_result(tool, text, error=block.get("is_error") is True))
        elif kind == "thinking":
            events.append(act("assistant", "THINK", str(block.get("thinking", ""))))
        elif kind == "redacted_thinking":
            events.append(act("assistant", "THINK", "(redacted thinking)"))
        else:
            raise unreadable(f"{at}'s type", kind if isinstance(kind, str) else block, _EXPECTED)
    if said or not events:
        events.append(_spoken(role, "\n".join(said)))
    return events


def _events(messages: Sequence[Any]) -> list[Event]:
    tool_names: dict[str, str] = {}  # a tool use's id: its tool, for the result that answers it
    events: list[Event] = []
    for i, message in enumerate(messages):
        events += _message_events(message, f"Anthropic message #{i}", tool_names)
    return events


ANTHROPIC = TranscriptFormat(
    name="Anthropic messages",
    is_message=_is_message,
    recognise=_recognise,
    events=_events,
)
