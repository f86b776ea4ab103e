"""The exact binomial bound on a rate seen in a fixed number of trials: how high a judge's error
rate may be, given its calibration's counts (the reports show it beside every verdict)."""

from __future__ import annotations

import math

#: The confidence of the upper bounds the reports give for a judge's error rates.
BOUND_CONFIDENCE = 0.95


def upper_bound(errors: int, trials: int, confidence: float = BOUND_CONFIDENCE) -> float:
    """The exact (Clopper-Pearson) one-sided upper bound on an error rate seen ``errors`` times
    in ``trials``: the rate ``u`` at which seeing at most ``errors`` has chance ``1 - confidence``.

    The binomial tail falls as the rate grows, so bisection finds ``u`` (to 1e-9); pure Python,
    so no run imports scipy for it (it equals ``beta.ppf(confidence, errors + 1, trials -
    errors)``). No errors in ``n`` gives ``1 - (1 - confidence) ** (1 / n)``.
    """
    if trials <= 0 or not 0 <= errors <= trials:
        raise ValueError(f"expected 0 <= errors <= trials and trials > 0, got {errors}/{trials}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"expected a confidence between 0 and 1, got {confidence!r}")
    if errors == trials:
        return 1.0
    alpha = 1.0 - confidence
    if errors == 0:
        return 1.0 - float(alpha ** (1.0 / trials))
    logs = [
        math.lgamma(trials + 1) - math.lgamma(i + 1) - math.lgamma(trials - i + 1)
        for i in range(errors + 1)
    ]

    def tail(rate: float) -> float:  # P(X <= errors) at this rate
        log_p, log_q = math.log(rate), math.log1p(-rate)
        return sum(math.exp(c + i * log_p + (trials - i) * log_q) for i, c in enumerate(logs))

    low, high = errors / trials, 1.0
    while high - low > 1e-9:
        middle = (low + high) / 2
        if tail(middle) > alpha:
            low = middle
        else:
            high = middle
    return high
