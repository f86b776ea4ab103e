"""A test's claims judged after its body: each one as made (``PendingClaim``) and the soft claims
a test has not had judged yet (``SoftClaims``, kept on its item under
``session.SOFT_CLAIMS_KEY``). markers.py judges them; a module of its own, loaded with the first
soft claim or marker, so a run that makes none never builds these classes."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING

from .checks import at_site, quote_claim

if TYPE_CHECKING:
    from .assertions import MadeClaim


@dataclass(frozen=True)
class PendingClaim:
    """A claim judged after the test body (a soft claim, a ``proposition`` marker, a batch's),
    made where it was written (a marker's rule: when judged)."""

    made: MadeClaim
    origin: str = "expect_proposition"
    # Where the claim was made ("test_x.py:12"), and a traceback entry for that line.
    where: str | None = None
    site: TracebackType | None = None


class SoftClaims:
    """A test's soft claims not yet judged. The body's are judged after it, those made later (a
    fixture's teardown, a thread joined there) at the end of the teardown; then it closes, and a
    claim made after that is an error at its call: nothing could judge or report it.
    (Mutable state, not a value: a plain class.)"""

    def __init__(self, test_id: str) -> None:
        self.test_id = test_id
        self._pending: list[PendingClaim] = []
        self._closed = False
        self._lock = threading.Lock()

    def add(self, claim: PendingClaim, origin: str = "expect_proposition") -> None:
        with self._lock:
            if not self._closed:
                self._pending.append(claim)
                return
        raise RuntimeError(
            f"{at_site(origin)}soft claim {quote_claim(claim.made.text)} made after its test "
            f"{self.test_id} ended (its soft claims were judged at the end of its teardown), so "
            "it could be neither judged nor reported; make soft claims before the test's "
            "teardown ends (join a thread that makes them in a fixture's teardown), or use "
            "assert_proposition"
        )

    def take(self) -> list[PendingClaim]:
        """The claims made so far, handed over to be judged (or dropped, after a skip)."""
        with self._lock:
            pending, self._pending = self._pending, []
            return pending

    def close(self) -> list[PendingClaim]:
        """The last claims; any made after this raise at their call."""
        with self._lock:
            self._closed = True
            pending, self._pending = self._pending, []
            return pending
