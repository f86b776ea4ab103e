"""The cache modes: one table (``settings.cache_mode``) says which read, which write and which
may call the judge, and the disk cache, the judge and the run each do what it says."""

from __future__ import annotations

import ast
from datetime import UTC, datetime
from pathlib import Path

import pytest

import pytest_propositions
from pytest_propositions.errors import VerdictMissing
from pytest_propositions.judging.judge import JudgeRequest
from pytest_propositions.runtime import Runtime
from pytest_propositions.settings import CACHE_MODES, Settings, cache_mode
from pytest_propositions.store.cache import VerdictCache
from tests.support.judge_server import ScriptedJudge, verdict
from tests.support.records import keyed

# mode: (reads, writes, calls the judge on a miss)
EXPECTED = {
    "use": (True, True, True),
    "replay": (True, False, False),
    "refresh": (False, True, True),
    "off": (False, False, True),
}


def test_the_table_names_every_mode_and_nothing_else() -> None:
    assert set(EXPECTED) == set(CACHE_MODES)
    for mode, (reads, writes, judges) in EXPECTED.items():
        rule = cache_mode(mode)
        assert (rule.reads, rule.writes, rule.judges) == (reads, writes, judges), mode
        assert rule.replaces == (mode == "refresh")
        assert rule.uses_cache == (mode != "off")
    with pytest.raises(ValueError, match="use, replay, refresh, off; got 'fresh'"):
        cache_mode("fresh")


def _record(claim: str) -> dict[str, object]:
    return {
        "claim": claim,
        "kind": "check",
        "model": "openai/judge-model",
        "recorded_at": "2026-01-02T03:04:05+00:00",
        "verdict": {"kind": "check", "claim": claim, "value": True},
    }


@pytest.mark.parametrize("mode", CACHE_MODES)
def test_the_disk_cache_reads_and_writes_as_its_mode_says(tmp_path: Path, mode: str) -> None:
    old_key, old = keyed(1, _record("recorded before"))
    new_key, new = keyed(2, _record("judged now"))
    with VerdictCache(tmp_path) as before:
        before.put(old_key, old)
    with VerdictCache(tmp_path, mode) as cache:  # type: ignore[arg-type]
        reads = cache.get(old_key) is not None
        cache.prepare_write()
        cache.put(new_key, new)
        cache.record_usage([old_key, new_key], datetime.now(UTC))
    with VerdictCache(tmp_path) as after:
        writes = after.get(new_key) is not None
        usage_recorded = after.usage() is not None
    assert (reads, writes) == EXPECTED[mode][:2]
    assert usage_recorded == EXPECTED[mode][1]


@pytest.mark.parametrize("mode", CACHE_MODES)
def test_a_run_reads_writes_and_judges_as_its_mode_says(
    tmp_path: Path, judge_server: ScriptedJudge, mode: str
) -> None:
    judge_server.default = verdict(True, justification="Scripted.")

    def request(text: str) -> JudgeRequest:
        message = {"role": "user", "content": text}
        return JudgeRequest("check", text, "openai/judge-model", (message,))  # type: ignore[arg-type]

    def runtime(mode: str) -> Runtime:
        settings = Settings(
            model="openai/judge-model", api_base=judge_server.base_url, cache=mode, retries=0
        )
        return Runtime(settings, tmp_path)

    recorder = runtime("use")
    recorder.judge.evaluate(request("Recorded before."))
    recorder.close()
    asked = len(judge_server.requests)

    run = runtime(mode)
    try:
        run.judge.evaluate(request("Recorded before."))
        reads = len(judge_server.requests) == asked
        try:
            run.judge.evaluate(request("Judged now."))
            judges = True
        except VerdictMissing:
            judges = False
        assert judges == (len(judge_server.requests) > asked + (not reads))
        try:  # a follow-up question is never cached: only a mode that may judge asks it
            run.judge.follow_up("openai/judge-model", [{"role": "user", "content": "Why?"}])
            follows_up = True
        except VerdictMissing:
            follows_up = False
        assert follows_up == judges
        usage_recorded = run.record_usage()
    finally:
        run.close()
    reader = runtime("use")
    try:
        reader.judge.evaluate(request("Judged now."))
        writes = reader.judge.stats.cache_hits == 1
    finally:
        reader.close()
    assert (reads, writes, judges) == EXPECTED[mode]
    assert usage_recorded == EXPECTED[mode][1]


def _mode_comparisons(source: str) -> list[str]:
    """Comparisons with a cache mode's name (``mode == "replay"``, ``in ("use", "refresh")``):
    a rule of the modes written a second time."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Compare):
            continue
        names = set()
        for side in (node.left, *node.comparators):
            items = side.elts if isinstance(side, ast.Tuple | ast.Set | ast.List) else [side]
            names |= {i.value for i in items if isinstance(i, ast.Constant)}
        if names & set(CACHE_MODES):
            found.append(ast.unparse(node))
    return found


def test_no_module_but_the_table_tells_the_modes_apart() -> None:
    package = Path(pytest_propositions.__file__).parent
    offenders = {
        path.relative_to(package).as_posix(): found
        for path in sorted(package.rglob("*.py"))
        if path.name != "settings.py"
        and (found := _mode_comparisons(path.read_text(encoding="utf-8")))
    }
    assert offenders == {}
    assert _mode_comparisons('if mode in ("use", "refresh") or cache == "off": pass') == [
        "mode in ('use', 'refresh')",
        "cache == 'off'",
    ]
