"""The exceptions users see: a false claim is an assertion, a judge that cannot answer is not."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any, Self

if TYPE_CHECKING:
    from .verdict import Verdict


#: The name the package is installed by (pyproject.toml's ``[project] name``).
DISTRIBUTION = "pytest-propositions"


def install_hint(extra: str) -> str:
    """How to install one of the package's extras (local, stats, postgres), said the same way
    by every message and help text: the extra's name, and the command from a checkout of the
    package and from a package index."""
    return (
        f'install the "{extra}" extra: pip install -e ".[{extra}]" in a checkout of '
        f'{DISTRIBUTION}, or pip install "{DISTRIBUTION}[{extra}]" from a package index'
    )


class PropositionFailed(AssertionError):
    """The judge answered, and the claim did not meet the bar."""

    # One line for pytest's short summary, when the message is not one (soft claims).
    short: str | None = None

    def __init__(
        self, message: str, verdict: Verdict, threshold: int | None = None, *, holds: bool = True
    ) -> None:
        super().__init__(message)
        self.verdict = verdict
        self.threshold = threshold
        # False: the claim was expected not to hold (a score: to stay at most the threshold).
        self.holds = holds


class SamplesWarning(UserWarning):
    """Several samples were asked of a judge whose answers cannot differ (greedy and seeded)."""


class ClaimWarning(UserWarning):
    """A claim as given is judged, but likely not as its author meant (``claim_variables`` that
    it never uses); the warning points at the call."""


class JudgeError(Exception):
    """The judge could not give a verdict; never a pass and never an assertion failure."""


class JudgeUnavailable(JudgeError):
    """The provider refused, failed or could not be reached; the message says what to fix.

    The provider's own exception is never chained: its traceback shows call arguments, and
    those include the API key. ``stops_run``: every later claim would fail the same way (a model
    no provider serves), so the plugin stops the session at the first, and says it once.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        format_rejected: bool = False,
        stops_run: bool = False,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.format_rejected = format_rejected
        self.stops_run = stops_run


class VerdictUnparsable(JudgeError):
    """The judge answered, but the reply holds no valid verdict even after a retry."""

    def __init__(self, message: str, raw_reply: str = "") -> None:
        super().__init__(message)
        self.raw_reply = raw_reply

    def located(self, where: str) -> Self:
        """The same error, its message ending with ``where`` (the model and the claim)."""
        found = copy.copy(self)
        found.args = (f"{self} ({where})",)
        return found


class JudgeReplyInvalid(VerdictUnparsable):
    """The judge's reply breaks the plumbing: no message, text that cannot be encoded (an
    unpaired surrogate), or nesting too deep to walk.  Asked once more, like any unparsable
    reply, and never cached."""


class JudgeReplyIncomplete(VerdictUnparsable):
    """The provider marked the judge's reply incomplete, filtered or failed: cut at its output
    limit (``finish_reason`` ``length``, Anthropic's ``max_tokens``, Gemini's ``MAX_TOKENS``),
    stopped by a content filter (``content_filter``, Gemini's ``SAFETY``), a tool call instead
    of a reply, or an ``error`` beside it. Never a verdict, however well its text reads; asked
    once more, like any unparsable reply, and never cached. ``finish_reason`` is the provider's
    word (None for an error object)."""

    def __init__(self, message: str, raw_reply: str = "", finish_reason: str | None = None) -> None:
        super().__init__(message, raw_reply)
        self.finish_reason = finish_reason


class VerdictMissing(JudgeError):
    """Replay mode: the verdict is not in the cache, and no judge may be called."""

    def __init__(self, message: str, key: str = "", **details: Any) -> None:
        super().__init__(message)
        self.key = key
        self.details = details


class BudgetExceeded(JudgeError):
    """The run's judged cost passed ``--prop-max-cost``; further uncached claims are refused."""


class CacheUnusable(JudgeError):
    """The verdict cache cannot be created, read or written: found before any judge call, so no
    paid verdict is thrown away. Counted as a judge error: the claim was not judged."""


class DryRunSkip(Exception):
    """``--prop-dry-run``: this claim has no cached verdict, so its test is skipped, not judged."""


class CalibrationError(Exception):
    """A calibration input or record the user must fix; the message says what was expected."""
