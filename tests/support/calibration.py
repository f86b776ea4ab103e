"""A judge's calibration record as ``calibrate`` saves it, for tests of the measured error."""

from __future__ import annotations

from typing import Any

from pytest_propositions.judging.prompts import PROMPT_VERSION


def calibration_record(model: str, **changes: Any) -> dict[str, Any]:
    """2 false passes of 88 false claims, 5 false fails of 88; ``changes`` override fields."""
    record = {
        "model": model,
        "identity": model,
        "prompt_version": PROMPT_VERSION,
        "items": 176,
        "balanced_accuracy": 0.9602,
        "false_pass_rate": 0.0227,
        "false_fail_rate": 0.0568,
        "positives": 88,
        "negatives": 88,
        "false_passes": 2,
        "false_fails": 5,
        "min_score": 7,
        "recorded_at": "2026-11-20T10:00:00+00:00",
    }
    record.update(changes)
    return record
