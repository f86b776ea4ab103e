"""A tiny recorder of agents and worlds, for users with no simulation library.

It renders the same trajectory notation the judge reads for real simulation objects; the
notation itself (event heads, numbered entries, windows, omission notes) is ``trace.notation``'s,
which the transcript renderers in ``claims/`` write with too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ..checks import check_count, check_window, plural, quote_name
from .notation import (
    TRUNCATION_MARK,
    action_head,
    event_label,
    format_entry,
    omission_note,
    select_window,
    stimulus_head,
)

__all__ = ["Agent", "Event", "World"]

_KIND_RE = re.compile(r"[A-Z][A-Z0-9_]*")
Role = Literal["stimulus", "action"]


# --------------------------------------------------------------------------------------------
# Validation at the edge


def _check_name(what: str, value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, got {type(value).__name__}")
    if not value.strip():
        raise ValueError(f"{what} must not be empty")
    if len(value.splitlines()) > 1:
        raise ValueError(f"{what} must be a single line, got {value!r}")
    return value


def _check_kind(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"an event kind must be a str such as 'TALK', got {type(value).__name__}")
    kind = value.strip().upper()
    if not _KIND_RE.fullmatch(kind):
        raise ValueError(
            f"an event kind must be a word of letters, digits and underscores such as "
            f"'TALK' or 'REACH_OUT', got {value!r}"
        )
    return kind


def _check_content(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"event content must be a str, got {type(value).__name__}")
    return value


def _check_view(
    max_content_length: object, first_n: object, last_n: object
) -> tuple[int | None, int | None, int | None]:
    """The arguments of ``pretty_current_interactions``, checked in the order they are given."""
    return (
        check_count("max_content_length", max_content_length),
        check_window("first_n", first_n),
        check_window("last_n", last_n),
    )


def _check_timestamp(value: object) -> str | None:
    if value is not None and not isinstance(value, str):
        raise TypeError(
            f"a timestamp must be a str (e.g. '2024-01-01T10:00') or None, "
            f"got {type(value).__name__}; it is rendered as given, never read from a clock"
        )
    return value


# --------------------------------------------------------------------------------------------
# The recorder


@dataclass(frozen=True)
class Event:
    """One thing that happened to an agent: a stimulus it received or an action it took."""

    role: Role
    kind: str
    content: str
    source: str | None = None
    timestamp: str | None = None


class Agent:
    """An agent's history of stimuli and actions, rendered in the trajectory notation.

    ``name`` and ``_persona`` follow the attribute names simulation libraries use, so this
    class goes through the same duck-typed path as theirs.
    """

    def __init__(self, name: str, persona: Mapping[str, Any] | None = None) -> None:
        self.name: str = _check_name("an agent name", name)
        if persona is not None and not isinstance(persona, Mapping):
            raise TypeError(f"persona must be a mapping or None, got {type(persona).__name__}")
        if persona is not None and not all(isinstance(k, str) for k in persona):
            raise TypeError("persona keys must be str, so the persona renders as sorted JSON")
        self._persona: dict[str, Any] = dict(persona or {})
        self.clock: str | None = None
        self._events: list[Event] = []

    def __repr__(self) -> str:
        return f"Agent({self.name!r}, {plural(len(self._events), 'event')})"

    @property
    def persona(self) -> dict[str, Any]:
        """A copy of the persona specification (what the agent is, not what it did)."""
        return dict(self._persona)

    @property
    def events(self) -> tuple[Event, ...]:
        """The recorded events, oldest first."""
        return tuple(self._events)

    def at(self, timestamp: str | None) -> Agent:
        """Stamp the events recorded from now on with ``timestamp`` (None: no stamp)."""
        self.clock = _check_timestamp(timestamp)
        return self

    def hears(
        self,
        content: str,
        source: str | Agent = "USER",
        kind: str = "CONVERSATION",
        *,
        timestamp: str | None = None,
    ) -> Event:
        """Record a stimulus from ``source`` (a name or an agent)."""
        src = source.name if isinstance(source, Agent) else _check_name("a source", source)
        return self._record("stimulus", kind, content, src, timestamp)

    def sees(
        self, content: str, source: str | Agent = "ENVIRONMENT", *, timestamp: str | None = None
    ) -> Event:
        """Record a VISUAL stimulus."""
        return self.hears(content, source, "VISUAL", timestamp=timestamp)

    def says(self, content: str, *, timestamp: str | None = None) -> Event:
        """Record a TALK action."""
        return self.acts("TALK", content, timestamp=timestamp)

    def thinks(self, content: str, *, timestamp: str | None = None) -> Event:
        """Record a THINK action."""
        return self.acts("THINK", content, timestamp=timestamp)

    def acts(self, kind: str, content: str = "", *, timestamp: str | None = None) -> Event:
        """Record any action, e.g. ``acts("DONE")`` or ``acts("REACH_OUT", "Lisa")``."""
        return self._record("action", kind, content, None, timestamp)

    def _record(
        self, role: Role, kind: str, content: str, source: str | None, timestamp: str | None
    ) -> Event:
        stamp = _check_timestamp(timestamp)
        event = Event(
            role=role,
            kind=_check_kind(kind),
            content=_check_content(content),
            source=source,
            timestamp=self.clock if stamp is None else stamp,
        )
        self._events.append(event)
        return event

    def pretty_current_interactions(
        self,
        simplified: bool = True,
        skip_system: bool = True,
        max_content_length: int | None = None,
        first_n: int | None = None,
        last_n: int | None = None,
        include_omission_info: bool = True,
    ) -> str:
        """The agent's trajectory; windows count events, and numbers stay those of the full run.

        ``simplified`` and ``skip_system`` exist for signature compatibility with simulation
        libraries: this recorder has a single notation and records no system messages.
        """
        del simplified, skip_system
        max_len, first, last = _check_view(max_content_length, first_n, last_n)
        label = quote_name(self.name)
        lines = [f"---- BEGIN AGENT {label} ({plural(len(self._events), 'event')}) ----"]
        if not self._events:
            lines.append("(no events recorded)")
        shown_time: str | None = None
        for item in select_window(len(self._events), first, last):
            if isinstance(item, tuple):
                if include_omission_info:
                    lines.append(omission_note(*item, unit="event"))
                shown_time = None  # the next event states its time again after a gap
                continue
            event = self._events[item]
            if event.timestamp is not None and event.timestamp != shown_time:
                lines.append(f"-- time: {' '.join(event.timestamp.splitlines())} --")
                shown_time = event.timestamp
            lines.append(self._format(item, max_len))
        lines.append(f"---- END AGENT {label} ----")
        return "\n".join(lines)

    def _format(self, index: int, max_content_length: int | None) -> str:
        event = self._events[index]
        if event.role == "stimulus":
            head = stimulus_head(event.source or "USER", self.name, event.kind)
        else:
            head = action_head(self.name, event.kind)
        content = event.content
        if max_content_length is not None and len(content) > max_content_length:
            content = content[:max_content_length] + TRUNCATION_MARK
        return format_entry(event_label(index), head, content)


class World:
    """A set of agents; ``talk`` records a conversation in every listener's history."""

    def __init__(self, name: str, agents: Iterable[Agent] = ()) -> None:
        self.name: str = _check_name("a world name", name)
        self.clock: str | None = None
        self._agents: list[Agent] = []
        for agent in agents:
            self.add(agent)

    def __repr__(self) -> str:
        return f"World({self.name!r}, {plural(len(self._agents), 'agent')})"

    @property
    def agents(self) -> list[Agent]:
        """The member agents, in the order they were added (a copy)."""
        return list(self._agents)

    def add(self, agent: Agent) -> Agent:
        """Add a member; names are unique within a world, since the notation refers by name."""
        if not isinstance(agent, Agent):
            raise TypeError(f"World.add expects a trace.Agent, got {type(agent).__name__}")
        if any(a is agent for a in self._agents):
            raise ValueError(f"agent {agent.name!r} is already in world {self.name!r}")
        if any(a.name == agent.name for a in self._agents):
            raise ValueError(f"world {self.name!r} already has an agent named {agent.name!r}")
        self._agents.append(agent)
        if self.clock is not None:
            agent.at(self.clock)
        return agent

    def get(self, name: str) -> Agent:
        """The member called ``name``."""
        for agent in self._agents:
            if agent.name == name:
                return agent
        known = ", ".join(repr(a.name) for a in self._agents) or "none"
        raise KeyError(f"world {self.name!r} has no agent named {name!r} (agents: {known})")

    def at(self, timestamp: str | None) -> World:
        """Stamp events recorded from now on, by every member, with ``timestamp``."""
        self.clock = _check_timestamp(timestamp)
        for agent in self._agents:
            agent.at(self.clock)
        return self

    def talk(
        self,
        speaker: Agent | str,
        content: str,
        to: Agent | str | Sequence[Agent | str] | None = None,
    ) -> Event:
        """``speaker`` acts TALK; every other member (or only ``to``) hears it from the speaker."""
        talker = self._member(speaker)
        if to is None:
            listeners = [a for a in self._agents if a is not talker]
        else:
            targets = [to] if isinstance(to, Agent | str) else list(to)
            listeners = [self._member(t) for t in targets]
            if not listeners:
                raise ValueError("to= names no listener; leave it out to address every member")
            if any(a is talker for a in listeners):
                raise ValueError(f"agent {talker.name!r} cannot talk to itself")
        _check_content(content)
        event = talker.says(content)
        for listener in listeners:
            listener.hears(content, source=talker, kind="CONVERSATION")
        return event

    def broadcast(self, content: str, source: str = "USER", kind: str = "CONVERSATION") -> None:
        """Every member hears ``content`` from ``source`` (e.g. the user sets a topic)."""
        _check_name("a source", source)
        _check_kind(kind)
        _check_content(content)
        for agent in self._agents:
            agent.hears(content, source=source, kind=kind)

    def _member(self, who: Agent | str) -> Agent:
        if isinstance(who, Agent):
            if not any(a is who for a in self._agents):
                raise ValueError(f"agent {who.name!r} is not in world {self.name!r}")
            return who
        if isinstance(who, str):
            return self.get(who)
        raise TypeError(f"expected a trace.Agent or an agent name, got {type(who).__name__}")

    def pretty_current_interactions(
        self,
        simplified: bool = True,
        skip_system: bool = True,
        max_content_length: int | None = None,
        first_n: int | None = None,
        last_n: int | None = None,
        include_omission_info: bool = True,
    ) -> str:
        """Each member's trajectory in turn; windows apply to each agent's own events."""
        _check_view(max_content_length, first_n, last_n)
        label = quote_name(self.name)
        members = ", ".join(quote_name(a.name) for a in self._agents) or "none"
        blocks = [f"==== BEGIN WORLD {label} (agents: {members}) ===="]
        blocks += [
            agent.pretty_current_interactions(
                simplified, skip_system, max_content_length, first_n, last_n, include_omission_info
            )
            for agent in self._agents
        ]
        if not self._agents:
            blocks.append("(no agents)")
        blocks.append(f"==== END WORLD {label} ====")
        return "\n\n".join(blocks)
