"""``cache rejudge``: ask every stored request again, of another judge, and store its answers.

No simulation runs again: each record keeps its rendered request (see ``store.cache_record``). The new
answers are stored under the keys a test run with the new model computes, so
``--prop-model=NEW --prop-cache=replay`` is served from the cache afterwards.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
from collections import Counter
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..checks import plural
from ..errors import CalibrationError, JudgeError
from ..judging.judge import Judge, JudgeRequest
from ..judging.prompts import PROMPT_VERSION
from ..reports.diff import Changes, Claim, Key, compare
from ..runtime import connector
from ..settings import Settings, command_settings
from ..store.cache import VerdictCache
from ..store.cache_record import record_material, request_redacted
from ..verdict import CHECK, Kind, Verdict, passes_bar


@dataclass(frozen=True)
class Rejudged:
    claim: str
    test_id: str | None
    kind: Kind
    old: bool | int
    new: bool | int
    old_model: str
    justification: str
    # A claim over runs' run and a sample's index, as the request records them (a judge that
    # decodes greedily records every run as 0: equal transcripts share a verdict).
    run_index: int = 0
    sample_index: int = 0

    def flipped(self, min_score: int) -> bool:
        """A check whose value changed, or a score that moved across the bar."""
        threshold = None if self.kind == CHECK else min_score
        return passes_bar(self.kind, self.old, threshold) != passes_bar(
            self.kind, self.new, threshold
        )

    def sides(self, min_score: int, new_model: str, label: str = "") -> tuple[Claim, Claim]:
        """The old and the new verdict as ``diff`` reads two reports' claims, a score against
        ``min_score`` (a record keeps no bar), so that both commands count alike; ``label``
        follows the test's id (which of the claim's verdicts this is)."""
        threshold = None if self.kind == CHECK else min_score
        test_id = (self.test_id or "(test unknown)") + label

        def side(value: bool | int, model: str, why: str) -> Claim:
            passed = passes_bar(self.kind, value, threshold)
            return Claim(test_id, self.claim, self.kind, value, threshold, passed, why, model)

        return side(self.old, self.old_model, ""), side(self.new, new_model, self.justification)


@dataclass(frozen=True)
class Plan:
    """What to ask again: one request per stored record, and what was left out and why."""

    requests: list[tuple[Any, Mapping[str, Any]]]
    skipped: dict[str, int]


def plan(cache: VerdictCache, new_identity: str) -> Plan:
    requests: list[tuple[Any, Mapping[str, Any]]] = []
    skipped: Counter[str] = Counter()
    seen: set[str] = set()
    for _key, record in cache.records():
        if record.get("model") == new_identity:
            continue  # the new judge's own answers
        material = record_material(record)
        if material is None:
            skipped["recorded without their request (before this version)"] += 1
            continue
        if request_redacted(record):
            # What the judge was sent held a secret: asked again as stored, it would be another
            # request, under a key no test run computes.
            skipped["whose request held a secret, kept redacted (a test run asks them)"] += 1
            continue
        if material.prompt_version != PROMPT_VERSION:
            skipped[f"recorded with another prompt version than {PROMPT_VERSION}"] += 1
            continue
        question = dataclasses.replace(material, model="").key  # the model aside
        if question in seen:
            continue  # the same question, answered by several old judges: ask it once
        seen.add(question)
        request = JudgeRequest.asking(
            material,
            claim=str(record.get("claim", "")),
            model=new_identity,
            test_id=record.get("test_id"),
        )
        requests.append((request, record))
    return Plan(requests, dict(skipped))


#: The command's flags, from the options' table (``settings.add_command_flags``): --model is
#: required.
FLAGS = {
    "model": "the other judge",
    "api_base": "its OpenAI-compatible server",
    "concurrency": "requests at once",
}


def rejudge(
    cache_dir: Path, settings: Settings, model: str
) -> tuple[list[Rejudged], dict[str, int], dict[str, Any]]:
    """Judge each stored request with ``model``; the results, the skips, and the judge's counts."""
    settings = dataclasses.replace(settings, model=model, cache="use")
    reader = VerdictCache(cache_dir)
    if not reader.exists:
        raise CalibrationError(f"no verdict cache at {cache_dir}")
    judge = Judge(settings, VerdictCache(cache_dir, "use"), connect=connector(settings))
    try:
        with reader:
            work = plan(reader, judge.identity(model))

        def one(entry: tuple[Any, Mapping[str, Any]]) -> Rejudged:
            request, record = entry
            verdict: Verdict = judge.evaluate(request)
            return Rejudged(
                claim=request.claim,
                test_id=request.test_id,
                kind=request.kind,
                old=record["verdict"]["value"],
                new=verdict.value,
                old_model=str(record.get("model")),
                justification=verdict.justification,
                run_index=request.run_index,
                sample_index=request.sample_index,
            )

        workers = max(1, min(settings.concurrency, len(work.requests)))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="prop-rejudge") as pool:
            # map cancels the requests not sent yet when one raises: the command stops there.
            results = list(pool.map(one, work.requests))
        counts = {"judge_calls": judge.stats.judge_calls, "cache_hits": judge.stats.cache_hits}
        return results, work.skipped, counts
    finally:
        judge.close()


def compared(results: list[Rejudged], min_score: int, new_model: str) -> Changes:
    """The results as ``diff`` compares two reports (``reports.diff.compare``: the same flips and
    score changes). Several verdicts of one claim (a claim over runs, samples) are told apart by
    a label after the test's id: the run, or the verdict's place when the runs were not recorded
    (a judge that decodes greedily records every run as 0), and the sample."""
    groups: dict[tuple[str, str, str], list[Rejudged]] = {}
    for result in results:
        groups.setdefault((result.test_id or "", result.claim, result.kind), []).append(result)
    old: dict[Key, Claim] = {}
    new: dict[Key, Claim] = {}
    for members in groups.values():
        members.sort(key=lambda r: (r.run_index, r.sample_index, str(r.old), str(r.new)))
        runs = [r.run_index for r in members]
        by_run = len(members) > 1 and len(set(runs)) == len(runs)
        for place, result in enumerate(members, start=1):
            parts = []
            if by_run:
                parts.append(f"run {result.run_index}")
            elif len(members) > 1:
                parts.append(f"verdict {place} of {len(members)}")
            if result.sample_index:
                parts.append(f"sample {result.sample_index}")
            before, after = result.sides(
                min_score, new_model, f" ({', '.join(parts)})" if parts else ""
            )
            key = (before.test_id, before.claim, before.kind, 0)
            old[key], new[key] = before, after
    return compare(old, new)


def run(cache_dir: Path, args: argparse.Namespace) -> int:
    """The command (``rejudge``, and ``cache rejudge``): list the flips and the score changes;
    the last line is ``N re-judged, K flipped, M score changes``."""
    settings = command_settings(args, FLAGS, os.environ)
    try:
        results, skipped, _counts = rejudge(cache_dir, settings, settings.model)
    except JudgeError as error:
        raise CalibrationError(
            f"the judge could not re-judge the cache: {type(error).__name__}: {error}"
        ) from None
    changes = compared(results, settings.min_score, settings.model)
    for before, after in changes.flipped:
        print(f"FLIPPED {before.test_id}: {before.claim}")
        print(f"  {before.model}: {before.value} -> {after.model}: {after.value}")
        print(f"  new justification: {' '.join(after.justification.split())[:300]}")
    for before, after in changes.scores:
        print(f"SCORE   {before.test_id}: {before.claim} {before.value} -> {after.value}")
    for reason, count in sorted(skipped.items()):
        print(f"skipped {plural(count, 'verdict')} {reason}")
    print(
        f"{len(results)} re-judged, {len(changes.flipped)} flipped, "
        f"{len(changes.scores)} score changes"
    )
    return 0
