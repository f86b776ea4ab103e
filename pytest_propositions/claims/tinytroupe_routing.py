"""TinyTroupe's own propositions judged by this plugin for one test (the fixture
``route_tinytroupe_propositions``): its ready-made ones, an Intervention's preconditions, the
action generator's quality checks. TinyTroupe is imported only when a test asks for it.

Every TinyTroupe module that judges a claim (``tinytroupe.validation.propositions``,
``tinytroupe.steering.intervention``, ``tinytroupe.agent.action_generator``) does it through the
``check`` and ``score`` of the one class ``tinytroupe.experimentation.proposition.Proposition``;
its ready-made propositions are instances made at import, and the action generator judges its
own copies of them. Replacing those two methods on the class, for the test, reaches every
instance: made at import, copied before the test, or made by TinyTroupe during it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..checks import check_flag
from ..verdict import KINDS, Kind
from .proposition import Proposition

if TYPE_CHECKING:
    import pytest

# Where TinyTroupe defines its Proposition (the other modules import it from there).
LIBRARY_MODULE = "tinytroupe.experimentation.proposition"
# What TinyTroupe's own evaluation leaves on a proposition, and its code reads next (an
# Intervention's precondition_justification(), the action generator's feedback).
EVALUATION_STATE = (
    "value",
    "justification",
    "confidence",
    "reasoning",
    "full_evaluation_response",
    "llm_chat",
)


def route(monkeypatch: pytest.MonkeyPatch) -> type:
    """Judge TinyTroupe's Proposition here until ``monkeypatch`` is undone (the test's end);
    returns TinyTroupe's class."""
    __tracebackhide__ = True
    try:
        module = importlib.import_module(LIBRARY_MODULE)
    except ImportError as error:
        raise ImportError(
            f"route_tinytroupe_propositions: TinyTroupe cannot be imported ({error}). Install "
            "it from its repository (the package index holds only a placeholder under its name), "
            "or leave the fixture out: your own claims need only pytest-propositions."
        ) from None
    library_class = getattr(module, "Proposition", None)
    missing = [
        name for name in ("check", "score") if not callable(getattr(library_class, name, None))
    ]
    if not isinstance(library_class, type) or missing:
        raise TypeError(
            f"route_tinytroupe_propositions: {LIBRARY_MODULE}.Proposition is not the class with "
            "check() and score() this fixture replaces; this TinyTroupe release is not supported"
        )
    for kind in KINDS:
        monkeypatch.setattr(library_class, kind, _judged_here(kind))
    return library_class


def _judged_here(kind: Kind) -> Callable[..., Any]:
    """TinyTroupe's ``check`` or ``score``, with its signature, judged by this plugin: the
    verdict cached, counted as a claim by call and reported (labelled with the TinyTroupe module
    that asked, when the test did not ask itself)."""
    call = f"TinyTroupe's Proposition.{kind}"

    def judged(
        self: Any,
        target: Any = None,
        additional_context: str | None = None,
        claim_variables: Mapping[str, Any] | None = None,
        return_full_response: bool = False,
    ) -> Any:
        __tracebackhide__ = True
        full = check_flag(return_full_response, "return_full_response")
        # Its claim, options, precondition and targets, read from the object as it is now.
        ours = Proposition(self)
        verdict = ours.evaluate(kind, target, additional_context, claim_variables, noted_as=call)
        for name in EVALUATION_STATE:
            setattr(self, name, getattr(ours, name))
        return verdict.as_response() if full else verdict.value

    judged.__name__ = kind
    judged.__qualname__ = f"Proposition.{kind}"
    judged.__doc__ = f"TinyTroupe's Proposition.{kind}, judged by pytest-propositions."
    return judged
