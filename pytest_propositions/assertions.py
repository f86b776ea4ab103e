"""Claims as test assertions: a claim made once where it is given (``make_claim``: its target,
text, options, expectation and rule, every problem at once), judged, compared, and failed with
the verdict; and the fixtures' bodies."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Coroutine, Iterable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, Literal, TypedDict, TypeVar, Unpack

import pytest

from .checks import at_site, check_claim, from_site, problems_listed, quote_claim, warn_at_caller
from .claims.awaiting import OrAwaitable, awaitable, loop_library
from .claims.call_site import call_site_outside_package
from .claims.claim_text import render_claim, unused_variables
from .claims.expectation import EXPECTATION_NAMES, HOLDS, Expectation, check_threshold
from .claims.options import ClaimOptions, is_proposition_like, own_options
from .claims.proposition import awaited_twin, judge, target_list
from .claims.targets import as_target_list
from .errors import ClaimWarning, DryRunSkip, JudgeError, PropositionFailed
from .over_runs.keywords import is_runs
from .runtime import current
from .trace.notation import holds_event_head
from .verdict import KINDS, Kind

if TYPE_CHECKING:
    from .over_runs.result import RunsResult
    from .over_runs.rule import Rule
    from .runtime import Runtime
    from .verdict import Verdict

_T = TypeVar("_T")


@dataclass(frozen=True)
class MadeClaim:
    """A claim as made where the user wrote it, checked once (``read_claim``): what every entry
    point hands down, so nothing below parses or checks it again."""

    target: Any
    text: str
    options: ClaimOptions
    expectation: Expectation = HOLDS
    # A claim over runs' rule, None for an ordinary claim; not yet checked for a marker's claim,
    # whose target (a fixture's value) is known only when it is judged (``with_rule``).
    rule: Rule | None = None
    rule_checked: bool = True
    # The target is a Proposition-shaped claim's own, not the call's.
    own_target: bool = False


Problem = TypeError | ValueError


def read_claim(
    target: Any,
    claim: Any,
    options: Mapping[str, Any],
    where: str | None,
    *,
    expectation: Mapping[str, Any] | Expectation | None = None,
    base: ClaimOptions | None = None,
    takes: Iterable[str] = (),
    up_front: bool = False,
    target_known: bool = True,
    over_runs: Literal["may", "must", "never"] = "may",
    runtime: Runtime | None = None,
    kind: Kind | None = None,
) -> tuple[MadeClaim | None, list[Problem]]:
    """What the user gave (a target, a claim or a Proposition-shaped object, options, an
    expectation: ``min_score``, ``max_score``, ``holds`` as given, or one already made) turned
    once into a ``MadeClaim``, or every problem found, each led by ``where`` when given: one
    mistake does not hide the next.

    ``base``: options the call shares with others (a batch's), under these. ``takes``: the
    call's own keyword names, which an unknown option's message lists.
    ``up_front``: the claim is also rendered now with its variables (unless a precondition may
    skip it) and its target checked, for claims judged later. ``target_known``: False for a
    marker, whose target is a fixture's value known when judged (its rule is checked then).
    ``over_runs``: whether the claim may be one over runs, must be (``check_over_runs``) or
    must not (``proposition_judge``, which judges one target). ``runtime``: whose settings
    (confidence, referee) a claim over runs takes; None: the current run's."""
    __tracebackhide__ = True
    problems: list[Problem] = []
    expected: Expectation | None = HOLDS
    if isinstance(expectation, Expectation):
        expected = expectation
    elif expectation is not None:
        low, high = expectation.get("min_score"), expectation.get("max_score")
        try:
            expected = Expectation.parse(low, high, expectation.get("holds", True), where)
        except (TypeError, ValueError) as error:
            expected = None
            problems.append(error)  # already led by where
    parsed, found = ClaimOptions.read(options, base, takes=takes)
    # A Proposition-shaped claim: its text, its own options under the call's, its own target
    # unless the call gives one.
    chosen, claim, parsed, found_own = own_options(target, claim, parsed)
    own_target, target = chosen is not target, chosen
    if found_own:
        found += found_own
        target_known = False  # its rule and target are checked once its claim is right
    call = TARGET_FIRST.get(where or "")
    # Whether the target was already read as a list of targets (or refused) here.
    target_read = False
    if call is not None and target_known and not own_target:
        target_read = True
        try:
            target_read = _check_target(target, claim, call, where)
        except (TypeError, ValueError) as error:
            found.append(error)
    try:
        if call is not None:
            _check_claim_type(claim, call)
        check_claim(claim)
        variables_bad = "claim_variables" in options and "claim_variables" not in parsed.given_names
        # With a precondition the claim is rendered only if the precondition lets it be judged
        # (a false one needs no variables), so it is checked when it is judged.
        if up_front and parsed.precondition is None and not variables_bad:
            render_claim(claim, parsed.claim_variables)
        if parsed.claim_variables and not variables_bad:
            # A precondition is given the variables too, and may be what uses them.
            own = "claim_variables" in options and parsed.precondition is None
            _check_variables_used(claim, parsed.claim_variables, at_site(where) if own else None)
    except (TypeError, ValueError) as error:
        found.append(error)
    rule: Rule | None = None
    if target_known and over_runs == "must" and not is_runs(target):
        found.append(
            TypeError(f"the target must be runs(simulate, max_runs=N), got {type(target).__name__}")
        )
    elif target_known and over_runs == "never" and (is_runs(target) or parsed.rule_keywords):
        found.append(
            TypeError(
                "judges one target, not a claim over runs; for runs(...) and its keywords, use "
                "assert_proposition or check_over_runs"
            )
        )
    elif target_known and expected is not None:
        try:
            rule = rule_of(target, parsed, expected, None, runtime=runtime, kind=kind)
            if up_front and rule is None and not target_read:
                as_target_list(target)
        except (TypeError, ValueError) as error:
            found.append(error)
    problems += [from_site(error, where) for error in found]
    if problems or expected is None:
        return None, problems
    made = MadeClaim(target, str(claim), parsed, expected, rule, target_known, own_target)
    return made, problems


# The calls that take the target first and the claim second, as their messages spell them.
TARGET_FIRST = {
    "assert_proposition": "assert_proposition(target, claim, ...)",
    "expect_proposition": "expect_proposition(target, claim, ...)",
    "min_score": "min_score(target, claim, threshold)",
    "proposition_judge": "proposition_judge(target, claim, kind=...)",
    "check_over_runs": "check_over_runs(runs(...), claim, ...)",
    "assert_propositions": "assert_propositions(target, [claim, ...])",
}

# A line that opens with a speaker's name and a colon ("Oscar: I like quiet cities."): how a
# conversation is written, not a claim about one.
_SPEAKER_LINE = re.compile(r"(?m)^\s*[A-Z][\w.'-]*(?: [A-Z][\w.'-]*){0,3}:\s+\S")


def _order(call: str) -> str:
    return f"(the call is {call}: the target first, then the claim)"


def _check_claim_type(claim: Any, call: str) -> None:
    """A claim that is no str (nor Proposition-shaped): its error names the arguments' order."""
    __tracebackhide__ = True
    if not isinstance(claim, str) and not is_proposition_like(claim):
        try:
            check_claim(claim)
        except TypeError as error:
            raise TypeError(f"{error} {_order(call)}") from None


def _check_target(target: Any, claim: Any, call: str, where: str | None) -> bool:
    """The target in the order ``call`` takes it: no target, or an object that cannot be one, is
    an error naming the order; two strings that read swapped (a claim-like target, a
    recording-like claim) an error when the claim holds the recording's event lines, else a
    ``ClaimWarning``. True when the target was read as targets (``as_target_list``) here."""
    __tracebackhide__ = True
    order = _order(call)
    if target is None:
        raise ValueError(f"no target: the claim needs something to judge {order}")
    if isinstance(target, str):
        if isinstance(claim, str) and _reads_like_a_claim(target):
            if holds_event_head(claim):
                raise ValueError(
                    f"the target {quote_claim(target)} reads like a claim and the claim like "
                    f"a recording (it holds event lines): are they swapped? {order}"
                )
            if _SPEAKER_LINE.search(claim) and not _SPEAKER_LINE.search(target):
                warn_at_caller(
                    f"{at_site(where)}the target {quote_claim(target)} reads like a claim and "
                    f"the claim {quote_claim(claim)} like a conversation: are they swapped? "
                    f"{order}",
                    ClaimWarning,
                )
        return False
    if is_runs(target) or isinstance(target, list | tuple | Mapping):
        return False  # data (lists, dicts) is read when judged, once
    # An object is checked now (a lookup, no rendering), so a wrong one names the call.
    try:
        as_target_list(target)
    except TypeError as error:
        raise TypeError(f"{error}\n{order}") from None
    return True


def _reads_like_a_claim(text: str) -> bool:
    """One short line with no event in it: what a claim looks like, and no recording does."""
    # The length first: a str target is often a whole recording.
    return len(text) <= 300 and "\n" not in text.strip() and not holds_event_head(text)


def _check_variables_used(claim: str, variables: Mapping[str, Any], site: str | None) -> None:
    """Claim variables the claim never uses: one it writes as ``{name}`` (Python's syntax, not
    mustache's) is a ValueError, since the judge would read the braces as written and the claim
    is not the one meant; other unused ones are a ``ClaimWarning`` at the call (``site``: the
    call gave them; None: a batch shares them, and a claim of it may well use none)."""
    __tracebackhide__ = True
    meant, unused = unused_variables(claim, variables)
    if meant:
        names = ", ".join("{{" + name + "}}" for name in meant)
        raise ValueError(
            f"the claim writes {', '.join('{' + name + '}' for name in meant)} but claim "
            f"variables are mustache tags: write {names}; as it is, the judge would read the "
            f"braces as written. Claim: {quote_claim(claim)}"
        )
    if unused and site is not None:
        listed = ", ".join(unused)
        warn_at_caller(
            f"{site}claim_variables {listed} {'is' if len(unused) == 1 else 'are'} not used "
            f"by the claim (a variable is written {{{{name}}}}), so the claim reaches the judge "
            f"without {'it' if len(unused) == 1 else 'them'}. Claim: {quote_claim(claim)}",
            ClaimWarning,
        )


class HowRead(TypedDict, total=False):
    """``read_claim``'s keywords, as ``make_claim`` passes them on (checked by mypy there too)."""

    expectation: Mapping[str, Any] | Expectation | None
    base: ClaimOptions | None
    takes: Iterable[str]
    up_front: bool
    target_known: bool
    over_runs: Literal["may", "must", "never"]
    runtime: Runtime | None
    kind: Kind | None


def make_claim(
    target: Any, claim: Any, options: Mapping[str, Any], where: str, **how: Unpack[HowRead]
) -> MadeClaim:
    """``read_claim`` at a call site: the made claim, or its problems raised there, together."""
    __tracebackhide__ = True
    made, problems = read_claim(target, claim, options, where, **how)
    if made is None:
        raise all_problems(problems, where) from None
    return made


def all_problems(problems: list[Problem], where: str | None) -> Problem:
    """One error for a claim's problems (each already led by ``where``): the one, or every one
    listed, of the first one's type."""
    if len(problems) == 1:
        return problems[0]
    return type(problems[0])(problems_listed(where or "the claim", problems))


def with_rule(made: MadeClaim, runtime: Runtime) -> MadeClaim:
    """A marker's claim, its target now known: its rule checked, once."""
    __tracebackhide__ = True
    if made.rule_checked:
        return made
    rule = rule_of(made.target, made.options, made.expectation, "claim", runtime=runtime)
    return dataclasses.replace(made, rule=rule, rule_checked=True)


def resolve_threshold(argument: int | None, marker_value: int | None, session_default: int) -> int:
    """The argument, then the test's min_score mark, then --prop-min-score/ini/env, then 7."""
    __tracebackhide__ = True
    if argument is not None:
        return check_threshold(argument, "min_score")
    if marker_value is not None:
        return marker_value
    return session_default


def judge_claim(
    runtime: Runtime,
    target: Any,
    claim: str,
    *,
    kind: str,
    options: ClaimOptions | None = None,
    model: str | None = None,
    run_index: int = 0,
) -> Verdict:
    """Evaluate without asserting, neither confirmed nor escalated: the Verdict, whatever it
    says (``model``: another judge than the run's, a claim over runs' referee; ``run_index``: a
    claim over runs' run number)."""
    __tracebackhide__ = True
    if kind not in KINDS:
        raise ValueError(f"kind must be 'check' or 'score', got {kind!r}")
    options = options or ClaimOptions()
    targets = target_list(target)
    judged = judge(runtime, kind, claim, targets, options, model=model, run_index=run_index)
    return judged.verdict


def rule_of(
    target: Any,
    options: ClaimOptions,
    expectation: Expectation,
    where: str | None,
    *,
    runtime: Runtime | None = None,
    kind: Kind | None = None,
) -> Rule | None:
    """The checked rule of a claim over runs, made once where the claim is made and handed
    down; None for an ordinary claim, which names neither a ``runs(...)`` target nor a runs
    keyword and so never loads the runs machinery (a test holds it: every claim asks). ``runtime``:
    whose settings (confidence, referee) apply; None: the current run's."""
    __tracebackhide__ = True
    if not options.rule_keywords and not is_runs(target):
        return None
    from .over_runs.rule import check_rule

    settings = (runtime or current()).settings if is_runs(target) else None
    return check_rule(target, options.rule_keywords, expectation, settings, where, kind=kind)


def judge_and_note(
    runtime: Runtime, made: MadeClaim, where: str | None = None
) -> tuple[Verdict, bool, Verdict | None]:
    """The made claim judged and noted: its standing verdict, whether it passed, and the main
    judge's verdict when the claim was escalated (None otherwise). A marker's claim, whose
    target is known only now, has its rule checked here."""
    __tracebackhide__ = True
    made = with_rule(made, runtime)
    target, claim, expectation, options = made.target, made.text, made.expectation, made.options
    if made.rule is not None:
        # Claims over runs are never escalated: a referee (--prop-referee-model) checks them.
        rule = made.rule
        noted = _judge_runs_and_note(runtime, target, claim, expectation, rule, options, where)
        return (*noted, None)
    try:
        targets = target_list(target)
        judged = judge(
            runtime, expectation.kind, claim, targets, options, expectation, assertion=True
        )
    except JudgeError as error:
        runtime.note_error(error, claim=claim)
        raise
    ok = expectation.passes(judged.verdict)
    runtime.note(judged.verdict, expectation, ok, where, escalated_from=judged.escalated_from)
    return judged.verdict, ok, judged.escalated_from


def _judge_runs_and_note(
    runtime: Runtime,
    target: Any,
    claim: str,
    expectation: Expectation,
    rule: Rule,
    options: ClaimOptions,
    where: str | None = None,
) -> tuple[Verdict, bool]:
    """A claim over many runs: decided by its rule, noted once with every run's verdict."""
    __tracebackhide__ = True
    from .over_runs.result import summary_verdict

    try:
        result = _decide_over_runs(runtime, target, claim, rule, options)
    except JudgeError as error:
        runtime.note_error(error, claim=claim)
        raise
    verdict = summary_verdict(result)
    runtime.note(verdict, expectation, result.passed, where, runs=result.as_dict())
    return verdict, result.passed


def assert_claim(
    runtime: Runtime,
    target: Any,
    claim: str,
    expectation: Expectation = HOLDS,
    options: ClaimOptions | None = None,
    *,
    compare_scores: bool = False,
) -> Verdict:
    """Judge the claim and raise PropositionFailed unless it meets its expectation.

    A ``runs(...)`` target is a claim over many runs (``compare_scores``: ``better_than``
    compares mean scores); its rule is checked here, before any simulation.
    """
    __tracebackhide__ = True
    options = options or ClaimOptions()
    kind: Literal["score"] | None = "score" if compare_scores else None
    rule = rule_of(target, options, expectation, "claim", runtime=runtime, kind=kind)
    return assert_made(runtime, MadeClaim(target, claim, options, expectation, rule))


def assert_made(runtime: Runtime, made: MadeClaim) -> Verdict:
    """Judge a made claim and raise PropositionFailed unless it meets its expectation."""
    __tracebackhide__ = True
    expectation = made.expectation
    try:
        verdict, ok, main = judge_and_note(runtime, made)
    except DryRunSkip as skip:
        pytest.skip(f"dry run: {skip}; the test stops here, so any claim after it is not counted")
    except JudgeError as error:
        # The report should point at the user's line; the plugin's own frames add only noise.
        raise error.with_traceback(None) from None
    if not ok and runtime.settings.outcome != "report":
        # A claim over runs says its decision and figures (the summary verdict's justification).
        message = (
            verdict.justification
            if made.rule is not None
            else expectation.failure_message(verdict, main)
        )
        raise PropositionFailed(message, verdict, expectation.threshold, holds=expectation.holds)
    # --prop-outcome=report: the outcome is noted, and the summary lists it with its reasons.
    return verdict


# check_over_runs' own keyword names besides the options.
_OVER_RUNS_NAMES = ("min_score", "compare_scores", "runtime")


def check_over_runs(
    target: Any,
    claim: Any,
    *,
    min_score: int | None = None,
    compare_scores: bool = False,
    runtime: Runtime | None = None,
    **options: Any,
) -> RunsResult:
    """Decide a claim over many runs outside an assertion: a ``RunsResult`` with the figures
    (``passed``, ``decision``, ``estimate``, ``lower``, ``upper``, ``runs``); it does not raise
    on a failed or inconclusive claim.

    ``min_score=s`` alone asks for a mean score of at least s; with ``at_least=`` and the
    like, a run holds when it scores at least s. ``compare_scores=True`` makes
    ``better_than=`` compare mean scores instead of rates.
    """
    __tracebackhide__ = True
    run = runtime or current()
    made = make_claim(
        target,
        claim,
        options,
        "check_over_runs",
        expectation={"min_score": min_score},
        takes=_OVER_RUNS_NAMES,
        up_front=True,
        over_runs="must",
        runtime=run,
        kind="score" if compare_scores else None,
    )
    assert made.rule is not None
    return _decide_over_runs(run, made.target, made.text, made.rule, made.options)


def acheck_over_runs(
    target: Any,
    claim: Any,
    *,
    min_score: int | None = None,
    compare_scores: bool = False,
    runtime: Runtime | None = None,
    **options: Any,
) -> Coroutine[Any, Any, RunsResult]:
    """``check_over_runs``, awaited: the runs are simulated and judged in a worker thread while
    the event loop goes on."""
    call = partial(
        check_over_runs,
        target,
        claim,
        min_score=min_score,
        compare_scores=compare_scores,
        runtime=runtime,
        **options,
    )
    return awaited_twin(call, "acheck_over_runs", claim)


def _decide_over_runs(
    runtime: Runtime, target: Any, claim: str, rule: Rule, options: ClaimOptions
) -> RunsResult:
    """Simulate and judge the runs until the claim's (checked) rule decides; the result. Each
    run is judged as an ordinary claim with the claim's own options (``judge_claim``)."""
    __tracebackhide__ = True
    from .over_runs.scheduler import judge_over_runs

    def judge_run(run: int, run_target: Any, model: str | None) -> Verdict:
        return judge_claim(
            runtime,
            run_target,
            claim,
            kind=rule.kind,
            options=options,
            model=model,
            run_index=run,
        )

    return judge_over_runs(runtime, target, claim, rule, options.given(), judge_run)


# -- the fixtures' bodies (plugin.py holds only the fixtures themselves) ---------------------------


def now_or_awaited(
    runtime: Runtime, work: Callable[[], _T], where: str, what: str | Callable[[], str]
) -> OrAwaitable[_T]:
    """A claim fixture's ``work`` done now; in async code (this thread runs an event loop, in a
    test) a coroutine doing it in a worker thread when awaited, which the test checks is awaited.
    ``where``: the fixture, ``what``: its claims, as that check names them (or what makes that
    text: a claim's quote is made only for a claim awaited, not for each claim judged now)."""
    __tracebackhide__ = True
    if runtime.current_test is None or runtime.on_awaitable is None or loop_library() is None:
        return work()
    site = call_site_outside_package(runtime.project_folders)
    place = None if site is None else site.place
    named = what if isinstance(what, str) else what()
    return awaitable(work, f"{where}({named})", place, runtime, where)


def assert_one(
    runtime: Runtime,
    target: Any,
    claim: Any,
    options: Mapping[str, Any],
    *,
    min_score: Any = None,
    max_score: Any = None,
    holds: Any = True,
) -> OrAwaitable[Verdict]:
    """``assert_proposition(target, claim, ...)``: the claim, made, asserted (in async code,
    when awaited)."""
    __tracebackhide__ = True
    expectation = {"min_score": min_score, "max_score": max_score, "holds": holds}
    where = "assert_proposition"
    made = make_claim(
        target,
        claim,
        options,
        where,
        expectation=expectation,
        takes=EXPECTATION_NAMES,
        runtime=runtime,
    )
    return now_or_awaited(
        runtime, partial(assert_made, runtime, made), where, partial(quote_claim, made.text)
    )


def assert_min_score(
    runtime: Runtime,
    target: Any,
    claim: Any,
    threshold: int | None,
    marker_value: int | None,
    options: Mapping[str, Any],
) -> OrAwaitable[Verdict]:
    """``min_score(target, claim, threshold)``: the bar from the argument, the mark, the option;
    with ``better_than=`` over runs, mean scores compared and no bar."""
    __tracebackhide__ = True
    where = "min_score"
    compares = "better_than" in options
    if compares and threshold is not None:
        # Over runs: mean scores compared with the control's; no bar is involved.
        raise TypeError(
            f"{at_site(where)}better_than= compares mean scores; give no threshold with it"
        )
    bar = (
        None if compares else resolve_threshold(threshold, marker_value, runtime.settings.min_score)
    )
    made = make_claim(
        target,
        claim,
        options,
        where,
        expectation={"min_score": bar},
        takes=["threshold"],
        runtime=runtime,
        kind="score" if compares else None,
    )
    return now_or_awaited(
        runtime, partial(assert_made, runtime, made), where, partial(quote_claim, made.text)
    )


def judge_without_asserting(
    runtime: Runtime, target: Any, claim: Any, kind: str, options: Mapping[str, Any]
) -> Verdict:
    """``proposition_judge``: the verdict, noted for the reports, never asserted."""
    __tracebackhide__ = True
    made = make_claim(
        target, claim, options, "proposition_judge", takes=["kind"], over_runs="never"
    )
    try:
        verdict = judge_claim(runtime, made.target, made.text, kind=kind, options=made.options)
    except JudgeError as error:
        runtime.note_error(error, claim=made.text)
        raise error.with_traceback(None) from None
    runtime.note(verdict, HOLDS, True)
    return verdict


__all__ = [
    "MadeClaim",
    "acheck_over_runs",
    "assert_claim",
    "assert_made",
    "assert_min_score",
    "assert_one",
    "check_over_runs",
    "judge_and_note",
    "judge_claim",
    "judge_without_asserting",
    "make_claim",
    "read_claim",
    "rule_of",
]
