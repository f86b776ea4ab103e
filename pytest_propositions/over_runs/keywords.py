"""What marks a claim as one over many runs, told apart without importing the runs machinery.

Every claim asks whether it is over runs; an ordinary cached claim should not pay for loading
the runs machinery (the target, the rule, the deciders, the statistics) to learn that it is not.
(Its keywords, ``at_least=`` and the others, are told apart by ``claims.options``.)
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["is_runs"]

_TARGET = "pytest_propositions.over_runs.target"


def is_runs(target: Any) -> bool:
    """Whether ``target`` is a ``runs(...)`` target. Until ``over_runs.target`` is imported no
    such target can exist (``runs`` and ``Runs`` live there), so nothing is imported to say no.

    A target made by an earlier import of that module (one a test tool dropped from
    ``sys.modules``) is still one, known by its class's name: judging it as an ordinary target
    could pass a claim no run was judged for."""
    if type(target) is str:
        return False  # the commonest target, asked about for every claim
    module = sys.modules.get(_TARGET)
    if module is not None and isinstance(target, module.Runs):
        return True
    return any(
        kind.__module__ == _TARGET and kind.__qualname__ == "Runs" for kind in type(target).__mro__
    )
