"""diff: two --prop-report files of the same suite, judged differently, compared claim by claim."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_propositions import checks
from pytest_propositions.__main__ import main
from tests.support.judge_server import RecordedRequest, Reply, ScriptedJudge, echo_fn, verdict

SUITE = """
def test_travel(world, assert_proposition, proposition_judge):
    proposition_judge(world, "Oscar mentions architecture.")
    proposition_judge(world, "Oscar mentions architecture.")
    proposition_judge(world, "Oscar names a city.")

def test_scores(world, expect_proposition, proposition_judge):
    expect_proposition(world, "Oscar answers the question.", min_score=7)
    expect_proposition(world, "Oscar is concise.", min_score=7)
    proposition_judge(world, "Oscar speaks English.", kind="score")
"""


def _report(pytester: pytest.Pytester, args: list[str], name: str, failed: int) -> Path:
    result = pytester.runpytest_inprocess(*args, f"--prop-report={name}")
    result.assert_outcomes(passed=2 - failed, failed=failed)
    return pytester.path / name


def test_an_inverted_judge_shows_flips(
    pytester: pytest.Pytester,
    judge_server: ScriptedJudge,
    inner_run: list[str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    pytester.makepyfile(SUITE)
    judge_server.on("Oscar answers the question.", verdict(8, justification="He answers."))
    judge_server.on("Oscar is concise.", verdict(8))
    judge_server.on("Oscar speaks English.", verdict(9))
    judge_server.default = verdict(True, justification="Old judge: yes.")
    old = _report(pytester, inner_run, "old.json", failed=0)

    judge_server.reset()
    judge_server.on("Oscar answers the question.", verdict(3, justification="Barely."))
    judge_server.on("Oscar is concise.", verdict(9))
    judge_server.on("Oscar speaks English.", verdict(2))
    calls = iter(range(100))

    def inverted(request: RecordedRequest) -> Reply:
        # The first "mentions architecture" stays True, the second one flips, as does the city.
        if "Oscar mentions architecture." in request.text and next(calls) == 0:
            return verdict(True, justification="New judge: yes.")
        return verdict(False, justification="New judge: no <b>evidence</b>.")

    judge_server.default = echo_fn(inverted)
    pytester.makepyfile(
        SUITE.replace(
            '    proposition_judge(world, "Oscar names a city.")\n',
            '    proposition_judge(world, "Oscar is polite.")\n',
        )
    )
    new = _report(pytester, [*inner_run, "--prop-concurrency=1"], "new.json", failed=1)
    capsys.readouterr()

    assert main(["diff", str(old), str(new)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == "2 flipped, 2 score changes, 1 added, 1 removed"
    text = "\n".join(out)
    assert "FLIPPED test_an_inverted_judge_shows_flips.py::test_travel" in text
    assert "  True -> False" in text
    assert "old [openai/judge-model]: Old judge: yes." in text
    assert "new [openai/judge-model]: New judge: no <b>evidence</b>." in text
    # A score across its bar flipped; one that moved above it is only a score change.
    assert "  8/9, minimum 7: passes -> 3/9, minimum 7: fails" in text
    assert (
        "SCORE   test_an_inverted_judge_shows_flips.py::test_scores: Oscar is concise. "
        "8/9, minimum 7: passes -> 9/9, minimum 7: passes" in text
    )
    # Without a bar, a score cannot flip: any move is a score change.
    assert "Oscar speaks English. 9/9 -> 2/9" in text
    assert (
        "ADDED   test_an_inverted_judge_shows_flips.py::test_travel: Oscar is polite. (False)"
        in text
    )
    assert (
        "REMOVED test_an_inverted_judge_shows_flips.py::test_travel: Oscar names a city. (True)"
        in text
    )
    # A report compared with itself: nothing changed, exit 0.
    assert main(["diff", str(old), str(old)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "0 flipped, 0 score changes, 0 added, 0 removed"
    ]


def test_a_file_that_is_not_a_report_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "a.json").write_text(json.dumps({"verdicts": []}))
    (tmp_path / "b.json").write_text(json.dumps([1, 2]))
    assert main(["diff", str(tmp_path / "a.json"), str(tmp_path / "b.json")]) == 2
    assert "b.json: expected a --prop-report file" in capsys.readouterr().err
    assert main(["diff", str(tmp_path / "a.json"), str(tmp_path / "missing.json")]) == 2
    assert "cannot read" in capsys.readouterr().err
    (tmp_path / "c.json").write_text(json.dumps({"verdicts": [{"test_id": "t"}]}))
    assert main(["diff", str(tmp_path / "a.json"), str(tmp_path / "c.json")]) == 2
    assert "c.json: verdict #0 is not a report record" in capsys.readouterr().err


# Deeper than the interpreter follows: json.loads raises RecursionError.
DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize(
    ("kind", "message"),
    [
        ("deep", "b.json: JSON nested too deeply to be read"),
        ("too-large", "b.json: larger than 1 MiB"),
        ("endless", "/dev/zero: larger than 1 MiB"),
    ],
)
def test_a_report_that_cannot_be_read_is_named_not_the_cache(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    kind: str,
    message: str,
) -> None:
    # A smaller bound than the shipped one, so that the endless file is refused after 1 MiB.
    monkeypatch.setattr(checks, "DOCUMENT_LIMIT", 2**20)
    (tmp_path / "a.json").write_text(json.dumps({"verdicts": []}))
    other = tmp_path / "b.json"
    if kind == "deep":
        other.write_text(DEEP)
    elif kind == "too-large":
        other.write_text(json.dumps({"verdicts": [], "padding": "x" * 2**20}))
    else:
        other = Path("/dev/zero")
    assert main(["diff", str(tmp_path / "a.json"), str(other)]) == 2
    err = capsys.readouterr().err
    assert message in err and "verdict cache" not in err
