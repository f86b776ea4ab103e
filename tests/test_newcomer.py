"""What a newcomer tripped on (issue 51): a dataclass or pydantic target shown as its fields,
claim variables the claim never uses, arguments given in the wrong order, and the score rule
for a claim with no evidence."""

from __future__ import annotations

import dataclasses
import json
import os
import warnings
from pathlib import Path
from typing import Any

import pydantic
import pytest

from pytest_propositions import ClaimWarning
from pytest_propositions.__main__ import main
from pytest_propositions.assertions import make_claim, read_claim
from pytest_propositions.calibration import gate_problem
from pytest_propositions.claims.targets import (
    RenderOptions,
    as_target_list,
    describe_target,
    render_context,
)
from pytest_propositions.cli.rejudge import Rejudged, compared
from pytest_propositions.judging.prompts import build_messages, system_prompt
from pytest_propositions.reports import diff
from pytest_propositions.runtime import misspelt_variables
from pytest_propositions.settings import Settings
from tests.support.judge_server import ScriptedJudge, verdict

pytest_plugins = ["pytester"]


# -- 5: a dataclass or a pydantic model of the user's own is shown as its fields ---------------


@dataclasses.dataclass
class Guest:
    name: str


@dataclasses.dataclass
class Booking:
    guest: Guest
    nights: int
    requests: list[str] = dataclasses.field(default_factory=list)


class BookingModel(pydantic.BaseModel):
    guest: str
    nights: int


FIELDS_TEXT = """\
## Booking

---- BEGIN FIELDS OF Booking ----
guest:
  name: Oscar
nights: 3
requests:
  - a quiet room
---- END FIELDS OF Booking ----"""


def test_a_dataclass_target_is_shown_as_its_fields() -> None:
    booking = Booking(Guest("Oscar"), 3, ["a quiet room"])
    assert as_target_list(booking) == [booking]
    assert render_context([booking], RenderOptions()) == FIELDS_TEXT
    assert describe_target(booking) == "Booking (3 fields)"


def test_a_pydantic_model_is_shown_as_the_dict_of_its_fields_would_be() -> None:
    model = render_context([BookingModel(guest="Ana", nights=2)], RenderOptions())
    as_dict = render_context([{"guest": "Ana", "nights": 2}], RenderOptions())
    fields = model.splitlines()[3:-1]
    assert fields == as_dict.splitlines()[3:-1] == ["guest: Ana", "nights: 2"]
    assert model.splitlines()[0] == "## BookingModel"


def test_objects_with_nothing_to_show_are_still_refused() -> None:
    @dataclasses.dataclass
    class Empty:
        pass

    with pytest.raises(ValueError, match="has no fields: there is nothing to judge"):
        as_target_list(Empty())
    with pytest.raises(TypeError, match="cannot judge a target of type type"):
        as_target_list(Booking)  # the class, not an instance


def test_a_dataclass_target_reaches_the_judge(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, inner_run: list[str]
) -> None:
    judge_server.default = verdict(True)
    pytester.makepyfile(
        """
        import dataclasses

        @dataclasses.dataclass
        class Booking:
            guest: str
            nights: int

        def test_booking(assert_proposition):
            assert_proposition(Booking(guest="Oscar", nights=3), "Oscar stays three nights.")
        """
    )
    pytester.runpytest(*inner_run).assert_outcomes(passed=1)
    sent = judge_server.requests[0].messages[1]["content"]
    assert "guest: Oscar\nnights: 3\n" in sent


# -- 6: claim variables the claim never uses ---------------------------------------------------


def test_a_python_style_placeholder_for_a_given_variable_is_an_error_at_the_call() -> None:
    with pytest.raises(ValueError) as caught:
        make_claim(
            "Oscar: hi.", "Oscar likes {city}.", {"claim_variables": {"city": "Rome"}}, "min_score"
        )
    message = str(caught.value)
    assert message.startswith("min_score: the claim writes {city}")
    assert "write {{city}}" in message


@pytest.mark.parametrize("claim", ["Oscar likes ${city}.", "Oscar likes %(city)s."])
def test_other_template_syntaxes_are_errors_too(claim: str) -> None:
    _, problems = read_claim("Oscar: hi.", claim, {"claim_variables": {"city": "Rome"}}, "x")
    assert len(problems) == 1 and "write {{city}}" in str(problems[0])


def test_an_unused_variable_is_a_warning_at_the_callers_line() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        made, problems = read_claim(
            "Oscar: hi.",
            "{{name}} says hi.",
            {"claim_variables": {"name": "Oscar", "city": "Rome"}},
            "assert_proposition",
        )
    assert made is not None and not problems
    [warning] = [w for w in caught if issubclass(w.category, ClaimWarning)]
    assert warning.filename == __file__
    assert str(warning.message).startswith(
        "assert_proposition: claim_variables city is not used by the claim"
    )


@pytest.mark.parametrize(
    ("claim", "options"),
    [
        # Every variable used, in a section too.
        ("{{#people}}{{name}}{{/people}} talk.", {"people": [{"name": "A"}], "name": "B"}),
        # A precondition is given the variables as well, and may be what uses them.
        ("Oscar says hi.", {"city": "Rome", "precondition": "yes"}),
    ],
)
def test_no_warning_when_the_variables_are_used(claim: str, options: dict[str, Any]) -> None:
    given: dict[str, Any] = {"claim_variables": dict(options)}
    if given["claim_variables"].pop("precondition", None):
        given["precondition"] = lambda **_: True
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        made, problems = read_claim("Oscar: hi.", claim, given, "assert_proposition")
    assert made is not None and not problems


def test_a_batchs_shared_variables_warn_no_claim_that_uses_none(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, inner_run: list[str]
) -> None:
    judge_server.default = verdict(True)
    pytester.makepyfile(
        """
        def test_batch(world, assert_propositions, assert_proposition):
            assert_propositions(
                world, ["{{name}} speaks.", "Oscar travels."], claim_variables={"name": "Oscar"}
            )
            assert_proposition(world, "Oscar travels.", claim_variables={"name": "Oscar"})
        """
    )
    result = pytester.runpytest(*inner_run, "-W", "always::pytest_propositions.ClaimWarning")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["*test_a_batchs_shared_variables_warn_no_claim_that_uses_none.py:5: ClaimWarning: *"]
    )
    assert result.stdout.str().count("ClaimWarning:") == 1


# -- 7: the arguments' order, (target, claim) ---------------------------------------------------

ORDER = "(the call is assert_proposition(target, claim, ...): the target first, then the claim)"


class Opaque:
    """No kind of target."""


@pytest.mark.parametrize(
    ("target", "claim", "error", "start"),
    [
        ("Oscar: hi.", Opaque(), TypeError, "assert_proposition: claim must be a non-empty string"),
        (Opaque(), "Oscar says hi.", TypeError, "assert_proposition: cannot judge a target"),
        (None, "Oscar says hi.", ValueError, "assert_proposition: no target"),
    ],
)
def test_a_wrong_target_or_claim_names_the_order_at_the_call(
    target: Any, claim: Any, error: type[Exception], start: str
) -> None:
    with pytest.raises(error) as caught:
        make_claim(target, claim, {}, "assert_proposition")
    assert str(caught.value).startswith(start)
    assert str(caught.value).endswith(ORDER)


def test_a_wrong_target_does_not_hide_a_wrong_claim() -> None:
    with pytest.raises(ValueError) as caught:
        make_claim(None, 42, {}, "assert_proposition")
    lines = str(caught.value).splitlines()
    assert lines[0] == "assert_proposition has 2 problems:"
    assert all(line.endswith(ORDER) for line in lines[1:])


def test_a_recording_given_as_the_claim_is_an_error() -> None:
    recording = "#1: USER --> Oscar: [CONVERSATION] Where to?\n#2: Oscar acts: [TALK] Rome."
    with pytest.raises(ValueError, match="are they swapped"):
        make_claim("Oscar mentions travel.", recording, {}, "assert_proposition")
    # In the right order the same two strings are a claim about a recording.
    make_claim(recording, "Oscar mentions travel.", {}, "assert_proposition")


def test_a_conversation_given_as_the_claim_is_a_warning() -> None:
    with pytest.warns(ClaimWarning, match="are they swapped") as caught:
        make_claim("Oscar mentions travel.", "Oscar: I like quiet cities.", {}, "min_score")
    assert caught[0].filename == __file__
    assert str(caught[0].message).endswith(
        "(the call is min_score(target, claim, threshold): the target first, then the claim)"
    )


@pytest.mark.parametrize(
    ("target", "claim"),
    [
        ("Oscar: I like quiet cities.", "Oscar mentions travel."),
        ("Oscar: hi.\nLisa: hello.", "Lisa: greets Oscar."),  # a conversation as the target
        ("Oscar likes quiet cities.", "Oscar likes quiet cities."),
    ],
)
def test_strings_in_the_right_order_are_not_warned(target: str, claim: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        make_claim(target, claim, {}, "assert_proposition")


# -- 18: a score claim with no evidence ---------------------------------------------------------

REFERENCE_RULE = (
    "- If the recording holds nothing that bears on the claim, give 9: without evidence\n"
    "  against it, the claim stands."
)
STRICT_RULE = "- If the recording holds nothing that bears on the claim, give 0:"


def test_the_score_prompt_gives_the_top_score_without_evidence_unless_strict() -> None:
    assert REFERENCE_RULE in system_prompt("score")
    strict = system_prompt("score", strict_score=True)
    assert STRICT_RULE in strict and REFERENCE_RULE not in strict
    assert strict.replace(strict.split("Scoring rules:\n")[1].split("\n- Be strict")[0], "") == (
        system_prompt("score").replace(REFERENCE_RULE, "")
    )
    # A check already needs evidence: its prompt does not change.
    assert build_messages("check", "c", "r", None, strict_score=True) == build_messages(
        "check", "c", "r", None
    )


def test_strict_score_reaches_the_judge_of_that_claim_only(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, inner_run: list[str]
) -> None:
    judge_server.default = verdict(8)
    pytester.makepyfile(
        """
        def test_scores(world, min_score, assert_proposition):
            min_score(world, "Oscar never lies.", 5, strict_score=True)
            min_score(world, "Oscar is polite.", 5)
        """
    )
    pytester.runpytest(*inner_run).assert_outcomes(passed=1)
    systems = [request.messages[0]["content"] for request in judge_server.requests]
    assert [STRICT_RULE in text for text in systems] == [True, False]
    assert REFERENCE_RULE in systems[1]


def test_strict_score_is_a_claim_option_that_takes_a_bool_only() -> None:
    made = make_claim("Oscar: hi.", "Oscar greets.", {"strict_score": True}, "min_score")
    assert made.options.strict_score is True
    with pytest.raises(TypeError, match="min_score: strict_score must be True or False"):
        make_claim("Oscar: hi.", "Oscar greets.", {"strict_score": "yes"}, "min_score")


# -- 10: a misspelt PROP_ variable --------------------------------------------------------------


def test_near_misses_of_known_variables_are_named_and_nothing_else() -> None:
    env = {
        "PROP_MODLE": "secret-1",
        "PROP_API_KYE": "secret-2",
        "PROP_API_KEY": "secret-3",  # a key variable, known
        "PROP_REFEREE_API_KEY": "secret-4",
        "PROP_MODEL": "openai/x",
        "PROP_WIDGET_COLOUR": "blue",  # another tool's, like none of ours
        "PATH": "/bin",
    }
    lines = misspelt_variables(env)
    assert [line.split(" (did you mean ")[1].split("?")[0] for line in lines] == [
        "PROP_API_KEY",
        "PROP_MODEL",
    ]
    assert lines[1].startswith("the environment variable PROP_MODLE is no variable")
    assert not any("secret" in line for line in lines)


def test_a_run_warns_of_a_misspelt_variable_once_without_its_value(
    pytester: pytest.Pytester,
    judge_server: ScriptedJudge,
    inner_run: list[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PROP_MIN_SCOER", "value-not-shown")
    pytester.makepyfile("def test_plain():\n    pass\n")
    result = pytester.runpytest(*inner_run)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "*PytestConfigWarning: pytest-propositions: the environment variable PROP_MIN_SCOER "
            "is no variable of pytest-propositions (did you mean PROP_MIN_SCORE?); it is ignored"
        ]
    )
    assert "value-not-shown" not in result.stdout.str() + result.stderr.str()
    assert result.stdout.str().count("PROP_MIN_SCOER") == 1


# -- 9: calibrate reads the project's ini, as a run does ---------------------------------------

ONE_ITEM = {
    "id": "a",
    "kind": "check",
    "target": {"text": "Ana: yes."},
    "claim": "Ana says yes.",
    "label": True,
}


@pytest.fixture
def project(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, judge_server: ScriptedJudge) -> Path:
    """A project whose pytest.ini names the judge and its server; no PROP_* variable set."""
    for name in [name for name in os.environ if name.startswith("PROP_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("PROP_RETRIES", "0")
    (tmp_path / "pytest.ini").write_text(
        f"[pytest]\nprop_model = openai/ini-judge\nprop_api_base = {judge_server.base_url}\n"
    )
    (tmp_path / "one.jsonl").write_text(json.dumps(ONE_ITEM) + "\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_calibrate_judges_with_the_ini_judge_and_server(
    project: Path, judge_server: ScriptedJudge, capsys: pytest.CaptureFixture[str]
) -> None:
    judge_server.default = verdict(True)
    assert main(["calibrate", "--set", "one.jsonl"]) == 0, capsys.readouterr()
    assert [request.model for request in judge_server.requests] == ["ini-judge"]
    assert "FIT: judge openai/ini-judge" in capsys.readouterr().out


def test_calibrate_takes_a_variable_over_the_ini_and_a_flag_over_both(
    project: Path, judge_server: ScriptedJudge, monkeypatch: pytest.MonkeyPatch
) -> None:
    judge_server.default = verdict(True)
    monkeypatch.setenv("PROP_MODEL", "openai/env-judge")
    assert main(["calibrate", "--set", "one.jsonl", "--cache", "off"]) == 0
    assert main(["calibrate", "--set", "one.jsonl", "--cache", "off", "--model", "openai/j"]) == 0
    assert [request.model for request in judge_server.requests] == ["env-judge", "j"]


def test_calibrate_help_says_where_defaults_come_from_and_offers_no_store(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        main(["calibrate", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--store" not in text and "PostgreSQL" not in text
    assert "(default: $PROP_MODEL, else the project's ini prop_model, else local)" in text


def test_the_gates_suggested_calibration_keeps_the_server_without_its_password(
    tmp_path: Path,
) -> None:
    settings = Settings(
        model="openai/judge", api_base="http://user:hunter2@10.0.0.5:8000/v1", min_calibration=0.9
    )
    problem = gate_problem(settings, tmp_path)
    assert problem is not None and "hunter2" not in problem
    assert problem.endswith(
        "run 'python -m pytest_propositions calibrate --model openai/judge "
        "--api-base http://[redacted]@10.0.0.5:8000/v1' first"
    )


# -- 16: rejudge, at the top level too; a claim over runs' flips by run; counted as diff counts -


def test_rejudge_is_a_top_level_command_listed_in_the_help(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    listed = capsys.readouterr().out
    assert "    rejudge " in listed
    with pytest.raises(SystemExit):
        main(["rejudge", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "usage: python -m pytest_propositions rejudge" in text and "--model MODEL" in text
    assert "--store" not in text  # a shared store is not re-judged


RUNS_SUITE = """
from pytest_propositions import runs

def test_runs(assert_proposition):
    assert_proposition(runs(lambda i: f"Oscar: hello, run {i}.", max_runs=3), "Oscar greets.",
                       every_run=True)
"""


@pytest.mark.parametrize("command", [["rejudge"], ["cache", "rejudge"]])
def test_a_claim_over_runs_flips_run_by_run(
    pytester: pytest.Pytester,
    judge_server: ScriptedJudge,
    inner_run: list[str],
    capsys: pytest.CaptureFixture[str],
    command: list[str],
) -> None:
    pytester.makepyfile(test_over_runs=RUNS_SUITE)
    cache = pytester.path / "verdicts"
    args = [a for a in inner_run if a != "--prop-cache=off"] + [f"--prop-cache-dir={cache}"]
    judge_server.default = verdict(True)
    pytester.runpytest_inprocess(*args).assert_outcomes(passed=1)
    judge_server.default = verdict(False)
    capsys.readouterr()
    new = ["--model", "openai/other", "--api-base", judge_server.base_url]
    assert main([*command, *new, "--cache-dir", str(cache)]) == 0
    out = capsys.readouterr().out.splitlines()
    flipped = [line for line in out if line.startswith("FLIPPED")]
    assert flipped == [
        f"FLIPPED test_over_runs.py::test_runs (run {run}): Oscar greets." for run in range(3)
    ]
    assert out[-1] == "3 re-judged, 3 flipped, 0 score changes"


def test_rejudge_counts_flips_and_score_changes_as_diff_does(tmp_path: Path) -> None:
    cases = [  # (kind, old, new): one claim each
        ("check", True, False),  # flipped
        ("check", True, True),  # unchanged
        ("score", 8, 6),  # across the bar of 7: flipped
        ("score", 8, 9),  # moved, still above: a score change
        ("score", 3, 5),  # moved, still below: a score change
    ]
    results = [
        Rejudged(f"claim {i}", "t.py::test", kind, old, new, "openai/a", "")  # type: ignore[arg-type]
        for i, (kind, old, new) in enumerate(cases)
    ]
    changes = compared(results, 7, "openai/b")

    def report(path: Path, side: int) -> Path:
        records = [
            {
                "test_id": "t.py::test",
                "threshold": None if kind == "check" else 7,
                "passed": True,
                "verdict": {"kind": kind, "claim": f"claim {i}", "value": values[side]},
            }
            for i, (kind, *values) in enumerate(cases)
        ]
        path.write_text(json.dumps({"verdicts": records}), encoding="utf-8")
        return path

    expected = diff.compare(
        diff.load_report(report(tmp_path / "old.json", 0)),
        diff.load_report(report(tmp_path / "new.json", 1)),
    )
    assert (
        changes.summary() == expected.summary() == "2 flipped, 2 score changes, 0 added, 0 removed"
    )
