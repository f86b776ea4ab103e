"""Proposition objects as claims: the reference library's shape (duck-typed) or ours, in every
fixture, marker and API entry point, with their options reaching the judge's request."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from pytest_propositions import Proposition, check_proposition, compute_score
from pytest_propositions.claims.options import claim_and_options, is_proposition_like
from pytest_propositions.judging.prompts import DOUBLE_CHECK_PROMPT
from pytest_propositions.runtime import Runtime
from pytest_propositions.settings import Settings
from pytest_propositions.trace import Agent, World
from tests.support.active_run import active
from tests.support.judge_server import ScriptedJudge, verdict
from tests.support.tinytroupe_like import (
    LibraryPerson,
    LibraryProposition,
    action_type_precondition,
)

pytest_plugins = ["pytester"]


def test_a_library_proposition_gives_its_claim_options_and_targets() -> None:
    gate = action_type_precondition(["TALK"])
    prop = LibraryProposition(
        "{{action}} is fluent.",
        include_personas=True,
        first_n=5,
        last_n=10,
        precondition_function=gate,
    )
    assert is_proposition_like(prop) and not is_proposition_like("a claim")
    claim, options, targets = claim_and_options(prop, {"last_n": 3, "double_check": True})
    assert claim == "{{action}} is fluent." and targets is None
    assert options == {
        "include_personas": True,
        "first_n": 5,
        "last_n": 3,  # the call's value wins
        "double_check": True,
        "use_reasoning_model": False,
        "precondition": gate,  # the fixtures' name for it
    }
    assert claim_and_options("plain", {"last_n": 2}) == ("plain", {"last_n": 2}, None)


def test_our_proposition_built_from_one_keeps_its_options_unless_overridden() -> None:
    oscar = Agent("Oscar")
    library = LibraryProposition("Oscar is polite.", target=oscar, include_personas=True, last_n=4)
    ours = Proposition(library)
    assert (ours.claim, ours.targets, ours.include_personas, ours.last_n) == (
        "Oscar is polite.",
        [oscar],
        True,
        4,
    )
    overridden = Proposition(library, include_personas=False, last_n=None)
    assert (overridden.include_personas, overridden.last_n) == (False, None)
    again = Proposition(overridden)  # ours is Proposition-shaped too
    assert (again.claim, again.targets, again.last_n) == ("Oscar is polite.", [oscar], None)
    assert Proposition(library, target=oscar).targets == [oscar]  # the same target is fine
    with pytest.raises(ValueError, match="already has its own target"):
        Proposition(library, target=Agent("Lisa"))
    with pytest.raises(ValueError, match="claim must be a non-empty string"):
        Proposition(LibraryProposition("  "))


@pytest.fixture
def judge(judge_server: ScriptedJudge, monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedJudge]:
    monkeypatch.setenv("PROP_API_KEY", "test-key-not-real")
    runtime = Runtime(
        Settings(
            model="openai/judge-model",
            reasoning_model="openai/deep-judge",
            api_base=judge_server.base_url,
            cache="off",
            retries=0,
        )
    )
    with active(runtime):
        yield judge_server


def _world() -> World:
    oscar = Agent("Oscar", persona={"occupation": "architect"})
    room = World("Room", agents=[oscar])
    oscar.hears("Where do you like to travel?")
    oscar.says("Quiet cities with great architecture.")
    return room


def test_check_proposition_and_compute_score_honour_the_objects_options(
    judge: ScriptedJudge,
) -> None:
    world = _world()
    judge.on("scored", verdict(8))
    prop = LibraryProposition("Oscar answers (scored).", include_personas=True, last_n=1)
    assert compute_score(world, prop) == 8
    [request] = judge.requests
    assert "Persona specification" in request.text and "Quiet cities" in request.text
    assert "Where do you like to travel?" not in request.text
    judge.clear_requests()
    checked = LibraryProposition("Oscar answers (checked).", last_n=1)
    assert check_proposition(world, checked, use_reasoning_model=True) is True
    [request] = judge.requests
    assert request.model == "deep-judge"


def test_a_library_precondition_is_called_with_its_signature(judge: ScriptedJudge) -> None:
    world = _world()
    seen: list[dict[str, Any]] = []
    gate = action_type_precondition(["TALK", "THINK"])

    def watching(target: Any, additional_context: Any, claim_variables: dict[str, Any]) -> bool:
        seen.append({"target": target, "context": additional_context, "variables": claim_variables})
        return gate(
            target=target, additional_context=additional_context, claim_variables=claim_variables
        )

    prop = LibraryProposition(
        "The next action {{action}} is fluent.", precondition_function=watching
    )
    done = {"action": {"type": "DONE", "content": ""}}
    assert Proposition(prop, target=world).check(claim_variables=done) is True
    assert judge.requests == []  # precondition false: trivially true, no judge call
    assert seen[0]["target"] == [world] and seen[0]["variables"] == done
    talk = {"action": {"type": "TALK", "content": "Hello"}}
    assert check_proposition(world, prop, claim_variables=talk) is True
    [request] = judge.requests
    assert '{"content": "Hello", "type": "TALK"}' in request.text


INNER_TESTS = """
import pytest
from tests.support.tinytroupe_like import LibraryProposition

windowed = LibraryProposition("Oscar answers (windowed).", include_personas=True, last_n=1)
checked_twice = LibraryProposition("Oscar answers (twice).", double_check=True)
deep = LibraryProposition("Oscar answers (deep).", use_reasoning_model=True)
scored = LibraryProposition("Oscar answers (scored).", last_n=1)

def test_assert(world, assert_proposition):
    assert_proposition(world, windowed)

def test_override(world, assert_proposition):
    assert_proposition(world, windowed.copy(), include_personas=False, last_n=None)

def test_min_score(world, min_score):
    min_score(world, scored, 6)

def test_expect(world, expect_proposition):
    expect_proposition(world, checked_twice)

def test_batch(world, assert_propositions):
    assert_propositions(world, [deep, (scored, 5)])

def test_judge(world, proposition_judge):
    assert proposition_judge(world, scored, kind="score").value == 8

@pytest.mark.proposition(windowed, target="world", include_personas=False)
def test_marker():
    pass

def test_own_target_conflict(world, assert_proposition):
    other = LibraryProposition("Oscar answers (other).", target=[object()])
    with pytest.raises(ValueError, match="already has its own target"):
        assert_proposition(world, other)

def test_own_target(world, assert_proposition):
    assert_proposition(world, LibraryProposition("Oscar answers (own).", target=world))
"""


def test_every_fixture_and_the_marker_take_library_propositions(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, inner_run: list[str]
) -> None:
    judge_server.on("scored", verdict(8))
    judge_server.default = verdict(True)
    pytester.makepyfile(INNER_TESTS)
    result = pytester.runpytest(*inner_run, "--prop-reasoning-model=openai/deep-judge")
    result.assert_outcomes(passed=9)

    def sent(fragment: str) -> list[Any]:
        return [r for r in judge_server.requests if f"Oscar answers ({fragment})." in r.text]

    asked_first = "Where do you like to travel?"
    windowed = sent("windowed")
    assert len(windowed) == 3  # test_assert, test_override, test_marker
    with_persona = [r for r in windowed if "Persona specification" in r.text]
    assert len(with_persona) == 1 and asked_first not in with_persona[0].text  # last_n=1 window
    # The call's include_personas=False wins; the override's last_n=None shows the whole run.
    assert sum(asked_first in r.text for r in windowed) == 1
    assert all("Persona specification" not in r.text for r in windowed if r is not with_persona[0])
    twice = sent("twice")
    assert len(twice) == 2 and twice[1].messages[-1]["content"] == DOUBLE_CHECK_PROMPT
    assert [r.model for r in sent("deep")] == ["deep-judge"]
    scored = sent("scored")
    assert len(scored) == 3 and all(asked_first not in r.text for r in scored)
    assert {r.model for r in scored} == {"judge-model"}
    assert len(sent("own")) == 1 and sent("other") == []


def test_a_marker_refuses_a_proposition_bound_to_a_target(
    pytester: pytest.Pytester, inner_run: list[str]
) -> None:
    pytester.makepyfile(
        """
        import pytest
        from tests.support.tinytroupe_like import LibraryPerson, LibraryProposition

        @pytest.mark.proposition(LibraryProposition("x", target=LibraryPerson("Ana")), target="world")
        def test_marked():
            pass
        """
    )
    result = pytester.runpytest(*inner_run)
    result.assert_outcomes(errors=1)  # (issue 42: a usage error stopping every test before)
    result.stdout.fnmatch_lines(["*the proposition has its own target(s)*"])


def test_library_person_target_with_library_proposition(judge: ScriptedJudge) -> None:
    ana = LibraryPerson("Ana", {"occupation": {"title": "Pastry chef"}})
    ana.listen("Which dessert would you recommend?")
    ana.act("TALK", "Try a pastel de nata [the classic].")
    prop = LibraryProposition("Ana recommends a dessert.", target=ana, include_personas=True)
    assert Proposition(prop).check() is True
    [request] = judge.requests
    assert "Pastry chef" in request.text and "Try a pastel de nata [the classic]." in request.text
    assert "[bold green3]" not in request.text


@pytest.mark.parametrize("name", ["first_n", "last_n", "samples"])
def test_a_wrong_typed_count_is_one_value_error_wherever_the_claim_is_made(name: str) -> None:
    """docs/claims.md: a count of the wrong type is a ValueError, from the fixtures' edge as from
    the reference API (which raised ValueError for its windows): one check serves both."""
    from pytest_propositions.claims.options import ClaimOptions

    with pytest.raises(ValueError, match=f"assert_proposition: {name} must be a whole number"):
        ClaimOptions.parse({name: "3"}, "assert_proposition")
    if name != "samples":
        with pytest.raises(ValueError, match=f"{name} must be a whole number"):
            Proposition("Oscar likes travel.", **{name: "3"})
