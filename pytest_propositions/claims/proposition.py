"""The evaluator core: a claim about targets, checked as True/False or scored from 0 to 9.

A precondition turns a claim P into "precondition implies P": when the precondition is false
the claim holds trivially and no judge is asked.
"""

from __future__ import annotations

import enum
import functools
import json
import logging
import os
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec

from .. import runtime as runtime_module
from ..checks import (
    check_claim,
    check_flag,
    check_precondition_result,
    check_text,
    check_variable_value,
    quote_claim,
)
from ..errors import JudgeError
from ..judging.judge import JudgeRequest
from ..judging.prompts import (
    NO_ADDITIONAL_CONTEXT,
    RECOMMENDATIONS_PROMPT,
    Message,
    assistant_turn,
    build_messages,
)
from ..scale import MAX_SCORE, MIN_SCORE
from ..settings import TIMESTAMP_MODES
from ..verdict import Verdict, combine_samples
from .targets import RenderOptions, as_target_list, render_context

if TYPE_CHECKING:
    from types import FrameType

    from ..runtime import Runtime
    from ..verdict import Kind

__all__ = ["MAX_SCORE", "MIN_SCORE", "Proposition", "check_proposition", "compute_score"]

logger = logging.getLogger("pytest_propositions")

Precondition = Callable[..., Any]
_P = ParamSpec("_P")

# The same few options come back claim after claim, and a frozen RenderOptions can be shared.
_render_options = functools.lru_cache(maxsize=64)(RenderOptions)

PRECONDITION_FALSE_JUSTIFICATION = (
    "Not judged: the precondition was false, so the claim holds trivially."
)


def frame_place(frame: FrameType) -> str:
    """``file:line`` of a frame, the file relative to the working folder when it is inside it."""
    from pathlib import Path

    path = Path(frame.f_code.co_filename)
    try:
        shown = str(path.relative_to(Path.cwd()))
    except ValueError:
        shown = str(path)
    return f"{shown}:{frame.f_lineno}"


# The package's folder: frames from files under it are the plugin's own, not the caller's.
_PACKAGE_FOLDER = os.path.join(os.path.dirname(os.path.dirname(__file__)), "")


def call_site_outside_package() -> str | None:
    """Where the user's code called into the package (``file:line``), for the reports."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_FOLDER):
        frame = frame.f_back
    return None if frame is None else frame_place(frame)


def render_claim(claim: str, claim_variables: Mapping[str, Any] | None) -> str:
    """Fill mustache variables; every variable the claim uses must be given, in or out of sections.

    Values are never HTML-escaped; mappings and lists become sorted JSON rather than reprs.
    Partials are refused (they would read files), and so are values whose text is not the same
    in every run (see ``check_variable_value``): the rendered claim is part of the cache key.
    """
    __tracebackhide__ = True
    variables = _claim_variables(claim_variables)
    if "{{" not in claim:
        return claim  # no tag (even a delimiter change starts with "{{"): nothing to render
    import chevron
    from chevron.tokenizer import tokenize

    try:
        tokens = list(tokenize(claim))
        tree, _ = _template_tree(tokens, 0, None)
    except chevron.ChevronError as error:
        raise ValueError(
            f"the claim is not a valid mustache template: {error}; claim: {quote_claim(claim)}"
        ) from None
    parts: list[str] = []
    _render_tree(tree, [variables], parts, claim, variables)
    text = "".join(parts)
    if not text.strip():
        raise ValueError(
            f"the claim renders to blank text; claim: {quote_claim(claim)}, claim_variables: "
            f"{', '.join(sorted(variables)) or 'none'}"
        )
    return check_text(text, "the rendered claim")


def _claim_variables(claim_variables: Mapping[str, Any] | None) -> dict[str, Any]:
    __tracebackhide__ = True
    if claim_variables is None:
        return {}
    if not isinstance(claim_variables, Mapping):
        raise TypeError(
            f"claim_variables must be a mapping (dict), got {type(claim_variables).__name__}"
        )
    for name in claim_variables:
        if not isinstance(name, str):
            raise TypeError(
                f"claim_variables names must be str, got {type(name).__name__} {name!r}"
            )
    return dict(claim_variables)


# A parsed template: literal text, ("var", key), or (section kind, key, children).
_Node = str | tuple[str, str] | tuple[str, str, list[Any]]


def _template_tree(
    tokens: list[tuple[str, str]], start: int, section: str | None
) -> tuple[list[_Node], int]:
    """Nest chevron's token stream into sections; partials are refused."""
    __tracebackhide__ = True
    nodes: list[_Node] = []
    index = start
    while index < len(tokens):
        tag, key = tokens[index]
        index += 1
        if tag == "literal":
            nodes.append(key)
        elif tag in ("variable", "no escape"):
            nodes.append(("var", key))
        elif tag in ("section", "inverted section"):
            children, index = _template_tree(tokens, index, key)
            nodes.append((tag, key, children))
        elif tag == "end":
            return nodes, index
        elif tag == "partial":
            raise ValueError(
                f"the claim uses the partial {{{{> {key}}}}}; partials are not supported (they "
                "would read template files from disk): put the text in claim_variables instead"
            )
        # comments and delimiter changes render nothing
    return nodes, index


def _lookup(key: str, scopes: list[Any], claim: str, variables: Mapping[str, Any]) -> Any:
    __tracebackhide__ = True
    if key == ".":
        return scopes[0]
    for scope in scopes:
        value: Any = scope
        for part in key.split("."):
            if isinstance(value, Mapping) and part in value:
                value = value[part]
            elif isinstance(value, list | tuple) and part.isdigit() and int(part) < len(value):
                value = value[int(part)]
            else:
                break
        else:
            return value
    available = ", ".join(sorted(variables)) or "none"
    raise ValueError(
        f"the claim uses the variable {{{{{key}}}}} but claim_variables has no value for it "
        f"(given: {available}); claim: {quote_claim(claim)}. Stricter than the reference "
        "library on purpose, which would render it as empty text: pass it in claim_variables"
    )


def _render_tree(
    nodes: list[_Node],
    scopes: list[Any],
    parts: list[str],
    claim: str,
    variables: Mapping[str, Any],
) -> None:
    __tracebackhide__ = True
    for node in nodes:
        if isinstance(node, str):
            parts.append(node)
            continue
        key = node[1]
        value = _lookup(key, scopes, claim, variables)
        check_variable_value(value, "{{" + key + "}}")
        if node[0] == "var":
            parts.append(_value_text(value))
            continue
        children: list[_Node] = node[2]  # type: ignore[misc]
        if node[0] == "inverted section":
            if not value:
                _render_tree(children, scopes, parts, claim, variables)
        elif isinstance(value, list | tuple):
            for item in value:
                _render_tree(children, [item, *scopes], parts, claim, variables)
        elif value:
            _render_tree(children, [value, *scopes], parts, claim, variables)


# Characters that end a line for str.splitlines() and that JSON leaves as they are.
_LINE_BREAKS_JSON_KEEPS = str.maketrans(
    {"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"}
)


def _value_text(value: Any) -> str:
    """A variable's value as claim text. A value is data, often from the simulation itself: one
    that spans lines is written as a JSON string, so it stays on the claim's line and cannot
    open a section of the judge's request of its own (a "# Additional context" heading, say)."""
    if isinstance(value, Mapping | list | tuple):
        return json.dumps(value, sort_keys=True, ensure_ascii=False).translate(
            _LINE_BREAKS_JSON_KEEPS
        )
    text = value if isinstance(value, str) else str(value)
    if len(f"{text}.".splitlines()) > 1:  # a line break anywhere, at the end too
        return json.dumps(text, ensure_ascii=False).translate(_LINE_BREAKS_JSON_KEEPS)
    return text


# The options a Proposition-shaped object carries, by the reference library's attribute names.
PROPOSITION_OPTIONS = (
    "include_personas",
    "first_n",
    "last_n",
    "double_check",
    "use_reasoning_model",
    "precondition_function",
    "timestamps",
)


class _Unset(enum.Enum):
    """An option the caller did not pass: the Proposition-shaped claim's own value, else the default."""

    UNSET = "unset"

    def __repr__(self) -> str:
        return "<unset>"


UNSET = _Unset.UNSET


def is_proposition_like(value: Any) -> bool:
    """Ours, the reference library's, or any object with a str ``claim``: a claim with options."""
    return not isinstance(value, str) and isinstance(getattr(value, "claim", None), str)


def claim_and_options(
    claim: Any, overrides: Mapping[str, Any], *, precondition_key: str = "precondition"
) -> tuple[Any, dict[str, Any], list[Any] | None]:
    """The claim text, its options and its own targets, for a plain claim or a Proposition-shaped one.

    A Proposition-shaped object (see ``is_proposition_like``) gives its claim, the options of
    ``PROPOSITION_OPTIONS`` it has, and its ``targets``; ``overrides`` (what the call site
    passed) win over its options. ``precondition_function`` is returned under
    ``precondition_key`` (the fixtures call it ``precondition``). Anything else is returned as
    given, with ``overrides`` as the options and no targets: checking it is the caller's part.
    """
    if not is_proposition_like(claim):
        return claim, dict(overrides), None
    options: dict[str, Any] = {}
    for name in PROPOSITION_OPTIONS:
        if hasattr(claim, name):
            options[precondition_key if name == "precondition_function" else name] = getattr(
                claim, name
            )
    options.update(overrides)
    own = getattr(claim, "targets", None)
    if own is not None and not isinstance(own, list | tuple):
        own = [own]
    return claim.claim, options, None if own is None else list(own)


def choose_target(given: Any, own: list[Any] | None) -> Any:
    """The call's target, or the proposition's own; both, unless they are the same, is an error.

    As in the reference library, a proposition created with a target is fixed to it: judging it
    against another target would silently judge something else than its author meant.
    """
    if own is None or not own:
        return given
    if given is None:
        return own
    items = as_target_list(given)
    if len(items) == len(own) and all(a is b for a, b in zip(items, own, strict=True)):
        return own
    raise ValueError(
        "this proposition already has its own target(s) (given when it was created); pass it "
        "without a target, or use a copy created without one"
    )


def _check_precondition_function(function: Any) -> None:
    __tracebackhide__ = True
    if function is not None and not callable(function):
        raise TypeError(
            "precondition_function must be callable with keyword arguments target, "
            f"additional_context and claim_variables, got {type(function).__name__}"
        )


def check_additional_context(additional_context: Any) -> str | None:
    """Extra context is text (or None), and valid Unicode."""
    __tracebackhide__ = True
    if additional_context is None:
        return None
    if not isinstance(additional_context, str):
        raise TypeError(
            f"additional_context must be a string or None, got {type(additional_context).__name__}"
        )
    return check_text(additional_context, "additional_context")


def _check_window(name: str, value: int | None) -> int | None:
    __tracebackhide__ = True
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(
            f"{name} must be a whole number of at least 0, or None, got {value!r} (0 means what "
            "it means to the reference library: first_n=0 shows no event from the start, "
            "last_n=0 shows every event)"
        )
    return value


def check_timestamps(value: Any) -> str | None:
    """A claim's own clock rendering: one of TIMESTAMP_MODES, or None for the run's setting."""
    __tracebackhide__ = True
    if value is None:
        return None
    if not isinstance(value, str) or value not in TIMESTAMP_MODES:
        raise ValueError(
            f"timestamps must be one of {', '.join(TIMESTAMP_MODES)} or None (the run's "
            f"--prop-timestamps), got {value!r}"
        )
    return value


class JudgeChat:
    """The conversation with the judge behind a proposition's last evaluation.

    ``messages`` holds what the judge was asked and its answer (OpenAI chat format); new turns
    can be added and sent: ``chat.add_user_message("Why?")`` then ``chat()`` returns the judge's
    free-text answer, which joins the conversation. Follow-ups are never cached: they need a
    live judge. Built only when asked for, so a cached suite pays nothing for it.
    """

    def __init__(
        self, request: list[Message], answer: Verdict, model: str, runtime: Runtime
    ) -> None:
        self._request = request
        self._answer = answer
        self._extra: list[Message] = []
        self.model = model
        self._runtime = runtime

    @property
    def messages(self) -> list[Message]:
        return [*self._request, assistant_turn(self._answer.as_response()), *self._extra]

    @property
    def response_json(self) -> dict[str, Any]:
        return self._answer.as_response()

    @property
    def response_value(self) -> bool | int:
        return self._answer.value

    @property
    def response_justification(self) -> str:
        return self._answer.justification

    @property
    def response_reasoning(self) -> str | None:
        return self._answer.reasoning

    @property
    def response_confidence(self) -> float | None:
        return self._answer.confidence

    def add_user_message(self, content: str) -> JudgeChat:
        return self._add("user", content)

    def add_system_message(self, content: str) -> JudgeChat:
        return self._add("system", content)

    def add_assistant_message(self, content: str) -> JudgeChat:
        return self._add("assistant", content)

    def _add(self, role: str, content: Any) -> JudgeChat:
        __tracebackhide__ = True
        if not isinstance(content, str) or not content.strip():
            raise TypeError(f"a {role} message must be a non-empty str, got {content!r}")
        self._extra.append({"role": role, "content": check_text(content, f"the {role} message")})
        return self

    def __call__(self) -> str:
        """Send the conversation; the judge's free-text answer is returned and kept."""
        __tracebackhide__ = True
        if not self._extra or self._extra[-1]["role"] == "assistant":
            raise ValueError("add a user message (add_user_message) before asking the judge again")
        answer = self._runtime.judge.follow_up(self.model, self.messages)
        self._extra.append({"role": "assistant", "content": answer})
        return answer

    def __repr__(self) -> str:
        return f"JudgeChat(model={self.model!r}, {len(self.messages)} messages)"


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
        claim, options, own_targets = claim_and_options(
            claim,
            {name: value for name, value in given.items() if value is not UNSET},
            precondition_key="precondition_function",
        )
        target = choose_target(target, own_targets)
        self.claim = check_claim(claim)
        precondition_function = options.get("precondition_function")
        _check_precondition_function(precondition_function)
        self.targets = None if target is None else self._as_targets(target)
        self.include_personas = check_flag(
            options.get("include_personas", False), "include_personas"
        )
        self.first_n = _check_window("first_n", options.get("first_n"))
        self.last_n = _check_window("last_n", options.get("last_n"))
        self.double_check = check_flag(options.get("double_check", False), "double_check")
        self.use_reasoning_model = check_flag(
            options.get("use_reasoning_model", False), "use_reasoning_model"
        )
        self.precondition_function = precondition_function
        self.timestamps = check_timestamps(options.get("timestamps"))
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
        return Proposition(
            self.claim,
            self.targets,
            self.include_personas,
            self.first_n,
            self.last_n,
            self.double_check,
            self.use_reasoning_model,
            self.precondition_function,
            timestamps=self.timestamps,
        )

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
        full = check_flag(return_full_response, "return_full_response")
        verdict = self.evaluate(
            "check", target, additional_context, claim_variables, noted_as="Proposition.check"
        )
        return verdict.as_response() if full else verdict.value

    def score(
        self,
        target: Any = None,
        additional_context: str | None = None,
        claim_variables: Mapping[str, Any] | None = None,
        return_full_response: bool = False,
    ) -> Any:
        """How true the claim is, from MIN_SCORE to MAX_SCORE."""
        __tracebackhide__ = True
        full = check_flag(return_full_response, "return_full_response")
        verdict = self.evaluate(
            "score", target, additional_context, claim_variables, noted_as="Proposition.score"
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
        ``model``: another judge than the run's (a claim over runs' referee). ``run_index``: a claim
        over runs' run number, a key of its own for each run's verdict.

        With ``samples`` > 1 the judge is asked that many times (each answer cached by its
        index, starting at ``sample_index``) and the majority (checks) or the median (scores)
        stands; a tie goes against what the caller expects (``holds=False``: a claim that must
        not hold, or a score that must stay at most a bar). A precondition that returns False
        makes the claim hold trivially: it is then neither rendered (so it needs no claim
        variables) nor judged.

        While a test runs, the verdict (or the judge's error) is filed in the run's reports
        under the call ``noted_as`` names, as a claim that fails nothing by itself; None: the
        caller files it (the fixtures and claims over runs do, so it is counted once).
        """
        __tracebackhide__ = True
        arguments = (
            kind,
            target,
            additional_context,
            claim_variables,
            samples,
            sample_index,
            holds,
        )
        # Filed under the test running when the call began: a thread's call may end after it.
        run = None if noted_as is None else runtime or runtime_module.active()
        made_in = run.current_test if run is not None else None
        if noted_as is None:
            return self._evaluate(*arguments, runtime, model, run_index)
        try:
            verdict = self._evaluate(*arguments, runtime, model, run_index)
        except JudgeError as error:
            if run is not None and made_in is not None:
                run.note_error(error, made_in=made_in)
            raise
        if run is not None and made_in is not None:
            run.note_call(verdict, noted_as, call_site_outside_package(), made_in=made_in)
        return verdict

    def _evaluate(
        self,
        kind: Kind,
        target: Any,
        additional_context: str | None,
        claim_variables: Mapping[str, Any] | None,
        samples: int,
        sample_index: int,
        holds: bool,
        runtime: Runtime | None,
        model: str | None,
        run_index: int = 0,
    ) -> Verdict:
        __tracebackhide__ = True
        check_additional_context(additional_context)
        if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
            raise ValueError(f"samples must be a whole number of at least 1, got {samples!r}")
        variables = _claim_variables(claim_variables)
        targets = self._determine_targets(target)
        self._reset()
        if not self._precondition_holds(targets, additional_context, variables):
            verdict = self._trivially_true(kind, self.claim)
        else:
            rendered_claim = render_claim(self.claim, variables)
            run = runtime or runtime_module.current()
            answers = [
                self._judge(
                    kind, targets, rendered_claim, additional_context, index, run, model, run_index
                )
                for index in range(sample_index, sample_index + samples)
            ]
            verdict = answers[0] if samples == 1 else combine_samples(answers, holds)
        self.verdict = verdict
        self.value = verdict.value
        self.justification = verdict.justification
        self.confidence = verdict.confidence
        self.reasoning = verdict.reasoning
        self.full_evaluation_response = verdict.as_response()
        return verdict

    def _judge(
        self,
        kind: Kind,
        targets: list[Any],
        claim: str,
        additional_context: str | None,
        sample_index: int,
        run: Runtime,
        model: str | None = None,
        run_index: int = 0,
    ) -> Verdict:
        context = check_text(
            render_context(
                targets,
                _render_options(
                    first_n=self.first_n,
                    last_n=self.last_n,
                    include_personas=self.include_personas,
                    timestamps=self.timestamps or run.settings.timestamps,
                ),
            ),
            "the target's text",
        )
        messages = build_messages(kind, claim, context, additional_context)
        model = model or run.settings.judge_model(self.use_reasoning_model)
        verdict = run.judge.evaluate(
            JudgeRequest(
                kind=kind,
                claim=claim,
                model=model,
                messages=tuple(messages),
                double_check=self.double_check,
                sample_index=sample_index,
                test_id=run.current_test,
                run_index=run_index,
            )
        )
        run.remember_context(verdict.key, messages)
        self.llm_chat = JudgeChat(messages, verdict, model, run)
        return verdict

    def _trivially_true(self, kind: Kind, claim: str) -> Verdict:
        return Verdict(
            kind=kind,
            claim=claim,
            value=True if kind == "check" else MAX_SCORE,
            justification=PRECONDITION_FALSE_JUSTIFICATION,
            reasoning=PRECONDITION_FALSE_JUSTIFICATION,
            confidence=1.0,
            precondition_skipped=True,
        )

    def _precondition_holds(
        self,
        targets: list[Any],
        additional_context: str | None,
        claim_variables: Mapping[str, Any],
    ) -> bool:
        __tracebackhide__ = True
        if self.precondition_function is None:
            return True
        result = self.precondition_function(
            target=targets,
            additional_context=additional_context
            if additional_context is not None
            else NO_ADDITIONAL_CONTEXT,
            claim_variables=dict(claim_variables),
        )
        return check_precondition_result(self.precondition_function, result)

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

    @staticmethod
    def _as_targets(target: Any) -> list[Any]:
        __tracebackhide__ = True
        return as_target_list(target)

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
        if target is None:
            raise ValueError(
                "no target: give one when creating the proposition or when calling check()/score()"
            )
        return self._as_targets(target)


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
    full = check_flag(return_full_response, "return_full_response")
    options = (include_personas, first_n, last_n, double_check, use_reasoning_model)
    proposition = Proposition(claim, target, *options, precondition_function, timestamps=timestamps)
    verdict = proposition.evaluate(
        kind,
        None,
        additional_context,
        claim_variables,
        noted_as="check_proposition" if kind == "check" else "compute_score",
    )
    return verdict.as_response() if full else verdict.value


def _of_kind(
    function: Callable[Concatenate[Kind, _P], Any], kind: Kind, name: str, doc: str
) -> Callable[_P, Any]:
    """``function`` with its kind bound: the public function, whose signature (for type
    checkers, ``help()`` and the API reference) is the function's without the kind."""
    import inspect

    def call(*args: _P.args, **kwargs: _P.kwargs) -> Any:
        __tracebackhide__ = True
        return function(kind, *args, **kwargs)

    functools.update_wrapper(call, function)
    del call.__wrapped__  # type: ignore[attr-defined]
    signature = inspect.signature(function)
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
