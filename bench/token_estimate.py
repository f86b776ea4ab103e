"""How far the judge's token estimate (``judging/size.estimate_tokens``) is from OpenAI's own
tokenizers on real text: the judge's real requests on the calibration set, the project's docs
and sources, providers' recorded reply bodies and litellm's model table (JSON).

Needs tiktoken (litellm installs it, with its encodings cached in the package, so nothing is
downloaded). Run: ``python bench/token_estimate.py``. Prints, per kind of text and encoding,
the estimate's ratio to the real count (lowest, median, highest) over the texts, and the total.
With ``--local`` it also counts with the local judge's own tokenizer (SmolLM2's, through
llama.cpp's ``/tokenize``: needs the ``local`` extra and the model file).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def main() -> None:
    import importlib.util

    import tiktoken  # type: ignore[import-not-found]

    spec = importlib.util.find_spec("litellm")
    assert spec is not None and spec.submodule_search_locations
    litellm_dir = Path(spec.submodule_search_locations[0])
    os.environ.setdefault(
        "TIKTOKEN_CACHE_DIR", str(litellm_dir / "litellm_core_utils" / "tokenizers")
    )
    from pytest_propositions.claims.targets import RenderOptions, render_context
    from pytest_propositions.judging.prompts import build_messages
    from pytest_propositions.judging.size import estimate_tokens, text_tokens

    def pages(paths: list[Path]) -> list[str]:
        out = []
        for path in paths:
            text = path.read_text(encoding="utf-8")
            out.extend(text[i : i + 8000] for i in range(0, len(text), 8000))
        return [page for page in out if len(page) > 200]

    requests = []
    lines = (REPO / "pytest_propositions" / "data" / "calibration.jsonl").read_text().splitlines()
    for line in lines:
        case = json.loads(line)
        context = render_context([case["target"]], RenderOptions())
        requests.append(build_messages(case["kind"], case["claim"], context, None))
    kinds: dict[str, list[str]] = {
        "docs (Markdown)": pages(sorted((REPO / "docs").glob("*.md"))),
        "sources (Python)": pages(sorted((REPO / "pytest_propositions").rglob("*.py"))),
        "reply bodies (JSON)": pages(sorted((REPO / "tests/data/provider_replies").glob("*.json"))),
        "model table (JSON)": pages([litellm_dir / "model_prices_and_context_window_backup.json"])[
            :200
        ],
    }
    # Other scripts: sentences of an agent's trace, written for this measure.
    kinds["other scripts (zh, ja, ru, de, fr)"] = [
        "人工智能代理在测试中需要被评估。我们使用语言模型来判断它的行为是否符合预期。"
        "用户询问了天气。代理回答说明天会下雨。",
        "エージェントはユーザーの質問に答えました。明日の天気は雨になるでしょうと言いました。",
        "Агент вежливо ответил и предложил поездку в Москву, потому что там тихие улицы.",
        "Der Agent antwortete höflich und schlug eine Reise nach München vor, weil die Straßen "
        "dort ruhig sind.",
        "L'agent a répondu poliment et a proposé un voyage à Genève, où les rues sont calmes.",
    ]
    for name in ("o200k_base", "cl100k_base"):
        encoding = tiktoken.get_encoding(name)
        print(f"== {name}")
        ratios = []
        for messages in requests:
            real = 3 + sum(4 + len(encoding.encode(str(m["content"]))) + 1 for m in messages)
            ratios.append(estimate_tokens(messages) / real)
        _line("judge requests (calibration set)", ratios)
        every = list(ratios)
        for kind, texts in kinds.items():
            ratios = [text_tokens(t) / max(len(encoding.encode(t)), 1) for t in texts]
            _line(kind, ratios)
            every.extend(ratios)
        _line("all", every)
    if "--local" in sys.argv[1:]:
        local_tokenizer(requests, kinds)


def local_tokenizer(requests: list[list[Any]], kinds: dict[str, list[str]]) -> None:
    """The same texts against SmolLM2's tokenizer, as the local judge's server counts them."""
    import urllib.request

    from pytest_propositions.judging.size import estimate_tokens, text_tokens
    from pytest_propositions.local import engine as local

    with local.LocalServer(local.default_model_path(), threads=1) as server:
        base = server.base_url.rsplit("/v1", 1)[0]

        def count(text: str) -> int:
            body = json.dumps({"content": text}).encode()
            request = urllib.request.Request(
                base + "/tokenize", data=body, headers={"Content-Type": "application/json"}
            )
            with urllib.request.urlopen(request) as response:
                return len(json.load(response)["tokens"])

        print("== SmolLM2 (llama.cpp /tokenize)")
        ratios = [
            estimate_tokens(m) / (3 + sum(4 + count(str(x["content"])) for x in m))
            for m in requests
        ]
        _line("judge requests (calibration set)", ratios)
        for kind in ("docs (Markdown)", "other scripts (zh, ja, ru, de, fr)"):
            _line(kind, [text_tokens(t) / max(count(t), 1) for t in kinds[kind]])


def _line(kind: str, ratios: list[float]) -> None:
    print(
        f"{kind:34} n={len(ratios):4}  lowest {min(ratios):.3f}  median "
        f"{statistics.median(ratios):.3f}  highest {max(ratios):.3f}"
    )


if __name__ == "__main__":
    main()
