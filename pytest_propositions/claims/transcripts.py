"""Transcripts in the formats agent developers hold, told apart by shape and shown as events.

``TRANSCRIPT_FORMATS`` is the one list of the recognised formats. A target is a transcript when
it is a list (or a mapping holding a ``messages`` list, such as a LangGraph state, or a trace
export) that one of them recognises; its events are numbered and windowed alike in every format.
``targets.py`` imports this module only for a target that is not a str.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..checks import plural
from ..trace.notation import event_label, format_entry, omission_note, select_window
from .format_anthropic import ANTHROPIC
from .format_gemini import GEMINI
from .format_langchain import LANGCHAIN
from .format_openai import CHAT, RESPONSES
from .format_otel import OTEL
from .transcript_notation import Event, TranscriptFormat, as_data, heads

#: The recognised formats, tried in order: those told by blocks or items only they write come
#: before OpenAI chat messages, which any list of role-and-content dicts resembles.
TRANSCRIPT_FORMATS: list[TranscriptFormat] = [ANTHROPIC, RESPONSES, CHAT, GEMINI, LANGCHAIN, OTEL]


def _as_transcript(value: Any) -> tuple[TranscriptFormat, Any] | None:
    """The format of a target and its items as plain data, or None if it is no transcript."""
    candidates: list[Any] = []
    if isinstance(value, list | tuple) and value:
        candidates.append([as_data(item) for item in value])
    elif isinstance(value, Mapping):
        messages = value.get("messages")
        if isinstance(messages, list | tuple) and messages:
            candidates.append([as_data(item) for item in messages])
        candidates.append(value)
    for data in candidates:
        for found in TRANSCRIPT_FORMATS:
            if found.recognise(data):
                return found, data
    return None


def transcript_format(value: Any) -> TranscriptFormat | None:
    """The format of a target that is one transcript, or None."""
    found = _as_transcript(value)
    return found[0] if found else None


def is_message(value: Any) -> bool:
    """Whether a value is one message (item, span) of any recognised format."""
    data = as_data(value)
    return any(f.is_message(data) for f in TRANSCRIPT_FORMATS)


def transcript_events(value: Any) -> list[Event]:
    """A transcript's events; raises naming the first part no reader knows."""
    found = _as_transcript(value)
    if found is None:
        raise TypeError("expected a transcript of a recognised format")
    return found[0].events(found[1])


def render_transcript(value: Any, first_n: int | None, last_n: int | None) -> str:
    """A transcript in the trajectory notation; windows count events, in every format."""
    found = _as_transcript(value)
    if found is None:
        raise TypeError("render_transcript expects a transcript of a recognised format")
    entries = heads(found[0].events(found[1]))
    lines = [f"---- BEGIN TRANSCRIPT ({found[0].name}, {plural(len(entries), 'event')}) ----"]
    for item in select_window(len(entries), first_n, last_n):
        if isinstance(item, tuple):
            lines.append(omission_note(*item, unit="event"))
            continue
        head, content = entries[item]
        lines.append(format_entry(event_label(item), head, content))
    lines.append("---- END TRANSCRIPT ----")
    return "\n".join(lines)
