"""``--prop-html``: one self-contained HTML page of every claim of a run, evidence included.

The page is a template in the package data (``reports/templates/``) rendered with chevron, which
escapes every value (``{{...}}``); the claims themselves go in as one JSON data block, which the
page's script turns into cards (only the cards a reader can see: a run of 10,000 claims opens as
fast as a plain page of its size). Each distinct text (a judge's system prompt, a recording, a
model's name) is stored once in that block and referred to by number. Everything a judge saw is
untrusted text (trajectories may hold markup or instructions): the data block escapes ``<``,
``>`` and ``&`` so no text can end it, the script builds cards with ``textContent`` only (never
markup), the templates quote every attribute with ``"`` (chevron escapes it, not ``'``), and a
Content-Security-Policy allows nothing but that script (by its hash) and inline styles: no
request ever leaves the page.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._version import __version__
from ..checks import plural
from ..scale import MAX_SCORE, MIN_SCORE
from ..verdict import CHECK, SCORE
from .counts import confidence_text, count_parts, run_calibrations, run_counts
from .json_report import calibrated_record, record_order, report_path, write_text_atomically
from .runs_text import decision_about, figures_line
from .summary import calibration_line, calibration_text, cost, describe_value, provenance
from .view import ClaimView, claim_view

if TYPE_CHECKING:
    from ..record import FiledJudgeError, Outcome
    from ..runtime import Runtime

TEMPLATES = ("report.mustache", "claims.mustache", "report.css", "report.js")


@cache
def _template(name: str) -> str:
    return (files(__package__) / "templates" / name).read_text(encoding="utf-8")


def _render(name: str, view: Mapping[str, Any]) -> str:
    import chevron

    partials = {"claims": _template("claims.mustache")}
    return str(chevron.render(_template(name), view, partials_dict=partials))


def _csp(script: str) -> str:
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    return (
        "default-src 'none'; style-src 'unsafe-inline'; "
        f"script-src 'sha256-{digest}'; img-src 'none'; form-action 'none'; base-uri 'none'"
    )


def _context_view(messages: Sequence[Mapping[str, Any]] | None) -> dict[str, Any] | None:
    if not messages:
        return None
    return {
        "count": plural(len(messages), "message"),
        "messages": [
            {"role": str(m.get("role", "?")), "content": str(m.get("content", ""))}
            for m in messages
        ],
    }


def claim_card(view: ClaimView, contexts: Mapping[str, Any] | None) -> dict[str, Any]:
    """A claim's card (the templates' data, pytest-html's extra), each note of its view a row;
    ``contexts`` None: without what the judge saw."""
    verdict = view.verdict
    by_call = view.by_call
    word = str(view.result)
    rows = [
        ("kind", verdict.kind),
        (
            "verdict" if verdict.kind == CHECK else "score",
            describe_value(verdict, view.threshold, view.holds, by_call, page=True),
        ),
        ("justification", verdict.justification or "(none given)"),
        ("confidence", confidence_text(verdict.confidence, verdict.precondition_skipped)),
        ("model", verdict.model or "none"),
        ("provenance", provenance(verdict, "cached")),
    ]
    rows += [(str(how.label), how.text(value)) for how, value in view.notes()]
    if verdict.votes:
        rows.append(("votes", ", ".join(str(vote) for vote in verdict.votes)))
    if verdict.key:
        rows.append(("key", verdict.key[:16]))
    main = view.escalated_from
    if main is not None:
        # An escalated claim: the standing verdict's cost, then the main judge's verdict.
        said = describe_value(main, view.threshold, view.holds, page=True)
        rows += [
            ("escalated", f"{verdict.model or 'none'}'s verdict stands"),
            ("cost", cost(verdict)),
            ("main judge", f"{main.model or 'none'}: {said}"),
            ("main judge's justification", main.justification or "(none given)"),
            ("main judge's provenance", provenance(main, "cached")),
            ("main judge's cost", cost(main)),
        ]
    if view.calibration is not None:
        rows.append(("judge's measured error", calibration_text(view.calibration)))
    reasoning = verdict.reasoning and not verdict.precondition_skipped
    status = word.replace(" ", "-")
    return {
        "status": status,
        # The "failures" filter keeps failed and not-upheld claims; a claim by call fails
        # nothing, so its cards are filtered under a status of their own.
        "filter": f"by-call-{status}" if by_call else status,
        "word": word,
        "test": str(view.test_id or "-"),
        "text": str(verdict.claim),
        "rows": [{"name": name, "text": str(text)} for name, text in rows],
        "reasoning": str(verdict.reasoning) if reasoning else None,
        "runs": _runs_view(view.runs),
        "context": None if contexts is None else _context_view(contexts.get(verdict.key or "")),
    }


def _runs_view(runs: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A claim over runs: its figures, then each run's verdict and justification."""
    if not runs:
        return None
    rows = [
        {
            "run": str(run["run"]),
            "held_attr": str(run["held"]).lower(),
            "value": str(run["verdict"]["value"]),
            "held": "held" if run["held"] else "did not hold",
            "control": f"; control: {run['control']['value']}" if "control" in run else "",
            "justification": str(run["verdict"].get("justification") or ""),
            "referee": _referee_cell(run) if runs.get("referee") else None,
        }
        for run in runs["runs"]
    ]
    return {
        "decision": str(runs["decision"]),
        "rule": str(runs["rule_text"]),
        "figures": figures_line(runs),
        "decided_by": str(runs["decided_by"]),
        "about": decision_about(runs),
        "referee": str(runs["referee"]) if runs.get("referee") else None,
        "count": str(len(rows)),
        "rows": rows,
    }


def _referee_cell(run: Mapping[str, Any]) -> dict[str, str]:
    """A run's referee verdict, or that the referee was not drawn to judge it."""
    referee = run.get("referee")
    if not referee:
        return {"value": "not drawn", "justification": ""}
    held = "held" if run.get("referee_held") else "did not hold"
    return {
        "value": f"{referee['value']} ({held})",
        "justification": str(referee.get("justification") or ""),
    }


def _histogram_view(scores: Iterable[int]) -> dict[str, Any] | None:
    """The score histogram's bars; None (no histogram) in a run without score verdicts."""
    counts = [0] * (MAX_SCORE - MIN_SCORE + 1)
    for score in scores:
        counts[score - MIN_SCORE] += 1
    top = max(counts)
    if not top:
        return None
    bars = [
        {
            "score": str(MIN_SCORE + i),
            "count": str(count),
            "height": str(round(70 * count / top) + 1),
        }
        for i, count in enumerate(counts)
    ]
    return {"bars": bars}


class TextTable:
    """Each distinct text of the page once, in the order first asked for: the page's data
    refers to a text by its number."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self._numbers: dict[str, int] = {}

    def __call__(self, text: str) -> int:
        number = self._numbers.get(text)
        if number is None:
            number = self._numbers[text] = len(self.texts)
            self.texts.append(text)
        return number


# A message of a context is stored as its paragraphs: a test's claims share the recording's (and
# every claim the system prompt's), each kept once. Joined with this, they are the message again.
PARAGRAPH = "\n\n"


def _context_data(messages: Sequence[Mapping[str, Any]], table: TextTable) -> list[Any]:
    """What the judge saw, as ``[role, [paragraph, ...]]`` per message, each text a number."""
    return [
        [
            table(str(message.get("role", "?"))),
            [table(part) for part in str(message.get("content", "")).split(PARAGRAPH)],
        ]
        for message in messages
    ]


def claim_data(view: ClaimView, contexts: Mapping[str, Any], table: TextTable) -> dict[str, Any]:
    """A claim as the page's data: its card's texts by number (``f`` the filter it falls
    under, ``s`` its status, ``w`` its word, ``t`` its test, ``c`` the claim, ``r`` its rows as
    name, text, name, text...), ``n`` the reasoning, ``u`` a claim over runs' figures, ``x``
    what the judge saw, ``v`` a score (for sorting)."""
    card = claim_card(view, None)
    data: dict[str, Any] = {
        name: table(card[key])
        for name, key in (("f", "filter"), ("s", "status"), ("w", "word"), ("t", "test"))
    }
    data["c"] = table(card["text"])
    data["r"] = [table(row[part]) for row in card["rows"] for part in ("name", "text")]
    if card["reasoning"]:
        data["n"] = table(card["reasoning"])
    if card["runs"]:
        data["u"] = card["runs"]
    messages = contexts.get(view.verdict.key or "")
    if messages:
        data["x"] = _context_data(messages, table)
    if view.verdict.kind == SCORE and view.runs is None:
        data["v"] = int(view.verdict.value)
    return data


def error_data(error: FiledJudgeError, table: TextTable) -> dict[str, Any]:
    """A judge error as the page's data: its card is headed by the claim it was about (by the
    error's class where the code that filed it knew no claim), the message below."""
    kind, _, _ = error.message.partition(":")
    return {
        "f": table("error"),
        "s": table("error"),
        "w": table("judge error"),
        "t": table(str(error.test_id or "-")),
        "c": table(kind if error.claim is None else error.claim),
        "e": table(error.message),
    }


def _data_block(data: Mapping[str, Any]) -> str:
    """The page's data as JSON inside ``<script type="application/json">``: ``<``, ``>`` and
    ``&`` escaped (``\\u003c``...), so no text can close the block or open markup."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


# The filters the page offers, after "all": (value, label, the card filters it shows).
FILTERS = (
    ("passed", "passed", ("passed",)),
    ("failed", "failed", ("failed",)),
    ("inconclusive", "inconclusive", ("inconclusive",)),
    ("not-upheld", "not upheld (by call)", ("by-call-not-upheld",)),
    ("by-call", "by call", ("by-call-upheld", "by-call-not-upheld")),
    ("judge-errors", "judge errors", ("error",)),
)


def page(runtime: Runtime) -> str:
    """The page: summary and histogram (when there are scores), search, filters with each one's
    count, grouping and sort, then the claims and judge errors as data for the page's script.

    The counts are the terminal summary's (``RunCounts``), worded the same way; claims come in
    the JSON report's order.
    """
    mode = runtime.settings.outcome
    known = runtime.record.calibrations
    outcomes = sorted(
        runtime.record.outcomes, key=lambda o: record_order(calibrated_record(o, known))
    )
    errors = sorted(runtime.record.judge_errors, key=lambda error: (error[0] or "", error[1]))
    counts = run_counts(outcomes, errors, runtime.stats())
    scores = [int(o.verdict.value) for o in outcomes if o.verdict.kind == SCORE]
    table = TextTable()
    contexts = runtime.record.contexts
    claims = [claim_data(claim_view(o, mode, known), contexts, table) for o in outcomes]
    claims += [error_data(error, table) for error in errors]
    found = Counter(table.texts[claim["f"]] for claim in claims)
    filters = [
        {"name": name, "label": label, "count": str(sum(found[f] for f in shows))}
        for name, label, shows in FILTERS
        if name != "inconclusive" or found["inconclusive"]
    ]
    script = _template("report.js")
    view = {
        "csp": _csp(script),
        "style": _template("report.css"),
        "script": script,
        "model": str(runtime.settings.model),
        "cache": str(runtime.settings.cache),
        "mode": mode,
        "version": __version__,
        "report_mode": mode == "report",
        "counts": [*count_parts(counts, mode), f"${counts.cost_usd:.4f}"],
        "histogram": _histogram_view(scores),
        "filters": filters,
        "total": str(len(claims)),
        "calibrations": [calibration_line(v) for v in run_calibrations(outcomes, known).values()],
        "data": _data_block({"texts": table.texts, "claims": claims}),
    }
    return _render("report.mustache", view)


def save_html_report(runtime: Runtime, base: Path) -> str | None:
    """Write the run's ``--prop-html``; a message saying what went wrong, or None."""
    configured = runtime.settings.html
    if not configured:
        return None
    try:
        path = report_path(configured, base, "--prop-html")
        write_text_atomically(path, page(runtime))
    except ValueError as error:
        return str(error)
    except OSError as error:
        return f"--prop-html: cannot write {configured!r}: {error}"
    return None


def pytest_html_extra(outcomes: Iterable[Outcome], runtime: Runtime) -> Any:
    """A test's claims as one pytest-html "extra" (pytest-html escapes nothing: chevron does)."""
    from pytest_html import extras

    known = runtime.record.calibrations
    mode = runtime.settings.outcome
    claims = [claim_card(claim_view(o, mode, known), runtime.record.contexts) for o in outcomes]
    page = _render("claims.mustache", {"claims": claims})
    return extras.html(f'<div class="propositions">{page}</div>')
