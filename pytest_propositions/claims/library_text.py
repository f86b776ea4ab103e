"""Trajectory text written by simulation libraries: removing their style tags, steadying their clock.

Only the exact shapes the reference library writes are touched. Its events are a header line
``[STYLE][underline]Actor[/] acts: [TYPE] `` (or ``... --> [STYLE][underline]Agent[/]: [TYPE] ``)
followed by content lines it indents, the last one ending with the ``[/]`` that closes the
event. Everything else, above all what agents said (``[red]``, ``[citation needed]``, even
``[/]``), reaches the judge unchanged.
"""

from __future__ import annotations

import contextlib
import re
from datetime import datetime, timedelta

from ..settings import TIMESTAMP_MODES
from ..trace.notation import action_head, stimulus_head

__all__ = ["check_timestamps", "normalise_library_text", "relative_timestamps", "strip_style_tags"]

# The styles the library opens an event's names with, and the tags it nests inside them.
_OPENERS = (
    "bold italic cyan1",
    "dim italic cyan1",
    "italic",
    "grey82",
    "bold green3",
    "green",
    "purple",
    "bright_magenta",
)
_INNER = ("underline", "bold", "italic", "dim")
_CLOSER = "[/]"

_STYLE = "|".join(re.escape(style) for style in _OPENERS)
_INNER_TAG = "|".join(re.escape(tag) for tag in _INNER)
# One wrapped name: [STYLE][INNER]Name[/]. A name holds no line break.
_NAME = rf"\[(?:{_STYLE})\]\[(?:{_INNER_TAG})\](?P<{{group}}>[^\n]*?)\[/\]"
_KIND = r"(?P<kind>\[[A-Z][A-Z0-9_]*\])"
_STIMULUS_RE = re.compile(
    rf"{_NAME.format(group='source')} --> {_NAME.format(group='agent')}: {_KIND}(?P<rest>[ \t]*)"
)
_ACTION_RE = re.compile(rf"{_NAME.format(group='actor')} acts: {_KIND}(?P<rest>[ \t]*)")

_TIMESTAMP_PREFIX = ">>>>>>>>> Date and time of events: "


def _header(line: str) -> str | None:
    """The header line without its tags, or None if the line is not an event header."""
    match = _STIMULUS_RE.fullmatch(line)
    if match is not None:
        return stimulus_head(match["source"], match["agent"], match["kind"][1:-1]) + match["rest"]
    match = _ACTION_RE.fullmatch(line)
    if match is not None:
        return action_head(match["actor"], match["kind"][1:-1]) + match["rest"]
    return None


def strip_style_tags(text: str) -> str:
    """Remove the library's own tags: the ones around names, and the event's closing ``[/]``.

    An event's content lines are indented by the library (it wraps them with a leading indent),
    so the event ends at the first line that is not; the closer is the last three characters of
    its last line. An event with no content has its closer alone on the next line. A header
    whose event does not end that way keeps its closer-less content untouched.
    """
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        header = _header(lines[i])
        if header is None:
            out.append(lines[i])
            i += 1
            continue
        out.append(header)
        i += 1
        start = i
        while i < len(lines) and lines[i][:1] in (" ", "\t"):
            i += 1
        if i > start:
            if lines[i - 1].endswith(_CLOSER):
                out.extend(lines[start : i - 1])
                out.append(lines[i - 1][: -len(_CLOSER)])
            else:
                out.extend(lines[start:i])
        elif i < len(lines) and lines[i] == _CLOSER:
            i += 1  # an event with empty content: its closer stands alone
    return "\n".join(out)


def _parse_time(value: str) -> datetime | None:
    try:
        return datetime.fromisoformat(value.strip())
    except ValueError:
        return None


def _offset(delta: timedelta) -> str:
    """``+H:MM:SS`` (days counted in hours), with microseconds only when there are any."""
    sign = "-" if delta < timedelta(0) else "+"
    delta = abs(delta)
    hours, rest = divmod(int(delta.total_seconds()), 3600)
    minutes, seconds = divmod(rest, 60)
    text = f"{sign}{hours}:{minutes:02d}:{seconds:02d}"
    return text + (f".{delta.microseconds:06d}" if delta.microseconds else "")


def check_timestamps(mode: str) -> str:
    """A clock rendering mode, one of TIMESTAMP_MODES; ValueError naming them otherwise."""
    if mode not in TIMESTAMP_MODES:
        raise ValueError(f"timestamps must be one of {', '.join(TIMESTAMP_MODES)}, got {mode!r}")
    return mode


def relative_timestamps(text: str, mode: str = "relative") -> str:
    """Rewrite the library's ``Date and time of events`` lines: offsets, as is, or dropped.

    ``relative`` states each time as an offset from the first time in ``text``, so a world
    whose clock started at a different moment (the library's default is the import time)
    renders the same; ``None`` and anything that is not an ISO time stay as written.
    """
    if check_timestamps(mode) == "absolute" or _TIMESTAMP_PREFIX not in text:
        return text
    lines = text.split("\n")
    if mode == "none":
        return "\n".join(line for line in lines if not line.startswith(_TIMESTAMP_PREFIX))
    base: datetime | None = None
    out: list[str] = []
    for line in lines:
        if line.startswith(_TIMESTAMP_PREFIX):
            moment = _parse_time(line[len(_TIMESTAMP_PREFIX) :])
            if moment is not None:
                if base is None:
                    base = moment
                # A zone-aware time among naive ones has no offset to state: kept as written.
                with contextlib.suppress(TypeError):
                    line = _TIMESTAMP_PREFIX + _offset(moment - base)
        out.append(line)
    return "\n".join(out)


def normalise_library_text(text: str, timestamps: str = "relative") -> str:
    """What the judge reads of a simulation object's trajectory: no style tags, a steady clock."""
    return relative_timestamps(strip_style_tags(text), timestamps)
