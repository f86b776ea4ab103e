"""Shared fixtures for the test suite."""

from __future__ import annotations

import os
from collections.abc import Iterator

import httpcore  # noqa: F401  (see litellm_preloaded: httpx maps httpcore's exceptions once)
import pytest

from tests.support.judge_server import ScriptedJudge


@pytest.fixture(scope="session")
def litellm_preloaded() -> None:
    """Import litellm once in this process, before any inline pytester run imports it.

    Otherwise pytester's sys.modules snapshot removes litellm (and what it imported) after the
    inner run, which leaves importlib.metadata seeing no installed distributions, so the next
    inner run cannot load any plugin from its entry point.
    """
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm  # noqa: F401


@pytest.fixture
def judge_server(litellm_preloaded: None) -> Iterator[ScriptedJudge]:
    """A fresh scripted judge on a free loopback port, stopped after the test."""
    with ScriptedJudge() as judge:
        yield judge
