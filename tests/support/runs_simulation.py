"""Seeded claims over runs decided twice, side by side: by the deciders with the package's
statistics (pure Python since issue 52) and by the same deciders with the statistics as they
were (``stats_before.py``, scipy and numpy). Used by ``tests/test_stats_exact.py`` (a few hundred
claims) and ``bench/runs_decisions.py`` (10,000).

Each claim draws a rule (at_least, at_most, a mean score, a comparison of rates or of scores,
every_run, a referee on a rate or a mean score), a confidence, a bar, min_runs and max_runs, and a
true rate or mean near the bar; both deciders are fed the same runs one at a time, and after
every run their decisions must be equal; at the end, every figure, reason and piece of advice.
A claim's refusal (``stats.least_runs_to_pass``: the fewest runs that could pass) is compared
too. While the package's deciders decide, every evidence value they evaluate is recorded with
its distance from the threshold (``Margins``): a distance above ``beta.EVIDENCE_ERROR`` means
the decision is that of the exact value, whatever the floats' last digits.
"""

from __future__ import annotations

import math
import random
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from pytest_propositions.over_runs import deciders, stats
from pytest_propositions.over_runs.result import RunsResult
from pytest_propositions.over_runs.rule import Rule
from tests.support import stats_before

MODES = ("at_least", "at_most", "mean", "better_than", "every_run", "referee")
WEIGHTS = (30, 20, 20, 15, 5, 10)


@dataclass
class Margins:
    """The evidence values the package's deciders evaluated, by their distance from the
    threshold: the smallest, where it was, and how many were evaluated or ruled out by the
    likelihood-ratio bound (each of those at least ``stats._BOUND_MARGIN`` away)."""

    smallest: float = math.inf
    where: tuple[Any, ...] = ()
    evaluated: int = 0
    bounded: int = 0

    def see(self, distance: float, where: tuple[Any, ...]) -> None:
        self.evaluated += 1
        if distance < self.smallest:
            self.smallest, self.where = distance, where


@dataclass
class Outcome:
    """What the comparison found: claims, runs judged, differences (none expected), margins."""

    claims: int = 0
    runs: int = 0
    decisions: dict[str, int] = field(default_factory=dict)
    differences: list[str] = field(default_factory=list)
    margins: Margins = field(default_factory=Margins)


@contextmanager
def measured(margins: Margins) -> Iterator[None]:
    """Record, while it lasts, each evidence value ``stats._reaches`` compares with a threshold."""
    original = stats._reaches

    def reaches(held: int, runs: int, bar: float, direction: Any, threshold: float) -> bool:
        bound = stats._evidence_bound(held, runs, bar, direction)
        if bound < threshold - stats._BOUND_MARGIN:
            margins.bounded += 1
        else:
            value = stats._log_evidence(held, runs, bar, direction)
            margins.see(abs(value - threshold), (held, runs, bar, direction, threshold, value))
        return original(held, runs, bar, direction, threshold)

    stats._reaches = reaches  # type: ignore[assignment]
    try:
        yield
    finally:
        stats._reaches = original  # type: ignore[assignment]


@contextmanager
def statistics_before() -> Iterator[None]:
    """The deciders with the statistics as they were."""
    deciders.stats = stats_before  # type: ignore[assignment]
    try:
        yield
    finally:
        deciders.stats = stats  # type: ignore[assignment]


def draw_claim(rng: random.Random) -> tuple[Rule, int, int, float, str]:
    """A claim: its rule, min_runs, max_runs, its true rate or mean (unit scale), its mode."""
    mode = rng.choices(MODES, WEIGHTS)[0]
    confidence = rng.choice([0.8, 0.9, 0.95, 0.99])
    max_runs = rng.choice([rng.randint(3, 40), rng.randint(20, 150)])
    min_runs = rng.choice([1, 1, rng.randint(1, 10)])
    referee = None
    if mode in ("at_least", "at_most") or (mode == "referee" and rng.random() < 0.6):
        bar = rng.choice([round(rng.uniform(0.02, 0.98), 2), rng.uniform(0.01, 0.99)])
        rule = Rule(mode if mode != "referee" else "at_least", "check", confidence, bar)
        truth = min(1.0, max(0.0, bar + rng.uniform(-0.3, 0.3)))
    elif mode in ("mean", "referee"):
        bar = rng.choice([float(rng.randint(1, 8)), rng.randint(2, 16) / 2])
        rule = Rule("mean", "score", confidence, bar)
        truth = min(1.0, max(0.0, (bar + rng.uniform(-2.5, 2.5)) / 9))
    elif mode == "better_than":
        if rng.random() < 0.5:
            rule = Rule("better_than", "check", confidence, rng.choice([-0.1, 0.0, 0.1, 0.2]))
        else:
            rule = Rule("better_than", "score", confidence, rng.choice([0.0, 0.5, 1.0, -1.0]))
        truth = rng.uniform(0.1, 0.9)
    else:
        rule = Rule("every_run", "check", confidence)
        truth = rng.uniform(0.7, 1.0)
    if mode == "referee":
        referee = "referee"
        fraction = rng.choice([0.1, 0.25, 0.5])
        rule = Rule(
            rule.mode, rule.kind, confidence, rule.bar, referee=referee, referee_fraction=fraction
        )
    return rule, min_runs, max_runs, truth, mode


def _value(rng: random.Random, rule: Rule, truth: float) -> tuple[float, bool]:
    """One run's value in [0, 1] and whether it held."""
    if rule.kind == "score":
        score = sum(rng.random() < truth for _ in range(9))
        return score / 9, True
    held = rng.random() < truth
    return float(held), held


def _feed(decider: Any, rule: Rule, run: tuple[Any, ...]) -> None:
    kind = run[0]
    if kind == "pair":
        decider.add_pair(*run[1:])
    elif kind == "refereed":
        decider.add_refereed(*run[1:])
    else:
        decider.add(*run[1:])


def decide_both(
    index: int, seed: int, outcome: Outcome, refusals: Callable[[Rule], tuple[Any, Any]]
) -> None:
    """Claim ``index`` of the simulation ``seed``, decided both ways; differences recorded."""
    rng = random.Random(seed * 1_000_003 + index)
    rule, min_runs, max_runs, truth, mode = draw_claim(rng)
    label = f"claim {index} ({mode}, bar {rule.bar!r}, confidence {rule.confidence})"
    new_refusal, old_refusal = refusals(rule)
    if new_refusal != old_refusal:
        outcome.differences.append(f"{label}: least runs {new_refusal} != {old_refusal}")
    with measured(outcome.margins):
        new = deciders.decider_for(rule, min_runs, max_runs, seed="s")
    with statistics_before():
        old = deciders.decider_for(rule, min_runs, max_runs, seed="s")
    outcome.claims += 1
    while new.decision is None and new.count < max_runs:
        value, held = _value(rng, rule, truth)
        if mode == "better_than":
            control, _ = _value(rng, rule, 0.5)
            run: tuple[Any, ...] = ("pair", value, held, control)
        elif mode == "referee":
            p = new.fraction()  # type: ignore[attr-defined]
            if p != old.fraction():  # type: ignore[attr-defined]
                outcome.differences.append(f"{label}: fraction {p} != {old.fraction()}")  # type: ignore[attr-defined]
            truth_value = value
            main = value if rng.random() < 0.9 else 1.0 - value
            drawn = rng.random() < p
            run = ("refereed", main, main >= 0.5, truth_value if drawn else None, p)
        else:
            run = ("one", value, held)
        with measured(outcome.margins):
            _feed(new, rule, run)
        with statistics_before():
            _feed(old, rule, run)
        outcome.runs += 1
        if (new.decision, new.decided_by) != (old.decision, old.decided_by):
            outcome.differences.append(
                f"{label}, run {new.count}: {new.decision} != {old.decision}"
            )
            return
    results = []
    for decider, context in ((new, measured(outcome.margins)), (old, statistics_before())):
        result = RunsResult("claim", rule, max_runs)
        with context, warnings.catch_warnings(record=True) as warned:
            warnings.simplefilter("always")
            decider.finish(result)
        warned_of = [str(warning.message) for warning in warned]
        results.append(
            (
                result.decision,
                result.decided_by,
                result.estimate,
                result.lower,
                result.upper,
                result.control_estimate,
                result.advice,
                warned_of,
            )
        )
    if results[0] != results[1] and not _same_nan(results[0], results[1]):
        outcome.differences.append(f"{label}: {results[0]} != {results[1]}")
    outcome.decisions[results[0][0]] = outcome.decisions.get(results[0][0], 0) + 1


def _same_nan(new: tuple[Any, ...], old: tuple[Any, ...]) -> bool:
    """Equal but for NaN figures in the same places (NaN is not equal to itself)."""
    return all(
        a == b
        or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))
        for a, b in zip(new, old, strict=True)
    )


def refusal_figures(rule: Rule) -> tuple[Any, Any]:
    """The fewest runs that could pass the rule, new and old (a rate's, without a referee: the
    part computed from the incomplete beta integrals)."""
    if rule.mode not in ("at_least", "at_most") or rule.referee is not None:
        return None, None
    direction = "below" if rule.mode == "at_most" else "above"
    return (
        stats.least_runs_to_pass("rate", rule.bar, rule.alpha, direction, limit=20_000),
        stats_before.least_runs_to_pass("rate", rule.bar, rule.alpha, direction, limit=20_000),
    )


def simulate(claims: int, seed: int, progress: Callable[[int], None] | None = None) -> Outcome:
    """``claims`` seeded claims decided both ways."""
    outcome = Outcome()
    for index in range(claims):
        decide_both(index, seed, outcome, refusal_figures)
        if progress is not None:
            progress(index + 1)
    return outcome
