"""``--prop-html``: one self-contained HTML page of every claim of a run, evidence included.

Everything a judge saw is untrusted text (trajectories may hold markup or instructions), so every
value is escaped, the page's own script only toggles attributes, and a Content-Security-Policy
allows nothing but that script (by its hash) and inline styles: no request ever leaves the page.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterable, Mapping, Sequence
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..scale import MAX_SCORE, MIN_SCORE

if TYPE_CHECKING:
    from ..runtime import Outcome, Runtime
    from ..settings import Settings
    from .summary import RunCounts

_STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:1.5rem;color:#1d2330;background:#fafbfc}
h1{font-size:1.3rem;margin:0 0 .3rem}
.meta{color:#5a6273;margin-bottom:1rem}
.summary{display:flex;gap:2rem;flex-wrap:wrap;align-items:flex-end;margin-bottom:1rem}
.counts span{display:inline-block;margin-right:1rem}
.hist{display:flex;gap:3px;align-items:flex-end;height:80px}
.hist div{width:22px;background:#6b8fd6;position:relative}
.hist b{position:absolute;top:100%;left:0;right:0;text-align:center;font-weight:normal;font-size:11px}
.filters{margin:1rem 0}
.claim{background:#fff;border:1px solid #d9dde5;border-left:5px solid #2e9c5a;border-radius:4px;padding:.6rem .9rem;margin:.5rem 0}
.claim.failed{border-left-color:#c9372c}
.claim.not-upheld{border-left-color:#d4a72c}
.claim.error{border-left-color:#b7791f}
.mode{background:#fff6d6;border:1px solid #e8d48a;border-radius:4px;padding:.4rem .7rem;margin-bottom:1rem}
.claim[hidden]{display:none}
.status{font-weight:bold;text-transform:uppercase;font-size:12px}
.passed .status{color:#2e9c5a}.failed .status{color:#c9372c}.error .status{color:#b7791f}
.upheld .status{color:#2e9c5a}.not-upheld .status{color:#8a6d00}
details.reasoning{margin:.3rem 0}
.test{color:#5a6273;font-family:ui-monospace,monospace;font-size:12px}
.text{font-size:15px;margin:.2rem 0}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.1rem .8rem;margin:.4rem 0}
dt{color:#5a6273}dd{margin:0}
pre{white-space:pre-wrap;word-break:break-word;background:#f3f4f7;padding:.5rem;border-radius:3px;font-size:12px}
"""

# Reads the filter from the page's address (#failures, #errors) so a link can open it filtered.
_SCRIPT = """
(function(){
  var radios=document.querySelectorAll('input[name="show"]');
  function apply(which){
    var claims=document.querySelectorAll('.claim'),shown=0;
    for(var i=0;i<claims.length;i++){
      var s=claims[i].getAttribute('data-status');
      var keep=which==='all'||(which==='failures'&&(s==='failed'||s==='not-upheld'))||(which==='errors'&&s==='error');
      if(keep){claims[i].removeAttribute('hidden');shown++;}else{claims[i].setAttribute('hidden','');}
    }
    document.getElementById('shown').textContent=String(shown);
    for(var j=0;j<radios.length;j++){radios[j].checked=radios[j].value===which;}
  }
  for(var k=0;k<radios.length;k++){
    radios[k].addEventListener('change',function(e){
      apply(e.target.value);history.replaceState(null,'','#'+e.target.value);
    });
  }
  var start=(location.hash||'#all').slice(1);
  apply(['all','failures','errors'].indexOf(start)>=0?start:'all');
  document.body.setAttribute('data-ready','1');
})();
"""


def _csp() -> str:
    digest = base64.b64encode(hashlib.sha256(_SCRIPT.encode("utf-8")).digest()).decode("ascii")
    return (
        "default-src 'none'; style-src 'unsafe-inline'; "
        f"script-src 'sha256-{digest}'; img-src 'none'; form-action 'none'; base-uri 'none'"
    )


def _e(value: Any) -> str:
    return escape(str(value), quote=True)


def _value_text(verdict: Mapping[str, Any], threshold: int | None, holds: bool = True) -> str:
    if verdict["kind"] == "check":
        return f"{verdict['value']} (expected {'True' if holds else 'the claim not to hold'})"
    if threshold is None:
        return f"{verdict['value']}/{MAX_SCORE}"
    bar = f"minimum {threshold}" if holds else f"maximum {threshold}, expected not to hold"
    return f"{verdict['value']}/{MAX_SCORE}, {bar}"


def _provenance(verdict: Mapping[str, Any]) -> str:
    if verdict.get("precondition_skipped"):
        return "not judged (precondition false)"
    if verdict.get("cached"):
        return f"cached, recorded {verdict.get('recorded_at') or 'at an unknown time'}"
    return f"judged live in {float(verdict.get('judge_seconds') or 0):.2f}s"


def _context_html(messages: Sequence[Mapping[str, Any]] | None) -> str:
    from .summary import plural

    if not messages:
        return "<p class='meta'>No judge request was recorded for this claim.</p>"
    parts = [
        f"<details class='context'><summary>Context the judge saw ({plural(len(messages), 'message')})"
        "</summary>"
    ]
    for message in messages:
        parts.append(
            f"<h4>{_e(message.get('role', '?'))}</h4><pre>{_e(message.get('content', ''))}</pre>"
        )
    parts.append("</details>")
    return "".join(parts)


def _claim_html(record: Mapping[str, Any], contexts: Mapping[str, Any], mode: str) -> str:
    from .summary import confidence_text, result_word

    verdict = record["verdict"]
    word = result_word(bool(record["passed"]), mode)
    status = word.replace(" ", "-")
    rows = [
        ("kind", verdict["kind"]),
        (
            "verdict" if verdict["kind"] == "check" else "score",
            _value_text(verdict, record["threshold"], record.get("holds", True) is not False),
        ),
        ("justification", verdict.get("justification") or "(none given)"),
        (
            "confidence",
            confidence_text(verdict.get("confidence"), bool(verdict.get("precondition_skipped"))),
        ),
        ("model", verdict.get("model") or "none"),
        ("provenance", _provenance(verdict)),
    ]
    if record.get("where"):
        rows.append(("claimed at", record["where"]))
    if verdict.get("votes"):
        rows.append(("votes", ", ".join(str(vote) for vote in verdict["votes"])))
    if verdict.get("key"):
        rows.append(("key", str(verdict["key"])[:16]))
    details = "".join(f"<dt>{_e(name)}</dt><dd>{_e(text)}</dd>" for name, text in rows)
    reasoning = ""
    if verdict.get("reasoning") and not verdict.get("precondition_skipped"):
        reasoning = (
            "<details class='reasoning'><summary>The judge's reasoning</summary>"
            f"<pre>{_e(verdict['reasoning'])}</pre></details>"
        )
    return (
        f"<section class='claim {status}' data-status='{status}'>"
        f"<div class='status'>{_e(word)}</div>"
        f"<div class='test'>{_e(record['test_id'] or '-')}</div>"
        f"<div class='text'>{_e(verdict['claim'])}</div>"
        f"<dl>{details}</dl>{reasoning}"
        f"{_runs_html(record.get('runs'))}"
        f"{_context_html(contexts.get(verdict.get('key') or ''))}"
        "</section>"
    )


def _runs_html(runs: Mapping[str, Any] | None) -> str:
    """A claim over runs: its figures, then each run's verdict and justification."""
    if not runs:
        return ""
    from ..runs.many_runs import figures_line

    rows = []
    for run in runs["runs"]:
        verdict = run["verdict"]
        held = "held" if run["held"] else "did not hold"
        control = ""
        if "control" in run:
            control = f"; control: {run['control']['value']}"
        rows.append(
            f"<tr class='run' data-held='{str(run['held']).lower()}'><td>{_e(run['run'])}</td>"
            f"<td>{_e(verdict['value'])} ({held}){_e(control)}</td>"
            f"<td>{_e(verdict.get('justification') or '')}</td></tr>"
        )
    return (
        f"<div class='runs'><p><b>{_e(runs['decision'])}</b>: {_e(runs['rule_text'])}; "
        f"{_e(figures_line(runs))}. Decided by: {_e(runs['decided_by'])}</p>"
        f"<details><summary>{len(rows)} runs</summary><table>"
        "<tr><th>run</th><th>verdict</th><th>justification</th></tr>"
        f"{''.join(rows)}</table></details></div>"
    )


def _error_html(test_id: str | None, message: str) -> str:
    return (
        "<section class='claim error' data-status='error'>"
        "<div class='status'>judge error</div>"
        f"<div class='test'>{_e(test_id or '-')}</div>"
        f"<pre>{_e(message)}</pre>"
        "</section>"
    )


def _histogram(scores: Iterable[int]) -> str:
    counts = [0] * (MAX_SCORE - MIN_SCORE + 1)
    for score in scores:
        counts[score - MIN_SCORE] += 1
    top = max(counts) or 1
    bars = "".join(
        f"<div title='score {MIN_SCORE + i}: {count}' style='height:{round(70 * count / top) + 1}px'>"
        f"<b>{MIN_SCORE + i}</b></div>"
        for i, count in enumerate(counts)
    )
    return f"<div><div class='meta'>score histogram</div><div class='hist'>{bars}</div></div>"


def render(
    settings: Settings,
    records: Sequence[Mapping[str, Any]],
    judge_errors: Sequence[tuple[str | None, str]],
    contexts: Mapping[str, Any],
    counts: RunCounts,
) -> str:
    """The page: summary and histogram, filters, then one section per claim and judge error.

    The counts are the terminal summary's (``RunCounts``), worded the same way.
    """
    from .._version import __version__
    from .summary import count_parts, result_word

    mode = settings.outcome
    scores = [int(r["verdict"]["value"]) for r in records if r["verdict"]["kind"] == "score"]
    total = len(records) + len(judge_errors)
    parts = [*count_parts(counts, mode), f"${counts.cost_usd:.4f}"]
    summary = " ".join(f"<span>{_e(part)}</span>" for part in parts)
    banner = ""
    if mode == "report":
        banner = (
            "<div class='mode'>Outcome report (<code>--prop-outcome=report</code>): claims the "
            "judge did not uphold are reported here, not failed; only judge errors fail the "
            "run.</div>"
        )
    filters = (
        "<div class='filters'>Show: "
        "<label><input type='radio' name='show' value='all' checked> all</label> "
        "<label><input type='radio' name='show' value='failures'> "
        f"{_e(result_word(False, mode))}</label> "
        "<label><input type='radio' name='show' value='errors'> judge errors</label> "
        f"(<span id='shown'>{total}</span> of {total} shown)</div>"
    )
    body = "".join(_claim_html(record, contexts, mode) for record in records) + "".join(
        _error_html(test_id, message) for test_id, message in judge_errors
    )
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        f"<meta http-equiv='Content-Security-Policy' content=\"{_csp()}\">"
        "<title>Propositions report</title>"
        f"<style>{_STYLE}</style></head><body>"
        "<h1>Propositions report</h1>"
        f"<div class='meta'>judge {_e(settings.model)}, cache {_e(settings.cache)}, "
        f"outcome {_e(mode)}, pytest-propositions {_e(__version__)}</div>{banner}"
        f"<div class='summary'><div class='counts'>{summary}</div>{_histogram(scores)}</div>"
        f"{filters}<main>{body}</main>"
        f"<script>{_SCRIPT}</script></body></html>\n"
    )


def save_html_report(runtime: Runtime, base: Path) -> str | None:
    """Write the run's ``--prop-html``; a message saying what went wrong, or None."""
    from .summary import outcome_record, record_order, run_counts, write_text_atomically

    configured = runtime.settings.html
    if not configured:
        return None
    path = base / Path(configured).expanduser()
    if path.is_dir():
        return f"--prop-html: {configured!r} is a directory; give a file name"
    records = sorted((outcome_record(o) for o in runtime.outcomes), key=record_order)
    errors = sorted(runtime.judge_errors, key=lambda error: (error[0] or "", error[1]))
    counts = run_counts(runtime.outcomes, errors, runtime.stats())
    page = render(runtime.settings, records, errors, runtime.contexts, counts)
    try:
        write_text_atomically(path, page)
    except OSError as error:
        return f"--prop-html: cannot write {configured!r}: {error}"
    return None


def fragment(outcomes: Iterable[Outcome], contexts: Mapping[str, Any], mode: str = "fail") -> str:
    """A test's claims as an HTML fragment, for pytest-html's per-test extras."""
    from .summary import outcome_record

    return "".join(_claim_html(outcome_record(o), contexts, mode) for o in outcomes)


def pytest_html_extra(
    outcomes: Iterable[Outcome], contexts: Mapping[str, Any], mode: str = "fail"
) -> Any:
    """The claims as one pytest-html "extra" (pytest-html escapes nothing: the fragment does)."""
    from pytest_html import extras

    return extras.html(f"<div class='propositions'>{fragment(outcomes, contexts, mode)}</div>")
