"""The local judge's server process: llama.cpp's own HTTP server, from xllamacpp's prebuilt wheel.

Run as ``python -m pytest_propositions.local_serve --model FILE --port N ...`` by
``local.LocalServer``; not meant to be started by hand. A separate process, not a server inside
pytest, so that the parent can always stop it (a signal to its process group) and the kernel or
the watchdog below stops it when pytest dies, however it dies.

This module imports nothing from the plugin: it runs in its own interpreter with only xllamacpp.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time

__all__ = ["main"]

# Checked this often; a parent that died is noticed within this time.
_WATCH_SECONDS = 0.5
# Exit codes the parent reads in the log anyway; distinct to make a log easy to search.
EXIT_NO_ENGINE = 3
EXIT_START_FAILED = 4


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m pytest_propositions.local_serve")
    parser.add_argument("--model", required=True, help="the .gguf model file")
    parser.add_argument("--alias", required=True, help="the model name the server publishes")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--ctx", type=int, required=True, help="context size in tokens")
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument(
        "--parent", type=int, default=0, help="exit when this process is no longer our parent"
    )
    return parser.parse_args(argv)


def _watch_parent(parent: int) -> None:
    """Exit as soon as the process that started us is gone.

    Linux's parent-death signal already covers this; the watchdog covers the systems without
    one (macOS) and a parent that died before the signal was armed.
    """
    while True:
        if os.getppid() != parent:
            os._exit(0)
        time.sleep(_WATCH_SECONDS)


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    if args.parent:
        threading.Thread(target=_watch_parent, args=(args.parent,), daemon=True).start()
    try:
        import xllamacpp
    except ImportError as error:
        print(
            f"the local judge needs the xllamacpp package, which cannot be imported ({error}): "
            'pip install "pytest-propositions[local]"',
            flush=True,
        )
        return EXIT_NO_ENGINE
    params = xllamacpp.CommonParams()
    params.model.path = args.model
    params.model_alias = {args.alias}
    params.hostnames = ["127.0.0.1"]
    params.port = args.port
    params.n_ctx = args.ctx
    # One request at a time, each with the whole context: the judge sends one at a time anyway,
    # and a single slot makes the answer independent of what other requests are in flight.
    params.n_parallel = 1
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    # Loading is a memory map; a warm-up pass would only move its cost from the first request
    # to the start-up.
    params.warmup = False
    # Every prompt is read whole. Reusing the previous request's cached prefix reads the rest in
    # batches of another size, and llama.cpp's logits then differ in the last bits (its server
    # documents this): the same request could get another verdict. Determinism first.
    params.cache_prompt = False
    try:
        server = xllamacpp.Server(params)
    except RuntimeError as error:
        # llama.cpp has logged the reason (bad model file, port in use) just above.
        print(f"the local judge server could not start: {error}", flush=True)
        return EXIT_START_FAILED
    print(f"local judge {args.alias} listening on {server.listening_address}", flush=True)
    # The HTTP server runs on llama.cpp's threads; SIGTERM's default action ends the process.
    while True:
        time.sleep(3600)


if __name__ == "__main__":  # pragma: no cover - run as a process by local.LocalServer
    sys.exit(main())
