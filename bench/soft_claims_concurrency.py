"""Are a test's soft claims judged concurrently? 16 slow claims should cost one round trip, not 16.

In one run this script:

1. writes two one-test suites into a temporary folder: one whose test makes 16
   ``expect_proposition`` soft claims on a string target, one whose test makes a single one;
2. starts the scripted judge (``tests/support/judge_server.py``) on loopback, answering every
   request with ``delay(1.0, verdict(True))``, and noting when each request arrives;
3. times whole ``python -m pytest`` runs with ``--prop-cache=off``: 16 claims at
   ``--prop-concurrency=16``, 16 claims at the default 8, and 1 claim, alternating them for
   several rounds; it reports the medians and the ratio 16 claims / 1 claim at concurrency 16
   (target <= 1.3), the same ratio at the default 8 (two waves of 8: about one more second),
   the judge time the plugin's summary line prints, and how the requests reached the judge
   (how many were in flight at once, over how long their arrivals spread).

Nothing is subtracted: the times are those of whole pytest runs, start-up and litellm's import
included, so the ratio shows what a user waits for. Run it from the repository root:

    python bench/soft_claims_concurrency.py [--rounds 5] [--claims 16] [--latency 1.0]

It is not a test and CI does not run it: timings on a shared machine are noise, not verdicts.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench._common import (  # noqa: E402
    SCRIPTED_MODEL,
    alternate,
    environment,
    fmt,
    machine,
    median,
    revision,
    run,
    summary_counts,
    summary_line,
    verdict_line,
)
from tests.support.judge_server import (  # noqa: E402
    RecordedRequest,
    Reply,
    ScriptedJudge,
    delay,
    echo_fn,
    verdict,
)

RATIO_TARGET = 1.3
DEFAULT_CONCURRENCY = 8
TARGET = "Oscar acts: [TALK] Quiet cities with great architecture, and trains between them."


def write_suite(root: Path, name: str, claims: int) -> Path:
    suite = root / name
    suite.mkdir()
    (suite / "pytest.ini").write_text("[pytest]\n")
    (suite / "test_soft.py").write_text(
        f"TARGET = {TARGET!r}\n"
        f"CLAIMS = [f'Oscar mentions quiet city number {{n}} and its trains.' "
        f"for n in range({claims})]\n\n\n"
        "def test_soft_claims(expect_proposition):\n"
        "    for claim in CLAIMS:\n"
        "        expect_proposition(TARGET, claim)\n"
    )
    return suite


class Arrivals:
    """When each request reached the scripted judge (monotonic seconds), for the current run."""

    def __init__(self, latency: float) -> None:
        self.latency = latency
        self._times: list[float] = []
        self._lock = threading.Lock()

    def reply(self, request: RecordedRequest) -> Reply:
        with self._lock:
            self._times.append(time.monotonic())
        return delay(self.latency, verdict(True, justification="He names the city."))

    def take(self) -> list[float]:
        with self._lock:
            times, self._times = sorted(self._times), []
        return times

    def peak_in_flight(self, times: list[float]) -> int:
        """The most requests being answered at once, each taking ``latency`` seconds."""
        return max(
            (sum(1 for other in times if start <= other < start + self.latency) for start in times),
            default=0,
        )


def pytest_command(suite: Path, api_base: str, concurrency: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "-q",
        f"--prop-model={SCRIPTED_MODEL}",
        f"--prop-api-base={api_base}",
        "--prop-cache=off",
        f"--prop-concurrency={concurrency}",
        "--prop-retries=0",
        str(suite),
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="timed runs of each variant (5)")
    parser.add_argument("--claims", type=int, default=16, help="soft claims in the big test (16)")
    parser.add_argument(
        "--latency", type=float, default=1.0, help="seconds the judge takes per reply (1.0)"
    )
    args = parser.parse_args(argv)
    print(f"machine: {machine()}")
    print(f"code: {revision()}")
    wide = args.claims  # enough threads for every claim at once

    with tempfile.TemporaryDirectory(prefix="prop-bench-") as temp, ScriptedJudge() as judge:
        work = Path(temp)
        many = write_suite(work, "many", args.claims)
        one = write_suite(work, "one", 1)
        arrivals = Arrivals(args.latency)
        judge.default = echo_fn(arrivals.reply)
        env = environment()
        judged: dict[str, list[float]] = {}
        peaks: dict[str, list[int]] = {}
        spreads: dict[str, list[float]] = {}
        lines: dict[str, str] = {}

        def variant(name: str, suite: Path, claims: int, concurrency: int) -> Callable[[], float]:
            def once() -> float:
                judge.clear_requests()
                arrivals.take()
                seconds, done = run(pytest_command(suite, judge.base_url, concurrency), suite, env)
                times = arrivals.take()
                if len(judge.requests) != claims or "1 passed" not in done.stdout:
                    sys.exit(
                        f"{name}: expected 1 passed test and {claims} requests, got "
                        f"{len(judge.requests)}:\n{done.stdout[-2000:]}"
                    )
                counts = summary_counts(done.stdout)
                judged.setdefault(name, []).append(counts.get("judging", float("nan")))
                peaks.setdefault(name, []).append(arrivals.peak_in_flight(times))
                spreads.setdefault(name, []).append(times[-1] - times[0])
                lines[name] = summary_line(done.stdout) or "(no summary line)"
                return seconds

            return once

        names = {
            "wide": f"{args.claims} claims, concurrency {wide}",
            "default": f"{args.claims} claims, concurrency {DEFAULT_CONCURRENCY}",
            "one": "1 claim",
        }
        print(
            f"timing {args.rounds} rounds, judge latency {args.latency:.1f}s, cache off, "
            "alternating ...",
            flush=True,
        )
        times = alternate(
            {
                names["wide"]: variant(names["wide"], many, args.claims, wide),
                names["default"]: variant(names["default"], many, args.claims, DEFAULT_CONCURRENCY),
                names["one"]: variant(names["one"], one, 1, DEFAULT_CONCURRENCY),
            },
            args.rounds,
        )

    print(f"== whole pytest runs, medians of {args.rounds}")
    for name in names.values():
        print(
            f"{name:<28} {median(times[name]):6.2f}s  (runs: {fmt(times[name])}); "
            f"summary's judge time {median(judged[name]):.1f}s; "
            f"in flight at once: {max(peaks[name])}; "
            f"arrivals spread over {median(spreads[name]) * 1000:.0f} ms"
        )
    base = median(times[names["one"]])
    print(
        verdict_line(
            f"ratio {names['wide']} / 1 claim", median(times[names["wide"]]) / base, RATIO_TARGET
        )
    )
    print(
        f"ratio {names['default']} / 1 claim: "
        f"{median(times[names['default']]) / base:.2f}  (no target: "
        f"{-(-args.claims // DEFAULT_CONCURRENCY)} waves of {DEFAULT_CONCURRENCY})"
    )
    print(
        "extra seconds over 1 claim: "
        + ", ".join(
            f"{name} {median(times[name]) - base:+.2f}s"
            for name in (names["wide"], names["default"])
        )
    )
    print(f"last summary line ({names['wide']}): {lines[names['wide']]}")
    print(
        "note: the summary's judge time adds up every claim's own wait, so with concurrent "
        "claims it exceeds the wall time spent waiting."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
