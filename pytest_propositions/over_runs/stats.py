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
pass_min[n]``, fail at ``S <= fail_max[n]`` (closed form through the incomplete beta function,
computed in pure Python by ``beta.py``: no run imports scipy or numpy). The prior centres on
``p +- 0.15`` (concentration 30), which makes the test quick for rates 0.15 or more from the
bar; it is valid for every prior. ``at_most q`` is the mirror test at ``q`` (pass on ``M-``,
fail on ``M+``).

Mean scores (``min_score=s``). Scores live in ``0..9``; divided by 9 they lie in ``[0, 1]``.
For "the mean is above m", capital ``K+_n = prod(1 + l_i (x_i - m))`` with a bet ``l_i`` in
``[0, 0.75/m]`` chosen from runs before ``i`` only (Waudby-Smith & Ramdas' betting confidence
sequences, the aGRAPA bet): each factor is positive and has expectation ``1 + l_i (mu - m) <=
1`` when the true mean ``mu <= m``. ``K-`` mirrors it (``1 - l_i (x_i - m)``, ``l_i <= 0.75/(1 -
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

Reported intervals are the bars that neither one-sided process rejects, on a grid, rounded
outward. Each side is wrong with probability at most ``alpha``, so the interval is a confidence
sequence of at least ``1 - 2 alpha`` (at least 90% at confidence 0.95; reports print "90%
interval"); it agrees with the decision (a bar outside it is decided). ``every_run``'s bound is
one-sided, ``1 - alpha``. ``every_run`` has no error guarantee: a claim with true rate ``r <
1`` passes ``k`` runs with probability ``r^k`` (0.77 at ``r = 0.95``, ``k = 5``). ``min_score`` 9 over runs is such a
rule: a mean of 9 on a scale that ends at 9 means every run scores 9.

A referee (``referee="MODEL"``): the decision is about a second, trusted judge's verdicts, while
the main judge judges every run and the referee only a random share. Notation: run ``i`` has the
main judge's value ``M_i`` and the referee's ``R_i``, both in ``[0, 1]`` (1/0 for a rate,
score/9 for a mean; ``R_i`` exists whether or not it is asked); ``F_{i-1}`` is everything known
before run ``i``'s referee draw (earlier runs, their draws and verdicts). The runs are i.i.d.,
so ``E[R_i | F_{i-1}] = mu``, the referee's true rate or mean, the quantity decided.

* The draw. ``p_i`` in ``[floor, 1]`` is a function of ``F_{i-1}`` (``referee_fraction``: it
  rises with the disagreement seen on earlier drawn runs). ``U_i`` is a uniform number from a
  hash of the claim's seed, ``i`` and the key of run ``i``'s main request (``referee_draw``);
  the referee's verdict cannot influence it (the key is fixed by the transcript, and with
  ``samples`` > 1 by the main verdict too, on which ``S_i`` may depend), and the hash's input
  differs from every other run's, so ``U_i`` is uniform given ``F_{i-1}``. ``S_i = [U_i <
  p_i]``, so ``P(S_i = 1 | F_{i-1}, M_i, R_i) = p_i``. The referee is asked exactly when
  ``S_i = 1``, and its answer is always used: a drawn run is never skipped or redrawn (an
  error there raises), and a verdict the referee gave an undrawn run is never read.
* Unbiased. ``X_i = M_i + S_i (R_i - M_i) / p_i``. Given ``F_{i-1}, M_i, R_i`` it is ``M_i +
  (R_i - M_i) p_i / p_i = R_i`` on average, so ``E[X_i | F_{i-1}] = E[R_i | F_{i-1}] = mu``
  whatever the main judge does (its errors may depend on the run in any way).
* Bounded, predictably. ``S_i = 0``: ``X_i = M_i`` in ``[0, 1]``. ``S_i = 1``: ``X_i = M_i (1 -
  1/p_i) + R_i / p_i``, smallest at ``M_i = 1, R_i = 0`` (``1 - 1/p_i``) and largest at ``M_i =
  0, R_i = 1`` (``1/p_i``). So ``X_i`` lies in ``[L_i, H_i] = [1 - 1/p_i, 1/p_i]``, known before
  the run (``[-3, 4]`` at ``p = 0.25``; ``[0, 1]`` at ``p = 1``, the referee alone). Mapped to
  ``[0, 1]`` by ``(X - L_i)/(H_i - L_i)`` the bar moves to ``(m - L_i)/(H_i - L_i)``, which is
  the same betting as below in ``X``'s own units.
* A test martingale. ``K+_n = prod(1 + l_i (X_i - m))`` with ``l_i`` in ``[0, c / (m - L_i)]``
  a function of ``F_{i-1}`` (aGRAPA on earlier ``X``, ``c = REFEREE_BET_CAP < 1``): every
  factor is at least ``1 - c > 0`` since ``X_i >= L_i``, and ``E[factor | F_{i-1}] = 1 + l_i
  (mu - m) <= 1`` when ``mu <= m``. So ``K+`` is a nonnegative supermartingale for every
  ``mu <= m``, and by Ville's inequality ``P(K+ ever >= 1/alpha) <= alpha``: a pass about the
  referee's rate or mean is wrong with probability at most ``alpha`` at any stopping time,
  whatever the main judge's errors. ``K-_n = prod(1 - l_i (X_i - m))``, ``l_i <= c / (H_i -
  m)``, mirrors it for a wrong fail. A poor main judge makes ``X`` vary more (by ``E[(R - M)^2]
  (1 - p)/p``) and costs runs, never validity.
* Validity assumes the referee is the judge of truth and that runs are i.i.d.; nothing about
  the main judge. ``p_i`` must not depend on run ``i``'s referee verdict (it may depend on
  ``M_i``; here it does not), and the bet must not depend on ``M_i`` (its conditional mean
  given ``M_i`` is not ``mu``).
"""

from __future__ import annotations

import functools
import hashlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from . import beta

Direction = Literal["above", "below"]

# The alternatives the rate test is quickest against: this far from the bar, this concentrated.
RATE_PRIOR_SHIFT = 0.15
RATE_PRIOR_CONCENTRATION = 30.0
# The largest fraction of capital a bet may put at risk: keeps every factor >= 0.25. At 0.75
# rather than 0.5, mean-score claims 0.5 to 1.5 points above the bar use 19-25% fewer runs, with
# false passes under the bar of 0.0001 or less either way (bench/runs_statistics.py, "bet cap").
BET_CAP = 0.75
GRID_STEPS = 1000


def _side(is_above: bool, is_below: bool) -> Direction | None:
    """The side of the bar the evidence reached; None for neither, or (never seen) both."""
    if is_above == is_below:
        return None
    return "above" if is_above else "below"


def _grid() -> list[float]:
    """The bars an interval is read on: 0.001 to 0.999."""
    return [step / GRID_STEPS for step in range(1, GRID_STEPS)]


def _interval(kept: Callable[[float], bool], estimate: float) -> tuple[float, float]:
    """The lowest and the highest bar of the grid at which neither process reached
    ``1/alpha`` (``kept``), rounded outward by a grid step.

    Only the ends are reported, so each is searched for from the outside in, up to the first
    kept bar: the bars between them are never evaluated, and the ends are those a scan of the
    whole grid finds (the kept bars need not be contiguous).
    """
    bars = _grid()
    low = next((bar for bar in bars if kept(bar)), None)
    if low is None:  # cannot happen with a valid alpha, but never report an empty interval
        return estimate, estimate
    high = next(bar for bar in reversed(bars) if kept(bar))
    step = 1.0 / GRID_STEPS
    return max(0.0, low - step), min(1.0, high + step)


# -- rates --------------------------------------------------------------------------------------


def _prior(bar: float, direction: Direction) -> tuple[float, float]:
    """The Beta prior's parameters for a bar."""
    if direction == "above":
        centre = bar + min(RATE_PRIOR_SHIFT, (1.0 - bar) / 2)
    else:
        centre = bar - min(RATE_PRIOR_SHIFT, bar / 2)
    return centre * RATE_PRIOR_CONCENTRATION, (1.0 - centre) * RATE_PRIOR_CONCENTRATION


@functools.lru_cache(maxsize=4096)
def _prior_mass(bar: float, direction: Direction) -> tuple[float, float, float, float, float]:
    """The prior's parameters at a bar, the log of its integral on the side tested, and
    ``log bar``, ``log(1 - bar)``: what every evaluation at that bar shares."""
    a, b = _prior(bar, direction)
    mass = beta.log_integral(bar, a, b, upper=direction == "above")
    return a, b, mass, math.log(bar), math.log1p(-bar)


def rate_log_evidence(held: int, runs: int, bar: float, direction: Direction) -> float:
    """log of the mixture likelihood ratio against "the rate is on the other side of ``bar``".

    ``above``: evidence that the rate exceeds ``bar`` (a supermartingale while it does not);
    ``below``: that it is under ``bar``. Needs ``0 < bar < 1``. Computed in pure Python to
    within ``beta.EVIDENCE_ERROR`` (``over_runs/beta.py``).
    """
    if not 0 <= held <= runs:
        raise ValueError(f"held must be from 0 to runs, got {held} of {runs}")
    if not 0.0 < bar < 1.0:
        raise ValueError(f"the bar must be strictly between 0 and 1, got {bar!r}")
    return _log_evidence(held, runs, float(bar), direction)


def _log_evidence(held: int, runs: int, bar: float, direction: Direction) -> float:
    """``rate_log_evidence`` without the checks: the log ratio of the posterior's and the
    prior's mass on the side tested, over the likelihood at the bar."""
    a, b, mass, log_bar, log_rest = _prior_mass(bar, direction)
    # The counts are added as one integer: ``b + runs - held`` would round ``b + runs`` first,
    # which at a bar near 1 (``b`` about 0.0015) moved the evidence by 1e-10.
    posterior = beta.log_integral(bar, a + held, b + (runs - held), upper=direction == "above")
    return posterior - mass - held * log_bar - (runs - held) * log_rest


# The margin under the threshold below which the likelihood-ratio bound rules a side out without
# evaluating the evidence: far more than the error of either (EVIDENCE_ERROR, a few ulps).
_BOUND_MARGIN = 1e-6


def _evidence_bound(held: int, runs: int, bar: float, direction: Direction) -> float:
    """The largest the log evidence can be: the log likelihood ratio at the likeliest rate on
    the side tested (the evidence averages those ratios over the prior, so it is no larger)."""
    if runs == 0:
        return 0.0
    rate = held / runs
    if (rate > bar) if direction == "above" else (rate < bar):
        gained = held * math.log(rate / bar) if held else 0.0
        lost = (runs - held) * math.log((1.0 - rate) / (1.0 - bar)) if held < runs else 0.0
        return gained + lost
    return 0.0  # at the bar itself: a ratio of 1


def _reaches(held: int, runs: int, bar: float, direction: Direction, threshold: float) -> bool:
    """Whether the evidence for ``direction`` reaches ``threshold``; the bound answers first
    where it can, which makes most evaluations a few logarithms."""
    if _evidence_bound(held, runs, bar, direction) < threshold - _BOUND_MARGIN:
        return False
    return _log_evidence(held, runs, bar, direction) >= threshold


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
        return _side(above is not None and held >= above, below is not None and held <= below)


def rate_boundaries(bar: float, alpha: float, max_runs: int) -> RateBoundaries:
    """The decision boundaries of the rate test at ``bar``, up to ``max_runs`` runs."""
    threshold = math.log(1.0 / alpha)
    above: list[int | None] = []
    below: list[int | None] = []
    for n in range(1, max_runs + 1):
        # The evidence for "above" grows with the runs held (and for "below" shrinks), so each
        # run count has one boundary; it is the last count, from the far end, of an unbroken
        # run of counts that reach the threshold (the checks make sure of it, not assume it).
        above.append(_last_reaching(range(n, -1, -1), n, bar, "above", threshold))
        below.append(_last_reaching(range(n + 1), n, bar, "below", threshold))
    return RateBoundaries(bar, alpha, tuple(above), tuple(below))


def _last_reaching(
    counts: range, runs: int, bar: float, direction: Direction, threshold: float
) -> int | None:
    """The last of ``counts`` (runs held) up to which every one reaches ``threshold``, or None."""
    last: int | None = None
    for held in counts:
        if not _reaches(held, runs, bar, direction, threshold):
            break
        last = held
    return last


def rate_decision(held: int, runs: int, bar: float, alpha: float) -> Direction | None:
    """Whether ``held`` of ``runs`` shows the rate above ``bar``, below it, or neither yet."""
    if not 0 <= held <= runs:
        raise ValueError(f"held must be from 0 to runs, got {held} of {runs}")
    if not 0.0 < bar < 1.0:
        raise ValueError(f"the bar must be strictly between 0 and 1, got {bar!r}")
    threshold = math.log(1.0 / alpha)
    bar = float(bar)
    return _side(
        _reaches(held, runs, bar, "above", threshold),
        _reaches(held, runs, bar, "below", threshold),
    )


def rate_runs_to_decide(
    rate: float, start: int, limit: int, bar: float, alpha: float
) -> int | None:
    """The fewest runs ``n`` in ``start..limit`` after which ``round(rate * n)`` of ``n`` held is
    decided (``rate_decision`` is not None), or None if none is.

    The evidence at the observed rate is not monotone in ``n`` (the rounding of the count held
    moves it up and down), so no bisection finds the *first* decided ``n`` for sure; every ``n``
    is looked at, most of them by the likelihood-ratio bound alone (a few logarithms each).
    """
    for total in range(start, limit + 1):
        if rate_decision(round(rate * total), total, bar, alpha) is not None:
            return total
    return None


def rate_interval(held: int, runs: int, alpha: float) -> tuple[float, float]:
    """The confidence sequence for the rate after ``held`` of ``runs``: every bar that neither
    test rejects, each bound at ``1 - alpha``, on a grid of 0.001, rounded outward."""
    if runs == 0:
        return 0.0, 1.0
    threshold = math.log(1.0 / alpha)

    def kept(bar: float) -> bool:
        return not _reaches(held, runs, bar, "above", threshold) and not _reaches(
            held, runs, bar, "below", threshold
        )

    return _interval(kept, held / runs)


def every_run_lower_bound(runs: int, alpha: float) -> float:
    """The exact one-sided lower confidence bound of a rate after ``runs`` of ``runs`` held."""
    return alpha ** (1.0 / runs) if runs else 0.0


# -- bounded means (scores, paired differences, and a referee's corrected values) ----------------


@dataclass
class _Betting:
    """Two betting processes against the bar ``m``: "the mean is above m" and "the mean is below
    m"; ``decide`` says which (if either) has reached ``1/alpha``."""

    bar: float
    alpha: float
    log_up: float = 0.0
    log_down: float = 0.0
    count: int = 0
    total: float = 0.0
    squares: float = 0.0
    values: list[float] = field(default_factory=list)

    def _bet(self, x: float, low: float, high: float, cap: float) -> None:
        """Take ``x``, of a run whose value lies in ``[low, high]`` (known before the run): the
        bets are aGRAPA's on earlier values only, capped so that no value in that range makes a
        factor smaller than ``1 - cap``."""
        # Predictable estimates from earlier runs only, started at (1/2, 1/4).
        mean = (0.5 + self.total) / (self.count + 1)
        variance = (0.25 + self.squares) / (self.count + 1)
        gap = mean - self.bar
        raw = gap / (variance + gap * gap) if variance + gap * gap > 0 else 0.0
        up_cap = cap / (self.bar - low) if self.bar > low else 0.0
        down_cap = cap / (high - self.bar) if self.bar < high else 0.0
        up, down = min(max(raw, 0.0), up_cap), min(max(-raw, 0.0), down_cap)
        self.log_up += math.log1p(up * (x - self.bar))
        self.log_down += math.log1p(-down * (x - self.bar))
        self.count += 1
        self.total += x
        self.squares += (x - mean) ** 2
        self.values.append(x)

    def decide(self) -> Direction | None:
        threshold = math.log(1.0 / self.alpha)
        return _side(self.log_up >= threshold, self.log_down >= threshold)

    @property
    def mean(self) -> float:
        """The mean of the values (a referee's: its unbiased estimate, which may stray outside
        [0, 1])."""
        return self.total / self.count if self.count else math.nan


@dataclass
class BettingTest(_Betting):
    """The betting test on values in [0, 1]: ``add`` one value at a time."""

    def add(self, value: float) -> None:
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"a value must lie in [0, 1], got {value!r}")
        self._bet(value, 0.0, 1.0, BET_CAP)


def betting_interval(
    values: Sequence[float], alpha: float, fractions: Sequence[float] | None = None
) -> tuple[float, float]:
    """The betting confidence sequence for the mean of ``values``: every bar neither process
    rejects at ``alpha`` (so at least ``1 - 2 alpha`` two-sided), on a grid of 0.001, rounded
    outward. ``fractions``: a referee test's (its values as ``RefereeTest.add`` returned them);
    without them, values in [0, 1] at ``BET_CAP``."""
    if not values:
        return 0.0, 1.0
    cap = BET_CAP if fractions is None else REFEREE_BET_CAP
    threshold = math.log(1.0 / alpha)
    # Each run's value, its range's ends and the estimates from the runs before it, as the test
    # had them (``_Betting._bet``): they do not depend on the bar.
    runs: list[tuple[float, float, float, float, float]] = []
    total = 0.0
    squares = 0.0
    for count, x in enumerate(values):
        p = 1.0 if fractions is None else fractions[count]
        mean = (0.5 + total) / (count + 1)
        variance = (0.25 + squares) / (count + 1)
        runs.append((x, mean, variance, 1.0 - 1.0 / p, 1.0 / p))
        total += x
        squares += (x - mean) ** 2

    def kept(bar: float) -> bool:
        """Whether neither process reaches ``1/alpha`` against ``bar``: the bets of ``_bet``."""
        log_up = log_down = 0.0
        for x, mean, variance, low, high in runs:
            gap = mean - bar
            raw = gap / (variance + gap * gap)
            if raw > 0.0:  # only one side bets; the other's factor is 1
                log_up += math.log1p(min(raw, cap / (bar - low)) * (x - bar))
            elif raw < 0.0:
                log_down += math.log1p(-min(-raw, cap / (high - bar)) * (x - bar))
        return log_up < threshold and log_down < threshold

    return _interval(kept, min(1.0, max(0.0, total / len(values))))


def paired_value(treatment: float, control: float) -> float:
    """A pair's difference (each side in [0, 1]) mapped from [-1, 1] to [0, 1]."""
    return (treatment - control + 1.0) / 2.0


def paired_bar(margin: float) -> float:
    """The bar of paired values for "the difference exceeds ``margin``" (margin in (-1, 1))."""
    return (margin + 1.0) / 2.0


# -- a referee: the trusted judge's rate or mean, from a main judge and a sample ------------------

# The referee's betting test may risk this fraction of what its worst case allows; its range
# already makes each bet small, so a larger share than BET_CAP's is kept (bench/referee.py).
REFEREE_BET_CAP = 0.75
# The main judge's price as a fraction of the referee's, when the verdicts carry no costs.
MAIN_PRICE_RATIO = 0.1


def referee_draw(seed: str, run: int, content: str) -> float:
    """Run ``run``'s uniform draw in [0, 1): a hash of the claim's ``seed``, the run number and
    the run's ``content`` (the key of the main judge's request, which its transcript decides).

    A rerun of the same simulation draws the same runs and asks the referee nothing new; a
    fresh simulation draws afresh. Drawn from the claim alone, one claim would meet the same
    draws on every CI run, and the error bound, which holds on average over the draws, would
    not hold for it: some claims' own false-pass rate went above 0.05 at a nominal 0.05
    (bench/referee.py, "per claim"). The run number keeps equal transcripts' draws apart.
    """
    digest = hashlib.sha256(f"{seed}\0{run}\0{content}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def referee_fraction(floor: float, disagreements: int, checked: int, variance: float) -> float:
    """The chance that the next run goes to the referee, from runs before it only.

    Each run costs about ``(c + p) * (v + d (1 - p) / p)`` referee-prices of judging, per unit
    of information (``c`` the main judge's price relative to the referee's, ``v`` the variance
    of a run, ``d`` the mean squared disagreement); its minimum is at ``p = sqrt(c d / (v -
    d))``, and at 1 once the disagreement is as large as the variance. Never below ``floor``.
    """
    d = (disagreements + 0.5) / (checked + 10.0)
    v = max(variance, 1e-9)
    best = 1.0 if d >= v else math.sqrt(MAIN_PRICE_RATIO * d / (v - d))
    return min(1.0, max(floor, best))


@dataclass
class RefereeTest(_Betting):
    """Betting on the referee's mean (values in [0, 1]) from every run's main verdict and the
    referee's verdict on a sample. Per run: ``fraction()`` (before the run's referee verdict
    is known), then ``add(main, referee, p)`` with ``referee`` None when the run was not drawn.

    Validity: "A referee" in this module's notes.
    """

    floor: float = 0.25
    checked: int = 0
    disagreement: float = 0.0
    agreed: int = 0
    main_total: float = 0.0
    main_squares: float = 0.0
    fractions: list[float] = field(default_factory=list)
    referee_values: list[float] = field(default_factory=list)

    def fraction(self) -> float:
        """The next run's chance of going to the referee (a function of earlier runs only)."""
        n = self.count
        spread = self.main_squares - self.main_total**2 / n if n else 0.0
        variance = (0.25 + max(spread, 0.0)) / (n + 1)
        return referee_fraction(self.floor, round(self.disagreement), self.checked, variance)

    def add(self, main: float, referee: float | None, p: float) -> float:
        """Take one run; returns its value ``main + S (referee - main) / p``."""
        if not 0.0 < p <= 1.0:
            raise ValueError(f"a referee fraction must lie in (0, 1], got {p!r}")
        for name, value in (("main", main), ("referee", referee)):
            if value is not None and not 0.0 <= value <= 1.0:
                raise ValueError(f"a {name} value must lie in [0, 1], got {value!r}")
        x = main if referee is None else main + (referee - main) / p
        self._bet(x, 1.0 - 1.0 / p, 1.0 / p, REFEREE_BET_CAP)
        self.main_total += main
        self.main_squares += main * main
        if referee is not None:
            self.referee_values.append(referee)
            self.checked += 1
            self.disagreement += (referee - main) ** 2
            self.agreed += abs(referee - main) < 1e-9
        self.fractions.append(p)
        return x

    def cost_ratio(self, price_ratio: float = MAIN_PRICE_RATIO) -> float:
        """The expected judging cost of this test over the referee alone's, at what is seen so
        far: above 1, the referee alone would have been cheaper.

        A betting test needs about ``log(1/alpha) / g`` runs, ``g`` its capital's growth per run,
        so the ratio is ``(price_ratio + p) * g_alone / g_here``. At a bet ``l`` on values of
        spread ``v`` whose mean lies ``gap`` from the bar, ``g = l |gap| - l^2 (v + gap^2) / 2``
        (to second order), with ``l`` the best bet, ``|gap| / (v + gap^2)``, cut to the test's
        cap: here each run's own (a run drawn with chance ``p`` may be worth ``1/p``, so the cap
        is far below the plain test's), the referee alone the plain betting test's. Both take
        the gap from this test's estimate; ``v`` here is the spread of this test's values, and
        the referee alone's that of the referee's verdicts on the drawn runs. The caps are what
        a model on the spreads alone missed: where values vary little (mean scores) the cap, not
        the spread, sets the pace, and that model warned on few of the mean-score claims that
        cost more than the referee alone (``bench/referee.py``, "warning").
        """
        if self.checked < 2:
            return 0.0
        p = sum(self.fractions) / len(self.fractions)
        bar, gap = self.bar, abs(self.mean - self.bar)
        here_spread = _spread(self.values)
        alone_spread = max(_spread(self.referee_values), 0.01)
        if gap == 0.0:
            return (price_ratio + p) * here_spread / alone_spread
        above = self.mean > bar
        caps = [
            REFEREE_BET_CAP / (bar - 1 + 1 / q if above else 1 / q - bar) for q in self.fractions
        ]
        g_here = sum(_growth(gap, here_spread, cap) for cap in caps) / len(caps)
        g_alone = _growth(gap, alone_spread, BET_CAP / (bar if above else 1 - bar))
        return (price_ratio + p) * g_alone / g_here


def _growth(gap: float, spread: float, cap: float) -> float:
    """A betting test's growth per run (second order), its mean ``gap`` from the bar and its
    values' ``spread`` (variance), at the best bet cut to ``cap``."""
    bet = min(gap / (spread + gap * gap), cap)
    return bet * gap - bet * bet * (spread + gap * gap) / 2


def _spread(values: Sequence[float]) -> float:
    """The variance of ``values`` (0 for fewer than two)."""
    if len(values) < 2:
        return 0.0
    mean = sum(values) / len(values)
    return sum((value - mean) ** 2 for value in values) / len(values)


def least_runs_to_pass(
    mode: Literal["rate", "mean"],
    bar: float,
    alpha: float,
    direction: Direction,
    *,
    referee: float | None = None,
    limit: int = 1_000_000,
) -> int | None:
    """The fewest runs after which a claim could pass at all: every run on the passing side
    (held for "above", not held for "below"; a mean: every run at the top of the scale). None
    when not even ``limit`` runs could.

    ``referee``: the referee test with that floor (``referee_fraction``), both judges giving
    every run the passing verdict, at the best draws the claim's schedule allows. Each run's
    value is then the passing one whether or not it is drawn, but a run checked by the referee
    lowers every later chance of a draw (the agreement seen grows), and with it the caps on the
    bets, so the best case draws a run only when its chance is 1; any draws may come, since
    they follow from each run's content. Counting every run as drawn at chance 1 (the widest
    bets) would accept claims that cannot pass: ``at_least=0.5`` with ``max_runs=8``.
    """
    best = 1.0 if direction == "above" else 0.0
    if mode == "rate" and referee is None:
        # Every run on the passing side: the evidence for that side only grows with the runs.
        return rate_runs_to_decide(best, 1, limit, bar, alpha)
    test: BettingTest | RefereeTest = (
        BettingTest(bar, alpha) if referee is None else RefereeTest(bar, alpha, floor=referee)
    )
    for n in range(1, limit + 1):
        if isinstance(test, RefereeTest):
            p = test.fraction()
            test.add(best, best if p >= 1.0 else None, p)
        else:
            test.add(best)
        if test.decide() == direction:
            return n
        if n > 50 and (test.log_up if direction == "above" else test.log_down) <= 0:
            return None  # the bets never grow: no number of runs will do
    return None
