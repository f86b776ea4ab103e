"""Claim templates with mustache variables, and claims that only apply under a precondition."""

from pytest_propositions import Proposition


def test_claim_variables(world, assert_proposition):
    assert_proposition(
        world,
        "{{agent}} mentions {{topic}}.",
        claim_variables={"agent": "Lisa", "topic": "her cat"},
    )


def only_when_someone_talks_about_work(target, additional_context, claim_variables):
    # A precondition that is False makes the claim trivially true: no judge call is made.
    return "occupation" in (additional_context or "")


def test_precondition_skips_irrelevant_claims(world, assert_proposition):
    verdict = assert_proposition(
        world,
        "Every agent describes their job in detail.",
        precondition=only_when_someone_talks_about_work,
    )
    assert verdict.precondition_skipped


def test_reusable_proposition(world):
    # The evaluator core, as the simulation library's users know it.
    mentions = Proposition("{{who}} talks about travel.", world)
    assert mentions.check(claim_variables={"who": "Oscar"}) in (True, False)
    assert mentions.justification
