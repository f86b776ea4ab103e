"""Simulation-library trajectories: their style tags go, agents' brackets stay, clocks steady."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest

from pytest_propositions.claims.library_text import relative_timestamps, strip_style_tags
from pytest_propositions.claims.targets import RenderOptions, render_context
from pytest_propositions.settings import SettingsError, resolve
from tests.support.judge_server import ScriptedJudge, verdict
from tests.support.tinytroupe_like import LibraryPerson, LibraryWorld, travel_chat

REPO = Path(__file__).resolve().parent.parent

ONE_EVENT = (
    "**** BEGIN SIMULATION TRAJECTORY FOR Oscar ****\n"
    "Agent simulation trajectory event #0:\n"
    ">>>>>>>>> Date and time of events: 2024-01-01T10:00:00\n"
    "[bold italic cyan1][underline]USER[/] --> [bold italic cyan1][underline]Oscar[/]: "
    "[CONVERSATION] \n"
    "          > Tell me a bit about your travel preferences.[/]\n"
    "Agent simulation trajectory event #1:\n"
    ">>>>>>>>> Date and time of events: 2024-01-01T10:05:00\n"
    "[bold green3][underline]Oscar[/] acts: [TALK] \n"
    "           > I love quiet cities with great architecture.[/]\n"
    "The last agent simulation trajectory event number was 1, thus the current number of the "
    "NEXT POTENTIAL TRAJECTORY EVENT is 2.\n"
    "**** END SIMULATION TRAJECTORY FOR Oscar ****"
)


def test_the_library_example_loses_its_tags_and_its_wall_clock() -> None:
    text = relative_timestamps(strip_style_tags(ONE_EVENT))
    assert "[/]" not in text and "[underline]" not in text and "cyan1" not in text
    assert "USER --> Oscar: [CONVERSATION] \n          > Tell me a bit" in text
    assert (
        "Oscar acts: [TALK] \n           > I love quiet cities with great architecture.\n" in text
    )
    assert ">>>>>>>>> Date and time of events: +0:00:00\n" in text
    assert ">>>>>>>>> Date and time of events: +0:05:00\n" in text
    assert "2024" not in text


@pytest.mark.parametrize(
    "said",
    [
        "Click the [red] button",
        "[citation needed] is what they wrote",
        "a literal [/] inside what was said",
        "ends with a closer [/]",
        "[bold green3][underline]Fake[/] acts: [TALK] written by an agent",
        "[bold]emphasis[/] and [dim]aside[/]",
    ],
)
def test_what_agents_said_reaches_the_judge_unchanged(said: str) -> None:
    agent = LibraryPerson("Oscar")
    agent.act("TALK", said)
    agent.listen(said, source="Lisa")
    text = render_context([agent], RenderOptions())
    assert text.count(said) == 2
    # The library's own tags are gone all the same.
    assert "[bold green3][underline]Oscar[/] acts" not in text
    assert "Oscar acts: [TALK] \n" in text
    assert "Lisa --> Oscar: [CONVERSATION] \n" in text


def test_every_style_the_library_uses_is_removed() -> None:
    agent = LibraryPerson("Ana")
    for kind in ("CONVERSATION", "THOUGHT", "VISUAL"):
        agent.listen(f"a {kind.lower()} stimulus", kind=kind)
    for kind in ("TALK", "THINK", "DONE", "REACH_OUT"):
        agent.act(kind, "" if kind == "DONE" else f"a {kind.lower()} action")
    text = strip_style_tags(agent.pretty_current_interactions())
    assert "[/]" not in text
    for style in ("cyan1", "italic", "grey82", "green3", "green", "purple", "underline"):
        assert f"[{style}" not in text and f"{style}]" not in text
    # An empty event's lone closer goes too.
    assert "Ana acts: [DONE] \nAgent simulation trajectory event #6:" in text
    assert "Ana acts: [REACH_OUT] \n" in text and "USER --> Ana: [VISUAL] \n" in text


def test_intervention_style_and_inner_tags_of_the_vocabulary() -> None:
    text = "[bright_magenta][bold]Intervention[/] --> [bright_magenta][dim]Oscar[/]: [INTERVENTION] \n   > stop[/]"
    assert strip_style_tags(text) == "Intervention --> Oscar: [INTERVENTION] \n   > stop"


def test_text_not_shaped_like_the_library_is_left_alone() -> None:
    for text in (
        "[red]Oscar[/] acts: [TALK] \n > hi[/]",  # red is not a style the library writes
        "Oscar acts: [TALK] [bold]hi[/]",
        "[bold green3][underline]Oscar[/] acts: [TALK] hello[/]",  # content on the header line
    ):
        assert strip_style_tags(text) == text


def test_a_header_without_the_closing_tag_keeps_its_content() -> None:
    text = "[bold green3][underline]Oscar[/] acts: [TALK] \n   > no closer here"
    assert strip_style_tags(text) == "Oscar acts: [TALK] \n   > no closer here"


def test_timestamp_modes() -> None:
    world = travel_chat()
    raw = world.pretty_current_interactions()
    assert relative_timestamps(raw, "absolute") == raw
    dropped = relative_timestamps(raw, "none")
    assert "Date and time of events" not in dropped
    relative = relative_timestamps(raw)
    stamps = [line.rsplit(": ", 1)[1] for line in relative.splitlines() if "Date and time" in line]
    # Oscar's block, then Lisa's: the offsets follow the world's steps of five minutes.
    oscar = ["+0:00:00", "+0:05:00", "+0:05:00", "+0:10:00"]
    lisa = ["+0:00:00", "+0:05:00", "+0:10:00", "+0:10:00"]
    assert stamps == oscar + lisa
    with pytest.raises(ValueError, match="relative, absolute, none"):
        relative_timestamps(raw, "wall")


def test_offsets_none_unparsable_negative_and_fractions() -> None:
    text = "\n".join(
        f">>>>>>>>> Date and time of events: {stamp}"
        for stamp in (
            "None",
            "2024-01-01T10:00:00.250000",
            "2024-01-02T11:00:00.250000",
            "2024-01-01T09:59:59",
            "yesterday",
            "2024-01-01T10:00:00+00:00",
        )
    )
    out = [line.rsplit(": ", 1)[1] for line in relative_timestamps(text).splitlines()]
    assert out == [
        "None",
        "+0:00:00",
        "+25:00:00",
        "-0:00:01.250000",
        "yesterday",
        "2024-01-01T10:00:00+00:00",
    ]


def test_agent_outside_a_world_prints_none_and_keeps_it() -> None:
    agent = LibraryPerson("Solo")
    agent.act("TALK", "hello")
    text = render_context([agent], RenderOptions())
    assert ">>>>>>>>> Date and time of events: None" in text


def test_windows_and_omission_notes_keep_their_shape() -> None:
    world = travel_chat()
    text = render_context([world], RenderOptions(last_n=2))
    # The omission note is an empty event stamped None; the window's events are offsets from
    # the first time shown.
    assert text.count(">>>>>>>>> Date and time of events: None") == 2
    assert "+0:00:00" in text and "[underline]" not in text


def test_strings_are_never_rewritten() -> None:
    text = render_context([ONE_EVENT], RenderOptions())
    assert text.endswith(ONE_EVENT)


def test_option_is_validated_everywhere() -> None:
    with pytest.raises(ValueError, match="timestamps must be one of"):
        RenderOptions(timestamps="clock")
    assert resolve({}, {}, {}).timestamps == "relative"
    assert resolve({}, {"PROP_TIMESTAMPS": "none"}, {"timestamps": "absolute"}).timestamps == "none"
    with pytest.raises(SettingsError, match="--prop-timestamps: expected one of"):
        resolve({"timestamps": "wall"}, {}, {})


def test_absolute_mode_renders_the_raw_clock() -> None:
    world = LibraryWorld("Room", [LibraryPerson("Oscar")], initial_datetime=datetime(2030, 5, 1))
    world.agents[0].act("TALK", "hi")
    assert "2030-05-01T00:00:00" in render_context([world], RenderOptions(timestamps="absolute"))
    assert "2030" not in render_context([world], RenderOptions())


# Each process builds the default world (its clock starts at its own import time), judges one
# claim through the scripted server, and prints what it rendered and what the judge was asked.
PROCESS = """
import json, sys
from pytest_propositions import Proposition
from pytest_propositions.claims.targets import RenderOptions, render_context
from tests.support.tinytroupe_like import travel_chat

world = travel_chat()
verdict = Proposition("Oscar mentions his travel preferences.", world).evaluate("check")
print(json.dumps({
    "raw": world.pretty_current_interactions(max_content_length=None),
    "context": render_context([world], RenderOptions()),
    "cached": verdict.cached,
    "key": verdict.key,
    "value": verdict.value,
}))
"""


def _run(env: dict[str, str]) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", PROCESS],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    facts: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    return facts


def test_two_processes_with_different_clocks_share_one_cache_key(
    judge_server: ScriptedJudge, tmp_path: Path
) -> None:
    judge_server.default = verdict(True, "Oscar says he loves quiet cities.")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROP_")}
    env.update(
        PYTHONPATH=str(REPO),
        LITELLM_LOCAL_MODEL_COST_MAP="True",
        PROP_MODEL="openai/judge-model",
        PROP_API_BASE=judge_server.base_url,
        PROP_API_KEY="test-key-not-real",
        PROP_RETRIES="0",
        PROP_CACHE_DIR=str(tmp_path / "verdicts"),
        CLOCK_SHIFT_MINUTES="0",
    )
    first = _run(env)
    assert first["cached"] is False and first["value"] is True
    assert len(judge_server.requests) == 1
    # The second process starts its world 97 minutes later, and may not call the judge.
    second = _run({**env, "PROP_CACHE": "replay", "CLOCK_SHIFT_MINUTES": "97"})
    assert first["raw"] != second["raw"]  # the library's text differs between the processes
    assert first["context"] == second["context"]
    assert second["cached"] is True and second["key"] == first["key"]
    assert len(judge_server.requests) == 1
    sent = judge_server.requests[0].text
    assert "+0:05:00" in sent and "Click the [red] button [/] ok." in sent
    assert "[citation needed]" in sent and "[bold green3]" not in sent


def test_absolute_timestamps_miss_across_processes(
    judge_server: ScriptedJudge, tmp_path: Path
) -> None:
    """The control: with the raw clock in the key, the second process has nothing to replay."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROP_")}
    env.update(
        PYTHONPATH=str(REPO),
        LITELLM_LOCAL_MODEL_COST_MAP="True",
        PROP_MODEL="openai/judge-model",
        PROP_API_BASE=judge_server.base_url,
        PROP_API_KEY="test-key-not-real",
        PROP_RETRIES="0",
        PROP_CACHE_DIR=str(tmp_path / "verdicts"),
        PROP_TIMESTAMPS="absolute",
    )
    _run(env)
    done = subprocess.run(
        [sys.executable, "-c", PROCESS],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
        env={**env, "PROP_CACHE": "replay", "CLOCK_SHIFT_MINUTES": "97"},
    )
    assert done.returncode != 0 and "VerdictMissing" in done.stderr
