"""Bad markers and unknown claim options (issue 42, items 5 and 9): each bad marker errors its
own test with every problem it has, the other tests run, and no traceback goes through the
plugin; an unknown option lists every accepted name and suggests the closest."""

from __future__ import annotations

import inspect

import pytest

from pytest_propositions.claims.expectation import EXPECTATION_NAMES, Expectation
from pytest_propositions.claims.options import OPTION_NAMES, RUNS_OPTION_NAMES, ClaimOptions
from pytest_propositions.claims.proposition import check_proposition, compute_score
from tests.support.judge_server import ScriptedJudge, verdict

pytest_plugins = ["pytester"]


def _no_plugin_frames(output: str) -> None:
    assert "pytest_propositions/" not in output
    assert "Traceback" not in output


# -- item 9: a bad marker errors its own test ----------------------------------------------------


def test_a_bad_marker_errors_its_test_with_every_problem_and_the_others_run(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, inner_run: list[str]
) -> None:
    judge_server.default = verdict(True)
    pytester.makepyfile(
        test_marks="""
        import pytest

        @pytest.mark.proposition(
            "x", "y", target=3, tempo=1, double_check="no", min_score=10, last_n=-1
        )
        def test_bad():
            BODY_RAN = 1 / 0

        @pytest.mark.proposition("Oscar likes cities.", target="world")
        def test_good_marker():
            pass

        def test_plain():
            pass
        """
    )
    result = pytester.runpytest(*inner_run, "-p", "no:randomly")
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at setup of test_bad*",
            "test_marks.py::test_bad: @pytest.mark.proposition has 6 problems:",
            "  - takes one positional argument, the claim, got 2; pass target= and options by name",
            "  - target= must name a fixture (a string such as target='world'), got 3",
            "  - min_score: expected a whole number from 0 to 9, got 10",
            "  - unknown option tempo; accepted: claim, target, min_score, max_score, holds; *",
            "  - double_check must be True or False, got str 'no'*",
            "  - last_n must be a whole number of at least 0, or None, got -1*",
        ]
    )
    out = result.stdout.str()
    assert "BODY_RAN" not in out  # the bad test's body never ran
    _no_plugin_frames(out)
    # The good marker's claim was judged: only the bad marker's test stopped.
    assert [r for r in judge_server.requests if "Oscar likes cities." in r.text]


def test_every_bad_marker_of_a_test_is_reported_and_the_judge_is_not_asked(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, inner_run: list[str]
) -> None:
    pytester.makepyfile(
        test_marks="""
        import pytest

        @pytest.mark.min_score("high")
        @pytest.mark.proposition("Oscar likes cities.", target="world", hold=False)
        @pytest.mark.proposition("{{who}} likes cities.", target="world", max_scor=3)
        def test_bad(world, min_score):
            pass
        """
    )
    result = pytester.runpytest(*inner_run)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "test_marks.py::test_bad: @pytest.mark.proposition has 2 problems:",
            "  - unknown option max_scor (did you mean max_score?); *",
            "  - the claim uses the variable {{who}} but claim_variables has no value for it*",
            "test_marks.py::test_bad: @pytest.mark.proposition: unknown option hold "
            "(did you mean holds?); *",
            "test_marks.py::test_bad: @pytest.mark.min_score: expected a whole number from 0 to 9, "
            "got 'high'",
        ]
    )
    _no_plugin_frames(result.stdout.str())
    assert judge_server.requests == []


@pytest.mark.parametrize(
    ("mark", "expected"),
    [
        ('"high"', "*@pytest.mark.min_score: expected a whole number from 0 to 9, got 'high'"),
        (
            "7, 8",
            "*@pytest.mark.min_score takes exactly one argument, the minimum score (a whole "
            "number from 0 to 9), got args=(7, 8) kwargs={}",
        ),
    ],
)
def test_a_bad_min_score_mark_errors_its_test_without_a_plugin_traceback(
    pytester: pytest.Pytester, inner_run: list[str], mark: str, expected: str
) -> None:
    pytester.makepyfile(
        test_marks=f"""
        import pytest

        @pytest.mark.min_score({mark})
        def test_bad(world, min_score):
            min_score(world, "Oscar is calm.")

        @pytest.mark.min_score({mark})
        def test_bad_without_the_fixture():
            pass

        def test_plain():
            pass
        """
    )
    result = pytester.runpytest(*inner_run)
    result.assert_outcomes(passed=1, errors=2)
    result.stdout.fnmatch_lines([f"test_marks.py::test_bad: {expected.lstrip('*')}"])
    _no_plugin_frames(result.stdout.str())


def test_a_bad_marker_applied_while_the_test_runs_fails_it_with_the_problem(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, inner_run: list[str]
) -> None:
    pytester.makepyfile(
        test_marks="""
        import pytest

        @pytest.fixture
        def mark_me(request):
            request.applymarker(pytest.mark.proposition("x", target="world", samples=0))

        @pytest.fixture
        def min_mark(request):
            request.applymarker(pytest.mark.min_score(12))

        def test_applied(world, mark_me):
            pass

        def test_applied_min_score(min_mark, min_score):
            pass

        @pytest.fixture
        def mark_unrequested(request):
            request.applymarker(pytest.mark.proposition("x", target="world"))

        def test_applied_unrequested(mark_unrequested):
            pass
        """
    )
    result = pytester.runpytest(*inner_run)
    result.assert_outcomes(failed=2, errors=1)
    result.stdout.fnmatch_lines_random(
        [
            "test_marks.py::test_applied: @pytest.mark.proposition: samples must be a whole "
            "number of at least 1, or None, got 0",
            "test_marks.py::test_applied_unrequested: @pytest.mark.proposition: target 'world' "
            "is not a fixture this test requests; *",
            "test_marks.py::test_applied_min_score: @pytest.mark.min_score: expected a whole "
            "number from 0 to 9, got 12",
        ]
    )
    _no_plugin_frames(result.stdout.str())
    assert judge_server.requests == []


# -- item 5: an unknown option lists every accepted name and suggests the closest -----------------


@pytest.mark.parametrize(
    ("given", "takes", "suggested"),
    [
        ("hold", EXPECTATION_NAMES, "holds"),
        ("min_scor", EXPECTATION_NAMES, "min_score"),
        ("max_scroe", EXPECTATION_NAMES, "max_score"),
        # The min_score fixture's bar is `threshold`; elsewhere it is min_score.
        ("treshold", EXPECTATION_NAMES, "min_score"),
        ("treshold", ("threshold",), "threshold"),
        ("min_score", ("threshold",), "threshold"),
        ("last_m", (), "last_n"),
        ("at_lest", (), "at_least"),
        ("claim_variable", (), "claim_variables"),
    ],
)
def test_an_unknown_option_suggests_the_closest_accepted_name(
    given: str, takes: tuple[str, ...], suggested: str
) -> None:
    with pytest.raises(TypeError) as raised:
        ClaimOptions.parse({given: 7}, "assert_proposition", takes=takes)
    message = str(raised.value)
    assert message.startswith(
        f"assert_proposition: unknown option {given} (did you mean {suggested}?); accepted: "
    )


def test_an_unknown_option_lists_every_accepted_name() -> None:
    with pytest.raises(TypeError) as raised:
        ClaimOptions.parse({"tempo": 1, "hold": False}, "where", takes=EXPECTATION_NAMES)
    message = str(raised.value)
    assert message.startswith("where: unknown options hold (did you mean holds?), tempo; ")
    accepted = message.split("accepted: ", 1)[1]
    # Built from ClaimOptions' fields, the runs keywords and the call's own names: a new option
    # is listed without anyone editing the message.
    names = {
        name.strip() for part in accepted.split(";") for name in part.split(":")[-1].split(",")
    }
    assert names == set(OPTION_NAMES) | set(RUNS_OPTION_NAMES) | set(EXPECTATION_NAMES)
    assert "holds" in OPTION_NAMES | set(EXPECTATION_NAMES)


def test_the_expectation_names_are_those_expectation_parse_takes() -> None:
    parameters = list(inspect.signature(Expectation.parse).parameters)
    assert tuple(parameters[:-1]) == EXPECTATION_NAMES  # then `where`


def test_no_suggestion_when_nothing_is_close() -> None:
    with pytest.raises(TypeError, match=r"^unknown option tempo; accepted: claim options: "):
        ClaimOptions.parse({"tempo": 1}, None)


@pytest.mark.parametrize("function", [check_proposition, compute_score])
def test_check_proposition_names_itself_and_suggests(function: object) -> None:
    name = function.__name__  # type: ignore[attr-defined]
    with pytest.raises(TypeError) as raised:
        function("Oscar talks.", "a claim", lastn=2)  # type: ignore[operator]
    message = str(raised.value)
    assert message.startswith(f"{name}: unknown option lastn (did you mean last_n?); accepted: ")
    assert "_in_one_call" not in message
    for parameter in ("target", "claim", "first_n", "precondition_function", "timestamps"):
        assert parameter in message


def test_fixtures_and_soft_claims_list_their_own_names(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, inner_run: list[str]
) -> None:
    pytester.makepyfile(
        test_typos="""
        def test_assert(world, assert_proposition):
            assert_proposition(world, "x", hold=False)

        def test_soft(world, expect_proposition):
            expect_proposition(world, "x", min_scor=7)

        def test_min_score(world, min_score):
            min_score(world, "x", treshold=7)

        def test_judge(world, proposition_judge):
            proposition_judge(world, "x", knd="score")
        """
    )
    result = pytester.runpytest(*inner_run)
    result.assert_outcomes(failed=4)
    result.stdout.fnmatch_lines_random(
        [
            "*TypeError: assert_proposition: unknown option hold (did you mean holds?); "
            "accepted: min_score, max_score, holds; claim options: *",
            "*TypeError: expect_proposition: unknown option min_scor (did you mean min_score?); "
            "accepted: min_score, max_score, holds; claim options: *",
            "*TypeError: min_score: unknown option treshold (did you mean threshold?); "
            "accepted: threshold; claim options: *",
            "*TypeError: proposition_judge: unknown option knd (did you mean kind?); "
            "accepted: kind; claim options: *",
        ]
    )
    assert judge_server.requests == []


def test_a_batch_item_with_an_unknown_key_suggests_the_closest() -> None:
    from pytest_propositions.markers import batch_items

    with pytest.raises(TypeError) as raised:
        batch_items([{"claim": "x", "hold": False}])
    assert str(raised.value) == (
        "assert_propositions: item #0: unknown key hold (did you mean holds?); accepted: claim, "
        "min_score, max_score, holds (options go to assert_propositions itself)"
    )
