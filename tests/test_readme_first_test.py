"""The README's "first test of your own" runs as printed: its conftest.py and test file, judged by
the scripted judge playing the real model the README names (one claim must not hold)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.judge_server import RecordedRequest, Reply, ScriptedJudge, echo_fn, verdict

README = Path(__file__).resolve().parent.parent / "README.md"


def readme_file(name: str) -> str:
    """The python block of the README whose first line is ``# NAME``."""
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    [code] = [block for block in blocks if block.startswith(f"# {name}\n")]
    return code


def test_the_readmes_first_test_passes_and_replays(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, inner_run: list[str]
) -> None:
    def answer(request: RecordedRequest) -> Reply:
        if "How true is the claim" in request.text:
            return verdict(8)
        return verdict("Lisa dislikes animals." not in request.text)

    judge_server.default = echo_fn(answer)
    pytester.makeconftest(readme_file("conftest.py"))
    pytester.makepyfile(test_travel=readme_file("test_travel.py"))
    args = [arg for arg in inner_run if not arg.startswith("--prop-cache=")]
    args.append(f"--prop-cache-dir={pytester.path / 'verdicts'}")
    first = pytester.runpytest(*args, "test_travel.py")
    first.assert_outcomes(passed=1)
    assert len(judge_server.requests) == 4
    judge_server.clear_requests()
    replay = pytester.runpytest(*args, "--prop-cache=replay", "test_travel.py")
    replay.assert_outcomes(passed=1)
    assert judge_server.requests == []
