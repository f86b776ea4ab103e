"""The progress line while uncached claims are judged: when it shows, and that it reaches the
terminal (not pytest's captured output) without breaking pytest's own progress display."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_propositions.judging import progress as progress_module
from pytest_propositions.judging.judge import Judge, JudgeRequest
from pytest_propositions.judging.progress import (
    LOG_EVERY_SECONDS,
    SLOW_ATTEMPT_SECONDS,
    ProgressLine,
    TerminalLine,
    TerminalSuffix,
    file_publisher,
    worker_flights,
)
from pytest_propositions.judging.transport import Attempt
from pytest_propositions.settings import Settings
from tests.support.judge_server import (
    RecordedRequest,
    ScriptedJudge,
    delay,
    echo_fn,
    sequence,
    verdict,
)
from tests.support.outcomes import assert_counts

pytest_plugins = ["pytester"]

LINE = re.compile(
    r"^propositions: judging 1 uncached claim with openai/judge-model, \d+s so far\.\.\.$"
)


# -- when the line is due ----------------------------------------------------------------------


class Lines:
    """A display that keeps the lines it is shown, every ``every`` seconds at most."""

    def __init__(self, every: float) -> None:
        self.every = every
        self.shown: list[str] = []
        self.clears = 0

    def show(self, line: str) -> None:
        self.shown.append(line)

    def clear(self) -> None:
        self.clears += 1


@pytest.fixture
def frozen_start(monkeypatch: pytest.MonkeyPatch) -> float:
    """The line's clock stands still at the moment returned, so a claim starts exactly then and
    the test's ticks are measured from it: a busy machine cannot shift them."""
    moment = 1000.0
    monkeypatch.setattr(
        progress_module, "time", SimpleNamespace(monotonic=lambda: moment, time=time.time)
    )
    return moment


def test_the_line_waits_a_moment_then_repeats_every_few_seconds(frozen_start: float) -> None:
    display = Lines(every=5.0)
    lines = display.shown
    progress = ProgressLine(display, "some/model", tick_seconds=None)
    start = frozen_start
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


def test_in_a_log_the_line_comes_once_a_claim_is_slow_then_once_a_minute(
    frozen_start: float,
) -> None:
    """Not on a terminal (CI): each line stays in the log and splits pytest's row of letters,
    so few are written; the clock is the test's (a busy machine cannot shift it)."""
    assert TerminalLine.every == LOG_EVERY_SECONDS == 60.0
    display = Lines(every=TerminalLine.every)
    progress = ProgressLine(display, "m", tick_seconds=None)
    start = frozen_start
    progress.started()
    shown = [t for t in range(0, 200) if progress.tick(start + t + 0.5) is not None]
    assert shown == [1, 61, 121, 181]


def test_on_a_terminal_the_line_keeps_time_and_is_taken_away_when_judging_ends(
    frozen_start: float,
) -> None:
    assert TerminalSuffix.every == 1.0
    display = Lines(every=TerminalSuffix.every)
    progress = ProgressLine(display, "m", tick_seconds=None)
    start = frozen_start
    token = progress.started()
    assert [progress.tick(start + t + 0.5) is not None for t in range(4)] == [
        False,
        True,
        True,
        True,
    ]
    assert display.clears == 0
    progress.finished(token)
    assert display.clears == 1  # erased before the test goes on
    progress.finished(token)
    assert display.clears == 1  # nothing left to erase


def test_a_controller_counts_its_workers_claims() -> None:
    display = Lines(every=5.0)
    progress = ProgressLine(display, "m", others=lambda: [(2, 3.0), (1, 8.0)], tick_seconds=None)
    assert (
        progress.tick(time.monotonic())
        == "propositions: judging 3 uncached claims with m, 8s so far..."
    )


# -- what the line says of an attempt (the transport's news) ---------------------------------


def test_a_slow_local_attempt_says_how_long_and_how_many_tokens_so_far(frozen_start: float) -> None:
    display = Lines(every=1.0)
    progress = ProgressLine(display, "local", tick_seconds=None)
    token = progress.started()
    start = frozen_start
    progress.note(token, Attempt(1, 4, start, tokens=0))
    # not slow yet: the plain line
    assert progress.tick(start + 2.0) is not None
    assert display.shown[-1].endswith("so far...")
    assert progress.tick(start + SLOW_ATTEMPT_SECONDS + 10) is not None
    assert display.shown[-1].endswith("; still answering, 15s, reading the prompt...")
    progress.note(token, Attempt(1, 4, start, tokens=120))
    assert progress.tick(start + 45.2) is not None
    assert display.shown[-1].startswith("propositions: judging 1 uncached claim with local, ")
    assert display.shown[-1].endswith("; still answering, 45s, 120 tokens so far...")
    progress.note(token, None)  # the attempt ended: nothing more to say of it
    assert progress.tick(start + 50.0) is not None
    assert display.shown[-1].endswith("s so far...")


def test_a_slow_remote_attempt_says_how_long_of_its_deadline(frozen_start: float) -> None:
    display = Lines(every=1.0)
    progress = ProgressLine(display, "m", tick_seconds=None)
    token = progress.started()
    start = frozen_start
    progress.note(token, Attempt(1, 4, start, limit=60.0))
    assert progress.tick(start + 45.0) is not None
    assert display.shown[-1].endswith("; still answering, 45s of 60s...")


def test_a_retry_is_said_at_once_even_in_a_log(frozen_start: float) -> None:
    """In a log the line comes once a minute; a retry is news and is written when it happens,
    once."""
    display = Lines(every=LOG_EVERY_SECONDS)
    progress = ProgressLine(display, "m", tick_seconds=None)
    token = progress.started()
    now = frozen_start
    assert progress.tick(now + 2.0) is not None  # the first line, once a claim is slow
    progress.note(token, Attempt(2, 4, now + 61.0, after="a timeout", limit=60.0))
    assert progress.tick(now + 62.0) is not None  # within the minute: a retry is news
    assert display.shown[-1].endswith("s so far; attempt 2 of 4 after a timeout...")
    assert progress.tick(now + 63.0) is None  # the same retry is not news twice
    progress.note(token, Attempt(2, 4, now + 61.0, after="a timeout", limit=60.0))
    assert progress.tick(now + 70.0) is None
    progress.note(token, Attempt(3, 4, now + 121.5, after="a server error (HTTP 503)", limit=60))
    assert progress.tick(now + 130.0) is not None
    assert display.shown[-1].endswith(
        "; attempt 3 of 4 after a server error (HTTP 503), still answering, 8s of 60s..."
    )


def test_news_of_a_finished_claim_is_dropped(frozen_start: float) -> None:
    display = Lines(every=1.0)
    progress = ProgressLine(display, "m", tick_seconds=None)
    first, second = progress.started(), progress.started()
    progress.note(first, Attempt(2, 4, 0.0, after="a timeout"))
    progress.finished(first)
    progress.note(first, Attempt(3, 4, 0.0, after="a timeout"))  # late news of a claim now done
    assert progress.tick(frozen_start + 2.0) is not None
    assert "attempt" not in display.shown[-1]
    progress.finished(second)


class Flight:
    """The progress line as the judge sees it, keeping what the transport tells it."""

    def __init__(self) -> None:
        self.attempts: list[Attempt | None] = []

    def started(self) -> int:
        return 7

    def note(self, token: int, attempt: Attempt | None) -> None:
        assert token == 7
        self.attempts.append(attempt)

    def finished(self, token: int) -> None:
        pass


def test_the_transport_tells_the_line_of_each_attempt_and_why_it_was_retried(
    judge_server: ScriptedJudge, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The news comes from the transport, which both paths share: the light one suffices."""
    monkeypatch.setenv("PROP_API_KEY", "test-key-not-real")
    judge_server.default = sequence(delay(30.0, verdict(True)), verdict(True))
    settings = Settings(
        model="openai/judge-model",
        api_base=judge_server.base_url,
        timeout=2.0,
        retries=3,
        transport="http",
    )
    judge = Judge(settings, cache=None)
    flight = Flight()
    judge.progress = lambda: flight  # type: ignore[assignment,return-value]
    try:
        claim = "Oscar talks."
        judged = judge.evaluate(
            JudgeRequest("check", claim, settings.model, ({"role": "user", "content": claim},))
        )
    finally:
        judge.close()
    assert judged.value is True
    told = [
        None
        if attempt is None
        else (attempt.number, attempt.attempts, attempt.after, attempt.limit)
        for attempt in flight.attempts
    ]
    # The first attempt times out (the server waits 30 s); the next answers. On a machine busy
    # enough to stall a loopback answer for 2 s a later one may too: each is told the same way.
    assert told[:3] == [(1, 4, None, 2.0), None, (2, 4, "a timeout", 2.0)]
    retried = told[2::2]
    assert retried == [(number, 4, "a timeout", 2.0) for number in range(2, len(retried) + 2)]
    assert told[1::2] == [None] * (len(retried) + 1)


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
    [
        [],
        ["-q"],
        ["-v"],
        ["-s"],
        ["--tb=no"],
        pytest.param(["-p", "xdist", "-n", "2"], marks=pytest.mark.slow),
    ],
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


# -- on a real terminal (a pseudo-terminal) ------------------------------------------------------


def screen_of(output: str) -> list[str]:
    """What a terminal shows after ``output``: each character written at the cursor, carriage
    returns and backspaces moving it (colours are off)."""
    rows: list[list[str]] = [[]]
    column = 0
    for char in output:
        if char == "\n":
            rows.append([])
            column = 0
        elif char == "\r":
            column = 0
        elif char == "\b":
            column = max(0, column - 1)
        else:
            row = rows[-1]
            row.extend(" " * (column - len(row) + 1))
            row[column] = char
            column += 1
    return ["".join(row).rstrip() for row in rows]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pseudo-terminals: Linux only")
@pytest.mark.parametrize(
    "mode",
    [[], ["-v"], pytest.param(["-p", "xdist", "-n", "2"], marks=pytest.mark.slow)],
    ids=["default", "v", "xdist"],
)
def test_on_a_terminal_the_line_leaves_pytests_rows_as_they_were(
    pytester: pytest.Pytester,
    judge_server: ScriptedJudge,
    inner_run: list[str],
    monkeypatch: pytest.MonkeyPatch,
    mode: list[str],
) -> None:
    """The judge answers only once the line was drawn (no race with the machine's load); the
    terminal then shows pytest's rows exactly, the line erased."""
    drawn = threading.Event()

    def answer_once_drawn(request: RecordedRequest) -> Any:
        drawn.wait(120)
        return verdict(False, justification="Too slow.")

    judge_server.on("slow", echo_fn(answer_once_drawn))
    pytester.makepyfile(test_progress=SLOW_SUITE)
    monkeypatch.setenv("COLUMNS", "100")
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "pytest", *inner_run, "--color=no", *mode],
        cwd=pytester.path,
        stdin=follower,
        stdout=follower,
        stderr=follower,
        close_fds=True,
    )
    os.close(follower)
    chunks: list[bytes] = []
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
        if b"propositions: judging 1 uncached claim" in b"".join(chunks):
            drawn.set()
    os.close(leader)
    process.wait()
    drawn.set()
    output = b"".join(chunks).decode("utf-8", "replace")
    assert "propositions: judging 1 uncached claim with openai/judge-model" in output
    screen = screen_of(output.replace("\r\n", "\n"))
    assert not [row for row in screen if "propositions: judging" in row], screen
    if mode == []:
        assert any(re.fullmatch(r"test_progress\.py \.F +\[100%\]", row) for row in screen), screen
    elif "xdist" in mode:  # the workers finish in either order
        assert any(re.fullmatch(r"(\.F|F\.) +\[100%\]", row) for row in screen), screen
    else:
        assert any(
            re.fullmatch(r"test_progress\.py::test_slow FAILED +\[100%\]", row) for row in screen
        ), screen
