"""Shared fixtures for the test suite."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.judge_server import ScriptedJudge


@pytest.fixture
def judge_server() -> Iterator[ScriptedJudge]:
    """A fresh scripted judge on a free loopback port, stopped after the test."""
    with ScriptedJudge() as judge:
        yield judge
