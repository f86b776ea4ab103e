"""The sample outputs of docs/reports.md and docs/migrating.md are what a run prints.

Each sample's suite runs against the scripted judge, as the model the sample names; the sample is
compared with the lines the run printed. Only what differs from run to run is normalised, on both
sides: a recording time, a judging time, the tokens and the cost.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytest_propositions.calibration import record_key, save_record
from pytest_propositions.judging.prompts import PROMPT_VERSION
from tests.support.calibration import calibration_record
from tests.support.docs_blocks import page_blocks
from tests.support.judge_server import ScriptedJudge, text, verdict

pytest_plugins = ["pytester"]

DOCS = Path(__file__).resolve().parent.parent / "docs"
VARYING = [
    (re.compile(r"recorded \S+"), "recorded TIME"),
    (re.compile(r"key: [0-9a-f]{16}"), "key: KEY"),
    (re.compile(r"judged live in \d+\.\d+s"), "judged live in Ns"),
    (re.compile(r"\d+ tokens?\b"), "N tokens"),
    (re.compile(r"\$\d+\.\d{4}"), "$N"),
    (re.compile(r"\d+\.\d+s judging"), "Ns judging"),
]


def normalised(lines: list[str]) -> str:
    joined = "\n".join(lines) + "\n"
    for pattern, replacement in VARYING:
        joined = pattern.sub(replacement, joined)
    return joined


def sample(page: str, starting: str) -> str:
    """The page's ``text`` block whose first line starts with STARTING."""
    [block] = [
        b.code for b in page_blocks(DOCS / page) if b.lang == "text" and b.code.startswith(starting)
    ]
    return block


def summary(out: list[str]) -> str:
    [line] = [line for line in out if re.match(r"propositions: \d+ claims?,", line)]
    return line


def section(out: list[str], first: str) -> list[str]:
    """The ``proposition`` section's dashed line and its lines from the one starting FIRST to the
    end of that claim (a blank line or the next claim)."""
    start = out.index(next(line for line in out if line.startswith(first)))
    dashes = max(i for i in range(start) if re.match(r"-+ proposition -+$", out[i]))
    end = start + 1
    while end < len(out) and out[end].startswith("  "):
        end += 1
    return [out[dashes], *out[start:end]]


def cached_args(args: list[str], model: str, cache_dir: Path) -> list[str]:
    kept = [a for a in args if not a.startswith(("--prop-cache=", "--prop-model="))]
    return [*kept, f"--prop-model={model}", "--prop-cache=use", f"--prop-cache-dir={cache_dir}"]


# -- docs/migrating.md: "What a migrated test shows", and reports.md's line with claims by call --

MIGRATED_CONFTEST = """
import pytest

from tests.support.tinytroupe_like import LibraryPerson, LibraryWorld


@pytest.fixture
def world():
    oscar = LibraryPerson("Oscar", {"occupation": {"title": "Architect"}})
    oscar.listen("Tell me about your travel preferences.")
    oscar.act("TALK", "I love Kyoto: its temples. I go back every year.")
    oscar.act("DONE")
    return LibraryWorld("Focus group", [oscar])
"""

MIGRATED = """
from pytest_propositions import Proposition, check_proposition, compute_score


def test_travel(world):
    assert check_proposition(world, "Oscar talks about travel.")
    assert not check_proposition(world, "Oscar says he is a chef.")
    assert compute_score(world, "Oscar is enthusiastic about travel.") >= 5
    assert Proposition("Oscar names a city he likes.", target=world, last_n=3).check()


def test_kyoto(world):
    assert check_proposition(world, "Oscar hates Kyoto.")
"""

FIXTURES = """
def test_city(world, assert_proposition):
    assert_proposition(world, "Oscar names a city.")


def test_cats(world, assert_proposition):
    assert_proposition(world, "Oscar mentions cats.")
"""


def script_migrated(judge: ScriptedJudge) -> None:
    judge.on("Oscar talks about travel.", verdict(True, "He describes his trips."))
    judge.on("Oscar says he is a chef.", verdict(False, "He is an architect."))
    judge.on("Oscar is enthusiastic", verdict(8, "He goes back every year."))
    judge.on("Oscar names a city", verdict(True, "He names Kyoto."))
    kyoto = "Oscar says he loves Kyoto and its temples, and goes back every year."
    judge.on("Oscar hates Kyoto.", verdict(False, kyoto))
    judge.on("Oscar mentions cats.", verdict(False, "He never mentions an animal."))


def test_the_migration_guides_sample_is_what_a_cached_rerun_prints(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, inner_run: list[str]
) -> None:
    script_migrated(judge_server)
    pytester.makeconftest(MIGRATED_CONFTEST)
    pytester.makepyfile(test_travel=MIGRATED)
    args = cached_args(inner_run, "openai/gpt-5-mini", pytester.path / "verdicts")
    pytester.runpytest(*args, "test_travel.py").assert_outcomes(passed=1, failed=1)
    rerun = pytester.runpytest(*args, "test_travel.py")
    rerun.assert_outcomes(passed=1, failed=1)
    out = rerun.outlines
    printed = normalised(section(out, "NOT UPHELD: Oscar hates Kyoto."))
    shown = normalised(sample("migrating.md", "-").splitlines())
    assert shown == printed, (
        f"docs/migrating.md's failure sample is stale; a run prints:\n{printed}"
    )
    lines = [summary(out), next(line for line in out if "every verdict (" in line)]
    printed = normalised(lines)
    shown = normalised(sample("migrating.md", "propositions: ").splitlines())
    assert shown == printed, (
        f"docs/migrating.md's summary sample is stale; a run prints:\n{printed}"
    )

    # reports.md: the same claims by call from the cache, with two claims of fixtures judged live.
    pytester.makepyfile(test_fixtures=FIXTURES)
    both = pytester.runpytest(*args, "test_travel.py", "test_fixtures.py")
    both.assert_outcomes(passed=2, failed=2)
    printed = normalised([summary(both.outlines)])
    shown = normalised([line for line in reports_samples() if " by call (" in line])
    assert shown == printed, f"docs/reports.md's by-call sample is stale; a run prints:\n{printed}"


def reports_samples() -> list[str]:
    """The one-line summary samples of docs/reports.md's "The counts"."""
    return [
        b.code.rstrip("\n")
        for b in page_blocks(DOCS / "reports.md")
        if b.lang == "text" and b.code.count("\n") == 1 and re.match(r"propositions: \d+", b.code)
    ]


# -- docs/reports.md: the counts of a run with every kind of claim ---------------------------------

EVERY_KIND = """
import pytest

from pytest_propositions import Proposition


@pytest.mark.parametrize("n", range(9))
def test_cached(world, assert_proposition, n):
    assert_proposition(world, f"Oscar answers question {n}.")


def test_live(world, assert_proposition):
    assert_proposition(world, "Oscar names a kind of city.")


def test_failing(world, assert_proposition):
    assert_proposition(world, "Oscar mentions cats.")


def test_unanswered(world, assert_proposition):
    assert_proposition(world, "Oscar mentions his budget.")


def test_not_applicable(world, assert_proposition):
    hotels = Proposition(
        "Oscar names a hotel.", precondition_function=lambda target, additional_context, claim_variables: False
    )
    assert_proposition(world, hotels)
"""


def test_the_reports_pages_count_sample_is_what_a_run_prints(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, inner_run: list[str]
) -> None:
    judge_server.on("Oscar mentions cats.", verdict(False, "He never mentions an animal."))
    judge_server.on("Oscar mentions his budget.", text("I would rather not say."))
    pytester.makepyfile(test_counts=EVERY_KIND)
    args = cached_args(inner_run, "openai/gpt-4.1-mini", pytester.path / "verdicts")
    pytester.runpytest(*args, "-k", "cached").assert_outcomes(passed=9, deselected=4)
    result = pytester.runpytest(*args)
    # pytest may count warnings between the outcomes (an already imported plugin is one).
    assert re.search(
        r"= 1 failed, 11 passed, (?:\d+ warnings?, )?1 judge error in ", result.outlines[-1]
    ), result.outlines[-1]
    printed = normalised([summary(result.outlines)])
    shown = normalised([line for line in reports_samples() if "skipped by precondition" in line])
    assert shown == printed, f"docs/reports.md's count sample is stale; a run prints:\n{printed}"


# -- docs/reports.md: the judge's measured error ---------------------------------------------------

CALIBRATED = "openai/gpt-4.1-mini"


def test_the_reports_pages_measured_error_sample_is_what_a_run_prints(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, inner_run: list[str]
) -> None:
    judge_server.on("Oscar mentions cats.", verdict(False, "He never mentions an animal."))
    cache_dir = pytester.path / "verdicts"
    save_record(cache_dir, record_key(CALIBRATED, PROMPT_VERSION), calibration_record(CALIBRATED))
    pytester.makepyfile(
        test_report="""
def test_pets(world, assert_proposition):
    assert_proposition(world, "Oscar mentions cats.")
"""
    )
    result = pytester.runpytest(*cached_args(inner_run, CALIBRATED, cache_dir))
    result.assert_outcomes(failed=1)
    out = result.outlines
    header = next(line for line in out if line.startswith(f"propositions: judge {CALIBRATED}"))
    dashes, claim, *rest = section(out, "FAILED: Oscar mentions cats.")
    model = next(line for line in rest if line.startswith("  model: "))
    measured = next(line for line in rest if line.startswith("  judge's measured error: "))
    printed = normalised([header, dashes, claim, "  ...", model, measured])
    shown = normalised(sample("reports.md", "propositions: judge ").splitlines())
    assert shown == printed, (
        f"docs/reports.md's measured-error sample is stale; a run prints:\n{printed}"
    )
