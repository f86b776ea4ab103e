"""The trajectory notation has one home, ``trace.notation``: the recorder, the transcript formats
and the reference library's text, each driven through the same events, write the heads it
writes (a renderer with a copy of its own would drift from this table)."""

from __future__ import annotations

import pytest

from pytest_propositions.claims.library_text import strip_style_tags
from pytest_propositions.claims.transcript_notation import Event, heads
from pytest_propositions.trace import Agent
from pytest_propositions.trace.notation import action_head, format_entry, stimulus_head

# (who acted or spoke, who was addressed, kind, acted)
CASES = [
    ("USER", "Oscar", "CONVERSATION", False),
    ("tool:search", "Oscar", "TOOL_RESULT", False),
    ("Oscar", "Oscar", "TALK", True),
    ("Lisa Carter", "Lisa Carter", "REACH_OUT", True),
]


def _head(who: str, receiver: str, kind: str, acted: bool) -> str:
    return action_head(who, kind) if acted else stimulus_head(who, receiver, kind)


@pytest.mark.parametrize(("who", "receiver", "kind", "acted"), CASES)
def test_the_recorder_writes_the_notation(who: str, receiver: str, kind: str, acted: bool) -> None:
    agent = Agent(receiver)
    if acted:
        agent.acts(kind, "some content")
    else:
        agent.hears("some content", source=who, kind=kind)
    line = agent.pretty_current_interactions().splitlines()[1]
    assert line == format_entry("Event #0", _head(who, receiver, kind, acted), "some content")


@pytest.mark.parametrize(("who", "receiver", "kind", "acted"), CASES)
def test_the_transcript_formats_write_the_notation(
    who: str, receiver: str, kind: str, acted: bool
) -> None:
    events = [Event(kind, who, "some content", acted)]
    if not acted:  # the one acting speaker is whom stimuli are addressed to
        events.append(Event("TALK", receiver, "reply", acted=True))
    assert heads(events)[0] == (_head(who, receiver, kind, acted), "some content")


@pytest.mark.parametrize(("who", "receiver", "kind", "acted"), CASES)
def test_the_library_text_keeps_the_notation(
    who: str, receiver: str, kind: str, acted: bool
) -> None:
    def name(text: str) -> str:
        return f"[bold italic cyan1][underline]{text}[/]"

    if acted:
        header = f"{name(who)} acts: [{kind}] "
    else:
        header = f"{name(who)} --> {name(receiver)}: [{kind}] "
    text = f"{header}\n          > some content[/]"
    assert strip_style_tags(text).splitlines()[0] == _head(who, receiver, kind, acted) + " "
