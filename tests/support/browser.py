"""A headless Chromium driven over the DevTools protocol, for testing the HTML report for real.

Only the OS package's browser is used (no download); aiohttp (a litellm dependency) carries the
protocol's websocket. The browser is started with no network features and a throwaway profile.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def find_chromium() -> str | None:
    for name in CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    return None


class Page:
    """One tab: evaluate JavaScript, and the console errors, exceptions and log errors seen."""

    def __init__(self, socket: aiohttp.ClientWebSocketResponse) -> None:
        self._socket = socket
        self._ids = 0
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._events: dict[str, asyncio.Event] = {}
        self.errors: list[str] = []
        self._reader = asyncio.get_running_loop().create_task(self._read())

    async def _read(self) -> None:
        async for message in self._socket:
            data = json.loads(message.data)
            if "id" in data and data["id"] in self._waiting:
                self._waiting.pop(data["id"]).set_result(data)
                continue
            method = data.get("method", "")
            params = data.get("params", {})
            if method == "Runtime.exceptionThrown":
                self.errors.append(json.dumps(params.get("exceptionDetails", {}))[:500])
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                self.errors.append(json.dumps(params.get("args", []))[:500])
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                self.errors.append(params["entry"].get("text", "")[:500])
            self._events.setdefault(method, asyncio.Event()).set()

    async def send(self, method: str, **params: Any) -> dict[str, Any]:
        self._ids += 1
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[self._ids] = future
        await self._socket.send_str(
            json.dumps({"id": self._ids, "method": method, "params": params})
        )
        reply = await asyncio.wait_for(future, 30)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return dict(reply.get("result", {}))

    async def open(self, url: str) -> None:
        loaded = self._events.setdefault("Page.loadEventFired", asyncio.Event())
        loaded.clear()
        await self.send("Page.navigate", url=url)
        await asyncio.wait_for(loaded.wait(), 30)

    async def evaluate(self, expression: str) -> Any:
        result = await self.send("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")


@asynccontextmanager
async def chromium_page(executable: str) -> AsyncIterator[Page]:
    """A fresh headless browser and one page with the console and log domains enabled."""
    profile = tempfile.mkdtemp(prefix="prop-chromium-")
    process = subprocess.Popen(
        [
            executable,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            f"--user-data-dir={profile}",
            "--remote-debugging-address=127.0.0.1",
            "--remote-debugging-port=0",
            "about:blank",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        browser_url = None
        for _ in range(200):
            line = await asyncio.to_thread(process.stderr.readline)
            if not line:
                break
            found = re.search(r"DevTools listening on (ws://\S+)", line)
            if found:
                browser_url = found.group(1)
                break
        if browser_url is None:
            raise RuntimeError("chromium did not start its DevTools endpoint")
        port = re.search(r":(\d+)/", browser_url)
        assert port is not None
        async with aiohttp.ClientSession() as session:
            async with session.get(f"http://127.0.0.1:{port.group(1)}/json/list") as response:
                targets = await response.json(content_type=None)
            page_url = next(t["webSocketDebuggerUrl"] for t in targets if t.get("type") == "page")
            async with session.ws_connect(page_url, max_msg_size=0) as socket:
                page = Page(socket)
                for domain in ("Page", "Runtime", "Log"):
                    await page.send(f"{domain}.enable")
                yield page
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        shutil.rmtree(profile, ignore_errors=True)


def file_url(path: Path) -> str:
    return path.resolve().as_uri()
