"""The trajectory notation the judge reads, written the same way by every renderer.

An event is ``label: head content``: a stimulus's head is ``Source --> Receiver: [KIND]``, an
action's ``Actor acts: [KIND]``; further content lines are indented so that none passes for an
event, a header or an omission note. A window keeps the first and last entries, and a note
says which were left out. The recorder (``trace``), the transcript formats
(``claims.transcripts``, ``claims.transcript_notation``) and the reference library's text
(``claims.library_text``) all write it from here.
"""

from __future__ import annotations

import re

from ..checks import plural

__all__ = [
    "CONTINUATION_INDENT",
    "TRUNCATION_MARK",
    "action_head",
    "event_label",
    "format_entry",
    "holds_event_head",
    "omission_note",
    "select_window",
    "stimulus_head",
]

# Continuation lines of multi-line content are indented so that no content line can pass for
# an event line, a header or an omission note, all of which start at column 0.
CONTINUATION_INDENT = "    "
# What ends content cut at ``max_content_length``.
TRUNCATION_MARK = " (...)"


def select_window(
    total: int, first_n: int | None, last_n: int | None
) -> list[int | tuple[int, int]]:
    """Indices to show, with ``(start, end)`` inclusive ranges where entries are left out.

    With both counts, the first ``first_n`` and the last ``last_n`` entries are kept (the
    opening and the latest part of a run); when they overlap, everything is kept. A count of 0
    means what it means to the reference simulation library, whose memory slices with
    ``[:n]`` and ``[-n:]``: ``first_n=0`` keeps nothing from the start, while ``last_n=0``
    keeps everything (``[-0:]`` is the whole list).
    """
    if last_n == 0 or (first_n is None and last_n is None):
        return list(range(total))
    keep: set[int] = set()
    if first_n is not None:
        keep.update(range(min(first_n, total)))
    if last_n is not None:
        keep.update(range(max(total - last_n, 0), total))
    out: list[int | tuple[int, int]] = []
    gap_start: int | None = None
    for i in range(total):
        if i in keep:
            if gap_start is not None:
                out.append((gap_start, i - 1))
                gap_start = None
            out.append(i)
        elif gap_start is None:
            gap_start = i
    if gap_start is not None:
        out.append((gap_start, total - 1))
    return out


def omission_note(start: int, end: int, unit: str) -> str:
    """What stands for the entries ``start`` to ``end`` that a window leaves out."""
    count = end - start + 1
    where = f"#{start}" if count == 1 else f"#{start} to #{end}"
    return f"... {plural(count, unit)} omitted ({where}) ..."


def event_label(number: int) -> str:
    """An event's label, numbered as in the full run (a window keeps the numbers)."""
    return f"Event #{number}"


def format_entry(label: str, head: str, content: str) -> str:
    """``label: head first-line`` then every further line indented the same way."""
    lines = content.splitlines() or [""]
    first = f"{label}: {head}" + (f" {lines[0]}" if lines[0] else "")
    rest = [CONTINUATION_INDENT + line if line else "" for line in lines[1:]]
    return "\n".join([first, *rest])


def stimulus_head(source: str, receiver: str, kind: str) -> str:
    """``Source --> Receiver: [KIND]``: what ``receiver`` was addressed with."""
    return f"{source} --> {receiver}: [{kind}]"


# An event line's head anywhere in a text: "Actor acts: [KIND]" or "Source --> Receiver: [KIND]".
_EVENT_HEAD = re.compile(r"(?m)^[^\n]*?(?: acts| --> [^\n:]+): \[[A-Z_]+\]")


def holds_event_head(text: str) -> bool:
    """Whether ``text`` holds an event line of this notation: a recording, not a claim."""
    return _EVENT_HEAD.search(text) is not None


def action_head(actor: str, kind: str) -> str:
    """``Actor acts: [KIND]``: what ``actor`` did."""
    return f"{actor} acts: [{kind}]"
