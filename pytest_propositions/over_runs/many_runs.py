"""Claims over many runs: the ``runs(...)`` target, its rules (at_least, at_most, mean score,
better_than, every_run), running and judging the simulations, and the decision with its figures.

The statistics are in ``runs/stats.py`` (pure functions). Here: simulations run one at a time by
default (simulation libraries keep global state), in the calling thread, while finished runs are
judged on worker threads; runs are consumed in order, so the decision is a pure function of the
run verdicts, and a rerun with cached verdicts reaches the same decision without a judge call.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ..checks import quote_claim, terminal_text
from ..claims.targets import as_target_list
from ..errors import BudgetExceeded
from ..scale import MAX_SCORE, MIN_SCORE

if TYPE_CHECKING:
    from ..runtime import Runtime
    from ..verdict import Kind, Verdict

__all__ = ["RUNS_OPTION_NAMES", "Runs", "RunsResult", "runs"]

# The keywords a claim over runs takes, besides the ordinary claim options.
RUNS_OPTION_NAMES = frozenset(
    {"at_least", "at_most", "better_than", "margin", "every_run", "confidence"}
)
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


def is_runs(target: Any) -> bool:
    return isinstance(target, Runs)


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

    @property
    def alpha(self) -> float:
        return 1.0 - self.confidence

    def describe(self) -> str:
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


def split_options(options: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the runs keywords, the ordinary claim options)."""
    rule = {name: value for name, value in options.items() if name in RUNS_OPTION_NAMES}
    rest = {name: value for name, value in options.items() if name not in RUNS_OPTION_NAMES}
    return rule, rest


def check_rule(
    target: Any,
    rule_options: Mapping[str, Any],
    threshold: int | None,
    default_confidence: float,
    where: str,
    *,
    kind: Literal["check", "score"] | None = None,
    holds: bool = True,
) -> Rule | None:
    """The rule of a claim over runs, checked where the claim is made; None for an ordinary claim.

    ``threshold`` is the claim's score bar (None for a True/False claim); ``kind="score"`` with
    no threshold is ``min_score``'s comparison of mean scores with ``better_than``. ``holds``
    False (a claim that must not hold, or a ``max_score``) has no meaning over runs: the rule
    ``at_most=q`` says how rarely a claim may hold.
    """
    __tracebackhide__ = True
    try:
        if not holds and is_runs(target):
            raise TypeError(
                "holds=False and max_score do not apply to claims over many runs; to say a "
                "claim must be rare, write at_most=q (it holds in at most a fraction q of runs)"
            )
        return _check_rule(target, rule_options, threshold, default_confidence, kind)
    except (TypeError, ValueError) as error:
        raise type(error)(f"{where}: {error}") from None


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
                }
                for run in self.runs
            ],
        }
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


def figures_line(data: Mapping[str, Any]) -> str:
    """The figures in one line: runs made, runs held, the rate or mean, its interval."""
    made, held = data["runs_made"], data["runs_held"]
    confidence = f"{data['confidence'] * 100:g}%"
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
    return f"{held} of {made} runs held; {what}, {confidence} interval {interval}"


def runs_text(data: Mapping[str, Any]) -> str:
    """The report of a claim over runs: decision, figures, rule, and the runs against it."""
    label = {"pass": "PASSED", "fail": "FAILED", "inconclusive": "INCONCLUSIVE"}[data["decision"]]
    lines = [
        f"{label} over runs: {terminal_text(data['claim'])}",
        f"  rule: {data['rule_text']} (confidence {data['confidence'] * 100:g}%, max_runs {data['max_runs']})",
        f"  figures: {figures_line(data)}",
        f"  decided by: {data['decided_by']}",
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
        if rule.mode == "mean":
            self.betting = stats.BettingTest(rule.bar / MAX_SCORE, rule.alpha)
        elif rule.mode == "better_than":
            margin = rule.bar / MAX_SCORE if rule.kind == "score" else rule.bar
            self.betting = stats.BettingTest(stats.paired_bar(margin), rule.alpha)

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
        if self.betting is None:
            rate = self.held / n
            for total in range(n + 1, limit + 1):
                if stats.rate_decision(round(rate * total), total, rule.bar, rule.alpha):
                    return total
            return None
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
    runs are judged on worker threads; at most ``2 * parallel`` runs are ahead of the decision,
    so few judge calls are spent past it. A judge error on a run the decision needs is raised
    (a ``BudgetExceeded`` says how far the runs got).
    """
    __tracebackhide__ = True
    control = rule.control
    limit = target.max_runs if control is None else min(target.max_runs, control.max_runs)
    min_runs = min(target.min_runs, limit)
    result = RunsResult(claim, rule, limit)
    decider = _Decider(rule, min_runs, limit)
    test_id = runtime.current_test
    kind = rule.kind

    def judge_one(run_target: Any) -> Verdict:
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
        )

    def judge_unit(run: int, targets: tuple[Any, ...]) -> tuple[Verdict, ...]:
        return tuple(judge_one(item) for item in targets)

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
    try:
        while decider.decision is None and decider.count < limit:
            for run in sorted(simulating):
                if simulating[run].done():
                    judging[run] = judge_pool.submit(judge_unit, run, simulating.pop(run).result())
            consumed = decider.count
            if consumed in judging and judging[consumed].done():
                try:
                    verdicts = judging.pop(consumed).result()
                except BudgetExceeded as error:
                    _finish(result, decider)
                    raise BudgetExceeded(
                        f"claim {quote_claim(claim)} over runs stopped after {decider.count} runs, "
                        f"undecided ({figures_line(result.as_dict())}): {error}"
                    ) from None
                _consume(result, decider, rule, consumed, verdicts)
                continue
            if next_run < limit and next_run - consumed < window:
                if sim_pool is None:
                    targets = simulate_unit(next_run)
                    judging[next_run] = judge_pool.submit(judge_unit, next_run, targets)
                else:
                    simulating[next_run] = sim_pool.submit(simulate_unit, next_run)
                next_run += 1
                continue
            # Only what is still running: a later run judged first must not make this spin.
            pending = [f for f in (*simulating.values(), *judging.values()) if not f.done()]
            wait(pending, return_when=FIRST_COMPLETED)
    finally:
        # Runs past the decision are not needed: those not started are cancelled.
        judge_pool.shutdown(wait=True, cancel_futures=True)
        if sim_pool is not None:
            sim_pool.shutdown(wait=True, cancel_futures=True)
        runtime.current_test = test_id
    _finish(result, decider)
    return result


def _consume(
    result: RunsResult, decider: _Decider, rule: Rule, run: int, verdicts: tuple[Verdict, ...]
) -> None:
    verdict = verdicts[0]
    held = _held(verdict, rule.threshold)
    if len(verdicts) == 1:
        result.runs.append(RunVerdict(run, verdict, held))
        decider.add(_unit(verdict, held, rule), held)
        return
    control = verdicts[1]
    control_held = _held(control, rule.threshold)
    result.runs.append(RunVerdict(run, verdict, held, control, control_held))
    decider.add(_unit(verdict, held, rule), held, _unit(control, control_held, rule))


def _finish(result: RunsResult, decider: _Decider) -> None:
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


def summary_verdict(result: RunsResult) -> Verdict:
    """One verdict standing for the claim over runs, for the reports that list verdicts."""
    from ..verdict import Usage, Verdict

    verdicts = [run.verdict for run in result.runs] + [
        run.control for run in result.runs if run.control is not None
    ]
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
