"""Is judging overlapped with simulating? 30 runs of a 1 s simulation, judged at 1 s latency,
should take about the 30 s the simulations alone take (target: at most 1.15 x 30 s).

In one process this script starts the scripted judge (``tests/support/judge_server.py``) on
loopback, answering every request with ``delay(LATENCY, verdict(True))``; warms the judge path up
with one ordinary claim (litellm's import is not what is measured); then decides
``check_over_runs(runs(simulate, max_runs=30), claim, every_run=True)`` (every run is needed, so
all 30 are simulated and judged), with ``simulate`` sleeping 1 s, and reports the wall time
against 30 x the simulation time. Without overlap it would be about 60 s.

    python bench/runs_wall_time.py [--runs 30] [--simulation 1.0] [--latency 1.0]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench._common import API_KEY, SCRIPTED_MODEL  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--simulation", type=float, default=1.0)
    parser.add_argument("--latency", type=float, default=1.0)
    args = parser.parse_args()
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    os.environ["PROP_API_KEY"] = API_KEY

    from pytest_propositions import check_over_runs, runs
    from pytest_propositions.assertions import judge_claim
    from pytest_propositions.runtime import Runtime
    from pytest_propositions.settings import Settings
    from tests.support.judge_server import ScriptedJudge, delay, verdict

    def simulate(run: int) -> str:
        time.sleep(args.simulation)
        return f"Run {run}: Oscar greets the customer and states the price."

    with ScriptedJudge() as judge:
        judge.default = delay(args.latency, verdict(True))
        settings = Settings(model=SCRIPTED_MODEL, api_base=judge.base_url, cache="off", retries=0)
        runtime = Runtime(settings, None)
        try:
            warm = time.perf_counter()
            judge_claim(runtime, "warm up", "The text says warm up.", kind="check")
            import scipy.stats  # noqa: F401  (imported on first need; not what is measured)

            print(f"warm-up (litellm's import, one claim): {time.perf_counter() - warm:.1f}s")
            started = time.perf_counter()
            result = check_over_runs(
                runs(simulate, max_runs=args.runs),
                "Oscar states the price.",
                every_run=True,
                runtime=runtime,
            )
            elapsed = time.perf_counter() - started
        finally:
            runtime.close()
    simulations = args.runs * args.simulation
    ratio = elapsed / simulations
    print(f"decision: {result.decision} after {result.runs_made} runs")
    print(f"judge requests: {len(judge.requests) - 1} (plus the warm-up)")
    print(
        f"wall time: {elapsed:.1f}s for {args.runs} runs of {args.simulation:g}s judged at "
        f"{args.latency:g}s; simulations alone {simulations:.0f}s; ratio {ratio:.3f} "
        f"(target <= 1.15: {'ok' if ratio <= 1.15 else 'MISSED'}); without overlap about "
        f"{args.runs * (args.simulation + args.latency):.0f}s"
    )


if __name__ == "__main__":
    main()
