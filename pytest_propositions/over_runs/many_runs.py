"""Claims over many runs: the ``runs(...)`` target, its rules (at_least, at_most, mean score,
better_than, every_run), running and judging the simulations, and the decision with its figures.

The statistics are in ``runs/stats.py`` (pure functions). Here: simulations run one at a time by
default (simulation libraries keep global state), in the calling thread, while finished runs are
judged on worker threads; runs are consumed in order, so the decision is a pure function of the
run verdicts, and a rerun with cached verdicts reaches the same decision without a judge call.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import math
import threading
import warnings
from collections.abc import Callable, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ..checks import quote_claim, terminal_text
from ..claims.targets import as_target_list
from ..errors import BudgetExceeded
from ..scale import MAX_SCORE, MIN_SCORE
from .keywords import RUNS_OPTION_NAMES, is_runs

if TYPE_CHECKING:
    from ..runtime import Runtime
    from ..verdict import Kind, Verdict

__all__ = ["RUNS_OPTION_NAMES", "RefereeWarning", "Runs", "RunsResult", "runs"]


class RefereeWarning(UserWarning):
    """A referee that costs more than judging every run with the referee alone would."""


# How many runs of a failing claim the report quotes, with the judge's justification.
QUOTED_RUNS = 3


class Runs:
    """Many runs of a simulation, as one target: ``simulate(run)`` builds and runs run number
    ``run`` (0, 1, 2, ...) and returns what a claim is about (anything a claim accepts).

    A ``Runs`` object keeps the targets it simulated, so several claims about it share them.
    """

    def __init__(
        self,
        simulate: Callable[[int], Any],
        *,
        max_runs: int,
        min_runs: int = 1,
        parallel: int = 1,
    ) -> None:
        __tracebackhide__ = True
        if not callable(simulate):
            raise TypeError(
                f"runs(simulate, ...): simulate must be a function of the run number (0, 1, 2, "
                f"...) returning a target, got {type(simulate).__name__}"
            )
        for name, value in (("max_runs", max_runs), ("min_runs", min_runs), ("parallel", parallel)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(
                    f"runs(): {name} must be a whole number of at least 1, got {value!r}"
                )
        if min_runs > max_runs:
            raise ValueError(f"runs(): min_runs ({min_runs}) is more than max_runs ({max_runs})")
        self.simulate = simulate
        self.max_runs = max_runs
        self.min_runs = min_runs
        self.parallel = parallel
        self._made: dict[int, Future[Any]] = {}
        self._lock = threading.Lock()
        # Simulations at once, over every claim about this object (their threads included).
        self._slots = threading.Semaphore(parallel)

    def __repr__(self) -> str:
        name = getattr(self.simulate, "__name__", type(self.simulate).__name__)
        return f"runs({name}, max_runs={self.max_runs}, min_runs={self.min_runs}, parallel={self.parallel})"

    def target(self, run: int) -> Any:
        """Run number ``run``'s target: simulated once, on first need, and kept."""
        __tracebackhide__ = True
        with self._lock:
            made = self._made.get(run)
            owner = made is None
            if made is None:
                made = self._made[run] = Future()
        if not owner:
            return made.result()
        try:
            with self._slots:
                value = self.simulate(run)
            try:
                as_target_list(value)
            except (TypeError, ValueError) as error:
                raise type(error)(
                    f"runs(): simulate({run}) returned something that is not a target: {error}"
                ) from None
        except BaseException as error:
            with self._lock:
                del self._made[run]  # a failed simulation is not kept: asking again retries it
            made.set_exception(error)
            raise
        made.set_result(value)
        return value


def runs(
    simulate: Callable[[int], Any], *, max_runs: int, min_runs: int = 1, parallel: int = 1
) -> Runs:
    """Many runs of ``simulate`` as one target, for claims with ``at_least=``, ``at_most=``,
    ``min_score``, ``better_than=`` or ``every_run=True``. ``parallel=K`` runs K simulations in
    threads (opt-in: simulation libraries often keep global state)."""
    __tracebackhide__ = True
    return Runs(simulate, max_runs=max_runs, min_runs=min_runs, parallel=parallel)


# -- the rule ---------------------------------------------------------------------------------------

Mode = Literal["at_least", "at_most", "mean", "better_than", "every_run"]


@dataclass(frozen=True)
class Rule:
    """What a claim over runs asserts, checked."""

    mode: Mode
    kind: Literal["check", "score"]
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
        what = "mean score" if self.kind == "score" else "rate"
        unit = " points" if self.kind == "score" else ""
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
    threshold: int | None,
    default_confidence: float | None,
    where: str,
    *,
    kind: Literal["check", "score"] | None = None,
    holds: bool = True,
) -> Rule | None:
    """The rule of a claim over runs, checked where the claim is made; None for an ordinary claim.

    ``threshold`` is the claim's score bar (None for a True/False claim); ``kind="score"`` with
    no threshold is ``min_score``'s comparison of mean scores with ``better_than``. ``holds``
    False (a claim that must not hold, or a ``max_score``) has no meaning over runs: the rule
    ``at_most=q`` says how rarely a claim may hold. ``default_confidence`` None: the run's.
    A claim that could not pass within its ``max_runs``, even if every run went its way, is
    refused here, before any run.
    """
    __tracebackhide__ = True
    try:
        if not holds and is_runs(target):
            raise TypeError(
                "holds=False and max_score do not apply to claims over many runs; to say a "
                "claim must be rare, write at_most=q (it holds in at most a fraction q of runs)"
            )
        if not is_runs(target):
            return _check_rule(target, rule_options, threshold, 0.95, kind)
        from ..runtime import current

        settings = current().settings
        confidence = settings.confidence if default_confidence is None else default_confidence
        rule = _check_rule(target, rule_options, threshold, confidence, kind)
        assert rule is not None
        rule = _with_referee(rule, rule_options, settings.referee_model, settings.referee_fraction)
        _check_reachable(rule, target)
        return rule
    except (TypeError, ValueError) as error:
        raise type(error)(f"{where}: {error}") from None


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
    need = f"max_runs={least} or more" if least is not None else "a lower bar or confidence"
    raise ValueError(
        f"this claim cannot pass within max_runs={limit}: even if every run went its way, "
        f"{rule.describe()} at confidence {rule.confidence:g}"
        + (f" with referee {rule.referee}" if rule.referee else "")
        + f" needs {least if least is not None else 'more than a million'} runs; give {need}"
    )


def _least_runs(rule: Rule) -> int | None:
    if rule.mode == "every_run" or (rule.mode == "mean" and rule.bar <= MIN_SCORE):
        return 1
    if rule.mode in ("at_least", "at_most"):
        direction: Literal["above", "below"] = "above" if rule.mode == "at_least" else "below"
        kind: Literal["rate", "mean"] = "rate"
        bar = rule.bar
    elif rule.mode == "mean":
        direction, kind, bar = "above", "mean", rule.bar / MAX_SCORE
    else:
        from .stats import paired_bar

        margin = rule.bar / MAX_SCORE if rule.kind == "score" else rule.bar
        direction, kind, bar = "above", "mean", paired_bar(margin)
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
    from . import stats

    stats.require_scipy()
    return stats.least_runs_to_pass(kind, bar, alpha, direction, referee=referee)


def _check_rule(
    target: Any,
    options: Mapping[str, Any],
    threshold: int | None,
    default_confidence: float,
    kind: Literal["check", "score"] | None,
) -> Rule | None:
    __tracebackhide__ = True
    if not is_runs(target):
        if options:
            raise TypeError(
                f"{', '.join(f'{name}=' for name in sorted(options))} apply to claims over many "
                "runs: pass runs(simulate, max_runs=N) as the target"
            )
        return None
    kind = kind or ("check" if threshold is None else "score")
    confidence = check_confidence(options.get("confidence", default_confidence))
    modes = [
        name for name in ("at_least", "at_most", "better_than", "every_run") if name in options
    ]
    if len(modes) > 1:
        raise TypeError(
            f"give one of at_least=, at_most=, better_than=, every_run=; got {', '.join(modes)}"
        )
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
            return Rule("every_run", "score", confidence, 0.0, MAX_SCORE, from_mean=True)
        return Rule("mean", "score", confidence, bar=float(threshold))
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
            rate_mode, "check" if threshold is None else "score", confidence, fraction, threshold
        )
    if mode == "every_run":
        if value is not True:
            raise ValueError(f"every_run must be True (or left out), got {value!r}")
        return Rule(
            "every_run", "check" if threshold is None else "score", confidence, 0.0, threshold
        )
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
    limit = float(MAX_SCORE) if kind == "score" else 1.0
    if not -limit < margin < limit:
        unit = f"points of 0..{MAX_SCORE}" if kind == "score" else "a difference of rates"
        raise ValueError(
            f"margin must lie strictly between -{limit:g} and {limit:g} ({unit}), got {margin!r}"
        )
    return Rule("better_than", kind, confidence, margin, None, value)


# -- the decision -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunVerdict:
    """One run's verdict (and, for a comparison, the control's run of the same number)."""

    run: int
    verdict: Verdict
    held: bool
    control: Verdict | None = None
    control_held: bool | None = None
    # With a referee: its verdict on this run when the run was drawn (None otherwise), and the
    # chance the run had of being drawn.
    referee: Verdict | None = None
    referee_held: bool | None = None
    fraction: float | None = None


Decision = Literal["pass", "fail", "inconclusive"]


@dataclass
class RunsResult:
    """A claim over runs, decided: the figures every report shows."""

    claim: str
    rule: Rule
    max_runs: int
    decision: Decision = "inconclusive"
    decided_by: str = ""
    runs: list[RunVerdict] = field(default_factory=list)
    estimate: float = math.nan
    lower: float = math.nan
    upper: float = math.nan
    control_estimate: float | None = None
    advice: str = ""
    stopped: str = ""

    @property
    def passed(self) -> bool:
        return self.decision == "pass"

    @property
    def runs_made(self) -> int:
        return len(self.runs)

    @property
    def runs_held(self) -> int:
        return sum(1 for run in self.runs if run.held)

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON data: what the reports and xdist carry."""
        rule = self.rule
        data: dict[str, Any] = {
            "claim": self.claim,
            "rule": rule.mode,
            "rule_text": rule.describe(),
            "kind": rule.kind,
            "bar": rule.bar,
            "threshold": rule.threshold,
            "confidence": rule.confidence,
            "decision": self.decision,
            "decided_by": self.decided_by,
            "max_runs": self.max_runs,
            "runs_made": self.runs_made,
            "runs_held": self.runs_held,
            "estimate": _rounded(self.estimate),
            "lower": _rounded(self.lower),
            "upper": _rounded(self.upper),
            "advice": self.advice,
            "stopped": self.stopped,
            "runs": [
                {
                    "run": run.run,
                    "held": run.held,
                    "verdict": run.verdict.as_dict(),
                    **(
                        {"control_held": run.control_held, "control": run.control.as_dict()}
                        if run.control is not None
                        else {}
                    ),
                    **(
                        {"referee_held": run.referee_held, "referee": run.referee.as_dict()}
                        if run.referee is not None
                        else {}
                    ),
                }
                for run in self.runs
            ],
        }
        data["main_judge"] = self.runs[0].verdict.model if self.runs else ""
        data["decision_about"] = "referee" if rule.referee is not None else "main judge"
        if rule.referee is not None:
            checked = [run for run in self.runs if run.referee is not None]
            data["referee"] = rule.referee
            data["referee_runs"] = len(checked)
            # Agreement on what the decision reads: held or not for a rate, the score for a mean.
            same = [
                run.referee_held == run.held
                if rule.mode != "mean"
                else run.referee is not None and run.referee.value == run.verdict.value
                for run in checked
            ]
            data["agreement"] = _rounded(sum(same) / len(same)) if same else None
        if self.control_estimate is not None:
            data["control_estimate"] = _rounded(self.control_estimate)
        return data

    def text(self) -> str:
        return runs_text(self.as_dict())


def _rounded(value: float) -> float | None:
    return None if math.isnan(value) else round(value, 4)


def _figure(data: Mapping[str, Any], name: str) -> str:
    value = data.get(name)
    if value is None:
        return "-"
    return f"{value:.2f}"


def interval_confidence(mode: str, confidence: float) -> float:
    """The confidence an interval of the report has at least: the bars that neither one-sided
    test (each wrong at most alpha) rejects, so at least ``1 - 2 alpha`` (a bound, like the
    tests' error rates, which are often well under alpha); every_run's one-sided bound
    [alpha ** (1/k), 1] keeps ``1 - alpha``."""
    return confidence if mode == "every_run" else 1.0 - 2.0 * (1.0 - confidence)


def figures_line(data: Mapping[str, Any]) -> str:
    """The figures in one line: runs made, runs held, the rate or mean, its interval."""
    made, held = data["runs_made"], data["runs_held"]
    confidence = f"{interval_confidence(data['rule'], data['confidence']) * 100:.4g}%"
    if data["rule"] == "mean":
        what = f"mean score {_figure(data, 'estimate')}/{MAX_SCORE}"
    elif data["rule"] == "better_than":
        what = (
            f"{'mean score' if data['kind'] == 'score' else 'rate'} {_figure(data, 'estimate')} "
            f"vs control {_figure(data, 'control_estimate')}, difference"
        )
    else:
        what = f"rate {_figure(data, 'estimate')}"
    interval = f"[{_figure(data, 'lower')}, {_figure(data, 'upper')}]"
    if data["rule"] == "better_than":
        return f"{made} pairs of runs; {what} in {interval} at {confidence}"
    if data.get("referee"):
        agreement = data.get("agreement")
        agreed = "-" if agreement is None else f"{agreement * 100:.0f}%"
        return (
            f"{held} of {made} runs held for the main judge; referee {data['referee']} judged "
            f"{data['referee_runs']} of them (agreeing on {agreed}); the referee's {what}, "
            f"{confidence} interval {interval}"
        )
    return f"{held} of {made} runs held; {what}, {confidence} interval {interval}"


def decision_about(data: Mapping[str, Any]) -> str:
    """Whose verdicts the decision is about: the referee's (whatever the main judge's errors),
    or the main judge's (its errors go into the decision unaccounted for)."""
    main = f"the main judge {data['main_judge']}" if data.get("main_judge") else "the main judge"
    if data.get("referee"):
        return (
            f"the referee {data['referee']}'s verdicts ({main}'s, corrected on the runs the "
            "referee judged)"
        )
    return f"{main}'s verdicts (no referee: its errors are not accounted for)"


def runs_text(data: Mapping[str, Any]) -> str:
    """The report of a claim over runs: decision, figures, rule, and the runs against it."""
    label = {"pass": "PASSED", "fail": "FAILED", "inconclusive": "INCONCLUSIVE"}[data["decision"]]
    lines = [
        f"{label} over runs: {terminal_text(data['claim'])}",
        f"  rule: {data['rule_text']} (confidence {data['confidence'] * 100:g}%, max_runs {data['max_runs']})",
        f"  figures: {figures_line(data)}",
        f"  decided by: {data['decided_by']}",
        f"  decision about: {decision_about(data)}",
    ]
    if data.get("stopped"):
        lines.append(f"  stopped: {data['stopped']}")
    if data.get("advice"):
        lines.append(f"  to decide it: {data['advice']}")
    against = [run for run in data["runs"] if not run["held"]]
    if data["rule"] == "at_most":
        against = [run for run in data["runs"] if run["held"]]
    if data["decision"] != "pass" and against and data["rule"] != "better_than":
        lines.append(
            f"  runs against the claim ({len(against)}; the first {min(len(against), QUOTED_RUNS)}):"
        )
        for run in against[:QUOTED_RUNS]:
            verdict = run["verdict"]
            why = " ".join(terminal_text(str(verdict.get("justification", ""))).split())
            why = why or "(none given)"
            lines.append(f"    run {run['run']}: {verdict['value']}: {why}")
    return "\n".join(lines)


def one_line(result: RunsResult) -> str:
    """The exception's message."""
    claim = quote_claim(result.claim)
    word = {"pass": "passed", "fail": "failed", "inconclusive": "is inconclusive"}[result.decision]
    return f"claim {claim} over runs {word}: {result.rule.describe()}; {figures_line(result.as_dict())}"


def _held(verdict: Verdict, threshold: int | None) -> bool:
    if verdict.kind == "check":
        return verdict.value is True
    return threshold is None or int(verdict.value) >= threshold


def _unit(verdict: Verdict, held: bool, rule: Rule) -> float:
    """A run's value in [0, 1]: 1/0 for a rate, score/9 for a mean."""
    if rule.kind == "score" and rule.threshold is None:
        return (int(verdict.value) - MIN_SCORE) / (MAX_SCORE - MIN_SCORE)
    return 1.0 if held else 0.0


class _Decider:
    """The sequential rule, fed one run at a time in run order."""

    def __init__(self, rule: Rule, min_runs: int, max_runs: int) -> None:
        from . import stats

        stats.require_scipy()
        self.stats = stats
        self.rule = rule
        self.min_runs = min_runs
        self.max_runs = max_runs
        self.decision: Decision | None = None
        self.decided_by = ""
        self.held = 0
        self.count = 0
        self.values: list[float] = []
        self.control_values: list[float] = []
        self.betting: Any = None
        self.referee: Any = None
        # With a referee: each run's (main value, referee value or None, fraction), in order.
        self.triples: list[tuple[float, float | None, float]] = []
        if rule.referee is not None:
            bar = rule.bar / MAX_SCORE if rule.mode == "mean" else rule.bar
            self.referee = stats.RefereeTest(bar, rule.alpha, floor=rule.referee_fraction)
        elif rule.mode == "mean":
            self.betting = stats.BettingTest(rule.bar / MAX_SCORE, rule.alpha)
        elif rule.mode == "better_than":
            margin = rule.bar / MAX_SCORE if rule.kind == "score" else rule.bar
            self.betting = stats.BettingTest(stats.paired_bar(margin), rule.alpha)

    def add_refereed(self, value: float, held: bool, referee: float | None, p: float) -> None:
        """One run with a referee: its main value, the referee's (None: not drawn), its chance."""
        self.count += 1
        self.held += held
        self.values.append(value)
        self.triples.append((value, referee, p))
        self.referee.add(value, referee, p)
        direction = self.referee.decide()
        if direction is None or self.count < self.min_runs:
            return
        good = "below" if self.rule.mode == "at_most" else "above"
        self.decision = "pass" if direction == good else "fail"
        self.decided_by = (
            f"after {self.count} runs the evidence that the referee's true value is {direction} "
            f"the bar reached 1/alpha = {1 / self.rule.alpha:.0f} (referee-corrected betting "
            "confidence sequence, anytime-valid whatever the main judge's errors)"
        )

    def add(self, value: float, held: bool, control: float | None = None) -> None:
        rule, stats = self.rule, self.stats
        self.count += 1
        self.held += held
        self.values.append(value)
        if control is not None:
            self.control_values.append(control)
        n = self.count
        if rule.mode == "every_run":
            if not held:
                self.decision = "fail"
                self.decided_by = f"run {n - 1} did not hold (every run must)"
            elif n >= self.max_runs:
                self.decision = "pass"
                self.decided_by = f"all {n} runs held"
            return
        if rule.mode == "mean" and rule.bar <= MIN_SCORE:
            if n >= self.min_runs:
                self.decision, self.decided_by = "pass", "every mean score is at least 0"
            return
        if self.betting is not None:
            self.betting.add(value if control is None else stats.paired_value(value, control))
            direction = self.betting.decide()
            process = "betting confidence sequence (Waudby-Smith & Ramdas), anytime-valid"
        else:
            direction = stats.rate_decision(self.held, n, rule.bar, rule.alpha)
            process = "binomial mixture likelihood ratio (Robbins), anytime-valid"
        if direction is None or n < self.min_runs:
            return
        good = "below" if rule.mode == "at_most" else "above"
        self.decision = "pass" if direction == good else "fail"
        side = "above" if direction == "above" else "below"
        self.decided_by = (
            f"after {n} runs the evidence that the true value is {side} the bar reached "
            f"1/alpha = {1 / rule.alpha:.0f} ({process})"
        )

    def figures(self) -> tuple[float, float, float, float | None]:
        """(estimate, lower, upper, control estimate)."""
        rule, stats, n = self.rule, self.stats, self.count
        if n == 0:
            return math.nan, math.nan, math.nan, None
        # Intervals: the bars neither one-sided test rejects, so at least 1 - 2 alpha two-sided.
        if self.referee is not None:
            scale = MAX_SCORE if rule.mode == "mean" else 1
            lower, upper = stats.referee_interval(
                self.referee.values, self.referee.fractions, rule.alpha
            )
            estimate = min(1.0, max(0.0, self.referee.mean))
            return estimate * scale, lower * scale, upper * scale, None
        if rule.mode in ("at_least", "at_most", "every_run"):
            estimate = self.held / n
            if rule.mode == "every_run" and self.held == n:
                return estimate, stats.every_run_lower_bound(n, rule.alpha), 1.0, None
            lower, upper = stats.rate_interval(self.held, n, rule.alpha)
            return estimate, lower, upper, None
        if rule.mode == "mean":
            lower, upper = stats.betting_interval(self.values, rule.alpha)
            scale = MAX_SCORE
            return sum(self.values) / n * scale, lower * scale, upper * scale, None
        scale = MAX_SCORE if rule.kind == "score" else 1
        pairs = [
            stats.paired_value(a, b) for a, b in zip(self.values, self.control_values, strict=True)
        ]
        low, high = stats.betting_interval(pairs, rule.alpha)
        return (
            sum(self.values) / n * scale,
            (2 * low - 1) * scale,
            (2 * high - 1) * scale,
            sum(self.control_values) / n * scale,
        )

    def advice(self) -> str:
        """What would decide an undecided claim: more runs, or another bar."""
        if self.rule.mode == "every_run" or self.count == 0:
            return ""
        more = self._runs_to_decide()
        _, lower, upper, _ = self.figures()
        runs_part = (
            f"about {more} runs if the rest look like these (max_runs={more})"
            if more
            else f"far more than {20 * self.count} runs at this estimate"
        )
        what = "a margin" if self.rule.mode == "better_than" else "a bar"
        bars = f"or {what} outside the interval [{lower:.2f}, {upper:.2f}]"
        return f"{runs_part}, {bars}"

    def _runs_to_decide(self) -> int | None:
        """Replay the observed runs cyclically until the rule decides (up to 20 times as many)."""
        rule, stats = self.rule, self.stats
        n = self.count
        limit = 20 * n
        if self.referee is not None:
            replay = stats.RefereeTest(self.referee.bar, rule.alpha, floor=self.referee.floor)
            for total in range(1, limit + 1):
                main, referee, p = self.triples[(total - 1) % n]
                replay.add(main, referee, p)
                if total > n and replay.decide() is not None:
                    return total
            return None
        if self.betting is None:
            found: int | None = stats.rate_runs_to_decide(
                self.held / n, n + 1, limit, rule.bar, rule.alpha
            )
            return found
        values = (
            self.values
            if not self.control_values
            else [
                stats.paired_value(a, b)
                for a, b in zip(self.values, self.control_values, strict=True)
            ]
        )
        test = stats.BettingTest(self.betting.bar, rule.alpha)
        for total in range(1, limit + 1):
            test.add(values[(total - 1) % n])
            if total > n and test.decide() is not None:
                return total
        return None


def judge_over_runs(
    runtime: Runtime,
    target: Runs,
    claim: str,
    rule: Rule,
    options: Mapping[str, Any],
) -> RunsResult:
    """Simulate and judge runs in order until the rule decides, or max_runs; the result.

    Simulations run in this thread (``parallel=1``) or in ``parallel`` threads, while finished
    runs are judged on worker threads; at most ``2 * parallel`` runs are ahead of the decision.
    Once decided, the runs up to ``2 * parallel - 1`` past it are always finished (the same ones
    whatever the timing), so a rerun from the cache starts no run the first did not judge. A
    judge error on a run the decision needs is raised (a ``BudgetExceeded`` says how far the
    runs got); a simulation that raises fails the claim.
    """
    __tracebackhide__ = True
    control = rule.control
    limit = target.max_runs if control is None else min(target.max_runs, control.max_runs)
    min_runs = min(target.min_runs, limit)
    result = RunsResult(claim, rule, limit)
    decider = _Decider(rule, min_runs, limit)
    test_id = runtime.current_test
    kind = rule.kind

    def judge_one(run: int, run_target: Any, model: str | None = None) -> Verdict:
        from ..claims.proposition import Proposition

        runtime.current_test = test_id
        proposition = Proposition(
            claim,
            run_target,
            include_personas=options.get("include_personas", False),
            first_n=options.get("first_n"),
            last_n=options.get("last_n"),
            double_check=options.get("double_check", False),
            use_reasoning_model=options.get("use_reasoning_model", False),
            precondition_function=options.get("precondition"),
        )
        samples = options.get("samples")
        return proposition.evaluate(
            kind,
            additional_context=options.get("additional_context"),
            claim_variables=options.get("claim_variables"),
            samples=runtime.settings.samples if samples is None else samples,
            runtime=runtime,
            model=model,
            noted_as=None,  # the claim over runs is noted once, with every run's verdict
            # Each run a verdict of its own: runs with equal transcripts are still separate
            # draws of the judge (a shared verdict would make them one draw, counted often).
            run_index=run,
        )

    seed = _referee_seed(runtime, claim, rule, options) if rule.referee is not None else ""

    def judge_unit(run: int, targets: tuple[Any, ...]) -> tuple[Verdict, ...]:
        verdicts = tuple(judge_one(run, item) for item in targets)
        if rule.referee is not None and _draw(seed, run, verdicts[0]) < rule.referee_fraction:
            # Drawn whatever the fraction turns out to be (it is never below the floor): the
            # referee's verdict is asked now, alongside the main judge's.
            return (*verdicts, judge_one(run, targets[0], rule.referee))
        return verdicts

    def referee_verdict(run: int) -> Verdict:
        return judge_one(run, target.target(run), rule.referee)

    def simulate_unit(run: int) -> tuple[Any, ...]:
        __tracebackhide__ = True
        first = target.target(run)
        return (first,) if control is None else (first, control.target(run))

    parallel = target.parallel if control is None else min(target.parallel, control.parallel)
    window = 2 * parallel
    workers = max(1, min(runtime.settings.concurrency, window))
    judging: dict[int, Future[tuple[Verdict, ...]]] = {}
    simulating: dict[int, Future[tuple[Any, ...]]] = {}
    judge_pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="prop-runs-judge")
    sim_pool = (
        ThreadPoolExecutor(max_workers=parallel, thread_name_prefix="prop-runs-sim")
        if parallel > 1
        else None
    )
    next_run = 0

    def judge_simulated() -> None:
        __tracebackhide__ = True
        for run in sorted(simulating):
            if simulating[run].done():
                judging[run] = judge_pool.submit(judge_unit, run, simulating.pop(run).result())

    def start(run: int) -> None:
        __tracebackhide__ = True
        if sim_pool is None:
            judging[run] = judge_pool.submit(judge_unit, run, simulate_unit(run))
        else:
            simulating[run] = sim_pool.submit(simulate_unit, run)

    try:
        while decider.decision is None and decider.count < limit:
            judge_simulated()
            consumed = decider.count
            if consumed in judging and judging[consumed].done():
                try:
                    verdicts = judging.pop(consumed).result()
                    _consume(result, decider, rule, consumed, verdicts, seed, referee_verdict)
                except BudgetExceeded as error:
                    _finish(result, decider)
                    raise BudgetExceeded(
                        f"claim {quote_claim(claim)} over runs stopped after {decider.count} runs, "
                        f"undecided ({figures_line(result.as_dict())}): {error}"
                    ) from None
                continue
            if next_run < limit and next_run - consumed < window:
                start(next_run)
                next_run += 1
                continue
            # Only what is still running: a later run judged first must not make this spin.
            pending = [f for f in (*simulating.values(), *judging.values()) if not f.done()]
            wait(pending, return_when=FIRST_COMPLETED)
        # Decided before max_runs: judge exactly the runs a rerun's look-ahead may start (up to
        # window - 1 past the decision), so a rerun from the cache asks the judge nothing new.
        last = min(decider.count + window - 1, limit)
        while next_run < last or simulating:
            judge_simulated()
            if next_run < last:
                start(next_run)
                next_run += 1
                continue
            wait(list(simulating.values()), return_when=FIRST_COMPLETED)
        # Their verdicts are not read: an error there is not the claim's (and is not cached).
        wait(list(judging.values()))
    finally:
        # On an error, runs not started are cancelled.
        judge_pool.shutdown(wait=True, cancel_futures=True)
        if sim_pool is not None:
            sim_pool.shutdown(wait=True, cancel_futures=True)
        runtime.current_test = test_id
    _finish(result, decider)
    return result


def _referee_seed(runtime: Runtime, claim: str, rule: Rule, options: Mapping[str, Any]) -> str:
    """The seed of a claim's referee draws: a hash of what names the claim (its text, rule,
    judges and options). Each run's draw adds the run's own content (``_draw``)."""
    material = {
        "claim": claim,
        "rule": [rule.mode, rule.kind, rule.bar, rule.threshold, rule.confidence],
        "referee": [rule.referee, rule.referee_fraction],
        "model": runtime.settings.judge_model(bool(options.get("use_reasoning_model"))),
        "options": sorted((name, repr(value)) for name, value in options.items()),
    }
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()


def _draw(seed: str, run: int, main: Verdict) -> float:
    """Run ``run``'s referee draw: from the claim's seed and the key of the run's main request,
    so a rerun of the same simulation draws the same runs and asks the referee nothing new,
    while a fresh one draws afresh."""
    from .stats import referee_draw

    return referee_draw(seed, run, main.key)


def _consume(
    result: RunsResult,
    decider: _Decider,
    rule: Rule,
    run: int,
    verdicts: tuple[Verdict, ...],
    seed: str = "",
    referee_verdict: Callable[[int], Verdict] | None = None,
) -> None:
    verdict = verdicts[0]
    held = _held(verdict, rule.threshold)
    if rule.referee is not None:
        # The run's chance is fixed from earlier runs only, before its referee verdict is read;
        # a drawn run is always judged by the referee (an error there is the claim's error).
        p = decider.referee.fraction()
        referee: Verdict | None = None
        if _draw(seed, run, verdict) < p:
            if len(verdicts) > 1:
                referee = verdicts[1]
            else:
                assert referee_verdict is not None
                referee = referee_verdict(run)
        referee_held = None if referee is None else _held(referee, rule.threshold)
        result.runs.append(RunVerdict(run, verdict, held, None, None, referee, referee_held, p))
        decider.add_refereed(
            _unit(verdict, held, rule),
            held,
            None if referee is None or referee_held is None else _unit(referee, referee_held, rule),
            p,
        )
        return
    if len(verdicts) == 1:
        result.runs.append(RunVerdict(run, verdict, held))
        decider.add(_unit(verdict, held, rule), held)
        return
    control = verdicts[1]
    control_held = _held(control, rule.threshold)
    result.runs.append(RunVerdict(run, verdict, held, control, control_held))
    decider.add(_unit(verdict, held, rule), held, _unit(control, control_held, rule))


def _finish(result: RunsResult, decider: _Decider) -> None:
    _warn_if_dear(result, decider)
    estimate, lower, upper, control = decider.figures()
    result.estimate, result.lower, result.upper = estimate, lower, upper
    result.control_estimate = control
    if decider.decision is None:
        result.decision = "inconclusive"
        result.decided_by = (
            f"undecided after {decider.count} runs: the evidence reached 1/alpha on neither side "
            "of the bar (inconclusive counts as a failure)"
        )
        result.advice = decider.advice()
    else:
        result.decision = decider.decision
        result.decided_by = decider.decided_by


def _warn_if_dear(result: RunsResult, decider: _Decider) -> None:
    """Warn when, at the agreement seen, the referee alone would have judged for less."""
    test = decider.referee
    if test is None or test.checked < 10:
        return
    main = [run.verdict.cost_usd for run in result.runs if run.verdict.cost_usd]
    checked = [run.referee.cost_usd for run in result.runs if run.referee and run.referee.cost_usd]
    price = (
        (sum(main) / len(main)) / (sum(checked) / len(checked))
        if main and checked
        else decider.stats.MAIN_PRICE_RATIO
    )
    ratio = test.cost_ratio(price)
    if ratio > 1.0:
        agreement = test.agreed / test.checked
        warnings.warn(
            RefereeWarning(
                f"claim {quote_claim(result.claim)} over runs: the main judge agreed with the "
                f"referee {result.rule.referee} on {agreement:.0%} of {test.checked} runs; at that "
                f"agreement judging with the referee alone would cost about {1 / ratio:.0%} of "
                "this (give the referee as --prop-model, or a better main judge)"
            ),
            stacklevel=2,
        )


def summary_verdict(result: RunsResult) -> Verdict:
    """One verdict standing for the claim over runs, for the reports that list verdicts."""
    from ..verdict import Usage, Verdict

    verdicts = (
        [run.verdict for run in result.runs]
        + [run.control for run in result.runs if run.control is not None]
        + [run.referee for run in result.runs if run.referee is not None]
    )
    # A rate (or every_run) decision is a True/False verdict, even about scored runs; a mean
    # score's stands as the mean, rounded down.
    mean_like = result.rule.kind == "score" and result.rule.threshold is None
    kind: Kind = "score" if mean_like else "check"
    if not mean_like:
        value: bool | int = result.passed
    else:
        value = (
            0
            if math.isnan(result.estimate)
            else max(MIN_SCORE, min(MAX_SCORE, math.floor(result.estimate)))
        )
    costs = [v.cost_usd for v in verdicts if v.cost_usd is not None]
    return Verdict(
        kind=kind,
        claim=result.claim,
        value=value,
        justification=one_line(result),
        reasoning=result.text(),
        model=verdicts[0].model if verdicts else "",
        cached=bool(verdicts) and all(v.cached for v in verdicts),
        usage=Usage(
            prompt_tokens=sum(v.usage.prompt_tokens for v in verdicts),
            completion_tokens=sum(v.usage.completion_tokens for v in verdicts),
        ),
        cost_usd=sum(costs) if costs else None,
        judge_seconds=sum(v.judge_seconds for v in verdicts),
    )
