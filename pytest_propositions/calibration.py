"""The calibration record: what ``calibrate`` measured of a judge, kept beside the verdict cache
and found by judge identity; the pytest header's line, ``--prop-min-calibration``'s gate, and
the judge's measured error (rates and their upper bounds) that every report shows.

The command that measures a judge is ``cli/calibrate.py``; this module is imported only when a
record exists or the gate is asked for (session.py looks first).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import CalibrationError
from .judging.judge import Judge
from .judging.prompts import PROMPT_VERSION
from .over_runs.binomial import BOUND_CONFIDENCE, upper_bound
from .redaction import redact_url
from .reports.json_report import write_text_atomically
from .reports.summary import calibration_line
from .runtime import connector
from .store.location import CALIBRATION_FILE

if TYPE_CHECKING:
    from .settings import Settings

#: The file beside the verdict cache (inside its folder) that holds one calibration per judge.


def judge_identity(settings: Settings) -> str:
    """What the cache keys name for this judge (the local model file's checksum for 'local')."""
    return Judge(settings, connect=connector(settings)).identity(settings.model)


def record_key(identity: str, prompt_version: str, reasoning_effort: str | None = None) -> str:
    key = f"{identity} (prompt {prompt_version})"
    return key + (f" (reasoning effort {reasoning_effort})" if reasoning_effort else "")


def read_records(cache_dir: Path) -> dict[str, Any]:
    path = cache_dir / CALIBRATION_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as error:
        raise CalibrationError(f"cannot read the calibration record {path}: {error}") from None
    if not isinstance(data, dict):
        raise CalibrationError(f"the calibration record {path} is not a JSON object")
    return data


def save_record(cache_dir: Path, key: str, record: Mapping[str, Any]) -> Path:
    """Store one judge's calibration (replacing its last one), atomically."""
    records = read_records(cache_dir)
    records[key] = dict(record)
    path = cache_dir / CALIBRATION_FILE
    write_text_atomically(path, json.dumps(records, indent=2, sort_keys=True) + "\n")
    return path


def find_record(settings: Settings, cache_dir: Path | None) -> dict[str, Any] | None:
    """The judge's calibration for the current prompt version, if it has one."""
    if cache_dir is None or not (cache_dir / CALIBRATION_FILE).is_file():
        return None
    key = record_key(judge_identity(settings), PROMPT_VERSION, settings.reasoning_effort)
    record = read_records(cache_dir).get(key)
    return record if isinstance(record, dict) else None


def error_view(record: Mapping[str, Any]) -> dict[str, Any]:
    """A calibration as the reports show it (plain JSON data): the judge's measured false-pass
    and false-fail rates, their counts and upper bounds (None when the record, written before
    the counts were kept, cannot give them: calibrating again does)."""
    view: dict[str, Any] = {
        "model": str(record.get("model", "")),
        "identity": str(record.get("identity", record.get("model", ""))),
        "items": int(record.get("items", 0)),
        "false_pass_rate": float(record.get("false_pass_rate", 0.0)),
        "false_fail_rate": float(record.get("false_fail_rate", 0.0)),
        "false_passes": None,
        "negatives": None,
        "false_pass_upper": None,
        "false_fails": None,
        "positives": None,
        "false_fail_upper": None,
        "confidence": BOUND_CONFIDENCE,
        "balanced_accuracy": float(record.get("balanced_accuracy", 0.0)),
        "min_score": record.get("min_score"),
        "recorded_at": str(record.get("recorded_at", "")),
    }
    for errors, trials, bound in (
        ("false_passes", "negatives", "false_pass_upper"),
        ("false_fails", "positives", "false_fail_upper"),
    ):
        k, n = record.get(errors), record.get(trials)
        if isinstance(k, int) and isinstance(n, int) and 0 <= k <= n:
            view[errors], view[trials] = k, n
            view[bound] = round(upper_bound(k, n), 4) if n else None
    return view


class Calibrations:
    """The calibrations recorded beside the verdict cache, by the judge identity a verdict
    names: the file is read once, at the first question (never when no claim asks), and a
    missing or unreadable record means "not calibrated", never a broken report."""

    def __init__(self, cache_dir: Path | None, reasoning_effort: str | None) -> None:
        self._cache_dir = cache_dir
        self._reasoning_effort = reasoning_effort
        self._records: dict[str, Any] | None = None
        self._views: dict[str, dict[str, Any] | None] = {}
        self._lock = threading.Lock()

    def _read(self) -> dict[str, Any]:
        if self._records is None:
            try:
                self._records = read_records(self._cache_dir) if self._cache_dir else {}
            except CalibrationError:
                self._records = {}
        return self._records

    def __call__(self, identity: str) -> dict[str, Any] | None:
        """The error view of the judge ``identity`` (a verdict's ``model``) for the current
        prompt version and reasoning effort, or None when it was never calibrated."""
        if not identity:
            return None
        with self._lock:
            if identity not in self._views:
                key = record_key(identity, PROMPT_VERSION, self._reasoning_effort)
                record = self._read().get(key)
                try:
                    view = error_view(record) if isinstance(record, dict) else None
                except (TypeError, ValueError):
                    view = None
                self._views[identity] = view
            return self._views[identity]


def describe_record(model: str, record: Mapping[str, Any]) -> str:
    day = str(record.get("recorded_at", ""))[:10] or "unknown date"
    return (
        f"judge {model}: balanced accuracy {float(record['balanced_accuracy']):.2f}, "
        f"false-pass {float(record['false_pass_rate']):.2f} on {int(record['items'])} items, {day}"
    )


def header_line(settings: Settings, cache_dir: Path | None) -> str | None:
    """The pytest header's calibration line (session.py asks only when a record exists or the
    gate is set); None when the record cannot be read."""
    model = settings.model
    try:
        record = find_record(settings, cache_dir)
    except Exception:  # a header must never break a run; the gate reports problems properly
        return None
    if record is None:
        return f"judge {model}: not calibrated for this prompt version"
    return calibration_line(error_view(record), model)


def _api_base_flag(settings: Settings) -> str:
    """The judge's server as ``calibrate`` takes it, shown without credentials: the command
    suggested must judge with the model the run gates, where the run reaches it."""
    if not settings.api_base:
        return ""
    return f" --api-base {redact_url(settings.api_base)}"


def gate_problem(settings: Settings, cache_dir: Path | None) -> str | None:
    """Why ``--prop-min-calibration`` refuses this judge (an unreadable record included), or
    None when it may gate."""
    bar = settings.min_calibration
    if bar is None:
        return None
    model = settings.model
    try:
        record = find_record(settings, cache_dir)
    except CalibrationError as error:
        return str(error)
    if record is None:
        return (
            f"--prop-min-calibration={bar:g}: the judge {model} has no calibration for this "
            f"prompt version in {cache_dir}; run 'python -m pytest_propositions calibrate "
            f"--model {model}{_api_base_flag(settings)}' first"
        )
    accuracy = float(record.get("balanced_accuracy", 0.0))
    if accuracy < bar:
        return (
            f"--prop-min-calibration={bar:g}: the judge {model} is not fit to gate "
            f"({describe_record(model, record)})"
        )
    return None
