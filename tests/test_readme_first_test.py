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


def readme_sample() -> str:
    """The README's sample of a failing claim (the text block after the first test)."""
    text = README.read_text()
    section = text[text.index("## A first test of your own") :]
    [block] = re.findall(r"```text\n(.*?)```", section[: section.index("\n## ", 1)], flags=re.S)
    return block


def test_the_readmes_failure_sample_is_what_a_run_prints(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, inner_run: list[str]
) -> None:
    """The sample is a real run's output: the README's files, its model name and command, the
    scripted judge playing that model and rejecting the first claim, the second run from the
    cache. Only the recording time differs from run to run."""
    judge_server.on(
        "Oscar mentions his travel preferences.",
        verdict(
            False, justification="Oscar only introduces himself; he says nothing about travel."
        ),
    )
    pytester.makeconftest(readme_file("conftest.py"))
    pytester.makepyfile(test_travel=readme_file("test_travel.py"))
    args = [a for a in inner_run if not a.startswith(("--prop-cache=", "--prop-model="))]
    args += ["--prop-model=openai/gpt-4.1-mini", f"--prop-cache-dir={pytester.path / 'v'}"]
    pytester.runpytest(*args, "test_travel.py").assert_outcomes(failed=1)
    second = pytester.runpytest(*args, "test_travel.py")
    second.assert_outcomes(failed=1)
    out = second.outlines
    start = next(i for i, line in enumerate(out) if line.startswith("E       pytest_propositions"))
    section = next(i for i, line in enumerate(out) if line.startswith("------") and i > start)
    end = next(i for i, line in enumerate(out) if line.startswith("propositions: 1 claim"))
    body = section + 1
    while body < end and out[body] and not out[body].startswith(("=", "_", "-")):
        body += 1
    shown = [out[start], *out[section:body], out[end]]
    recorded = re.compile(r"recorded \S+")
    printed = "\n".join(recorded.sub("recorded TIME", line) for line in shown) + "\n"
    sample = recorded.sub("recorded TIME", readme_sample())
    assert sample == printed, f"README.md's sample is stale; a run prints:\n{printed}"


def test_the_readme_suggests_report_mode_on_the_bundled_judge() -> None:
    """The tiny bundled judge may reject a reasonable claim: the README says how to see every
    verdict, the soft claim's included, instead of a failure at the first line."""
    text = README.read_text()
    section = text[text.index("## A first test of your own") :]
    section = section[: section.index("\n## ", 1)]
    assert "pytest --prop-outcome=report test_travel.py" in section
    assert "Lisa mentions beaches." in section.split("--prop-outcome=report", 1)[1]


def test_in_report_mode_every_claim_of_the_first_test_is_listed_the_soft_one_too(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, inner_run: list[str]
) -> None:
    judge_server.on("Oscar mentions his travel preferences.", verdict(False, justification="No."))
    judge_server.on("Lisa dislikes animals.", verdict(False))
    judge_server.on("How true is the claim", verdict(8))
    pytester.makeconftest(readme_file("conftest.py"))
    pytester.makepyfile(test_travel=readme_file("test_travel.py"))
    result = pytester.runpytest(*inner_run, "--prop-outcome=report", "test_travel.py")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["FAILED      test_travel.py::test_travel", "*Oscar mentions*"])
    result.stdout.fnmatch_lines(["*claim:   Lisa mentions beaches.*"])
    result.stdout.fnmatch_lines(["propositions: 4 claims, 3 passed, 1 failed*"])
