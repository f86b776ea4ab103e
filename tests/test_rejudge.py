"""cache rejudge (another judge answers the stored requests) and replay misses that explain themselves."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_propositions.__main__ import main
from pytest_propositions.store.cache_record import pack_request, unpack_request
from pytest_propositions.store.replay_miss import word_changes
from tests.support.judge_server import ScriptedJudge, verdict
from tests.support.outcomes import assert_counts

SUITE = """
def test_travel(world, assert_proposition, proposition_judge):
    assert_proposition(world, "Oscar likes quiet cities.")
    proposition_judge(world, "Oscar mentions architecture.")
    proposition_judge(world, "Oscar is from Lisbon.")

def test_score(world, min_score):
    min_score(world, "Oscar answers the question.", 7)
"""


def _args(inner_run: list[str], cache: Path, model: str = "openai/judge-model") -> list[str]:
    kept = [
        a for a in inner_run if a not in ("--prop-cache=off", "--prop-model=openai/judge-model")
    ]
    return [*kept, f"--prop-cache-dir={cache}", f"--prop-model={model}"]


def test_rejudge_stores_the_new_judge_answers_for_replay_and_lists_flips(
    pytester: pytest.Pytester,
    judge_server: ScriptedJudge,
    inner_run: list[str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    pytester.makepyfile(SUITE)
    cache = pytester.path / "verdicts"
    judge_server.on("Oscar answers the question.", verdict(8))
    pytester.runpytest_inprocess(*_args(inner_run, cache)).assert_outcomes(passed=2)
    capsys.readouterr()
    main(["cache", "export", "--cache-dir", str(cache), "-o", str(pytester.path / "before.jsonl")])

    judge_server.reset()
    judge_server.on("Oscar answers the question.", verdict(3, justification="Not really."))
    judge_server.on("Oscar is from Lisbon.", verdict(False, justification="He never says so."))
    judge_server.default = verdict(True)
    code = main(
        [
            "cache",
            "rejudge",
            "--model",
            "openai/other-judge",
            "--api-base",
            judge_server.base_url,
            "--cache-dir",
            str(cache),
        ]
    )
    out = capsys.readouterr().out.splitlines()
    assert code == 0
    assert out[-1] == "4 re-judged, 2 flipped, 0 score changes"
    text = "\n".join(out)
    assert (
        "FLIPPED test_rejudge_stores_the_new_judge_answers_for_replay_and_lists_flips.py::test_travel: Oscar is from Lisbon."
        in text
    )
    assert "  openai/judge-model: True -> openai/other-judge: False" in text
    assert "  openai/judge-model: 8 -> openai/other-judge: 3" in text
    assert "new justification: Not really." in text
    asked = len(judge_server.requests)
    assert asked == 4
    # The requests the new judge got are exactly what a test run would send it.
    assert {r.model for r in judge_server.requests} == {"other-judge"}

    # Replay with the new model: no judge call, and its verdicts decide.
    result = pytester.runpytest_inprocess(
        *_args(inner_run, cache, "openai/other-judge"), "--prop-cache=replay"
    )
    result.assert_outcomes(passed=1, failed=1)
    assert len(judge_server.requests) == asked
    # Asking again re-judges nothing new: the answers are cached under the new keys.
    capsys.readouterr()
    main(
        [
            "cache",
            "rejudge",
            "--model",
            "openai/other-judge",
            "--api-base",
            judge_server.base_url,
            "--cache-dir",
            str(cache),
        ]
    )
    assert capsys.readouterr().out.splitlines()[-1] == "4 re-judged, 2 flipped, 0 score changes"
    assert len(judge_server.requests) == asked

    # The export stays byte-stable, and round-trips through import.
    first = pytester.path / "a.jsonl"
    second = pytester.path / "b.jsonl"
    main(["cache", "export", "--cache-dir", str(cache), "-o", str(first)])
    main(["cache", "import", "--cache-dir", str(pytester.path / "copy"), str(first)])
    main(["cache", "export", "--cache-dir", str(pytester.path / "copy"), "-o", str(second)])
    assert first.read_bytes() == second.read_bytes()
    assert first.read_text().count("\n") == 8
    # The old judge's lines are unchanged by the rejudge.
    assert set((pytester.path / "before.jsonl").read_text().splitlines()) <= set(
        first.read_text().splitlines()
    )


def test_rejudge_without_a_cache_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main(["cache", "rejudge", "--model", "openai/x", "--cache-dir", str(tmp_path / "none")])
        == 2
    )
    assert "no verdict cache" in capsys.readouterr().err


def test_a_replay_miss_names_the_nearest_request_and_what_changed(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, inner_run: list[str]
) -> None:
    pytester.makepyfile(
        "def test_travel(world, assert_proposition):\n    assert_proposition(world, 'Oscar likes quiet cities.')\n"
    )
    cache = pytester.path / "verdicts"
    pytester.runpytest_inprocess(*_args(inner_run, cache)).assert_outcomes(passed=1)
    # One word of the trajectory changes.
    conftest = pytester.path / "conftest.py"
    conftest.write_text(conftest.read_text().replace("Quiet cities", "Busy cities"))
    result = pytester.runpytest_inprocess(*_args(inner_run, cache), "--prop-cache=replay")
    assert_counts(result, judge_errors=1)
    result.stdout.fnmatch_lines(
        [
            "*VerdictMissing: no recorded verdict for claim 'Oscar likes quiet cities.' in test_a_replay_miss*"
            "The nearest recorded request for this claim (key * in test_a_replay_miss*::test_travel, "
            "recorded *) differs in: the claim or recording: 'Quiet' -> 'Busy'.",
        ]
    )
    # Another model.
    conftest.write_text(conftest.read_text().replace("Busy cities", "Quiet cities"))
    result = pytester.runpytest_inprocess(
        *_args(inner_run, cache, "openai/newer"), "--prop-cache=replay"
    )
    assert_counts(result, judge_errors=1)
    result.stdout.fnmatch_lines(["*differs in: model 'openai/judge-model' -> 'openai/newer'.*"])
    # A claim never recorded says so.
    pytester.makepyfile(
        "def test_travel(world, assert_proposition):\n    assert_proposition(world, 'Oscar hates travel.')\n"
    )
    result = pytester.runpytest_inprocess(*_args(inner_run, cache), "--prop-cache=replay")
    result.stdout.fnmatch_lines(["*No verdict for this claim is recorded at all.*"])
    assert len(judge_server.requests) == 1


def test_a_packed_request_round_trips_and_leaves_the_model_to_the_record() -> None:
    material = {
        "model": "m",
        "messages": [{"role": "user", "content": "é " * 500}],
        "kind": "check",
    }
    packed = pack_request(material)
    assert packed == pack_request(dict(reversed(list(material.items()))))  # deterministic
    assert len(packed["data"]) < 200
    assert unpack_request({"model": "other", "request": packed}) == {**material, "model": "other"}
    assert unpack_request({"model": "m"}) is None
    assert (
        unpack_request({"model": "m", "request": {"encoding": "zlib+base64", "data": "!!"}}) is None
    )
    assert word_changes("a b c d", "a x c d e") == ["'b' -> 'x'", "added 'e'"]
