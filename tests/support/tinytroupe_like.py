"""Objects shaped like the reference simulation library's (TinyTroupe 0.6.0), without importing it.

The text, attribute names and signatures follow that library's source as described in
shared/docs/TINYTROUPE-FORMAT.md: a header line with rich style tags around the names, content
wrapped at 100 columns behind an indent, the closing ``[/]`` at the end of the event, a world
clock that starts at ``datetime.now()`` taken when the module is imported and advances by a
fixed step, and a ``Proposition`` with the library's attribute names.
"""

from __future__ import annotations

import os
import textwrap
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

# The library evaluates its default start time once, at import. A test that needs two processes
# to disagree for certain shifts it further through the environment.
_IMPORT_TIME = datetime.now() + timedelta(minutes=int(os.environ.get("CLOCK_SHIFT_MINUTES", "0")))

TEXT_WIDTH = 100

_STIMULUS_STYLES = {"CONVERSATION": "bold italic cyan1", "THOUGHT": "dim italic cyan1"}
_ACTION_STYLES = {"DONE": "grey82", "TALK": "bold green3", "THINK": "green"}


def _fill(actor: str, content: str) -> str:
    indent = " " * len(actor) + "      > "
    return textwrap.fill(content, width=TEXT_WIDTH, initial_indent=indent, subsequent_indent=indent)


class LibraryPerson:
    """An agent: ``name``, ``_persona`` (a plain dict) and ``pretty_current_interactions``."""

    def __init__(self, name: str, persona: dict[str, Any] | None = None) -> None:
        self.name = name
        self._persona: dict[str, Any] = {"name": name, **(persona or {})}
        self.environment: LibraryWorld | None = None
        # Stored memory messages: (role, payload, simulation_timestamp).
        self._memory: list[tuple[str, dict[str, Any], str | None]] = []

    def _now(self) -> str | None:
        if self.environment is None:
            return None
        return self.environment.current_datetime.isoformat()

    def listen(self, content: str, source: str = "", kind: str = "CONVERSATION") -> None:
        stimulus = {"type": kind, "content": content, "source": source}
        self._memory.append(("user", {"stimuli": [stimulus]}, self._now()))

    def act(self, kind: str, content: str = "") -> None:
        self._memory.append(
            ("assistant", {"action": {"type": kind, "content": content}}, self._now())
        )

    def _selected(
        self, first_n: int | None, last_n: int | None, include_omission_info: bool
    ) -> list[tuple[str, dict[str, Any], str | None]]:
        memory = self._memory
        if first_n is None and last_n is None:
            return list(memory)
        head = memory[:first_n] if first_n is not None else []
        tail = memory[-last_n:] if last_n is not None else []
        # The library stores its omission note in a shape its renderer cannot print: it shows as
        # an empty event, and it is there even when nothing was left out.
        note = [("omission", {}, None)] if include_omission_info else []
        return [*head, *note, *tail]

    def _pretty(self, role: str, payload: dict[str, Any]) -> str:
        if role == "user":
            lines = []
            for stimulus in payload["stimuli"]:
                actor = stimulus["source"] or "USER"
                style = _STIMULUS_STYLES.get(stimulus["type"], "italic")
                lines.append(
                    f"[{style}][underline]{actor}[/] --> [{style}][underline]{self.name}[/]: "
                    f"[{stimulus['type']}] \n{_fill(actor, stimulus['content'])}[/]"
                )
            return "\n".join(lines)
        if role == "assistant":
            action = payload["action"]
            style = _ACTION_STYLES.get(action["type"], "purple")
            return (
                f"[{style}][underline]{self.name}[/] acts: [{action['type']}] "
                f"\n{_fill(self.name, action.get('content', ''))}[/]"
            )
        raise KeyError(role)  # what the library's renderer hits on its omission note

    def pretty_current_interactions(
        self,
        simplified: bool = True,
        skip_system: bool = True,
        max_content_length: int | None = None,
        first_n: int | None = None,
        last_n: int | None = None,
        include_omission_info: bool = True,
    ) -> str:
        lines = [f"**** BEGIN SIMULATION TRAJECTORY FOR {self.name} ****"]
        last = 0
        for i, (role, payload, stamp) in enumerate(
            self._selected(first_n, last_n, include_omission_info)
        ):
            last = i
            lines.append(f"Agent simulation trajectory event #{i}:")
            lines.append(f">>>>>>>>> Date and time of events: {stamp}")
            try:
                lines.append(self._pretty(role, payload))
            except KeyError:
                continue
        lines.append(
            f"The last agent simulation trajectory event number was {last}, thus the current "
            f"number of the NEXT POTENTIAL TRAJECTORY EVENT is {last + 1}."
        )
        lines.append(f"**** END SIMULATION TRAJECTORY FOR {self.name} ****\n\n")
        return "\n".join(lines)


class LibraryWorld:
    """A world: ``name``, ``agents``, a clock from ``initial_datetime`` advanced per step."""

    def __init__(
        self,
        name: str,
        agents: list[LibraryPerson],
        initial_datetime: datetime | None = None,
        step: timedelta = timedelta(minutes=5),
    ) -> None:
        self.name = name
        self.agents = list(agents)
        self.current_datetime = _IMPORT_TIME if initial_datetime is None else initial_datetime
        self._step = step
        for agent in self.agents:
            agent.environment = self

    def advance(self) -> None:
        self.current_datetime += self._step

    def pretty_current_interactions(
        self,
        simplified: bool = True,
        skip_system: bool = True,
        max_content_length: int | None = None,
        first_n: int | None = None,
        last_n: int | None = None,
        include_omission_info: bool = True,
    ) -> str:
        blocks = []
        for agent in self.agents:
            body = agent.pretty_current_interactions(
                simplified=simplified,
                skip_system=skip_system,
                max_content_length=max_content_length,
                first_n=first_n,
                last_n=last_n,
                include_omission_info=include_omission_info,
            )
            blocks.append(
                f"**BEGIN AGENT {agent.name} HISTORY.**\n{body}\n**FINISHED AGENT {agent.name} HISTORY.**"
            )
        return "\n\n".join(blocks)


def travel_chat() -> LibraryWorld:
    """Oscar and Lisa over three steps of a default world (clock from the import time)."""
    oscar = LibraryPerson("Oscar", {"occupation": {"title": "Architect"}, "age": 30})
    lisa = LibraryPerson("Lisa", {"occupation": {"title": "Data scientist"}, "age": 28})
    world = LibraryWorld("Chat room", [oscar, lisa])
    oscar.listen("Tell me a bit about your travel preferences.")
    lisa.listen("Tell me a bit about your travel preferences.")
    world.advance()
    oscar.act("THINK", "I should mention quiet cities.")
    oscar.act("TALK", "I love quiet cities with great architecture. Click the [red] button [/] ok.")
    lisa.listen(
        "I love quiet cities with great architecture. Click the [red] button [/] ok.", "Oscar"
    )
    world.advance()
    lisa.act("TALK", "Beaches for me [citation needed], always with my cat.")
    lisa.act("DONE")
    oscar.act("DONE")
    return world


class LibraryProposition:
    """The attributes of the library's ``Proposition``: ``claim``, ``targets`` (None or a list) and
    the evaluation options, with the evaluation state it keeps after a check."""

    MIN_SCORE = 0
    MAX_SCORE = 9

    def __init__(
        self,
        claim: str,
        target: Any = None,
        include_personas: bool = False,
        first_n: int | None = None,
        last_n: int | None = None,
        double_check: bool = False,
        use_reasoning_model: bool = False,
        precondition_function: Callable[..., Any] | None = None,
    ) -> None:
        self.claim = claim
        self.targets = (
            None if target is None else (target if isinstance(target, list) else [target])
        )
        self.include_personas = include_personas
        self.first_n = first_n
        self.last_n = last_n
        self.double_check = double_check
        self.use_reasoning_model = use_reasoning_model
        self.precondition_function = precondition_function
        self.llm_chat = None
        self.value = None
        self.justification = None
        self.confidence = None
        self.recommendations = None

    def copy(self) -> LibraryProposition:
        return LibraryProposition(
            self.claim,
            self.targets,
            self.include_personas,
            self.first_n,
            self.last_n,
            self.double_check,
            self.use_reasoning_model,
            self.precondition_function,
        )


def action_type_precondition(kinds: list[str]) -> Callable[..., bool]:
    """A precondition with the library's signature: the claim applies to some action types only."""

    def precondition(target: Any, additional_context: Any, claim_variables: dict[str, Any]) -> bool:
        actions = claim_variables.get("action")
        if not isinstance(actions, list):
            actions = [actions]
        return any(isinstance(a, dict) and a.get("type") in kinds for a in actions)

    return precondition
