"""The verdict cache inside real pytest runs: record, replay, refresh, off, xdist, damage, prune.

Inner runs reach the scripted judge (tests/support/judge_server.py) over loopback HTTP. Inline
runs (``pytester.runpytest``) are quick and share this process; runs whose process state matters
(is litellm imported? several xdist workers?) use ``pytester.runpytest_subprocess``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pytest_propositions.store.cache import VerdictCache
from tests.support.judge_server import ScriptedJudge, refusal, status, text, verdict
from tests.support.outcomes import assert_counts

pytest_plugins = ["pytester"]

MODEL = "openai/judge-model"

# The inner project's conftest: a world fixture, and a probe that records, per process, whether
# litellm and pydantic were imported by the end of the session (a fully cached or replay run must
# import neither).
INNER_CONFTEST = """
import os
import sys

import pytest
from pytest_propositions.trace import Agent, World


@pytest.fixture
def world():
    oscar = Agent("Oscar", persona={"occupation": "architect"})
    room = World("Room", agents=[oscar])
    oscar.hears("Where do you like to travel?")
    oscar.says("Quiet cities with great architecture.")
    return room


def pytest_sessionfinish(session):
    who = os.environ.get("PYTEST_XDIST_WORKER", "main")
    probe = session.config.rootpath / f"litellm-imported-{who}.txt"
    probe.write_text(" ".join(m for m in PROBED if m in sys.modules) or "-")


PROBED = (
    "litellm",
    "httpx",
    "pydantic",
    "pytest_propositions.judging.live",
    "pytest_propositions.judging.progress",
    "pytest_propositions.judging.transport",
    "pytest_propositions.reference_config",
    "pytest_propositions.claims.transcripts",
    "pytest_propositions.reports.summary",
    "pytest_propositions.reports.junit",
    "pytest_propositions.reports.json_report",
)
"""

# Five tests, six claims (checks and scores); one claim is false.
FIVE_TESTS = """
def test_travel(world, assert_proposition):
    assert_proposition(world, "Oscar talks about travel.")

def test_architecture_score(world, min_score):
    min_score(world, "Oscar likes architecture.", 6)

def test_calm(world, assert_proposition):
    assert_proposition(world, "Oscar is calm.", min_score=5)

def test_novel(world, assert_proposition):
    assert_proposition(world, "Oscar writes a novel about cats.")

def test_two_claims(world, assert_proposition, min_score):
    assert_proposition(world, "Oscar answers a question.")
    min_score(world, "Oscar stays in character.")
"""

FALSE_JUSTIFICATION = "Oscar never mentions a novel."


@dataclass
class Suite:
    """An inner project pointed at the scripted judge, with its own cache folder."""

    pytester: pytest.Pytester
    judge: ScriptedJudge
    cache_dir: Path

    def args(self, *extra: str, cache: str = "use") -> list[str]:
        return [
            f"--prop-model={MODEL}",
            f"--prop-api-base={self.judge.base_url}",
            f"--prop-cache={cache}",
            "--prop-retries=0",
            f"--prop-cache-dir={self.cache_dir}",
            "-p",
            "no:cacheprovider",
            *extra,
        ]

    def run(self, *extra: str, cache: str = "use") -> pytest.RunResult:
        """An inline run; the judge's request log is cleared first."""
        self.judge.clear_requests()
        return self.pytester.runpytest(*self.args(*extra, cache=cache))

    def run_subprocess(self, *extra: str, cache: str = "use") -> pytest.RunResult:
        self.judge.clear_requests()
        for probe in self.pytester.path.glob("litellm-imported-*.txt"):
            probe.unlink()
        return self.pytester.runpytest_subprocess(*self.args(*extra, cache=cache))

    def heavy_imports(self) -> dict[str, set[str]]:
        """Per process of the last subprocess run: which of litellm and pydantic it had imported."""
        return {who: found & {"litellm", "pydantic"} for who, found in self.probed().items()}

    def probed(self) -> dict[str, set[str]]:
        """Per process of the last subprocess run: which of the probed modules it had imported
        (litellm, pydantic, the live judging path and its progress line, the reference config
        reader, the reports beyond the run's counts)."""
        probes = {
            path.stem.removeprefix("litellm-imported-"): set(path.read_text().split()) - {"-"}
            for path in self.pytester.path.glob("litellm-imported-*.txt")
        }
        assert probes, "the inner conftest's probe did not run"
        return probes

    def litellm_probes(self) -> dict[str, bool]:
        """Per process of the last subprocess run: was litellm imported at session finish?"""
        return {who: "litellm" in modules for who, modules in self.heavy_imports().items()}

    def cache(self) -> VerdictCache:
        return VerdictCache(self.cache_dir)

    def records(self) -> dict[str, dict[str, Any]]:
        """Key -> stored record, read through the export (what a user would review)."""
        with self.cache() as cache:
            lines = list(cache.export_lines())
        return {entry["key"]: entry["record"] for entry in map(json.loads, lines)}


@pytest.fixture
def suite(
    pytester: pytest.Pytester,
    judge_server: ScriptedJudge,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path_factory: pytest.TempPathFactory,
) -> Suite:
    # Only what the test says reaches the inner runs: no PROP_* setting of the outer shell.
    for name in [name for name in os.environ if name.startswith("PROP_")]:
        monkeypatch.delenv(name)
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    monkeypatch.setenv("PROP_API_KEY", "test-key-not-real")
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    pytester.makeconftest(INNER_CONFTEST)
    # Outside the inner rootdir, so the cache is never collected or confused with a default one.
    cache_dir = tmp_path_factory.mktemp("verdicts") / "cache"
    return Suite(pytester, judge_server, cache_dir)


def script_five_tests(judge: ScriptedJudge) -> None:
    judge.on("novel about cats", verdict(False, justification=FALSE_JUSTIFICATION, confidence=0.8))
    judge.on("How true is the claim", verdict(8, justification="He stays on topic."))
    judge.default = verdict(True, justification="He says so.")


def call_reports(result: pytest.RunResult) -> dict[str, pytest.TestReport]:
    reports = result.reprec.getreports("pytest_runtest_logreport")  # type: ignore[attr-defined]
    return {report.nodeid: report for report in reports if report.when == "call"}


def proposition_section(report: pytest.TestReport) -> str:
    """The failure's "proposition" section, which is part of its text (JUnit's <failure> too)."""
    found = getattr(report.longrepr, "sections", [])
    sections = [content for title, content, _ in found if title == "proposition"]
    assert len(sections) == 1, found
    return sections[0]


def summary(result: pytest.RunResult) -> str:
    verdict_lines = [
        line for line in result.outlines if re.match(r"propositions: \d+ claims?, ", line)
    ]
    assert len(verdict_lines) == 1, result.outlines
    return verdict_lines[0]


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k != "PROP_CACHE_DIR"}
    return subprocess.run(
        [sys.executable, "-m", "pytest_propositions", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=environ,
        check=False,
    )


def tree_bytes(directory: Path) -> Iterator[tuple[Path, bytes]]:
    for path in sorted(directory.rglob("*")):
        if path.is_file():
            yield path, path.read_bytes()


# -- a second run of an unchanged suite --------------------------------------------------------


def test_second_run_is_served_from_the_cache(suite: Suite) -> None:
    script_five_tests(suite.judge)
    suite.pytester.makepyfile(test_suite=FIVE_TESTS)

    first = suite.run()
    first.assert_outcomes(passed=4, failed=1)
    assert len(suite.judge.requests) == 6
    assert summary(first).startswith(
        "propositions: 6 claims, 5 passed, 1 failed, 0 judge errors, 0 from cache, 6 judged live, 6 judge calls,"
    )
    first_reports = call_reports(first)

    second = suite.run()
    assert suite.judge.requests == []
    second.assert_outcomes(passed=4, failed=1)
    assert summary(second).startswith(
        "propositions: 6 claims, 5 passed, 1 failed, 0 judge errors, 6 from cache, 0 judged live, 0 judge calls,"
    )
    second_reports = call_reports(second)
    assert {k: r.outcome for k, r in first_reports.items()} == {
        k: r.outcome for k, r in second_reports.items()
    }
    failing = "test_suite.py::test_novel"
    assert first_reports[failing].failed and second_reports[failing].failed

    # The failure reports agree on everything but the provenance line.
    live = proposition_section(first_reports[failing]).splitlines()
    cached = proposition_section(second_reports[failing]).splitlines()
    assert "    " + FALSE_JUSTIFICATION in live
    provenance = [i for i, line in enumerate(live) if line.startswith("  model: ")]
    assert len(provenance) == 1
    at = provenance[0]
    assert re.fullmatch(rf"  model: {MODEL}; judged live in \d+\.\d\ds", live[at])
    assert live[:at] + live[at + 1 :] == cached[:at] + cached[at + 1 :]
    (recorded_at,) = [
        record["recorded_at"]
        for record in suite.records().values()
        if record["claim"] == "Oscar writes a novel about cats."
    ]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", recorded_at)
    assert cached[at] == f"  model: {MODEL}; from the cache, recorded {recorded_at}"


# -- replay ------------------------------------------------------------------------------------


REPLAY_TESTS = """
def test_travel(world, assert_proposition):
    assert_proposition(world, "Oscar talks about travel.")

def test_score(world, min_score):
    min_score(world, "Oscar stays in character.", 5)

def test_no_claims():
    pass
"""


def test_replay_with_an_empty_cache_names_what_is_missing(suite: Suite) -> None:
    suite.pytester.makepyfile(test_replay=REPLAY_TESTS)

    result = suite.run(cache="replay")
    assert_counts(result, passed=1, judge_errors=2)
    assert suite.judge.requests == []
    assert not suite.cache_dir.exists(), "replay must not create a cache"
    output = result.stdout.str()
    prefixes = {}
    for test, claim in [
        ("test_travel", "Oscar talks about travel."),
        ("test_score", "Oscar stays in character."),
    ]:
        match = re.search(
            rf"VerdictMissing: no recorded verdict for claim {re.escape(repr(claim))} "
            rf"in test_replay\.py::{test} \(key ([0-9a-f]{{16}})\)",
            output,
        )
        assert match, output
        prefixes[claim] = match.group(1)
    result.stdout.fnmatch_lines(["*propositions: 2 claims, 0 passed, 0 failed, 2 judge errors,*"])

    # The key prefixes are those of the requests a use run then records.
    suite.judge.on("How true is the claim", verdict(8))
    suite.run().assert_outcomes(passed=3)
    recorded = {record["claim"]: key for key, record in suite.records().items()}
    assert {claim: key[:16] for claim, key in recorded.items()} == prefixes


def test_replay_in_a_subprocess_never_imports_litellm(suite: Suite) -> None:
    suite.pytester.makepyfile(test_replay=REPLAY_TESTS)

    result = suite.run_subprocess(cache="replay")
    assert_counts(result, passed=1, judge_errors=2)
    result.stdout.fnmatch_lines(["*VerdictMissing: no recorded verdict for claim*"])
    assert suite.judge.requests == []
    assert suite.litellm_probes() == {"main": False}


# -- a fully cached run --------------------------------------------------------------------------


def test_a_fully_cached_run_never_imports_litellm(suite: Suite) -> None:
    script_five_tests(suite.judge)
    suite.pytester.makepyfile(test_suite=FIVE_TESTS)
    suite.run().assert_outcomes(passed=4, failed=1)  # inline: records
    assert len(suite.judge.requests) == 6

    result = suite.run_subprocess()
    result.assert_outcomes(passed=4, failed=1)
    assert suite.judge.requests == []
    result.stdout.fnmatch_lines(
        ["*from the cache, recorded *", "*6 from cache, 0 judged live, 0 judge calls*"]
    )
    # None of litellm, httpx and pydantic is needed to read a verdict back; pydantic alone costs
    # about 0.1 s a process.
    # Nor are the live judging path, its progress line and the transports, nor the reader of
    # the reference library's config.ini where there is none, nor the transcript formats (the
    # targets are worlds): every module costs every run.
    # The failure's section is in the terminal's words (reports/summary.py).
    assert suite.probed() == {"main": {"pytest_propositions.reports.summary"}}

    # A run whose claims all pass prints only its counts: the longer reports stay unloaded.
    suite.run_subprocess("-k", "not novel").assert_outcomes(passed=4, deselected=1)
    assert suite.probed() == {"main": set()}

    # A miss on an OpenAI-compatible judge takes the light path: still no litellm.
    suite.pytester.makepyfile(
        test_new="def test_new(world, assert_proposition):\n"
        "    assert_proposition(world, 'Oscar is new here.')\n"
    )
    suite.run_subprocess().assert_outcomes(passed=5, failed=1)
    assert len(suite.judge.requests) == 1
    assert suite.heavy_imports() == {"main": {"pydantic"}}

    # The probe can see litellm: a miss on litellm's path does import it.
    suite.pytester.makepyfile(
        test_newer="def test_newer(world, assert_proposition):\n"
        "    assert_proposition(world, 'Oscar is newer here.')\n"
    )
    suite.run_subprocess("--prop-transport=litellm").assert_outcomes(passed=6, failed=1)
    assert len(suite.judge.requests) == 1
    assert suite.heavy_imports() == {"main": {"litellm", "pydantic"}}


# -- refresh and off ------------------------------------------------------------------------------


ONE_TEST = """
def test_travel(world, assert_proposition):
    assert_proposition(world, "Oscar talks about travel.")
"""


def test_refresh_judges_again_and_overwrites(suite: Suite) -> None:
    suite.pytester.makepyfile(test_one=ONE_TEST)
    suite.judge.default = verdict(True, justification="He talks about cities.")
    suite.run().assert_outcomes(passed=1)
    assert len(suite.judge.requests) == 1

    suite.judge.default = verdict(False, justification="CHANGED-VERDICT")
    suite.run().assert_outcomes(passed=1)  # use: still the recorded verdict
    assert suite.judge.requests == []

    refreshed = suite.run(cache="refresh")
    refreshed.assert_outcomes(failed=1)
    assert len(suite.judge.requests) == 1
    refreshed.stdout.fnmatch_lines(["*judged live in *", "    CHANGED-VERDICT"])

    after = suite.run()
    after.assert_outcomes(failed=1)
    assert suite.judge.requests == []
    after.stdout.fnmatch_lines(["*from the cache, recorded *", "    CHANGED-VERDICT"])
    records = list(suite.records().values())
    assert len(records) == 1, "refresh overwrites, it does not add"
    assert records[0]["verdict"]["justification"] == "CHANGED-VERDICT"


def test_off_neither_reads_nor_writes(suite: Suite) -> None:
    suite.pytester.makepyfile(test_one=ONE_TEST)

    # No cache folder: off does not create one, and asks the judge every time.
    for _ in range(2):
        suite.run(cache="off").assert_outcomes(passed=1)
        assert len(suite.judge.requests) == 1
    assert not suite.cache_dir.exists()

    # A recorded cache: off does not read it (the new verdict wins) and does not change it.
    suite.run().assert_outcomes(passed=1)
    exported = suite.records()
    before = list(tree_bytes(suite.cache_dir))
    suite.judge.default = verdict(False, justification="Judged live, not read.")
    off = suite.run(cache="off")
    off.assert_outcomes(failed=1)
    assert len(suite.judge.requests) == 1
    off.stdout.fnmatch_lines(["*judged live in *", "    Judged live, not read."])
    assert list(tree_bytes(suite.cache_dir)) == before, "off must not touch the cache's files"
    assert suite.records() == exported
    with suite.cache() as cache:
        usage = cache.usage()
    assert usage is not None and len(usage.keys) == 1


# -- only valid verdicts are stored --------------------------------------------------------------


BROKEN_REPLIES = """
def test_valid(world, assert_proposition):
    assert_proposition(world, "Oscar gives a VALID answer.")

def test_unparsable(world, assert_proposition):
    assert_proposition(world, "Oscar gets an UNPARSABLE answer.")

def test_refused(world, assert_proposition):
    assert_proposition(world, "Oscar gets a REFUSED answer.")

def test_server_error(world, assert_proposition):
    assert_proposition(world, "Oscar gets a BROKEN answer.")
"""


def test_only_valid_verdicts_are_stored(suite: Suite) -> None:
    suite.pytester.makepyfile(test_broken=BROKEN_REPLIES)
    unparsable = suite.judge.on("UNPARSABLE", text("I cannot tell"))
    refused = suite.judge.on("REFUSED", refusal("I won't judge that."))
    broken = suite.judge.on("BROKEN", status(500, "provider down"))

    result = suite.run()
    assert_counts(result, passed=1, judge_errors=3)
    result.stdout.fnmatch_lines(["*propositions: 4 claims, 1 passed, 0 failed, 3 judge errors,*"])
    # A bad reply is asked once more; --prop-retries=0 keeps the 500 at one call.
    assert (unparsable.hits, refused.hits, broken.hits) == (2, 2, 1)
    with suite.cache() as cache:
        stats = cache.stats()
    assert stats.entries == 1
    assert [record["claim"] for record in suite.records().values()] == [
        "Oscar gives a VALID answer."
    ]
    shown = cli("cache", "stats", "--cache-dir", str(suite.cache_dir), cwd=suite.pytester.path)
    assert shown.returncode == 0, shown.stderr
    assert "entries: 1\n" in shown.stdout

    # Nothing was cached for the three failures: a later use run asks the judge again.
    suite.judge.reset()
    suite.run().assert_outcomes(passed=4)
    asked = sorted(
        word
        for request in suite.judge.requests
        for word in ("VALID", "UNPARSABLE", "REFUSED", "BROKEN")
        if f" {word} answer" in request.text
    )
    assert asked == ["BROKEN", "REFUSED", "UNPARSABLE"]
    with suite.cache() as cache:
        assert cache.stats().entries == 4


# -- pytest-xdist ---------------------------------------------------------------------------------


XDIST_CLAIMS = 24
XDIST_TESTS = f"""
import pytest

@pytest.mark.parametrize("n", range({XDIST_CLAIMS}))
def test_claim(world, assert_proposition, n):
    assert_proposition(world, f"Claim number {{n}} holds for Oscar.")
"""


@pytest.mark.slow  # a pytest subprocess on xdist workers
def test_xdist_workers_share_one_cache(suite: Suite) -> None:
    suite.pytester.makepyfile(test_many=XDIST_TESTS)

    first = suite.run_subprocess("-p", "xdist", "-n", "2")
    first.assert_outcomes(passed=XDIST_CLAIMS)
    assert len(suite.judge.requests) == XDIST_CLAIMS
    with suite.cache() as cache:
        stats = cache.stats()
        usage = cache.usage()
    assert stats.entries == XDIST_CLAIMS, "a verdict stored by a worker was lost"
    # The controller gathered every worker's keys into the usage record.
    assert usage is not None and len(usage.keys) == XDIST_CLAIMS

    second = suite.run_subprocess("-p", "xdist", "-n", "4")
    second.assert_outcomes(passed=XDIST_CLAIMS)
    assert suite.judge.requests == []
    probes = suite.litellm_probes()
    assert len(probes) == 5 and not any(probes.values()), probes  # controller + 4 workers

    exported = cli("cache", "export", "--cache-dir", str(suite.cache_dir), cwd=suite.pytester.path)
    assert exported.returncode == 0, exported.stderr
    lines = exported.stdout.splitlines()
    assert len(lines) == XDIST_CLAIMS
    entries = [json.loads(line) for line in lines]
    assert all(set(entry) == {"key", "record"} for entry in entries)
    assert [entry["key"] for entry in entries] == sorted(usage.keys)
    assert {entry["record"]["claim"] for entry in entries} == {
        f"Claim number {n} holds for Oscar." for n in range(XDIST_CLAIMS)
    }
    assert all(entry["record"]["verdict"]["value"] is True for entry in entries)


@pytest.mark.slow  # a pytest subprocess on xdist workers
def test_the_xdist_controller_reports_the_workers_cache_hits(suite: Suite) -> None:
    suite.pytester.makepyfile(test_three=THREE_TESTS)
    suite.judge.on("an architect", verdict(False, justification="He never says so."))
    suite.run().assert_outcomes(passed=2, failed=1)  # inline: records
    result = suite.run_subprocess("-p", "xdist", "-n", "2")
    result.assert_outcomes(passed=2, failed=1)
    assert suite.judge.requests == []
    result.stdout.fnmatch_lines(
        [
            "*- proposition -*",
            "FAILED: Oscar is an architect.",
            "*from the cache, recorded *",
            "    He never says so.",
            "propositions: 3 claims, 2 passed, 1 failed, 0 judge errors, 3 from cache, 0 judged live, 0 judge calls,*",
        ]
    )


# -- a damaged cache ------------------------------------------------------------------------------


THREE_TESTS = """
def test_one(world, assert_proposition):
    assert_proposition(world, "Oscar talks about travel.")

def test_two(world, assert_proposition):
    assert_proposition(world, "Oscar is an architect.")

def test_three(world, assert_proposition):
    assert_proposition(world, "Oscar answers a question.")
"""


def test_a_damaged_cache_warns_once_and_is_rebuilt(suite: Suite) -> None:
    suite.pytester.makepyfile(test_three=THREE_TESTS)
    suite.cache_dir.mkdir(parents=True)
    garbage = b"this is not a sqlite database\x00\xff" * 200
    (suite.cache_dir / "cache.db").write_bytes(garbage)

    result = suite.run()
    result.assert_outcomes(passed=3)
    assert len(suite.judge.requests) == 3
    moved = suite.cache_dir.with_name(suite.cache_dir.name + ".corrupt-1")
    assert (moved / "cache.db").read_bytes() == garbage, "the damaged copy is kept"
    assert not suite.cache_dir.with_name(suite.cache_dir.name + ".corrupt-2").exists()
    output = result.stdout.str()
    assert "warnings summary" in output
    assert output.count("CacheWarning") == 1, output
    result.stdout.fnmatch_lines(
        [f"*CacheWarning: the verdict cache at {suite.cache_dir} is damaged*"]
    )
    assert f"moved it to {moved}" in " ".join(output.split())

    again = suite.run()
    again.assert_outcomes(passed=3)
    assert suite.judge.requests == []
    assert "CacheWarning" not in again.stdout.str()
    with suite.cache() as cache:
        assert cache.stats().entries == 3


# -- prune across runs ---------------------------------------------------------------------------


def prune(suite: Suite) -> subprocess.CompletedProcess[str]:
    return cli("cache", "prune", "--cache-dir", str(suite.cache_dir), cwd=suite.pytester.path)


def test_prune_works_after_any_finished_run_and_drops_only_the_unused(suite: Suite) -> None:
    suite.pytester.makepyfile(test_three=THREE_TESTS)
    suite.run().assert_outcomes(passed=3)
    first = prune(suite)
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith("pruned 0 verdicts not used by the 1 run since"), first.stdout
    assert len(suite.records()) == 3

    # Change one claim, and add a failing test: a run with failures counts like any other.
    suite.pytester.makepyfile(
        test_three=THREE_TESTS.replace("Oscar answers a question.", "Oscar answers politely."),
        test_failing="def test_failing(world, assert_proposition):\n"
        "    assert_proposition(world, 'Oscar fails on purpose.')\n",
    )
    suite.judge.on("fails on purpose", verdict(False))
    suite.run().assert_outcomes(passed=3, failed=1)
    records = suite.records()
    assert len(records) == 5
    (stale,) = [k for k, r in records.items() if r["claim"] == "Oscar answers a question."]

    second = prune(suite)
    assert second.returncode == 0, second.stderr
    assert second.stdout.startswith("pruned 1 verdict not used by the 1 run since"), second.stdout
    assert set(suite.records()) == set(records) - {stale}


def test_prune_keeps_what_every_selection_since_the_last_prune_used(suite: Suite) -> None:
    suite.pytester.makepyfile(test_three=THREE_TESTS, test_one=ONE_TEST)
    suite.run().assert_outcomes(passed=4)
    assert prune(suite).returncode == 0  # the count starts here
    assert len(suite.records()) == 3  # both files share one claim

    # Two partial runs (a path, a -k selection) between them use two of the three verdicts.
    suite.run("test_one.py").assert_outcomes(passed=1)
    suite.run("test_three.py", "-k", "two").assert_outcomes(passed=1)
    with suite.cache() as cache:
        usage = cache.usage()
    assert usage is not None and usage.runs == 2 and len(usage.keys) == 2
    result = prune(suite)
    assert result.stdout.startswith("pruned 1 verdict not used by the 2 runs since"), result.stdout
    assert {r["claim"] for r in suite.records().values()} == {
        "Oscar talks about travel.",
        "Oscar is an architect.",
    }


def test_an_interrupted_run_records_no_usage(suite: Suite) -> None:
    suite.pytester.makepyfile(
        test_three=THREE_TESTS,
        test_zstop="import pytest\n\ndef test_stop():\n    pytest.exit('stopped', returncode=2)\n",
    )
    result = suite.run()
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert len(suite.records()) == 3
    with suite.cache() as cache:
        assert cache.usage() is None
    refused = prune(suite)
    assert refused.returncode == 2
    assert "no test run has recorded" in refused.stderr


# -- where the cache lives ------------------------------------------------------------------------


def default_args(suite: Suite, *extra: str) -> list[str]:
    return [
        f"--prop-model={MODEL}",
        f"--prop-api-base={suite.judge.base_url}",
        "--prop-retries=0",
        *extra,
    ]


def test_default_location_is_the_projects_own_folder(suite: Suite) -> None:
    suite.pytester.makeini("[pytest]\n")
    suite.pytester.makepyfile(test_one=ONE_TEST)
    result = suite.pytester.runpytest(*default_args(suite))
    result.assert_outcomes(passed=1)
    folder = suite.pytester.path / ".propositions"
    result.stdout.fnmatch_lines([f"propositions: model {MODEL}, cache use ({folder})"])
    with VerdictCache(folder) as cache:
        assert cache.stats().entries == 1
    assert not (suite.pytester.path / ".pytest_cache" / "d" / "propositions").exists()
    assert not (suite.pytester.path / ".pytest_propositions_cache").exists()

    # The CLI's default, run from the rootdir or a folder below it, is the same folder.
    shown = cli("cache", "stats", cwd=suite.pytester.path)
    assert shown.returncode == 0, shown.stderr
    assert f"directory: {folder}" in shown.stdout and "entries: 1\n" in shown.stdout
    below = suite.pytester.mkdir("below")
    shown = cli("cache", "stats", cwd=below)
    assert shown.returncode == 0, shown.stderr
    assert f"directory: {folder}" in shown.stdout and "entries: 1\n" in shown.stdout


def test_cache_clear_keeps_the_verdicts(suite: Suite) -> None:
    """pytest --cache-clear, run to reset pytest, empties pytest's cache and leaves the paid
    verdicts: the next run replays them with no judge call."""
    suite.pytester.makepyfile(test_one=ONE_TEST)
    suite.judge.default = verdict(True)
    suite.pytester.runpytest(*default_args(suite)).assert_outcomes(passed=1)
    assert len(suite.judge.requests) == 1
    pytests_own = suite.pytester.path / ".pytest_cache" / "d" / "mine.txt"
    pytests_own.parent.mkdir(parents=True, exist_ok=True)
    pytests_own.write_text("pytest's cache, cleared by --cache-clear")

    suite.judge.clear_requests()
    result = suite.pytester.runpytest(*default_args(suite, "--cache-clear", "--prop-cache=replay"))
    result.assert_outcomes(passed=1)
    assert suite.judge.requests == []
    assert not pytests_own.exists()  # the reset did happen
    with VerdictCache(suite.pytester.path / ".propositions") as cache:
        assert cache.stats().entries == 1


@pytest.mark.parametrize("pytest_flags", [[], ["-o", "cache_dir=custom-cache"]])
def test_the_first_cache_clear_after_upgrading_moves_the_old_cache_before_pytest_empties_it(
    suite: Suite, pytest_flags: list[str]
) -> None:
    """Verdicts an earlier version kept in pytest's cache folder survive the real --cache-clear
    of the first run after upgrading: moved to .propositions before pytest's cache plugin empties
    its folder (in its own configure hook), said so, and replayed from the new place."""
    suite.pytester.makepyfile(test_one=ONE_TEST)
    suite.judge.default = verdict(True)
    pytest_cache = suite.pytester.path / ("custom-cache" if pytest_flags else ".pytest_cache")
    old = pytest_cache / "d" / "propositions"
    suite.pytester.runpytest(*default_args(suite, f"--prop-cache-dir={old}")).assert_outcomes(
        passed=1
    )
    assert (old / "cache.db").is_file() and len(suite.judge.requests) == 1
    pytests_own = pytest_cache / "d" / "mine.txt"
    pytests_own.write_text("pytest's cache, cleared by --cache-clear")

    suite.judge.clear_requests()
    new = suite.pytester.path / ".propositions"
    cleared = suite.pytester.runpytest(
        *default_args(suite, "-q", "--cache-clear", "--prop-cache=replay", *pytest_flags)
    )
    cleared.assert_outcomes(passed=1)
    assert suite.judge.requests == []
    assert not pytests_own.exists()  # pytest's own reset did happen
    assert [line for line in cleared.outlines if "verdict cache" in line] == [
        f"propositions: moved the verdict cache from {old} to {new}, out of reach of pytest "
        "--cache-clear"
    ]
    with VerdictCache(new) as cache:
        assert cache.stats().entries == 1

    again = suite.pytester.runpytest(
        *default_args(suite, "-q", "--cache-clear", "--prop-cache=replay", *pytest_flags)
    )
    again.assert_outcomes(passed=1)
    assert suite.judge.requests == []


def test_cache_clear_with_an_unusable_folder_stops_before_pytest_deletes_anything(
    suite: Suite,
) -> None:
    """.propositions a link to a folder that is not there (a disk not mounted): nothing can be
    moved into it, and the usage error comes before pytest's cache plugin empties its folder,
    so the old verdicts are still there to move once the link is fixed."""
    suite.pytester.makepyfile(test_one=ONE_TEST)
    old = suite.pytester.path / ".pytest_cache" / "d" / "propositions"
    suite.pytester.runpytest(*default_args(suite, f"--prop-cache-dir={old}")).assert_outcomes(
        passed=1
    )
    link = suite.pytester.path / ".propositions"
    link.symlink_to(suite.pytester.path / "unmounted")
    refused = suite.pytester.runpytest(*default_args(suite, "--cache-clear"))
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    refused.stderr.fnmatch_lines(
        [
            f"ERROR: pytest-propositions: cannot use {link} as the verdict cache folder: it is a "
            f"symbolic link to {suite.pytester.path / 'unmounted'}, which does not exist*"
        ]
    )
    assert (old / "cache.db").is_file()


def test_cache_clear_with_a_configured_cache_dir_moves_nothing(suite: Suite) -> None:
    """A run told where its cache is uses it there, even inside pytest's cache folder: the
    early move is the default folder's only, so --cache-clear empties what the user chose."""
    suite.pytester.makepyfile(test_one=ONE_TEST)
    old = suite.pytester.path / ".pytest_cache" / "d" / "propositions"
    suite.pytester.runpytest(*default_args(suite, f"--prop-cache-dir={old}")).assert_outcomes(
        passed=1
    )
    cleared = suite.pytester.runpytest(
        *default_args(suite, "--cache-clear", f"--prop-cache-dir={old}")
    )
    cleared.assert_outcomes(passed=1)
    assert not (suite.pytester.path / ".propositions").exists()
    assert not [line for line in cleared.outlines if "moved the verdict cache" in line]
    assert len(suite.judge.requests) == 2  # cleared by pytest, as asked: judged again


@pytest.mark.parametrize(
    ("old", "pytest_flags"),
    [
        (Path(".pytest_cache", "d", "propositions"), []),
        (Path("custom-cache", "d", "propositions"), ["-o", "cache_dir=custom-cache"]),
        (Path(".pytest_propositions_cache"), ["-p", "no:cacheprovider"]),
    ],
)
def test_a_cache_in_the_old_place_is_moved_once_and_said_so(
    suite: Suite, old: Path, pytest_flags: list[str]
) -> None:
    """A cache where an earlier version kept it is moved to .propositions: the first run says so
    in one line (even with -q) and replays it with no judge call; the next run says nothing."""
    suite.pytester.makepyfile(test_one=ONE_TEST)
    suite.judge.default = verdict(True)
    recorded = suite.pytester.runpytest(
        *default_args(suite, f"--prop-cache-dir={suite.pytester.path / old}")
    )
    recorded.assert_outcomes(passed=1)
    assert (suite.pytester.path / old / "cache.db").is_file()

    suite.judge.clear_requests()
    new = suite.pytester.path / ".propositions"
    moved = suite.pytester.runpytest(
        *default_args(suite, "-q", "--prop-cache=replay", *pytest_flags)
    )
    moved.assert_outcomes(passed=1)
    assert suite.judge.requests == []
    said = [line for line in moved.outlines if "verdict cache" in line]
    assert said == [
        f"propositions: moved the verdict cache from {suite.pytester.path / old} to {new}, out of "
        "reach of pytest --cache-clear"
    ]
    assert not (suite.pytester.path / old).exists()
    with VerdictCache(new) as cache:
        assert cache.stats().entries == 1

    again = suite.pytester.runpytest(
        *default_args(suite, "-q", "--prop-cache=replay", *pytest_flags)
    )
    again.assert_outcomes(passed=1)
    assert not [line for line in again.outlines if "moved the verdict cache" in line]


def test_a_configured_cache_dir_is_left_where_it_is(suite: Suite) -> None:
    """An old cache is moved only to the default folder: a run told where its cache is uses it."""
    suite.pytester.makepyfile(test_one=ONE_TEST)
    old = suite.pytester.path / ".pytest_cache" / "d" / "propositions"
    suite.pytester.runpytest(*default_args(suite, f"--prop-cache-dir={old}")).assert_outcomes(
        passed=1
    )
    again = suite.pytester.runpytest(*default_args(suite, f"--prop-cache-dir={old}"))
    again.assert_outcomes(passed=1)
    assert (old / "cache.db").is_file() and not (suite.pytester.path / ".propositions").exists()
    assert not [line for line in again.outlines if "moved the verdict cache" in line]


def test_without_the_cacheprovider_the_cache_is_at_the_rootdir_too(suite: Suite) -> None:
    suite.pytester.makepyfile(test_one=ONE_TEST)
    suite.pytester.runpytest(*default_args(suite, "-p", "no:cacheprovider")).assert_outcomes(
        passed=1
    )
    with VerdictCache(suite.pytester.path / ".propositions") as cache:
        assert cache.stats().entries == 1
    assert not (suite.pytester.path / ".pytest_cache").exists()


def test_cache_dir_from_ini_and_environment(
    suite: Suite, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    suite.pytester.makepyfile(test_one=ONE_TEST)
    from_ini, from_env, from_flag = tmp_path / "ini", tmp_path / "env", tmp_path / "flag"
    suite.pytester.makeini(f"[pytest]\nprop_cache_dir = {from_ini}\n")
    run = default_args(suite, "-p", "no:cacheprovider")

    suite.pytester.runpytest(*run).assert_outcomes(passed=1)
    assert (from_ini / "cache.db").is_file()

    monkeypatch.setenv("PROP_CACHE_DIR", str(from_env))  # the environment beats the ini
    suite.pytester.runpytest(*run).assert_outcomes(passed=1)
    assert (from_env / "cache.db").is_file()

    suite.pytester.runpytest(*run, f"--prop-cache-dir={from_flag}").assert_outcomes(passed=1)
    assert (from_flag / "cache.db").is_file()  # the flag beats both

    for folder in (from_ini, from_env, from_flag):
        with VerdictCache(folder) as cache:
            assert cache.stats().entries == 1
    assert len(suite.judge.requests) == 3
    assert not (suite.pytester.path / ".propositions").exists()


def test_a_relative_ini_cache_dir_is_relative_to_the_rootdir(
    suite: Suite, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite.pytester.makeini("[pytest]\nprop_cache_dir = verdicts\n")
    sub = suite.pytester.mkpydir("sub")
    (sub / "test_one.py").write_text(ONE_TEST)
    monkeypatch.chdir(sub)
    result = suite.pytester.runpytest(*default_args(suite, "-p", "no:cacheprovider"))
    result.assert_outcomes(passed=1)
    assert (suite.pytester.path / "verdicts" / "cache.db").is_file()


# -- credentials ---------------------------------------------------------------------------------


def test_the_api_key_never_reaches_the_cache(suite: Suite, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "sk-" + "Z" * 24
    monkeypatch.setenv("PROP_API_KEY", secret)
    script_five_tests(suite.judge)
    suite.pytester.makepyfile(test_suite=FIVE_TESTS)
    result = suite.run()
    result.assert_outcomes(passed=4, failed=1)
    # The key was really used: the judge saw it.
    assert all(secret in r.headers.get("authorization", "") for r in suite.judge.requests)
    assert suite.judge.requests

    exported = cli("cache", "export", "--cache-dir", str(suite.cache_dir), cwd=suite.pytester.path)
    assert exported.returncode == 0, exported.stderr
    assert len(exported.stdout.splitlines()) == 6
    assert secret not in exported.stdout
    assert "Z" * 24 not in exported.stdout
    files = list(tree_bytes(suite.cache_dir))
    assert files
    for path, data in files:
        assert secret.encode() not in data, path
        assert secret.encode("utf-16-le") not in data, path
    assert secret not in result.stdout.str()


def readme_decode_command() -> str:
    """The decode one-liner of the cache's documentation page (docs/cache.md)."""
    page = Path(__file__).resolve().parent.parent / "docs" / "cache.md"
    [command] = [line for line in page.read_text().splitlines() if "zlib.decompress" in line]
    return command


def test_the_readmes_request_decoder_reads_a_real_export(suite: Suite) -> None:
    suite.pytester.makepyfile(test_one=ONE_TEST)
    suite.run().assert_outcomes(passed=1)
    export = cli(
        "cache",
        "export",
        "--cache-dir",
        str(suite.cache_dir),
        "-o",
        "verdicts.jsonl",
        cwd=suite.pytester.path,
    )
    assert export.returncode == 0, export.stderr
    command = readme_decode_command()
    assert "verdicts.jsonl" in command
    result = subprocess.run(
        ["bash", "-c", command.replace("python -c", f"{sys.executable} -c", 1)],
        cwd=suite.pytester.path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    request = json.loads(result.stdout)
    assert request["kind"] == "check"
    assert any("Oscar talks about travel." in m["content"] for m in request["messages"])


SWAPPED_TESTS = """
def test_true(world, assert_proposition):
    assert_proposition(world, "Oscar likes architecture.")

def test_false(world, assert_proposition):
    assert_proposition(world, "Oscar writes a novel about cats.")
"""


def test_an_export_with_two_keys_swapped_is_refused_and_never_replayed_as_a_pass(
    suite: Suite,
) -> None:
    """A bad merge of a committed export swaps two lines' keys: imported as they are, the false
    claim would replay the true claim's verdict and pass. The import refuses both lines."""
    suite.judge.on("novel about cats", verdict(False, justification=FALSE_JUSTIFICATION))
    suite.judge.default = verdict(True, justification="He says so.")
    suite.pytester.makepyfile(test_swapped=SWAPPED_TESTS)
    suite.run().assert_outcomes(passed=1, failed=1)
    with suite.cache() as cache:
        first, second = (json.loads(line) for line in cache.export_lines())
    first["key"], second["key"] = second["key"], first["key"]
    merged = suite.pytester.path / "verdicts.jsonl"
    merged.write_text("".join(json.dumps(entry) + "\n" for entry in (first, second)))
    ci = Suite(suite.pytester, suite.judge, suite.cache_dir.with_name("ci"))
    done = cli("cache", "import", str(merged), "--cache-dir", str(ci.cache_dir), cwd=merged.parent)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert "imported 0 verdicts" in done.stdout
    for lineno, entry in enumerate((first, second), start=1):
        assert f"{merged}:{lineno}: key {entry['key']} is not the key of the request" in done.stderr
    result = ci.run(cache="replay")
    outcomes = {nodeid.split("::")[-1]: r.outcome for nodeid, r in call_reports(result).items()}
    assert outcomes == {"test_true": "failed", "test_false": "failed"}, result.outlines
    assert "VerdictMissing" in result.stdout.str()
    assert ci.judge.requests == []
