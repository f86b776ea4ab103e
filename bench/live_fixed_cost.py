"""What a live claim costs: the fixed cost of a run that judges one claim, and the work per claim.

Both figures, for both of the plugin's paths to an OpenAI-compatible judge (the light path,
plain HTTP, and litellm's), side by side in one run, and for deepeval where a Python with
deepeval installed is given (``--deepeval-python``; a GEval with evaluation steps, one judge
call per test case, against the same server):

- fixed cost: ``python -m pytest`` on one test making one claim (cache off), minus the same
  command on one plain test; the scripted judge answers at once, so the difference is what the
  run pays to judge at all (imports, the client, the event loop, the first request). Target:
  at most 1.0 s.
- per claim: (50 claims - 1 claim) / 49, both with the cache on (a fresh folder each run, so
  every claim is judged live and stored). Target: at most 10 ms.

Each figure is the median of ``--rounds`` rounds, the variants alternating (their order rotates
each round). Wall seconds are the target's unit; CPU seconds (user + system of the process) are
printed too, since on a shared machine waiting for a core shows in the wall time only.
The scripted judge (``tests/support/judge_server.py``) runs in this process, HTTP/1.1 with
keep-alive, each response written in one piece (two small writes on a keep-alive connection
would wait about 40 ms on Nagle's algorithm and delayed ACKs).

    python bench/live_fixed_cost.py --rounds 5
    python bench/live_fixed_cost.py --rounds 5 --deepeval-python ../deepeval-venv/bin/python
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import (
    SCRIPTED_MODEL,
    alternate,
    environment,
    import_times,
    machine,
    median,
    revision,
    run_measured,
    verdict_line,
)
from tests.support.judge_server import (
    RecordedRequest,
    Reply,
    ScriptedJudge,
    echo_fn,
    text,
    verdict,
)

TARGET = "Oscar acts: [TALK] I love trains, and quiet cities with great architecture."
PATHS = ("openai", "litellm")
FIXED_TARGET = 1.0
PER_CLAIM_TARGET_MS = 10.0


def claim(n: int) -> str:
    return f"Oscar mentions trains (case {n})."


def write_suites(root: Path, claims: int) -> dict[str, Path]:
    suites = {
        "plain": root / "plain",
        "one": root / "one",
        "many": root / "many",
        "deepeval-one": root / "deepeval-one",
        "deepeval-many": root / "deepeval-many",
    }
    for folder in suites.values():
        folder.mkdir(parents=True)
    (suites["plain"] / "test_plain.py").write_text(
        f"TARGET = {TARGET!r}\n\ndef test_plain():\n    assert 'trains' in TARGET\n"
    )
    ours = f"TARGET = {TARGET!r}\n"
    for name, count in (("one", 1), ("many", claims)):
        body = ours + "".join(
            f"\ndef test_claim_{n:03d}(assert_proposition):\n"
            f"    assert_proposition(TARGET, {claim(n)!r})\n"
            for n in range(count)
        )
        (suites[name] / f"test_{name}.py").write_text(body)
    deepeval_head = (
        "from deepeval import assert_test\n"
        "from deepeval.metrics import GEval\n"
        "from deepeval.models import GPTModel\n"
        "from deepeval.test_case import LLMTestCase, LLMTestCaseParams\n\n"
        f"TARGET = {TARGET!r}\n"
        "MODEL = GPTModel(model='gpt-4.1-mini', temperature=0)\n"
        "def metric():\n"
        "    return GEval(\n"
        "        name='claim',\n"
        "        evaluation_steps=['Read the output.', 'Decide whether the claim in the input "
        "holds for it.'],\n"
        "        evaluation_params=[LLMTestCaseParams.INPUT, LLMTestCaseParams.ACTUAL_OUTPUT],\n"
        "        model=MODEL, threshold=0.5, async_mode=False,\n"
        "    )\n"
    )
    for name, count in (("deepeval-one", 1), ("deepeval-many", claims)):
        body = deepeval_head + "".join(
            f"\ndef test_claim_{n:03d}():\n"
            f"    assert_test(LLMTestCase(input={claim(n)!r}, actual_output=TARGET), [metric()])\n"
            for n in range(count)
        )
        (suites[name] / f"test_{name.replace('-', '_')}.py").write_text(body)
    return suites


def answer(request: RecordedRequest) -> Reply:
    """Our verdict JSON to the plugin; deepeval's GEval gets the score JSON it asks for."""
    if "evaluation steps" in request.text.lower() or '"score"' in request.text:
        return text(json.dumps({"score": 9, "reason": "The output mentions trains."}))
    return verdict(True)


IMPORTS = ("litellm", "openai", "httpx", "pydantic", "diskcache", "chevron")


def import_figures(judge: ScriptedJudge, root: Path, suite: Path, repeats: int) -> None:
    """``-X importtime`` of a one-claim run (cache off, and on) on each path: the cumulative
    milliseconds of each heavy package imported, and of every import of the run (medians)."""
    print(f"\n-X importtime of one live claim, medians of {repeats} (ms, cumulative)")
    print(f"  {'path, cache':<18}" + "".join(f"{name:>10}" for name in (*IMPORTS, "all")))
    for path in PATHS:
        for cache in ("off", "use"):
            rows: dict[str, list[float]] = {name: [] for name in (*IMPORTS, "all")}
            for attempt in range(repeats):
                command = [
                    sys.executable,
                    "-X",
                    "importtime",
                    "-m",
                    "pytest",
                    "-q",
                    "-s",  # pytest's capture would keep the test's import lines from stderr
                    "-p",
                    "no:cacheprovider",
                    f"--prop-model={SCRIPTED_MODEL}",
                    f"--prop-api-base={judge.base_url}",
                    f"--prop-transport={path}",
                    f"--prop-cache={cache}",
                    f"--prop-cache-dir={root / 'imports' / f'{path}{cache}{attempt}'}",
                    str(suite),
                ]
                _, _, done = run_measured(command, root, environment())
                found = import_times(done.stderr)
                for name in IMPORTS:
                    rows[name].append(found[name][1] / 1000 if name in found else 0.0)
                top = [
                    cumulative for _, (_, cumulative, importer) in found.items() if importer == "-"
                ]
                rows["all"].append(sum(top) / 1000)
            print(
                f"  {path + ', ' + cache:<18}"
                + "".join(f"{median(rows[name]):10.0f}" for name in (*IMPORTS, "all"))
            )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--claims", type=int, default=50)
    parser.add_argument("--deepeval-python", help="a Python with deepeval (and pytest) installed")
    parser.add_argument(
        "--importtime", type=int, default=3, metavar="N", help="-X importtime runs per path"
    )
    options = parser.parse_args(argv)
    print(machine())
    print(revision())
    failed = False
    with (
        tempfile.TemporaryDirectory(prefix="prop-live-") as temp,
        ScriptedJudge(keep_alive=True) as judge,
    ):
        judge.default = echo_fn(answer)
        root = Path(temp)
        suites = write_suites(root, options.claims)
        counter = [0]

        def ours(suite: str, path: str | None, cache: str) -> Callable[[], tuple[float, float]]:
            def once() -> tuple[float, float]:
                counter[0] += 1
                command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
                if path is not None:
                    command += [
                        f"--prop-model={SCRIPTED_MODEL}",
                        f"--prop-api-base={judge.base_url}",
                        f"--prop-transport={path}",
                        f"--prop-cache={cache}",
                        f"--prop-cache-dir={root / 'cache' / str(counter[0])}",
                    ]
                wall, cpu, _ = run_measured([*command, str(suites[suite])], root, environment())
                return wall, cpu

            return once

        def deepeval(suite: str) -> Callable[[], tuple[float, float]]:
            def once() -> tuple[float, float]:
                assert options.deepeval_python is not None
                env = environment(
                    extra={
                        "OPENAI_API_KEY": "bench-key",
                        "OPENAI_BASE_URL": judge.base_url,
                        "DEEPEVAL_TELEMETRY_OPT_OUT": "YES",
                        "DEEPEVAL_DISABLE_PROGRESS_BAR": "1",
                        "ERROR_REPORTING": "NO",
                    }
                )
                command = [options.deepeval_python, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
                wall, cpu, _ = run_measured([*command, str(suites[suite])], root, env)
                return wall, cpu

            return once

        variants: dict[str, Callable[[], tuple[float, float]]] = {
            "plain": ours("plain", None, "off")
        }
        for path in PATHS:
            variants[f"{path}: 1 claim, cache off"] = ours("one", path, "off")
            variants[f"{path}: 1 claim, cache on"] = ours("one", path, "use")
            variants[f"{path}: {options.claims} claims, cache on"] = ours("many", path, "use")
        if options.deepeval_python:
            variants["deepeval: 1 claim"] = deepeval("deepeval-one")
            variants[f"deepeval: {options.claims} claims"] = deepeval("deepeval-many")
        cpu: dict[str, list[float]] = {name: [] for name in variants}

        def timed(name: str) -> Callable[[], float]:
            def once() -> float:
                wall, seconds = variants[name]()
                cpu[name].append(seconds)
                return wall

            return once

        walls = alternate({name: timed(name) for name in variants}, options.rounds)
        requests = len(judge.requests)
        if options.importtime:
            import_figures(judge, root, suites["one"], options.importtime)

    def figures(one: str, many: str) -> tuple[float, float, float, float]:
        fixed = median(walls[one]) - median(walls["plain"])
        fixed_cpu = median(cpu[one]) - median(cpu["plain"])
        per = (median(walls[many]) - median(walls[one.replace("cache off", "cache on")])) / (
            options.claims - 1
        )
        per_cpu = (median(cpu[many]) - median(cpu[one.replace("cache off", "cache on")])) / (
            options.claims - 1
        )
        return fixed, fixed_cpu, per * 1000, per_cpu * 1000

    print(f"\nmedians of {options.rounds} rounds (wall s / cpu s); {requests} judge requests")
    for name in variants:
        print(f"  {name:<32} {median(walls[name]):6.2f} / {median(cpu[name]):6.2f}")
    print("\n                      fixed cost (s)      per claim (ms)")
    print("                      wall     cpu        wall     cpu")
    results: dict[str, tuple[float, float, float, float]] = {}
    for path in PATHS:
        results[path] = figures(
            f"{path}: 1 claim, cache off", f"{path}: {options.claims} claims, cache on"
        )
    if options.deepeval_python:
        fixed = median(walls["deepeval: 1 claim"]) - median(walls["plain"])
        fixed_cpu = median(cpu["deepeval: 1 claim"]) - median(cpu["plain"])
        many = f"deepeval: {options.claims} claims"
        per = (median(walls[many]) - median(walls["deepeval: 1 claim"])) / (options.claims - 1)
        per_cpu = (median(cpu[many]) - median(cpu["deepeval: 1 claim"])) / (options.claims - 1)
        results["deepeval"] = (fixed, fixed_cpu, per * 1000, per_cpu * 1000)
    for name, (fixed, fixed_cpu, per, per_cpu) in results.items():
        print(f"  {name:<18} {fixed:7.2f} {fixed_cpu:7.2f}    {per:7.1f} {per_cpu:7.1f}")
    print()
    light = results["openai"]
    for line, ok in (
        (
            verdict_line("light path fixed cost, s", light[0], FIXED_TARGET),
            light[0] <= FIXED_TARGET,
        ),
        (
            verdict_line("light path per claim, ms", light[2], PER_CLAIM_TARGET_MS),
            light[2] <= PER_CLAIM_TARGET_MS,
        ),
    ):
        print(line)
        failed |= not ok
    if "deepeval" in results:
        ahead = light[0] < results["deepeval"][0] and light[2] < results["deepeval"][2]
        print(f"ahead of deepeval on both: {'yes' if ahead else 'NO'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
