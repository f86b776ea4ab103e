"""A referee for claims over runs, by simulation: is the decision about the referee valid
whatever the main judge does, and what does it save against the referee judging every run?

Pure numpy (the ``stats`` extra); no judge, no pytest. Every simulated run has the referee's
verdict (the truth the decision is about) and the main judge's, which agrees with it on a set
share of runs (rates: the verdict flipped; scores: 3 points higher, or lower at 9). The
referee test is ``stats.RefereeTest`` (bet cap, fraction rule and all) run on thousands of
claims at once, one run per step; ``check_against_the_plugin`` replays some of them through the
class itself and stops if they differ. Beside it, the referee alone: the plugin's own rule on
the referee's verdict of every run (rates: ``stats.rate_boundaries``; scores:
``stats.BettingTest``, vectorised the same way).

It prints, per agreement (70%, 90%, 95%, 99%), bar (0.5 and 0.8) and true value:

* the false-pass rate against the referee's truth at the bar and 0.05 below it (target: at
  most ``1 - confidence``), for rates and for mean scores;
* decided share, runs used, referee calls and judging cost (main judge at a tenth of the
  referee's price) with the referee sampling, and with the referee alone, at 0.05 and 0.15
  above the bar;
* the target: at 95% agreement, 0.15 above a bar of 0.5, confidence 0.95, ``max_runs`` 400,
  decided in at least 95% of claims with referee calls at most 0.6 of the referee alone's.

    python bench/referee.py [--reps 4000] [--seed 1]     # about a minute on 2 shared cores
"""

from __future__ import annotations

import argparse
import hashlib
import math
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402

from pytest_propositions.over_runs import stats  # noqa: E402

CONFIDENCE = 0.95
MAX_RUNS = 400
FLOOR = 0.25
AGREEMENTS = (0.70, 0.90, 0.95, 0.99)
PRICE = stats.MAIN_PRICE_RATIO
# The price ratio of the usual pairs of one family's small and large models.
PRICE_TOO = 0.2
PRICES = (PRICE, PRICE_TOO)


def verdicts(
    kind: str,
    truth: float,
    agreement: float,
    reps: int,
    runs: int,
    rng: np.random.Generator,
    toward_pass: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """(referee values, main values), each reps x runs in [0, 1]. The main judge errs on a
    share ``1 - agreement`` of runs: the verdict flipped, a score 3 points off (up, or down at
    7 and over); ``toward_pass``: always toward passing (upholds, 3 points up to at most 9), so
    an error on a run that already passes changes nothing."""
    agree = rng.random((reps, runs)) < agreement
    if kind == "rate":
        referee = (rng.random((reps, runs)) < truth).astype(float)
        main = np.where(agree, referee, 1.0 if toward_pass else 1.0 - referee)
        return referee, main
    scores = rng.binomial(9, truth, size=(reps, runs))
    if toward_pass:
        wrong = np.minimum(scores + 3, 9)
    else:
        wrong = np.where(scores <= 6, scores + 3, scores - 3)
    return scores / 9, np.where(agree, scores, wrong) / 9


def referee_many(
    referee: np.ndarray, main: np.ndarray, bar: float, draws: np.ndarray, alpha: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``stats.RefereeTest`` on every row at once: (decision 1/-1/0, runs used, referee calls)."""
    reps, runs = referee.shape
    threshold = math.log(1 / alpha)
    log_up = np.zeros(reps)
    log_down = np.zeros(reps)
    total = np.zeros(reps)
    squares = np.zeros(reps)
    main_total = np.zeros(reps)
    main_squares = np.zeros(reps)
    checked = np.zeros(reps)
    disagreement = np.zeros(reps)
    decision = np.zeros(reps, dtype=int)
    used = np.full(reps, runs)
    calls = np.zeros(reps)
    live = np.ones(reps, dtype=bool)
    for i in range(runs):
        # The fraction (stats.RefereeTest.fraction and stats.referee_fraction).
        spread = main_squares - main_total**2 / i if i else np.zeros(reps)
        variance = np.maximum((0.25 + np.maximum(spread, 0.0)) / (i + 1), 1e-9)
        d = (np.round(disagreement) + 0.5) / (checked + 10.0)
        best = np.where(d >= variance, 1.0, np.sqrt(PRICE * d / np.maximum(variance - d, 1e-12)))
        p = np.clip(best, FLOOR, 1.0)
        drawn = draws[:, i] < p
        m, r = main[:, i], referee[:, i]
        x = np.where(drawn, m + (r - m) / p, m)
        # The bets (stats.RefereeTest.bets).
        mean = (0.5 + total) / (i + 1)
        var = (0.25 + squares) / (i + 1)
        gap = mean - bar
        raw = gap / (var + gap * gap)
        up = np.clip(raw, 0.0, stats.REFEREE_BET_CAP / (bar - (1 - 1 / p)))
        down = np.clip(-raw, 0.0, stats.REFEREE_BET_CAP / (1 / p - bar))
        log_up += live * np.log1p(up * (x - bar))
        log_down += live * np.log1p(-down * (x - bar))
        calls += live * drawn
        total += x
        squares += (x - mean) ** 2
        main_total += m
        main_squares += m * m
        checked += drawn
        disagreement += drawn * (r - m) ** 2
        above = live & (log_up >= threshold) & (log_down < threshold)
        below = live & (log_down >= threshold) & (log_up < threshold)
        decision[above], decision[below] = 1, -1
        used[above | below] = i + 1
        live &= ~(above | below)
        if not live.any():
            break
    return decision, used, calls


def betting_many(
    values: np.ndarray, bar: float, alpha: float, cap: float | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """``stats.BettingTest`` on every row at once: (decision 1/-1/0, runs used); ``cap``: another
    bet cap than the plugin's ``stats.BET_CAP``."""
    cap = stats.BET_CAP if cap is None else cap
    reps, runs = values.shape
    threshold = math.log(1 / alpha)
    log_up = np.zeros(reps)
    log_down = np.zeros(reps)
    total = np.zeros(reps)
    squares = np.zeros(reps)
    decision = np.zeros(reps, dtype=int)
    used = np.full(reps, runs)
    live = np.ones(reps, dtype=bool)
    for i in range(runs):
        x = values[:, i]
        mean = (0.5 + total) / (i + 1)
        var = (0.25 + squares) / (i + 1)
        gap = mean - bar
        raw = gap / (var + gap * gap)
        up = np.clip(raw, 0.0, cap / bar)
        down = np.clip(-raw, 0.0, cap / (1 - bar))
        log_up += live * np.log1p(up * (x - bar))
        log_down += live * np.log1p(-down * (x - bar))
        total += x
        squares += (x - mean) ** 2
        above = live & (log_up >= threshold) & (log_down < threshold)
        below = live & (log_down >= threshold) & (log_up < threshold)
        decision[above], decision[below] = 1, -1
        used[above | below] = i + 1
        live &= ~(above | below)
        if not live.any():
            break
    return decision, used


_BOUNDARIES: dict[tuple[float, int], tuple[np.ndarray, np.ndarray]] = {}


def rate_many(held: np.ndarray, bar: float, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """The plugin's rate rule (``stats.rate_boundaries``) on every row: (decision, runs used)."""
    runs = held.shape[1]
    if (bar, runs) not in _BOUNDARIES:
        b = stats.rate_boundaries(bar, alpha, runs)
        _BOUNDARIES[bar, runs] = (
            np.array([runs + 1 if a is None else a for a in b.above_from]),
            np.array([-1 if x is None else x for x in b.below_to]),
        )
    above_from, below_to = _BOUNDARIES[bar, runs]
    counts = np.cumsum(held, axis=1)
    up, down = counts >= above_from, counts <= below_to
    first_up = np.where(up.any(axis=1), up.argmax(axis=1), runs + 1)
    first_down = np.where(down.any(axis=1), down.argmax(axis=1), runs + 1)
    decision = np.where(first_up < first_down, 1, np.where(first_down < first_up, -1, 0))
    return decision, np.minimum(np.minimum(first_up, first_down) + 1, runs)


def check_against_the_plugin(rng: np.random.Generator) -> None:
    """The vectorised test must be the plugin's: replay 30 claims through stats.RefereeTest."""
    referee, main = verdicts("rate", 0.6, 0.9, 30, 150, rng)
    draws = rng.random(referee.shape)
    decision, used, calls = referee_many(referee, main, 0.5, draws, 0.05)
    for row in range(30):
        test = stats.RefereeTest(0.5, 0.05, floor=FLOOR)
        drawn = 0
        for i in range(150):
            p = test.fraction()
            hit = draws[row, i] < p
            drawn += hit
            test.add(float(main[row, i]), float(referee[row, i]) if hit else None, p)
            if test.decide() is not None:
                break
        expected = {"above": 1, "below": -1, None: 0}[test.decide()]
        if (expected, test.count, drawn) != (decision[row], used[row], calls[row]):
            raise SystemExit(f"the vectorised referee test differs from stats.RefereeTest ({row})")


def validity(reps: int, rng: np.random.Generator) -> bool:
    alpha = 1 - CONFIDENCE
    print(
        f"== false passes against the referee's truth (target <= {alpha:.2f}), {reps} claims each;"
        " the main judge errs both ways, or only toward passing"
    )
    print(f"{'kind':>5} {'bar':>4} {'agree':>5} {'errs':>7}  {'at bar':>7} {'-0.05':>7}")
    ok = True
    worst = (0.0, "")
    for kind in ("rate", "mean"):
        for bar in (0.5, 0.8):
            for toward_pass in (False, True):
                for agreement in AGREEMENTS:
                    rates = []
                    for truth in (bar, bar - 0.05):
                        referee, main = verdicts(
                            kind, truth, agreement, reps, MAX_RUNS, rng, toward_pass
                        )
                        draws = rng.random(referee.shape)
                        decision, _, _ = referee_many(referee, main, bar, draws, alpha)
                        rates.append(float(np.mean(decision == 1)))
                    ok &= max(rates) <= alpha
                    errs = "to pass" if toward_pass else "both"
                    worst = max(worst, (max(rates), f"{kind} bar {bar} {agreement} {errs}"))
                    print(
                        f"{kind:>5} {bar:4.1f} {agreement:5.2f} {errs:>7}  {rates[0]:7.4f} "
                        f"{rates[1]:7.4f}"
                    )
    print(f"worst: {worst[0]:.4f} ({worst[1]}); within the target: {'yes' if ok else 'NO'}")
    return ok


def savings(reps: int, rng: np.random.Generator) -> bool:
    alpha = 1 - CONFIDENCE
    print(
        f"\n== referee sampling (floor {FLOOR}) vs the referee alone, max_runs {MAX_RUNS}, "
        f"{reps} claims each; cost in referee calls, a main call at {PRICE:g} of one (the "
        f"plugin's assumption) and at {PRICE_TOO:g} (gpt-4.1-mini / gpt-4.1, gpt-5-mini / gpt-5)"
    )
    print(
        f"{'kind':>5} {'bar':>4} {'true':>5} {'agree':>5} | {'decided':>7} {'runs':>6} "
        f"{'calls':>6} {'cost':>6} | {'alone:':>6} {'decided':>7} {'runs':>6} | "
        f"{'calls':>5} {'cost':>5} {'@' + format(PRICE_TOO, 'g'):>5}  (ratios)"
    )
    target_met = False
    for kind in ("rate", "mean"):
        for bar in (0.5, 0.8):
            for offset in (0.05, 0.15):
                truth = round(bar + offset, 2)
                for agreement in AGREEMENTS:
                    referee, main = verdicts(kind, truth, agreement, reps, MAX_RUNS, rng)
                    draws = rng.random(referee.shape)
                    decision, used, calls = referee_many(referee, main, bar, draws, alpha)
                    if kind == "rate":
                        alone, alone_used = rate_many(referee, bar, alpha)
                    else:
                        alone, alone_used = betting_many(referee, bar, alpha)
                    cost = PRICE * used + calls
                    call_ratio = calls.mean() / alone_used.mean()
                    cost_ratio = cost.mean() / alone_used.mean()
                    cost_too = (PRICE_TOO * used + calls).mean() / alone_used.mean()
                    decided = float(np.mean(decision == 1))
                    print(
                        f"{kind:>5} {bar:4.1f} {truth:5.2f} {agreement:5.2f} | {decided:7.3f} "
                        f"{used.mean():6.1f} {calls.mean():6.1f} {cost.mean():6.1f} |        "
                        f"{float(np.mean(alone == 1)):7.3f} {alone_used.mean():6.1f} | "
                        f"{call_ratio:5.2f} {cost_ratio:5.2f} {cost_too:5.2f}"
                        + ("  cheaper" if cost_ratio < 1 else "  DEARER")
                        + ("" if (cost_too < 1) == (cost_ratio < 1) else f" (at {PRICE_TOO:g}: ")
                        + ("" if (cost_too < 1) == (cost_ratio < 1) else "DEARER)")
                    )
                    if (kind, bar, offset, agreement) == ("rate", 0.5, 0.15, 0.95):
                        target = (decided, call_ratio)
    decided, call_ratio = target
    target_met = decided >= 0.95 and call_ratio <= 0.6
    print(
        f"\ntarget (rate, 95% agreement, bar 0.5 + 0.15): decided {decided:.3f} (>= 0.95), "
        f"referee calls {call_ratio:.2f} of the referee alone's (<= 0.6): "
        f"{'met' if target_met else 'NOT MET'}"
    )
    return target_met


def biased_main(referee: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A main judge biased toward passing: it upholds every run the referee upholds, and 30% of
    the others."""
    return np.where(referee == 1, 1.0, (rng.random(referee.shape) < 0.3).astype(float))


def claim_draws_before(seed: str, runs: int) -> np.ndarray:
    """The draws as the plugin made them before issue 40: from the claim's seed and the run
    number alone, the same for every simulation of the claim."""
    return np.array(
        [
            int.from_bytes(hashlib.sha256(f"{seed}\0{run}".encode()).digest()[:8], "big") / 2**64
            for run in range(runs)
        ]
    )


def per_claim(claims: int, sims: int, rng: np.random.Generator) -> bool:
    """Each claim's own false-pass rate, over fresh simulations of it: the draws from the claim
    alone (before) against the plugin's ``stats.referee_draw`` on each run's content."""
    alpha = 1 - CONFIDENCE
    bar = 0.5
    print(
        f"\n== each claim's own false-pass rate: {claims} claims (seeds), {sims} fresh simulations "
        f"each, referee's rate at the bar {bar}, main judge biased toward passing, max_runs "
        f"{MAX_RUNS}; target: every claim <= {alpha:.2f}"
    )
    ok = True
    rows = []
    for name in ("before: drawn from the claim alone", "now: drawn from each run's content"):
        rates = []
        for claim in range(claims):
            seed = f"claim seed {claim}"
            referee = (rng.random((sims, MAX_RUNS)) < bar).astype(float)
            main = biased_main(referee, rng)
            if name.startswith("before"):
                draws = np.broadcast_to(claim_draws_before(seed, MAX_RUNS), referee.shape)
            else:
                # Each simulated run's content stands for its request key: distinct per run.
                draws = np.array(
                    [
                        [stats.referee_draw(seed, run, f"{claim}:{sim}") for run in range(MAX_RUNS)]
                        for sim in range(sims)
                    ]
                )
            decision, _, _ = referee_many(referee, main, bar, draws, alpha)
            rates.append(float(np.mean(decision == 1)))
        r = np.array(rates)
        noise = math.sqrt(r.mean() * (1 - r.mean()) / sims)
        excess = math.sqrt(max(0.0, float(r.var()) - noise**2))
        rows.append((name, r))
        print(
            f"{name:38} mean {r.mean():.4f}  max {r.max():.4f}  above {alpha:.2f}: "
            f"{np.mean(r > alpha):5.1%}  spread {r.std():.4f} (sampling noise alone "
            f"{noise:.4f}; beyond it {excess:.4f})"
        )
    ok = bool(rows[-1][1].max() <= alpha)
    print(f"every claim within the target now: {'yes' if ok else 'NO'}")
    return ok


def cost_ratio_before(test: stats.RefereeTest, price: float) -> float:
    """The warning's cost model before issue 40: from the spreads alone (no bet caps)."""
    if test.count < 2:
        return 0.0
    p = sum(test.fractions) / len(test.fractions)
    mean = test.main_total / test.count
    variance = max(test.main_squares / test.count - mean * mean, 0.01)
    d = test.disagreement / test.checked if test.checked else 0.0
    return (price + p) * (1.0 + d * (1.0 - p) / (p * variance))


def warning(claims: int, rng: np.random.Generator) -> bool:
    """Does ``RefereeWarning`` fire where the referee alone would have cost less? The plugin's
    ``stats.RefereeTest`` on each claim, its ``cost_ratio`` at the end (as ``_warn_if_dear``:
    at least 10 runs checked, ratio above 1), beside the model before issue 40. A line's cost
    is its judging cost over the referee alone's on the same verdicts, per claim and per claim
    decided (near the bar most claims end undecided at ``max_runs``, and money spent on them
    decides nothing: per claim, sampling looks cheap there even where it decides less)."""
    alpha = 1 - CONFIDENCE
    print(
        f"\n== RefereeWarning: {claims} claims per line, max_runs {MAX_RUNS}; cost over the "
        "referee alone's per claim and per claim decided; the share of claims warned, with the "
        "cost model before and now"
    )
    print(
        f"{'kind':>5} {'bar':>4} {'true':>5} {'agree':>5} | "
        + " | ".join(
            f"at {price:g}: {'cost':>5} {'/dec.':>5} {'before':>6} {'now':>6}" for price in PRICES
        )
    )
    lines: dict[tuple[float, str, bool], list[tuple[float, float]]] = {}
    for kind in ("rate", "mean"):
        for bar in (0.5, 0.8):
            for offset in (0.05, 0.15):
                truth = round(bar + offset, 2)
                for agreement in AGREEMENTS:
                    referee, main = verdicts(kind, truth, agreement, claims, MAX_RUNS, rng)
                    draws = rng.random(referee.shape)
                    tests = []
                    for row in range(claims):
                        test = stats.RefereeTest(bar, alpha, floor=FLOOR)
                        for i in range(MAX_RUNS):
                            p = test.fraction()
                            drawn = draws[row, i] < p
                            test.add(
                                float(main[row, i]), float(referee[row, i]) if drawn else None, p
                            )
                            if test.decide() is not None:
                                break
                        tests.append(test)
                    if kind == "rate":
                        alone, alone_used = rate_many(referee, bar, alpha)
                    else:
                        alone, alone_used = betting_many(referee, bar, alpha)
                    used = np.array([test.count for test in tests])
                    calls = np.array([test.checked for test in tests])
                    decided = np.mean([test.decide() is not None for test in tests])
                    alone_decided = np.mean(alone != 0)
                    cells = []
                    for price in PRICES:
                        ratio = (price * used + calls).mean() / alone_used.mean()
                        per_decision = ratio * alone_decided / max(decided, 1e-9)
                        before = np.mean(
                            [t.checked >= 10 and cost_ratio_before(t, price) > 1 for t in tests]
                        )
                        now = np.mean([t.checked >= 10 and t.cost_ratio(price) > 1 for t in tests])
                        for basis, value in (("claim", ratio), ("decided", per_decision)):
                            lines.setdefault((price, basis, value > 1), []).append((before, now))
                        cells.append(
                            f"at {price:g}: {ratio:5.2f} {per_decision:5.2f} {before:6.1%} {now:6.1%}"
                        )
                    print(
                        f"{kind:>5} {bar:4.1f} {truth:5.2f} {agreement:5.2f} | " + " | ".join(cells)
                    )
    for (price, basis, dearer), found in sorted(lines.items()):
        before = np.mean([b for b, _ in found])
        now = np.mean([n for _, n in found])
        print(
            f"at {price:g}, {len(found):2d} lines {'dearer' if dearer else 'cheaper'} per "
            f"{basis}: claims warned {before:6.1%} before, {now:6.1%} now"
        )
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=4000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--only", choices=("validity", "savings", "per-claim", "warning"))
    parser.add_argument("--claims", type=int, default=40, help="claims for per-claim (40)")
    parser.add_argument("--sims", type=int, default=2000, help="simulations per claim (2000)")
    parser.add_argument("--warned", type=int, default=200, help="claims per warning line (200)")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    check_against_the_plugin(rng)
    ok = True
    if args.only in (None, "validity"):
        ok &= validity(args.reps, rng)
    if args.only in (None, "savings"):
        ok &= savings(args.reps, rng)
    if args.only in (None, "per-claim"):
        ok &= per_claim(args.claims, args.sims, rng)
    if args.only in (None, "warning"):
        ok &= warning(args.warned, rng)
    print(f"\n({time.perf_counter() - started:.0f} s)")
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()
