"""The rate test's integrals and evidence evaluated exactly enough to judge the package's floats:
``decimal`` arithmetic with as many digits as the cancellation needs, from power series only
(no gamma function, no continued fraction: nothing shared with ``over_runs/beta.py``).

``B_x(a, b)``, the integral of ``t^(a-1) (1-t)^(b-1)`` from 0 to ``x``, is ``x^a`` times the
series ``sum_k (1-b)_k / k! x^k / (a + k)`` (``(1-t)^(b-1)`` expanded term by term), which
converges for ``x < 1``; it is summed for ``x <= 1/2`` only, and ``B(a, b)`` is ``B_(1/2)(a, b) +
B_(1/2)(b, a)``. The series' terms grow before they shrink, so digits are lost to cancellation:
each value is computed twice, at two precisions, and again with more digits until both agree.
"""

from __future__ import annotations

import math
from decimal import Decimal, localcontext

HALF = Decimal(1) / 2


def _series(x: Decimal, a: Decimal, b: Decimal, digits: int) -> Decimal:
    """``B_x(a, b)`` for ``0 < x <= 1/2``, to about ``digits`` significant digits of its terms."""
    total = Decimal(0)
    coefficient = Decimal(1)  # (1-b)_k / k! x^k
    k = 0
    limit = Decimal(10) ** -(digits + 5)
    while True:
        term = coefficient / (a + k)
        total += term
        # Past k = b the terms shrink by at least x each step: the rest is below term x/(1-x).
        if k > b + 1 and abs(term) < limit * abs(total):
            break
        coefficient *= (k + 1 - b) * x / (k + 1)
        k += 1
    return (a * x.ln()).exp() * total


def _integral(x: Decimal, a: Decimal, b: Decimal, upper: bool, digits: int) -> Decimal:
    """The integral from ``x`` to 1 (``upper``) or from 0 to ``x``, at ``digits`` digits."""
    if upper:
        x, a, b = 1 - x, b, a
    if x <= HALF:
        return _series(x, a, b, digits)
    whole = _series(HALF, a, b, digits) + _series(HALF, b, a, digits)
    return whole - _series(1 - x, b, a, digits)


def log_integral(
    x: float, a: float | Decimal, b: float | Decimal, upper: bool, digits: int = 40
) -> Decimal:
    """``log`` of the integral, exact to about ``digits`` significant digits; the floats are
    taken at their exact binary values."""
    size = float(max(a, b))
    precision = digits + 20 + int(size * 0.5)  # the cancellation costs up to ~log10(3) a digit
    while True:
        values = []
        for extra in (0, 15):
            with localcontext() as context:
                context.prec = precision + extra
                values.append(
                    _integral(Decimal(x), Decimal(a), Decimal(b), upper, precision + extra).ln()
                )
        with localcontext() as context:
            context.prec = digits + 10
            if abs(values[0] - values[1]) <= Decimal(10) ** -digits * max(1, abs(values[1])):
                return +values[1]
        precision *= 2


def log_evidence(held: int, runs: int, bar: float, a: float, b: float, above: bool) -> Decimal:
    """The rate test's log evidence (``stats.rate_log_evidence``) for a prior ``Beta(a, b)``
    restricted to the side of ``bar`` it tests (``above``: ``[bar, 1]``): the log ratio of the
    posterior's and the prior's mass there, over the likelihood at the bar."""
    post_a, post_b = Decimal(a) + held, Decimal(b) + runs - held
    with localcontext() as context:
        context.prec = 60
        bar_exact = Decimal(bar)
        return (
            log_integral(bar, post_a, post_b, above)
            - log_integral(bar, a, b, above)
            - held * bar_exact.ln()
            - (runs - held) * (1 - bar_exact).ln()
        )


def close(value: float, exact: Decimal, tolerance: float) -> bool:
    """Whether a float is within ``tolerance`` of an exact value (infinities never are)."""
    return math.isfinite(value) and abs(Decimal(value) - exact) <= Decimal(tolerance)
