"""Claims about an agent object from a simulation library, judged by duck typing."""

from typing import Any


class LibraryProposition:
    """Stands in for a ready-made proposition of a simulation library (TinyTroupe's
    `tinytroupe.validation.propositions` hold such objects): a `claim` and its options.
    The fixtures take it as the claim, with its options; options passed at the call win."""

    def __init__(self, claim: str, include_personas: bool = False, last_n: Any = None) -> None:
        self.claim = claim
        self.targets = None
        self.include_personas = include_personas
        self.first_n = None
        self.last_n = last_n
        self.double_check = False
        self.use_reasoning_model = False
        self.precondition_function = None


persona_adherence = LibraryProposition(
    "The agent's behaviour is consistent with its persona specification.", include_personas=True
)


def test_recommends_a_portuguese_dessert(library_agent, assert_proposition):
    assert_proposition(library_agent, "Ana recommends a dessert.")


def test_in_character_with_persona(library_agent, min_score):
    min_score(library_agent, "Ana behaves like a pastry chef.", 5, include_personas=True)


def test_a_ready_made_proposition(library_agent, min_score):
    # The library's proposition object is the claim; its include_personas=True applies.
    min_score(library_agent, persona_adherence, 5)
