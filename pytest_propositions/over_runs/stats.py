"""The statistics of claims over many runs: anytime-valid sequential decisions, as pure functions.

A claim over runs is decided one run at a time and stops as soon as its answer is certain at
the stated confidence ``1 - alpha``. Looking after every run with an interval meant for a fixed
number of runs raises the error rate; every rule here is instead a test martingale (a
nonnegative process whose expectation is at most 1 while the claim's opposite holds), so by
Ville's inequality the chance that it *ever* reaches ``1/alpha``, at any run, is at most
``alpha``. A decision is taken only when such a process crosses ``1/alpha``, so:

* a wrong pass has probability at most ``alpha``, whatever the true rate or mean on the wrong
  side of the bar, however many runs are looked at, and wherever the runs stop;
* a wrong fail likewise (a separate process, tested against the other side of the bar);
* neither side decides near the bar: at ``max_runs`` the claim is *inconclusive*.

The rules (``alpha = 1 - confidence``; runs are independent, identically distributed draws):

Rates (``at_least=p``, ``at_most=q``). Exact binomial likelihoods, mixed (Robbins' method of
mixtures). For "the rate is above p", the process is
``M+_n = integral over t in [p, 1] of (t/p)^S (1-t)/(1-p))^(n-S) dpi(t)``, with ``S`` the runs
where the claim held out of ``n``, and ``pi`` a Beta prior restricted to ``[p, 1]``. For any
``t >= p`` one run's factor has expectation ``r t/p + (1-r)(1-t)/(1-p) <= 1`` when the true
rate ``r <= p`` (it is 1 at ``r = p`` and increases with ``r``), so ``M+`` is a supermartingale
under every rate at or below the bar: ``P(M+ ever >= 1/alpha) <= alpha``. ``M-`` mirrors it on
``[0, p]``. ``M+`` grows with ``S``, so each run count has one boundary: pass from ``S >=
pass_min[n]``, fail at ``S <= fail_max[n]`` (precomputed, closed form through the incomplete
beta function of scipy.special). The prior centres on ``p +- 0.15`` (concentration 30), which
makes the test quick for rates 0.15 or more from the bar; it is valid for every prior. ``at_most
q`` is the mirror test at ``q`` (pass on ``M-``, fail on ``M+``).

Mean scores (``min_score=s``). Scores live in ``0..9``; divided by 9 they lie in ``[0, 1]``.
For "the mean is above m", capital ``K+_n = prod(1 + l_i (x_i - m))`` with a bet ``l_i`` in
``[0, 0.5/m]`` chosen from runs before ``i`` only (Waudby-Smith & Ramdas' betting confidence
sequences, the aGRAPA bet): each factor is positive and has expectation ``1 + l_i (mu - m) <=
1`` when the true mean ``mu <= m``. ``K-`` mirrors it (``1 - l_i (x_i - m)``, ``l_i <= 0.5/(1 -
m)``). No distributional assumption beyond the range.

Comparisons (``better_than=runs(control)``, ``margin=d``). Run ``i`` of each side form a pair;
pairs are independent and identically distributed, so the differences ``D_i = X_i - Y_i`` (1/0
per side for rates, score/9 for scores) are i.i.d. in ``[-1, 1]`` with mean the difference of
the two rates (or mean scores). Mapped to ``[0, 1]`` by ``(D + 1)/2`` they are tested by the
betting rule above against ``(d + 1)/2``: a sequential two-sample test, sound at any stopping
time. (A fixed-n test such as Fisher's is not needed and would not allow stopping early.)

Every run (``every_run=True``, pass^k): no statistics; it fails at the first run where the
claim does not hold and passes when all ``max_runs`` hold. The report gives the exact
one-sided lower bound for the rate after ``k`` of ``k``, ``alpha ** (1/k)``.

Reported intervals are the confidence sequences these processes define (the bars no process
rejects), each bound at the stated confidence, computed on a grid, rounded outward.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

Direction = Literal["above", "below"]

# The alternatives the rate test is quickest against: this far from the bar, this concentrated.
RATE_PRIOR_SHIFT = 0.15
RATE_PRIOR_CONCENTRATION = 30.0
# The largest fraction of capital a bet may put at risk: keeps every factor >= 0.5.
BET_CAP = 0.5
GRID_STEPS = 1000


def require_scipy() -> None:
    """scipy comes with the ``stats`` extra; say so plainly when it is missing."""
    from importlib.util import find_spec

    if find_spec("scipy") is None:
        raise ImportError(
            "claims over runs need scipy, which is not installed: "
            "pip install 'pytest-propositions[stats]'"
        )
    import scipy.special
    import scipy.stats  # noqa: F401


# -- rates --------------------------------------------------------------------------------------


def _prior(bar: float, direction: Direction) -> tuple[float, float]:
    if direction == "above":
        centre = bar + min(RATE_PRIOR_SHIFT, (1.0 - bar) / 2)
    else:
        centre = bar - min(RATE_PRIOR_SHIFT, bar / 2)
    return centre * RATE_PRIOR_CONCENTRATION, (1.0 - centre) * RATE_PRIOR_CONCENTRATION


def rate_log_evidence(held: int, runs: int, bar: float, direction: Direction) -> float:
    """log of the mixture likelihood ratio against "the rate is on the other side of ``bar``".

    ``above``: evidence that the rate exceeds ``bar`` (a supermartingale while it does not);
    ``below``: that it is under ``bar``. Needs ``0 < bar < 1``.
    """
    if not 0 <= held <= runs:
        raise ValueError(f"held must be from 0 to runs, got {held} of {runs}")
    return _evidence_row(runs, bar, direction)[held]


def _evidence_row(runs: int, bar: float, direction: Direction) -> list[float]:
    """``rate_log_evidence`` for every count held, 0..runs, in one vectorised call."""
    import numpy as np
    from scipy import special, stats

    if not 0.0 < bar < 1.0:
        raise ValueError(f"the bar must be strictly between 0 and 1, got {bar!r}")
    a, b = _prior(bar, direction)
    held = np.arange(runs + 1, dtype=float)
    post_a, post_b = a + held, b + runs - held
    if direction == "above":
        tail = stats.beta.logsf(bar, post_a, post_b) - stats.beta.logsf(bar, a, b)
    else:
        tail = stats.beta.logcdf(bar, post_a, post_b) - stats.beta.logcdf(bar, a, b)
    row = (
        special.betaln(post_a, post_b)
        - special.betaln(a, b)
        + tail
        - held * math.log(bar)
        - (runs - held) * math.log1p(-bar)
    )
    return [float(value) for value in row]


@dataclass(frozen=True)
class RateBoundaries:
    """For each number of runs n (1..max_runs): the fewest runs held that show the rate is above
    the bar (``above_from[n-1]``, None if none can), and the most that show it is below
    (``below_to[n-1]``, None if none can)."""

    bar: float
    alpha: float
    above_from: tuple[int | None, ...]
    below_to: tuple[int | None, ...]

    def decide(self, held: int, runs: int) -> Direction | None:
        above = self.above_from[runs - 1]
        below = self.below_to[runs - 1]
        is_above = above is not None and held >= above
        is_below = below is not None and held <= below
        if is_above == is_below:  # neither, or (never seen) both: no decision
            return None
        return "above" if is_above else "below"


def rate_boundaries(bar: float, alpha: float, max_runs: int) -> RateBoundaries:
    """The decision boundaries of the rate test at ``bar``, up to ``max_runs`` runs."""
    threshold = math.log(1.0 / alpha)
    above: list[int | None] = []
    below: list[int | None] = []
    for n in range(1, max_runs + 1):
        # The evidence for "above" grows with the runs held (and for "below" shrinks), so each
        # run count has one boundary; the checks below make sure of it rather than assume it.
        up = _evidence_row(n, bar, "above")
        down = _evidence_row(n, bar, "below")
        above.append(_first_from(up, threshold))
        below_from_top = _first_from(down[::-1], threshold)
        below.append(None if below_from_top is None else n - below_from_top)
    return RateBoundaries(bar, alpha, tuple(above), tuple(below))


def rate_decision(held: int, runs: int, bar: float, alpha: float) -> Direction | None:
    """Whether ``held`` of ``runs`` shows the rate above ``bar``, below it, or neither yet."""
    threshold = math.log(1.0 / alpha)
    is_above = rate_log_evidence(held, runs, bar, "above") >= threshold
    is_below = rate_log_evidence(held, runs, bar, "below") >= threshold
    if is_above == is_below:  # neither, or (never seen) both: no decision
        return None
    return "above" if is_above else "below"


def _first_from(row: list[float], threshold: float) -> int | None:
    """The smallest index from which every entry of ``row`` reaches ``threshold``, or None."""
    first: int | None = None
    for index in range(len(row) - 1, -1, -1):
        if row[index] >= threshold:
            first = index
        else:
            break
    return first


def rate_interval(held: int, runs: int, alpha: float) -> tuple[float, float]:
    """The confidence sequence for the rate after ``held`` of ``runs``: every bar that neither
    test rejects, each bound at ``1 - alpha``, on a grid of 0.001, rounded outward."""
    import numpy as np

    if runs == 0:
        return 0.0, 1.0
    threshold = math.log(1.0 / alpha)
    bars = np.arange(1, GRID_STEPS) / GRID_STEPS
    up = _evidence_by_bar(held, runs, bars, "above")
    down = _evidence_by_bar(held, runs, bars, "below")
    kept = bars[(up < threshold) & (down < threshold)]
    if kept.size == 0:  # cannot happen with a valid alpha, but never report an empty interval
        rate = held / runs
        return rate, rate
    step = 1.0 / GRID_STEPS
    return max(0.0, float(kept[0]) - step), min(1.0, float(kept[-1]) + step)


def _evidence_by_bar(held: int, runs: int, bars: Any, direction: Direction) -> Any:
    """``rate_log_evidence`` at many bars at once (a numpy array)."""
    import numpy as np
    from scipy import special, stats

    if direction == "above":
        centre = bars + np.minimum(RATE_PRIOR_SHIFT, (1.0 - bars) / 2)
    else:
        centre = bars - np.minimum(RATE_PRIOR_SHIFT, bars / 2)
    a = centre * RATE_PRIOR_CONCENTRATION
    b = (1.0 - centre) * RATE_PRIOR_CONCENTRATION
    post_a, post_b = a + held, b + runs - held
    if direction == "above":
        tail = stats.beta.logsf(bars, post_a, post_b) - stats.beta.logsf(bars, a, b)
    else:
        tail = stats.beta.logcdf(bars, post_a, post_b) - stats.beta.logcdf(bars, a, b)
    return (
        special.betaln(post_a, post_b)
        - special.betaln(a, b)
        + tail
        - held * np.log(bars)
        - (runs - held) * np.log1p(-bars)
    )


def every_run_lower_bound(runs: int, alpha: float) -> float:
    """The exact one-sided lower confidence bound of a rate after ``runs`` of ``runs`` held."""
    return alpha ** (1.0 / runs) if runs else 0.0


# -- bounded means (scores, and paired differences) -----------------------------------------------


@dataclass
class BettingTest:
    """Two betting processes on values in [0, 1] against the bar ``m``: "the mean is above m"
    and "the mean is below m". ``add`` one value at a time; ``decide`` says which (if either)
    has reached ``1/alpha``."""

    bar: float
    alpha: float
    log_up: float = 0.0
    log_down: float = 0.0
    count: int = 0
    total: float = 0.0
    squares: float = 0.0
    values: list[float] = field(default_factory=list)

    def _estimates(self) -> tuple[float, float]:
        # Predictable estimates from earlier runs only, started at (1/2, 1/4).
        mean = (0.5 + self.total) / (self.count + 1)
        variance = (0.25 + self.squares) / (self.count + 1)
        return mean, variance

    def bets(self) -> tuple[float, float]:
        """The next bets (up, down), from what is known before the next value (aGRAPA)."""
        mean, variance = self._estimates()
        gap = mean - self.bar
        raw = gap / (variance + gap * gap) if variance + gap * gap > 0 else 0.0
        up_cap = BET_CAP / self.bar if self.bar > 0 else 0.0
        down_cap = BET_CAP / (1.0 - self.bar) if self.bar < 1 else 0.0
        return min(max(raw, 0.0), up_cap), min(max(-raw, 0.0), down_cap)

    def add(self, value: float) -> None:
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"a value must lie in [0, 1], got {value!r}")
        up, down = self.bets()
        self.log_up += math.log1p(up * (value - self.bar))
        self.log_down += math.log1p(-down * (value - self.bar))
        mean, _ = self._estimates()
        self.count += 1
        self.total += value
        self.squares += (value - mean) ** 2
        self.values.append(value)

    def decide(self) -> Direction | None:
        threshold = math.log(1.0 / self.alpha)
        is_above = self.log_up >= threshold
        is_below = self.log_down >= threshold
        if is_above == is_below:  # neither, or (never seen) both: no decision
            return None
        return "above" if is_above else "below"

    @property
    def mean(self) -> float:
        return self.total / self.count if self.count else math.nan


def betting_interval(values: Sequence[float], alpha: float) -> tuple[float, float]:
    """The betting confidence sequence for the mean of ``values`` (each in [0, 1]): every bar
    neither process rejects, on a grid of 0.001, rounded outward."""
    if not values:
        return 0.0, 1.0
    kept: list[float] = []
    for i in range(1, GRID_STEPS):
        test = BettingTest(i / GRID_STEPS, alpha)
        for value in values:
            test.add(value)
        if test.decide() is None:
            kept.append(test.bar)
    if not kept:
        mean = sum(values) / len(values)
        return mean, mean
    step = 1.0 / GRID_STEPS
    return max(0.0, kept[0] - step), min(1.0, kept[-1] + step)


def paired_value(treatment: float, control: float) -> float:
    """A pair's difference (each side in [0, 1]) mapped from [-1, 1] to [0, 1]."""
    return (treatment - control + 1.0) / 2.0


def paired_bar(margin: float) -> float:
    """The bar of paired values for "the difference exceeds ``margin``" (margin in (-1, 1))."""
    return (margin + 1.0) / 2.0
