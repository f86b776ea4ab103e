"""Which variable holds a judge's key has one home, judging/endpoint.py: every caller (the
connection, redaction's list of keys, the light path's headers, the messages that tell the user
what to set) is driven through the same table, and no other module names such a variable."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytest_propositions.judging.endpoint import (
    KEY_VARIABLE,
    OWN_KEY_VARIABLE,
    Connection,
    credentials,
    hosted_connection,
    key_variable,
)
from pytest_propositions.judging.families import profile_of
from pytest_propositions.judging.faults import Fault
from pytest_propositions.judging.transport import _message
from pytest_propositions.judging.transport_http import HttpPath
from pytest_propositions.settings import KEY_VARIABLES, OPTIONS
from tests.support.source_scan import PACKAGE, code_strings

HOME = Path("judging") / "endpoint.py"
KEY_NAME = re.compile(r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*_API_KEY\b")

# (a model, the variable its key is read from when PROP_API_KEY gives none, what the light path
# does without it: refuses, or calls a self-hosted server without a key; None: litellm's model)
MODELS = [
    ("openai/judge", "OPENAI_API_KEY", "refuses"),
    ("gpt-4o", "OPENAI_API_KEY", "refuses"),
    ("custom_openai/judge", "OPENAI_API_KEY", "refuses"),
    ("azure/deployment", "AZURE_API_KEY", "refuses"),
    ("hosted_vllm/judge", "HOSTED_VLLM_API_KEY", "calls"),
    ("lm_studio/judge", "LM_STUDIO_API_KEY", "calls"),
    ("anthropic/claude", "ANTHROPIC_API_KEY", None),
]


@pytest.fixture
def no_keys(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    import os

    for name in [name for name in os.environ if KEY_NAME.fullmatch(name)]:
        monkeypatch.delenv(name)
    return monkeypatch


@pytest.mark.parametrize(("model", "variable", "light"), MODELS)
def test_every_caller_reads_and_names_the_same_variable(
    no_keys: pytest.MonkeyPatch, model: str, variable: str, light: str | None
) -> None:
    assert key_variable(model) == variable
    connection = Connection(model, model)
    told = _message(Fault("missing_key", "no key"), connection, 1)
    assert f"set {variable} (or {KEY_VARIABLE})" in told
    key = "provider-key-" + variable.lower()
    no_keys.setenv(variable, key)
    assert key in credentials(None, None, model)  # redacted wherever it shows
    if light is None:
        return
    path, profile = HttpPath(5.0, 1000), profile_of(model)
    assert key in " ".join(path._headers(profile, None).values())
    no_keys.delenv(variable)
    if light == "refuses":
        with pytest.raises(Fault, match=f"the {variable} environment variable"):
            path._headers(profile, None)
    else:
        assert key not in " ".join(path._headers(profile, None).values())


def test_the_judge_key_comes_first_and_a_self_hosted_openai_server_reads_openais(
    no_keys: pytest.MonkeyPatch,
) -> None:
    no_keys.setenv("OPENAI_API_KEY", "openai-key")
    assert hosted_connection("openai/judge", "http://h.invalid/v1").api_key == "openai-key"
    no_keys.setenv(KEY_VARIABLE, "judge-key")
    assert hosted_connection("openai/judge", "http://h.invalid/v1").api_key == "judge-key"


def test_the_options_help_names_the_variables_endpoint_reads() -> None:
    """settings.py sits below judging, so its help text names the own keys as words: they must
    be the ones endpoint.py reads."""
    named = {name for row in OPTIONS for name in KEY_NAME.findall(row.help)}
    assert named == set(OWN_KEY_VARIABLE.values())


def test_no_module_but_endpoint_names_a_key_variable_in_its_code() -> None:
    """The providers' table (``families.OPENAI_COMPATIBLE_PROVIDERS``: one row a provider, the
    rule's data) and the options' help (checked above) are the only other places that name one."""
    found = {
        str(path.relative_to(PACKAGE))
        for path in sorted(PACKAGE.rglob("*.py"))
        if any(KEY_NAME.search(text) for text in code_strings(path.read_text(encoding="utf-8")))
    }
    assert found == {str(HOME), str(Path("judging") / "families.py"), "settings.py"}


def test_the_settings_know_the_variables_endpoint_reads_a_key_from() -> None:
    """settings.KEY_VARIABLES (the names a misspelt PROP_ variable is compared with, issue 51)
    are the variables endpoint.py reads keys from."""
    assert set(KEY_VARIABLES) == {KEY_VARIABLE, *OWN_KEY_VARIABLE.values()}
