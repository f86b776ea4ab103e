"""The judge a reference-library project names in its config.ini: read from real files, used when
no --prop-model is set, overridden by every plugin setting, and asked over real HTTP (Azure's
deployment route included) on the scripted server."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_propositions.reference_config import (
    ReferenceConfigError,
    find_reference_config,
    read_reference_config,
)
from pytest_propositions.settings import SettingsError, from_environment, resolve
from tests.support.judge_server import ScriptedJudge, verdict
from tests.support.outcomes import assert_counts

AZURE_INI = """\
[OpenAI]
API_TYPE=azure
AZURE_API_VERSION=2024-10-21
MODEL=team-judge
REASONING_MODEL=team-reasoner
TIMEOUT=120
MAX_ATTEMPTS=3
REASONING_EFFORT=Low

[Simulation]
PARALLEL_AGENT_ACTIONS=True
"""

OPENAI_INI = """\
[OpenAI]
API_TYPE=openai
MODEL=judge-model
"""

TEST_FILE = """
def test_claim(world, assert_proposition):
    assert_proposition(world, "Oscar likes quiet cities.")
"""


def write(folder: Path, text: str) -> Path:
    path = folder / "config.ini"
    path.write_text(text, encoding="utf-8")
    return path


def test_the_openai_section_of_a_real_file_becomes_option_values(tmp_path: Path) -> None:
    reference = read_reference_config(write(tmp_path, AZURE_INI))
    assert reference is not None
    env = {"AZURE_OPENAI_ENDPOINT": "https://team.openai.azure.com"}
    settings = resolve({}, env, {}, reference)
    assert settings.model == "azure/team-judge"
    assert settings.reasoning_model == "azure/team-reasoner"
    assert settings.judge_model(True) == "azure/team-reasoner"
    assert settings.api_version == "2024-10-21"
    assert settings.api_base == "https://team.openai.azure.com"
    assert settings.timeout == 120.0
    assert settings.retries == 2  # MAX_ATTEMPTS counts the first attempt too
    assert settings.reasoning_effort == "low"
    assert settings.api_key_env == "AZURE_OPENAI_KEY"
    assert settings.judge_source == "config.ini (Azure OpenAI, api-version 2024-10-21)"


def test_a_file_that_omits_keys_gets_the_reference_librarys_defaults(tmp_path: Path) -> None:
    reference = read_reference_config(write(tmp_path, "[OpenAI]\nCACHE_API_CALLS=False\n"))
    settings = resolve({}, {}, {}, reference)
    assert settings.model == "openai/gpt-5-mini"
    assert settings.reasoning_model == "openai/o3-mini"
    # What the file does not say stays the plugin's: no effort is sent unasked.
    assert (settings.timeout, settings.retries, settings.reasoning_effort) == (60.0, 3, None)
    assert settings.api_base is None and settings.api_key_env is None


def test_openai_base_url_is_honoured(tmp_path: Path) -> None:
    reference = read_reference_config(write(tmp_path, OPENAI_INI))
    settings = resolve({}, {"OPENAI_BASE_URL": "http://proxy.internal/v1"}, {}, reference)
    assert settings.api_base == "http://proxy.internal/v1"
    assert settings.model == "openai/judge-model"


@pytest.mark.parametrize(
    ("cli", "env", "ini"),
    [
        ({"model": "anthropic/claude-sonnet-4-5"}, {}, {}),
        ({}, {"PROP_MODEL": "anthropic/claude-sonnet-4-5"}, {}),
        ({}, {}, {"model": "anthropic/claude-sonnet-4-5"}),
    ],
    ids=["flag", "env", "ini"],
)
def test_a_model_from_plugin_settings_wins_and_config_ini_is_not_read(
    tmp_path: Path, cli: dict[str, str], env: dict[str, str], ini: dict[str, str]
) -> None:
    reference = read_reference_config(write(tmp_path, AZURE_INI))
    settings = resolve(cli, env, ini, reference)
    assert settings.model == "anthropic/claude-sonnet-4-5"
    assert settings.judge_source is None and settings.api_version is None
    assert settings.timeout == 60.0 and settings.retries == 3


def test_every_plugin_setting_wins_over_the_file(tmp_path: Path) -> None:
    reference = read_reference_config(write(tmp_path, AZURE_INI))
    settings = resolve(
        {"timeout": "5", "api_version": "2025-01-01-preview"},
        {"PROP_RETRIES": "0", "PROP_API_BASE": "http://127.0.0.1:9/"},
        {"reasoning_effort": "high"},
        reference,
    )
    assert settings.model == "azure/team-judge"  # the file still names the judge
    assert (settings.timeout, settings.retries, settings.reasoning_effort) == (5.0, 0, "high")
    assert settings.api_version == "2025-01-01-preview"
    assert settings.api_base == "http://127.0.0.1:9/"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "[OpenAI]\nAPI_TYPE=ollama\n",
            "API_TYPE=ollama: this plugin can judge with openai or azure",
        ),
        ("[OpenAI]\nMAX_ATTEMPTS=two\n", "MAX_ATTEMPTS: expected a whole number, got 'two'"),
        ("[OpenAI]\nTIMEOUT=-1\n", "config.ini [OpenAI] TIMEOUT: expected a finite positive"),
        ("[OpenAI\nMODEL=x\n", "cannot be read as an ini file"),
    ],
)
def test_a_file_that_cannot_name_a_judge_is_an_error_naming_the_key(
    tmp_path: Path, text: str, message: str
) -> None:
    path = write(tmp_path, text)
    with pytest.raises((ReferenceConfigError, SettingsError)) as info:
        resolve({}, {}, {}, read_reference_config(path))
    assert message in str(info.value)


def test_another_tools_config_ini_is_ignored(tmp_path: Path) -> None:
    write(tmp_path, "[database]\nhost=localhost\n")
    assert find_reference_config([tmp_path]) is None
    assert from_environment({}, tmp_path).model == "local"


def test_outside_pytest_the_working_directorys_file_names_the_judge(tmp_path: Path) -> None:
    write(tmp_path, OPENAI_INI)
    settings = from_environment({}, tmp_path)
    assert settings.model == "openai/judge-model" and settings.judge_source == "config.ini"


# -- end to end: pytest, a real config.ini, the scripted server over HTTP ------------------------


@pytest.fixture
def project(
    pytester: pytest.Pytester, inner_run: list[str], monkeypatch: pytest.MonkeyPatch
) -> list[str]:
    """The inner project's arguments without --prop-model and --prop-api-base: config.ini and
    the environment say where the judge is."""
    for name in ("OPENAI_BASE_URL", "AZURE_OPENAI_ENDPOINT", "AZURE_OPENAI_KEY", "PROP_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    pytester.makepyfile(TEST_FILE)
    return [a for a in inner_run if not a.startswith(("--prop-model", "--prop-api-base"))]


def test_a_reference_project_asks_the_model_its_config_ini_names(
    pytester: pytest.Pytester,
    judge_server: ScriptedJudge,
    project: list[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    write(pytester.path, OPENAI_INI)
    monkeypatch.setenv("OPENAI_BASE_URL", judge_server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-real")
    result = pytester.runpytest(*project)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["propositions: model openai/judge-model from config.ini, *"])
    (request,) = judge_server.requests
    assert request.path == "/v1/chat/completions"
    assert request.model == "judge-model"
    assert request.headers["authorization"] == "Bearer sk-test-not-real"


def test_a_reference_azure_project_reaches_its_deployment_with_its_key(
    pytester: pytest.Pytester,
    judge_server: ScriptedJudge,
    project: list[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    write(
        pytester.path,
        AZURE_INI.replace("REASONING_EFFORT=Low\n", "").replace("2024-10-21", "2025-01-01-preview"),
    )
    judge_server.azure_api_key = "azure-key-not-real"
    judge_server.default = verdict(False, justification="He prefers beaches.")
    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", judge_server.url)
    monkeypatch.setenv("AZURE_OPENAI_KEY", "azure-key-not-real")
    result = pytester.runpytest(*project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "propositions: model azure/team-judge from config.ini (Azure OpenAI, api-version "
            "2025-01-01-preview), *",
            "*He prefers beaches.*",
        ]
    )
    (request,) = judge_server.requests
    assert request.path == "/openai/deployments/team-judge/chat/completions"
    assert request.query["api-version"] == "2025-01-01-preview"  # config.ini's, not a default
    assert request.headers["api-key"] == "azure-key-not-real"
    assert "azure-key-not-real" not in result.stdout.str()


def test_an_azure_project_without_its_key_is_a_judge_error_that_names_it(
    pytester: pytest.Pytester,
    judge_server: ScriptedJudge,
    project: list[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    write(pytester.path, AZURE_INI)
    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", judge_server.url)
    result = pytester.runpytest(*project)
    assert_counts(result, judge_errors=1)
    result.stdout.fnmatch_lines(
        [
            "*JudgeUnavailable: config.ini names the Azure judge azure/team-judge, but "
            "AZURE_OPENAI_KEY is not set*Entra ID*"
        ]
    )
    assert judge_server.requests == []


def test_a_wrong_azure_key_is_refused_as_azure_refuses_it(
    pytester: pytest.Pytester,
    judge_server: ScriptedJudge,
    project: list[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    write(pytester.path, AZURE_INI)
    judge_server.azure_api_key = "the-right-key"
    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", judge_server.url)
    monkeypatch.setenv("AZURE_OPENAI_KEY", "a-wrong-key")
    result = pytester.runpytest(*project)
    assert_counts(result, judge_errors=1)
    result.stdout.fnmatch_lines(["*JUDGE ERROR*"])
    assert "a-wrong-key" not in result.stdout.str()


def test_plugin_settings_win_over_a_reference_config_ini(
    pytester: pytest.Pytester,
    judge_server: ScriptedJudge,
    project: list[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    write(pytester.path, AZURE_INI)
    monkeypatch.setenv("PROP_API_KEY", "test-key-not-real")
    result = pytester.runpytest(
        *project, "--prop-model=openai/judge-model", f"--prop-api-base={judge_server.base_url}"
    )
    result.assert_outcomes(passed=1)
    assert "from config.ini" not in result.stdout.str()
    (request,) = judge_server.requests
    assert request.model == "judge-model" and request.path == "/v1/chat/completions"


def test_the_environment_is_not_changed(tmp_path: Path) -> None:
    before = dict(os.environ)
    from_environment({}, tmp_path)
    assert dict(os.environ) == before


def test_a_run_whose_config_ini_cannot_name_a_judge_stops_with_a_usage_error(
    pytester: pytest.Pytester, project: list[str]
) -> None:
    # Looked for without importing the reader first; once found, a bad value still stops the
    # run before any test, naming the key.
    write(pytester.path, "[OpenAI]\nMAX_ATTEMPTS=two\n")
    result = pytester.runpytest(*project)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*pytest-propositions: *MAX_ATTEMPTS: expected a whole number*"])


def test_the_plugin_looks_for_the_file_the_reader_reads() -> None:
    from pytest_propositions import reference_config, settings

    assert settings.REFERENCE_CONFIG_FILE == reference_config.FILE_NAME
