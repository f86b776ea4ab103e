"""Claims about an agent object from a simulation library, judged by duck typing."""


def test_recommends_a_portuguese_dessert(library_agent, assert_proposition):
    assert_proposition(library_agent, "Ana recommends a dessert.")


def test_in_character_with_persona(library_agent, min_score):
    min_score(library_agent, "Ana behaves like a pastry chef.", 5, include_personas=True)
