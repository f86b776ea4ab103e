"""Claims about a two-agent world recorded with `pytest_propositions.trace`."""

import pytest


def test_oscar_mentions_travel(world, assert_proposition):
    assert_proposition(world, "Oscar talks about the kind of places he likes to travel to.")


def test_pets_come_up(world, assert_proposition):
    assert_proposition(world, "The agents mention cats.")


@pytest.mark.min_score(5)
def test_agents_stay_in_character(world, min_score):
    # Personas are shown to the judge only when asked for.
    min_score(world, "Each agent speaks in line with their occupation.", include_personas=True)


def test_last_turn_only(world, assert_proposition):
    assert_proposition(world, "Oscar mentions cats or dogs.", last_n=1)
