"""A claim made once (issue 49): every entry point turns what the user gave into a ``MadeClaim``
with one call that reads its options once, checks its rule once and lists every problem at once;
and the small rules a claim's checks share, each with one home that every caller goes through."""

from __future__ import annotations

import ast
import inspect
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_propositions import assertions, markers
from pytest_propositions.assertions import MadeClaim, make_claim, read_claim, with_rule
from pytest_propositions.checks import at_site, closest_name
from pytest_propositions.claims.expectation import Expectation, check_threshold
from pytest_propositions.claims.options import (
    REFERENCE_OPTIONS,
    RUNS_MODES,
    RUNS_OPTION_NAMES,
    ClaimOptions,
    claim_and_options,
    refuse_unknown_names,
    unknown_names_error,
)
from pytest_propositions.claims.proposition import Proposition, check_proposition, compute_score
from pytest_propositions.session import unknown_ini_keys
from pytest_propositions.settings import OPTIONS, Settings
from tests.support.judge_server import ScriptedJudge, verdict

pytest_plugins = ["pytester"]

PACKAGE = Path(__file__).resolve().parent.parent / "pytest_propositions"
TARGET = "Oscar says hello."


# -- one read, one rule ------------------------------------------------------------------------


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How often the options are read and a rule is checked, whoever asks."""
    counts = {"read": 0, "rule_of": 0}
    read, rule_of = ClaimOptions.read.__func__, assertions.rule_of  # type: ignore[attr-defined]

    def counting_read(cls: type[ClaimOptions], *args: Any, **kwargs: Any) -> Any:
        counts["read"] += 1
        return read(cls, *args, **kwargs)

    def counting_rule_of(*args: Any, **kwargs: Any) -> Any:
        counts["rule_of"] += 1
        return rule_of(*args, **kwargs)

    monkeypatch.setattr(ClaimOptions, "read", classmethod(counting_read))
    monkeypatch.setattr(assertions, "rule_of", counting_rule_of)
    return counts


class _Item:
    """What the marker code reads of a collected test."""

    nodeid = "test_x.py::test_marked"

    def __init__(self, *marks: pytest.MarkDecorator) -> None:
        self.marks = [mark.mark for mark in marks]
        self.stash = pytest.Stash()
        self.fixturenames = ["world"]
        self.funcargs = {"world": TARGET}

    def iter_markers(self, name: str) -> Iterator[pytest.Mark]:
        return iter(mark for mark in self.marks if mark.name == name)

    def get_closest_marker(self, name: str) -> pytest.Mark | None:
        return next(self.iter_markers(name), None)


def test_a_marker_reads_its_options_once_and_checks_its_rule_once(
    counted: dict[str, int],
) -> None:
    item = _Item(pytest.mark.proposition("Oscar greets.", target="world", last_n=3, min_score=6))
    markers.check_collected(SimpleNamespace(), [item])  # type: ignore[arg-type]
    (pending,) = markers.pending_for(item)  # type: ignore[arg-type]
    assert counted == {"read": 1, "rule_of": 0}  # read at collection, not again after the body
    assert pending.made.options.last_n == 3 and pending.made.expectation == Expectation(6)
    # Its target is the fixture's value, known now: the rule is checked when judged, once.
    judged = with_rule(pending.made, runtime=None)  # type: ignore[arg-type]
    assert with_rule(judged, runtime=None) is judged  # type: ignore[arg-type]
    assert counted == {"read": 1, "rule_of": 1}
    assert judged.target == TARGET and judged.rule is None


def test_a_run_reads_each_claim_once_and_checks_each_rule_once(
    pytester: pytest.Pytester,
    judge_server: ScriptedJudge,
    inner_run: list[str],
    counted: dict[str, int],
) -> None:
    # Through the plugin: collection, the body, the judging after it.
    judge_server.default = verdict(True)
    pytester.makepyfile(
        test_marks="""
        import pytest

        @pytest.mark.proposition("Oscar likes cities.", target="world", last_n=3)
        def test_marked(world, expect_proposition, assert_proposition):
            expect_proposition(world, "Oscar waves.", last_n=2)
            assert_proposition(world, "Oscar talks.", first_n=1)
        """
    )
    result = pytester.runpytest(*inner_run, "-p", "no:randomly")
    result.assert_outcomes(passed=1)
    assert len(judge_server.requests) == 3
    assert counted == {"read": 3, "rule_of": 3}


def test_a_marker_applied_while_the_test_runs_is_read_then(counted: dict[str, int]) -> None:
    item = _Item(pytest.mark.proposition("Oscar greets.", target="world"))
    markers.check_collected(SimpleNamespace(), [item])  # type: ignore[arg-type]
    item.marks.append(pytest.mark.proposition("Oscar waves.", target="world").mark)
    assert [p.made.text for p in markers.pending_for(item)] == ["Oscar greets.", "Oscar waves."]  # type: ignore[arg-type]
    assert counted["read"] == 2


@pytest.mark.parametrize(
    "make",
    [
        lambda: markers.soft_claim(TARGET, "Oscar greets.", {"last_n": 2}, None).made,
        lambda: make_claim(TARGET, "Oscar greets.", {"last_n": 2}, "assert_proposition"),
        lambda: make_claim(TARGET, Proposition("Oscar greets.", last_n=2), {}, "min_score"),
    ],
    ids=["soft claim", "a call", "a Proposition"],
)
def test_a_claim_made_by_a_call_is_read_once_and_its_rule_checked_once(
    counted: dict[str, int], make: Callable[[], MadeClaim]
) -> None:
    made = make()
    assert made.options.last_n == 2 and made.rule_checked
    reads = counted["read"]
    assert with_rule(made, runtime=None) is made  # type: ignore[arg-type]  # judging asks nothing again
    assert counted == {"read": reads, "rule_of": 1}


def test_every_problem_of_a_claim_is_listed_at_once() -> None:
    with pytest.raises(ValueError) as raised:
        make_claim(
            TARGET,
            "{{who}} greets.",
            {"hold": False, "first_n": -1, "double_check": "no"},
            "assert_proposition",
            expectation={"max_score": 10},
            takes=("holds",),
            up_front=True,
        )
    lines = str(raised.value).splitlines()
    assert lines[0] == "assert_proposition has 5 problems:"
    assert (
        lines[1] == "  - assert_proposition max_score: expected a whole number from 0 to 9, got 10"
    )
    assert lines[2].startswith("  - assert_proposition: unknown option hold (did you mean holds?)")
    assert lines[3].startswith("  - assert_proposition: first_n must be a whole number")
    assert lines[4].startswith("  - assert_proposition: double_check must be True or False")
    assert lines[5].startswith("  - assert_proposition: the claim uses the variable {{who}}")


def test_one_problem_is_the_same_error_as_ever() -> None:
    with pytest.raises(TypeError) as raised:
        make_claim(TARGET, "Oscar greets.", {"hold": False}, "where", takes=("holds",))
    assert str(raised.value).startswith("where: unknown option hold (did you mean holds?); ")
    made, problems = read_claim(TARGET, "Oscar greets.", {}, "where")
    assert problems == [] and made == MadeClaim(TARGET, "Oscar greets.", ClaimOptions())


# -- the "where:" of a call-site error ---------------------------------------------------------

_SITE = "SITE"

# Every check that leads its errors with the call site, with an input it refuses: given a site,
# each message must be at_site's prefix and then the message it gives without one.
_LED_BY_SITE: list[tuple[str, Callable[[str | None], object]]] = [
    ("ClaimOptions.parse", lambda where: ClaimOptions.parse({"first_n": -1}, where)),
    ("refuse_unknown_names", lambda where: refuse_unknown_names(["x"], ["y"], where or "")),
    ("Expectation.parse", lambda where: Expectation.parse(3, 4, True, where)),
    ("make_claim", lambda where: make_claim(TARGET, 42, {}, where or "")),
    ("check_rule", lambda where: _check_rule({"at_least": 0.5}, where)),
    ("check_threshold", lambda where: check_threshold(10, where or "")),
]


def _check_rule(options: dict[str, Any], where: str | None) -> object:
    from pytest_propositions.over_runs.rule import check_rule

    return check_rule(TARGET, options, Expectation(), None, where)


def _message(call: Callable[[str | None], object], where: str | None) -> str:
    with pytest.raises((TypeError, ValueError)) as raised:
        call(where)
    return str(raised.value)


@pytest.mark.parametrize(("name", "call"), _LED_BY_SITE, ids=[n for n, _ in _LED_BY_SITE])
def test_every_call_site_error_is_led_by_the_one_prefix(
    name: str, call: Callable[[str | None], object]
) -> None:
    assert _message(call, _SITE) == at_site(_SITE) + _message(call, None)


# The modules that report what a call site gave: none builds the prefix itself.
_CALL_SITE_MODULES = (
    "assertions.py",
    "markers.py",
    "session.py",
    "plugin.py",
    "claims/options.py",
    "claims/expectation.py",
    "claims/proposition.py",
    "over_runs/rule.py",
)


def _builds_a_prefix(node: ast.JoinedStr) -> bool:
    """An f-string starting ``{where}: `` or ``{at}``-like: a second home of the prefix."""
    values = node.values
    return (
        len(values) >= 2
        and isinstance(values[0], ast.FormattedValue)
        and isinstance(values[0].value, ast.Name)
        and values[0].value.id in ("where", "origin")
        and isinstance(values[1], ast.Constant)
        and str(values[1].value).startswith(": ")
    )


@pytest.mark.parametrize("module", _CALL_SITE_MODULES)
def test_no_second_home_builds_the_call_site_prefix(module: str) -> None:
    tree = ast.parse((PACKAGE / module).read_text(encoding="utf-8"))
    found = [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.JoinedStr) and _builds_a_prefix(node)
    ]
    assert found == [], (module, found)


def test_the_prefix_finder_finds_a_prefix() -> None:
    node = ast.parse('f"{where}: bad"', mode="eval").body
    assert isinstance(node, ast.JoinedStr) and _builds_a_prefix(node)


# -- the keywords of a claim over runs ---------------------------------------------------------


@pytest.mark.parametrize("name", sorted(RUNS_OPTION_NAMES))
def test_every_runs_keyword_the_options_set_apart_is_one_the_rule_reads(name: str) -> None:
    from pytest_propositions.over_runs.rule import check_rule
    from pytest_propositions.over_runs.target import runs

    options = ClaimOptions.parse({name: object()}, None)
    assert set(options.rule_keywords) == {name}
    with pytest.raises((TypeError, ValueError)) as raised:
        check_rule(runs(str, max_runs=5), options.rule_keywords, Expectation(5), Settings(), None)
    assert name in str(raised.value)


def test_the_rule_names_its_modes_from_the_options() -> None:
    from pytest_propositions.over_runs.rule import check_rule
    from pytest_propositions.over_runs.target import runs

    given = dict.fromkeys(RUNS_MODES, 0.5)
    with pytest.raises(TypeError) as raised:
        check_rule(runs(str, max_runs=5), given, Expectation(), Settings(), None)
    assert str(raised.value) == (
        f"give one of {', '.join(f'{mode}=' for mode in RUNS_MODES)}; got {', '.join(RUNS_MODES)}"
    )


# -- the reference library's option names ------------------------------------------------------


def test_proposition_takes_and_exposes_exactly_the_reference_options() -> None:
    parameters = list(inspect.signature(Proposition.__init__).parameters)
    assert parameters[3:] == list(REFERENCE_OPTIONS)  # after self, claim, target
    for function in (check_proposition, compute_score):
        assert set(REFERENCE_OPTIONS) <= set(inspect.signature(function).parameters)
    properties = {name for name, value in vars(Proposition).items() if isinstance(value, property)}
    assert properties == set(REFERENCE_OPTIONS)


def test_a_proposition_shaped_claim_carries_each_reference_option() -> None:
    def precondition(**_: object) -> bool:
        return True

    values = {
        "include_personas": True,
        "first_n": 1,
        "last_n": 2,
        "double_check": True,
        "use_reasoning_model": True,
        "precondition_function": precondition,
        "timestamps": "absolute",
    }
    shaped = SimpleNamespace(claim="Oscar greets.", **values)
    _, options, _ = claim_and_options(shaped, {})
    assert options == {REFERENCE_OPTIONS[name]: value for name, value in values.items()}
    ours = Proposition(shaped)
    assert {name: getattr(ours, name) for name in REFERENCE_OPTIONS} == values
    assert {name: getattr(Proposition("x", None, **values), name) for name in values} == values


# -- "did you mean" ----------------------------------------------------------------------------


@pytest.mark.parametrize("typo", ["prop_modle", "prop_samp", "prop_verbose", "prop_qwxyz"])
def test_an_ini_key_and_an_option_suggest_by_the_same_rule(typo: str) -> None:
    known = [option.ini for option in OPTIONS]
    meant = closest_name(typo, known)
    message = str(unknown_names_error([typo], [("", known)]))
    assert (f"(did you mean {meant}?)" in message) is (meant is not None)

    def getini(key: str) -> object:
        raise ValueError(key)

    config = SimpleNamespace(inipath=None, getoption=lambda *_: [f"{typo}=1"], getini=getini)
    (problem,) = unknown_ini_keys(config)  # type: ignore[arg-type]
    hint = f"did you mean {meant}?" if meant else "none of this plugin's options is like it"
    assert problem == f"{typo} in -o ({hint})"


def test_a_call_that_judges_one_target_refuses_a_claim_over_runs() -> None:
    # proposition_judge judges one target: at_least= was once silently ignored there.
    with pytest.raises(TypeError, match=r"^proposition_judge: judges one target, not a claim"):
        make_claim(TARGET, "c", {"at_least": 0.5}, "proposition_judge", over_runs="never")
    with pytest.raises(TypeError, match=r"^check_over_runs: the target must be runs\("):
        make_claim(TARGET, "c", {"at_least": 0.5}, "check_over_runs", over_runs="must")
