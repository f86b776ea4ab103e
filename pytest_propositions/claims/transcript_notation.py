"""What every transcript format is read into: events in the trajectory notation (``trace.notation``).

A format (``transcripts.TRANSCRIPT_FORMATS`` lists them) turns its messages, items or spans into
``Event`` values: who acted or was addressed, the kind (TALK, THINK, TOOL_CALL, TOOL_RESULT, ...),
and the text. Ids and timestamps are never part of an event, so the text is a stable cache key.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..trace.notation import action_head, stimulus_head
from .data_text import check_plain_data, one_line, plain_json, type_name

#: Who an event is addressed to when a transcript has no single acting speaker.
DEFAULT_RECEIVER = "assistant"


@dataclass(frozen=True)
class Event:
    """One line of a transcript: an action of ``who`` (``acted``), or a stimulus from ``who``."""

    kind: str
    who: str
    text: str
    acted: bool


def act(who: str, kind: str, text: str) -> Event:
    return Event(kind, one_line(who) or DEFAULT_RECEIVER, text, acted=True)


def heard(who: str, kind: str, text: str) -> Event:
    return Event(kind, one_line(who) or "user", text, acted=False)


def tool_result(tool: str | None, text: str, *, error: bool = False) -> Event:
    """What a tool returned; an error result says so, as the format marked it."""
    source = f"tool:{one_line(tool)}" if tool and tool.strip() else "tool"
    return heard(source, "TOOL_RESULT", f"(error) {text}" if error else text)


def heads(events: Sequence[Event]) -> list[tuple[str, str]]:
    """Each event's ``(head, content)``; stimuli are addressed to the one acting speaker, if
    there is exactly one, else to the assistant."""
    actors = {event.who for event in events if event.acted}
    receiver = actors.pop() if len(actors) == 1 else DEFAULT_RECEIVER
    return [
        (
            action_head(e.who, e.kind) if e.acted else stimulus_head(e.who, receiver, e.kind),
            e.text,
        )
        for e in events
    ]


@dataclass(frozen=True)
class TranscriptFormat:
    """One way of writing a conversation or a trace: how to tell it and read it.

    Items reach a format as plain data where they can (``as_data``): typed SDK objects through
    ``model_dump()``, LangChain messages through their public attributes.
    """

    name: str
    #: Whether one item is a message of this format (a lone one is refused by name).
    is_message: Callable[[Any], bool]
    #: Whether a non-empty list (or, for a trace export, a mapping) is a transcript of this format.
    recognise: Callable[[Any], bool]
    #: The transcript's events, in order; raises TypeError or ValueError naming the first part
    #: that cannot be read and what was expected there.
    events: Callable[[Any], list[Event]]


# --------------------------------------------------------------------------------------------
# Reading typed objects without their libraries

#: LangChain's message types (``BaseMessage.type``), read through public attributes.
LANGCHAIN_TYPES = frozenset(
    {"human", "ai", "tool", "system", "function", "chat", "AIMessageChunk", "HumanMessageChunk"}
    | {"ToolMessageChunk", "SystemMessageChunk", "FunctionMessageChunk", "ChatMessageChunk"}
)
_LANGCHAIN_FIELDS = (
    "content",
    "tool_calls",
    "invalid_tool_calls",
    "tool_call_id",
    "name",
    "additional_kwargs",
)


def as_data(item: Any) -> Any:
    """A typed SDK object as the plain data its library would send; anything else unchanged.

    A LangChain message is read through its public attributes (``type``, ``content``,
    ``tool_calls``, ``tool_call_id``, ``name``, ``additional_kwargs``, ``status``, ``role``); a
    pydantic model (the
    Anthropic, OpenAI and Google GenAI SDKs' types) through ``model_dump``, None fields left out.
    """
    if isinstance(item, Mapping | str | list | tuple) or item is None:
        return item
    kind = getattr(item, "type", None)
    if isinstance(kind, str) and kind in LANGCHAIN_TYPES and hasattr(item, "content"):
        data: dict[str, Any] = {"type": kind}
        for field in (*_LANGCHAIN_FIELDS, "status", "role"):
            value = getattr(item, field, None)
            if value is not None:
                data[field] = value
        return data
    dump = getattr(item, "model_dump", None)
    if callable(dump) and not isinstance(item, type):
        dumped = dump(mode="json", exclude_none=True)
        if isinstance(dumped, Mapping):
            return dumped
    return item


def field(data: Mapping[str, Any], key: str, *keys: str) -> Any:
    """The first of ``key`` and its spellings (``function_call``, ``functionCall``) not None."""
    for name in (key, *keys):
        value = data.get(name)
        if value is not None:
            return value
    return None


# --------------------------------------------------------------------------------------------
# Text of calls and results


def json_text(value: Any, what: str) -> str:
    """Data as sorted JSON on one line; refused by name when it holds itself or nests absurdly."""
    check_plain_data(value, what)
    return json.dumps(plain_json(value), sort_keys=True, ensure_ascii=False)


def call_text(name: Any, arguments: Any) -> str:
    """``name(arguments)``: JSON arguments (a string or data) with sorted keys, other text as
    the model wrote it."""
    name = one_line(name) if isinstance(name, str) and name.strip() else "unknown_tool"
    parsed = arguments
    if arguments is None or arguments == "":
        return f"{name}()"
    if isinstance(arguments, str):
        try:
            parsed = json.loads(arguments)
        except ValueError:
            return f"{name}({arguments})"  # shown as the model wrote it
        except RecursionError:
            raise ValueError(
                f"the tool call {name}'s argument data is nested too deeply to read; expected "
                "plain JSON data"
            ) from None
    what = f"the tool call {name}'s argument data"
    return f"{name}({json_text(parsed, what)})"


def data_text(value: Any, what: str) -> str:
    """A tool's output or a span's value: text as written, other data as sorted JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json_text(value, what)


def omitted(kind: str, media_type: Any = None) -> str:
    """An image, audio clip or file is named, never inlined (nor its address)."""
    if isinstance(media_type, str) and media_type.strip():
        return f"<{kind} part omitted: {one_line(media_type)}>"
    return f"<{kind} part omitted>"


#: What a trace did not record (an instrumentation's content capture off) is said to be
#: missing, never shown as empty: a call shown with nothing would say it was called with nothing.
NOT_RECORDED = "(content not recorded)"


def call_not_recorded(name: Any) -> str:
    """A call whose arguments were not recorded: ``name(arguments not recorded)``."""
    return call_text(name, None).removesuffix("()") + "(arguments not recorded)"


def unreadable(where: str, found: Any, expected: str) -> ValueError:
    """The error for a part no reader knows: what it was, where, and what was expected."""
    shown = repr(found) if isinstance(found, str) else type_name(found)
    return ValueError(f"{where} is {shown}; expected {expected}")


def items_of(value: Any, where: str, what: str) -> list[Any]:
    """A list field read as a list of plain-data items; anything else refused by name."""
    if value is None:
        return []
    if not isinstance(value, list | tuple):
        raise TypeError(f"{where}: {what} must be a list, got {type_name(value)}")
    return [as_data(item) for item in value]
