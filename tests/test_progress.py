"""The progress line while uncached claims are judged: when it shows, and that it reaches the
terminal (not pytest's captured output) without breaking pytest's own progress display."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from pytest_propositions.judging.progress import ProgressLine, file_publisher, worker_flights
from tests.support.judge_server import ScriptedJudge, delay, verdict
from tests.support.outcomes import assert_counts

pytest_plugins = ["pytester"]

LINE = re.compile(
    r"^propositions: judging 1 uncached claim with openai/judge-model, \d+s so far\.\.\.$"
)


# -- when the line is due ----------------------------------------------------------------------


def test_the_line_waits_a_moment_then_repeats_every_few_seconds() -> None:
    lines: list[str] = []
    progress = ProgressLine(lines.append, "some/model", tick_seconds=None)
    start = time.monotonic()
    token = progress.started()
    assert progress.tick(start + 0.5) is None  # a quick claim shows nothing
    assert progress.tick(start + 1.2) == (
        "propositions: judging 1 uncached claim with some/model, 1s so far..."
    )
    assert progress.tick(start + 3.0) is None  # not again within a few seconds
    assert progress.tick(start + 6.4) is not None
    assert lines == [
        "propositions: judging 1 uncached claim with some/model, 1s so far...",
        "propositions: judging 1 uncached claim with some/model, 6s so far...",
    ]
    progress.finished(token)
    assert progress.tick(start + 30.0) is None


def test_a_controller_counts_its_workers_claims() -> None:
    lines: list[str] = []
    progress = ProgressLine(
        lines.append, "m", others=lambda: [(2, 3.0), (1, 8.0)], tick_seconds=None
    )
    assert (
        progress.tick(time.monotonic())
        == "propositions: judging 3 uncached claims with m, 8s so far..."
    )


def test_a_worker_publishes_what_it_judges_and_the_controller_reads_it(tmp_path: Path) -> None:
    published: list[tuple[int, float]] = []
    progress = ProgressLine(None, "m", publish=lambda n, since: published.append((n, since)))
    first, second = progress.started(), progress.started()
    progress.finished(first)
    progress.finished(second)
    assert [count for count, _ in published] == [1, 2, 1, 0]
    assert published[0][1] == published[1][1] > 0  # the oldest claim's wall-clock start

    publish = file_publisher(tmp_path / "gw0")
    publish(2, time.time() - 4)
    file_publisher(tmp_path / "gw1")(1, time.time() - 1)
    flights = sorted(worker_flights(tmp_path))
    assert [count for count, _ in flights] == [1, 2]
    assert 3.5 < flights[1][1] < 60
    publish(0, 0.0)
    assert [count for count, _ in worker_flights(tmp_path)] == [1]
    assert worker_flights(tmp_path / "gone") == []


# -- on a real terminal writer -----------------------------------------------------------------

SLOW_SUITE = """
def test_first():
    pass

def test_slow(world, assert_proposition):
    print("the test's own output")
    assert_proposition(world, "Oscar is slow to answer.")
"""


@pytest.mark.parametrize(
    "mode",
    [[], ["-q"], ["-v"], ["-s"], ["--tb=no"], ["-p", "xdist", "-n", "2"]],
    ids=["default", "q", "v", "s", "tb-no", "xdist"],
)
def test_the_line_reaches_the_terminal_not_the_captured_output(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, inner_run: list[str], mode: list[str]
) -> None:
    judge_server.on("slow", delay(2.5, verdict(False, justification="Too slow.")))
    pytester.makepyfile(test_progress=SLOW_SUITE)
    result = pytester.runpytest_subprocess(*inner_run, *mode)
    assert_counts(result, passed=1, failed=1)
    lines = result.outlines
    shown = [index for index, line in enumerate(lines) if LINE.match(line)]
    assert shown, result.stdout.str()
    # Every progress line is one of its own, none glued to pytest's letters or words.
    assert len(shown) == sum("propositions: judging" in line for line in lines)
    # All of them before pytest's summary sections: none in a "Captured stdout call".
    summary_start = next(
        (index for index, line in enumerate(lines) if re.match(r"^=+ (FAILURES|short test)", line)),
        len(lines),
    )
    assert max(shown) < summary_start
    if "--tb=no" not in mode and "-s" not in mode:
        result.stdout.fnmatch_lines(["*- Captured stdout call -*", "the test's own output"])
    captured = "\n".join(lines[summary_start:])
    assert "uncached claim" not in captured
    # pytest's own display goes on after the line: the failing test's result and the 100%.
    after = lines[max(shown) + 1 :]
    # (-s has no percentages: pytest leaves them out when nothing is captured.)
    assert any(re.search(r"(F|FAILED)(\s+\[100%\])?$", line) for line in after), lines
    if mode == []:
        # The file is named once, before the progress lines; the letter goes on below them,
        # in the column the file name leaves.
        assert lines[max(shown) + 1].startswith(" " * len("test_progress.py ") + "F")
        assert sum(line.startswith("test_progress.py") for line in lines[:summary_start]) == 1
