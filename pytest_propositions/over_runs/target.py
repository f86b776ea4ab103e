"""The ``runs(...)`` target of a claim over many runs: its checks, and each run simulated once."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from ..claims.targets import as_target_list

__all__ = ["Runs", "runs"]


class Runs:
    """Many runs of a simulation, as one target: ``simulate(run)`` builds and runs run number
    ``run`` (0, 1, 2, ...) and returns what a claim is about (anything a claim accepts).

    A ``Runs`` object keeps the targets it simulated, so several claims about it share them.
    """

    def __init__(
        self,
        simulate: Callable[[int], Any],
        *,
        max_runs: int,
        min_runs: int = 1,
        parallel: int = 1,
    ) -> None:
        __tracebackhide__ = True
        if not callable(simulate):
            raise TypeError(
                f"runs(simulate, ...): simulate must be a function of the run number (0, 1, 2, "
                f"...) returning a target, got {type(simulate).__name__}"
            )
        for name, value in (("max_runs", max_runs), ("min_runs", min_runs), ("parallel", parallel)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(
                    f"runs(): {name} must be a whole number of at least 1, got {value!r}"
                )
        if min_runs > max_runs:
            raise ValueError(f"runs(): min_runs ({min_runs}) is more than max_runs ({max_runs})")
        self.simulate = simulate
        self.max_runs = max_runs
        self.min_runs = min_runs
        self.parallel = parallel
        self._made: dict[int, Future[Any]] = {}
        self._lock = threading.Lock()
        # Simulations at once, over every claim about this object (their threads included).
        self._slots = threading.Semaphore(parallel)

    def __repr__(self) -> str:
        name = getattr(self.simulate, "__name__", type(self.simulate).__name__)
        return f"runs({name}, max_runs={self.max_runs}, min_runs={self.min_runs}, parallel={self.parallel})"

    def target(self, run: int) -> Any:
        """Run number ``run``'s target: simulated once, on first need, and kept."""
        __tracebackhide__ = True
        with self._lock:
            made = self._made.get(run)
            owner = made is None
            if made is None:
                made = self._made[run] = Future()
        if not owner:
            return made.result()
        try:
            with self._slots:
                value = self.simulate(run)
            try:
                as_target_list(value)
            except (TypeError, ValueError) as error:
                raise type(error)(
                    f"runs(): simulate({run}) returned something that is not a target: {error}"
                ) from None
        except BaseException as error:
            with self._lock:
                del self._made[run]  # a failed simulation is not kept: asking again retries it
            made.set_exception(error)
            raise
        made.set_result(value)
        return value


def runs(
    simulate: Callable[[int], Any], *, max_runs: int, min_runs: int = 1, parallel: int = 1
) -> Runs:
    """Many runs of ``simulate`` as one target, for claims with ``at_least=``, ``at_most=``,
    ``min_score``, ``better_than=`` or ``every_run=True``. ``parallel=K`` runs K simulations in
    threads (opt-in: simulation libraries often keep global state)."""
    __tracebackhide__ = True
    return Runs(simulate, max_runs=max_runs, min_runs=min_runs, parallel=parallel)
