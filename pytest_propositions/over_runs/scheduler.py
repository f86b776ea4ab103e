"""Running a claim over runs: simulating runs and judging them until the decider decides.

Simulations run one at a time by default (simulation libraries keep global state), in the
calling thread, while finished runs are judged on worker threads; runs are consumed in order,
so the decision is a pure function of the run verdicts, and a rerun with cached verdicts reaches
the same decision without a judge call.
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import TYPE_CHECKING, Any

from ..checks import quote_claim
from ..errors import BudgetExceeded
from ..reports.runs_text import figures_line
from .deciders import JudgeRun, decider_for, referee_seed
from .result import RunsResult

if TYPE_CHECKING:
    from ..runtime import Runtime
    from ..verdict import Verdict
    from .rule import Rule
    from .target import Runs

__all__ = ["judge_over_runs"]


def judge_over_runs(
    runtime: Runtime,
    target: Runs,
    claim: str,
    rule: Rule,
    options: Mapping[str, Any],
    judge: JudgeRun,
) -> RunsResult:
    """Simulate and judge runs in order until the rule decides, or max_runs; the result.

    ``judge`` judges one run's target with the claim's options (``options``, which also seed
    a referee's draws). Simulations run in this thread (``parallel=1``) or in ``parallel``
    threads, while finished runs are judged on worker threads; at most ``2 * parallel`` runs are
    ahead of the decision. Once decided, the runs up to ``2 * parallel - 1`` past it are always
    finished (the same ones whatever the timing), so a rerun from the cache starts no run the
    first did not judge. A judge error on a run the decision needs is raised (a
    ``BudgetExceeded`` says how far the runs got); a simulation that raises fails the claim.
    """
    __tracebackhide__ = True
    control = rule.control
    sides = (target,) if control is None else (target, control)
    limit = min(side.max_runs for side in sides)
    result = RunsResult(claim, rule, limit)
    model = runtime.settings.judge_model(bool(options.get("use_reasoning_model")))
    decider = decider_for(
        rule, min(target.min_runs, limit), limit, referee_seed(claim, rule, model, options)
    )
    test_id = runtime.current_test

    def judge_in_test(run: int, run_target: Any, model: str | None) -> Verdict:
        runtime.current_test = test_id
        return judge(run, run_target, model)

    def judge_unit(run: int, targets: tuple[Any, ...]) -> tuple[Verdict, ...]:
        return decider.judge(run, targets, judge_in_test)

    def referee_verdict(run: int) -> Verdict:
        return judge_in_test(run, target.target(run), rule.referee)

    def simulate_unit(run: int) -> tuple[Any, ...]:
        __tracebackhide__ = True
        first = target.target(run)
        return (first,) if control is None else (first, control.target(run))

    parallel = min(side.parallel for side in sides)
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
        while True:
            judge_simulated()
            consumed = decider.count
            deciding = decider.decision is None and consumed < limit
            if deciding and consumed in judging and judging[consumed].done():
                try:
                    verdicts = judging.pop(consumed).result()
                    result.runs.append(decider.take(consumed, verdicts, referee_verdict))
                except BudgetExceeded as error:
                    decider.finish(result)
                    raise BudgetExceeded(
                        f"claim {quote_claim(claim)} over runs stopped after {decider.count} runs, "
                        f"undecided ({figures_line(result.as_dict())}): {error}"
                    ) from None
                continue
            # Decided before max_runs: judge exactly the runs a rerun's look-ahead may start (up
            # to window - 1 past the decision), so a rerun from the cache asks the judge nothing
            # new.
            last = limit if deciding else min(consumed + window - 1, limit)
            if next_run < last and next_run - consumed < window:
                start(next_run)
                next_run += 1
                continue
            if not deciding and not simulating:
                break
            # Only what is still running: a later run judged first must not make this spin.
            running = [*simulating.values(), *judging.values()] if deciding else simulating.values()
            wait([future for future in running if not future.done()], return_when=FIRST_COMPLETED)
        # Their verdicts are not read: an error there is not the claim's (and is not cached).
        wait(list(judging.values()))
    finally:
        # On an error, runs not started are cancelled.
        judge_pool.shutdown(wait=True, cancel_futures=True)
        if sim_pool is not None:
            sim_pool.shutdown(wait=True, cancel_futures=True)
        runtime.current_test = test_id
    decider.finish(result)
    return result
