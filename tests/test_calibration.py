"""calibrate: a judge is measured on labeled items through the test path, and may then gate."""

from __future__ import annotations

import importlib.util
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_propositions import checks
from pytest_propositions.__main__ import main
from pytest_propositions.claims.targets import RenderOptions, render_context
from pytest_propositions.cli.calibrate import (
    Item,
    Outcome,
    compute_metrics,
    load_set,
    load_sets,
    score_auc,
    shipped_set,
)
from pytest_propositions.cli.calibrate import run as run_calibrate
from pytest_propositions.cli.main import _build_parser
from pytest_propositions.errors import CalibrationError
from pytest_propositions.judging.prompts import build_messages
from tests.support.judge_server import RecordedRequest, Reply, ScriptedJudge, echo_fn, verdict

ROOT = Path(__file__).resolve().parent.parent


def _kind(request: RecordedRequest) -> str:
    text = request.messages[0]["content"] if request.messages else ""
    return "score" if "rate how true the claim is" in text else "check"


def always_true(request: RecordedRequest) -> Reply:
    return verdict(9 if _kind(request) == "score" else True)


def user_turns(items: list[Item]) -> dict[str, bool]:
    """Each item's user turn, as the judge receives it, mapped to the item's label."""
    labels = {}
    for item in items:
        context = render_context(
            [item.build_target()], RenderOptions(include_personas=item.include_personas)
        )
        messages = build_messages(item.kind, item.claim, context, None)  # type: ignore[arg-type]
        labels[messages[1]["content"]] = item.label
    return labels


def oracle(items: list[Item]) -> Any:
    labels = user_turns(items)

    def reply(request: RecordedRequest) -> Reply:
        label = labels[request.messages[1]["content"]]
        if _kind(request) == "score":
            return verdict(9 if label else 1, justification=f"oracle says {label}")
        return verdict(label, justification=f"oracle says {label}")

    return reply


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, judge_server: ScriptedJudge) -> Path:
    for name in [name for name in os.environ if name.startswith("PROP_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("PROP_API_BASE", judge_server.base_url)
    monkeypatch.setenv("PROP_RETRIES", "0")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def calibrate(*argv: str) -> int:
    return main(["calibrate", "--model", "openai/judge-model", *argv])


def test_the_shipped_set_is_the_generator_output_and_fit_for_purpose() -> None:
    spec = importlib.util.spec_from_file_location(
        "calibration_set", ROOT / "tools" / "calibration_set.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    lines = [json.dumps(i, sort_keys=True, ensure_ascii=False) for i in module.build()]
    assert shipped_set().read_text(encoding="utf-8").splitlines() == lines
    items = load_set(shipped_set())
    assert len(items) >= 150
    assert sum(item.label for item in items) * 2 == len(items)  # balanced
    tags = {tag for item in items for tag in item.tags}
    for needed in (
        "negation",
        "near-miss",
        "thought-speech",
        "persona-behaviour",
        "counting",
        "who-said-what",
        "absence",
        "injection",
        "tool-calls",
        "plain-text",
        "world",
        "single-agent",
        "chat",
        "multi-agent",
    ):
        assert needed in tags, needed
    kinds = {item.kind for item in items}
    assert kinds == {"check", "score"}
    # Every item's judge request is distinct, so an oracle can answer from the request alone.
    assert len(user_turns(items)) == len(items)


def test_an_always_true_judge_is_not_fit(
    env: Path, judge_server: ScriptedJudge, capsys: pytest.CaptureFixture[str]
) -> None:
    judge_server.default = echo_fn(always_true)
    code = calibrate("--max-false-pass", "0.1", "--json", "out.json")
    out = capsys.readouterr().out
    assert code == 1, out
    result = json.loads((env / "out.json").read_text())
    assert result["false_pass_rate"] == 1.0
    assert result["false_fail_rate"] == 0.0
    assert result["balanced_accuracy"] == 0.5
    assert result["items"] == len(load_set(shipped_set()))
    assert len(result["wrong"]) == result["items"] // 2
    assert all(not wrong["label"] for wrong in result["wrong"])
    assert result["score_auc"] == 0.5
    assert out.splitlines()[-1].startswith("NOT FIT: judge openai/judge-model")
    assert "false-pass rate 1.00 > 0.10" in out.splitlines()[-1]


def test_a_perfect_judge_is_fit_and_recorded(
    env: Path, judge_server: ScriptedJudge, capsys: pytest.CaptureFixture[str]
) -> None:
    judge_server.default = echo_fn(oracle(load_sets([])))
    code = calibrate(
        "--min-balanced-accuracy", "0.95", "--max-false-pass", "0", "--json", "out.json"
    )
    out = capsys.readouterr().out
    assert code == 0, out
    result = json.loads((env / "out.json").read_text())
    for name in (
        "items",
        "balanced_accuracy",
        "false_pass_rate",
        "false_fail_rate",
        "parse_failures",
        "score_auc",
        "agreement",
        "seconds",
        "cost_usd",
        "model",
        "prompt_version",
        "wrong",
    ):
        assert name in result
    assert result["balanced_accuracy"] == 1.0
    assert result["false_pass_rate"] == 0.0
    assert result["score_auc"] == 1.0
    assert result["wrong"] == []
    assert result["agreement"] is None
    assert out.splitlines()[-1].startswith("FIT: judge openai/judge-model")
    record = json.loads((env / ".propositions/calibrations.json").read_text())
    [(key, saved)] = record.items()
    assert key.startswith("openai/judge-model (prompt ")
    assert saved["balanced_accuracy"] == 1.0
    # A second run is served by the verdict cache: no judge call at all.
    calls = len(judge_server.requests)
    assert calibrate("--json", "again.json") == 0
    assert len(judge_server.requests) == calls
    assert json.loads((env / "again.json").read_text())["cache_hits"] == result["items"]


def test_samples_give_agreement_and_parse_failures_count_as_wrong(
    env: Path, judge_server: ScriptedJudge, capsys: pytest.CaptureFixture[str]
) -> None:
    items = [
        {
            "id": "a",
            "kind": "check",
            "target": {"text": "Ana: yes."},
            "claim": "Ana says yes.",
            "label": True,
        },
        {
            "id": "b",
            "kind": "check",
            "target": {"text": "Ana: no."},
            "claim": "Ana says yes.",
            "label": False,
        },
        {
            "id": "c",
            "kind": "check",
            "target": {"text": "Bo: hi."},
            "claim": "Bo greets.",
            "label": True,
        },
    ]
    (env / "mine.jsonl").write_text("".join(json.dumps(i) + "\n" for i in items))
    from tests.support.judge_server import sequence, text

    judge_server.on("Ana: yes.", verdict(True))
    # Sample 0 says False, samples 1 and 2 say True: the majority passes, but the samples differ.
    judge_server.on("Ana: no.", sequence(verdict(False), verdict(True), verdict(True)))
    judge_server.on("Bo: hi.", text("I cannot decide."))
    code = calibrate(
        "--set", "mine.jsonl", "--samples", "3", "--concurrency", "1", "--json", "out.json"
    )
    assert code == 0  # no bar given: the exit code does not judge
    result = json.loads((env / "out.json").read_text())
    assert result["parse_failures"] == 1
    assert result["agreement"] == 0.5  # of the two answered items, one had split samples
    assert result["false_pass_rate"] == 1.0
    assert result["balanced_accuracy"] == 0.25  # 1 of 2 positives right, 0 of 1 negatives
    assert {w["id"] for w in result["wrong"]} == {"b", "c"}
    [unparsed] = [w for w in result["wrong"] if w["id"] == "c"]
    assert unparsed["error"] and unparsed["judged_pass"] is None
    assert "NOT FIT" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{", "mine.jsonl:2: not valid JSON"),
        (
            '{"id": "x", "kind": "bool", "target": {"text": "t"}, "claim": "c", "label": true}',
            'expected "kind"',
        ),
        (
            '{"id": "x", "kind": "check", "target": {"text": "t"}, "claim": "c", "label": "yes"}',
            'expected "label"',
        ),
        (
            '{"id": "x", "kind": "check", "target": {"html": "t"}, "claim": "c", "label": true}',
            "exactly one of text, chat, world, agent",
        ),
        (
            '{"id": "x", "kind": "check", "target": {"world": {"name": "W", "events": [["dance", "A"]]}}, "claim": "c", "label": true}',
            "unknown world event",
        ),
        (
            '{"id": "ok", "kind": "check", "target": {"text": "t"}, "claim": "c", "label": true}',
            "id 'ok' already used at mine.jsonl:1",
        ),
    ],
)
def test_a_bad_item_is_a_usage_error_naming_file_and_line(
    env: Path, line: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    good = '{"id": "ok", "kind": "check", "target": {"text": "t"}, "claim": "c", "label": true}'
    (env / "mine.jsonl").write_text(good + "\n" + line + "\n")
    with pytest.raises(CalibrationError, match=r"mine\.jsonl"):
        load_set(env / "mine.jsonl")
    assert calibrate("--set", "mine.jsonl") == 2
    err = capsys.readouterr().err
    assert message in err and "mine.jsonl" in err


@pytest.mark.parametrize(
    ("kind", "message"),
    [
        ("deep", "mine.jsonl:2: JSON nested too deeply to be read"),
        ("enormous-line", "mine.jsonl:2: a line longer than 1 MiB"),
        ("endless", "/dev/zero:1: a line longer than 1 MiB"),
    ],
)
def test_a_set_that_cannot_be_read_is_named_not_the_cache(
    env: Path,
    judge_server: ScriptedJudge,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    kind: str,
    message: str,
) -> None:
    # A smaller bound than the shipped one, so that the endless file is refused after 1 MiB.
    monkeypatch.setattr(checks, "LINE_LIMIT", 2**20)
    good = '{"id": "ok", "kind": "check", "target": {"text": "t"}, "claim": "c", "label": true}'
    bad = "[" * 100_000 + "]" * 100_000 if kind == "deep" else "x" * (2**20 + 1)
    (env / "mine.jsonl").write_text(good + "\n" + bad + "\n")
    assert calibrate("--set", "/dev/zero" if kind == "endless" else "mine.jsonl") == 2
    err = capsys.readouterr().err
    assert message in err and "verdict cache" not in err
    assert judge_server.requests == []


def test_metrics_on_hand_made_outcomes() -> None:
    def outcome(label: bool, value: Any, kind: str = "check") -> Outcome:
        return Outcome(Item("i", kind, {"text": "t"}, "c", label), value)

    outcomes = [
        outcome(True, True),
        outcome(True, False),
        outcome(False, False),
        outcome(False, False),
        outcome(True, 8, "score"),
        outcome(False, 7, "score"),
    ]
    metrics = compute_metrics(outcomes, min_score=7)
    assert metrics.false_pass_rate == pytest.approx(1 / 3)  # the 7 meets the bar of 7
    assert metrics.false_fail_rate == pytest.approx(1 / 3)
    assert metrics.balanced_accuracy == pytest.approx(2 / 3)
    assert metrics.score_auc == 1.0
    assert score_auc([(True, 5), (False, 5)]) == 0.5
    assert score_auc([(True, None), (False, 0)]) == 0.0  # no answer never helps
    assert score_auc([(True, 3)]) is None


def test_an_inverted_judge_is_not_fit_with_false_passes(
    env: Path, judge_server: ScriptedJudge, capsys: pytest.CaptureFixture[str]
) -> None:
    labels = user_turns(load_sets([]))

    def inverted(request: RecordedRequest) -> Reply:
        label = not labels[request.messages[1]["content"]]
        return verdict((9 if label else 0) if _kind(request) == "score" else label)

    judge_server.default = echo_fn(inverted)
    assert calibrate("--min-balanced-accuracy", "0.5", "--json", "out.json") == 1
    result = json.loads((env / "out.json").read_text())
    assert result["balanced_accuracy"] == 0.0 and result["false_pass_rate"] == 1.0
    assert result["score_auc"] == 0.0


def test_an_unreachable_judge_stops_calibration(
    env: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PROP_API_BASE", "http://127.0.0.1:9/v1")
    assert calibrate("--set", str(shipped_set())) == 2
    err = capsys.readouterr().err
    assert "could not be calibrated" in err and "JudgeUnavailable" in err
    assert not (env / ".propositions/calibrations.json").exists()


GATED_TEST = """
def test_claim(world, assert_proposition):
    assert_proposition(world, "Oscar likes quiet cities.")
"""


def test_the_header_names_the_calibration_and_the_gate_refuses_a_worse_judge(
    pytester: pytest.Pytester,
    judge_server: ScriptedJudge,
    inner_run: list[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytester.makepyfile(GATED_TEST)
    cache = pytester.path / "verdicts"
    args = [a for a in inner_run if a != "--prop-cache=off"] + [f"--prop-cache-dir={cache}"]
    # Not calibrated yet: the gate refuses at start, before any test runs.
    result = pytester.runpytest_subprocess(*args, "--prop-min-calibration=0.9")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*--prop-min-calibration=0.9: the judge openai/judge-model has no calibration*calibrate --model openai/judge-model*"
        ]
    )
    assert not judge_server.requests
    # Calibrate with a judge that says True to everything.
    monkeypatch.chdir(pytester.path)
    judge_server.default = echo_fn(always_true)
    assert (
        main(
            [
                "calibrate",
                "--model",
                "openai/judge-model",
                "--api-base",
                judge_server.base_url,
                "--cache-dir",
                str(cache),
                "--concurrency",
                "4",
            ]
        )
        == 0
    )
    judge_server.default = verdict(True)
    result = pytester.runpytest_subprocess(*args, "--prop-min-calibration=0.9")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*not fit to gate (judge openai/judge-model: balanced accuracy 0.50, false-pass 1.00 on 176 items, 20*"
        ]
    )
    # The ini twin sets the same bar; a lower one lets the run go, and the header says why.
    pytester.makeini("[pytest]\nprop_min_calibration = 0.5\n")
    result = pytester.runpytest_subprocess(*args)
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        [
            "propositions: judge openai/judge-model calibrated: false pass ≤ 100.0%, false fail ≤ 3.4% (176 labeled claims; 95% upper bounds; balanced accuracy 0.50, 20*"
        ]
    )


def test_the_reasoning_effort_reaches_the_judge_and_names_the_record(
    env: Path, judge_server: ScriptedJudge, capsys: pytest.CaptureFixture[str]
) -> None:
    item = {
        "id": "a",
        "kind": "check",
        "target": {"text": "Ana: yes."},
        "claim": "Ana says yes.",
        "label": True,
    }
    (env / "one.jsonl").write_text(json.dumps(item) + "\n")
    judge_server.reasoning_efforts = frozenset({"minimal", "low", "medium", "high"})
    code = main(
        [
            "calibrate",
            "--model",
            "openai/gpt-5-mini",
            "--reasoning-effort",
            "low",
            "--set",
            "one.jsonl",
        ]
    )
    assert code == 0, capsys.readouterr()
    [request] = judge_server.requests
    assert request.body.get("reasoning_effort") == "low"
    record = json.loads((env / ".propositions/calibrations.json").read_text())
    assert list(record) == ["openai/gpt-5-mini (prompt 2) (reasoning effort low)"]
    assert (
        main(
            [
                "calibrate",
                "--model",
                "openai/gpt-5-mini",
                "--reasoning-effort",
                "extreme",
                "--set",
                "one.jsonl",
            ]
        )
        == 2
    )
    assert "--reasoning-effort" in capsys.readouterr().err


def test_a_dry_run_environment_refuses_to_judge(
    env: Path,
    judge_server: ScriptedJudge,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("PROP_DRY_RUN", "1")
    assert calibrate("--set", str(shipped_set()), "--concurrency", "1") == 2
    assert "has no cached verdict, and PROP_DRY_RUN forbids judging it" in capsys.readouterr().err
    assert judge_server.requests == []


# -- progress while items are judged ------------------------------------------------------------


class Clock:
    """A clock that moves ``step`` seconds each time it is read: the command reads it once at
    the start and once per item judged, so where its lines fall does not depend on the machine."""

    def __init__(self, step: float) -> None:
        self.step = step
        self.now = 1000.0

    def __call__(self) -> float:
        self.now += self.step
        return self.now


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def calibrate_in_process(
    env: Path, judge_server: ScriptedJudge, items: int, stream: io.StringIO, step: float
) -> None:
    """``calibrate`` on the first ``items`` of the shipped set, one at a time, its progress on
    ``stream`` timed by a Clock moving ``step`` seconds a read."""
    first = shipped_set().read_text(encoding="utf-8").splitlines()[:items]
    (env / "few.jsonl").write_text("\n".join(first) + "\n", encoding="utf-8")
    judge_server.default = echo_fn(always_true)
    argv = [
        "calibrate",
        "--model",
        "openai/judge-model",
        "--concurrency",
        "1",
        "--set",
        "few.jsonl",
    ]
    args = _build_parser().parse_args(argv)
    code = run_calibrate(args, env / "verdicts", progress_stream=stream, clock=Clock(step))
    assert code == 0
    assert len(judge_server.requests) == items


@pytest.mark.parametrize(
    ("step", "judged"),
    [
        # One second an item: the ten-second bound decides, a line every 10 items.
        (1.0, [10, 20, 30]),
        # Thirty seconds an item: the 10% bound decides, a line every 3 items.
        (30.0, [3, 6, 9, 12, 15, 18, 21, 24, 27, 30]),
    ],
)
def test_progress_in_a_log_is_a_line_now_and_then(
    env: Path,
    judge_server: ScriptedJudge,
    capsys: pytest.CaptureFixture[str],
    step: float,
    judged: list[int],
) -> None:
    log = io.StringIO()
    calibrate_in_process(env, judge_server, 30, log, step)
    lines = log.getvalue().splitlines()
    assert lines[0] == "calibrate: judging 30 items..."
    assert [int(line.split()[2]) for line in lines[1:]] == judged
    assert all(line.startswith("calibrate: judged ") for line in lines[1:])
    assert "\r" not in log.getvalue()
    if step == 30.0:
        # 27 items left at 30 s each: 13.5 minutes, said as about 14.
        assert lines[1] == "calibrate: judged 3 of 30, about 14 min left"
    assert lines[-1] == "calibrate: judged 30 of 30"
    assert " of 30" not in capsys.readouterr().out  # the results' output stays clean


def test_progress_on_a_terminal_is_one_line_rewritten(
    env: Path, judge_server: ScriptedJudge, capsys: pytest.CaptureFixture[str]
) -> None:
    terminal = Terminal()
    calibrate_in_process(env, judge_server, 5, terminal, 60.0)
    shown = terminal.getvalue()
    assert shown.endswith("\n") and shown.count("\n") == 1  # one line, ended at the close
    states = [state.rstrip() for state in shown.rstrip("\n").split("\r")[1:]]
    assert states == [
        "judging 5 items...",
        "judged 1 of 5, about 4 min left",
        "judged 2 of 5, about 3 min left",
        "judged 3 of 5, about 2 min left",
        "judged 4 of 5, about a minute left",
        "judged 5 of 5",
    ]
    # Each state is padded over the longer one before it: no leftover characters.
    assert all(len(state) >= len("judging 5 items...") for state in shown.split("\r")[2:])


def test_progress_of_the_command_in_a_ci_log_stays_short(
    tmp_path: Path, judge_server: ScriptedJudge
) -> None:
    """The real command, its standard error a pipe: whatever the machine's speed, at most the
    start line and one line per tenth of the items."""
    first = shipped_set().read_text(encoding="utf-8").splitlines()[:40]
    (tmp_path / "few.jsonl").write_text("\n".join(first) + "\n", encoding="utf-8")
    judge_server.default = echo_fn(always_true)
    environ = {k: v for k, v in os.environ.items() if not k.startswith("PROP_")}
    environ.update(PROP_API_BASE=judge_server.base_url, PROP_RETRIES="0")
    done = subprocess.run(
        [
            *(sys.executable, "-m", "pytest_propositions", "calibrate"),
            *("--model", "openai/judge-model", "--set", "few.jsonl"),
        ],
        cwd=tmp_path,
        env=environ,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert lines[0] == "calibrate: judging 40 items..."
    assert 1 <= len(lines) <= 11, lines
    assert all(line.startswith("calibrate: judged ") for line in lines[1:]), lines
    assert "\r" not in done.stderr
    assert "NOT FIT" in done.stdout


def test_item_text_is_printed_escaped_never_obeyed(
    env: Path, judge_server: ScriptedJudge, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 48: ids, claims and tags come from the user's file; a terminal escape (here one
    that clears the screen, one that sets the window title) or a carriage return in them is
    shown as its escape, never written raw."""
    hostile = {
        "id": "esc\x1b[2J",
        "kind": "check",
        "target": {"text": "Oscar: hello."},
        "claim": "Oscar greets\r\x1b]0;pwned\x07 Ana.",
        "label": True,
        "tags": ["tag\x9b31m"],
    }
    (env / "mine.jsonl").write_text(json.dumps(hostile) + "\n", encoding="utf-8")
    judge_server.default = verdict(False)
    assert calibrate("--set", "mine.jsonl") == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\r" not in out and "\x07" not in out and "\x9b" not in out
    assert "tag\\x9b31m" in out
    assert "esc\\x1b[2J" in out
    assert "Oscar greets\\r\\x1b]0;pwned\\x07 Ana." in out
    # A usage error quoting the item's text is escaped too.
    bad = {**hostile, "target": {"world": {"name": "W\x1b[2J", "events": [["dance", "A"]]}}}
    (env / "mine.jsonl").write_text(json.dumps(bad) + "\n", encoding="utf-8")
    assert calibrate("--set", "mine.jsonl") == 2
    err = capsys.readouterr().err
    assert "unknown world event" in err and "\x1b" not in err
