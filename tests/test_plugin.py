"""The pytest surface, through pytester runs that reach the scripted judge over HTTP."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.judge_server import ScriptedJudge, status, verdict
from tests.support.outcomes import assert_counts

pytest_plugins = ["pytester"]


@pytest.fixture
def judged(inner_run: list[str]) -> list[str]:
    """Command-line arguments that point the inner run at the scripted judge, cache off."""
    return inner_run


def test_failing_claim_shows_the_justification(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, judged: list[str]
) -> None:
    judge_server.default = verdict(
        False, justification="Oscar never mentions a novel.", confidence=0.8
    )
    pytester.makepyfile(
        """
        def test_novel(world, assert_proposition):
            assert_proposition(world, "Oscar writes a novel about cats.")
        """
    )
    result = pytester.runpytest(*judged)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*PropositionFailed: claim 'Oscar writes a novel about cats.' judged False (model openai/judge-model)",
            "*- proposition -*",
            "FAILED: Oscar writes a novel about cats.",
            "  verdict: False (expected True)",
            "  confidence: 0.8",
            "  model: openai/judge-model; judged live in *",
            "  justification:",
            "    Oscar never mentions a novel.",
        ]
    )
    # The failure points at the user's line, not into the plugin.
    result.stdout.fnmatch_lines(["*assert_proposition(world, *"])
    assert "assertions.py" not in result.stdout.str()


def test_passing_claim_is_quiet(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, judged: list[str]
) -> None:
    judge_server.default = verdict(True, justification="SECRET-JUSTIFICATION")
    pytester.makepyfile(
        """
        def test_travel(world, assert_proposition):
            verdict = assert_proposition(world, "Oscar talks about travel.")
            assert verdict.value is True
        """
    )
    result = pytester.runpytest(*judged)
    result.assert_outcomes(passed=1)
    assert "SECRET-JUSTIFICATION" not in result.stdout.str()
    result.stdout.fnmatch_lines(["propositions: 1 claim, 1 passed, 0 failed, 0 judge errors,*"])


def test_score_gate_and_threshold_precedence(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, judged: list[str]
) -> None:
    judge_server.default = verdict(6)
    pytester.makepyfile(
        """
        import pytest

        def test_default_bar(world, min_score):          # --prop-min-score=5 -> passes
            min_score(world, "Oscar is calm.")

        @pytest.mark.min_score(7)
        def test_mark_bar(world, min_score):             # mark beats the option -> fails
            min_score(world, "Oscar is calm.")

        @pytest.mark.min_score(7)
        def test_argument_bar(world, min_score):         # argument beats the mark -> passes
            min_score(world, "Oscar is calm.", 6)

        def test_assert_with_min_score(world, assert_proposition):
            v = assert_proposition(world, "Oscar is calm.", min_score=9)
        """
    )
    result = pytester.runpytest(*judged, "--prop-min-score=5")
    result.assert_outcomes(passed=2, failed=2)
    result.stdout.fnmatch_lines(
        [
            "*scored 6/9, below the minimum of 7*",
            "*scored 6/9, below the minimum of 9*",
        ]
    )


def test_ini_min_score_and_env_precedence(
    pytester: pytest.Pytester,
    judge_server: ScriptedJudge,
    judged: list[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    judge_server.default = verdict(6)
    pytester.makeini("[pytest]\nprop_min_score = 8\n")
    pytester.makepyfile("def test_it(world, min_score):\n    min_score(world, 'Oscar is calm.')\n")
    pytester.runpytest(*judged).assert_outcomes(failed=1)  # ini 8 > 6
    monkeypatch.setenv("PROP_MIN_SCORE", "6")
    pytester.runpytest(*judged).assert_outcomes(passed=1)  # env beats ini
    pytester.runpytest(*judged, "--prop-min-score=7").assert_outcomes(failed=1)  # flag beats env


MISSPELT_CLAIM = "def test_it(world, min_score):\n    min_score(world, 'Oscar is calm.')\n"


@pytest.mark.parametrize(
    ("config_file", "text", "said"),
    [
        (
            "pytest.ini",
            "[pytest]\nprop_modle = openai/other\nprop_min_score = 8\n",
            "prop_modle in pytest.ini (did you mean prop_model?)",
        ),
        (
            "pyproject.toml",
            '[tool.pytest.ini_options]\nprop-min-score = "8"\n',
            "prop-min-score in pyproject.toml (did you mean prop_min_score?)",
        ),
        (
            "tox.ini",
            "[pytest]\nprop_zzz = 1\n",
            "prop_zzz in tox.ini (none of this plugin's options is like it)",
        ),
    ],
)
def test_a_misspelt_ini_key_stops_the_run_at_its_start(
    pytester: pytest.Pytester,
    judge_server: ScriptedJudge,
    judged: list[str],
    config_file: str,
    text: str,
    said: str,
) -> None:
    """Its option would silently keep its default (another judge, another bar): a usage error
    that names the key and the option meant, before any test runs or any judge is asked."""
    judge_server.default = verdict(6)
    pytester.makefile(Path(config_file).suffix, **{Path(config_file).stem: text})
    pytester.makepyfile(MISSPELT_CLAIM)
    result = pytester.runpytest(*judged)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*pytest-propositions: unknown ini option {said}; *"])
    assert judge_server.requests == []
    assert "test_it" not in result.stdout.str()


def test_a_misspelt_override_is_named_with_the_option_meant(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, judged: list[str]
) -> None:
    pytester.makepyfile(MISSPELT_CLAIM)
    result = pytester.runpytest(*judged, "-o", "prop_min_scor=8", "-o", "prop_api_bse=x")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*unknown ini option prop_min_scor in -o (did you mean prop_min_score?); "
            "prop_api_bse in -o (did you mean prop_api_base?); *"
        ]
    )


def test_another_plugins_prop_option_and_other_keys_are_left_to_pytest(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, judged: list[str]
) -> None:
    judge_server.default = verdict(9)
    pytester.makeini("[pytest]\nprop_theirs = 1\nsomething_else = 2\nprop_min_score = 8\n")
    pytester.makeconftest(
        (pytester.path / "conftest.py").read_text()
        + "\n\ndef pytest_addoption(parser):\n    parser.addini('prop_theirs', 'another plugin')\n"
    )
    pytester.makepyfile(MISSPELT_CLAIM)
    result = pytester.runpytest(*judged)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*Unknown config option: something_else*"])  # pytest's own


def test_judge_failure_is_an_error_of_its_own_kind(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, judged: list[str]
) -> None:
    judge_server.default = status(500, "provider down")
    pytester.makepyfile(
        """
        def test_it(world, assert_proposition):
            try:
                assert_proposition(world, "Oscar talks.")
            except AssertionError:
                raise SystemExit("a broken judge must not look like a false claim")
        """
    )
    result = pytester.runpytest(*judged)
    assert_counts(result, judge_errors=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        ["*JudgeUnavailable: the judge (model openai/judge-model*HTTP 500*"]
    )
    result.stdout.fnmatch_lines(
        ["*judge error*", "propositions: 1 claim, 0 passed, 0 failed, 1 judge error,*"]
    )


@pytest.mark.parametrize(
    ("argument", "message"),
    [
        ("--prop-min-score=12", "*--prop-min-score*expected a whole number from 0 to 9*"),
        ("--prop-cache=sometimes", "*--prop-cache*expected one of use, replay, refresh, off*"),
        ("--prop-timeout=-1", "*--prop-timeout*positive number*"),
    ],
)
def test_bad_option_values_fail_at_parse_time(
    pytester: pytest.Pytester, argument: str, message: str
) -> None:
    pytester.makepyfile("def test_nothing():\n    pass\n")
    result = pytester.runpytest(argument)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


def test_bad_env_value_names_the_variable(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PROP_MIN_SCORE", "eleven")
    pytester.makepyfile("def test_nothing():\n    pass\n")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*environment variable PROP_MIN_SCORE*eleven*"])


def test_a_bad_min_score_mark_errors_its_test_naming_it(
    pytester: pytest.Pytester, judged: list[str]
) -> None:
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.min_score(15)
        def test_too_high(world, min_score):
            pass
        """
    )
    result = pytester.runpytest(*judged)
    result.stdout.fnmatch_lines(
        ["*test_too_high*min_score*expected a whole number from 0 to 9, got 15*"]
    )
    assert result.ret != pytest.ExitCode.OK


def test_help_lists_the_options_in_one_group(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--help")
    result.stdout.fnmatch_lines(
        [
            "claims judged by an LLM (pytest-propositions):",
            "*--prop-model=MODEL*",
            "*--prop-cache=MODE*",
        ]
    )
    assert "Default: local." in result.stdout.str()


def test_header_names_model_and_cache(pytester: pytest.Pytester, judged: list[str]) -> None:
    pytester.makepyfile("def test_nothing():\n    pass\n")
    result = pytester.runpytest(*judged)
    result.stdout.fnmatch_lines(["propositions: model openai/judge-model, cache off"])


def test_reasoning_model_option_is_used_when_a_claim_asks_for_it(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, judged: list[str]
) -> None:
    pytester.makepyfile(
        """
        def test_it(world, assert_proposition):
            assert_proposition(world, "Oscar talks.")
            assert_proposition(world, "Oscar talks.", use_reasoning_model=True)
        """
    )
    result = pytester.runpytest(*judged, "--prop-reasoning-model=openai/deep-judge")
    result.assert_outcomes(passed=1)
    assert [request.model for request in judge_server.requests] == ["judge-model", "deep-judge"]
