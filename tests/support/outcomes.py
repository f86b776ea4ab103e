"""Reading pytest's last line when it holds the plugin's own outcomes, which pytester's
``assert_outcomes`` does not know ("1 judge error", "2 not upheld")."""

from __future__ import annotations

import re

import pytest

_NAMES = {
    "judge error": "judge_errors",
    "judge errors": "judge_errors",
    "not upheld": "not_upheld",
    "error": "errors",
    "errors": "errors",
}
_COUNTED = (
    "passed",
    "failed",
    "skipped",
    "xfailed",
    "xpassed",
    "errors",
    "judge_errors",
    "not_upheld",
)


def outcome_counts(result: pytest.RunResult) -> dict[str, int]:
    """The counts of pytest's last line (``=== 1 failed, 2 passed, 1 judge error in 0.1s ===``)."""
    for line in reversed(result.outlines):
        if re.search(r" in [0-9.]+s\b", line) and re.search(r"\d+ \w", line):
            counts = dict.fromkeys(_COUNTED, 0)
            body = re.sub(r" in [0-9.]+s\b.*$", "", line)
            for number, noun in re.findall(r"(\d+) (judge errors?|not upheld|[a-z]+)", body):
                name = _NAMES.get(noun, noun)
                # Warnings vary with what earlier tests of the same process imported.
                if name in counts:
                    counts[name] = int(number)
            return counts
    raise AssertionError(f"no summary line in:\n{result.stdout.str()}")


def assert_counts(result: pytest.RunResult, **expected: int) -> None:
    """Like ``assert_outcomes``: every count not given is expected to be zero."""
    counts = outcome_counts(result)
    wanted = {name: expected.get(name, 0) for name in _COUNTED}
    unknown = set(expected) - set(_COUNTED)
    assert not unknown, f"unknown outcome names {unknown}"
    assert {name: counts[name] for name in _COUNTED} == wanted, result.outlines[-1]
