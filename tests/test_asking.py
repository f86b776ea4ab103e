"""The one policy for asking a judge again (``claims.asking.Asking``) and the bound it states:
driven in its worst case through the scripted judge, a claim costs exactly
``Asking.most_judge_calls()`` calls, so the bound and the code paths that ask cannot drift."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_propositions.claims.asking import Asking
from pytest_propositions.claims.options import ClaimOptions
from pytest_propositions.judging.request import JudgeRequest, Turns
from pytest_propositions.settings import resolve
from tests.support.judge_server import RecordedRequest, ScriptedJudge, echo_fn, text, verdict
from tests.support.outcomes import assert_counts

pytest_plugins = ["pytester"]

STRONG = "judge-strong"


@pytest.mark.parametrize(
    ("asking", "bound"),
    [
        (Asking("m"), 2),
        (Asking("m", double_check=True), 4),
        (Asking("m", samples=3), 6),
        (Asking("m", confirm=2), 6),
        (Asking("m", escalate_to="s"), 4),
        (Asking("m", double_check=True, confirm=2, escalate_to="s"), 16),
        (Asking("m", double_check=True, samples=3, escalate_to="s"), 24),
    ],
)
def test_the_bound_is_requests_times_turns_times_the_reask(asking: Asking, bound: int) -> None:
    """docs/judges.md ("The most calls one claim costs") states these figures."""
    assert asking.most_judge_calls() == bound


def test_the_request_carries_the_turns_of_its_policy() -> None:
    """judging/live.py reads the request's turns; they are the ones the policy counts."""
    for double_check in (False, True):
        asking = Asking("m", double_check=double_check)
        request = JudgeRequest("check", "c", "m", (), double_check=asking.double_check)
        assert request.turns == asking.turns == Turns(double_check)
    assert Turns().reasks == 1 and Turns(double_check=True).count == 2


def _unparsable_until_the_last_reask() -> Any:
    """Every turn's replies unparsable until its last re-ask, which is a failing verdict: the
    claim is in doubt at every step, so it is confirmed and escalated. The calls of one claim
    come one by one."""
    calls, attempts = [0], 1 + Turns().reasks

    def reply(request: RecordedRequest) -> Any:
        calls[0] += 1
        return verdict(False) if calls[0] % attempts == 0 else text("I cannot tell from this.")

    return echo_fn(reply)


WORST = """
def test_in_doubt(assert_proposition):
    assert_proposition("Oscar greets Ana.", "Alpha: Oscar greets Ana.", double_check=True)
"""


@pytest.mark.parametrize(
    ("flags", "options", "expected"),
    [
        ({"confirm": "2"}, {}, 16),
        ({"samples": "3"}, {}, 24),
        ({}, {"samples": 3}, 24),  # the claim's own samples
    ],
)
def test_a_claim_in_the_worst_case_costs_exactly_the_stated_bound(
    pytester: pytest.Pytester,
    judge_server: ScriptedJudge,
    inner_run: list[str],
    flags: dict[str, str],
    options: dict[str, Any],
    expected: int,
) -> None:
    judge_server.models.append(STRONG)
    judge_server.default = _unparsable_until_the_last_reask()
    cli = {"model": "openai/judge-model", "escalate_to": f"openai/{STRONG}", **flags}
    settings = resolve(cli, {}, {})
    claim = ClaimOptions(double_check=True, **options)
    asking = Asking.of(claim, settings, assertion=True)
    bound = asking.most_judge_calls()
    assert bound == expected
    own = "".join(f", {name}={value!r}" for name, value in options.items())
    pytester.makepyfile(WORST.replace("double_check=True", "double_check=True" + own))
    args = [f"--prop-{name}={value}" for name, value in flags.items()]
    result = pytester.runpytest(*inner_run, f"--prop-escalate-to=openai/{STRONG}", *args)
    assert_counts(result, failed=1)
    assert len(judge_server.requests) == bound
    asked = [request.model for request in judge_server.requests]
    assert asked.count(STRONG) == asking.samples * asking.turns.most_calls()
