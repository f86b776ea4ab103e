"""The local judge judged by its progress, not by a flat deadline: slow is fine, hung is not.

A model on a busy machine may take minutes for one reply; what tells a slow server from a hung
one is whether it moves on (llama.cpp's ``/slots``: prompt tokens read, reply tokens written).
The deadline's rule is a pure function of what the server said and when (tested on a fake
clock); end to end, the scripted server (tests/support/judge_server.py) started through
``LocalServer`` plays a slow one (it writes a token each time it is looked at, and answers only
after many looks, longer than the bound) and a hung one (it never moves). No model is needed.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_propositions.errors import JudgeUnavailable
from pytest_propositions.judging.endpoint import Progress
from pytest_propositions.judging.judge import Judge, JudgeRequest
from pytest_propositions.judging.prompts import build_messages
from pytest_propositions.judging.transport import Attempt, IdleDeadline
from pytest_propositions.local import engine as local
from pytest_propositions.local.engine import SERVED_MODEL, LocalServer, slots_progress
from pytest_propositions.settings import Settings
from tests.support import judge_server

# -- the deadline's rule, on a fake clock --------------------------------------------------------


def test_a_server_that_moves_on_is_never_hung_however_long_it_takes() -> None:
    deadline = IdleDeadline(60.0, now=0.0)
    for second in range(0, 600, 30):  # a token every 30 s, for ten minutes
        deadline.observe(Progress(("written", second)), now=float(second))
        assert not deadline.hung(float(second) + 29.0)


def test_a_server_that_stops_moving_is_hung_after_the_bound() -> None:
    deadline = IdleDeadline(60.0, now=0.0)
    deadline.observe(Progress(("written", 5)), now=1.0)
    for second in range(2, 61):
        deadline.observe(Progress(("written", 5)), now=float(second))  # the same answer
    assert deadline.quiet(60.5) == 59.5
    assert not deadline.hung(60.9)
    assert deadline.hung(61.0)


def test_a_look_that_gets_no_answer_is_no_progress() -> None:
    deadline = IdleDeadline(10.0, now=0.0)
    for second in range(1, 11):
        deadline.observe(None, now=float(second))
    assert deadline.hung(10.0)


def test_the_first_answer_is_progress_and_any_change_is() -> None:
    deadline = IdleDeadline(10.0, now=0.0)
    deadline.observe(Progress(("busy", 0)), now=8.0)  # the request was taken up
    assert not deadline.hung(17.0)
    deadline.observe(Progress(("busy", 0)), now=18.0)
    assert deadline.hung(18.0)
    # another task (a re-read of the prompt) starts its count again at 0: still a change
    deadline = IdleDeadline(10.0, now=0.0)
    deadline.observe(Progress(("task 1", 40)), now=1.0)
    deadline.observe(Progress(("task 2", 0)), now=9.0)
    assert not deadline.hung(18.0)


# -- llama.cpp's /slots, read as progress ---------------------------------------------------------

# A slot of llama.cpp's /slots answer as xllamacpp 2026.10.11549's server gave it here while it
# wrote a reply (sampling parameters left out).
BUSY_SLOT: dict[str, Any] = {
    "id": 0,
    "n_ctx": 8192,
    "speculative": False,
    "is_processing": True,
    "id_task": 0,
    "n_prompt_tokens": 87,
    "n_prompt_tokens_processed": 36,
    "n_prompt_tokens_cache": 0,
    "params": {"seed": 1234, "temperature": 0.0, "max_tokens": 60, "stream": False},
    "next_token": [{"has_next_token": True, "has_new_line": False, "n_remain": 9, "n_decoded": 51}],
}
IDLE_SLOT: dict[str, Any] = {"id": 1, "n_ctx": 8192, "speculative": False, "is_processing": False}


def test_slots_give_the_busy_slots_tokens_and_a_sign_that_moves_with_them() -> None:
    progress = slots_progress([BUSY_SLOT, IDLE_SLOT])
    assert progress is not None and progress.tokens == 51
    later = slots_progress([{**BUSY_SLOT, "next_token": [{"n_decoded": 52}]}, IDLE_SLOT])
    assert later is not None and later.sign != progress.sign
    again = slots_progress([dict(BUSY_SLOT), dict(IDLE_SLOT)])
    assert again is not None and again.sign == progress.sign


def test_slots_with_none_busy_give_no_tokens_and_other_answers_no_progress() -> None:
    idle = slots_progress([IDLE_SLOT, {**IDLE_SLOT, "id": 0}])
    assert idle is not None and idle.tokens is None
    reading = slots_progress([{**BUSY_SLOT, "next_token": [{"n_decoded": 0}]}])
    assert reading is not None and reading.tokens == 0
    assert slots_progress({"error": "not found"}) is None
    assert slots_progress([1, 2]) is None


# -- end to end, with the scripted server as llama.cpp -----------------------------------------

# The script of tests/support/judge_server.py run as llama.cpp (``--setup``). The slow one writes
# a token each time its /slots is looked at (its count never goes back, even for a look before
# the request reached it) and answers after LOOKS looks of the request: so every look sees
# progress and it is always slower than the bound, however busy the machine; the hung one never
# moves or answers.
SLOW_OR_HUNG = """
import threading

MODE, EVENTS, LOOKS = argv[0], argv[1], int(argv[2])
state = {"busy": False, "written": 0, "start": 0}
changed = threading.Condition()


def slots():
    with changed:
        if MODE == "slow":
            state["written"] += 1
            changed.notify_all()
        return [{"id": 0, "id_task": 1, "is_processing": state["busy"],
                 "n_prompt_tokens_processed": 900,
                 "next_token": [{"n_decoded": state["written"]}]}]


def answer(request):
    with open(EVENTS, "a") as events:
        events.write("POST\\n")
    with changed:
        state["busy"], state["start"] = True, state["written"]
        changed.wait_for(lambda: MODE == "slow" and state["written"] - state["start"] >= LOOKS)
        state["busy"] = False
    return verdict(True, justification="Slow but sure.", confidence=0.9, reasoning="r")


judge.slots = slots
judge.default = echo_fn(answer)
"""
BOUND = 0.4  # --prop-timeout: seconds without progress (looked at every 0.1 s)
LOOKS = 12  # the slow server's looks before it answers: 1.2 s of looking at the least


class Flight:
    """The progress line as the judge sees it, keeping what the transport tells it."""

    def __init__(self) -> None:
        self.attempts: list[Attempt] = []

    def started(self) -> int:
        return 1

    def note(self, token: int, attempt: Attempt | None) -> None:
        if attempt is not None:
            self.attempts.append(attempt)

    def finished(self, token: int) -> None:
        pass


@pytest.fixture
def gguf(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.gguf"
    path.write_bytes(b"GGUF" + bytes(range(256)))
    return path


@pytest.fixture
def local_judge(
    tmp_path: Path, gguf: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable[[str], tuple[Judge, list[LocalServer], Flight]]]:
    """A judge of --prop-model=local whose server is the stand-in in the given mode."""
    real = local.LocalServer
    events = tmp_path / "events.txt"
    script = tmp_path / "slow_or_hung.py"
    script.write_text(SLOW_OR_HUNG)
    judges: list[Judge] = []

    def make(mode: str) -> tuple[Judge, list[LocalServer], Flight]:
        servers: list[LocalServer] = []
        command = [sys.executable, judge_server.__file__, "{port}", SERVED_MODEL, "--setup"]
        command += [str(script), mode, str(events), str(LOOKS)]

        def stand_in(model: Path, **options: Any) -> LocalServer:
            server = real(model, command=command, log_dir=tmp_path, **options)
            servers.append(server)
            return server

        monkeypatch.setattr(local, "LocalServer", stand_in)
        settings = Settings(local_model=str(gguf), timeout=BOUND, retries=3)
        judge = Judge(settings, connect=lambda model: local.local_connection(settings))
        flight = Flight()
        judge.progress = lambda: flight  # type: ignore[assignment,return-value]
        judges.append(judge)
        return judge, servers, flight

    yield make
    for judge in judges:
        judge.close()


def posts(tmp_path: Path) -> int:
    events = tmp_path / "events.txt"
    return events.read_text().split().count("POST") if events.exists() else 0


def request(claim: str) -> JudgeRequest:
    recording = "Oscar acts: [TALK] I love trains.\n"
    return JudgeRequest(
        kind="check",
        claim=claim,
        model="local",
        messages=tuple(build_messages("check", claim, recording, None)),
    )


def test_a_slow_local_judge_that_makes_progress_is_waited_for_not_retried(
    local_judge: Callable[[str], tuple[Judge, list[LocalServer], Flight]], tmp_path: Path
) -> None:
    judge, _, flight = local_judge("slow")
    started = time.perf_counter()
    verdict = judge.evaluate(request("Oscar likes trains."))
    took = time.perf_counter() - started
    assert verdict.value is True and verdict.justification == "Slow but sure."
    assert took > BOUND  # far longer than --prop-timeout, in all
    assert posts(tmp_path) == 1  # one attempt: a server making progress is not asked again
    # the progress line was told how far it got, attempt 1 of 4 all along
    assert {(attempt.number, attempt.attempts) for attempt in flight.attempts} == {(1, 4)}
    assert max(attempt.tokens or 0 for attempt in flight.attempts) >= LOOKS - 1


def test_a_hung_local_judge_is_a_judge_error_that_says_so_and_is_stopped(
    local_judge: Callable[[str], tuple[Judge, list[LocalServer], Flight]], tmp_path: Path
) -> None:
    judge, servers, _ = local_judge("hang")
    with pytest.raises(JudgeUnavailable) as raised:
        judge.evaluate(request("Oscar likes trains."))
    message = str(raised.value)
    assert "the local judge (model local/tiny.gguf@sha256:" in message
    assert " hung: it made no progress for " in message
    assert "--prop-timeout allows 0.4s without progress" in message
    assert "last 20 lines of the server log" in message
    assert posts(tmp_path) == 1  # not retried: another attempt would wait behind this one
    assert not servers[0].is_running
    # the run's later claims fail at once, with the same words, and send nothing
    with pytest.raises(JudgeUnavailable, match=" hung: it made no progress for "):
        judge.evaluate(request("Oscar likes planes."))
    assert posts(tmp_path) == 1
