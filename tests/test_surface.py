"""Soft claims, the proposition marker, proposition_judge, samples, dry runs and the cost ceiling."""

from __future__ import annotations

import json

import pytest

from tests.support.judge_server import ScriptedJudge, status, text, verdict
from tests.support.outcomes import assert_counts

pytest_plugins = ["pytester"]


@pytest.fixture
def judged(pytester: pytest.Pytester, inner_run: list[str]) -> list[str]:
    """The scripted judge, with a verdict cache inside the inner project."""
    return [*inner_run, "--prop-cache=use", f"--prop-cache-dir={pytester.path / 'verdicts'}"]


def test_soft_claims_are_judged_together_and_all_failures_reported(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, judged: list[str]
) -> None:
    judge_server.on("cats", verdict(False, justification="No cats anywhere."))
    judge_server.on("novel", verdict(False, justification="No novel is written."))
    judge_server.default = verdict(True)
    pytester.makepyfile(
        """
        def test_soft(world, expect_proposition):
            expect_proposition(world, "Oscar mentions cats.")
            expect_proposition(world, "Oscar likes cities.")
            expect_proposition(world, "Oscar writes a novel.")
            BODY_RAN = True
        """
    )
    result = pytester.runpytest(*judged, "--prop-concurrency=4")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*PropositionFailed: 2 of 3 claims checked after the test failed: 'Oscar mentions cats.' "
            "(*.py:2); 'Oscar writes a novel.' (*.py:4)*"
        ]
    )
    out = result.stdout.str()
    assert "No cats anywhere." in out and "No novel is written." in out
    assert len(judge_server.requests) == 3


def test_soft_claims_are_judged_when_the_body_fails(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, judged: list[str]
) -> None:
    judge_server.default = verdict(True)
    pytester.makepyfile(
        """
        def test_soft(world, expect_proposition):
            expect_proposition(world, "Oscar likes cities.")
            assert 1 == 2
        """
    )
    result = pytester.runpytest(*judged)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*assert 1 == 2*",
            "*1 soft claim made before this error was judged too, 0 failed*",
            "PASSED: Oscar likes cities. (True; *:2)",
        ]
    )
    assert len(judge_server.requests) == 1


def test_proposition_markers_stack_and_use_the_named_fixture(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, judged: list[str]
) -> None:
    judge_server.on("calm", verdict(4, justification="Somewhat tense."))
    judge_server.default = verdict(True)
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.proposition("Oscar likes cities.", target="world")
        @pytest.mark.proposition("Oscar is calm.", target="world", min_score=6)
        def test_marked():
            pass

        @pytest.mark.proposition("Oscar likes cities.", target="world", last_n=1)
        def test_marked_ok():
            pass
        """
    )
    result = pytester.runpytest(*judged)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*1 of 2 claims checked after the test failed: 'Oscar is calm.'*"])
    texts = [request.text for request in judge_server.requests]
    assert all("Quiet cities with great architecture." in body for body in texts)


def test_a_module_scoped_fixture_can_assert_claims_filed_under_the_test_using_it(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, judged: list[str]
) -> None:
    judge_server.default = verdict(True)
    pytester.makepyfile(
        """
        import pytest

        @pytest.fixture(scope="module")
        def checked_world(world_once, assert_proposition):
            assert_proposition(world_once, "Oscar talks about cities.")
            return world_once

        @pytest.fixture(scope="module")
        def world_once():
            from pytest_propositions.trace import Agent, World
            oscar = Agent("Oscar")
            room = World("Room", agents=[oscar])
            oscar.says("Quiet cities with great architecture.")
            return room

        def test_first(checked_world, assert_proposition):
            assert_proposition(checked_world, "Oscar is an agent.")

        def test_second(checked_world):
            pass
        """
    )
    result = pytester.runpytest(*judged, "--prop-report=report.json")
    result.assert_outcomes(passed=2)
    report = json.loads((pytester.path / "report.json").read_text())
    tests = sorted(
        (r["test_id"].split("::")[-1], r["verdict"]["claim"]) for r in report["verdicts"]
    )
    # The fixture's claim ran during test_first's setup, so it is filed under test_first.
    assert tests == [
        ("test_first", "Oscar is an agent."),
        ("test_first", "Oscar talks about cities."),
    ]


def test_proposition_markers_count_wherever_pytest_puts_them(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, judged: list[str]
) -> None:
    # The plugin finds marked tests through node keywords first: every way of marking must
    # still reach the judge (one request per marked test, none for the unmarked one).
    judge_server.default = verdict(False, justification="Not in the recording.")
    pytester.makepyfile(
        """
        import pytest

        pytestmark = pytest.mark.proposition("Module-level claim.", target="world")

        def test_module_mark():
            pass
        """
    )
    pytester.makepyfile(
        test_other="""
        import pytest

        @pytest.mark.proposition("Class-level claim.", target="world")
        class TestMarked:
            def test_in_class(self):
                pass

        @pytest.mark.parametrize(
            "n", [1, pytest.param(2, marks=pytest.mark.proposition("Param claim.", target="world"))]
        )
        def test_param(n):
            pass

        @pytest.fixture
        def mark_me(request):
            request.applymarker(pytest.mark.proposition("Applied claim.", target="world"))

        def test_applied(world, mark_me):
            pass
        """
    )
    result = pytester.runpytest(*judged)
    result.assert_outcomes(passed=1, failed=4)
    claims = sorted(
        claim
        for claim in ("Module-level", "Class-level", "Param", "Applied")
        for request in judge_server.requests
        if f"{claim} claim." in request.text
    )
    assert claims == ["Applied", "Class-level", "Module-level", "Param"]


@pytest.mark.parametrize(
    ("marker", "message"),
    [
        ('"x", target="world", tempo=3', "*test_bad*unknown option tempo*"),
        ('"x"', "*test_bad*target= must name a fixture*"),
        (
            '"x", target="world", min_score=10',
            "*test_bad*expected a whole number from 0 to 9, got 10*",
        ),
        ('42, target="world"', "*test_bad*claim must be a non-empty string*"),
    ],
)
def test_a_bad_marker_errors_its_own_test_naming_it(
    pytester: pytest.Pytester, judged: list[str], marker: str, message: str
) -> None:
    # (Issue 42: it used to stop the whole run at collection, a usage error.)
    pytester.makepyfile(
        f"""
        import pytest

        @pytest.mark.proposition({marker})
        def test_bad():
            pass

        def test_good():
            pass
        """
    )
    result = pytester.runpytest(*judged)
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines([message])


def test_unknown_fixture_option_is_a_type_error_at_the_call(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, judged: list[str]
) -> None:
    pytester.makepyfile(
        """
        def test_typo(world, assert_proposition):
            assert_proposition(world, "x", last_m=2)
        """
    )
    result = pytester.runpytest(*judged)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*TypeError: assert_proposition: unknown option last_m (did you mean last_n?)*"]
    )
    assert judge_server.requests == []


def test_proposition_judge_evaluates_without_asserting(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, judged: list[str]
) -> None:
    judge_server.on("dogs", verdict(False))
    judge_server.on("calm", verdict(3))
    pytester.makepyfile(
        """
        def test_judge(world, proposition_judge):
            assert proposition_judge(world, "Oscar mentions dogs.").value is False
            assert proposition_judge(world, "Oscar is calm.", kind="score").value == 3
        """
    )
    pytester.runpytest(*judged).assert_outcomes(passed=1)


def test_samples_take_the_majority_and_each_is_cached_by_index(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, judged: list[str]
) -> None:
    answers = iter([True, False, True])

    def next_answer(_request: object) -> object:
        return verdict(next(answers))

    from tests.support.judge_server import echo_fn

    judge_server.default = echo_fn(next_answer)  # type: ignore[arg-type]
    pytester.makepyfile(
        """
        def test_votes(world, assert_proposition):
            v = assert_proposition(world, "Oscar likes cities.", samples=3)
            assert v.votes == (True, False, True)
        """
    )
    pytester.runpytest(*judged).assert_outcomes(passed=1)
    assert len(judge_server.requests) == 3
    judge_server.clear_requests()
    pytester.runpytest(*judged).assert_outcomes(passed=1)  # all three samples from the cache
    assert judge_server.requests == []


def test_samples_option_and_failed_votes_in_the_message(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, judged: list[str]
) -> None:
    judge_server.default = verdict(5)
    pytester.makepyfile(
        """
        def test_score(world, min_score):
            min_score(world, "Oscar is calm.", 7)
        """
    )
    result = pytester.runpytest(*judged, "--prop-samples=2")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*scored 5/9, below the minimum of 7*votes ?5, 5?*"])
    assert len(judge_server.requests) == 2


def test_dry_run_skips_uncached_claims_and_calls_no_judge(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, judged: list[str]
) -> None:
    pytester.makepyfile(
        """
        def test_a(world, assert_proposition):
            assert_proposition(world, "Oscar likes cities.")

        def test_b(world, expect_proposition):
            expect_proposition(world, "Oscar is an architect.")
        """
    )
    pytester.runpytest(*judged, "-k", "test_a").assert_outcomes(passed=1)  # records test_a
    judge_server.clear_requests()
    result = pytester.runpytest(*judged, "--prop-dry-run", "-rs")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*dry run*Oscar is an architect.*"])
    assert judge_server.requests == []


def test_cost_ceiling_stops_further_live_judging(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, judged: list[str]
) -> None:
    # gpt-4o-mini is priced in litellm's bundled price map, so live verdicts have a cost.
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.parametrize("n", range(3))
        def test_claims(world, assert_proposition, n):
            assert_proposition(world, f"Oscar likes cities ({n}).")
        """
    )
    args = [a for a in judged if not a.startswith("--prop-model")]
    result = pytester.runpytest(
        *args, "--prop-model=openai/gpt-4o-mini", "--prop-max-cost=0.0000001"
    )
    # Issue 50: the next request's estimated cost counts too, so even the first claim (whose
    # estimate alone is over the budget) is refused before anything is sent.
    assert_counts(result, passed=0, judge_errors=3)
    result.stdout.fnmatch_lines(["*BudgetExceeded*estimated cost*--prop-max-cost*"])
    assert judge_server.requests == []


def test_a_live_verdict_carries_litellms_price_or_none_for_an_unpriced_model(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, judged: list[str]
) -> None:
    import litellm

    pytester.makepyfile(
        """
        def test_claim(world, assert_proposition):
            assert_proposition(world, "Oscar likes cities.")
        """
    )
    costs = {}
    for model in ("openai/gpt-4o-mini", "openai/judge-model"):
        args = [a for a in judged if not a.startswith(("--prop-model", "--prop-cache"))]
        result = pytester.runpytest(
            *args, f"--prop-model={model}", "--prop-cache=off", "--prop-report=report.json"
        )
        result.assert_outcomes(passed=1)
        [record] = json.loads((pytester.path / "report.json").read_text())["verdicts"]
        costs[model] = record["verdict"]
    priced = costs["openai/gpt-4o-mini"]
    prompt_cost, completion_cost = litellm.cost_per_token(
        model="gpt-4o-mini",
        prompt_tokens=priced["usage"]["prompt_tokens"],
        completion_tokens=priced["usage"]["completion_tokens"],
    )
    assert priced["cost_usd"] == pytest.approx(prompt_cost + completion_cost)
    assert priced["cost_usd"] > 0
    assert costs["openai/judge-model"]["cost_usd"] is None


def test_unparsable_soft_claim_is_a_judge_error(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, judged: list[str]
) -> None:
    judge_server.default = text("I cannot tell.")
    pytester.makepyfile(
        """
        def test_soft(world, expect_proposition):
            expect_proposition(world, "Oscar likes cities.")
        """
    )
    result = pytester.runpytest(*judged)
    assert_counts(result, judge_errors=1)
    result.stdout.fnmatch_lines(["*VerdictUnparsable*"])
    assert "PropositionFailed" not in result.stdout.str()


def test_server_error_in_marker_claim_is_a_judge_error(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, judged: list[str]
) -> None:
    judge_server.default = status(503, "overloaded")
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.proposition("Oscar likes cities.", target="world")
        def test_marked():
            pass
        """
    )
    result = pytester.runpytest(*judged)
    assert_counts(result, judge_errors=1)
    result.stdout.fnmatch_lines(["*JudgeUnavailable*HTTP 503*"])


def test_progress_line_while_a_slow_claim_is_judged(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, judged: list[str]
) -> None:
    from tests.support.judge_server import delay

    judge_server.on("slow", delay(2.5, verdict(True)))
    pytester.makepyfile(
        """
        def test_slow(world, assert_proposition):
            assert_proposition(world, "Oscar is slow to answer.")

        def test_fast(world, assert_proposition):
            assert_proposition(world, "Oscar is quick.")
        """
    )
    result = pytester.runpytest(*judged, "-k", "test_slow")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["*propositions: judging 1 uncached claim with openai/judge-model, *s so far...*"]
    )
    # That the line waits a moment, and does not show for a quick claim: test_progress.py.


def test_batch_call_judges_together_and_reports_every_failure(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, judged: list[str]
) -> None:
    judge_server.on("calm", verdict(5))
    judge_server.on("dogs", verdict(False, justification="No dogs."))
    judge_server.default = verdict(True)
    pytester.makepyfile(
        """
        def test_batch(world, assert_propositions):
            assert_propositions(world, ["Oscar likes cities.", ("Oscar is calm.", 7), "Oscar has dogs."])

        def test_batch_ok(world, assert_propositions):
            verdicts = assert_propositions(world, ["Oscar likes cities.", ("Oscar is calm.", 5)])
            assert [v.value for v in verdicts] == [True, 5]

        def test_bad_batch(world, assert_propositions):
            assert_propositions(world, "Oscar likes cities.")
        """
    )
    result = pytester.runpytest(*judged)
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(
        ["*2 of 3 claims checked after the test failed: 'Oscar is calm.'; 'Oscar has dogs.'*"]
    )
    result.stdout.fnmatch_lines(
        ["*TypeError: assert_propositions: claims must be a non-empty list*"]
    )


def test_identical_claims_in_flight_share_one_judge_call(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, judged: list[str]
) -> None:
    from tests.support.judge_server import delay

    judge_server.default = delay(1.0, verdict(True))
    pytester.makepyfile(
        """
        def test_same(world, expect_proposition):
            for _ in range(4):
                expect_proposition(world, "Oscar likes cities.")
        """
    )
    result = pytester.runpytest(*judged, "--prop-cache=off")
    result.assert_outcomes(passed=1)
    assert len(judge_server.requests) == 1
    result.stdout.fnmatch_lines(
        ["propositions: 4 claims, 4 passed, 0 failed, 0 judge errors,*1 judge call,*"]
    )


def test_confirm_asks_again_only_when_in_doubt(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, judged: list[str]
) -> None:
    from tests.support.judge_server import sequence

    judge_server.on("wavering", sequence(verdict(False), verdict(True), verdict(True)))
    judge_server.on("borderline", sequence(verdict(6), verdict(4), verdict(5)))
    judge_server.default = verdict(True)
    pytester.makepyfile(
        """
        def test_clear(world, assert_proposition):
            v = assert_proposition(world, "Oscar likes cities.")
            assert v.votes == ()

        def test_wavering(world, assert_proposition):
            v = assert_proposition(world, "Oscar is wavering.")
            assert v.votes == (False, True, True)

        def test_borderline(world, min_score):
            min_score(world, "Oscar is borderline calm.", 6)
        """
    )
    result = pytester.runpytest(*judged, "--prop-confirm=2")
    result.assert_outcomes(passed=2, failed=1)
    # 1 (clear) + 3 (wavering) + 3 (borderline: 6 is within one point of the bar of 6)
    assert len(judge_server.requests) == 7
    result.stdout.fnmatch_lines(["*scored 5/9, below the minimum of 6*votes ?6, 4, 5?*"])
    result.stdout.fnmatch_lines(["  votes: 6, 4, 5"])


def test_ties_between_samples_go_against_a_claim_that_must_not_hold(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, judged: list[str]
) -> None:
    from tests.support.judge_server import sequence

    # Votes [True, False]: the judge cannot make up its mind, so a claim that must not hold
    # has not been shown not to hold; scores 8, 2, 8, 2 likewise do not keep a score low.
    judge_server.on("undecided", sequence(verdict(True), verdict(False)))
    judge_server.on("unsteady", sequence(verdict(8), verdict(2), verdict(8), verdict(2)))
    judge_server.on("wavering", sequence(verdict(True), verdict(False)))
    judge_server.default = verdict(True)
    pytester.makepyfile(
        """
        def test_must_not_hold(world, assert_proposition):
            assert_proposition(world, "Oscar is undecided.", holds=False, samples=2)

        def test_must_stay_low(world, assert_proposition):
            assert_proposition(world, "Oscar is unsteady.", max_score=3, samples=4)

        def test_confirmed_must_not_hold(world, assert_proposition):
            assert_proposition(world, "Oscar is wavering.", holds=False)
        """
    )
    result = pytester.runpytest(*judged, "--prop-confirm=1", "-rf")
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines(["*undecided*votes ?True, False?*"])
    result.stdout.fnmatch_lines(["*scored 8/9, above the maximum of 3*votes ?8, 2, 8, 2?*"])
    result.stdout.fnmatch_lines(["*wavering*votes ?True, False?*"])


def test_confirm_asks_again_for_a_failing_score_far_from_its_bar(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, judged: list[str]
) -> None:
    from tests.support.judge_server import sequence

    judge_server.on("far", sequence(verdict(2), verdict(8), verdict(8)))
    judge_server.on("comfortable", verdict(9))
    pytester.makepyfile(
        """
        def test_far(world, min_score):
            v = min_score(world, "Oscar is far from calm.", 7)
            assert v.votes == (2, 8, 8)

        def test_comfortable(world, min_score):
            v = min_score(world, "Oscar is comfortable.", 7)
            assert v.votes == ()
        """
    )
    result = pytester.runpytest(*judged, "--prop-confirm=2")
    result.assert_outcomes(passed=2)
    # 3 for the failing score 2 (five points below its bar), 1 for the passing 9.
    assert len(judge_server.requests) == 4


def test_concurrency_bounds_the_calls_in_flight(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, judged: list[str]
) -> None:
    import time

    from tests.support.judge_server import delay, echo_fn

    arrivals: list[float] = []

    def slow(_request: object) -> object:
        arrivals.append(time.monotonic())
        return delay(1.0, verdict(True))

    judge_server.default = echo_fn(slow)  # type: ignore[arg-type]
    pytester.makepyfile(
        """
        def test_four(world, expect_proposition):
            for n in range(4):
                expect_proposition(world, f"Oscar likes city number {n}.")
        """
    )
    pytester.runpytest(*judged, "--prop-cache=off", "--prop-concurrency=2").assert_outcomes(
        passed=1
    )
    arrivals.sort()
    assert len(arrivals) == 4
    # Two at a time: the third call can only start once one of the first two has answered.
    assert arrivals[2] - arrivals[0] >= 0.9


def test_proposition_judge_errors_are_counted_as_judge_errors(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, judged: list[str]
) -> None:
    judge_server.default = status(401, "bad key", "invalid_request_error")
    pytester.makepyfile(
        """
        def test_judge(world, proposition_judge):
            proposition_judge(world, "Oscar likes cities.")
        """
    )
    result = pytester.runpytest(*judged)
    assert_counts(result, judge_errors=1)
    result.stdout.fnmatch_lines(["propositions: 1 claim, 0 passed, 0 failed, 1 judge error,*"])


def test_an_unused_plugin_leaves_no_folder_behind(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_plain():\n    assert True\n")
    pytester.runpytest().assert_outcomes(passed=1)
    assert (pytester.path / ".pytest_cache").is_dir()  # pytest's own cache is there...
    assert not (pytester.path / ".pytest_cache" / "d" / "propositions").exists()  # ...ours is not
    assert not (pytester.path / ".propositions").exists()  # (nor in its own place)
