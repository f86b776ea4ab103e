"""The deciders of claims over runs, one per rule behind ``Decider``: a rate (at_least, at_most),
a mean score, a comparison with a control, every run, and a rule decided on a referee's verdicts.

Each is fed its runs in run order and says when the rule is decided, how, and with what figures;
the statistics themselves are ``stats.py``'s pure functions.
"""

from __future__ import annotations

import hashlib
import json
import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ..checks import quote_claim
from ..scale import MIN_SCORE, score_to_unit, unit_to_score
from ..verdict import SCORE
from . import stats
from .result import Decision, RunsResult, RunVerdict
from .rule import Rule

if TYPE_CHECKING:
    from ..verdict import Verdict

__all__ = ["Decider", "Figures", "JudgeRun", "RefereeWarning", "decider_for", "referee_seed"]

# One run's target judged: (run number, target, model); model None is the run's judge.
JudgeRun = Callable[[int, Any, str | None], "Verdict"]


class RefereeWarning(UserWarning):
    """A referee that costs more than judging every run with the referee alone would."""


@dataclass(frozen=True)
class Figures:
    """What the runs so far show: the rate or mean (or the difference of a comparison), its
    interval, and the control's rate or mean."""

    estimate: float = math.nan
    lower: float = math.nan
    upper: float = math.nan
    control: float | None = None


class Decider(Protocol):
    """The sequential rule of one claim over runs, fed one run at a time in run order."""

    count: int
    decision: Decision | None
    decided_by: str

    def judge(self, run: int, targets: Sequence[Any], judge: JudgeRun) -> tuple[Verdict, ...]:
        """A run's verdicts, asked on a worker thread as soon as the run is simulated."""
        ...

    def take(
        self, run: int, verdicts: tuple[Verdict, ...], referee: Callable[[int], Verdict]
    ) -> RunVerdict:
        """The next run in order (``referee``: its verdict on a run, when the rule needs one)."""
        ...

    def finish(self, result: RunsResult) -> None:
        """The decision (or inconclusive), its reasons and its figures, into ``result``."""
        ...


def decider_for(rule: Rule, min_runs: int, max_runs: int, seed: str = "") -> Decider:
    """The decider of ``rule`` (``seed``: the claim's referee draws, ``referee_seed``)."""
    if rule.referee is not None:
        return Refereed(rule, min_runs, max_runs, seed)
    kinds: dict[str, type[_Sequential]] = {
        "at_least": Rate,
        "at_most": Rate,
        "mean": Mean,
        "better_than": Comparison,
        "every_run": EveryRun,
    }
    return kinds[rule.mode](rule, min_runs, max_runs)


class _Sequential:
    """What every decider shares: the runs taken, the decision and its reasons, the advice."""

    # What the advice offers to move, besides the runs; whose value is decided, and how.
    moved = "a bar"
    whose = "the true value"
    process = "betting confidence sequence (Waudby-Smith & Ramdas), anytime-valid"

    def __init__(self, rule: Rule, min_runs: int, max_runs: int) -> None:
        self.rule = rule
        self.min_runs = min_runs
        self.max_runs = max_runs
        self.decision: Decision | None = None
        self.decided_by = ""
        self.held = 0
        self.count = 0
        self.values: list[float] = []
        # The side of the bar that passes the claim.
        self.good = "below" if rule.mode == "at_most" else "above"

    def judge(self, run: int, targets: Sequence[Any], judge: JudgeRun) -> tuple[Verdict, ...]:
        return tuple(judge(run, item, None) for item in targets)

    def take(
        self, run: int, verdicts: tuple[Verdict, ...], referee: Callable[[int], Verdict]
    ) -> RunVerdict:
        verdict = verdicts[0]
        held = self.rule.held(verdict)
        self.add(self.rule.unit(verdict, held), held)
        return RunVerdict(run, verdict, held)

    def add(self, value: float, held: bool) -> None:
        """One run: its value in [0, 1] and whether the claim held in it."""
        self.count += 1
        self.held += held
        self.values.append(value)
        self._decide(held)

    def _decide(self, held: bool) -> None:
        """Decide, if the runs so far do, after a run that ``held`` or not."""
        raise NotImplementedError

    def _settle(self, direction: stats.Direction | None) -> None:
        """Decide on the side the evidence reached, once min_runs runs are in."""
        if direction is None or self.count < self.min_runs:
            return
        self.decision = "pass" if direction == self.good else "fail"
        self.decided_by = (
            f"after {self.count} runs the evidence that {self.whose} is {direction} the bar "
            f"reached 1/alpha = {1 / self.rule.alpha:.0f} ({self.process})"
        )

    def figures(self) -> Figures:
        """The figures so far; the intervals are the bars neither one-sided test rejects, so at
        least 1 - 2 alpha two-sided."""
        return Figures() if self.count == 0 else self._figures()

    def _figures(self) -> Figures:
        raise NotImplementedError

    def runs_to_decide(self) -> int | None:
        """How many runs would decide, if the rest looked like the runs so far (up to 20 times
        as many as now); None: more than that."""
        raise NotImplementedError

    def advice(self) -> str:
        """What would decide an undecided claim: more runs, or another bar."""
        if self.count == 0:
            return ""
        more = self.runs_to_decide()
        figures = self.figures()
        runs_part = (
            f"about {more} runs if the rest look like these (max_runs={more})"
            if more
            else f"far more than {20 * self.count} runs at this estimate"
        )
        bars = f"or {self.moved} outside the interval [{figures.lower:.2f}, {figures.upper:.2f}]"
        return f"{runs_part}, {bars}"

    def finish(self, result: RunsResult) -> None:
        figures = self.figures()
        result.estimate, result.lower, result.upper = figures.estimate, figures.lower, figures.upper
        result.control_estimate = figures.control
        if self.decision is None:
            result.decision = "inconclusive"
            result.decided_by = (
                f"undecided after {self.count} runs: the evidence reached 1/alpha on neither "
                "side of the bar (inconclusive counts as a failure)"
            )
            result.advice = self.advice()
        else:
            result.decision = self.decision
            result.decided_by = self.decided_by


class Rate(_Sequential):
    """``at_least=p`` or ``at_most=q``: the rate of runs that hold, by a binomial mixture
    likelihood ratio."""

    process = "binomial mixture likelihood ratio (Robbins), anytime-valid"

    def _decide(self, held: bool) -> None:
        self._settle(stats.rate_decision(self.held, self.count, self.rule.bar, self.rule.alpha))

    def _figures(self) -> Figures:
        lower, upper = stats.rate_interval(self.held, self.count, self.rule.alpha)
        return Figures(self.held / self.count, lower, upper)

    def runs_to_decide(self) -> int | None:
        n, rule = self.count, self.rule
        return stats.rate_runs_to_decide(self.held / n, n + 1, 20 * n, rule.bar, rule.alpha)


class EveryRun(Rate):
    """``every_run=True`` (and min_score 9): fails at the first run that does not hold, passes
    when every run up to max_runs held; no statistics."""

    def _decide(self, held: bool) -> None:
        n = self.count
        if not held:
            self.decision = "fail"
            self.decided_by = f"run {n - 1} did not hold (every run must)"
        elif n >= self.max_runs:
            self.decision = "pass"
            self.decided_by = f"all {n} runs held"

    def _figures(self) -> Figures:
        if self.held == self.count:
            return Figures(1.0, stats.every_run_lower_bound(self.count, self.rule.alpha), 1.0)
        return super()._figures()

    def advice(self) -> str:
        return ""  # one run against it decides; only more runs pass it


class _Betting(_Sequential):
    """What the betting deciders share: each run's input to a betting test (``self.inputs``),
    fed in order, and the advice's replay of those inputs into a fresh test."""

    def __init__(self, rule: Rule, min_runs: int, max_runs: int) -> None:
        super().__init__(rule, min_runs, max_runs)
        self.test = self._test()
        self.inputs: list[tuple[Any, ...]] = []

    def _test(self) -> stats.BettingTest | stats.RefereeTest:
        """A fresh betting test of this rule."""
        raise NotImplementedError

    def _feed(self, *test_input: Any) -> None:
        """Feed one run's input to the test (before ``add``, which decides)."""
        self.inputs.append(test_input)
        self.test.add(*test_input)

    def _decide(self, held: bool) -> None:
        self._settle(self.test.decide())

    def runs_to_decide(self) -> int | None:
        """Feed the inputs so far cyclically to a fresh test until it decides past them (up to
        20 times as many); the total fed, or None."""
        test, n = self._test(), len(self.inputs)
        for total in range(1, 20 * n + 1):
            test.add(*self.inputs[(total - 1) % n])
            if total > n and test.decide() is not None:
                return total
        return None


class Mean(_Betting):
    """``min_score`` over runs: the mean score, by a betting confidence sequence on
    each score's place on the scale (``scale.score_to_unit``)."""

    def _test(self) -> stats.BettingTest:
        return stats.BettingTest(score_to_unit(self.rule.bar), self.rule.alpha)

    def _decide(self, held: bool) -> None:
        if self.rule.bar > MIN_SCORE:
            self._feed(self.values[-1])
            super()._decide(held)
        elif self.count >= self.min_runs:
            self.decision, self.decided_by = "pass", f"every mean score is at least {MIN_SCORE}"

    def _figures(self) -> Figures:
        lower, upper = stats.betting_interval(self.values, self.rule.alpha)
        mean = sum(self.values) / self.count
        return Figures(unit_to_score(mean), unit_to_score(lower), unit_to_score(upper))


class Comparison(_Betting):
    """``better_than=runs(control)``: run i of each side paired, the betting rule on the
    differences of their rates (1/0) or scores (``scale.score_to_unit``)."""

    moved = "a margin"

    def __init__(self, rule: Rule, min_runs: int, max_runs: int) -> None:
        super().__init__(rule, min_runs, max_runs)
        self.control_values: list[float] = []

    def _test(self) -> stats.BettingTest:
        margin = self.rule.bar
        if self.rule.kind == SCORE:
            margin = score_to_unit(margin, difference=True)
        return stats.BettingTest(stats.paired_bar(margin), self.rule.alpha)

    def take(
        self, run: int, verdicts: tuple[Verdict, ...], referee: Callable[[int], Verdict]
    ) -> RunVerdict:
        verdict, control = verdicts
        held = self.rule.held(verdict)
        control_held = self.rule.held(control)
        self.add_pair(self.rule.unit(verdict, held), held, self.rule.unit(control, control_held))
        return RunVerdict(run, verdict, held, control, control_held)

    def add_pair(self, value: float, held: bool, control: float) -> None:
        """One pair of runs: the claim's value and whether it held, the control's value."""
        self.control_values.append(control)
        self._feed(stats.paired_value(value, control))
        self.add(value, held)

    def _figures(self) -> Figures:
        n, rule = self.count, self.rule

        def scaled(unit: float, difference: bool = False) -> float:
            """A rate as it is; a score's unit back on the scale (a difference: only scaled)."""
            return unit_to_score(unit, difference=difference) if rule.kind == SCORE else unit

        low, high = stats.betting_interval([pair for (pair,) in self.inputs], rule.alpha)
        return Figures(
            scaled(sum(self.values) / n),
            scaled(2 * low - 1, difference=True),
            scaled(2 * high - 1, difference=True),
            scaled(sum(self.control_values) / n),
        )


class Refereed(_Betting):
    """A rate or mean score decided on a referee's verdicts: the main judge judges every run,
    the referee a random share drawn from the claim's ``seed`` (stats.py, "A referee")."""

    test: stats.RefereeTest
    whose = "the referee's true value"
    process = (
        "referee-corrected betting confidence sequence, anytime-valid whatever the main "
        "judge's errors"
    )

    def __init__(self, rule: Rule, min_runs: int, max_runs: int, seed: str) -> None:
        super().__init__(rule, min_runs, max_runs)
        assert rule.referee is not None
        self.referee = rule.referee
        self.seed = seed

    def _test(self) -> stats.RefereeTest:
        bar = score_to_unit(self.rule.bar) if self.rule.mode == "mean" else self.rule.bar
        return stats.RefereeTest(bar, self.rule.alpha, floor=self.rule.referee_fraction)

    def fraction(self) -> float:
        """The next run's chance of going to the referee (from earlier runs only)."""
        return self.test.fraction()

    def _drawn(self, run: int, main: Verdict, chance: float) -> bool:
        # From the claim's seed and the key of the run's main request: a rerun of the same
        # simulation draws the same runs and asks the referee nothing new.
        return stats.referee_draw(self.seed, run, main.key) < chance

    def judge(self, run: int, targets: Sequence[Any], judge: JudgeRun) -> tuple[Verdict, ...]:
        verdicts = super().judge(run, targets, judge)
        if self._drawn(run, verdicts[0], self.rule.referee_fraction):
            # Drawn whatever the fraction turns out to be (it is never below the floor): the
            # referee's verdict is asked now, alongside the main judge's.
            return (*verdicts, judge(run, targets[0], self.referee))
        return verdicts

    def take(
        self, run: int, verdicts: tuple[Verdict, ...], referee: Callable[[int], Verdict]
    ) -> RunVerdict:
        verdict = verdicts[0]
        held = self.rule.held(verdict)
        # The run's chance is fixed from earlier runs only, before its referee verdict is read;
        # a drawn run is always judged by the referee (an error there is the claim's error).
        p = self.fraction()
        checked: Verdict | None = None
        checked_held: bool | None = None
        checked_value: float | None = None
        if self._drawn(run, verdict, p):
            checked = verdicts[1] if len(verdicts) > 1 else referee(run)
            checked_held = self.rule.held(checked)
            checked_value = self.rule.unit(checked, checked_held)
        self.add_refereed(self.rule.unit(verdict, held), held, checked_value, p)
        return RunVerdict(run, verdict, held, None, None, checked, checked_held, p)

    def add_refereed(self, value: float, held: bool, referee: float | None, p: float) -> None:
        """One run: its main value, the referee's (None: not drawn), its chance of a draw."""
        self._feed(value, referee, p)
        self.add(value, held)

    def _figures(self) -> Figures:
        rule = self.rule
        lower, upper = stats.betting_interval(self.test.values, rule.alpha, self.test.fractions)
        estimate = min(1.0, max(0.0, self.test.mean))
        if rule.mode == "mean":
            return Figures(unit_to_score(estimate), unit_to_score(lower), unit_to_score(upper))
        return Figures(estimate, lower, upper)

    def finish(self, result: RunsResult) -> None:
        self._warn_if_dear(result)
        super().finish(result)

    def _warn_if_dear(self, result: RunsResult) -> None:
        """Warn when, at the agreement seen, the referee alone would have judged for less."""
        test = self.test
        if test.checked < 10:
            return
        main = [run.verdict.cost_usd for run in result.runs if run.verdict.cost_usd]
        checked = [
            run.referee.cost_usd for run in result.runs if run.referee and run.referee.cost_usd
        ]
        price = (
            (sum(main) / len(main)) / (sum(checked) / len(checked))
            if main and checked
            else stats.MAIN_PRICE_RATIO
        )
        ratio = test.cost_ratio(price)
        if ratio > 1.0:
            agreement = test.agreed / test.checked
            warnings.warn(
                RefereeWarning(
                    f"claim {quote_claim(result.claim)} over runs: the main judge agreed with the "
                    f"referee {self.referee} on {agreement:.0%} of {test.checked} runs; at that "
                    f"agreement judging with the referee alone would cost about {1 / ratio:.0%} "
                    "of this (give the referee as --prop-model, or a better main judge)"
                ),
                stacklevel=2,
            )


def referee_seed(claim: str, rule: Rule, model: str, options: Mapping[str, Any]) -> str:
    """The seed of a claim's referee draws: a hash of what names the claim (its text, rule,
    judges and options). Each run's draw adds the run's own content (``stats.referee_draw``)."""
    material = {
        "claim": claim,
        "rule": [rule.mode, rule.kind, rule.bar, rule.threshold, rule.confidence],
        "referee": [rule.referee, rule.referee_fraction],
        "model": model,
        "options": sorted((name, repr(value)) for name, value in options.items()),
    }
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()
