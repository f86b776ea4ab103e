"""Claims over many runs: a simulation that differs from run to run, judged as a distribution.

Each run is seeded with its number, so a rerun builds the same trajectories, finds their
verdicts in the cache and reaches the same decision without asking the judge.
"""

from __future__ import annotations

import random

from pytest_propositions import runs
from pytest_propositions.trace import Agent, World


def bakery_visit(run: int) -> World:
    """One simulated visit to a bakery; in most runs the baker states the price."""
    rng = random.Random(run)
    ana = Agent("Ana", persona={"occupation": "baker"})
    oscar = Agent("Oscar", persona={"occupation": "architect"})
    bakery = World("Bakery", agents=[ana, oscar])
    bakery.talk(oscar, "How much is a loaf of rye bread?")
    if rng.random() < 0.8:
        bakery.talk(ana, f"A loaf of rye is {rng.choice([3, 4, 5])} euros.")
    else:
        bakery.talk(ana, "Our rye is baked fresh every morning.")
    return bakery


def test_the_baker_usually_states_the_price(assert_proposition):
    # Decided at 95% confidence (--prop-confidence), stopping as soon as the answer is clear.
    assert_proposition(
        runs(bakery_visit, max_runs=10), "Ana tells Oscar the price of the bread.", at_least=0.3
    )


def test_the_baker_answers_in_every_run(assert_proposition):
    # pass^k: fails at the first run where the claim does not hold.
    assert_proposition(runs(bakery_visit, max_runs=3), "Ana answers Oscar.", every_run=True)
