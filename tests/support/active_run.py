"""A run made the current one for a block: what a test does to judge through ``Proposition`` and
the claim functions without pytest's own run."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from pytest_propositions import runtime as runtime_module
from pytest_propositions.runtime import Runtime


@contextmanager
def active(runtime: Runtime) -> Iterator[Runtime]:
    """``runtime`` as the current run until the block ends; then it is no longer, and closed."""
    runtime_module.activate(runtime)
    try:
        yield runtime
    finally:
        runtime_module.deactivate(runtime)
        runtime.close()
