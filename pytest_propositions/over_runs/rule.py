"""The rule of a claim over runs (at_least, at_most, mean score, better_than, every_run, a
referee): its keywords checked once, where the claim is made, into a ``Rule`` that travels down.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ..checks import from_site
from ..claims.options import RUNS_MODES
from ..scale import MAX_SCORE, MIN_SCORE, score_to_unit, unit_to_score
from ..verdict import CHECK, SCORE, Kind, passes_bar
from . import stats
from .keywords import is_runs
from .target import Runs

if TYPE_CHECKING:
    from ..claims.expectation import Expectation
    from ..settings import Settings
    from ..verdict import Verdict

__all__ = ["Mode", "Rule", "check_confidence", "check_rule"]


Mode = Literal["at_least", "at_most", "mean", "better_than", "every_run"]


@dataclass(frozen=True)
class Rule:
    """What a claim over runs asserts, checked."""

    mode: Mode
    kind: Kind
    confidence: float
    # at_least / at_most: a fraction; mean: a score 0..9; better_than: the margin.
    bar: float = 0.0
    # A score claim's per-run bar (a run holds when it scores at least this); None for checks
    # and for mean scores.
    threshold: int | None = None
    control: Runs | None = None
    # A second, trusted judge: the decision is about its verdicts (stats.py, "A referee").
    referee: str | None = None
    referee_fraction: float = 0.25
    # min_score 9: a mean of 9 needs every run to score 9, decided as every_run.
    from_mean: bool = False

    @property
    def alpha(self) -> float:
        return 1.0 - self.confidence

    @property
    def on_scores(self) -> bool:
        """Whether the rule reads each run's score (a mean, or a comparison of means) rather
        than whether the run held."""
        return self.kind == SCORE and self.threshold is None

    def held(self, verdict: Verdict) -> bool:
        """Whether the claim held in one run: judged True, or scored at least the run's bar (a
        mean score has none: each run counts by its score, ``unit``)."""
        if verdict.kind == SCORE and self.threshold is None:
            return True
        return passes_bar(verdict.kind, verdict.value, self.threshold)

    def unit(self, verdict: Verdict, held: bool) -> float:
        """A run's value in [0, 1]: 1/0 for a rate, its place on the score scale for a mean."""
        if self.on_scores:
            return score_to_unit(int(verdict.value))
        return 1.0 if held else 0.0

    def describe(self) -> str:
        if self.from_mean:
            return f"the mean score is at least {MAX_SCORE}: every run must score {MAX_SCORE}"
        held = "holds" if self.threshold is None else f"scores at least {self.threshold}"
        if self.mode == "at_least":
            return f"the claim {held} in at least {self.bar:g} of runs"
        if self.mode == "at_most":
            return f"the claim {held} in at most {self.bar:g} of runs"
        if self.mode == "mean":
            return f"the mean score is at least {self.bar:g}"
        if self.mode == "every_run":
            return f"the claim {held} in every run"
        what = "mean score" if self.kind == SCORE else "rate"
        unit = " points" if self.kind == SCORE else ""
        by = f" by more than {self.bar:g}{unit}" if self.bar else ""
        return f"the {what} is higher than the control's{by}"


def _number(value: Any, name: str) -> float:
    __tracebackhide__ = True
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise TypeError(f"{name} must be a number, got {value!r}")
    return float(value)


def check_confidence(value: Any, name: str = "confidence") -> float:
    __tracebackhide__ = True
    number = _number(value, name)
    if not 0.5 <= number < 1.0:
        raise ValueError(f"{name} must be at least 0.5 and below 1 (e.g. 0.95), got {value!r}")
    return number


def check_rule(
    target: Any,
    rule_options: Mapping[str, Any],
    expectation: Expectation,
    settings: Settings | None,
    where: str | None,
    *,
    kind: Kind | None = None,
) -> Rule | None:
    """The rule of a claim over runs, checked where the claim is made; None for an ordinary claim.

    The expectation's threshold is the claim's score bar (None for a True/False claim);
    ``kind="score"`` with no threshold is ``min_score``'s comparison of mean scores with
    ``better_than``. A claim that must not hold (``holds=False``, or a ``max_score``) has no
    meaning over runs: the rule ``at_most=q`` says how rarely a claim may hold. ``settings``:
    the run's (its confidence and referee, unless the claim gives its own); needed for a
    ``runs(...)`` target only. A claim that could not pass within its ``max_runs``, even if
    every run went its way, is refused here, before any run.
    """
    __tracebackhide__ = True
    try:
        if not is_runs(target):
            if rule_options:
                raise TypeError(
                    f"{', '.join(f'{name}=' for name in sorted(rule_options))} apply to claims "
                    "over many runs: pass runs(simulate, max_runs=N) as the target"
                )
            return None
        if not expectation.holds:
            raise TypeError(
                "holds=False and max_score do not apply to claims over many runs; to say a "
                "claim must be rare, write at_most=q (it holds in at most a fraction q of runs)"
            )
        assert settings is not None
        rule = _check_rule(rule_options, expectation.threshold, settings.confidence, kind)
        rule = _with_referee(rule, rule_options, settings.referee_model, settings.referee_fraction)
        _check_reachable(rule, target)
        return rule
    except (TypeError, ValueError) as error:
        raise from_site(error, where) from None


def _with_referee(
    rule: Rule, options: Mapping[str, Any], run_referee: str | None, run_fraction: float
) -> Rule:
    """The rule with its referee: the claim's own, else the run's where the rule takes one."""
    __tracebackhide__ = True
    referee = options.get("referee")
    if "referee" in options and (not isinstance(referee, str) or not referee.strip()):
        raise TypeError(f"referee must be a judge model's name, got {referee!r}")
    fraction = options.get("referee_fraction", run_fraction)
    if "referee_fraction" in options:
        fraction = _number(fraction, "referee_fraction")
        if not 0.0 < fraction <= 1.0:
            raise ValueError(f"referee_fraction must be above 0 and at most 1, got {fraction!r}")
        if referee is None and run_referee is None:
            raise TypeError("referee_fraction= goes with a referee (referee=MODEL)")
    takes_referee = rule.mode in ("at_least", "at_most", "mean") and not rule.from_mean
    if referee is not None and not takes_referee:
        what = "min_score 9 (every run must score 9)" if rule.from_mean else f"{rule.mode}="
        raise TypeError(
            f"a referee decides at_least=, at_most= and mean scores; {what} is decided on the "
            "main judge's verdicts: leave referee= out"
        )
    chosen = referee.strip() if isinstance(referee, str) else run_referee
    if chosen is None or not takes_referee or (rule.mode == "mean" and rule.bar <= MIN_SCORE):
        return rule
    return dataclasses.replace(rule, referee=chosen, referee_fraction=float(fraction))


def _check_reachable(rule: Rule, target: Runs) -> None:
    """Refuse a claim that could not pass within max_runs even if every run went its way."""
    __tracebackhide__ = True
    limit = target.max_runs if rule.control is None else min(target.max_runs, rule.control.max_runs)
    least = _least_runs(rule)
    if least is not None and least <= limit:
        return
    takes = (
        f"takes {least} runs; give max_runs={least} or more"
        if least is not None
        else "takes more than a million runs; give a lower bar or a lower confidence"
    )
    alike = f" (by the main judge and referee {rule.referee} alike)" if rule.referee else ""
    raise ValueError(
        f"this claim cannot pass within max_runs={limit}: even if {_best_case(rule)}{alike}, "
        f"showing at {rule.confidence * 100:g}% confidence that {rule.describe()} {takes}"
    )


def _best_case(rule: Rule) -> str:
    """Every run going the claim's way, in the rule's words."""
    if rule.mode == "better_than":
        if rule.kind == SCORE:
            return f"every run scored {MAX_SCORE} and every control run {MIN_SCORE}"
        return "every run held and no control run did"
    if rule.mode == "mean":
        return f"every run scored {MAX_SCORE}"
    held = "held" if rule.threshold is None else f"scored at least {rule.threshold}"
    return f"no run {held}" if rule.mode == "at_most" else f"every run {held}"


def _least_runs(rule: Rule) -> int | None:
    if rule.mode == "every_run" or (rule.mode == "mean" and rule.bar <= MIN_SCORE):
        return 1
    if rule.mode in ("at_least", "at_most"):
        direction: Literal["above", "below"] = "above" if rule.mode == "at_least" else "below"
        kind: Literal["rate", "mean"] = "rate"
        bar = rule.bar
    elif rule.mode == "mean":
        direction, kind, bar = "above", "mean", score_to_unit(rule.bar)
    else:
        margin = score_to_unit(rule.bar, difference=True) if rule.kind == SCORE else rule.bar
        direction, kind, bar = "above", "mean", stats.paired_bar(margin)
    floor = rule.referee_fraction if rule.referee is not None else None
    return _least_runs_cached(kind, bar, rule.alpha, direction, floor)


@functools.lru_cache(maxsize=256)
def _least_runs_cached(
    kind: Literal["rate", "mean"],
    bar: float,
    alpha: float,
    direction: Literal["above", "below"],
    referee: float | None,
) -> int | None:
    return stats.least_runs_to_pass(kind, bar, alpha, direction, referee=referee)


def _check_rule(
    options: Mapping[str, Any],
    threshold: int | None,
    default_confidence: float,
    kind: Kind | None,
) -> Rule:
    __tracebackhide__ = True
    kind = kind or (CHECK if threshold is None else SCORE)
    confidence = check_confidence(options.get("confidence", default_confidence))
    modes = [name for name in RUNS_MODES if name in options]
    if len(modes) > 1:
        one_of = ", ".join(f"{name}=" for name in RUNS_MODES)
        raise TypeError(f"give one of {one_of}; got {', '.join(modes)}")
    if "margin" in options and modes != ["better_than"]:
        raise TypeError("margin= goes with better_than=runs(...)")
    if not modes:
        if threshold is None:
            raise TypeError(
                "a claim over runs needs its rule: at_least=p, at_most=q, every_run=True, "
                "better_than=runs(...), or a score bar (min_score) for the mean score"
            )
        if threshold >= MAX_SCORE:
            # No run scores above 9: a mean of 9 is every run scoring 9, a rule without a
            # confidence (like every_run). Said so in the rule's description.
            return Rule("every_run", SCORE, confidence, 0.0, MAX_SCORE, from_mean=True)
        return Rule("mean", SCORE, confidence, bar=float(threshold))
    mode = modes[0]
    value = options[mode]
    if mode in ("at_least", "at_most"):
        fraction = _number(value, mode)
        if not 0.0 < fraction < 1.0:
            hint = " (for every run, use every_run=True)" if fraction == 1.0 else ""
            raise ValueError(
                f"{mode} must be a fraction strictly between 0 and 1, got {value!r}{hint}"
            )
        rate_mode: Mode = "at_least" if mode == "at_least" else "at_most"
        return Rule(
            rate_mode, CHECK if threshold is None else SCORE, confidence, fraction, threshold
        )
    if mode == "every_run":
        if value is not True:
            raise ValueError(f"every_run must be True (or left out), got {value!r}")
        return Rule("every_run", CHECK if threshold is None else SCORE, confidence, 0.0, threshold)
    if not is_runs(value):
        raise TypeError(
            f"better_than must be the control's runs, better_than=runs(control, max_runs=N), got "
            f"{type(value).__name__}"
        )
    if threshold is not None:
        raise TypeError(
            "better_than compares rates of a True/False claim; to compare mean scores use the "
            "min_score fixture with no threshold: min_score(runs(new), claim, better_than=runs(old))"
        )
    margin = _number(options.get("margin", 0.0), "margin")
    # A margin of scores is at most the scale's width; of rates, 1.
    limit = unit_to_score(1.0, difference=True) if kind == SCORE else 1.0
    if not -limit < margin < limit:
        unit = f"points of {MIN_SCORE}..{MAX_SCORE}" if kind == SCORE else "a difference of rates"
        raise ValueError(
            f"margin must lie strictly between -{limit:g} and {limit:g} ({unit}), got {margin!r}"
        )
    return Rule("better_than", kind, confidence, margin, None, value)
