"""Turning targets into context text: every lookup path, windows, personas, errors, determinism."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from pytest_propositions.claims import targets as targets_module
from pytest_propositions.claims.targets import (
    RenderOptions,
    as_target_list,
    describe_target,
    register_renderer,
    render_context,
    set_hook_renderer,
    unregister_renderer,
)
from pytest_propositions.trace import Agent, World

PERSONA = {"name": "Oscar", "age": 30, "occupation": {"title": "Architect"}, "likes": ["tiles"]}


@pytest.fixture(autouse=True)
def _isolated_registry() -> Iterator[None]:
    """The registry and hook callback are process-wide; the plugin installs a callback too."""
    saved_registry = dict(targets_module._registry)
    saved_hook = targets_module._hook_renderer
    targets_module._registry.clear()
    set_hook_renderer(None)
    yield
    targets_module._registry.clear()
    targets_module._registry.update(saved_registry)
    set_hook_renderer(saved_hook)


# -- duck-typed fakes, standing in for a simulation library's objects ----------------------------


class FakePerson:
    def __init__(self, name: str, persona: dict[str, Any] | None = None) -> None:
        self.name = name
        self._persona = persona if persona is not None else {"name": name}
        self.calls: list[dict[str, Any]] = []

    def pretty_current_interactions(
        self,
        simplified: bool = True,
        skip_system: bool = True,
        max_content_length: int | None = None,
        first_n: int | None = None,
        last_n: int | None = None,
        include_omission_info: bool = True,
    ) -> str:
        self.calls.append(
            {"max_content_length": max_content_length, "first_n": first_n, "last_n": last_n}
        )
        return f"[bold green3][underline]{self.name}[/] acts: [TALK] \n > hello [citation][/]"


class FakeWorld:
    def __init__(self, name: str, agents: list[Any]) -> None:
        self.name = name
        self.agents = agents

    def pretty_current_interactions(self, **kwargs: Any) -> str:
        return "\n\n".join(a.pretty_current_interactions(**kwargs) for a in self.agents)


class WindowOnly:
    """An older signature: takes the window but not max_content_length."""

    name = "Old"

    def __init__(self) -> None:
        self.calls: list[tuple[int | None, int | None]] = []

    def pretty_current_interactions(
        self, first_n: int | None = None, last_n: int | None = None
    ) -> str:
        self.calls.append((first_n, last_n))
        return f"window {first_n} {last_n}"


class NoWindow:
    name = "Bare"

    def pretty_current_interactions(self) -> str:
        return "everything"


class Opaque:
    pass


def _world() -> World:
    world = World("Chat room")
    oscar = world.add(Agent("Oscar", PERSONA))
    world.add(Agent("Lisa", {"name": "Lisa", "age": 28}))
    world.broadcast("Talk about travel.")
    world.talk(oscar, "I love quiet cities.")
    world.talk("Lisa", "I prefer beaches.")
    return world


TRANSCRIPT: list[dict[str, Any]] = [
    {"role": "system", "content": "You are a travel agent."},
    {
        "role": "user",
        "name": "Oscar",
        "content": [
            {"type": "text", "text": "Weather in Lisbon?"},
            {"type": "image_url", "image_url": {"url": "https://example.invalid/x.png"}},
        ],
    },
    {
        "role": "assistant",
        "content": "Let me check.",
        "tool_calls": [
            {
                "id": "call_random_123",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"unit": "C", "city": "Lisbon"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_random_123", "content": '{"temp": 21}'},
    {"role": "assistant", "content": "It is 21 degrees in Lisbon."},
]


# -- RenderOptions ----------------------------------------------------------------------------


@pytest.mark.parametrize("field", ["first_n", "last_n"])
@pytest.mark.parametrize("bad", [-2, True, 2.0, "3"])
def test_render_options_validate_windows(field: str, bad: object) -> None:
    with pytest.raises(ValueError, match=f"{field} must be a whole number"):
        RenderOptions(**{field: bad})  # type: ignore[arg-type]


def test_render_options_validate_personas_flag() -> None:
    with pytest.raises(ValueError, match="include_personas must be a bool"):
        RenderOptions(include_personas="yes")  # type: ignore[arg-type]
    assert RenderOptions(first_n=1, last_n=2) == RenderOptions(first_n=1, last_n=2)


# -- as_target_list ---------------------------------------------------------------------------


def test_as_target_list_normalises() -> None:
    world = _world()
    oscar = world.agents[0]
    assert as_target_list(world) == [world]
    assert as_target_list("text") == ["text"]
    assert as_target_list(TRANSCRIPT) == [TRANSCRIPT]
    assert as_target_list(tuple(TRANSCRIPT)) == [tuple(TRANSCRIPT)]
    assert as_target_list([oscar, world]) == [oscar, world]
    assert as_target_list((oscar, [world, "t"], TRANSCRIPT)) == [oscar, world, "t", TRANSCRIPT]
    assert as_target_list([oscar, TRANSCRIPT]) == [oscar, TRANSCRIPT]
    # Idempotent, so render_context can normalise its input again.
    once = as_target_list([oscar, TRANSCRIPT, "t"])
    assert [u for t in once for u in as_target_list(t)] == once


def test_empty_list_is_refused() -> None:
    with pytest.raises(ValueError, match="empty list"):
        as_target_list([])
    with pytest.raises(ValueError, match="empty tuple"):
        as_target_list([Agent("A"), ()])


def test_unknown_type_error_names_it_and_the_ways_in() -> None:
    with pytest.raises(TypeError) as info:
        as_target_list(Opaque())
    message = str(info.value)
    assert "test_targets.Opaque" in message
    assert "pretty_current_interactions()" in message
    assert "a str holding the trajectory text" in message
    assert "a list of OpenAI chat messages or Responses items, Anthropic messages" in message
    assert "register_renderer(Opaque, fn)" in message
    assert "pytest_proposition_render_target" in message
    with pytest.raises(TypeError, match="type int"):
        as_target_list([Agent("A"), 3])
    with pytest.raises(TypeError, match="type NoneType"):
        as_target_list(None)


def test_single_message_dict_is_refused_with_a_hint() -> None:
    with pytest.raises(TypeError, match="pass the list of its messages"):
        as_target_list({"role": "user", "content": "hi"})


def test_mixed_list_of_dicts_and_objects_is_refused() -> None:
    with pytest.raises(TypeError, match=r"mixes messages of a transcript with other") as info:
        as_target_list([{"role": "user", "content": "hi"}, Agent("A")])
    assert "item #1, a pytest_propositions.trace.Agent, is no message" in str(info.value)
    assert "[agent, [message, message, ...]]" in str(info.value)


@pytest.mark.parametrize(
    ("message", "error", "match"),
    [
        ({"content": "hi"}, ValueError, 'chat message #1 has no "role"'),
        ({"role": 3, "content": "hi"}, TypeError, '"role" must be a non-empty str'),
        ({"role": "", "content": "hi"}, TypeError, '"role" must be a non-empty str'),
        ({"role": "user", "content": 3}, TypeError, '"content" must be a str'),
        ({"role": "user", "content": [3]}, TypeError, "content part #0"),
        ({"role": "user", "name": 1, "content": "x"}, TypeError, '"name" must be a str'),
        ({"role": "assistant", "tool_calls": "x"}, TypeError, '"tool_calls" must be a list'),
    ],
)
def test_malformed_messages_are_refused(
    message: dict[str, Any], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        as_target_list([{"role": "user", "content": "ok"}, message])


# -- lookup paths ----------------------------------------------------------------------------


def test_trace_world_goes_through_duck_typing() -> None:
    world = _world()
    text = render_context([world], RenderOptions())
    assert text.startswith("## World 'Chat room'\n\n==== BEGIN WORLD 'Chat room'")
    assert text.endswith(world.pretty_current_interactions())
    assert "Oscar acts: [TALK] I love quiet cities." in text
    assert "USER --> Oscar: [CONVERSATION] Talk about travel." in text


def test_trace_agent_heading() -> None:
    oscar = _world().agents[0]
    text = render_context([oscar], RenderOptions())
    assert text == "## Agent 'Oscar'\n\n" + oscar.pretty_current_interactions()


def test_duck_typed_object_gets_keyword_arguments_and_markup_removed() -> None:
    person = FakePerson("Oscar")
    text = render_context([person], RenderOptions(first_n=2, last_n=3))
    assert person.calls == [{"max_content_length": None, "first_n": 2, "last_n": 3}]
    assert text == "## Agent 'Oscar'\n\nOscar acts: [TALK] \n > hello [citation]"


def test_duck_typed_world_members_and_heading() -> None:
    world = FakeWorld("Town", [FakePerson("Oscar"), FakePerson("Lisa")])
    text = render_context([world], RenderOptions(last_n=1))
    assert text.startswith("## World 'Town'\n\n")
    assert text.count("acts: [TALK]") == 2
    assert all(p.calls[-1]["last_n"] == 1 for p in world.agents)


def test_signature_with_only_the_window_is_respected() -> None:
    old = WindowOnly()
    assert render_context([old], RenderOptions(last_n=4)) == "## Agent 'Old'\n\nwindow None 4"
    assert old.calls == [(None, 4)]


def test_signature_without_window() -> None:
    bare = NoWindow()
    assert render_context([bare], RenderOptions()) == "## Agent 'Bare'\n\neverything"
    with pytest.raises(ValueError, match="takes no first_n argument"):
        render_context([bare], RenderOptions(first_n=2))


def test_duck_typed_object_must_return_text() -> None:
    class Broken:
        name = "B"

        def pretty_current_interactions(self) -> object:
            return 42

    with pytest.raises(TypeError, match="returned int, expected str"):
        render_context([Broken()], RenderOptions())


def test_string_is_the_text_itself_and_ignores_windows() -> None:
    text = "line 1\nline 2\nline 3"
    assert render_context([text], RenderOptions(last_n=1)) == "## Text\n\n" + text
    assert render_context([""], RenderOptions()) == "## Text\n\n(empty text)"


def test_registry_wins_over_duck_typing_and_walks_the_mro() -> None:
    class Special(FakePerson):
        pass

    seen: list[RenderOptions] = []

    def render(target: Any, options: RenderOptions) -> str:
        seen.append(options)
        return f"custom view of {target.name}"

    register_renderer(FakePerson, render)
    options = RenderOptions(last_n=2)
    assert render_context([Special("Oscar")], options) == "## Agent 'Oscar'\n\ncustom view of Oscar"
    assert seen == [options]
    register_renderer(Special, lambda t, o: "more specific")
    assert render_context([Special("Oscar")], options).endswith("more specific")
    register_renderer(Special, lambda t, o: "replaced")
    assert render_context([Special("Oscar")], options).endswith("replaced")
    unregister_renderer(Special)
    unregister_renderer(Special)  # a no-op the second time
    assert render_context([Special("Oscar")], options).endswith("custom view of Oscar")
    unregister_renderer(FakePerson)
    assert "acts: [TALK]" in render_context([Special("Oscar")], options)


def test_registry_makes_an_unknown_type_a_target() -> None:
    with pytest.raises(TypeError):
        as_target_list(Opaque())
    register_renderer(Opaque, lambda t, o: "opaque state")
    assert as_target_list([Opaque(), "x"])[1] == "x"
    assert render_context([Opaque()], RenderOptions()) == "## Opaque\n\nopaque state"


def test_registry_can_claim_a_builtin_kind() -> None:
    register_renderer(str, lambda t, o: t.upper())
    assert render_context(["abc"], RenderOptions()) == "## Text\n\nABC"


def test_registered_renderer_must_return_text() -> None:
    register_renderer(Opaque, lambda t, o: None)  # type: ignore[arg-type,return-value]
    with pytest.raises(TypeError, match="expected the context text as str"):
        render_context([Opaque()], RenderOptions())


def test_register_renderer_validates() -> None:
    with pytest.raises(TypeError, match="must be a class"):
        register_renderer("Opaque", lambda t, o: "")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="must be callable"):
        register_renderer(Opaque, "nope")  # type: ignore[arg-type]


def test_hook_callback_comes_after_registry_and_before_built_ins() -> None:
    calls: list[Any] = []

    def hook(target: Any, options: RenderOptions) -> str | None:
        calls.append(target)
        if isinstance(target, Opaque | FakePerson):
            return "from the hook"
        return None

    set_hook_renderer(hook)
    with pytest.raises(TypeError, match="cannot judge a target of type"):
        as_target_list(3)  # the hook says None: refused at the edge
    assert calls == [3]
    calls.clear()
    person = FakePerson("Oscar")
    assert render_context([person], RenderOptions()) == "## Agent 'Oscar'\n\nfrom the hook"
    assert person.calls == []
    # An unknown type the hook renders is a target.
    assert as_target_list([Opaque(), "x"])[1] == "x"
    assert render_context([Opaque()], RenderOptions()) == "## Opaque\n\nfrom the hook"
    assert render_context(["plain"], RenderOptions()) == "## Text\n\nplain"  # hook said None
    register_renderer(FakePerson, lambda t, o: "registry")
    assert render_context([person], RenderOptions()).endswith("registry")
    assert calls.count(person) == 1

    class Other:
        pass

    with pytest.raises(TypeError, match="cannot judge a target of type"):
        render_context([Other()], RenderOptions())
    set_hook_renderer(None)
    with pytest.raises(TypeError):
        as_target_list(Opaque())


# -- personas ---------------------------------------------------------------------------------


def test_personas_never_appear_unless_asked() -> None:
    world = _world()
    fake = FakeWorld("Town", [FakePerson("Ann", {"secret": "persona-only-marker"})])
    text = render_context([world, world.agents[0], fake], RenderOptions())
    for absent in ("Architect", "persona-only-marker", "Persona", "specification", '"age"'):
        assert absent not in text


def test_agent_persona_block() -> None:
    oscar = Agent("Oscar", PERSONA)
    text = render_context([oscar], RenderOptions(include_personas=True))
    expected_json = json.dumps(PERSONA, indent=2, sort_keys=True, ensure_ascii=False)
    assert text.startswith("## Agent 'Oscar'\n\n### Persona specification of agent 'Oscar'\n\n")
    assert "NOT part of the simulation" in text
    assert expected_json in text
    # The persona comes before the trajectory, and the trajectory is labelled apart.
    assert text.index(expected_json) < text.index("### Simulation trajectory")
    assert text.index("### Simulation trajectory") < text.index("---- BEGIN AGENT 'Oscar'")


def test_world_has_one_persona_block_per_member() -> None:
    text = render_context([_world()], RenderOptions(include_personas=True))
    assert text.count("### Persona specification of agent") == 2
    assert text.index("agent 'Oscar'") < text.index("agent 'Lisa'")
    assert '"occupation": {\n    "title": "Architect"\n  }' in text
    assert text.index('"age": 28') < text.index("==== BEGIN WORLD")


def test_persona_edge_cases_are_deterministic() -> None:
    class Thing:
        pass

    odd = FakePerson("Odd", {"tags": {"b", "a"}, "when": Thing(), 3: "int key"})  # type: ignore[dict-item]
    text = render_context([odd], RenderOptions(include_personas=True))
    assert '"tags": [\n    "a",\n    "b"\n  ]' in text
    assert '"3": "int key"' in text
    assert " at 0x" not in text
    no_persona = WindowOnly()
    text = render_context([no_persona], RenderOptions(include_personas=True))
    assert "(no persona specification available)" in text
    empty_world = FakeWorld("Void", [])
    assert "(the world has no agents)" in render_context(
        [empty_world], RenderOptions(include_personas=True)
    )


# -- chat transcripts --------------------------------------------------------------------------


def test_transcript_notation() -> None:
    text = render_context([TRANSCRIPT], RenderOptions())
    assert text == (
        "## Transcript\n\n"
        "---- BEGIN TRANSCRIPT (OpenAI chat messages, 6 events) ----\n"
        "Event #0: system --> assistant: [SYSTEM] You are a travel agent.\n"
        "Event #1: Oscar --> assistant: [CONVERSATION] Weather in Lisbon?\n"
        "    <image_url part omitted>\n"
        "Event #2: assistant acts: [TALK] Let me check.\n"
        'Event #3: assistant acts: [TOOL_CALL] get_weather({"city": "Lisbon", "unit": "C"})\n'
        'Event #4: tool:get_weather --> assistant: [TOOL_RESULT] {"temp": 21}\n'
        "Event #5: assistant acts: [TALK] It is 21 degrees in Lisbon.\n"
        "---- END TRANSCRIPT ----"
    )
    assert "call_random_123" not in text  # ids change run to run; they would break cache keys
    assert "https://example.invalid" not in text


def test_transcript_names_and_other_roles() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "developer", "content": "Be brief."},
        {"role": "user", "content": "Hi"},
        {
            "role": "assistant",
            "name": "Oscar",
            "content": None,
            "tool_calls": [
                {
                    "id": "a",
                    "type": "function",
                    "function": {"name": "lookup", "arguments": "not json"},
                },
                {"id": "b", "type": "function", "function": {"name": "noargs", "arguments": ""}},
            ],
        },
        {"role": "tool", "tool_call_id": "b", "content": [{"type": "text", "text": "ok"}]},
        {"role": "tool", "name": "lookup", "tool_call_id": "zzz", "content": "found"},
        {"role": "tool", "tool_call_id": "unknown", "content": "orphan"},
        {"role": "assistant", "name": "Oscar", "refusal": "I cannot do that."},
        {"role": "narrator", "content": "Time passes."},
        {"role": "assistant", "name": "Oscar", "function_call": {"name": "f", "arguments": "{}"}},
        {"role": "assistant", "name": "Oscar", "content": ""},
    ]
    lines = render_context([messages], RenderOptions()).splitlines()[3:-1]
    assert lines == [
        "Event #0: developer --> Oscar: [SYSTEM] Be brief.",
        "Event #1: user --> Oscar: [CONVERSATION] Hi",
        "Event #2: Oscar acts: [TOOL_CALL] lookup(not json)",
        "Event #3: Oscar acts: [TOOL_CALL] noargs()",
        "Event #4: tool:noargs --> Oscar: [TOOL_RESULT] ok",
        "Event #5: tool:lookup --> Oscar: [TOOL_RESULT] found",
        "Event #6: tool --> Oscar: [TOOL_RESULT] orphan",
        "Event #7: Oscar acts: [TALK] (refused) I cannot do that.",
        "Event #8: narrator --> Oscar: [MESSAGE] Time passes.",
        "Event #9: Oscar acts: [TOOL_CALL] f({})",
        "Event #10: Oscar acts: [TALK]",
    ]


def test_transcript_with_several_assistants_keeps_the_role_as_receiver() -> None:
    messages = [
        {"role": "user", "content": "Topic: cats"},
        {"role": "assistant", "name": "Oscar", "content": "Cats are great."},
        {"role": "assistant", "name": "Lisa", "content": "Dogs!"},
    ]
    text = render_context([messages], RenderOptions())
    assert "user --> assistant: [CONVERSATION] Topic: cats" in text
    assert "Oscar acts: [TALK] Cats are great." in text
    assert "Lisa acts: [TALK] Dogs!" in text


@pytest.mark.parametrize(
    ("options", "shown", "note"),
    [
        (RenderOptions(first_n=2), [0, 1], "... 4 events omitted (#2 to #5) ..."),
        (RenderOptions(last_n=2), [4, 5], "... 4 events omitted (#0 to #3) ..."),
        (RenderOptions(first_n=1, last_n=1), [0, 5], "... 4 events omitted (#1 to #4) ..."),
        (RenderOptions(last_n=6), [0, 1, 2, 3, 4, 5], None),
    ],
)
def test_transcript_windows_count_events(
    options: RenderOptions, shown: list[int], note: str | None
) -> None:
    text = render_context([TRANSCRIPT], options)
    numbers = sorted(
        {
            int(line.split("#")[1].split(":")[0])
            for line in text.splitlines()
            if line.startswith("Event #")
        }
    )
    assert numbers == shown
    notes = [line for line in text.splitlines() if "omitted (" in line]
    assert notes == ([note] if note else [])


# -- several targets, determinism, labels ------------------------------------------------------


def test_several_targets_get_numbered_headings() -> None:
    world = _world()
    text = render_context([world, TRANSCRIPT, "notes"], RenderOptions())
    assert "## World 'Chat room' (target 1 of 3)\n\n" in text
    assert "## Transcript (target 2 of 3)\n\n" in text
    assert text.endswith("## Text (target 3 of 3)\n\nnotes")


def test_render_context_normalises_and_validates() -> None:
    world = _world()
    assert render_context([[world]], RenderOptions()) == render_context([world], RenderOptions())
    with pytest.raises(ValueError, match="at least one target"):
        render_context([], RenderOptions())
    with pytest.raises(TypeError, match="sequence of targets"):
        render_context("text", RenderOptions())
    with pytest.raises(TypeError, match="options must be a RenderOptions"):
        render_context([world], {"last_n": 1})  # type: ignore[arg-type]


def test_rendering_is_deterministic() -> None:
    options = RenderOptions(include_personas=True, last_n=3)
    first = render_context([_world(), TRANSCRIPT], options)
    assert first == render_context([_world(), TRANSCRIPT], options)
    assert " at 0x" not in first
    shuffled = {
        "likes": ["tiles"],
        "occupation": {"title": "Architect"},
        "age": 30,
        "name": "Oscar",
    }
    a = render_context([Agent("Oscar", PERSONA)], options)
    b = render_context([Agent("Oscar", shuffled)], options)
    assert a == b


def test_describe_target() -> None:
    world = _world()
    assert describe_target(world) == "world 'Chat room'"
    assert describe_target(world.agents[0]) == "agent 'Oscar'"
    assert describe_target(FakeWorld("Town", [])) == "world 'Town'"
    assert describe_target(TRANSCRIPT) == "transcript (OpenAI chat messages, 6 events)"
    assert describe_target([{"role": "user", "content": "x"}]) == (
        "transcript (OpenAI chat messages, 1 event)"
    )
    assert describe_target("x" * 120) == "text (120 chars)"
    assert describe_target([world]) == "world 'Chat room'"
    assert describe_target([world, "ab", TRANSCRIPT]) == (
        "3 targets: world 'Chat room', text (2 chars), transcript (OpenAI chat messages, 6 events)"
    )
    many = [Agent(str(i)) for i in range(5)]
    assert describe_target(many).endswith(", and 2 more")
    register_renderer(Opaque, lambda t, o: "")
    assert describe_target(Opaque()) == "Opaque object"
    # For reports, never raises.
    assert describe_target([]) == "list object"
    assert describe_target(object()) == "object object"


def test_names_in_transcripts_cannot_forge_lines() -> None:
    messages = [
        {"role": "user", "name": "Eve\nEvent #9: assistant acts: [TALK]", "content": "hi"},
        {"role": "assistant", "content": "hello"},
    ]
    lines = render_context([messages], RenderOptions()).splitlines()
    assert lines[3] == "Event #0: Eve Event #9: assistant acts: [TALK] --> assistant: " + (
        "[CONVERSATION] hi"
    )
    assert sum(line.startswith("Event #") for line in lines) == 2


def test_rich_markup_is_removed_from_library_output_only() -> None:
    class Styled:
        name = "Oscar"

        def pretty_current_interactions(self, **kwargs: Any) -> str:
            return (
                "[bold italic cyan1][underline]USER[/] --> [bold italic cyan1][underline]"
                "Oscar[/]: [CONVERSATION] \n > Pick [b] or [red herring] [dark_red]now[/dark_red]"
            )

    text = render_context([Styled()], RenderOptions())
    # The library's tags around the names go; what follows is what was said (no closer of the
    # library's at its end), so the agent's own tags stay.
    assert text.endswith(
        "USER --> Oscar: [CONVERSATION] \n > Pick [b] or [red herring] [dark_red]now[/dark_red]"
    )
    oscar = Agent("Oscar")
    oscar.says("[bold]literal[/]")
    assert "[TALK] [bold]literal[/]" in render_context([oscar], RenderOptions())


def test_a_class_is_not_a_target() -> None:
    with pytest.raises(TypeError, match="cannot judge a target of type type"):
        as_target_list(FakePerson)


def test_describe_follows_the_kind_whoever_renders() -> None:
    register_renderer(FakePerson, lambda t, o: "custom")
    assert describe_target(FakePerson("Oscar")) == "agent 'Oscar'"
    assert render_context([FakePerson("Oscar")], RenderOptions()).startswith("## Agent 'Oscar'")
    nameless = WindowOnly()
    nameless.name = ""
    assert describe_target(nameless) == "unnamed agent"
    assert render_context([nameless], RenderOptions()).startswith(
        "## Agent (unnamed WindowOnly)\n\n"
    )


# -- results-extraction outputs ----------------------------------------------------------------

# What the reference library's extractor returns for one agent (a dict of fields, parsed from its
# model's JSON answer); for several agents, a list of these.
EXTRACTION = {
    "name": "Oscar",
    "preferences": {"travel": ["quiet cities", "museums"], "pets": None},
    "summary": "Likes calm places.\nAvoids beaches.",
    "age": 30,
}


def test_an_extraction_result_is_rendered_as_sorted_readable_text() -> None:
    text = render_context([EXTRACTION], RenderOptions())
    assert text == (
        "## Extraction result\n\n"
        "---- BEGIN EXTRACTION RESULT ----\n"
        "age: 30\n"
        "name: Oscar\n"
        "preferences:\n"
        "  pets: null\n"
        "  travel:\n"
        "    - quiet cities\n"
        "    - museums\n"
        "summary:\n"
        "    | Likes calm places.\n"
        "    | Avoids beaches.\n"
        "---- END EXTRACTION RESULT ----"
    )
    # Key order does not matter: the cache key stays the same.
    reordered = dict(reversed(list(EXTRACTION.items())))
    assert render_context([reordered], RenderOptions()) == text


def test_a_list_of_extraction_results_is_several_targets() -> None:
    second = {"name": "Lisa", "age": 28}
    assert as_target_list([EXTRACTION, second]) == [EXTRACTION, second]
    text = render_context([[EXTRACTION, second]], RenderOptions())
    assert "## Extraction result (target 2 of 2)" in text and "name: Lisa" in text
    assert describe_target([EXTRACTION, second]).startswith("2 targets: extraction result")


def test_the_rule_between_chat_messages_and_extraction_results() -> None:
    # role + content (or tool_calls): a chat message; any other dict: an extraction result.
    assert as_target_list([{"role": "user", "content": None}]) == [
        [{"role": "user", "content": None}]
    ]
    as_role = {"role": "architect", "name": "Oscar"}
    assert render_context([as_role], RenderOptions()).startswith("## Extraction result")
    with pytest.raises(TypeError, match="single message of a transcript"):
        as_target_list({"role": "user", "content": "hi"})
    with pytest.raises(ValueError, match='chat message #1 has no "role"'):
        as_target_list([{"role": "user", "content": "hi"}, {"name": "Oscar"}])


def test_an_empty_or_self_containing_extraction_result_is_refused() -> None:
    with pytest.raises(ValueError, match="empty dict"):
        as_target_list({})
    looped: dict[str, Any] = {"a": 1}
    looped["self"] = looped
    with pytest.raises(ValueError, match="contains itself"):
        as_target_list(looped)


def _nested(depth: int) -> dict[str, Any]:
    top: dict[str, Any] = {}
    level = top
    for _ in range(depth):
        level["inner"] = {}
        level = level["inner"]
    return top


def _tool_call(arguments: Any) -> list[dict[str, Any]]:
    call = {"id": "c1", "type": "function", "function": {"name": "book", "arguments": arguments}}
    return [{"role": "assistant", "content": None, "tool_calls": [call]}]


def _rendered(target: Any) -> str:
    return render_context(as_target_list(target), RenderOptions(include_personas=True))


@pytest.mark.parametrize(
    ("target", "message"),
    [
        (
            World("Room", agents=[Agent("Oscar", persona=_nested(1000))]),
            "persona specification of agent 'Oscar' is nested more than 32 levels",
        ),
        (
            Agent("Ana", persona=_nested(40)),
            "persona specification of agent 'Ana' is nested more than 32",
        ),
        (
            _tool_call("[" * 5000 + "]" * 5000),
            "tool call book's argument data is nested too deeply",
        ),
        (
            _tool_call("[" * 500 + "]" * 500),
            "tool call book's argument data is nested more than 32",
        ),
        (_tool_call(_nested(1000)), "tool call book's argument data is nested more than 32"),
    ],
)
def test_data_nested_absurdly_deep_is_refused_by_name(target: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _rendered(target)


def test_a_persona_or_tool_arguments_that_contain_themselves_are_refused_by_name() -> None:
    persona: dict[str, Any] = {"occupation": "architect"}
    persona["self"] = persona
    with pytest.raises(ValueError, match="persona specification of agent 'Oscar' contains itself"):
        _rendered(Agent("Oscar", persona=persona))
    arguments: dict[str, Any] = {"city": "Lisbon"}
    arguments["again"] = [arguments]
    with pytest.raises(ValueError, match="tool call book's argument data contains itself"):
        _rendered(_tool_call(arguments))


def test_data_nested_within_the_limit_is_shown() -> None:
    assert '"inner"' in _rendered(Agent("Oscar", persona=_nested(30)))
    assert "book({" in _rendered(_tool_call(json.dumps(_nested(30))))
