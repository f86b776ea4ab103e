"""What a run records: each claim's outcome, the judge errors, what the judge was shown (for the
HTML report), and what xdist workers sent. The reports read it; ``Runtime.record`` holds it.
What it files is redacted of the known secrets (``redaction``): every report shows it as filed.

The other half of a run, what judges (settings, the judge, the cache), is ``Runtime``.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, NamedTuple

from .redaction import any_secret_in, any_secret_known, redact_data, redact_values

if TYPE_CHECKING:
    from .verdict import Verdict


@dataclass(frozen=True)
class Outcome:
    """One evaluated claim of a test, as the reports need it."""

    test_id: str | None
    verdict: Verdict
    threshold: int | None
    passed: bool
    # False: the claim was expected not to hold (a score: to be at most the threshold).
    holds: bool = True
    # Where a claim judged after the test body was made ("test_x.py:12"); None otherwise.
    where: str | None = None
    # A claim over many runs: its figures and each run's verdict (plain JSON data).
    runs: dict[str, Any] | None = None
    # An escalated claim (--prop-escalate-to): the main judge's verdict, which did not decide;
    # ``verdict`` is then the stronger model's, which did.
    escalated_from: Verdict | None = None
    # A claim judged by a call of the reference library's API in a test ("check_proposition",
    # "Proposition.check"...), not asserted by the plugin: ``passed`` says whether it was upheld
    # (a check judged True, a score at least ``threshold``, the run's minimum score), and it
    # fails nothing by itself. None: a claim of the fixtures or markers.
    by_call: str | None = None
    # Judged after its test ended (a call from a thread the test left running): filed under
    # that test, whose own reports were already made; the run's reports count it and say so.
    after_its_test: bool = False
    # A claim by call made inside a library's own code (an installed package, or a module outside
    # the project), not by the test: that module's name. Still the test's to count and report,
    # labelled with it; never named as the cause of the test's own failure. None: the test's code.
    made_by: str | None = None


def stat_names() -> tuple[str, ...]:
    """The counters of `JudgeStats` (its lock aside), as workers send them to the controller."""
    from .judging.judge import JudgeStats

    return JudgeStats.COUNTERS


class FiledJudgeError(NamedTuple):
    """A judge error as the reports show it: the test it came in, its message (redacted), and the
    claim it was about where the code that filed it knew (an HTML card is headed by it)."""

    test_id: str | None
    message: str
    claim: str | None = None


class RunRecord:
    """The outcomes and errors of a run, filed by test, and what xdist workers added to them
    (mutable state, not a value)."""

    def __init__(self) -> None:
        self.outcomes: list[Outcome] = []
        self.judge_errors: list[FiledJudgeError] = []
        # Filled where the tests' reports are logged (an xdist controller gets them from its
        # workers): the tests a report showed with a judge error, and, of those judge errors, how
        # many the test's own code caught (a try/except, a library that logs and carries on).
        # A judge error of ``judge_errors`` that no report showed (one that came after its test
        # ended) still fails the run.
        self.judge_error_tests: set[str] = set()
        self.caught_judge_errors: dict[str, int] = {}
        self.started_at = datetime.now(UTC)
        # Set when an xdist worker crashed: its used verdicts never reached the controller, so
        # the run cannot tell prune what it used.
        self.usage_lost = False
        # With --prop-html: each judge request's messages by cache key (what the judge saw).
        self.contexts: dict[str, list[dict[str, str]]] = {}
        # Keep contexts without --prop-html too (pytest-html writing a report sets it).
        self.keep_contexts = False
        self.merged_keys: set[str] = set()
        # On an xdist controller: the workers' judge counters, summed, and whether any used
        # claims.
        self.merged_stats: dict[str, float] = {}
        self.workers_used = False
        self.merged_store: dict[str, int] = {}
        # The judges' calibrations by identity (calibration.Calibrations, set by the plugin):
        # what the reports show as a judge's measured error; None outside pytest.
        self.calibrations: Callable[[str], Mapping[str, Any] | None] | None = None
        # Outcomes by test id, so per-test lookups (report sections, JUnit) stay cheap on big
        # suites.
        self._by_test: dict[str | None, list[Outcome]] = {}
        # Whether any claim over runs was noted: only then can a passing test have figures to
        # show, and the per-test report hook skips looking when there are none.
        self.over_runs = False
        self._lock = threading.Lock()

    def add(self, outcome: Outcome) -> None:
        outcome = _redacted(outcome)
        with self._lock:
            self._file(outcome)

    def _file(self, outcome: Outcome) -> None:
        self.outcomes.append(outcome)
        self._by_test.setdefault(outcome.test_id, []).append(outcome)
        self.over_runs = self.over_runs or outcome.runs is not None

    def add_error(
        self, test_id: str | None, error: BaseException, claim: str | None = None
    ) -> None:
        filed = FiledJudgeError(
            test_id,
            redact_values(f"{type(error).__name__}: {error}"),
            None if claim is None else redact_values(claim),
        )
        with self._lock:
            self.judge_errors.append(filed)

    def judge_errors_since(self, start: int) -> list[FiledJudgeError]:
        """The judge errors filed from the ``start``-th on, in the order they were filed."""
        with self._lock:
            return self.judge_errors[start:]

    def judge_error_shown(self, test_id: str, caught: int) -> None:
        """A report of ``test_id`` showed a judge error; ``caught``: how many the test caught."""
        with self._lock:
            self.judge_error_tests.add(test_id)
            if caught:
                self.caught_judge_errors[test_id] = (
                    self.caught_judge_errors.get(test_id, 0) + caught
                )

    def judge_errors_unshown(self) -> list[str]:
        """The tests with a judge error that none of their reports showed (one judged after its
        test ended, from a thread left running), sorted; "" for one filed outside a test."""
        with self._lock:
            filed = {error.test_id or "" for error in self.judge_errors}
            return sorted(filed - self.judge_error_tests)

    def remember_context(
        self, key: str, messages: Iterable[Mapping[str, str]], wanted: bool
    ) -> None:
        """Keep what the judge was shown, for an HTML report; nothing when none is written."""
        if key and (wanted or self.keep_contexts):
            shown = [redact_data(dict(message)) for message in messages]
            with self._lock:
                self.contexts[key] = shown

    def outcomes_of(self, test_id: str, start: int = 0) -> list[Outcome]:
        """The outcomes filed under a test, in the order they were noted, from ``start`` on."""
        with self._lock:
            return self._by_test.get(test_id, [])[start:]

    def merge_used_keys(self, keys: Iterable[str]) -> None:
        with self._lock:
            self.merged_keys.update(keys)

    def merge_store_counts(self, counts: Mapping[str, int]) -> None:
        with self._lock:
            for name, value in counts.items():
                self.merged_store[name] = self.merged_store.get(name, 0) + int(value)

    def merge_worker(
        self,
        outcomes: Iterable[Outcome],
        judge_errors: Iterable[FiledJudgeError],
        stats: Mapping[str, float],
        used: bool,
    ) -> None:
        """Take in what an xdist worker judged, so the controller reports the whole run."""
        with self._lock:
            for outcome in outcomes:
                self._file(outcome)
            self.judge_errors.extend(judge_errors)
            for name, value in stats.items():
                self.merged_stats[name] = self.merged_stats.get(name, 0) + value
            self.workers_used = self.workers_used or used

    def merged_stat(self, name: str) -> float:
        with self._lock:
            return self.merged_stats.get(name, 0)


def _redacted(outcome: Outcome) -> Outcome:
    """The outcome as the reports may show it: every field redacted of the known secrets (a
    claim variable, or a recording the judge quoted, may hold a key). Field by field, so a field
    added to ``Outcome`` is redacted with no edit here."""
    from .verdict import Verdict, field_names  # a claim was made: not on an unused plugin's route

    if not any_secret_known() or not any_secret_in(_texts(vars(outcome).values(), Verdict, [])):
        return outcome  # nothing to redact: the outcome as it is, without a copy of a field
    changes: dict[str, Any] = {}
    for name in field_names(Outcome):
        value = getattr(outcome, name)
        if isinstance(value, Verdict):
            shown = _redacted_verdict(value)
        elif isinstance(value, str | dict | list | tuple):
            shown = redact_data(value)
        else:  # a number, a flag, None: nothing to redact
            continue
        if shown is not value and shown != value:
            changes[name] = shown
    return dataclasses.replace(outcome, **changes) if changes else outcome


def _texts(values: Iterable[Any], verdict_type: type, into: list[str]) -> list[str]:
    """Every string of ``values`` (an outcome's attributes): its own, its verdicts' (as
    ``_redacted`` reads them) and those of the plain data of its figures (values, not names, as
    ``redact_data`` reads them), put in ``into``."""
    for value in values:
        if isinstance(value, str):
            into.append(value)
        elif value is None or type(value) in _NUMBERS:
            continue
        elif isinstance(value, verdict_type):
            into.extend([text for text in vars(value).values() if isinstance(text, str)])
        elif isinstance(value, Mapping):
            _texts(value.values(), verdict_type, into)
        elif isinstance(value, list | tuple):
            _texts(value, verdict_type, into)
    return into


_NUMBERS = frozenset({int, float, bool})


def _redacted_verdict(verdict: Verdict) -> Verdict:
    """The verdict with every text field redacted (the claim, what the judge wrote, its raw
    reply), field by field as ``_redacted`` does."""
    from .verdict import field_names

    changes: dict[str, str] = {}
    for name in field_names(type(verdict)):
        value = getattr(verdict, name)
        if isinstance(value, str) and value:
            shown = redact_values(value)
            if shown != value:
                changes[name] = shown
    return verdict.replace(**changes) if changes else verdict
