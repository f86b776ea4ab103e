"""One view of a claim for every report (issue 49): each field of ``reports.view.ClaimView``
shows where its ``Shown`` says, in the JSON report, in JUnit and on the HTML page, so a field
that one report forgot fails here; a note added to the view alone shows in all of them."""

from __future__ import annotations

import dataclasses
from typing import Any

from pytest_propositions.record import Outcome
from pytest_propositions.reports.html import claim_card
from pytest_propositions.reports.json_report import json_report, outcome_record
from pytest_propositions.reports.junit import claim_properties, junit_properties
from pytest_propositions.reports.summary import claim_text, failure_section, verdict_listing
from pytest_propositions.reports.view import ClaimView, Shown, claim_view, note, outcome_from_record
from pytest_propositions.settings import Settings
from pytest_propositions.verdict import Verdict

CALIBRATION: dict[str, Any] = {
    "model": "openai/judge",
    "identity": "openai/judge",
    "items": 40,
    "false_pass_rate": 0.05,
    "false_fail_rate": 0.1,
    "false_passes": 1,
    "negatives": 20,
    "false_pass_upper": 0.22,
    "false_fails": 2,
    "positives": 20,
    "false_fail_upper": 0.28,
    "confidence": 0.95,
    "balanced_accuracy": 0.9,
    "min_score": None,
    "recorded_at": "2026-01-02T00:00:00",
}

RUNS: dict[str, Any] = {
    "claim": "Ana stays in character.",
    "rule": "mean",
    "rule_text": "the mean score is at least 6",
    "kind": "score",
    "bar": 6.0,
    "threshold": None,
    "confidence": 0.95,
    "decision": "pass",
    "decided_by": "after 2 runs",
    "max_runs": 40,
    "runs_made": 2,
    "runs_held": 2,
    "estimate": 7.5,
    "lower": 6.2,
    "upper": 8.8,
    "advice": "",
    "stopped": "",
    "main_judge": "openai/judge",
    "runs": [{"run": 1, "held": True, "verdict": {"value": 7, "justification": "Yes."}}],
}


def _verdict(kind: str, value: bool | int, claim: str, **more: Any) -> Verdict:
    return Verdict(
        kind=kind,
        claim=claim,
        value=value,
        justification="Because.",
        model="openai/judge",
        key="k" * 32,
        **more,
    )


def _calibrations(identity: str) -> dict[str, Any] | None:
    return CALIBRATION if identity == "openai/judge" else None


def samples() -> list[Outcome]:
    """Claims that between them set every field of ``Outcome``: an asserted score expected not
    to hold, escalated, made after the test body; a claim by call a library made, judged
    after its test; a claim over runs. A text field no sample sets gets a value in the
    second (so a new ``str | None`` field of ``Outcome`` is covered without an edit here)."""
    main = _verdict("score", 3, "Bo is calm.", cost_usd=0.001)
    asserted = Outcome(
        "t.py::test_a",
        _verdict("score", 8, "Bo is calm.", cost_usd=0.01),
        5,
        False,
        holds=False,
        where="t.py:12",
        escalated_from=main,
    )
    by_call = Outcome(
        "t.py::test_b",
        _verdict("check", True, "Cy agrees."),
        None,
        True,
        by_call="Proposition.check",
        after_its_test=True,
        made_by="somelib.agent",
    )
    over_runs = Outcome("t.py::test_c", _verdict("check", True, "Ana."), None, True, runs=RUNS)
    unset = {
        item.name: f"<{item.name}>"
        for item in dataclasses.fields(Outcome)
        if item.default is None
        and str(item.type) == "str | None"
        and all(getattr(o, item.name) is None for o in (asserted, by_call, over_runs))
    }
    return [asserted, dataclasses.replace(by_call, **unset), over_runs]


def _shown(item: dataclasses.Field[Any]) -> Shown:
    how = item.metadata.get("shown")
    assert isinstance(how, Shown), f"ClaimView.{item.name} does not say where it shows"
    return how


class Stats:
    verdicts = cache_hits = judge_calls = prompt_tokens = completion_tokens = 0
    cost_usd = judge_seconds = 0.0
    dry_run_misses = 0


def _card_names(card: dict[str, Any]) -> set[str]:
    rows = {row["name"] for row in card["rows"]}
    return rows | {key for key, value in card.items() if value is not None}


def test_every_field_of_the_view_shows_in_every_report_it_says() -> None:
    views = [claim_view(o, "fail", _calibrations) for o in samples()]
    for item in dataclasses.fields(ClaimView):
        assert any(getattr(v, item.name) not in (None, False) for v in views), (
            f"give a sample claim a value for {item.name}, so its reports can be checked"
        )
    payload = json_report(Settings(), Stats(), samples(), [], _calibrations)
    json_keys = {key for record in payload["verdicts"] for key in record}
    junit_names = {
        name.split("].", 1)[1]
        for outcome in samples()
        for name, _ in junit_properties([outcome], 1, "fail", _calibrations)
    }
    page_names = set().union(*(_card_names(claim_card(v, {})) for v in views))
    terminal = failure_section(samples(), calibrations=_calibrations)
    listing = "\n".join(verdict_listing(samples()))
    for item in dataclasses.fields(ClaimView):
        how = _shown(item)
        if how.json:
            assert item.name in json_keys, f"the JSON report leaves out {item.name}"
        if how.junit:
            assert junit_names & set(how.junit), f"JUnit leaves out {item.name}"
        if how.page:
            assert how.page in page_names, f"the HTML page leaves out {item.name}"
        if how.label is not None:
            assert f"  {how.label}: " in terminal, f"the terminal leaves out {item.name}"
            assert (f"    {how.label}: " in listing) is how.listed
    # What a report leaves out on purpose, each said in the view (a comment says why).
    fields = dataclasses.fields(ClaimView)
    assert {f.name for f in fields if not _shown(f).json} == {"calibration"}
    assert {f.name for f in fields if not _shown(f).junit} == {"test_id", "after_its_test"}
    assert {f.name for f in fields if not _shown(f).page} == {"after_its_test"}


def test_the_view_has_every_field_of_the_outcome_and_xdist_carries_them() -> None:
    outcome_fields = [item.name for item in dataclasses.fields(Outcome)]
    view_fields = [item.name for item in dataclasses.fields(ClaimView)]
    assert set(outcome_fields) <= set(view_fields)
    for outcome in samples():
        assert outcome_from_record(outcome_record(outcome)) == outcome
        # The record is the view's, less what only a report adds.
        assert outcome_record(outcome) == claim_view(outcome).to_dict()


def test_a_note_added_to_the_view_alone_shows_in_every_report() -> None:
    """The one-place property itself: a throwaway note field, declared once, reaches the JSON
    record, JUnit, the page and the terminal with no edit to any report."""
    declared = dataclasses.field(
        default=None, metadata=note("throwaway note", "throwaway_note", lambda v: f"{v}!")
    )
    wider = dataclasses.make_dataclass(
        "WiderView",
        [("throwaway_note", "str | None", declared)],
        bases=(ClaimView,),
        frozen=True,
        kw_only=True,
    )
    base = claim_view(samples()[0], "fail", _calibrations)
    copied = {item.name: getattr(base, item.name) for item in dataclasses.fields(base)}
    view = wider(**copied, throwaway_note="calm")
    assert view.to_dict()["throwaway_note"] == "calm"
    assert ("throwaway_note", "calm") in claim_properties(view)
    assert {"name": "throwaway note", "text": "calm!"} in claim_card(view, {})["rows"]
    assert "\n  throwaway note: calm!\n" in claim_text(view)
    # Unset, it shows nowhere.
    plain = wider(**copied)
    assert "throwaway_note" not in plain.to_dict()
    assert "throwaway_note" not in dict(claim_properties(plain))
    assert "throwaway note" not in claim_text(plain)
