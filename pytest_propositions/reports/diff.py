"""``diff OLD.json NEW.json``: what changed between two ``--prop-report`` files.

Claims are matched by test id, claim text and kind (the n-th occurrence of a repeated claim in a
test with the n-th). A check whose value changed has flipped, and so has a score that crossed
its bar; a score that moved otherwise is a score change; the rest are added or removed.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from ..checks import TOO_DEEP, read_json_document
from ..scale import MAX_SCORE
from ..verdict import CHECK, KINDS, Kind, passes_bar

Key = tuple[str, str, str, int]


class ReportError(Exception):
    """A file is not a ``--prop-report``; the message names the file and what was expected."""


@dataclass(frozen=True)
class Claim:
    test_id: str
    claim: str
    kind: Kind
    value: bool | int
    threshold: int | None
    passed: bool
    justification: str
    model: str
    # False for a claim that must not hold (holds=False, or a max_score bar).
    holds: bool = True


@dataclass(frozen=True)
class Changes:
    flipped: list[tuple[Claim, Claim]]
    scores: list[tuple[Claim, Claim]]
    added: list[Claim]
    removed: list[Claim]

    def summary(self) -> str:
        return (
            f"{len(self.flipped)} flipped, {len(self.scores)} score changes, "
            f"{len(self.added)} added, {len(self.removed)} removed"
        )


def load_report(path: str | Path) -> dict[Key, Claim]:
    """The report's claims by key; ReportError if the file is not a report this plugin wrote."""
    name = str(path)
    data = read_json_document(name)
    verdicts = data.get("verdicts") if isinstance(data, dict) else None
    if not isinstance(verdicts, list):
        raise ReportError(f'{name}: expected a --prop-report file (a JSON object with "verdicts")')
    claims: dict[Key, Claim] = {}
    for index, record in enumerate(verdicts):
        try:
            verdict = record["verdict"]
            kind = verdict["kind"]
            if kind not in KINDS:
                raise TypeError(f"its kind is {kind!r}")
            claim = Claim(
                test_id=str(record.get("test_id") or "-"),
                claim=str(verdict["claim"]),
                kind=kind,
                value=verdict["value"],
                threshold=record.get("threshold"),
                passed=bool(record["passed"]),
                justification=str(verdict.get("justification") or ""),
                model=str(verdict.get("model") or ""),
                holds=record.get("holds", True) is not False,
            )
        except (KeyError, TypeError) as error:
            raise ReportError(
                f"{name}: verdict #{index} is not a report record ({error})"
            ) from None
        except RecursionError:
            raise ReportError(f"{name}: verdict #{index}: {TOO_DEEP}") from None
        occurrence = 0
        while (claim.test_id, claim.claim, claim.kind, occurrence) in claims:
            occurrence += 1
        claims[(claim.test_id, claim.claim, claim.kind, occurrence)] = claim
    return claims


def compare(old: Mapping[Key, Claim], new: Mapping[Key, Claim]) -> Changes:
    flipped, scores = [], []
    for key in sorted(old.keys() & new.keys()):
        before, after = old[key], new[key]
        if _outcome(before) != _outcome(after):
            flipped.append((before, after))
        elif before.value != after.value:
            scores.append((before, after))
    return Changes(
        flipped=flipped,
        scores=scores,
        added=[new[key] for key in sorted(new.keys() - old.keys())],
        removed=[old[key] for key in sorted(old.keys() - new.keys())],
    )


def _outcome(claim: Claim) -> bool | None:
    """What decides a flip: whether the verdict passes its bar (None: a score without one)."""
    if claim.kind != CHECK and claim.threshold is None:
        return None
    return passes_bar(claim.kind, claim.value, claim.threshold, claim.holds)


def _value(claim: Claim) -> str:
    if claim.kind == CHECK:
        return str(claim.value)
    if claim.threshold is None:
        return f"{claim.value}/{MAX_SCORE}"
    side = "passes" if _outcome(claim) else "fails"
    bar = "minimum" if claim.holds else "maximum"
    return f"{claim.value}/{MAX_SCORE}, {bar} {claim.threshold}: {side}"


def _justification(label: str, claim: Claim) -> str:
    model = f" [{claim.model}]" if claim.model else ""
    text = " ".join(claim.justification.split()) or "(none given)"
    return textwrap.fill(
        text, width=100, initial_indent=f"    {label}{model}: ", subsequent_indent="      "
    )


def lines(changes: Changes) -> Iterator[str]:
    for before, after in changes.flipped:
        yield f"FLIPPED {before.test_id}"
        yield f"  claim: {before.claim}"
        yield f"  {_value(before)} -> {_value(after)}"
        yield _justification("old", before)
        yield _justification("new", after)
    for before, after in changes.scores:
        yield f"SCORE   {before.test_id}: {before.claim} {_value(before)} -> {_value(after)}"
    for claim in changes.added:
        yield f"ADDED   {claim.test_id}: {claim.claim} ({_value(claim)})"
    for claim in changes.removed:
        yield f"REMOVED {claim.test_id}: {claim.claim} ({_value(claim)})"
    yield changes.summary()


def run(old: str, new: str) -> int:
    """Print the changes; exit 1 when a verdict flipped (so CI can flag it), else 0."""
    changes = compare(load_report(old), load_report(new))
    for line in lines(changes):
        print(line)
    return 1 if changes.flipped else 0
