"""The local judge's server process: llama.cpp's own HTTP server, from xllamacpp's prebuilt wheel.

Run as ``python -m pytest_propositions.local.serve --model FILE --port N ...`` by
``local.LocalServer``; not meant to be started by hand. A separate process, not a server inside
pytest, so that the parent can always stop it (a signal to its process group) and the kernel or
the watchdog below stops it when pytest dies, however it dies.

llama.cpp listens on a loopback port of its own choosing; the published port is a small front
(``PromptReuse``) that passes every request through and decides one thing: whether llama.cpp may
reuse the prompt it kept from the previous request.

This module imports nothing from the plugin but its install hint (errors.py, which the package's
``__init__`` loads anyway): it runs in its own interpreter with only xllamacpp.
"""

from __future__ import annotations

import argparse
import http.client
import http.server
import json
import os
import select
import socket
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable
from typing import Any

from ..errors import install_hint

__all__ = ["GONE", "PromptReuse", "generation_threads", "main"]

# Checked this often; a parent that died is noticed within this time.
_WATCH_SECONDS = 0.5
# Exit codes the parent reads in the log anyway; distinct to make a log easy to search.
EXIT_NO_ENGINE = 3
EXIT_START_FAILED = 4
# At most this many threads generate the reply, one token at a time: each token is a few small
# steps that the threads meet after, so a thread that loses its core stalls every token.
# Generation leaves one of the server's cores to the rest of the machine (pytest, other jobs):
# on 2 cores, 2 generation threads made the example suite 48 s on a quiet machine but 93 s
# beside one busy process, against 53 s and 75 s with 1. More than 2 were not measured.
MAX_GENERATION_THREADS = 2
# How long (in spins) a llama.cpp thread that waits for the others spins before it sleeps. The
# OpenMP default spins for long: on busy cores a waiting thread then burns the time slice the
# late thread needs, and 2 threads generated 0.3-1 tokens/s where 1 made 7-36. At 2,000 spins,
# 2 threads made 19 tokens/s on busy cores (1 thread: 36) and 53 on quiet ones (1 thread: 34).
SPIN_COUNT = "2000"
# Prompt caches the engine keeps, one per kind of instructions (see PromptReuse).
SLOTS = 2
# Prompt tokens read per step of the engine's loop: the size llama.cpp computes them in anyway
# (its ubatch), so the arithmetic is the same as in one step of 2,048 (measured: the same
# log-probabilities for every token of a reply to a 1,609-token prompt). What changes is that
# /slots counts the prompt read after each step: the judge watches it to tell a server slowed
# by a busy machine (a step every few seconds) from a hung one.
PROMPT_BATCH = 512

# (status, content type, body) of one exchange with the engine.
Reply = tuple[int, str, bytes]
# What a request whose client has gone gets instead (nginx's code for it; nobody reads it).
GONE: Reply = (499, "text/plain", b"the client closed its connection before its turn")


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m pytest_propositions.local.serve")
    parser.add_argument("--model", required=True, help="the .gguf model file")
    parser.add_argument("--alias", required=True, help="the model name the server publishes")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument(
        "--ctx", type=int, required=True, help="context size per request, in tokens"
    )
    parser.add_argument(
        "--threads",
        type=int,
        required=True,
        help="threads that read prompts (all but one of them, at most 2, generate)",
    )
    parser.add_argument(
        "--parent", type=int, default=0, help="exit when this process is no longer our parent"
    )
    return parser.parse_args(argv)


def generation_threads(threads: int) -> int:
    """Threads that generate, for a server given ``threads``: all but one, at most 2."""
    return max(1, min(MAX_GENERATION_THREADS, threads - 1))


def _watch_parent(parent: int) -> None:
    """Exit as soon as the process that started us is gone.

    Linux's parent-death signal already covers this; the watchdog covers the systems without
    one (macOS) and a parent that died before the signal was armed.
    """
    while True:
        if os.getppid() != parent:
            os._exit(0)
        time.sleep(_WATCH_SECONDS)


class PromptReuse:
    """Lets llama.cpp reuse a cached prompt only where that cannot change an answer.

    With flash attention off, llama.cpp computes a prompt token to the same bits whatever the
    batch it is read in and however many threads read it, as long as the batch holds two tokens
    or more (measured: identical log-probabilities from a fresh server, after a shared prefix of
    any length, on 1, 2 or 3 threads, in batches of 64 to 512). Reusing the instructions at the
    start of every prompt then costs nothing in determinism and saves most of the reading.

    Each slot keeps the cache of the last prompt it read, and a request goes to the slot that
    last read the same instructions (its first message), else to the slot used least recently:
    check and score prompts then each keep their own instructions cached.

    The one exception is a prompt a slot holds whole, i.e. the same conversation sent again (a
    retry, ``--prop-cache=off``, two workers asking the same claim): llama.cpp then re-reads its
    last token alone, and a one-token batch gives other logits. Such a request goes with the
    cache off; a reply that still shows a one-token read is asked again so. Requests are passed
    on one at a time, so what each slot holds is known.
    """

    def __init__(self, send: Callable[[str, bytes], Reply], slots: int = 1) -> None:
        self._send = send
        # Per slot: (its instructions, its last conversation), least recently used first.
        self._slots: dict[int, tuple[bytes | None, bytes | None]] = {
            slot: (None, None) for slot in range(slots)
        }
        self.lock = threading.Lock()

    def exchange(
        self, path: str, body: bytes, client_gone: Callable[[], bool] = lambda: False
    ) -> Reply:
        """Pass one request on; ``client_gone`` says whether its client stopped waiting (its
        timeout ran out while other requests went first): then it is dropped unread."""
        request = _json_object(body)
        if request is None:  # not ours to judge: llama.cpp answers it
            return self._send(path, body)
        messages = request.get("messages")
        first = messages[0] if isinstance(messages, list) and messages else None
        instructions = json.dumps(first, sort_keys=True).encode()
        conversation = json.dumps([messages, request.get("prompt")], sort_keys=True).encode()
        with self.lock:
            if client_gone():
                return GONE
            slot = self._slot_for(instructions)
            request["id_slot"] = slot
            if self._slots[slot][1] == conversation:
                request["cache_prompt"] = False
            reply = self._send(path, json.dumps(request).encode())
            if reply[0] == 200 and request.get("cache_prompt") is not False and _read_alone(reply):
                request["cache_prompt"] = False
                reply = self._send(path, json.dumps(request).encode())
            # A failed request may have left the slot holding anything: forget what it held.
            held = conversation if reply[0] == 200 else None
            del self._slots[slot]
            self._slots[slot] = (instructions, held)
            return reply

    def _slot_for(self, instructions: bytes) -> int:
        for slot, (held, _) in self._slots.items():
            if held == instructions:
                return slot
        return next(iter(self._slots))


def _json_object(body: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(body)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _read_alone(reply: Reply) -> bool:
    """Whether llama.cpp read only one token of a longer prompt (its ``timings``, ``usage``)."""
    answer = _json_object(reply[2])
    if answer is None:
        return False
    timings, usage = answer.get("timings"), answer.get("usage")
    if not isinstance(timings, dict) or not isinstance(usage, dict):
        return False
    read, total = timings.get("prompt_n"), usage.get("prompt_tokens")
    return isinstance(read, int) and isinstance(total, int) and read == 1 < total


class _Engine:
    """llama.cpp's own server, on the loopback port it chose."""

    def __init__(self, address: str) -> None:
        parts = urllib.parse.urlsplit(address)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80

    def post(self, path: str, body: bytes) -> Reply:
        return self._exchange("POST", path, body)

    def get(self, path: str) -> Reply:
        return self._exchange("GET", path, None)

    def _exchange(self, method: str, path: str, body: bytes | None) -> Reply:
        """The engine's answer; an engine that cannot be reached is a 502 that says so."""
        connection = http.client.HTTPConnection(self.host, self.port)
        try:
            headers = {"Content-Type": "application/json"} if body is not None else {}
            connection.request(method, path, body=body, headers=headers)
            response = connection.getresponse()
            return response.status, response.getheader("Content-Type") or "", response.read()
        except (OSError, http.client.HTTPException) as error:
            message = f"the local judge's llama.cpp server did not answer: {error!r}"
            return 502, "text/plain", message.encode()
        finally:
            connection.close()


def _front(port: int, engine: str, slots: int) -> http.server.ThreadingHTTPServer:
    """The server on the published port: every request goes to the engine, completions through
    ``PromptReuse``."""
    upstream = _Engine(engine)
    reuse = PromptReuse(upstream.post, slots)

    class Front(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:  # http.server calls it by this name
            self._answer(upstream.get(self.path))

        def do_POST(self) -> None:  # http.server calls it by this name
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.path.rstrip("/").endswith("completions"):
                self._answer(reuse.exchange(self.path, body, self._client_gone))
            else:
                self._answer(upstream.post(self.path, body))

        def _client_gone(self) -> bool:
            """Whether the client closed the connection (readable, and nothing to read)."""
            try:
                readable, _, _ = select.select([self.connection], [], [], 0)
                return bool(readable) and not self.connection.recv(1, socket.MSG_PEEK)
            except OSError:
                return True

        def _answer(self, reply: Reply) -> None:
            status, content_type, payload = reply
            try:
                self.send_response(status)
                if content_type:
                    self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (its timeout): nothing to tell it

        def log_message(self, format: str, *args: Any) -> None:
            pass  # llama.cpp logs each request already

    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Front)
    server.daemon_threads = True
    return server


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    if args.parent:
        threading.Thread(target=_watch_parent, args=(args.parent,), daemon=True).start()
    # Read by the OpenMP runtime when xllamacpp loads it, below.
    os.environ.setdefault("GOMP_SPINCOUNT", SPIN_COUNT)
    try:
        import xllamacpp
    except ImportError as error:
        print(
            f"the local judge needs the xllamacpp package, which cannot be imported ({error}): "
            f"{install_hint('local')}",
            flush=True,
        )
        return EXIT_NO_ENGINE
    params = xllamacpp.CommonParams()
    params.model.path = args.model
    params.model_alias = {args.alias}
    params.hostnames = ["127.0.0.1"]
    params.port = 0  # a free port of llama.cpp's choosing; the front publishes ours
    # A slot for check prompts and one for score prompts, each with the whole context. The front
    # passes one request at a time, so a batch never mixes two requests.
    params.n_parallel = SLOTS
    params.n_ctx = args.ctx * SLOTS
    params.n_batch = params.n_ubatch = PROMPT_BATCH
    params.cpuparams.n_threads = generation_threads(args.threads)
    params.cpuparams_batch.n_threads = args.threads
    # Loading is a memory map; a warm-up pass would only move its cost from the first request
    # to the start-up.
    params.warmup = False
    # Flash attention splits its work by batch and by thread, so its answer depends on both;
    # without it the answer depends on neither (see PromptReuse), which is what lets the
    # prompt's cached prefix be reused and the thread count follow the cores.
    params.flash_attn_type = xllamacpp.llama_flash_attn_type.LLAMA_FLASH_ATTN_TYPE_DISABLED
    params.cache_prompt = True
    # No second-level prompt cache in memory: each slot holds only its previous request, the
    # one thing PromptReuse keeps track of.
    params.cache_ram_mib = 0
    try:
        engine = xllamacpp.Server(params)
    except RuntimeError as error:
        # llama.cpp has logged the reason (bad model file) just above.
        print(f"the local judge server could not start: {error}", flush=True)
        return EXIT_START_FAILED
    try:
        front = _front(args.port, engine.listening_address, SLOTS)
    except OSError as error:
        print(f"the local judge cannot listen on 127.0.0.1:{args.port}: {error}", flush=True)
        return EXIT_START_FAILED
    print(
        f"local judge {args.alias} listening on http://127.0.0.1:{args.port} "
        f"(llama.cpp on {engine.listening_address})",
        flush=True,
    )
    # SIGTERM's default action ends the process, engine and front together.
    front.serve_forever()
    return 0


if __name__ == "__main__":  # pragma: no cover - run as a process by local.LocalServer
    sys.exit(main())
