"""Code written for the reference simulation library means the same thing here.

Every public callable of the reference's proposition module is called with positional arguments
in its order; every kind of call its own proposition tests, its ready-made propositions and its
documentation make is made here against objects shaped like its own (tests/support), judged by
the scripted server over real HTTP.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from pytest_propositions import Proposition, check_proposition, compute_score
from pytest_propositions.claims.proposition import PRECONDITION_FALSE_JUSTIFICATION
from pytest_propositions.runtime import Runtime
from pytest_propositions.settings import Settings
from tests.support.active_run import active
from tests.support.judge_server import RecordedRequest, ScriptedJudge, echo_fn, text, verdict
from tests.support.tinytroupe_like import LibraryPerson, LibraryProposition, LibraryWorld

pytest_plugins = ["pytester"]


@pytest.fixture
def judge(judge_server: ScriptedJudge, monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedJudge]:
    monkeypatch.setenv("PROP_API_KEY", "test-key-not-real")
    settings = Settings(
        model="openai/judge-model",
        reasoning_model="openai/deep-judge",
        api_base=judge_server.base_url,
        cache="off",
        retries=0,
    )
    runtime = Runtime(settings)
    with active(runtime):
        yield judge_server


def oscar_after(*exchanges: tuple[str, str]) -> LibraryPerson:
    """Oscar as the reference's ``listen_and_act`` leaves him: each stimulus, then his answer."""
    oscar = LibraryPerson("Oscar", {"occupation": {"title": "Architect"}})
    for heard, said in exchanges:
        oscar.listen(heard)
        oscar.act("TALK", said)
        oscar.act("DONE")
    return oscar


TRAVEL = ("Tell me a bit about your travel preferences.", "I love quiet cities with museums.")
WORK = ("Now let's change subjects. What do you work with?", "I design modular apartments.")


def user_text(request: RecordedRequest) -> str:
    return str(request.messages[1]["content"])


# -- the positional order of every public callable --------------------------------------------


def test_the_signatures_keep_the_reference_librarys_positional_order() -> None:
    def positional(function: Any) -> list[str]:
        return [
            name
            for name, parameter in inspect.signature(function).parameters.items()
            if parameter.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD and name != "self"
        ]

    shortcut = ["target", "claim", "additional_context", "first_n", "last_n"]
    assert positional(check_proposition) == [*shortcut, "return_full_response"]
    assert positional(compute_score) == [*shortcut, "return_full_response"]
    evaluation = ["target", "additional_context", "claim_variables", "return_full_response"]
    for method in (Proposition.check, Proposition.score, Proposition.__call__):
        assert positional(method) == evaluation
    assert positional(Proposition.__init__) == [
        "claim",
        "target",
        "include_personas",
        "first_n",
        "last_n",
        "double_check",
        "use_reasoning_model",
        "precondition_function",
    ]


def test_check_proposition_called_positionally_means_last_n_and_returns_the_verdict(
    judge: ScriptedJudge,
) -> None:
    """The reference's check_proposition(target, claim, context, first_n, last_n): a false claim
    is False (the 4th and 5th slots used to be claim_variables and return_full_response, which
    returned a truthy dict and passed ``assert check_proposition(...)``)."""
    judge.default = verdict(False, justification="He talks about work now.")
    oscar = oscar_after(TRAVEL, WORK)
    result = check_proposition(oscar, "Oscar talks about travel.", "He was asked twice.", None, 3)
    assert result is False
    sent = user_text(judge.requests[0])
    assert "He was asked twice." in sent
    assert "modular apartments" in sent and "museums" not in sent  # the last 3 memories only


def test_every_public_callable_positionally_in_the_reference_order(judge: ScriptedJudge) -> None:
    judge.on("score", verdict(6, justification="Mostly."))
    judge.default = verdict(True, justification="He says so.")
    oscar = oscar_after(TRAVEL, WORK)

    full = check_proposition(oscar, "Oscar mentions travel.", "ctx", 2, None, True)
    assert full["value"] is True and full["justification"] == "He says so."
    assert "museums" in user_text(judge.requests[-1])  # first_n=2: the first exchange
    assert "apartments" not in user_text(judge.requests[-1])
    assert compute_score(oscar, "Oscar mentions travel (score).", "ctx", None, 2, False) == 6
    scored = compute_score(oscar, "Oscar mentions travel (score).", "ctx", None, None, True)
    assert scored["value"] == 6 and scored["justification"] == "Mostly."

    gate = lambda target, additional_context, claim_variables: True  # noqa: E731
    prop = Proposition("{{who}} mentions travel.", None, True, None, 4, False, True, gate)
    assert prop.check(oscar, "ctx", {"who": "Oscar"}, False) is True
    request = judge.requests[-1]
    assert request.model == "deep-judge"  # use_reasoning_model, 7th
    assert "Oscar mentions travel." in user_text(request) and "Architect" in user_text(request)
    assert prop(oscar, "ctx", {"who": "Oscar"}, True)["value"] is True
    assert prop.score(oscar, "score ctx", {"who": "Oscar"}, False) == 6
    copy = prop.copy()
    assert (copy.claim, copy.include_personas, copy.last_n, copy.use_reasoning_model) == (
        prop.claim,
        True,
        4,
        True,
    )
    assert copy.precondition_function is gate and copy.value is None and copy.llm_chat is None


@pytest.mark.parametrize("flag", ["no", "false", 0, 1, None])
def test_a_flag_that_is_not_a_bool_is_a_type_error_naming_it(
    judge: ScriptedJudge, flag: Any
) -> None:
    oscar = oscar_after(TRAVEL)
    with pytest.raises(TypeError, match="return_full_response must be True or False"):
        check_proposition(oscar, "x", None, None, None, flag)
    with pytest.raises(TypeError, match="return_full_response must be True or False"):
        compute_score(oscar, "x", return_full_response=flag)
    with pytest.raises(TypeError, match="return_full_response must be True or False"):
        Proposition("x", oscar).check(None, None, None, flag)
    with pytest.raises(TypeError, match="include_personas must be True or False"):
        Proposition("x", oscar, flag)
    with pytest.raises(TypeError, match="double_check must be True or False"):
        check_proposition(oscar, "x", double_check=flag)
    assert judge.requests == []


def test_options_past_the_reference_order_are_keyword_only() -> None:
    with pytest.raises(TypeError):
        check_proposition("text", "x", None, None, None, False, {"a": 1})  # type: ignore[misc]


# -- what a Proposition holds ------------------------------------------------------------------


def test_a_proposition_has_every_attribute_of_the_reference_librarys(judge: ScriptedJudge) -> None:
    reference = LibraryProposition("x")
    prop = Proposition("Oscar mentions travel.", oscar_after(TRAVEL))
    for name in vars(reference):
        assert hasattr(prop, name), name
    assert (prop.llm_chat, prop.value, prop.justification, prop.recommendations) == (
        None,
        None,
        None,
        None,
    )
    assert (prop.confidence, prop.reasoning, prop.full_evaluation_response) == (None, None, None)
    assert (prop.MIN_SCORE, prop.MAX_SCORE) == (0, 9)

    judge.on("advise", text("Let him name a city."))
    judge.on("Why", text("Because he names museums."))
    judge.default = verdict(True, justification="He names museums.", confidence=0.8)
    assert prop.check() is True
    assert (prop.value, prop.justification, prop.confidence) == (True, "He names museums.", 0.8)
    assert prop.reasoning == "Scripted reasoning."
    assert prop.full_evaluation_response == {
        "value": True,
        "justification": "He names museums.",
        "confidence": 0.8,
        "reasoning": "Scripted reasoning.",
    }
    chat = prop.llm_chat
    assert chat is not None
    assert [m["role"] for m in chat.messages] == ["system", "user", "assistant"]
    assert json.loads(chat.messages[2]["content"])["value"] is True
    assert chat.response_value is True and chat.response_justification == "He names museums."
    # Usable for follow-ups: the conversation goes to the judge, and the answer joins it.
    assert chat.add_user_message("Why do you say so?")() == "Because he names museums."
    assert [m["role"] for m in judge.requests[-1].messages] == [
        "system",
        "user",
        "assistant",
        "user",
    ]
    assert chat.messages[-1] == {"role": "assistant", "content": "Because he names museums."}
    assert prop.recommendations_for_improvement() == "Let him name a city."
    assert prop.recommendations == "Let him name a city."

    fresh = prop.copy()
    for name in (
        "llm_chat",
        "value",
        "justification",
        "confidence",
        "reasoning",
        "recommendations",
    ):
        assert getattr(fresh, name) is None, name
    assert fresh.full_evaluation_response is None


# -- preconditions -----------------------------------------------------------------------------


def reference_action_gate(kinds: list[str]) -> Any:
    """Shaped like the reference's ready-made precondition: it returns from inside its loop over
    the actions, so an empty list of actions returns None."""

    def precondition(target: Any, additional_context: Any, claim_variables: dict[str, Any]) -> Any:
        actions = claim_variables.get("action")
        if not isinstance(actions, list):
            actions = [actions]
        for action in actions:
            return action.get("type") in kinds
        return None

    return precondition


def test_a_precondition_returning_none_evaluates_the_claim_normally(judge: ScriptedJudge) -> None:
    judge.default = verdict(False, justification="Not fluent.")
    prop = Proposition(
        "{{action}} is fluent.", precondition_function=reference_action_gate(["TALK"])
    )
    assert prop.check(oscar_after(TRAVEL), claim_variables={"action": []}) is False
    assert len(judge.requests) == 1 and prop.justification == "Not fluent."


def test_a_false_precondition_holds_trivially_without_rendering_the_claim(
    judge: ScriptedJudge,
) -> None:
    gate = reference_action_gate(["TALK"])
    prop = Proposition("{{action}} stays in {{persona}}.", precondition_function=gate)
    think = {"action": {"type": "THINK", "content": "hmm"}}  # no "persona" variable needed
    assert prop.check(oscar_after(TRAVEL), claim_variables=think) is True
    full = prop.score(oscar_after(TRAVEL), None, think, True)
    assert full["value"] == Proposition.MAX_SCORE
    assert full["justification"] == PRECONDITION_FALSE_JUSTIFICATION
    assert prop.confidence == 1.0 and prop.llm_chat is None
    assert judge.requests == []
    with pytest.raises(ValueError, match="nothing to recommend yet"):
        prop.recommendations_for_improvement()


@pytest.mark.parametrize(("returned", "shown"), [(0, "int 0"), ("", "str ''"), ([], "list []")])
def test_a_precondition_of_another_type_is_a_type_error_saying_what_is_accepted(
    judge: ScriptedJudge, returned: Any, shown: str
) -> None:
    prop = Proposition("Oscar talks.", precondition_function=lambda **_: returned)
    with pytest.raises(TypeError) as info:
        prop.check(oscar_after(TRAVEL))
    message = str(info.value)
    assert f"returned {shown}" in message
    assert (
        "must return True (judge the claim), False (the claim holds trivially) or None" in message
    )
    assert "stricter than the reference library" in message
    assert judge.requests == []


# -- windows of 0 ------------------------------------------------------------------------------


def test_windows_of_zero_reach_a_library_object_and_mean_what_they_mean_there(
    judge: ScriptedJudge,
) -> None:
    oscar = oscar_after(TRAVEL, WORK)
    check_proposition(oscar, "Oscar talks.", None, 0)  # memory[:0]: nothing from the start
    assert "museums" not in user_text(judge.requests[-1])
    assert "apartments" not in user_text(judge.requests[-1])
    check_proposition(oscar, "Oscar talks.", None, None, 0)  # memory[-0:]: everything
    assert "museums" in user_text(judge.requests[-1])
    assert "apartments" in user_text(judge.requests[-1])


# -- the reference's own proposition tests, call for call ----------------------------------------


def test_the_calls_of_the_reference_librarys_proposition_tests(judge: ScriptedJudge) -> None:
    judge.on("writes a novel", verdict(False))
    judge.on("porto wine", verdict(False))
    judge.on(
        lambda r: (
            "Oscar talks about his travel preferences" in user_text(r)
            and "modular apartments" in user_text(r)
        ),
        verdict(False, justification="He changed subjects."),
    )
    judge.default = verdict(True, justification="He does.")
    oscar = oscar_after(TRAVEL)

    assert Proposition(claim="Oscar mentions his travel preferences.").check(target=oscar) == True  # noqa: E712
    novel = "Oscar writes a novel about how cats are better than dogs."
    assert Proposition(claim=novel).check(target=oscar) == False  # noqa: E712

    at_points = Proposition(
        target=oscar, claim="Oscar talks about his travel preferences", last_n=3
    )
    assert at_points.check() == True  # noqa: E712
    assert len(at_points.justification) > 0 and at_points.confidence >= 0.0
    oscar.listen(WORK[0])
    oscar.act("TALK", WORK[1])
    assert at_points.check() == False  # noqa: E712

    lisa = LibraryPerson("Lisa")
    lisa.listen("Discuss the comparative advantages of dogs and cats.")
    lisa.act("TALK", "Cats are independent; dogs are loyal.")
    world = LibraryWorld("Focus group", [lisa])
    assert Proposition(target=world, claim="There's a discussion about dogs and cats.").check()
    assert not Proposition(target=world, claim="A discussion of porto wine.").check()
    both = Proposition(target=[oscar_after(TRAVEL), lisa], claim="Oscar and Lisa talk.")
    assert both.check() == True  # noqa: E712
    assert "Oscar" in user_text(judge.requests[-1]) and "Lisa" in user_text(judge.requests[-1])

    oscar = oscar_after(TRAVEL)
    assert check_proposition(target=oscar, claim="Oscar mentions his travel preferences.") == True  # noqa: E712
    assert check_proposition(oscar, novel) == False  # noqa: E712
    assert check_proposition(oscar, "Oscar is talking about travel.", last_n=10)


def test_the_calls_of_the_reference_librarys_validation_and_steering(judge: ScriptedJudge) -> None:
    def by_kind(request: RecordedRequest) -> Any:
        schema = json.dumps(request.response_format or {})
        return verdict(7 if '"integer"' in schema else True, justification="Consistent.")

    judge.default = echo_fn(by_kind)
    oscar = oscar_after(TRAVEL)
    persona_adherence = LibraryProposition("Adheres to the persona.", include_personas=True)
    fluency = LibraryProposition(
        "{{action}} is fluent.",
        first_n=5,
        last_n=10,
        precondition_function=reference_action_gate(["TALK", "THINK"]),
    )
    # Its action generator: score(target=..., claim_variables=..., return_full_response=True).
    action = {"type": "TALK", "content": "I love museums."}
    result = Proposition(fluency.copy()).score(
        target=oscar, claim_variables={"action": action}, return_full_response=True
    )
    assert result["value"] >= 5 and result["justification"]
    assert json.dumps(action, sort_keys=True) in user_text(judge.requests[-1])
    # Its notebooks score ready-made propositions per agent, and its parallel helpers run
    # p.check() / p.score(world, return_full_response=True) in threads.
    props = [Proposition(persona_adherence), Proposition("Oscar is calm.", oscar)]
    with ThreadPoolExecutor(max_workers=2) as pool:
        scores = list(pool.map(lambda p: p.score(oscar if p.targets is None else None), props))
        checks = list(
            pool.map(
                lambda p: p.check(
                    oscar if p.targets is None else None, additional_context="Some context"
                ),
                props,
            )
        )
    assert scores == [7, 7] and checks == [True, True]
    assert compute_score(oscar, persona_adherence)  # ready-made objects in the shortcuts too


# -- results-extraction outputs ----------------------------------------------------------------


def test_extraction_results_are_targets(judge: ScriptedJudge) -> None:
    results = [{"name": "Oscar", "likes": ["museums"]}, {"name": "Lisa", "likes": ["cats"]}]
    assert check_proposition(results, "Lisa likes cats.") is True
    sent = user_text(judge.requests[-1])
    assert "name: Lisa" in sent and "  - cats" in sent and '"role"' not in sent


# -- per-claim timestamps ----------------------------------------------------------------------


def test_the_clock_rendering_is_chosen_per_claim(judge: ScriptedJudge) -> None:
    oscar = LibraryPerson("Oscar")
    world = LibraryWorld("Room", [oscar])
    oscar.listen("Hello")
    world.advance()
    oscar.act("TALK", "Hi there")
    Proposition("Oscar greets.", world).check()
    assert "Date and time of events: +0:05:00" in user_text(judge.requests[-1])
    Proposition("Oscar greets.", world, timestamps="none").check()
    assert "Date and time of events" not in user_text(judge.requests[-1])
    check_proposition(world, "Oscar greets.", timestamps="absolute")
    assert world.current_datetime.isoformat() in user_text(judge.requests[-1])
    with pytest.raises(ValueError, match="timestamps must be one of relative, absolute, none"):
        Proposition("x", world, timestamps="utc")


# -- claims that must not hold, through pytest ---------------------------------------------------


NOT_HOLDING = """
import pytest

def test_check(world, assert_proposition):
    assert_proposition(world, "Oscar hates cities.", holds=False)

def test_score(world, assert_proposition):
    assert_proposition(world, "Oscar is rude.", max_score=3)

def test_soft(world, expect_proposition):
    expect_proposition(world, "Oscar hates cities.", holds=False)
    expect_proposition(world, "Oscar is rude.", max_score=3)

def test_batch(world, assert_propositions):
    assert_propositions(world, [
        {"claim": "Oscar hates cities.", "holds": False},
        {"claim": "Oscar is rude.", "max_score": 3},
        ("Oscar likes cities.", None),
    ])

@pytest.mark.proposition("Oscar hates cities.", target="world", holds=False)
@pytest.mark.proposition("Oscar is rude.", target="world", max_score=3, timestamps="none")
def test_marker(world):
    pass
"""


def script_not_holding(judge_server: ScriptedJudge, hates: bool, rude: int) -> None:
    judge_server.reset()
    judge_server.on("hates cities", verdict(hates, justification=f"Hates cities: {hates}."))
    judge_server.on("is rude", verdict(rude, justification=f"Rudeness {rude}."))
    judge_server.default = verdict(True)


def test_claims_that_must_not_hold_pass_when_the_judge_says_they_do_not(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, inner_run: list[str]
) -> None:
    pytester.makepyfile(NOT_HOLDING)
    script_not_holding(judge_server, hates=False, rude=2)
    result = pytester.runpytest(*inner_run)
    result.assert_outcomes(passed=5)


def test_claims_that_must_not_hold_fail_with_the_judges_justification_and_replay(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, inner_run: list[str]
) -> None:
    pytester.makepyfile(NOT_HOLDING)
    script_not_holding(judge_server, hates=True, rude=4)
    cached = [a for a in inner_run if a != "--prop-cache=off"]
    cached.append(f"--prop-cache-dir={pytester.path / 'verdicts'}")
    result = pytester.runpytest(*cached)
    result.assert_outcomes(failed=5)
    result.stdout.fnmatch_lines(
        [
            "*PropositionFailed: claim 'Oscar hates cities.' judged True; expected the claim not "
            "to hold*the judge: 'Hates cities: True.'*",
            "*PropositionFailed: claim 'Oscar is rude.' scored 4/9, above the maximum of 3; "
            "expected the claim not to hold*",
            "*verdict: True (expected the claim not to hold)*",
            "*score: 4/9 (maximum 3: expected the claim not to hold)*",
        ]
    )
    judged = len(judge_server.requests)
    # Replayed like any claim: the same verdicts from the cache, no judge call, same outcomes.
    replay = [a for a in cached if a != "--prop-cache=use"] + ["--prop-cache=replay"]
    again = pytester.runpytest(*replay)
    again.assert_outcomes(failed=5)
    assert len(judge_server.requests) == judged
    again.stdout.fnmatch_lines(["*expected the claim not to hold*"])


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            'assert_proposition(world, "x", holds="no")',
            "*TypeError: assert_proposition: holds must be True or False, got str 'no'*",
        ),
        (
            'assert_proposition(world, "x", holds=False, min_score=3)',
            "*TypeError: assert_proposition: holds=False with min_score is ambiguous*max_score=N*",
        ),
        (
            'assert_proposition(world, "x", min_score=3, max_score=5)',
            "*TypeError: assert_proposition: give min_score*or max_score*not both*",
        ),
        (
            'assert_propositions(world, [{"claim": "x", "holds": False, "last_n": 2}])',
            "*TypeError: assert_propositions: item #0: unknown key last_n; accepted: claim, "
            "min_score, max_score, holds (options go to assert_propositions itself)*",
        ),
        (
            'assert_proposition(world, "x", max_score=10)',
            "*ValueError: assert_proposition max_score: expected a whole number from 0 to 9*",
        ),
    ],
)
def test_a_wrong_expectation_is_an_error_at_its_line(
    pytester: pytest.Pytester,
    judge_server: ScriptedJudge,
    inner_run: list[str],
    call: str,
    message: str,
) -> None:
    pytester.makepyfile(
        f"""
        def test_bad(world, assert_proposition, assert_propositions):
            {call}
        """
    )
    result = pytester.runpytest(*inner_run)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([message])
    assert judge_server.requests == []


def test_a_false_precondition_needs_no_variables_in_fixtures_and_markers_either(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, inner_run: list[str]
) -> None:
    pytester.makepyfile(
        """
        import pytest

        def never(target, additional_context, claim_variables):
            return False

        @pytest.mark.proposition("{{action}} is fluent.", target="world", precondition=never)
        def test_marker(world, assert_proposition, expect_proposition):
            assert_proposition(world, "{{action}} is fluent.", precondition=never)
            expect_proposition(world, "{{action}} is fluent.", min_score=8, precondition=never)
        """
    )
    result = pytester.runpytest(*inner_run)
    result.assert_outcomes(passed=1)
    assert judge_server.requests == []
