"""Pure functions from verdicts to text: the failure section, the summary line, the header."""

from __future__ import annotations

import textwrap
from collections.abc import Iterable
from typing import TYPE_CHECKING

from .parsing import MAX_SCORE

if TYPE_CHECKING:
    from .judge import JudgeStats
    from .runtime import Outcome
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
    verdict = outcome.verdict
    label = "PASSED" if outcome.passed else "FAILED"
    lines = [
        f"{label}: {verdict.claim}",
        f"  {'verdict' if verdict.kind == 'check' else 'score'}: {describe_value(verdict, outcome.threshold)}",
    ]
    if verdict.confidence is not None:
        lines.append(f"  confidence: {verdict.confidence:.2f}")
    if verdict.revised_from is not None:
        lines.append(f"  revised on double check from: {verdict.revised_from}")
    lines.append(f"  model: {verdict.model or 'none'}; {provenance(verdict)}")
    if verdict.key:
        lines.append(f"  key: {verdict.key[:16]}")
    lines.append("  justification:")
    lines.append(_indent(verdict.justification))
    return "\n".join(lines)


def failure_section(outcomes: Iterable[Outcome]) -> str:
    """Every claim of a failed test, failing ones first, each with its justification."""
    ordered = sorted(outcomes, key=lambda outcome: outcome.passed)
    return "\n\n".join(outcome_text(outcome) for outcome in ordered)


def summary_line(stats: JudgeStats, failed: int, errors: int) -> str:
    tokens = stats.prompt_tokens + stats.completion_tokens
    parts = [
        f"{stats.verdicts} verdicts",
        f"{failed} failed",
        f"{errors} judge errors",
        f"{stats.cache_hits} from cache",
        f"{stats.judge_calls} judge calls",
        f"{tokens} tokens",
        f"${stats.cost_usd:.4f}",
        f"{stats.judge_seconds:.1f}s judging",
    ]
    return "propositions: " + ", ".join(parts)


def header_line(settings: Settings, cache_place: str | None) -> str:
    cache = (
        settings.cache
        if settings.cache == "off"
        else f"{settings.cache} ({cache_place or 'no folder'})"
    )
    return f"propositions: model {settings.model}, cache {cache}"
