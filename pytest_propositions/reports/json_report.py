"""The run's verdicts as plain JSON: ``--prop-report``'s file, and the records xdist workers send
the controller.
"""

from __future__ import annotations

import itertools
import json
import os
import uuid
from collections.abc import Callable, Container, Iterable, Iterator, Mapping
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._version import __version__
from ..record import FiledJudgeError, Outcome, stat_names
from ..store.keys import encoding_with
from .counts import Calibrations, claim_counts, run_calibrations, run_counts
from .view import json_record

if TYPE_CHECKING:
    from ..judging.judge import JudgeStats
    from ..runtime import Runtime
    from ..settings import Settings


def outcome_record(outcome: Outcome) -> dict[str, Any]:
    """An outcome as plain JSON data (execnet and json both carry it): its view's record."""
    return json_record(outcome)


def calibrated_record(outcome: Outcome, calibrations: Calibrations | None) -> dict[str, Any]:
    """An outcome's record, naming (``judge_calibration``) the calibrated judge that decided it."""
    return json_record(outcome, calibrations=calibrations)


def stats_record(stats: JudgeStats) -> dict[str, float]:
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


def in_record_order(
    outcomes: list[Outcome], record: Callable[[Outcome], dict[str, Any]]
) -> list[Outcome]:
    """The outcomes in the order of their records (``record_order``), read from the outcomes
    themselves: a record is made and encoded whole only for outcomes that tie on the rest (the
    same claim made twice in a test), found next to each other once sorted."""
    keyed = sorted(
        ((o.test_id or "", o.verdict.claim, o.verdict.kind), index)
        for index, o in enumerate(outcomes)
    )
    if all(one[0] != other[0] for one, other in itertools.pairwise(keyed)):
        return [outcomes[index] for _, index in keyed]  # no tie (the usual)
    ordered: list[Outcome] = []
    start = 0
    while start < len(keyed):
        end = start + 1
        while end < len(keyed) and keyed[end][0] == keyed[start][0]:
            end += 1
        tied = [outcomes[index] for _, index in keyed[start:end]]
        if len(tied) > 1:  # in the order of their whole records, then as made
            tied.sort(key=lambda outcome: record_order(record(outcome))[3])
        ordered += tied
        start = end
    return ordered


class EncodedLines(list[str]):
    """A list of the report whose items are already written as JSON text, one a line
    (``report_text`` joins them as they are)."""

    __slots__ = ()


def json_report(
    settings: Settings,
    stats: JudgeStats,
    outcomes: Iterable[Outcome],
    judge_errors: Iterable[FiledJudgeError],
    calibrations: Calibrations | None = None,
    caught: Container[str] = (),
    *,
    encoded: bool = False,
) -> dict[str, Any]:
    """Every verdict of the run with its test id, sorted by test id then claim, and the counts.

    Where the judge deciding a claim was calibrated, its record has ``judge_calibration`` (that
    judge's identity, a key of the report's ``calibrations``: measured rates, counts, bounds).

    The summary's claim counts are the terminal's (``RunCounts``); ``verdicts``, ``cache_hits``
    and ``judge_calls`` count judge requests. With an outcome mode each record's ``result`` says
    "passed", "failed" or "inconclusive" (in either mode), or, for a claim judged by a call (its
    record names the call in ``by_call``), "upheld" or "not upheld".

    A judge error of a test in ``caught`` (whose own code caught one) has ``"caught": true``.

    ``encoded``: each verdict's record as its line of the file (``EncodedLines``), each made and
    written before the next, so a report of thousands of claims holds text, not thousands of
    objects for the garbage collector to walk.
    """
    outcomes = list(outcomes)
    calibrated = run_calibrations(outcomes, calibrations)
    # A record names its judge's calibration: none to look up when no deciding judge has one
    # (most runs), else one of the few found here, not a lookup for each of thousands.
    known = None if not calibrated else calibrated.get
    errors = sorted(judge_errors, key=lambda error: (error[0] or "", error[1]))
    counts = run_counts(outcomes, errors, stats)
    mode = settings.outcome

    def record(outcome: Outcome) -> dict[str, Any]:
        return json_record(outcome, mode, known)

    ordered = in_record_order(outcomes, record)
    verdicts: list[Any] = (
        EncodedLines([_compact(record(outcome)) for outcome in ordered])
        if encoded
        else [record(outcome) for outcome in ordered]
    )
    return {
        "plugin_version": __version__,
        "model": settings.model,
        "cache_mode": settings.cache,
        "outcome": mode,
        "summary": {
            **{name: n for name, n in claim_counts(counts).items() if name != "judge_calls"},
            "verdicts": stats.verdicts,
            "cache_hits": stats.cache_hits,
            "judge_calls": stats.judge_calls,
            "prompt_tokens": stats.prompt_tokens,
            "completion_tokens": stats.completion_tokens,
            "cost_usd": round(stats.cost_usd, 6),
            "judge_seconds": round(stats.judge_seconds, 3),
            "dry_run_misses": stats.dry_run_misses,
            **(
                {
                    "dry_run_prompt_tokens": stats.dry_run_prompt_tokens,
                    "dry_run_cost_usd": round(stats.dry_run_cost_usd, 6),
                    "dry_run_unpriced": stats.dry_run_unpriced,
                }
                if settings.dry_run
                else {}
            ),
        },
        "verdicts": verdicts,
        "judge_errors": [
            {
                "test_id": error.test_id,
                "error": error.message,
                **({"claim": error.claim} if error.claim is not None else {}),
                **({"caught": True} if error.test_id in caught else {}),
            }
            for error in errors
        ],
        "calibrations": {judge: dict(view) for judge, view in calibrated.items()},
    }


# A file name each report option's "is a directory" error suggests.
REPORT_NAMES = {"--prop-report": "propositions.json", "--prop-html": "propositions.html"}


def report_path(configured: str, base: Path, option: str = "--prop-report") -> Path:
    """Where a report option writes, relative to ``base``; ValueError if that is a folder."""
    path = base / Path(configured).expanduser()
    if path.is_dir():
        raise ValueError(
            f"{option}: {configured!r} is a directory; give a file name, e.g. "
            f"{str(Path(configured) / REPORT_NAMES[option])!r}"
        )
    return path


def check_report_path(configured: str, base: Path, option: str) -> None:
    """Before any test runs: make the report's folder and create (then remove) a file in it, as
    the report's writer will, so a report that cannot be written stops the run at once rather
    than after all the judging. ValueError says why."""
    path = report_path(configured, base, option)
    folder = path.parent
    existing = next((p for p in (folder, *folder.parents) if p.exists()), None)
    if existing is not None and not existing.is_dir():
        raise ValueError(f"{option}: cannot write {configured!r}: {existing} is not a folder")
    probe = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex}.probe")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        probe.unlink()
    except OSError as error:
        where = f" ({error.filename})" if error.filename else ""
        raise ValueError(
            f"{option}: cannot write {configured!r}: {error.strerror or error}{where}"
        ) from None


def write_json_report(path: Path, payload: Mapping[str, Any]) -> None:
    """Write the report, whole or not at all (``write_text_atomically``), as ``report_text``
    spells it, piece by piece: a report of thousands of claims is not copied whole first."""
    write_text_atomically(path, report_pieces(payload))


def report_text(payload: Mapping[str, Any]) -> str:
    """The report as JSON text: each top-level field on a line of its own, and each item of a
    list (a verdict, a judge error) on a line of its own, so a report of thousands of claims
    reads, greps and diffs a claim at a time. Every line is written by json's C encoder:
    ``indent`` would run its pure-Python one, about three times slower on the same payload."""
    return "".join(report_pieces(payload))


def report_pieces(payload: Mapping[str, Any]) -> Iterator[str]:
    """``report_text`` in the pieces it joins, in order: a few, a list's items joined into one
    (each piece joined into a bigger one was a copy of the megabytes of a big report)."""
    yield "{\n"
    for index, (name, value) in enumerate(payload.items()):
        yield (",\n  " if index else "  ") + _compact(name) + ": "
        if isinstance(value, list) and value:
            yield "[\n    "
            lines = value if isinstance(value, EncodedLines) else [_compact(item) for item in value]
            yield ",\n    ".join(lines)
            yield "\n  ]"
        else:
            yield _compact(value)
    yield "\n}\n"


# One encoder for every line (json.dumps with options makes a new one each call), its C
# encoder made once.
_COMPACT = json.JSONEncoder(ensure_ascii=False)
_compact = encoding_with(_COMPACT)


def write_text_atomically(path: Path, text: str | Iterable[str]) -> None:
    """A report file appears whole or not at all: a temporary file beside it, then a rename.
    ``text``: the text, or its pieces in order."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex}.tmp")
    try:
        # os.open with 0o666 lets the umask decide the mode, as for any file the user writes.
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            if isinstance(text, str):
                handle.write(text)
            else:
                for piece in text:
                    handle.write(piece)
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
            runtime.settings,
            runtime.stats(),
            runtime.record.outcomes,
            runtime.record.judge_errors,
            runtime.record.calibrations,
            runtime.record.caught_judge_errors,
            encoded=True,
        )
        write_json_report(path, payload)
    except ValueError as error:
        return str(error)
    except OSError as error:
        return f"--prop-report: cannot write {configured!r}: {error}"
    return None
