"""How big is the HTML report of a large run, and how fast does it open next to a plain page?

In one run this script:

1. makes the report of ``--claims`` claims (10,000 by default, 20 to a test) the way a run
   makes it: the plugin's own ``reports.html.page`` over a run's record, each claim's context
   the messages the plugin's own prompt builder (``judging.prompts.build_messages``) makes for
   its test's recording, cached verdicts with a justification and reasoning of a real judge's
   length, a score on every third claim, one claim in twenty failed, two by call and a judge
   error in every fiftieth test (no pytest run: the page reads only the record);
2. writes a plain page of the same size beside it: the same texts as paragraphs of markup in
   a hidden block (parsed into elements, not laid out: 7 MB of paragraphs laid out take
   Chromium seconds, a baseline any page would beat), a heading, no script, no style;
3. opens each in headless Chromium (tests/support/browser.py), alternating them round by
   round, and times from the navigation's start to the first frame after the load event (two
   animation frames), so the script's work and the layout are in it;
4. times the report's search, a filter, grouping and a sort at that size (the script's work
   and the layout it forces).

It prints the bytes a claim (target <= 1,200) and the open time's ratio to the plain page's
(target <= 1.2), min/median/max over the rounds. ``--code DIR`` measures the package in another
checkout (``git archive <commit> | tar -x -C DIR``), for before/after figures:

    python bench/html_report.py [--claims 10000] [--rounds 5] [--code DIR]

It is not a test and CI does not run it: timings on a shared machine are noise, not verdicts.
"""

from __future__ import annotations

import argparse
import asyncio
import html
import json
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BYTES_TARGET = 1200
RATIO_TARGET = 1.2
PER_TEST = 20

# What a real judge writes (lengths of gpt-4.1-mini's replies on the bundled examples).
JUSTIFICATION = (
    "Oscar says he likes quiet cities with great architecture, which states a travel "
    "preference directly; claim {n} holds."
)
REASONING = (
    "The recording has one turn by Oscar. He is asked where he likes to travel and answers "
    "'quiet cities with great architecture'. The claim asks whether he mentions his travel "
    "preferences; his answer is one. Nothing in the recording contradicts it (claim {n})."
)


def recording(test: int) -> str:
    """A test's recording: a few turns, as the trace renders a small conversation."""
    return "\n".join(
        [
            f"[2026-11-20T10:{test % 60:02d}:00] Lisa hears: Where do you like to travel, Oscar?",
            f"[2026-11-20T10:{test % 60:02d}:05] Oscar says: Quiet cities with great "
            f"architecture; last spring it was city {test}.",
            f"[2026-11-20T10:{test % 60:02d}:09] Lisa says: I prefer beaches, to be honest.",
            f"[2026-11-20T10:{test % 60:02d}:12] Oscar thinks: She would not like city {test}.",
        ]
    )


def build_report(claims: int, path: Path) -> str:
    """The report of ``claims`` claims, written to ``path``; returns its text."""
    from pytest_propositions.judging.prompts import build_messages
    from pytest_propositions.record import Outcome
    from pytest_propositions.reports.html import page
    from pytest_propositions.runtime import Runtime
    from pytest_propositions.settings import Settings
    from pytest_propositions.verdict import Verdict

    runtime = Runtime(Settings(html=str(path), model="openai/gpt-4.1-mini"))
    record = runtime.record
    for number in range(claims):
        test, index = divmod(number, PER_TEST)
        test_id = f"tests/test_travel_{test // 50:02d}.py::test_case_{test:04d}"
        score = number % 3 == 2
        kind = "score" if score else "check"
        failed = number % 20 == 7
        value: bool | int = (3 if failed else 8) if score else not failed
        claim = f"Oscar mentions his travel preferences (claim {number})."
        key = f"{number:016x}" * 4
        verdict = Verdict(
            kind=kind,  # type: ignore[arg-type]
            claim=claim,
            value=value,
            justification=JUSTIFICATION.format(n=number),
            reasoning=REASONING.format(n=number),
            confidence=0.9,
            model="openai/gpt-4.1-mini",
            cached=True,
            recorded_at=f"2026-11-20T10:{test % 60:02d}:{index:02d}+00:00",
            key=key,
            cost_usd=0.000183,
        )
        by_call = "check_proposition" if index in (4, 5) else None
        threshold = 6 if score else None
        where = f"tests/test_travel_{test // 50:02d}.py:{12 + index}" if index < 10 else None
        record.add(Outcome(test_id, verdict, threshold, not failed, where=where, by_call=by_call))
        messages = build_messages(kind, claim, recording(test), None)  # type: ignore[arg-type]
        record.remember_context(key, messages, wanted=True)
        if index == 0 and test % 50 == 0:
            record.judge_errors.append(
                (test_id, f"JudgeUnavailable: the judge timed out (claim 'Oscar is calm {test}.')")
            )
    text = page(runtime)
    path.write_text(text, encoding="utf-8")
    return text


def plain_page(report: str, path: Path) -> None:
    """A page of the same size as ``report``: its texts as paragraphs in a hidden block (the
    browser parses them, as it parses the report's data, but lays out none), no script."""
    words = [html.escape(line) for line in report.splitlines() if line.strip()]
    head = (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>plain</title>'
        "</head><body>\n<h1>A plain page</h1><div hidden>\n"
    )
    tail = "</div></body></html>\n"
    size = len(report.encode("utf-8")) - len(head) - len(tail)
    parts: list[str] = []
    written = 0
    index = 0
    while written < size:
        line = f"<p>{words[index % len(words)][:300]}</p>\n"
        parts.append(line)
        written += len(line.encode("utf-8"))
        index += 1
    body = "".join(parts).encode("utf-8")[:size].decode("utf-8", "ignore")
    path.write_text(head + body + tail, encoding="utf-8")


# Milliseconds from the navigation's start to the first frame after the load event.
OPENED = (
    "new Promise(done => requestAnimationFrame(() => requestAnimationFrame("
    "() => done(performance.now()))))"
)
# The script's work and the layout it forces, in milliseconds.
TIMED = (
    "(() => {{ const started = performance.now(); {action}; document.body.offsetHeight;"
    " return performance.now() - started; }})()"
)
ACTIONS = {
    "search 'claim 4242)'": "const s = document.getElementById('search'); s.value = 'claim 4242)';"
    " s.dispatchEvent(new Event('input'))",
    "search cleared": "const s = document.getElementById('search'); s.value = '';"
    " s.dispatchEvent(new Event('input'))",
    "filter failed": "document.querySelector('input[value=failed]').click()",
    "filter all": "document.querySelector('input[value=all]').click()",
    "group by test": "document.getElementById('group').click()",
    "sort lowest score": "const o = document.getElementById('sort'); o.value = 'score';"
    " o.dispatchEvent(new Event('change'))",
}


async def measure(report: Path, plain: Path, rounds: int, actions: bool) -> dict[str, list[float]]:
    from tests.support.browser import chromium_page, file_url, find_chromium

    chromium = find_chromium()
    if chromium is None:
        sys.exit("no chromium on this machine (apt-get install chromium)")
    times: dict[str, list[float]] = {"report": [], "plain": [], **{a: [] for a in ACTIONS}}
    async with chromium_page(chromium) as page:

        async def opened(path: Path) -> float:
            await page.open("about:blank")
            # (page.open waits 30 s at most: the report of before issue 52 took longer.)
            loaded = page._events.setdefault("Page.loadEventFired", asyncio.Event())
            loaded.clear()
            await page.send("Page.navigate", url=file_url(path))
            await asyncio.wait_for(loaded.wait(), 600)
            result = await page.send(
                "Runtime.evaluate", expression=OPENED, awaitPromise=True, returnByValue=True
            )
            return float(result["result"]["value"])

        await opened(report)  # warm up: the browser's own start is in neither page's time
        await opened(plain)
        for number in range(rounds):
            order = [("report", report), ("plain", plain)]
            if number % 2:
                order.reverse()
            for name, path in order:
                times[name].append(await opened(path))
            if actions:
                await opened(report)
                # (A page from before issue 51 has no search, filters of these names or sort.)
                if await page.evaluate("!!document.getElementById('search')"):
                    for name, action in ACTIONS.items():
                        times[name].append(float(await page.evaluate(TIMED.format(action=action))))
            ratio = times["report"][-1] / times["plain"][-1]
            print(
                f"  round {number + 1}: report {times['report'][-1]:.0f} ms, plain "
                f"{times['plain'][-1]:.0f} ms, ratio {ratio:.2f}",
                flush=True,
            )
    return times


def spread(values: list[float], digits: int = 2) -> str:
    ordered = sorted(values)
    middle = (
        ordered[len(ordered) // 2]
        if len(ordered) % 2
        else sum(ordered[len(ordered) // 2 - 1 : len(ordered) // 2 + 1]) / 2
    )
    return f"min {ordered[0]:.{digits}f}, median {middle:.{digits}f}, max {ordered[-1]:.{digits}f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--claims", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--code", type=Path, help="a checkout whose package is measured")
    parser.add_argument("--keep", type=Path, help="write the two pages into this folder")
    arguments = parser.parse_args()
    sys.path.insert(0, str(REPO))
    if arguments.code is not None:
        sys.path.insert(0, str(arguments.code.resolve()))
    import pytest_propositions
    from bench._common import machine, revision

    print(f"machine: {machine()}")
    print(f"package: {Path(pytest_propositions.__file__).parent} (this checkout: {revision()})")
    with tempfile.TemporaryDirectory(prefix="prop-html-bench-") as folder:
        where = arguments.keep or Path(folder)
        where.mkdir(parents=True, exist_ok=True)
        report, plain = where / "report.html", where / "plain.html"
        text = build_report(arguments.claims, report)
        plain_page(text, plain)
        size = report.stat().st_size
        per_claim = size / arguments.claims
        print(
            f"report: {size:,} bytes for {arguments.claims:,} claims, {per_claim:,.0f} bytes a "
            f"claim (target <= {BYTES_TARGET:,}); plain page {plain.stat().st_size:,} bytes"
        )
        times = asyncio.run(measure(report, plain, arguments.rounds, actions=True))
    ratios = [r / p for r, p in zip(times["report"], times["plain"], strict=True)]
    print(f"open, report (ms): {spread(times['report'], 0)}")
    print(f"open, plain page of the same size (ms): {spread(times['plain'], 0)}")
    ok = "ok" if sorted(ratios)[len(ratios) // 2] <= RATIO_TARGET else "MISSED"
    print(f"open-time ratio, report / plain: {spread(ratios)} (target <= {RATIO_TARGET}) {ok}")
    ok = "ok" if per_claim <= BYTES_TARGET else "MISSED"
    print(f"bytes a claim: {per_claim:,.0f} (target <= {BYTES_TARGET:,}) {ok}")
    for name in ACTIONS:
        if times[name]:
            print(f"{name} (ms, script and layout): {spread(times[name], 1)}")
    print(json.dumps({"bytes_a_claim": round(per_claim), "ratios": [round(r, 3) for r in ratios]}))


if __name__ == "__main__":
    main()
