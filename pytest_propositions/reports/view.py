"""One claim as every report shows it: ``ClaimView``, made from a run's ``Outcome``.

The terminal, JUnit, the JSON report (and xdist's records) and the HTML page read the same view.
The JSON record is the view's fields in order (``to_dict``); a field made with ``note`` (a label
and a text) shows in the terminal, in JUnit and on the page with no edit to any of them. So a
new report field is a field of ``Outcome`` and one line here; every field says where it shows
(``Shown``), and tests/test_claim_view.py holds each report to it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from ..record import Outcome
from ..verdict import Verdict
from .counts import Calibrations, claim_calibration, decision_judge, outcome_result


@dataclass(frozen=True)
class Shown:
    """Where a field of the view shows. ``json``: the JSON record has it under the field's name,
    ``always`` even when it is None or False (other fields are left out then, so an old record
    reads the same); ``junit``: the JUnit property names it shows under (one of them); ``page``:
    the key of its HTML card, or the label of the card's row. Empty: that report leaves it out
    on purpose (the field's comment says why).

    A note (``label`` set) shows as ``label: text(value)`` after the claim's value in the
    terminal and on the page, as the JUnit property ``junit[0]`` (the plain value) after
    ``junit_after``, and, ``listed``, in the verdict listing (--prop-outcome=report, -vv).
    """

    junit: tuple[str, ...] = ()
    page: str | None = None
    json: bool = True
    always: bool = False
    label: str | None = None
    text: Callable[[Any], str] = str
    junit_after: str = "justification"
    listed: bool = False


def shown(**where: Any) -> dict[str, Shown]:
    """A field's metadata: where it shows (``Shown``)."""
    return {"shown": Shown(**where)}


def note(
    label: str, junit: str, text: Callable[[Any], str] = str, **where: Any
) -> dict[str, Shown]:
    """A note's metadata: shown the same way in every report, when it is set: ``label: text``
    (the terminal, the page), the JUnit property ``junit``, its own name in the JSON record."""
    return shown(junit=(junit,), page=label, label=label, text=text, **where)


def made_by_text(module: str) -> str:
    """Who made a claim by call that the test's own code did not make."""
    return f"{module} (library code, not the test's own claim)"


@dataclass(frozen=True, kw_only=True)
class ClaimView:
    """One claim as the reports show it: every field of its ``Outcome`` (in the JSON record's
    order), then what a report adds to it. ``claim_view`` makes it."""

    # JUnit: the test case is the test; the page: the card's test.
    test_id: str | None = field(metadata=shown(page="test", always=True))
    threshold: int | None = field(metadata=shown(junit=("threshold",), page="score", always=True))
    holds: bool = field(metadata=shown(junit=("holds",), page="score", always=True))
    passed: bool = field(metadata=shown(junit=("passed", "upheld"), page="status", always=True))
    where: str | None = field(metadata=note("claimed at", "claimed_at", always=True))
    verdict: Verdict = field(metadata=shown(junit=("claim",), page="text", always=True))
    runs: dict[str, Any] | None = field(metadata=shown(junit=("runs.rule",), page="runs"))
    escalated_from: Verdict | None = field(
        metadata=shown(junit=("escalated_from.model",), page="main judge")
    )
    by_call: str | None = field(metadata=shown(junit=("by_call",), page="filter"))
    # Not per claim in JUnit or on the page: the run's summary names these claims' tests.
    after_its_test: bool = field(metadata=shown())
    made_by: str | None = field(
        metadata=note("made by", "made_by", made_by_text, junit_after="upheld", listed=True)
    )
    # The identity of the calibrated judge that decided the claim (a key of the JSON report's
    # ``calibrations``); JUnit and the page show that calibration (``calibration``).
    judge_calibration: str | None = field(
        metadata=shown(junit=("judge_calibration",), page="judge's measured error")
    )
    # The claim's result word (``outcome_result``: passed, failed, inconclusive, upheld, not
    # upheld); None in xdist's records, which carry outcomes.
    result: str | None = field(metadata=shown(junit=("result",), page="word"))
    # The deciding judge's measured error (calibration.error_view): the JSON report has it
    # once per judge, under ``judge_calibration``'s name.
    calibration: Mapping[str, Any] | None = field(
        metadata=shown(json=False, junit=("judge_false_pass_upper",), page="judge's measured error")
    )

    def to_dict(self) -> dict[str, Any]:
        """The JSON record: each field by its name, in order, a verdict as its ``as_dict``."""
        return _json_record(vars(self), type(self))

    def notes(self) -> Iterator[tuple[Shown, str]]:
        """The notes that are set, in order, each with its value as JUnit gives it (plain);
        the terminal and the page word it with ``Shown.text``."""
        for item in fields(self):
            how: Shown = item.metadata["shown"]
            value = getattr(self, item.name)
            if how.label is not None and value is not None and value != "":
                yield how, str(value)


_JSON_FIELDS: dict[type, tuple[tuple[tuple[str, bool], ...], tuple[str, ...]]] = {}


def _json_fields(view: type) -> tuple[tuple[tuple[str, bool], ...], tuple[str, ...]]:
    """A view class's fields the JSON record has, each with whether it is there when unset
    (``Shown.always``), and those that hold a verdict; read once: a report makes a view and a
    record of every claim."""
    found = _JSON_FIELDS.get(view)
    if found is None:
        shown = [(item, item.metadata["shown"]) for item in fields(view)]
        found = _JSON_FIELDS[view] = (
            tuple((item.name, how.always) for item, how in shown if how.json),
            tuple(item.name for item, how in shown if how.json and _holds_verdict(item.type)),
        )
    return found


def _holds_verdict(annotation: Any) -> bool:
    """Whether a field's annotation (a string, here) is a verdict, or a verdict or None."""
    return str(annotation).startswith("Verdict")


@functools.cache
def _outcome_names() -> tuple[str, ...]:
    """``Outcome``'s field names, read once (``_view_fields``)."""
    return tuple(item.name for item in fields(Outcome))


def claim_view(
    outcome: Outcome, mode: str | None = None, calibrations: Calibrations | None = None
) -> ClaimView:
    """The claim's view: ``mode`` (--prop-outcome) asks for its result word (the same in either
    mode), ``calibrations`` its deciding judge's calibration; without them, what xdist's
    records carry."""
    calibration = claim_calibration(outcome, calibrations)
    return ClaimView(
        **{name: getattr(outcome, name) for name in _outcome_names()},
        judge_calibration=None if calibration is None else decision_judge(outcome),
        result=None if mode is None else outcome_result(outcome),
        calibration=calibration,
    )


def json_record(
    outcome: Outcome, mode: str | None = None, calibrations: Calibrations | None = None
) -> dict[str, Any]:
    """``claim_view(outcome, mode, calibrations).to_dict()``, without making the view: the JSON
    report makes the record of every claim, and thousands of views cost it a third of its time."""
    calibration = claim_calibration(outcome, calibrations)
    values = {
        **vars(outcome),
        "judge_calibration": None if calibration is None else decision_judge(outcome),
        "result": None if mode is None else outcome_result(outcome),
        "calibration": calibration,
    }
    return _json_record(values, ClaimView)


def _json_record(values: Mapping[str, Any], view: type) -> dict[str, Any]:
    """The JSON record of a view's ``values`` (by field name): each field the record has, in
    order, left out when unset unless it is always there, a verdict as its ``as_dict``."""
    names, verdicts = _json_fields(view)
    record: dict[str, Any] = {}
    for name, always in names:
        value = values[name]
        if always or (value is not None and value is not False):
            record[name] = value
    for name in verdicts:
        verdict = record.get(name)
        if verdict is not None:
            record[name] = verdict.as_dict()
    return record


def outcome_from_record(record: Mapping[str, Any]) -> Outcome:
    """An outcome from its JSON record (``ClaimView.to_dict``): each field of ``Outcome`` the
    record has, a verdict read back with ``Verdict.from_dict``."""
    values: dict[str, Any] = {}
    for item in fields(Outcome):
        value = record.get(item.name)
        if item.name not in record:
            continue
        if _holds_verdict(item.type):
            value = Verdict.from_dict(value) if value else None
        values[item.name] = value
    values["passed"] = bool(record["passed"])
    return Outcome(**values)


def _place(where: str) -> tuple[str, int]:
    """A claim's "file:line" as what sorts it: the file, then the line as a number."""
    path, _, line = where.rpartition(":")
    return (path, int(line)) if line.isdigit() else (where, 0)


def in_source_order(outcomes: Sequence[Outcome]) -> list[Outcome]:
    """A test's claims in the order of their lines. Soft claims are judged together after the
    body and filed as each one finishes: the claims that have a line (``where``) take the places
    those claims hold, sorted by file and line (one line's claims, a loop's, in the order they
    were filed); a claim without one (a hard claim, filed at its line) keeps its place."""
    placed = [index for index, outcome in enumerate(outcomes) if outcome.where]
    ordered = list(outcomes)
    by_line = sorted((outcomes[index] for index in placed), key=lambda o: _place(o.where or ""))
    for index, outcome in zip(placed, by_line, strict=True):
        ordered[index] = outcome
    return ordered


def by_test_in_source_order(outcomes: Iterable[Outcome]) -> list[Outcome]:
    """The run's claims by test id, each test's in the order of their lines."""
    tests: dict[str, list[Outcome]] = {}
    for outcome in outcomes:
        tests.setdefault(outcome.test_id or "", []).append(outcome)
    return [claim for test in sorted(tests) for claim in in_source_order(tests[test])]
