"""pytest-propositions: assert natural-language claims about simulations, judged by an LLM.

Importing this package is cheap: the heavy parts (litellm, diskcache, pydantic) load only when
a claim is actually evaluated.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._version import __version__
from .errors import (
    BudgetExceeded,
    CacheUnusable,
    ClaimWarning,
    JudgeError,
    JudgeReplyIncomplete,
    JudgeReplyInvalid,
    JudgeUnavailable,
    PropositionFailed,
    SamplesWarning,
    VerdictMissing,
    VerdictUnparsable,
)
from .scale import MAX_SCORE, MIN_SCORE

if TYPE_CHECKING:
    from .assertions import acheck_over_runs, check_over_runs
    from .claims.proposition import (
        Proposition,
        acheck_proposition,
        acompute_score,
        check_proposition,
        compute_score,
    )
    from .claims.targets import RenderOptions, register_renderer, render_target
    from .over_runs.result import RunsResult
    from .over_runs.target import Runs, runs
    from .trace import Agent, World
    from .verdict import Verdict


_LAZY = {
    "Proposition": "claims.proposition",
    "check_proposition": "claims.proposition",
    "compute_score": "claims.proposition",
    "RenderOptions": "claims.targets",
    "register_renderer": "claims.targets",
    "render_target": "claims.targets",
    "Agent": "trace",
    "World": "trace",
    "Verdict": "verdict",
    "runs": "over_runs.target",
    "Runs": "over_runs.target",
    "RunsResult": "over_runs.result",
    "check_over_runs": "assertions",
    "acheck_proposition": "claims.proposition",
    "acompute_score": "claims.proposition",
    "acheck_over_runs": "assertions",
}

__all__ = [
    "MAX_SCORE",
    "MIN_SCORE",
    "Agent",
    "BudgetExceeded",
    "CacheUnusable",
    "ClaimWarning",
    "JudgeError",
    "JudgeReplyIncomplete",
    "JudgeReplyInvalid",
    "JudgeUnavailable",
    "Proposition",
    "PropositionFailed",
    "RenderOptions",
    "Runs",
    "RunsResult",
    "SamplesWarning",
    "Verdict",
    "VerdictMissing",
    "VerdictUnparsable",
    "World",
    "__version__",
    "acheck_over_runs",
    "acheck_proposition",
    "acompute_score",
    "check_over_runs",
    "check_proposition",
    "compute_score",
    "register_renderer",
    "render_target",
    "runs",
]


def __getattr__(name: str) -> Any:
    # Heavy modules (pydantic, chevron) load on first use of the name that needs them.
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'pytest_propositions' has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(f".{module_name}", __name__), name)
