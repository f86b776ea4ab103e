"""Claims judged together: the ``proposition`` marker and soft claims (after a test body), and
batches (``assert_propositions``), with the checks made where each claim is written.

Kept apart from ``assertions`` so that a run of plain ``assert_proposition`` claims never loads
this.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Generator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from types import FrameType, TracebackType
from typing import TYPE_CHECKING, Any

import pytest

from .assertions import MadeClaim, judge_and_note, make_claim, now_or_awaited, read_claim
from .checks import at_site, plural, problems_listed, quote_claim, short_repr
from .claims.call_site import frame_place
from .claims.expectation import EXPECTATION_NAMES, Expectation, check_threshold
from .claims.options import ClaimOptions, is_proposition_like, unknown_names_error
from .errors import DryRunSkip, JudgeError, PropositionFailed
from .scale import MAX_SCORE, MIN_SCORE
from .session import SOFT_CLAIMS_KEY
from .soft_claims import PendingClaim, SoftClaims

if TYPE_CHECKING:
    from .claims.awaiting import OrAwaitable
    from .runtime import Runtime
    from .verdict import Verdict


@dataclass(frozen=True)
class MarkerClaim:
    """A ``proposition`` marker, checked: its claim, made, against the fixture named ``target``
    (its rule is checked when judged, with the fixture's value)."""

    made: MadeClaim
    target: str


# A test's markers found wrong at collection: the message its setup fails with.
MARKER_PROBLEMS_KEY = pytest.StashKey[str]()
# What a proposition marker takes by name besides the options.
MARKER_NAMES = ("claim", "target", *EXPECTATION_NAMES)


def min_score_marker(node: pytest.Item) -> int | None:
    """The test's ``@pytest.mark.min_score(N)``, checked; a bad one fails the test, naming it."""
    __tracebackhide__ = True
    value, problem = _min_score_mark(node)
    if problem is not None:
        pytest.fail(at_site(node.nodeid) + problem, pytrace=False)
    return value


def _min_score_mark(node: pytest.Item) -> tuple[int | None, str | None]:
    """The test's ``min_score`` mark: its value, or what is wrong with it."""
    marker = node.get_closest_marker("min_score")
    if marker is None:
        return None, None
    where = "@pytest.mark.min_score"
    if len(marker.args) != 1 or marker.kwargs:
        return None, (
            f"{where} takes exactly one argument, the minimum score (a whole number from "
            f"{MIN_SCORE} to {MAX_SCORE}), got args={marker.args!r} kwargs={marker.kwargs!r}"
        )
    try:
        return check_threshold(marker.args[0], where), None
    except ValueError as error:
        return None, str(error)


def marker_claims(item: pytest.Item) -> list[MarkerClaim]:
    """The test's ``proposition`` markers, checked; a bad one fails the test, naming it."""
    __tracebackhide__ = True
    claims, problems = _proposition_marks(item)
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)
    return claims


def check_collected(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Check the markers of collected tests that have some. A test with a bad marker errors at
    its setup with every problem of its markers (``BadMarkers``), and the others run; a good
    proposition marker's target fixture is set up even when the test does not request it."""
    for item in items:
        claims, problems = _proposition_marks(item)
        _, min_score_problem = _min_score_mark(item)
        if min_score_problem is not None:
            problems.append(at_site(item.nodeid) + min_score_problem)
        if problems:
            item.stash[MARKER_PROBLEMS_KEY] = "\n".join(problems)
            if config.pluginmanager.get_plugin(_BAD_MARKERS) is None:
                config.pluginmanager.register(BadMarkers(), _BAD_MARKERS)
            continue
        fixturenames = getattr(item, "fixturenames", None)
        if claims and fixturenames is not None:
            for target in sorted({claim.target for claim in claims}):
                if target not in fixturenames:
                    fixturenames.append(target)


_BAD_MARKERS = "propositions-bad-markers"


class BadMarkers:
    """Fails the setup of each test whose markers were found wrong at collection, before its
    fixtures: that test errors with its markers' problems, the others run. Registered at the
    first bad marker, so a suite without one pays nothing per test."""

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        problems = item.stash.get(MARKER_PROBLEMS_KEY, None)
        if problems is not None:
            pytest.fail(problems, pytrace=False)


# Each marker read once: at collection, and again only for one applied while the test runs.
_MARKS_READ = pytest.StashKey[dict[int, tuple[pytest.Mark, "MarkerClaim | None", list[str]]]]()


def _proposition_marks(item: pytest.Item) -> tuple[list[MarkerClaim], list[str]]:
    """The test's ``proposition`` markers, checked: the good ones, and for each bad one a
    message with all its problems."""
    claims = []
    problems = []
    read = item.stash.setdefault(_MARKS_READ, {})
    for marker in item.iter_markers("proposition"):
        known = read.get(id(marker))
        if known is None or known[0] is not marker:
            known = read[id(marker)] = (marker, *_proposition_mark(marker))
        _, claim, found = known
        if claim is not None:
            claims.append(claim)
        else:
            where = f"{item.nodeid}: @pytest.mark.proposition"
            one = len(found) == 1
            problems.append(at_site(where) + found[0] if one else problems_listed(where, found))
    return claims, problems


def _proposition_mark(marker: pytest.Mark) -> tuple[MarkerClaim | None, list[str]]:
    """One ``proposition`` marker: its claim, or every problem found in it (the marker's own
    arguments here, the claim's in ``read_claim``, each checked once)."""
    problems: list[str] = []
    kwargs = dict(marker.kwargs)
    args = list(marker.args)
    if len(args) > 1:
        problems.append(
            f"takes one positional argument, the claim, got {len(args)}; pass target= and "
            "options by name"
        )
    if args and "claim" in kwargs:
        problems.append("the claim is given twice, positionally and as claim=; give it once")
    claim = args[0] if args else kwargs.get("claim")
    kwargs.pop("claim", None)
    target = kwargs.pop("target", None)
    if not isinstance(target, str) or not target.isidentifier():
        problems.append(
            f"target= must name a fixture (a string such as target='world'), got {target!r}"
        )
    given = {name: kwargs.pop(name) for name in EXPECTATION_NAMES if name in kwargs}
    # The claim renders now (variables, partials, blank text), not after the body.
    made, found = read_claim(
        None,
        claim,
        kwargs,
        None,
        expectation=given,
        takes=MARKER_NAMES,
        up_front=True,
        target_known=False,
    )
    problems += map(str, found)
    if made is not None and made.own_target:
        problems.append(
            "the proposition has its own target(s); a marker judges the fixture named by "
            "target=, so pass a proposition created without a target"
        )
    if problems or made is None:
        return None, problems
    assert isinstance(target, str)
    return MarkerClaim(made, target), problems


def start_soft_claims(item: pytest.Item, runtime: Runtime) -> SoftClaims:
    """A test's soft claims, kept on its item. Those made after the body (a fixture's teardown,
    a thread joined there) are judged at the end of its teardown, by hooks started at the
    session's first ``expect_proposition``: a suite that never uses it pays nothing per test."""
    config = item.config
    if config.pluginmanager.get_plugin(_AT_TEARDOWN) is None:
        config.pluginmanager.register(SoftClaimsAtTeardown(runtime), _AT_TEARDOWN)
    soft = item.stash[SOFT_CLAIMS_KEY] = SoftClaims(item.nodeid)
    return soft


_AT_TEARDOWN = "propositions-soft-claims-at-teardown"


class SoftClaimsAtTeardown:
    """Judges the soft claims still pending once every fixture of a test is torn down (made in a
    fixture's teardown, or by a thread joined there), failing the teardown; drops those of a test
    that skipped (a skip judges nothing)."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        # (An xfailed test is "skipped" too, but its soft claims were judged: it raised.)
        skipped = report.skipped and not hasattr(report, "wasxfail")
        if skipped and report.when != "teardown" and SOFT_CLAIMS_KEY in item.stash:
            item.stash[SOFT_CLAIMS_KEY].take()
        return report

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_teardown(self, item: pytest.Item) -> Generator[None, None, None]:
        # A wrapper: it runs after every fixture's teardown, whichever fixture made the claims
        # and however it reached expect_proposition (the fixture's own finalizer may run first).
        __tracebackhide__ = True
        soft = item.stash.get(SOFT_CLAIMS_KEY, None)
        if soft is None:
            return (yield)
        del item.stash[SOFT_CLAIMS_KEY]
        try:
            result = yield
        except (Exception, pytest.fail.Exception) as error:
            judge_soft_claims_after(self.runtime, item, soft.close(), error)
            raise
        except BaseException:
            soft.close()
            raise
        judge_pending(self.runtime, soft.close())
        return result


def pending_for(item: pytest.Item) -> list[PendingClaim]:
    """Soft claims gathered during the body, then marker claims against their fixtures' values."""
    pending: list[PendingClaim] = []
    if SOFT_CLAIMS_KEY in item.stash:
        pending.extend(item.stash[SOFT_CLAIMS_KEY].take())
    funcargs: dict[str, Any] = getattr(item, "funcargs", {})
    for claim in marker_claims(item):
        if claim.target not in funcargs:
            # (A marker applied while the test ran: one found at collection has its fixture.)
            pytest.fail(
                at_site(f"{item.nodeid}: @pytest.mark.proposition")
                + f"target {claim.target!r} is not a "
                "fixture this test requests; a marker applied while the test runs judges only "
                "a fixture the test requests",
                pytrace=False,
            )
        made = dataclasses.replace(claim.made, target=funcargs[claim.target])
        pending.append(PendingClaim(made, "marker"))
    return pending


def judge_after_body(runtime: Runtime, item: pytest.Item) -> None:
    """The test body returned: judge its soft claims and markers, failing once with every failure."""
    __tracebackhide__ = True
    # Taken from the test's soft claims: their targets and frames go once judged.
    judge_pending(runtime, pending_for(item))


def judge_soft_claims_after(
    runtime: Runtime, item: pytest.Item, pending: list[PendingClaim], error: BaseException
) -> None:
    """The test body (or its teardown) raised: still judge the soft claims made before, as
    pytest reports every failure it can, and add what they came to to the error (their verdicts
    go in the report's "proposition" section). Marker claims are not judged: the body did not
    finish.
    """
    if not pending:
        return
    before = len(runtime.record.outcomes_of(item.nodeid))
    outcome = ""
    try:
        judge_pending(runtime, pending)
    except pytest.skip.Exception as skip:
        outcome = f": not judged ({skip.msg})"
    except Exception as soft:
        outcome = f": {type(soft).__name__}: {soft}"
    judged = runtime.record.outcomes_of(item.nodeid, start=before)
    failed = sum(1 for judged_claim in judged if not judged_claim.passed)
    count = (
        "1 soft claim made before this error was"
        if len(pending) == 1
        else (f"{len(pending)} soft claims made before this error were")
    )
    error.add_note(
        f"{count} judged too, {failed} failed"
        f" (their verdicts are in the 'proposition' section){outcome}"
    )


def soft_claim(
    target: Any,
    claim: Any,
    options: Mapping[str, Any],
    frame: FrameType | None,
    *,
    min_score: Any = None,
    max_score: Any = None,
    holds: Any = True,
) -> PendingClaim:
    """``expect_proposition``'s claim, checked now, so a mistake raises at the line that made it.

    ``frame``: the caller's frame; a failure judged later points at the line that made the claim.
    """
    __tracebackhide__ = True
    origin = "expect_proposition"
    made = make_claim(
        target,
        claim,
        options,
        origin,
        expectation={"min_score": min_score, "max_score": max_score, "holds": holds},
        takes=EXPECTATION_NAMES,
        up_front=True,
    )
    return pending_claim(made, origin, frame)


def pending_claim(made: MadeClaim, origin: str, frame: FrameType | None = None) -> PendingClaim:
    """A made claim to judge later (a claim over runs' runs are simulated when judged)."""
    __tracebackhide__ = True
    where, site = _call_site(frame) if frame is not None else (None, None)
    return PendingClaim(made, origin, where, site)


def _call_site(frame: FrameType) -> tuple[str, TracebackType]:
    """``file:line`` of a frame, and a traceback entry for it, so pytest shows that line."""
    return frame_place(frame), TracebackType(None, frame, frame.f_lasti, frame.f_lineno)


BATCH_ITEM_KEYS = ("claim", *EXPECTATION_NAMES)


def batch_items(claims: Any) -> list[tuple[Any, Expectation]]:
    """``assert_propositions``' claims, each with its expectation: a claim, a
    (claim, min_score) pair, or a dict with "claim" and one of "min_score", "max_score" or
    "holds" (False: the claim must not hold)."""
    __tracebackhide__ = True
    expected = (
        "assert_propositions: claims must be a non-empty list of claims (strings or "
        "Proposition objects), (claim, min_score) pairs or dicts such as "
        '{"claim": ..., "holds": False}'
    )
    if isinstance(claims, Mapping):
        raise TypeError(
            f"{expected}, got a {type(claims).__name__}; its values would be ignored, so it is "
            "refused: write [(claim, min_score), ...], e.g. list(claims.items())"
        )
    if (
        isinstance(claims, str | bytes)
        or is_proposition_like(claims)
        or not isinstance(claims, list | tuple)
        or not claims
    ):
        shown = type(claims).__name__ if claims else repr(claims)
        raise TypeError(f"{expected}, got {shown}")
    items: list[tuple[Any, Expectation]] = []
    for index, item in enumerate(claims):
        if isinstance(item, str) or is_proposition_like(item):
            items.append((item, Expectation()))
        elif (
            isinstance(item, tuple | list)
            and len(item) == 2
            and (isinstance(item[0], str) or is_proposition_like(item[0]))
        ):
            claim, threshold = item
            if threshold is not None:
                text = claim if isinstance(claim, str) else claim.claim
                check_threshold(threshold, f"assert_propositions min_score for {quote_claim(text)}")
            items.append((claim, Expectation(threshold)))
        elif isinstance(item, Mapping) and (
            isinstance(item.get("claim"), str) or is_proposition_like(item.get("claim"))
        ):
            unknown = set(item) - set(BATCH_ITEM_KEYS)
            if unknown:
                error = unknown_names_error(unknown, [("", BATCH_ITEM_KEYS)], what="key")
                raise TypeError(
                    f"assert_propositions: item #{index}: {error} (options go to "
                    "assert_propositions itself)"
                )
            claim = item["claim"]
            text = claim if isinstance(claim, str) else claim.claim
            expectation = Expectation.parse(
                item.get("min_score"),
                item.get("max_score"),
                item.get("holds", True),
                f"assert_propositions item #{index} {quote_claim(text)}",
            )
            items.append((claim, expectation))
        else:
            raise TypeError(
                f"assert_propositions: item #{index} must be a claim (str), a "
                f"(claim, min_score) pair or a dict with a 'claim', got {type(item).__name__} "
                f"{short_repr(item, 80)} (a Proposition object also counts as a claim)"
            )
    return items


class _Result:
    """What became of one pending claim, filled in as it is judged."""

    def __init__(self, claim: PendingClaim) -> None:
        self.claim = claim
        self.verdict: Verdict | None = None
        self.passed = False
        self.error: JudgeError | None = None
        self.skipped: str | None = None
        # A mistake of the call site found while judging (a precondition returning None...).
        self.invalid: Exception | None = None


def judge_pending(runtime: Runtime, pending: list[PendingClaim]) -> list[Verdict]:
    """Judge every pending claim, concurrently, and fail once with all the failures."""
    __tracebackhide__ = True
    if not pending:
        return []
    test_id = runtime.current_test

    def run(item: PendingClaim) -> _Result:
        runtime.current_test = test_id
        result = _Result(item)
        try:
            result.verdict, result.passed, _ = judge_and_note(runtime, item.made, item.where)
        except DryRunSkip as skip:
            result.skipped = str(skip)
        except JudgeError as error:
            result.error = error
        except Exception as error:  # a bad claim must not cancel its siblings' verdicts
            result.invalid = error
        return result

    workers = min(runtime.settings.concurrency, len(pending))
    if workers == 1:
        results = [run(item) for item in pending]
    else:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="prop-judge") as pool:
            results = list(pool.map(run, pending))
    failed = [r for r in results if r.verdict is not None and not r.passed]
    errors = [r for r in results if r.error is not None]
    skipped = [r for r in results if r.skipped is not None]
    invalid = [r for r in results if r.invalid is not None]
    if invalid:
        _raise_invalid(invalid, len(results), len(failed), len(errors))
    if failed and runtime.settings.outcome != "report":
        from .reports.summary import short_failure_text

        first = failed[0]
        assert first.verdict is not None
        summary = "; ".join(
            _named(r.claim)
            + ("" if r.claim.made.expectation.holds else " (expected the claim not to hold)")
            for r in failed
        )
        extra = f" ({len(errors)} more could not be judged)" if errors else ""
        expectation = first.claim.made.expectation
        failure = PropositionFailed(
            f"{len(failed)} of {plural(len(results), 'claim')} checked after the test failed: "
            f"{summary}{extra}",
            first.verdict,
            expectation.threshold,
            holds=expectation.holds,
        )
        failure.short = short_failure_text(
            first.verdict,
            expectation.threshold,
            first.claim.where,
            len(failed) - 1,
            expectation.holds,
        )
        # The traceback shows the line that made the (first) failing claim.
        raise failure.with_traceback(first.claim.site)
    if errors:
        first_error = errors[0].error
        assert first_error is not None
        site = errors[0].claim.site
        if len(errors) > 1:
            raise type(first_error)(
                f"{len(errors)} of {plural(len(results), 'claim')} could not be judged; first: "
                f"{first_error}"
            ).with_traceback(site) from None
        raise first_error.with_traceback(site) from None
    if skipped:
        # Located at the first uncached claim's line, not in the plugin's or pytest's frames.
        reason = (
            f"dry run: {plural(len(skipped), 'claim')} not cached; the first: {skipped[0].skipped}"
        )
        raise pytest.skip.Exception(reason).with_traceback(skipped[0].claim.site) from None
    return [r.verdict for r in results if r.verdict is not None]


def _raise_invalid(invalid: list[_Result], total: int, failed: int, errors: int) -> None:
    """The first call-site mistake among judged-later claims, with what became of the others."""
    __tracebackhide__ = True
    first = invalid[0]
    error = first.invalid
    assert error is not None
    others = []
    if len(invalid) > 1:
        others.append(f"{len(invalid) - 1} more invalid")
    if failed:
        others.append(f"{failed} failed")
    if errors:
        others.append(f"{errors} could not be judged")
    rest = f"; of the other claims: {', '.join(others)}" if others else ""
    message = f"{first.claim.origin} claim {_named(first.claim)}: {error}{rest}"
    try:
        replacement = type(error)(message)
    except Exception:
        raise error.with_traceback(first.claim.site) from None
    raise replacement.with_traceback(first.claim.site) from None


def _named(claim: PendingClaim) -> str:
    """The claim quoted, with the line that made it when known."""
    quoted = quote_claim(claim.made.text)
    return f"{quoted} ({claim.where})" if claim.where else quoted


def assert_batch(
    runtime: Runtime, target: Any, claims: Any, options: Mapping[str, Any]
) -> OrAwaitable[list[Verdict]]:
    """``assert_propositions``: every item checked before any is judged, then judged together
    (in async code, when awaited)."""
    __tracebackhide__ = True
    origin = "assert_propositions"
    shared = ClaimOptions.parse(options, origin)
    pending = []
    for item, expectation in batch_items(claims):
        made = make_claim(
            target, item, {}, origin, expectation=expectation, base=shared, up_front=True
        )
        pending.append(pending_claim(made, origin))
    judged = partial(judge_pending, runtime, pending)
    return now_or_awaited(runtime, judged, origin, plural(len(pending), "claim"))
