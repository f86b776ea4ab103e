"""From verdicts to reports: the failure section, the summary and its table, the header, JUnit
properties, the JSON report (and the records xdist workers send to the controller).
"""

from __future__ import annotations

import json
import os
import textwrap
import uuid
from collections.abc import Iterable, Mapping
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .scale import MAX_SCORE

if TYPE_CHECKING:
    from .judge import JudgeStats
    from .runtime import Outcome, Runtime
    from .settings import Settings
    from .verdict import Verdict

SECTION_TITLE = "proposition"


def _indent(text: str) -> str:
    return textwrap.indent(text.strip() or "(none given)", "    ")


def provenance(verdict: Verdict) -> str:
    if verdict.precondition_skipped:
        return "not judged (precondition false)"
    if verdict.cached:
        return f"from the cache, recorded {verdict.recorded_at or 'at an unknown time'}"
    return f"judged live in {verdict.judge_seconds:.2f}s"


def describe_value(verdict: Verdict, threshold: int | None) -> str:
    if verdict.kind == "check":
        return f"{verdict.value} (expected True)"
    return f"{verdict.value}/{MAX_SCORE} (minimum {threshold})"


def outcome_text(outcome: Outcome) -> str:
    if outcome.runs is not None:
        from .many_runs import runs_text

        return runs_text(outcome.runs)
    verdict = outcome.verdict
    label = "PASSED" if outcome.passed else "FAILED"
    lines = [
        f"{label}: {verdict.claim}",
        f"  {'verdict' if verdict.kind == 'check' else 'score'}: {describe_value(verdict, outcome.threshold)}",
    ]
    if verdict.confidence is not None:
        lines.append(f"  confidence: {verdict.confidence:.2f}")
    if verdict.votes:
        lines.append(f"  votes: {', '.join(str(vote) for vote in verdict.votes)}")
    if verdict.revised_from is not None:
        lines.append(f"  revised on double check from: {verdict.revised_from}")
    lines.append(f"  model: {verdict.model or 'none'}; {provenance(verdict)}")
    if verdict.key:
        lines.append(f"  key: {verdict.key[:16]}")
    lines.append("  justification:")
    lines.append(_indent(verdict.justification))
    return "\n".join(lines)


RUNS_SECTION_TITLE = "proposition over runs"


def runs_sections(outcomes: Iterable[Outcome]) -> list[tuple[str, str]]:
    """A report section for each claim over runs (a passing test shows them under -rA)."""
    return [(RUNS_SECTION_TITLE, outcome_text(o)) for o in outcomes if o.runs is not None]


def failure_section(outcomes: Iterable[Outcome]) -> str:
    """Every claim of a failed test, failing ones first, each with its justification."""
    ordered = sorted(outcomes, key=lambda outcome: outcome.passed)
    return "\n\n".join(outcome_text(outcome) for outcome in ordered)


def summary_line(stats: JudgeStats, failed: int, errors: int, outcome: str = "fail") -> str:
    """The run's counts; under --prop-outcome=report a claim the judge rejected is "not upheld"."""
    tokens = stats.prompt_tokens + stats.completion_tokens
    parts = [
        f"{stats.verdicts} verdicts",
        f"{failed} not upheld" if outcome == "report" else f"{failed} failed",
        f"{errors} judge errors",
        f"{stats.cache_hits} from cache",
        f"{stats.judge_calls} judge calls",
        f"{tokens} tokens",
        f"${stats.cost_usd:.4f}",
        f"{stats.judge_seconds:.1f}s judging",
    ]
    return "propositions: " + ", ".join(parts)


# The judge `--prop-model=local` runs unless --prop-local-model names another file.
STAND_IN_MODEL = "SmolLM2-135M-Instruct"


def judge_description(settings: Settings) -> str:
    """The judge as the header names it; the bundled tiny model says it is a stand-in."""
    if settings.model != "local":
        return settings.model
    if settings.local_model:
        return f"local ({Path(settings.local_model).name})"
    return (
        f"local ({STAND_IN_MODEL}, a tiny stand-in for trying the plugin; pick a real judge "
        "with --prop-model=...)"
    )


def header_line(settings: Settings, cache_place: str | None) -> str:
    """One line: the judge, the cache, and report mode when it is on."""
    cache = (
        settings.cache
        if settings.cache == "off"
        else f"{settings.cache} ({cache_place or 'no folder'})"
    )
    line = f"propositions: model {judge_description(settings)}, cache {cache}"
    if settings.outcome == "report":
        line += ", outcome report (claims not upheld are reported, not failed)"
    return line


def all_cached_line(stats: JudgeStats) -> str | None:
    """Said plainly when no verdict of the run needed the judge: the cache at work."""
    if stats.verdicts and stats.cache_hits == stats.verdicts and not stats.judge_calls:
        return (
            f"propositions: every verdict ({stats.verdicts}) came from the cache; "
            "the judge was not called"
        )
    return None


def verdict_listing(outcomes: Iterable[Outcome]) -> list[str]:
    """Every claim of the run, upheld or not, with the judge's justification, by test id.

    What --prop-outcome=report shows instead of failures (and -vv always).
    """
    ordered = sorted(outcomes, key=lambda outcome: outcome.test_id or "")
    lines: list[str] = []
    for outcome in ordered:
        verdict = outcome.verdict
        label = "UPHELD" if outcome.passed else "NOT UPHELD"
        lines.append(f"{label:<10}  {outcome.test_id or '-'}")
        lines.append(f"    claim:   {verdict.claim}")
        if verdict.precondition_skipped:
            value = "not judged, the precondition was false"
        else:
            if verdict.kind == "check":
                value = str(verdict.value)
            else:
                value = f"{verdict.value}/{MAX_SCORE} (minimum {outcome.threshold})"
            value += " (cached)" if verdict.cached else " (live)"
        lines.append(f"    verdict: {value}")
        why = " ".join(verdict.justification.split()) or "(none given)"
        lines.extend(
            textwrap.wrap(why, width=96, initial_indent="    why:     ", subsequent_indent=" " * 13)
        )
    return lines


def dry_run_line(misses: int) -> str:
    return f"propositions: dry run, {misses} claims would be judged (no cached verdict)"


# -- the -v table ---------------------------------------------------------------------------------

TABLE_ROWS = 10
TABLE_WIDTH = 100
_TEST_COLUMN_MAX = 50
_CLAIM_COLUMN_MIN = 20


def _clip(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: max(width - 3, 0)] + "..."


def lowest_scores_table(
    outcomes: Iterable[Outcome], rows: int = TABLE_ROWS, width: int = TABLE_WIDTH
) -> list[str]:
    """The lowest score verdicts of the run, lowest first, one line each; empty without scores.

    Ties are ordered by test id and claim, so the table does not depend on xdist's scheduling.
    """
    scores = sorted(
        (outcome for outcome in outcomes if outcome.verdict.kind == "score"),
        key=lambda outcome: (
            int(outcome.verdict.value),
            outcome.test_id or "",
            outcome.verdict.claim,
        ),
    )
    if not scores:
        return []
    shown = scores[:rows]
    test_width = min(max(len(outcome.test_id or "-") for outcome in shown), _TEST_COLUMN_MAX)
    test_width = max(test_width, len("test"))
    lines = [
        f"propositions: lowest scores ({len(shown)} of {len(scores)})",
        f"{'score':>5}  {'min':>3}  {'result':<6}  {'test':<{test_width}}  claim",
    ]
    for outcome in shown:
        score = f"{outcome.verdict.value}/{MAX_SCORE}"
        bar = "-" if outcome.threshold is None else str(outcome.threshold)
        result = "passed" if outcome.passed else "FAILED"
        test = outcome.test_id or "-"
        if len(test) > _TEST_COLUMN_MAX:
            # The test's own name is at the end of its id; keep that part.
            test = "..." + test[-(_TEST_COLUMN_MAX - 3) :]
        prefix = f"{score:>5}  {bar:>3}  {result:<6}  {test:<{test_width}}  "
        room = max(width - len(prefix), _CLAIM_COLUMN_MIN)
        lines.append(prefix + _clip(outcome.verdict.claim, room))
    return lines


# -- JUnit XML --------------------------------------------------------------------------------------


def _flag(value: bool) -> str:
    return "true" if value else "false"


def junit_properties(outcomes: Iterable[Outcome], start: int = 1) -> list[tuple[str, str]]:
    """``proposition[i].<field>`` properties, i counting a test's claims from 1 in judging order.

    Fields: claim, kind, value, threshold (score claims), passed, confidence (when given),
    model, cached, justification. Booleans are ``true``/``false``.
    """
    properties: list[tuple[str, str]] = []
    for index, outcome in enumerate(outcomes, start):
        verdict = outcome.verdict
        value = _flag(verdict.value) if isinstance(verdict.value, bool) else str(verdict.value)
        fields: list[tuple[str, str]] = [
            ("claim", verdict.claim),
            ("kind", verdict.kind),
            ("value", value),
        ]
        if outcome.threshold is not None:
            fields.append(("threshold", str(outcome.threshold)))
        fields.append(("passed", _flag(outcome.passed)))
        if verdict.confidence is not None:
            fields.append(("confidence", f"{verdict.confidence:.2f}"))
        fields += [
            ("model", verdict.model),
            ("cached", _flag(verdict.cached)),
            ("justification", verdict.justification),
        ]
        if outcome.runs is not None:
            fields += runs_properties(outcome.runs)
        properties += [(f"proposition[{index}].{name}", text) for name, text in fields]
    return properties


def runs_properties(runs: Mapping[str, Any]) -> list[tuple[str, str]]:
    """A claim over runs' figures as JUnit properties (``runs.made``, ``runs.rate``...)."""
    estimate = "mean" if runs["rule"] == "mean" else "rate"
    if runs["rule"] == "better_than" and runs["kind"] == "score":
        estimate = "mean"
    pairs = [
        ("runs.rule", str(runs["rule_text"])),
        ("runs.decision", str(runs["decision"])),
        ("runs.made", str(runs["runs_made"])),
        ("runs.held", str(runs["runs_held"])),
        (f"runs.{estimate}", str(runs["estimate"])),
        ("runs.lower", str(runs["lower"])),
        ("runs.upper", str(runs["upper"])),
        ("runs.confidence", str(runs["confidence"])),
        ("runs.decided_by", str(runs["decided_by"])),
    ]
    if runs.get("control_estimate") is not None:
        pairs.append(("runs.control", str(runs["control_estimate"])))
    return pairs


def junit_failure_to_error(config: Any, report: Any) -> bool:
    """Turn the <failure> junitxml just recorded for this call report into an <error>.

    junitxml offers no hook for it, so this reaches into its writer; if a pytest version lays
    it out differently, the test stays a <failure> (a test of the suite watches for that).
    """
    try:
        from _pytest.junitxml import xml_key

        xml = config.stash.get(xml_key, None)
        if xml is None:
            return False
        reporter = xml.node_reporter(report)
        for node in reversed(reporter.nodes):
            if node.tag == "failure":
                node.tag = "error"
                xml.stats["failure"] -= 1
                xml.stats["error"] += 1
                return True
    except (ImportError, AttributeError, KeyError, TypeError):
        pass
    return False


# -- records: the JSON report, and what xdist workers send the controller -------------------------


def outcome_record(outcome: Outcome) -> dict[str, Any]:
    """An outcome as plain JSON data (execnet and json both carry it)."""
    record = {
        "test_id": outcome.test_id,
        "threshold": outcome.threshold,
        "passed": outcome.passed,
        "verdict": outcome.verdict.as_dict(),
    }
    if outcome.runs is not None:
        record["runs"] = outcome.runs
    return record


def outcome_from_record(record: Mapping[str, Any]) -> Outcome:
    from .runtime import Outcome
    from .verdict import Verdict

    return Outcome(
        test_id=record["test_id"],
        verdict=Verdict.from_dict(record["verdict"]),
        threshold=record["threshold"],
        passed=bool(record["passed"]),
        runs=record.get("runs"),
    )


def stats_record(stats: JudgeStats) -> dict[str, float]:
    from .runtime import stat_names

    return {name: getattr(stats, name) for name in stat_names()}


def record_order(record: Mapping[str, Any]) -> tuple[str, str, str, str]:
    verdict = record["verdict"]
    # The whole record breaks ties, so identical claims in one test sort the same every run.
    return (
        record["test_id"] or "",
        verdict["claim"],
        verdict["kind"],
        json.dumps(record, sort_keys=True),
    )


def json_report(
    settings: Settings,
    stats: JudgeStats,
    outcomes: Iterable[Outcome],
    judge_errors: Iterable[tuple[str | None, str]],
) -> dict[str, Any]:
    """Every verdict of the run with its test id, sorted by test id then claim, and the counts."""
    from ._version import __version__

    verdicts = sorted((outcome_record(outcome) for outcome in outcomes), key=record_order)
    errors = sorted(judge_errors, key=lambda error: (error[0] or "", error[1]))
    return {
        "plugin_version": __version__,
        "model": settings.model,
        "cache_mode": settings.cache,
        "summary": {
            "verdicts": stats.verdicts,
            "failed": sum(1 for record in verdicts if not record["passed"]),
            "judge_errors": len(errors),
            "cache_hits": stats.cache_hits,
            "judge_calls": stats.judge_calls,
            "prompt_tokens": stats.prompt_tokens,
            "completion_tokens": stats.completion_tokens,
            "cost_usd": round(stats.cost_usd, 6),
            "judge_seconds": round(stats.judge_seconds, 3),
            "dry_run_misses": stats.dry_run_misses,
        },
        "verdicts": verdicts,
        "judge_errors": [{"test_id": test_id, "error": error} for test_id, error in errors],
    }


def report_path(configured: str, base: Path) -> Path:
    """Where ``--prop-report`` writes, relative to ``base``; ValueError if that is a folder."""
    path = base / Path(configured).expanduser()
    if path.is_dir():
        raise ValueError(
            f"--prop-report: {configured!r} is a directory; give a file name, e.g. "
            f"{str(Path(configured) / 'propositions.json')!r}"
        )
    return path


def write_json_report(path: Path, payload: Mapping[str, Any]) -> None:
    """Write the report whole or not at all: a temporary file beside it, then a rename."""
    write_text_atomically(path, json.dumps(payload, indent=2, ensure_ascii=False) + "\n")


def write_text_atomically(path: Path, text: str) -> None:
    """A report file appears whole or not at all: a temporary file beside it, then a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex}.tmp")
    try:
        # os.open with 0o666 lets the umask decide the mode, as for any file the user writes.
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(temporary, path)
    except BaseException:
        with suppress(OSError):
            temporary.unlink()
        raise


def save_json_report(runtime: Runtime, base: Path) -> str | None:
    """Write the run's ``--prop-report``; a message saying what went wrong, or None."""
    configured = runtime.settings.report
    if not configured:
        return None
    try:
        path = report_path(configured, base)
        payload = json_report(
            runtime.settings, runtime.stats(), runtime.outcomes, runtime.judge_errors
        )
        write_json_report(path, payload)
    except ValueError as error:
        return str(error)
    except OSError as error:
        return f"--prop-report: cannot write {configured!r}: {error}"
    return None
