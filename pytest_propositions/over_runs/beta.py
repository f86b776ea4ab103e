"""The incomplete beta integrals of the rate test, in pure Python (``math`` only).

The rate test's evidence is a ratio of two integrals of ``t^(a-1) (1-t)^(b-1)`` over ``[p, 1]``
(or ``[0, p]``). scipy computed them before; importing ``scipy.stats`` cost a process 1.13 s of
CPU and about 80 MiB (``scipy.special`` alone about 0.5 s), several times what judging a claim
costs, so they are computed here.

Method: ``B_x(a, b) = x^a (1-x)^b / (a F)``, with ``F`` the classical continued fraction of the
incomplete beta function (evaluated by Lentz's method), which converges quickly for ``x < (a +
1) / (a + b + 2)``; past that point the other piece is computed the same way (``t -> 1 - t``).
The piece asked for is that one when it can be; otherwise it is the complete ``B(a, b)`` (from
``math.lgamma``) less the quick piece, which near the distribution's middle is not most of the
whole, so the subtraction loses few digits (the precision below is measured, not assumed).
Every result is a logarithm computed in log space: no tail underflows to zero.

Precision: the rate test's log evidence agrees with an exact evaluation (``decimal`` to 40
digits; ``tests/support/exact_beta.py``) to within 3.4e-12 on 2,300 random cases (up to 2,000
runs, bars 0.001 to 0.999, values up to about 2,200: a relative error of a few 1e-15;
``bench/runs_decisions.py --precision``), and 6.8e-12 at bars from 1e-6 to 0.9999. ``EVIDENCE_ERROR`` states 1e-9 for it; every evidence
value a decision used in 10,000 seeded claims was farther than that from its threshold
(``bench/runs_decisions.py``; docs/runs.md, "Precision").
"""

from __future__ import annotations

import math

#: A bound on the absolute error of the rate test's log evidence (measured: 3.4e-12 at most).
EVIDENCE_ERROR = 1e-9

# The continued fraction stops when one step changes it by less than this (relative).
_TOLERANCE = 1e-16
# Lentz's method replaces an exact zero by this, so that no step divides by zero.
_TINY = 1e-300
# A fraction that has not converged in this many steps raises: a rate test needs far fewer
# (about the square root of a + b).
_MAX_STEPS = 100_000


def _fraction(x: float, a: float, b: float) -> float:
    """The continued fraction ``1 + d1/(1 + d2/(1 + ...))`` of ``B_x(a, b) = x^a (1-x)^b / (a
    * fraction)``, where ``d(2m+1) = -(a+m)(a+b+m) x / ((a+2m)(a+2m+1))`` and ``d(2m) = m (b-m)
    x / ((a+2m-1)(a+2m))``: Lentz's method, the value as the product of its ratios."""
    value = 1.0
    numerator = 1.0  # the ratio of successive numerators
    inverse = 0.0  # the ratio of successive denominators, inverted
    for step in range(1, _MAX_STEPS):
        m, odd = divmod(step, 2)
        if odd:
            d = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))
        else:
            d = m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m))
        inverse = 1.0 + d * inverse
        inverse = 1.0 / (inverse if inverse != 0.0 else _TINY)
        numerator = 1.0 + d / numerator
        if numerator == 0.0:
            numerator = _TINY
        change = numerator * inverse
        value *= change
        if abs(change - 1.0) < _TOLERANCE:
            return value
    raise ArithmeticError(f"the incomplete beta fraction did not converge at {x!r}, {a!r}, {b!r}")


def log_beta(a: float, b: float) -> float:
    """``log B(a, b)`` for positive ``a`` and ``b``."""
    return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)


def _log_piece(x: float, log_x: float, log_rest: float, a: float, b: float) -> float:
    """``log B_x(a, b)``, the integral from 0 to ``x``, for ``x`` at most ``(a+1)/(a+b+2)``
    (where the fraction converges quickly); ``log_x``, ``log_rest``: ``log x``, ``log(1-x)``."""
    return a * log_x + b * log_rest - math.log(a) - math.log(_fraction(x, a, b))


def log_integral(x: float, a: float, b: float, upper: bool) -> float:
    """``log`` of the integral of ``t^(a-1) (1-t)^(b-1)`` from ``x`` to 1 (``upper``) or from
    0 to ``x``, for ``0 < x < 1`` and positive ``a``, ``b``."""
    log_x, log_rest = math.log(x), math.log1p(-x)
    if x * (a + b + 2.0) < a + 1.0:  # the piece [0, x] converges quickly
        lower = _log_piece(x, log_x, log_rest, a, b)
        if not upper:
            return lower
        whole = log_beta(a, b)
        return whole + math.log1p(-math.exp(lower - whole))
    # The piece [x, 1] is [0, 1-x] of t -> 1-t, with a and b exchanged.
    high = _log_piece(1.0 - x, log_rest, log_x, b, a)
    if upper:
        return high
    whole = log_beta(a, b)
    return whole + math.log1p(-math.exp(high - whole))
