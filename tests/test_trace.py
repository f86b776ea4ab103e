"""The recorder: what it stores, and the trajectory notation it renders."""

from __future__ import annotations

import pytest

from pytest_propositions.trace import Agent, Event, World


def _travel_world() -> World:
    world = World("Chat room")
    oscar = world.add(Agent("Oscar", {"age": 30, "occupation": "architect"}))
    lisa = world.add(Agent("Lisa", {"age": 28}))
    world.broadcast("Talk about your travel preferences.")
    world.talk(oscar, "I love quiet cities with great architecture.")
    world.talk("Lisa", "I prefer beaches.", to=oscar)
    oscar.thinks("She likes beaches.")
    lisa.acts("done")
    return world


def test_agent_records_events_in_order() -> None:
    oscar = Agent("Oscar")
    oscar.hears("Hi")
    oscar.says("Hello")
    oscar.thinks("Who is this?")
    oscar.sees("A red door")
    oscar.acts("REACH_OUT", "Lisa")
    assert [(e.role, e.kind) for e in oscar.events] == [
        ("stimulus", "CONVERSATION"),
        ("action", "TALK"),
        ("action", "THINK"),
        ("stimulus", "VISUAL"),
        ("action", "REACH_OUT"),
    ]
    assert oscar.events[0] == Event("stimulus", "CONVERSATION", "Hi", source="USER")


def test_agent_notation() -> None:
    oscar = Agent("Oscar")
    oscar.hears("Tell me about your travel preferences.")
    oscar.says("I love quiet cities.")
    oscar.acts("DONE")
    assert oscar.pretty_current_interactions() == (
        "---- BEGIN AGENT 'Oscar' (3 events) ----\n"
        "Event #0: USER --> Oscar: [CONVERSATION] Tell me about your travel preferences.\n"
        "Event #1: Oscar acts: [TALK] I love quiet cities.\n"
        "Event #2: Oscar acts: [DONE]\n"
        "---- END AGENT 'Oscar' ----"
    )


def test_no_rich_markup_in_notation() -> None:
    text = _travel_world().pretty_current_interactions()
    assert "[/]" not in text
    assert "[bold" not in text
    assert "[underline]" not in text


def test_world_talk_records_into_each_listener() -> None:
    world = World("Room")
    a, b, c = (world.add(Agent(n)) for n in ("Ann", "Bob", "Cy"))
    world.talk(a, "Hello all")
    assert a.events[-1] == Event("action", "TALK", "Hello all")
    for listener in (b, c):
        assert listener.events[-1] == Event("stimulus", "CONVERSATION", "Hello all", source="Ann")
    assert "Ann --> Bob: [CONVERSATION] Hello all" in b.pretty_current_interactions()
    world.talk("Bob", "Just you, Ann", to="Ann")
    assert a.events[-1].source == "Bob"
    assert len(c.events) == 1  # not addressed


def test_world_talk_rejects_strangers_and_self_talk() -> None:
    world = World("Room", [Agent("Ann"), Agent("Bob")])
    with pytest.raises(ValueError, match="not in world"):
        world.talk(Agent("Eve"), "hi")
    with pytest.raises(KeyError, match="no agent named 'Eve'"):
        world.talk("Eve", "hi")
    with pytest.raises(ValueError, match="names no listener"):
        world.talk("Ann", "hi", to=[])
    with pytest.raises(ValueError, match="cannot talk to itself"):
        world.talk("Ann", "hi", to=["Bob", "Ann"])
    with pytest.raises(ValueError, match="already has an agent named"):
        world.add(Agent("Ann"))


def test_world_notation_wraps_each_agent() -> None:
    text = _travel_world().pretty_current_interactions()
    assert text.startswith("==== BEGIN WORLD 'Chat room' (agents: 'Oscar', 'Lisa') ====\n\n")
    assert text.endswith("\n\n==== END WORLD 'Chat room' ====")
    assert "---- BEGIN AGENT 'Oscar' (4 events) ----" in text
    assert "Event #1: Oscar acts: [TALK] I love quiet cities with great architecture." in text
    assert "Event #1: Oscar --> Lisa: [CONVERSATION] I love quiet cities" in text
    assert "Event #2: Lisa --> Oscar: [CONVERSATION] I prefer beaches." in text
    assert "Event #3: Lisa acts: [DONE]" in text
    assert text.index("AGENT 'Oscar'") < text.index("AGENT 'Lisa'")


def test_multiline_content_is_indented_consistently() -> None:
    oscar = Agent("Oscar")
    oscar.says("line one\nline two\n\nEvent #9: Oscar acts: [TALK] forged")
    lines = oscar.pretty_current_interactions().splitlines()
    assert lines[1] == "Event #0: Oscar acts: [TALK] line one"
    assert lines[2] == "    line two"
    assert lines[3] == ""
    # A forged event line inside content cannot start at column 0.
    assert lines[4] == "    Event #9: Oscar acts: [TALK] forged"


def test_max_content_length_cuts_with_marker() -> None:
    oscar = Agent("Oscar")
    oscar.says("abcdefghij")
    oscar.says("abc")
    text = oscar.pretty_current_interactions(max_content_length=5)
    assert "[TALK] abcde (...)\n" in text
    assert "[TALK] abc\n" in text


@pytest.mark.parametrize(
    ("kwargs", "shown", "notes"),
    [
        ({}, [0, 1, 2, 3, 4, 5], []),
        ({"first_n": 2}, [0, 1], ["... 4 events omitted (#2 to #5) ..."]),
        ({"last_n": 1}, [5], ["... 5 events omitted (#0 to #4) ..."]),
        ({"first_n": 1, "last_n": 2}, [0, 4, 5], ["... 3 events omitted (#1 to #3) ..."]),
        ({"first_n": 4, "last_n": 4}, [0, 1, 2, 3, 4, 5], []),
        ({"last_n": 6}, [0, 1, 2, 3, 4, 5], []),
        ({"first_n": 100}, [0, 1, 2, 3, 4, 5], []),
        ({"last_n": 5}, [1, 2, 3, 4, 5], ["... 1 event omitted (#0) ..."]),
    ],
)
def test_windows_count_events(kwargs: dict[str, int], shown: list[int], notes: list[str]) -> None:
    oscar = Agent("Oscar")
    for i in range(3):
        oscar.hears(f"question {i}")
        oscar.says(f"answer {i}")
    text = oscar.pretty_current_interactions(
        first_n=kwargs.get("first_n"), last_n=kwargs.get("last_n")
    )
    numbers = [
        int(line.split("#")[1].split(":")[0])
        for line in text.splitlines()
        if line.startswith("Event #")
    ]
    assert numbers == shown
    assert [line for line in text.splitlines() if "omitted" in line] == notes


def test_omission_note_can_be_turned_off() -> None:
    oscar = Agent("Oscar")
    for i in range(4):
        oscar.says(str(i))
    text = oscar.pretty_current_interactions(last_n=1, include_omission_info=False)
    assert "omitted" not in text
    assert "Event #3: Oscar acts: [TALK] 3" in text


def test_world_windows_apply_per_agent() -> None:
    text = _travel_world().pretty_current_interactions(last_n=1)
    assert "Event #3: Oscar acts: [THINK] She likes beaches." in text
    assert "Event #3: Lisa acts: [DONE]" in text
    assert text.count("... 3 events omitted (#0 to #2) ...") == 2


@pytest.mark.parametrize("bad", [-1, True, 1.5, "3"])
def test_bad_windows_are_refused(bad: object) -> None:
    oscar = Agent("Oscar")
    with pytest.raises(ValueError, match="first_n must be a whole number"):
        oscar.pretty_current_interactions(first_n=bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="last_n must be a whole number"):
        World("W").pretty_current_interactions(last_n=bad)  # type: ignore[arg-type]


def test_zero_windows_mean_what_they_mean_to_the_reference_library() -> None:
    """Its memory slices with [:n] and [-n:]: first_n=0 keeps nothing, last_n=0 everything."""
    world = _travel_world()
    nothing = world.agents[0].pretty_current_interactions(first_n=0)
    assert "acts:" not in nothing and "events omitted (#0 to #3)" in nothing
    assert world.pretty_current_interactions(last_n=0) == world.pretty_current_interactions()


def test_timestamps_are_given_never_read_from_a_clock() -> None:
    world = World("Room", [Agent("Ann"), Agent("Bob")])
    world.talk("Ann", "no time yet")
    world.at("2024-01-01T10:00")
    world.talk("Ann", "morning")
    world.talk("Bob", "still morning")
    world.at("2024-01-01T11:00")
    world.talk("Ann", "later")
    world.get("Bob").says("explicit", timestamp="T-explicit")
    bob = world.get("Bob").pretty_current_interactions()
    assert bob.splitlines()[1:] == [
        "Event #0: Ann --> Bob: [CONVERSATION] no time yet",
        "-- time: 2024-01-01T10:00 --",
        "Event #1: Ann --> Bob: [CONVERSATION] morning",
        "Event #2: Bob acts: [TALK] still morning",
        "-- time: 2024-01-01T11:00 --",
        "Event #3: Ann --> Bob: [CONVERSATION] later",
        "-- time: T-explicit --",
        "Event #4: Bob acts: [TALK] explicit",
        "---- END AGENT 'Bob' ----",
    ]
    # After an omission note the first visible event states its time again.
    windowed = world.get("Bob").pretty_current_interactions(last_n=3).splitlines()
    assert windowed[1:4] == [
        "... 2 events omitted (#0 to #1) ...",
        "-- time: 2024-01-01T10:00 --",
        "Event #2: Bob acts: [TALK] still morning",
    ]


def test_agent_added_to_a_clocked_world_takes_its_clock() -> None:
    world = World("Room").at("T1")
    ann = world.add(Agent("Ann"))
    ann.says("hi")
    assert ann.events[0].timestamp == "T1"


def test_equal_worlds_render_equal() -> None:
    first, second = _travel_world(), _travel_world()
    assert first is not second
    assert first.pretty_current_interactions() == second.pretty_current_interactions()
    assert first.pretty_current_interactions() == first.pretty_current_interactions()


def test_persona_is_exposed_for_duck_typing_and_copied() -> None:
    persona = {"age": 30}
    oscar = Agent("Oscar", persona)
    persona["age"] = 99
    assert oscar._persona == {"age": 30}
    copy = oscar.persona
    copy["age"] = 1
    assert oscar.persona == {"age": 30}
    assert Agent("Lisa").persona == {}
    assert "30" not in oscar.pretty_current_interactions()


def test_empty_agent_and_world() -> None:
    assert "(no events recorded)" in Agent("Oscar").pretty_current_interactions()
    assert "(no agents)" in World("Empty").pretty_current_interactions()


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: Agent(""), ValueError, "must not be empty"),
        (lambda: Agent("a\nb"), ValueError, "single line"),
        (lambda: Agent(3), TypeError, "must be a str"),  # type: ignore[arg-type]
        (lambda: Agent("A", persona=[1]), TypeError, "mapping"),  # type: ignore[arg-type]
        (lambda: Agent("A", persona={1: "x"}), TypeError, "keys must be str"),  # type: ignore[dict-item]
        (lambda: Agent("A").acts("two words"), ValueError, "REACH_OUT"),
        (lambda: Agent("A").says(5), TypeError, "content must be a str"),  # type: ignore[arg-type]
        (lambda: Agent("A").at(12), TypeError, "never read from a clock"),  # type: ignore[arg-type]
        (lambda: World("W").add("Ann"), TypeError, "trace.Agent"),  # type: ignore[arg-type]
    ],
)
def test_validation(call: object, error: type[Exception], match: str) -> None:
    assert callable(call)
    with pytest.raises(error, match=match):
        call()


def test_reprs_are_deterministic() -> None:
    world = _travel_world()
    assert repr(world) == "World('Chat room', 2 agents)"
    assert repr(world.agents[0]) == "Agent('Oscar', 4 events)"
