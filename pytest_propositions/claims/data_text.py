"""The text of targets given as data: chat transcripts and results-extraction dicts.

Each recognised way of writing a conversation is one ``TranscriptFormat`` in
``TRANSCRIPT_FORMATS`` (recognise, validate, and the events of each message); all of them render
in the trajectory notation of ``trace.py``. Data shown to the judge is checked here first
(``check_plain_data``), so that no renderer meets Python's recursion limit.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..checks import plural
from ..trace import _action_head, _format_entry, _omission_note, _select_window, _stimulus_head

#: How deeply lists of targets, or the data in a target, may nest; deeper is surely a mistake
#: (or a list holding itself).
MAX_TARGET_NESTING = 32

_ADDRESS_RE = re.compile(r" at 0x[0-9A-Fa-f]+")

Events = list[tuple[str, str]]


def type_name(value: Any) -> str:
    """A value's class as an error message names it: ``int``, ``mymodule.Robot``."""
    klass = type(value)
    if klass.__module__ == "builtins":
        return klass.__qualname__
    return f"{klass.__module__}.{klass.__qualname__}"


def one_line(text: str) -> str:
    """Names and roles sit inside an event line; a line break there would forge a new line."""
    return " ".join(text.split())


def check_plain_data(value: Any, what: str, outer: tuple[int, ...] = ()) -> None:
    """Data shown to the judge (an extraction result, a persona, a tool call's arguments) is
    refused by name when it contains itself or nests past MAX_TARGET_NESTING levels, before a
    renderer would meet Python's recursion limit."""
    if isinstance(value, Mapping | list | tuple | set | frozenset):
        if id(value) in outer:
            raise ValueError(f"{what} contains itself; expected plain JSON data")
        if len(outer) >= MAX_TARGET_NESTING:
            raise ValueError(
                f"{what} is nested more than {MAX_TARGET_NESTING} levels deep; expected plain "
                "JSON data"
            )
        items = value.values() if isinstance(value, Mapping) else value
        for item in items:
            check_plain_data(item, what, (*outer, id(value)))


def plain_json(value: Any) -> Any:
    """Plain JSON data with str keys; anything else as text with memory addresses removed."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, Mapping):
        return {str(k): plain_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain_json(v) for v in value]
    if isinstance(value, set | frozenset):
        items = [plain_json(v) for v in value]
        return sorted(items, key=lambda v: json.dumps(v, sort_keys=True, ensure_ascii=False))
    return _ADDRESS_RE.sub("", str(value))


# --------------------------------------------------------------------------------------------
# Chat transcripts


@dataclass(frozen=True)
class TranscriptFormat:
    """One way of writing a conversation as a list: how to tell it, check it and read it."""

    name: str
    #: Whether one item is a message of this format (a lone one is refused by name).
    is_message: Callable[[Any], bool]
    #: Whether a non-empty list is a transcript of this format.
    recognise: Callable[[Sequence[Any]], bool]
    #: Raises TypeError or ValueError naming the first malformed message.
    validate: Callable[[Sequence[Any]], None]
    #: For each message, its ``(head, content)`` events in the trajectory notation.
    events: Callable[[Sequence[Any]], list[Events]]


# A dict is a chat message when it has a "role" and something said or done: "content" (even
# None), "tool_calls", "function_call" or "refusal". Any other dict is a results-extraction output (the
# reference library's extractor returns a dict per agent or world, a list of them for several).
_MESSAGE_BODY_KEYS = ("content", "tool_calls", "function_call", "refusal")


def _is_chat_message(value: Any) -> bool:
    return (
        isinstance(value, Mapping)
        and "role" in value
        and any(key in value for key in _MESSAGE_BODY_KEYS)
    )


def _is_chat_list(value: Sequence[Any]) -> bool:
    """A list of dicts, at least one of them a chat message: one transcript."""
    return all(isinstance(m, Mapping) for m in value) and any(_is_chat_message(m) for m in value)


def _validate_chat(messages: Sequence[Any]) -> None:
    for i, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise TypeError(f"chat message #{i} must be a dict, got {type_name(message)}")
        if "role" not in message:
            raise ValueError(
                f'chat message #{i} has no "role" key (keys: {sorted(map(str, message))}); '
                'each message needs one, e.g. {"role": "user", "content": "..."} (a list of '
                "dicts holding a chat message is one transcript; to judge extraction results, "
                "pass them without chat messages among them)"
            )
        if not any(key in message for key in _MESSAGE_BODY_KEYS):
            raise ValueError(
                f'chat message #{i} has a "role" but no "content" (nor "tool_calls"); give it '
                '"content", even None'
            )
        role = message["role"]
        if not isinstance(role, str) or not role.strip():
            raise TypeError(f'chat message #{i}: "role" must be a non-empty str, got {role!r}')
        name = message.get("name")
        if name is not None and not isinstance(name, str):
            raise TypeError(f'chat message #{i}: "name" must be a str, got {type_name(name)}')
        content = message.get("content")
        if content is not None and not isinstance(content, str | list | tuple):
            raise TypeError(
                f'chat message #{i}: "content" must be a str, a list of content parts or None, '
                f"got {type_name(content)}"
            )
        for j, part in enumerate(content if isinstance(content, list | tuple) else ()):
            if not isinstance(part, Mapping | str):
                raise TypeError(
                    f"chat message #{i}: content part #{j} must be a dict such as "
                    f'{{"type": "text", "text": "..."}} or a str, got {type_name(part)}'
                )
        calls = message.get("tool_calls")
        if calls is not None and not (
            isinstance(calls, list | tuple) and all(isinstance(c, Mapping) for c in calls)
        ):
            raise TypeError(f'chat message #{i}: "tool_calls" must be a list of dicts')


def _content_text(content: Any) -> str:
    """A message's text; non-text parts (images, audio, files) are named, never inlined."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    pieces: list[str] = []
    for part in content:
        if isinstance(part, str):
            pieces.append(part)
            continue
        kind = part.get("type")
        if kind == "text" and isinstance(part.get("text"), str):
            pieces.append(part["text"])
        elif kind == "refusal" and isinstance(part.get("refusal"), str):
            pieces.append(f"(refused) {part['refusal']}")
        else:
            pieces.append(f"<{kind if isinstance(kind, str) else 'unknown'} part omitted>")
    return "\n".join(pieces)


def _call_text(function: Any) -> str:
    """``name(arguments)`` with JSON arguments re-serialised with sorted keys."""
    if not isinstance(function, Mapping):
        return "unknown_tool()"
    name = function.get("name")
    name = one_line(name) if isinstance(name, str) and name.strip() else "unknown_tool"
    parsed = raw = function.get("arguments")
    if raw is None or raw == "":
        return f"{name}()"
    if isinstance(raw, str):
        try:
            parsed = json.loads(raw)
        except ValueError:
            return f"{name}({raw})"  # shown as the model wrote it
        except RecursionError:
            raise ValueError(
                f"the tool call {name}'s argument data is nested too deeply to read; expected "
                "plain JSON data"
            ) from None
    check_plain_data(parsed, f"the tool call {name}'s argument data")
    return f"{name}({json.dumps(plain_json(parsed), sort_keys=True, ensure_ascii=False)})"


def _chat_events(messages: Sequence[Mapping[str, Any]]) -> list[Events]:
    speakers = {
        one_line(m.get("name") or "assistant") for m in messages if m.get("role") == "assistant"
    }
    assistant = speakers.pop() if len(speakers) == 1 else "assistant"
    tool_names: dict[str, str] = {}
    entries: list[Events] = []
    for message in messages:
        role = one_line(message["role"])
        name = one_line(message.get("name") or "") or None
        text = _content_text(message.get("content"))
        events: Events = []
        if role == "assistant":
            actor = name or "assistant"
            refusal = message.get("refusal")
            if isinstance(refusal, str) and refusal:
                text = f"{text}\n(refused) {refusal}" if text else f"(refused) {refusal}"
            calls = list(message.get("tool_calls") or [])
            legacy = message.get("function_call")
            if text or not (calls or legacy):
                events.append((_action_head(actor, "TALK"), text))
            for call in calls:
                function = call.get("function")
                events.append((_action_head(actor, "TOOL_CALL"), _call_text(function)))
                call_id = call.get("id")
                fname = function.get("name") if isinstance(function, Mapping) else None
                if isinstance(call_id, str) and isinstance(fname, str):
                    tool_names[call_id] = one_line(fname)
            if legacy is not None:
                events.append((_action_head(actor, "TOOL_CALL"), _call_text(legacy)))
        elif role in ("tool", "function"):
            call_id = message.get("tool_call_id")
            tool = name or (tool_names.get(call_id) if isinstance(call_id, str) else None)
            source = f"tool:{tool}" if tool else "tool"
            events.append((_stimulus_head(source, assistant, "TOOL_RESULT"), text))
        elif role in ("system", "developer"):
            events.append((_stimulus_head(name or role, assistant, "SYSTEM"), text))
        else:
            kind = "CONVERSATION" if role == "user" else "MESSAGE"
            events.append((_stimulus_head(name or role, assistant, kind), text))
        entries.append(events)
    return entries


#: The recognised transcript formats, tried in order; a target list is the first that fits.
TRANSCRIPT_FORMATS: list[TranscriptFormat] = [
    TranscriptFormat(
        name="OpenAI chat messages",
        is_message=_is_chat_message,
        recognise=_is_chat_list,
        validate=_validate_chat,
        events=_chat_events,
    ),
]


def transcript_format(value: Any) -> TranscriptFormat | None:
    """The format of a non-empty list that is one transcript, or None."""
    if not isinstance(value, list | tuple) or not value:
        return None
    return next((f for f in TRANSCRIPT_FORMATS if f.recognise(value)), None)


def is_message(value: Any) -> bool:
    """Whether a value is one message of any recognised transcript format."""
    return any(f.is_message(value) for f in TRANSCRIPT_FORMATS)


def render_transcript(messages: Sequence[Any], first_n: int | None, last_n: int | None) -> str:
    """A transcript in the trajectory notation; windows count messages."""
    found = transcript_format(messages)
    if found is None:
        raise TypeError("render_transcript expects a list of messages of a recognised format")
    entries = found.events(messages)
    lines = [f"---- BEGIN CHAT TRANSCRIPT ({plural(len(messages), 'message')}) ----"]
    for item in _select_window(len(entries), first_n, last_n):
        if isinstance(item, tuple):
            lines.append(_omission_note(*item, unit="message"))
            continue
        for head, content in entries[item]:
            lines.append(_format_entry(f"Message #{item}", head, content))
    lines.append("---- END CHAT TRANSCRIPT ----")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# Extraction results


def _scalar_text(value: Any) -> str:
    if isinstance(value, str):
        return value if value.strip() else json.dumps(value)
    if value is None or isinstance(value, bool | int | float):
        return json.dumps(value)
    return _ADDRESS_RE.sub("", str(value))


def _data_entry(pad: str, label: str, value: Any) -> list[str]:
    """One ``label value`` line, or the label and the value's lines beneath it."""
    if isinstance(value, set | frozenset):
        value = plain_json(value)
    if isinstance(value, Mapping | list | tuple):
        if not value:
            return [f"{pad}{label} {'{}' if isinstance(value, Mapping) else '[]'}"]
        return [f"{pad}{label}", *_data_lines(value, pad + "  ")]
    text = _scalar_text(value)
    if "\n" in text or "\r" in text:
        # A value's own line breaks stay inside its indented block, never forging a field.
        return [f"{pad}{label}", *(f"{pad}    | {line}" for line in text.splitlines())]
    return [f"{pad}{label} {text}"]


def _data_lines(value: Mapping[Any, Any] | Sequence[Any], pad: str) -> list[str]:
    lines: list[str] = []
    if isinstance(value, Mapping):
        for key in sorted(value, key=lambda k: str(k)):
            lines += _data_entry(pad, f"{one_line(str(key))}:", value[key])
    else:
        for item in value:
            lines += _data_entry(pad, "-", item)
    return lines


def validate_extraction(result: Mapping[Any, Any]) -> None:
    if not result:
        raise ValueError(
            "the target is an empty dict: as an extraction result it holds nothing to judge (the "
            "reference library's extractor returns {} when it could not read its model's answer)"
        )
    check_plain_data(result, "the extraction result")


def render_extraction(result: Mapping[Any, Any]) -> str:
    """A results-extraction output as readable text: fields sorted by name, nested indented."""
    lines = [
        "---- BEGIN EXTRACTION RESULT ----",
        *_data_lines(result, ""),
        "---- END EXTRACTION RESULT ----",
    ]
    return "\n".join(lines)
