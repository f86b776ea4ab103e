"""litellm loads lazily: not with the judge module, and with only the client code a claim needs.

Each case runs in a fresh interpreter, since this test process imported litellm long ago. That a
fully cached run never imports litellm is checked in tests/test_cache.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

# Prints, as JSON, what is imported before and after load_litellm.
PROBE = """
import json, sys
from pytest_propositions.judging.transport_litellm import load_litellm
with_judge_module = "litellm" in sys.modules
load_litellm({model!r})
print(json.dumps({{
    "litellm_with_judge_module": with_judge_module,
    "litellm": "litellm" in sys.modules,
    "openai_resources": "openai.resources" in sys.modules,
}}))
"""


def probe(model: str | None) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROP_")}
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(model=model)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    facts: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return facts


def test_an_openai_sdk_provider_gets_its_client_code_before_the_first_request() -> None:
    facts = probe("openai/judge-model")
    assert facts["litellm_with_judge_module"] is False  # imported on demand only
    assert facts["litellm"] is True
    # The openai SDK's client code, which the first request would otherwise import on the
    # judge's event loop, stalling the calls in flight.
    assert facts["openai_resources"] is True


def test_a_provider_without_the_openai_sdk_does_not_load_its_client_code() -> None:
    facts = probe("anthropic/claude-3-5-haiku-20241022")
    assert facts["litellm"] is True
    assert facts["openai_resources"] is False


def test_without_a_model_only_litellm_is_loaded() -> None:
    facts = probe(None)
    assert facts["litellm"] is True
    assert facts["openai_resources"] is False
