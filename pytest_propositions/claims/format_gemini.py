"""Gemini's contents: a role (user, model) and parts (text, thoughts, function calls and responses).

Parts come as the REST API writes them (``functionCall``) or as the Python SDK's types dump
(``function_call``); both spellings are read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .data_text import type_name
from .transcript_notation import (
    Event,
    TranscriptFormat,
    act,
    call_text,
    data_text,
    field,
    heard,
    items_of,
    omitted,
    tool_result,
)

#: A part's own content, in both spellings; one of these says what the part is.
_CONTENT_KEYS = {
    "text": ("text",),
    "function_call": ("function_call", "functionCall"),
    "function_response": ("function_response", "functionResponse"),
    "inline_data": ("inline_data", "inlineData"),
    "file_data": ("file_data", "fileData"),
    "executable_code": ("executable_code", "executableCode"),
    "code_execution_result": ("code_execution_result", "codeExecutionResult"),
}
_EXPECTED = (
    "a part with one of text, function_call, function_response, inline_data, file_data, "
    "executable_code or code_execution_result (or their camelCase spellings)"
)


def _is_content(value: Any) -> bool:
    return (
        isinstance(value, Mapping)
        and isinstance(value.get("parts"), list | tuple)
        and "content" not in value
    )


def _recognise(value: Any) -> bool:
    return isinstance(value, list | tuple) and all(_is_content(item) for item in value)


def _part_kind(part: Mapping[str, Any], at: str) -> tuple[str, Any]:
    found = [
        (kind, field(part, *spellings))
        for kind, spellings in _CONTENT_KEYS.items()
        if field(part, *spellings) is not None
    ]
    if len(found) != 1:
        keys = sorted(k for k, v in part.items() if v is not None)
        raise ValueError(f"{at} has the keys {keys}; expected {_EXPECTED}")
    return found[0]


def _media(kind: str, data: Any) -> str:
    media_type = field(data, "mime_type", "mimeType") if isinstance(data, Mapping) else None
    return omitted("file" if kind == "file_data" else "inline data", media_type)


def _spoken(role: str, text: str) -> Event:
    if role == "model":
        return act(role, "TALK", text)
    return heard(role, "CONVERSATION" if role == "user" else "MESSAGE", text)


def _content_events(i: int, content: Mapping[str, Any]) -> tuple[str, list[Event]]:
    """One content's role and events."""
    where = f"Gemini content #{i}"
    role = content.get("role") or "user"
    if not isinstance(role, str):
        raise TypeError(f'{where}: "role" must be a str, got {type_name(role)}')
    events: list[Event] = []
    said: list[str] = []  # consecutive text and media parts are one event
    parts = items_of(content["parts"], where, "parts")
    for j, part in enumerate(parts):
        at = f"{where}, part #{j}"
        if not isinstance(part, Mapping):
            raise TypeError(f"{at} must be a dict or a typed Part, got {type_name(part)}")
        kind, value = _part_kind(part, at)
        if kind == "text" and part.get("thought") is True:
            kind = "thought"
        if kind == "text":
            if value:  # an empty part (Gemini 3 writes one before a call) says nothing
                said.append(str(value))
            continue
        if kind in ("inline_data", "file_data"):
            said.append(_media(kind, value))
            continue
        if said:
            events.append(_spoken(role, "\n".join(said)))
            said = []
        if not isinstance(value, Mapping) and kind != "thought":
            raise TypeError(f"{at}: {kind} must be a dict, got {type_name(value)}")
        if kind == "thought":
            events.append(act(role, "THINK", str(value)))
        elif kind == "function_call":
            text = call_text(value.get("name"), value.get("args"))
            events.append(act(role, "TOOL_CALL", text))
        elif kind == "function_response":
            output = value.get("response")
            events.append(tool_result(value.get("name"), data_text(output, at)))
        elif kind == "executable_code":
            code = {"code": value.get("code"), "language": value.get("language")}
            events.append(act(role, "TOOL_CALL", call_text("code_execution", code)))
        else:  # code_execution_result
            text = data_text(value.get("output"), at)
            failed = value.get("outcome") not in (None, "OUTCOME_OK")
            events.append(tool_result("code_execution", text, error=failed))
    if said or not events:  # a content that says nothing at all is still shown, empty
        events.append(_spoken(role, "\n".join(said)))
    return role, events


#: What a streamed reply writes a chunk at a time: the model's text and thoughts.
_STREAMED = ("TALK", "THINK")


def _events(contents: Sequence[Any]) -> list[Event]:
    """The contents' events. The model's text (or thought) that runs on from one content into
    the next is one event: a streamed reply (``chats.send_message_stream``) leaves one content
    per chunk in the chat's history, cut anywhere, even inside a word, and the chunks' texts
    join as they are (as the SDK's ``response.text`` joins a reply's parts)."""
    events: list[Event] = []
    previous_role: str | None = None
    for i, content in enumerate(contents):
        role, own = _content_events(i, content)
        if (
            role == previous_role == "model"
            and events
            and own
            and own[0].kind in _STREAMED
            and events[-1].kind == own[0].kind
        ):
            events[-1] = act(role, own[0].kind, events[-1].text + own[0].text)
            own = own[1:]
        events.extend(own)
        previous_role = role
    return events


GEMINI = TranscriptFormat(
    name="Gemini contents",
    is_message=_is_content,
    recognise=_recognise,
    events=_events,
)
