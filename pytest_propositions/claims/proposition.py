"""The evaluator core: a claim about targets, checked as True/False or scored from 0 to 9.

``Proposition`` is the reference library's object; ``judge`` is what every claim's judging comes
down to: the precondition, the claim's text, the judge's request, asked as the claim's
``Asking`` says. A precondition turns a claim P into "precondition implies P": when the
precondition is false the claim holds trivially and no judge is asked.
"""

from __future__ import annotations

import enum
import functools
import inspect
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

from .. import runtime as runtime_module
from ..checks import check_claim, check_flag, check_precondition_result, check_text, quote_claim
from ..errors import JudgeError
from ..judging.prompts import NO_ADDITIONAL_CONTEXT, RECOMMENDATIONS_PROMPT, Message, build_messages
from ..judging.request import JudgeRequest
from ..scale import MAX_SCORE, MIN_SCORE
from ..verdict import CHECK, Kind, Verdict
from .asking import Asking
from .awaiting import awaitable
from .call_site import AWAITED_FROM, call_site_outside_package
from .claim_text import render_claim
from .expectation import HOLDS, Expectation
from .judge_chat import JudgeChat
from .options import (
    REFERENCE_OPTIONS,
    ClaimOptions,
    by_option_name,
    refuse_unknown_names,
    with_own_options,
)
from .targets import RenderOptions, as_target_list, render_context

if TYPE_CHECKING:
    from ..runtime import Runtime

__all__ = [
    "MAX_SCORE",
    "MIN_SCORE",
    "JudgeChat",
    "Judged",
    "Proposition",
    "acheck_proposition",
    "acompute_score",
    "awaited_twin",
    "check_proposition",
    "compute_score",
    "judge",
    "render_claim",
]

Precondition = Callable[..., Any]
_P = ParamSpec("_P")
_R = TypeVar("_R")

# The same few options come back claim after claim, and a frozen RenderOptions can be shared.
_render_options = functools.lru_cache(maxsize=64)(RenderOptions)

PRECONDITION_FALSE_JUSTIFICATION = (
    "Not judged: the precondition was false, so the claim holds trivially."
)


# -- judging a claim ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Judged:
    """What judging a claim came to: the standing verdict, the main judge's when the claim was
    escalated, and the conversation behind the last answer (None when no judge was asked)."""

    verdict: Verdict
    escalated_from: Verdict | None = None
    chat: JudgeChat | None = None


def target_list(target: Any) -> list[Any]:
    """The targets a claim is judged against; a claim must have one."""
    __tracebackhide__ = True
    if target is None:
        raise ValueError(
            "no target: give one when creating the proposition or when calling check()/score()"
        )
    return as_target_list(target)


def judge(
    runtime: Runtime | None,
    kind: Kind,
    claim: str,
    targets: list[Any],
    options: ClaimOptions,
    expectation: Expectation = HOLDS,
    *,
    model: str | None = None,
    first_sample: int = 0,
    assertion: bool = False,
    run_index: int = 0,
) -> Judged:
    """Judge ``claim`` (checked text) about ``targets`` with its checked ``options``: the
    precondition first (False: the claim holds trivially, neither rendered nor judged), then
    one request, asked as the claim's ``Asking`` says (``model``, ``first_sample`` and
    ``assertion``: see ``Asking.of``); ``expectation`` decides ties and doubt.

    ``runtime``: None, the current one, built only when a judge is asked. ``run_index``: a
    claim over runs' run number, a key of its own for each run's verdict."""
    __tracebackhide__ = True
    context_text = options.additional_context
    variables = options.claim_variables or {}
    if options.precondition is not None and not _precondition_holds(
        options.precondition, targets, context_text, variables
    ):
        return Judged(_trivially_true(kind, claim))
    rendered_claim = render_claim(claim, variables)
    run = runtime or runtime_module.current()
    asking = Asking.of(
        options, run.settings, model=model, first_sample=first_sample, assertion=assertion
    )
    render = _render_options(
        options.first_n,
        options.last_n,
        options.include_personas,
        options.timestamps or run.settings.timestamps,
    )
    context = check_text(render_context(targets, render), "the target's text")
    messages = build_messages(
        kind, rendered_claim, context, context_text, strict_score=options.strict_score
    )
    asked: list[tuple[str, Verdict]] = []

    def ask(model: str, sample_index: int) -> Verdict:
        verdict = run.judge.evaluate(
            JudgeRequest(
                kind=kind,
                claim=rendered_claim,
                model=model,
                messages=tuple(messages),
                double_check=asking.double_check,
                sample_index=sample_index,
                test_id=run.current_test,
                run_index=run_index,
            )
        )
        run.remember_context(verdict.key, messages)
        asked.append((model, verdict))
        return verdict

    verdict, escalated_from = asking.follow(ask, expectation)
    model, answer = asked[-1]
    return Judged(verdict, escalated_from, JudgeChat(messages, answer, model, run))


def _precondition_holds(
    precondition: Precondition | None,
    targets: list[Any],
    additional_context: str | None,
    claim_variables: Mapping[str, Any],
) -> bool:
    __tracebackhide__ = True
    if precondition is None:
        return True
    result = precondition(
        target=targets,
        additional_context=additional_context
        if additional_context is not None
        else NO_ADDITIONAL_CONTEXT,
        claim_variables=dict(claim_variables),
    )
    return check_precondition_result(precondition, result)


def _trivially_true(kind: Kind, claim: str) -> Verdict:
    return Verdict(
        kind=kind,
        claim=claim,
        value=True if kind == CHECK else MAX_SCORE,
        justification=PRECONDITION_FALSE_JUSTIFICATION,
        reasoning=PRECONDITION_FALSE_JUSTIFICATION,
        confidence=1.0,
        precondition_skipped=True,
    )


# -- the reference library's object ------------------------------------------------------------


class _Unset(enum.Enum):
    """An option the caller did not pass: the Proposition-shaped claim's own value, else the default."""

    UNSET = "unset"

    def __repr__(self) -> str:
        return "<unset>"


UNSET = _Unset.UNSET


def _option(reference_name: str) -> Any:
    """A reference attribute of ``Proposition`` (``REFERENCE_OPTIONS``), read from and written
    to its checked options."""
    name = REFERENCE_OPTIONS[reference_name]

    def get(self: Proposition) -> Any:
        return getattr(self._options, name)

    def set_(self: Proposition, value: Any) -> None:
        __tracebackhide__ = True
        self._options = ClaimOptions.parse({name: value}, None, base=self._options)

    return property(get, set_)


class Proposition:
    """A natural-language claim about one or more targets, judged by an LLM.

    The constructor, ``check``, ``score`` and ``__call__`` take the reference library's
    arguments in its positional order; options of this plugin only (``timestamps``) are
    keyword-only. After an evaluation the object holds what the reference's does: ``value``,
    ``justification``, ``confidence``, ``reasoning``, ``full_evaluation_response``, ``llm_chat``
    (the conversation with the judge, for follow-ups; None before an evaluation and after one
    skipped by its precondition) and ``recommendations`` (set by
    ``recommendations_for_improvement()``); ``verdict`` is the full ``Verdict``.
    """

    MIN_SCORE = MIN_SCORE
    MAX_SCORE = MAX_SCORE

    # The reference library's option attributes; a value set is checked as the constructor's.
    include_personas = _option("include_personas")
    first_n = _option("first_n")
    last_n = _option("last_n")
    double_check = _option("double_check")
    use_reasoning_model = _option("use_reasoning_model")
    precondition_function = _option("precondition_function")
    timestamps = _option("timestamps")

    def __init__(
        self,
        claim: str | Any,
        target: Any = None,
        include_personas: bool | _Unset = UNSET,
        first_n: int | _Unset | None = UNSET,
        last_n: int | _Unset | None = UNSET,
        double_check: bool | _Unset = UNSET,
        use_reasoning_model: bool | _Unset = UNSET,
        precondition_function: Precondition | _Unset | None = UNSET,
        *,
        timestamps: str | _Unset | None = UNSET,
    ) -> None:
        """``claim`` is a str, or a Proposition-shaped object (this class, the reference
        library's, or any object with ``claim`` and its options): its options apply unless
        passed here, and its targets unless it has none."""
        __tracebackhide__ = True
        given = {
            "include_personas": include_personas,
            "first_n": first_n,
            "last_n": last_n,
            "double_check": double_check,
            "use_reasoning_model": use_reasoning_model,
            "precondition_function": precondition_function,
            "timestamps": timestamps,
        }
        options = ClaimOptions.parse(
            by_option_name({name: value for name, value in given.items() if value is not UNSET}),
            None,
        )
        target, claim, self._options = with_own_options(target, claim, options, None)
        self.claim = check_claim(claim)
        self.targets = None if target is None else as_target_list(target)
        self._reset()

    def _reset(self) -> None:
        self.value: bool | int | None = None
        self.justification: str | None = None
        self.confidence: float | None = None
        self.reasoning: str | None = None
        self.full_evaluation_response: dict[str, Any] | None = None
        self.verdict: Verdict | None = None
        # The conversation behind the last evaluation (None when no judge was asked).
        self.llm_chat: JudgeChat | None = None
        self.recommendations: str | None = None

    def copy(self) -> Proposition:
        """The same configuration, with no evaluation state."""
        return Proposition(self)

    __copy__ = copy

    def __repr__(self) -> str:
        return f"Proposition({quote_claim(self.claim)}, value={self.value!r})"

    # -- evaluation ----------------------------------------------------------------------------

    def __call__(
        self,
        target: Any = None,
        additional_context: str | None = None,
        claim_variables: Mapping[str, Any] | None = None,
        return_full_response: bool = False,
    ) -> Any:
        """The same as ``check``."""
        __tracebackhide__ = True
        return self.check(target, additional_context, claim_variables, return_full_response)

    def check(
        self,
        target: Any = None,
        additional_context: str | None = None,
        claim_variables: Mapping[str, Any] | None = None,
        return_full_response: bool = False,
    ) -> Any:
        """True or False: does the claim hold for the target(s)? With
        ``return_full_response=True``, the dict of value, justification, confidence, reasoning."""
        __tracebackhide__ = True
        call = (target, additional_context, claim_variables)
        return self._answer("check", *call, return_full_response, "Proposition.check")

    def score(
        self,
        target: Any = None,
        additional_context: str | None = None,
        claim_variables: Mapping[str, Any] | None = None,
        return_full_response: bool = False,
    ) -> Any:
        """How true the claim is, from MIN_SCORE to MAX_SCORE."""
        __tracebackhide__ = True
        call = (target, additional_context, claim_variables)
        return self._answer("score", *call, return_full_response, "Proposition.score")

    def _answer(
        self,
        kind: Kind,
        target: Any,
        additional_context: str | None,
        claim_variables: Mapping[str, Any] | None,
        return_full_response: bool,
        noted_as: str,
    ) -> Any:
        """The value, or with ``return_full_response=True`` the reference's full response."""
        __tracebackhide__ = True
        full = check_flag(return_full_response, "return_full_response")
        verdict = self.evaluate(
            kind, target, additional_context, claim_variables, noted_as=noted_as
        )
        return verdict.as_response() if full else verdict.value

    def evaluate(
        self,
        kind: Kind,
        target: Any = None,
        additional_context: str | None = None,
        claim_variables: Mapping[str, Any] | None = None,
        *,
        samples: int = 1,
        sample_index: int = 0,
        runtime: Runtime | None = None,
        model: str | None = None,
        noted_as: str | None = "Proposition.evaluate",
        holds: bool = True,
        run_index: int = 0,
    ) -> Verdict:
        """Judge the claim and keep the result on this object; returns the full Verdict.
        ``model``: another judge than the run's. ``run_index``: a claim over runs' run number, a
        key of its own for each run's verdict.

        With ``samples`` > 1 the judge is asked that many times (each answer cached by its
        index, starting at ``sample_index``) and the majority (checks) or the median (scores)
        stands; a tie goes against what the caller expects (``holds=False``: a claim that must
        not hold, or a score that must stay at most a bar). A precondition that returns False
        makes the claim hold trivially: it is then neither rendered (so it needs no claim
        variables) nor judged.

        While a test runs, the verdict (or the judge's error) is filed in the run's reports
        under the call ``noted_as`` names, as a claim that fails nothing by itself; None: the
        caller files it.
        """
        __tracebackhide__ = True
        # The call's own options, checked here as the constructor's were.
        call = {"additional_context": additional_context, "claim_variables": claim_variables}
        options = ClaimOptions.parse({**call, "samples": samples}, None, base=self._options)
        targets = self._determine_targets(target)
        # Filed under the test running when the call began: a thread's call may end after it.
        noted = None if noted_as is None else runtime or runtime_module.active()
        made_in = noted.current_test if noted is not None else None
        self._reset()
        try:
            judged = judge(
                runtime,
                kind,
                self.claim,
                targets,
                options,
                Expectation(holds=holds),
                model=model,
                first_sample=sample_index,
                run_index=run_index,
            )
        except JudgeError as error:
            if noted is not None and made_in is not None:
                noted.note_error(error, made_in=made_in, claim=self.claim)
            raise
        verdict = judged.verdict
        self.verdict = verdict
        self.value = verdict.value
        self.justification = verdict.justification
        self.confidence = verdict.confidence
        self.reasoning = verdict.reasoning
        self.full_evaluation_response = verdict.as_response()
        self.llm_chat = judged.chat
        if noted is not None and made_in is not None:
            site = call_site_outside_package(noted.project_folders)
            noted.note_call(
                verdict,
                str(noted_as),
                None if site is None else site.place,
                made_in=made_in,
                made_by=None if site is None else site.library,
            )
        return verdict

    # -- awaited twins, for async code (an agent SDK's run, an async test) ---------------------

    def acheck(
        self,
        target: Any = None,
        additional_context: str | None = None,
        claim_variables: Mapping[str, Any] | None = None,
        return_full_response: bool = False,
    ) -> Coroutine[Any, Any, Any]:
        """``check``, awaited: the judge works in a worker thread while the event loop goes on."""
        call = (target, additional_context, claim_variables, return_full_response)
        return awaited_twin(functools.partial(self.check, *call), "Proposition.acheck", self.claim)

    def ascore(
        self,
        target: Any = None,
        additional_context: str | None = None,
        claim_variables: Mapping[str, Any] | None = None,
        return_full_response: bool = False,
    ) -> Coroutine[Any, Any, Any]:
        """``score``, awaited: the judge works in a worker thread while the event loop goes on."""
        call = (target, additional_context, claim_variables, return_full_response)
        return awaited_twin(functools.partial(self.score, *call), "Proposition.ascore", self.claim)

    def aevaluate(
        self, kind: Kind, target: Any = None, *args: Any, **keywords: Any
    ) -> Coroutine[Any, Any, Verdict]:
        """``evaluate`` (the same arguments), awaited: the judge works in a worker thread while
        the event loop goes on."""
        call = functools.partial(self.evaluate, kind, target, *args, **keywords)
        return awaited_twin(call, "Proposition.aevaluate", self.claim)

    def arecommendations_for_improvement(self) -> Coroutine[Any, Any, str]:
        """``recommendations_for_improvement``, awaited: asked in a worker thread while the event
        loop goes on."""
        ask = self.recommendations_for_improvement
        return awaited_twin(ask, "Proposition.arecommendations_for_improvement", self.claim)

    # -- follow-up -----------------------------------------------------------------------------

    def recommendations_for_improvement(self) -> str:
        """Ask the judge, on the preserved chat, how the simulation could better satisfy the
        claim; the answer is also kept in ``recommendations``."""
        __tracebackhide__ = True
        if self.llm_chat is None:
            raise ValueError(
                "nothing to recommend yet: evaluate the proposition with check() or score() first "
                "(an evaluation skipped by its precondition has no judge chat to follow up on)"
            )
        chat = self.llm_chat
        question: Message = {"role": "user", "content": RECOMMENDATIONS_PROMPT}
        # Asked on a copy of the conversation: llm_chat keeps the evaluation as it was.
        self.recommendations = chat._runtime.judge.follow_up(chat.model, [*chat.messages, question])
        return self.recommendations

    # -- targets -------------------------------------------------------------------------------

    def _determine_targets(self, target: Any) -> list[Any]:
        """A target given at construction is fixed; otherwise the call must give one."""
        __tracebackhide__ = True
        if self.targets is not None:
            if target is not None:
                raise ValueError(
                    "this proposition already has a target (given when it was created); call it "
                    "without one, or create the proposition without a target"
                )
            return self.targets
        return target_list(target)


def awaited_twin(call: Callable[[], _R], name: str, claim: Any) -> Coroutine[Any, Any, _R]:
    """A call of the Python API as its awaited twin ``name``: made in a worker thread when awaited
    (claims/awaiting.py), and noted as made at the twin's caller's line; in a test, never
    awaiting it fails the test."""
    noted = runtime_module.active()
    site = call_site_outside_package(noted.project_folders if noted is not None else ())

    def work() -> _R:
        __tracebackhide__ = True
        AWAITED_FROM.set(site)  # in the worker's own copy of the caller's context
        return call()

    text = getattr(claim, "claim", claim)
    shown = quote_claim(text) if isinstance(text, str) else type(claim).__name__
    place = None if site is None else site.place
    return awaitable(work, f"{name}({shown})", place, noted, name)


def _in_one_call(
    kind: Kind,
    target: Any,
    claim: str | Any,
    additional_context: str | None = None,
    first_n: int | _Unset | None = UNSET,
    last_n: int | _Unset | None = UNSET,
    return_full_response: bool = False,
    *,
    claim_variables: Mapping[str, Any] | None = None,
    include_personas: bool | _Unset = UNSET,
    double_check: bool | _Unset = UNSET,
    use_reasoning_model: bool | _Unset = UNSET,
    precondition_function: Precondition | _Unset | None = UNSET,
    timestamps: str | _Unset | None = UNSET,
) -> Any:
    """``check_proposition`` and ``compute_score``: one signature and one body, the kind apart."""
    __tracebackhide__ = True
    check_flag(return_full_response, "return_full_response")
    options = (include_personas, first_n, last_n, double_check, use_reasoning_model)
    proposition = Proposition(claim, target, *options, precondition_function, timestamps=timestamps)
    call = (None, additional_context, claim_variables, return_full_response)
    return proposition._answer(
        kind, *call, "check_proposition" if kind == CHECK else "compute_score"
    )


def _of_kind(
    function: Callable[Concatenate[Kind, _P], Any], kind: Kind, name: str, doc: str
) -> Callable[_P, Any]:
    """``function`` with its kind bound: the public function, whose signature (for type
    checkers, ``help()`` and the API reference) is the function's without the kind."""

    signature = inspect.signature(function)
    names = list(signature.parameters)[1:]

    def call(*args: _P.args, **kwargs: _P.kwargs) -> Any:
        __tracebackhide__ = True
        # Python's own error would name the private function and list no accepted names.
        refuse_unknown_names(kwargs, names, name)
        return function(kind, *args, **kwargs)

    functools.update_wrapper(call, function)
    del call.__wrapped__  # type: ignore[attr-defined]
    call.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=list(signature.parameters.values())[1:]
    )
    call.__name__ = call.__qualname__ = name
    call.__doc__ = doc
    return call


check_proposition = _of_kind(
    _in_one_call,
    "check",
    "check_proposition",
    """Check a claim (a str or a Proposition-shaped object) in one call.

    The positional order is the reference library's; every other option is keyword-only and
    passes through (the reference drops them), winning over a Proposition-shaped claim's own.
    """,
)
compute_score = _of_kind(
    _in_one_call,
    "score",
    "compute_score",
    """Score a claim in one call, from MIN_SCORE to MAX_SCORE; arguments as ``check_proposition``.""",
)


def acheck_proposition(*args: Any, **keywords: Any) -> Coroutine[Any, Any, Any]:
    """``check_proposition`` (the same arguments), awaited: the judge works in a worker thread
    while the event loop goes on."""
    call = functools.partial(check_proposition, *args, **keywords)
    return awaited_twin(call, "acheck_proposition", _claim_argument(args, keywords))


def acompute_score(*args: Any, **keywords: Any) -> Coroutine[Any, Any, Any]:
    """``compute_score`` (the same arguments), awaited: the judge works in a worker thread while
    the event loop goes on."""
    call = functools.partial(compute_score, *args, **keywords)
    return awaited_twin(call, "acompute_score", _claim_argument(args, keywords))


def _claim_argument(args: tuple[Any, ...], keywords: Mapping[str, Any]) -> Any:
    return args[1] if len(args) > 1 else keywords.get("claim")


# The twins take what their sync forms take: help() and the API reference show it.
acheck_proposition.__signature__ = inspect.signature(check_proposition)  # type: ignore[attr-defined]
acompute_score.__signature__ = inspect.signature(compute_score)  # type: ignore[attr-defined]
