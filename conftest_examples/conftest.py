"""Example fixtures: targets a test can make claims about. Copy what fits your project."""

from __future__ import annotations

import os
import textwrap
from datetime import datetime, timedelta
from typing import Any

import pytest

from pytest_propositions import RenderOptions, register_renderer
from pytest_propositions.trace import Agent, World


@pytest.fixture
def world() -> World:
    """Two agents talking, recorded with the package's own trace recorder."""
    oscar = Agent(
        "Oscar",
        persona={"age": 30, "occupation": "architect", "likes": ["quiet cities", "modernism"]},
    )
    lisa = Agent("Lisa", persona={"age": 28, "occupation": "data scientist", "likes": ["cats"]})
    room = World("Chat room", agents=[oscar, lisa])
    room.broadcast("Introduce yourselves and talk about your travel preferences.")
    room.talk(oscar, "Hi, I'm Oscar, an architect. I love quiet cities with great architecture.")
    room.talk(lisa, "I'm Lisa. I prefer beaches, and I always travel with my cat.")
    room.talk(oscar, "Cats are lovely. Dogs are fine too, but I have never owned one.")
    return room


@pytest.fixture
def transcript() -> list[dict[str, Any]]:
    """A chat transcript from an LLM app, in OpenAI format, tool call included."""
    return [
        {"role": "system", "content": "You are a helpful travel assistant."},
        {"role": "user", "content": "What's the weather in Lisbon tomorrow?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Lisbon"}'},
                }
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "call_1",
            "content": '{"forecast": "sunny", "high_c": 24}',
        },
        {"role": "assistant", "content": "Tomorrow Lisbon will be sunny with a high of 24 °C."},
    ]


class LibraryAgent:
    """Stands in for an agent object of a simulation library (no import of that library needed).

    Anything with `pretty_current_interactions(...)`, a `name` and a `_persona` dict is judged
    as a simulated agent. This one writes the text the way TinyTroupe does: rich style tags
    around the names, and a clock that starts when the process starts, so every run prints
    other times. The judge sees neither the tags nor the wall clock (times become offsets from
    the first event, `--prop-timestamps`), so the verdicts replay in any later process.
    """

    def __init__(self, name: str, events: list[tuple[str, str, str]], persona: dict[str, Any]):
        self.name = name
        self._persona = persona
        self._events = events  # (actor or "", kind, content); "" marks the user speaking
        self._start = datetime.now()

    def _event(self, index: int, actor: str, kind: str, content: str) -> list[str]:
        when = (self._start + timedelta(minutes=5 * index)).isoformat()
        if actor:
            head = f"[bold green3][underline]{actor}[/] acts: [{kind}] "
        else:
            style = "bold italic cyan1"
            head = f"[{style}][underline]USER[/] --> [{style}][underline]{self.name}[/]: [{kind}] "
        body = textwrap.fill(content, 100, initial_indent="      > ", subsequent_indent="      > ")
        return [
            f"Agent simulation trajectory event #{index}:",
            f">>>>>>>>> Date and time of events: {when}",
            head,
            f"{body}[/]",
        ]

    def pretty_current_interactions(
        self, first_n: int | None = None, last_n: int | None = None, **_: Any
    ) -> str:
        events = list(enumerate(self._events))
        if first_n is not None:
            events = events[:first_n]
        if last_n is not None:
            events = events[-last_n:]
        lines = [f"**** BEGIN SIMULATION TRAJECTORY FOR {self.name} ****"]
        for index, (actor, kind, content) in events:
            lines.extend(self._event(index, actor, kind, content))
        lines.append(f"**** END SIMULATION TRAJECTORY FOR {self.name} ****")
        return "\n".join(lines)


@pytest.fixture
def library_agent() -> LibraryAgent:
    return LibraryAgent(
        "Ana",
        [
            ("", "CONVERSATION", "Which dessert would you recommend? [Asked at the counter.]"),
            ("Ana", "THINK", "I should suggest something traditional."),
            ("Ana", "TALK", "Try a pastel de nata, it is the classic Portuguese custard tart."),
            ("Ana", "DONE", ""),
        ],
        {"occupation": "pastry chef", "nationality": "Portuguese"},
    )


class OrderLog:
    """A custom target type: a shop's order log, rendered by a function we register below."""

    def __init__(self, orders: list[tuple[str, str, int]]) -> None:
        self.orders = orders


def render_order_log(log: OrderLog, options: RenderOptions) -> str:
    rows = log.orders[-options.last_n :] if options.last_n else log.orders
    return "\n".join(f"{customer} ordered {count} x {item}" for customer, item, count in rows)


register_renderer(OrderLog, render_order_log)


@pytest.fixture
def order_log() -> OrderLog:
    return OrderLog([("Oscar", "espresso", 1), ("Lisa", "croissant", 2), ("Oscar", "espresso", 1)])


def _chosen(config: pytest.Config, name: str) -> str | None:
    """A pytest-propositions setting as the user gave it: flag, then environment, then ini."""
    value = config.getoption(f"prop_{name}") or os.environ.get(f"PROP_{name.upper()}")
    return value or config.getini(f"prop_{name}") or None


@pytest.hookimpl(tryfirst=True)  # before the plugin reads its settings
def pytest_configure(config: pytest.Config) -> None:
    """On the bundled tiny judge, report the claims it does not uphold instead of failing.

    SmolLM2-135M (the default, --prop-model=local) shows the whole path working: a real model,
    real tokens, the cache. It is too small to judge well, so here its verdicts are listed in
    the summary with its reasons, and only a judge that cannot answer fails the run. With a
    real model (--prop-model=...) these examples are an ordinary pass/fail suite. Drop this
    hook when you copy the examples; an explicit --prop-outcome always wins.
    """
    stand_in = (_chosen(config, "model") or "local") == "local" and not _chosen(
        config, "local_model"
    )
    if stand_in and not _chosen(config, "outcome"):
        config.option.prop_outcome = "report"
