"""--prop-html: a self-contained page of every claim, escaped, checked in a real headless browser."""

from __future__ import annotations

import asyncio
import html
import json
import re
from pathlib import Path

import pytest

from pytest_propositions.record import FiledJudgeError
from tests.support.browser import chromium_page, file_url, find_chromium
from tests.support.html_page import cards, page_data
from tests.support.judge_server import ScriptedJudge, text, verdict
from tests.support.outcomes import assert_counts

PAYLOAD = "<script>window.__pwned = 1; document.title = 'pwned'</script><img src=x onerror=\"window.__pwned = 2\">"

SUITE = f"""
import pytest
from pytest_propositions.trace import Agent

@pytest.fixture
def hostile():
    mallory = Agent("Mallory")
    mallory.says({PAYLOAD!r})
    return mallory

def test_passes(world, assert_proposition, min_score):
    assert_proposition(world, "Oscar likes architecture.")
    min_score(world, "Oscar answers the question.", 6)

def test_fails(hostile, assert_proposition):
    assert_proposition(hostile, "Mallory stays <b>polite</b>.")

def test_judge_error(world, assert_proposition):
    assert_proposition(world, "Oscar hesitates.")
"""


@pytest.fixture
def report(pytester: pytest.Pytester, judge_server: ScriptedJudge, inner_run: list[str]) -> Path:
    pytester.makepyfile(test_page=SUITE)
    judge_server.on(
        "Oscar answers the question.", verdict(8, justification="He answers <quickly>.")
    )
    judge_server.on(
        "Mallory stays", verdict(False, justification="She injects </pre><script>x()</script>.")
    )
    judge_server.on("Oscar hesitates.", text("Maybe yes, maybe no."))
    result = pytester.runpytest_inprocess(*inner_run, "--prop-html=out/report.html")
    assert_counts(result, passed=1, failed=1, judge_errors=1)
    return pytester.path / "out" / "report.html"


def test_every_claim_is_in_the_page_and_every_value_is_escaped(report: Path) -> None:
    page = report.read_text(encoding="utf-8")
    # The page's own script, and its data, which no text can end: "<" is never written raw.
    assert page.count("<script") == 2
    assert page.count("<script>") == 1
    data = page.split('id="report-data">')[1].split("</script>")[0]
    assert "<" not in data and ">" not in data and "&" not in data
    assert "\\u003cscript\\u003ewindow.__pwned = 1" in data  # the trajectory, inert
    assert "She injects \\u003c/pre\\u003e\\u003cscript\\u003ex()" in data
    assert "http://" not in page and "https://" not in page  # nothing to fetch
    assert re.search(r"script-src 'sha256-[A-Za-z0-9+/=]+'", page)
    found = cards(page)
    assert sorted(card["filter"] for card in found) == ["error", "failed", "passed", "passed"]
    assert "Mallory stays <b>polite</b>." in [card["text"] for card in found]
    texts = [text for card in found for text in card["rows"].values()]
    assert "He answers <quickly>." in texts and "8/9, minimum 6" in texts
    [error] = [card for card in found if card["filter"] == "error"]
    # A judge error's card is headed by the claim it was about; the message says what failed.
    assert error["text"] == "Oscar hesitates." and error["error"].startswith("VerdictUnparsable: ")
    # The exact request: system instructions and the user turn with the fenced recording.
    contexts = [card["context"] for card in found if card["context"]]
    assert len(contexts) == 3
    assert all([role for role, _ in context] == ["system", "user"] for context in contexts)
    assert all("RECORDING" in context[1][1] for context in contexts)


def test_each_filter_says_its_own_count(report: Path) -> None:
    """Each filter reads its own count, and the shown count stands apart: no count can be read
    as the judge errors'."""
    page = report.read_text(encoding="utf-8")
    filters = re.search(r'<div class="filters">(.*?)</div>', page)
    assert filters is not None
    words = re.sub(r"<[^>]+>", "", filters.group(1))
    assert words == (
        "Show:  all (4)  passed (2)  failed (1)  not upheld (by call) (0)  by call (0)  "
        "judge errors (1) &middot; 4 of 4 shown"
    )
    assert "score histogram" in page  # a score claim (8/9): the histogram is there


def test_a_run_without_judge_errors_or_scores_says_so_and_has_no_histogram(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, inner_run: list[str]
) -> None:
    pytester.makepyfile(
        test_a="def test_a(world, assert_proposition):\n    assert_proposition(world, 'Oscar talks.')\n",
        test_b="def test_b(world, assert_proposition):\n    assert_proposition(world, 'Oscar sings.')\n",
    )
    judge_server.on("Oscar sings.", verdict(False, justification="He only talks."))
    result = pytester.runpytest_inprocess(*inner_run, "--prop-html=r.html")
    assert_counts(result, passed=1, failed=1)
    page = (pytester.path / "r.html").read_text(encoding="utf-8")
    assert "judge errors (0)</label>" in page and "failed (1)</label>" in page
    assert "inconclusive (" not in page  # a filter shown only when some claim is
    assert '<span id="shown">2</span> of 2 shown' in page
    assert "0 judge errors" in page  # the counts, as the terminal words them
    assert "histogram" not in page and '<div class="hist">' not in page


def test_contexts_are_kept_only_for_the_html_report() -> None:
    from pytest_propositions.runtime import Runtime
    from pytest_propositions.settings import Settings

    messages = [{"role": "user", "content": "x"}]
    plain = Runtime(Settings())
    plain.remember_context("k", messages)
    assert plain.record.contexts == {}
    with_html = Runtime(Settings(html="r.html"))
    with_html.remember_context("k", messages)
    assert with_html.record.contexts == {"k": messages}


CHROMIUM = find_chromium()


@pytest.mark.skipif(
    CHROMIUM is None, reason="no chromium on this machine (apt-get install chromium)"
)
def test_the_page_works_in_a_real_browser(report: Path) -> None:
    assert CHROMIUM is not None

    async def drive() -> None:
        async with chromium_page(CHROMIUM) as page:
            await page.open(file_url(report))
            assert await page.evaluate("document.body.getAttribute('data-ready')") == "1"
            visible = "Array.from(document.querySelectorAll('.claim')).filter(e => !e.hidden).map(e => e.dataset.status).sort().join(',')"
            assert await page.evaluate(visible) == "error,failed,passed,passed"
            assert await page.evaluate(
                "Array.from(document.querySelectorAll('details.context')).every(d => !d.open)"
            )
            # The hostile trajectory is text on the page, not markup that ran.
            assert await page.evaluate("typeof window.__pwned") == "undefined"
            assert await page.evaluate("document.title") == "Propositions report"
            assert await page.evaluate("document.querySelectorAll('img').length") == 0
            assert "window.__pwned = 1" in await page.evaluate("document.body.textContent")
            await page.evaluate("document.querySelector('input[value=failed]').click()")
            assert await page.evaluate(visible) == "failed"
            assert await page.evaluate("document.getElementById('shown').textContent") == "1"
            await page.evaluate("document.querySelector('input[value=judge-errors]').click()")
            assert await page.evaluate(visible) == "error"
            await page.evaluate("document.querySelector('input[value=all]').click()")
            assert await page.evaluate(visible) == "error,failed,passed,passed"
            # A link to the filtered page opens filtered.
            await page.open("about:blank")  # a new document: only the hash changes below
            await page.open(file_url(report) + "#failures")
            assert await page.evaluate(visible) == "failed"
            # Opening a context shows the exact request.
            await page.evaluate("document.querySelector('details.context').open = true")
            assert "RECORDING" in await page.evaluate(
                "document.querySelector('details.context').innerText"
            )
            assert page.errors == []

    asyncio.run(drive())


def test_claims_go_into_pytest_html_when_it_is_installed(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, inner_run: list[str]
) -> None:
    pytest.importorskip("pytest_html")
    pytester.makepyfile(test_page=SUITE)
    judge_server.on(
        "Mallory stays", verdict(False, justification="She injects </pre><script>x()</script>.")
    )
    pytester.runpytest_inprocess(*inner_run, "--html=ph.html", "--self-contained-html")
    page = (pytester.path / "ph.html").read_text(encoding="utf-8")
    blob = re.search(r'data-jsonblob="([^"]*)"', page)
    assert blob is not None
    tests = json.loads(html.unescape(blob.group(1)))["tests"]
    [failed] = tests["test_page.py::test_fails"]
    [extra] = failed["extras"]
    assert extra["format_type"] == "html"
    # pytest-html inserts the fragment as markup: the fragment escapes the hostile text itself.
    assert "Mallory stays &lt;b&gt;polite&lt;/b&gt;." in extra["content"]
    assert "She injects &lt;/pre&gt;&lt;script&gt;x()&lt;/script&gt;." in extra["content"]
    assert "<script" not in extra["content"]
    # The context the judge saw comes along, escaped and collapsed.
    assert "&lt;script&gt;window.__pwned = 1" in extra["content"]
    assert '<details class="context">' in extra["content"]


@pytest.mark.slow  # a pytest subprocess on xdist workers
def test_under_xdist_the_controller_gets_the_workers_contexts(
    pytester: pytest.Pytester, judge_server: ScriptedJudge, inner_run: list[str]
) -> None:
    pytest.importorskip("xdist")
    pytester.makepyfile(
        test_a="def test_a(world, assert_proposition):\n    assert_proposition(world, 'Oscar talks.')\n",
        test_b="def test_b(world, assert_proposition):\n    assert_proposition(world, 'Oscar travels.')\n",
    )
    result = pytester.runpytest_subprocess(*inner_run, "-n", "2", "--prop-html=r.html")
    result.assert_outcomes(passed=2)
    page = (pytester.path / "r.html").read_text(encoding="utf-8")
    assert [len(card["context"]) for card in cards(page)] == [2, 2]


def test_the_templates_quote_every_attribute_with_double_quotes() -> None:
    """chevron escapes ``"`` in values but not ``'``: an attribute quoted with ``'`` would let a
    value close it. Every attribute of the package's templates is quoted with ``"``."""
    from importlib.resources import files

    from pytest_propositions.reports.html import TEMPLATES

    for name in TEMPLATES:
        if name.endswith(".mustache"):
            text = (files("pytest_propositions.reports") / "templates" / name).read_text()
            assert re.findall(r"=\s*'", text) == [], name


# -- issue 51 item 14 and issue 52 item 2: search, filters, grouping, sort; each text once --------


def synthetic_page(path: Path, tests: int = 30, per_test: int = 15) -> Path:
    """A page of ``tests * per_test`` claims made as a run makes them (outcomes, the messages
    the judge saw), without running pytest: passed, failed, by call, scores, and a judge error
    in every tenth test."""
    from pytest_propositions.judging.prompts import build_messages
    from pytest_propositions.record import Outcome
    from pytest_propositions.reports.html import page
    from pytest_propositions.runtime import Runtime
    from pytest_propositions.settings import Settings
    from pytest_propositions.verdict import Verdict

    runtime = Runtime(Settings(html=str(path)))
    record = runtime.record
    for test in range(tests):
        test_id = f"test_suite.py::test_{test:03d}"
        recording = f"Oscar: I visited city {test} and liked its quiet streets."
        for claim in range(per_test):
            number = test * per_test + claim
            text = f"Claim {number}: Oscar likes city {test}."
            score = claim % 3 == 2
            value: bool | int = (number % 10) if score else (claim % 4 != 1)
            kind = "score" if score else "check"
            key = f"{number:064x}"
            verdict = Verdict(
                kind=kind,  # type: ignore[arg-type]
                claim=text,
                value=value,
                justification=f"Justification {number}: he says so.",
                model="openai/judge-model",
                key=key,
            )
            by_call = "check_proposition" if claim in (3, 9) else None
            threshold = 5 if score else None
            passed = value >= 5 if score else bool(value)
            record.add(Outcome(test_id, verdict, threshold, passed, by_call=by_call))
            record.contexts[key] = build_messages(kind, text, recording, None)  # type: ignore[arg-type]
        if test % 10 == 0:
            record.judge_errors.append(
                FiledJudgeError(
                    test_id, f"JudgeUnavailable: no answer (claim 'E{test}')", f"E{test}"
                )
            )
    path.write_text(page(runtime), encoding="utf-8")
    return path


def test_each_distinct_context_text_is_stored_once_and_every_context_reads_back_whole(
    tmp_path: Path,
) -> None:
    from pytest_propositions.judging.prompts import build_messages, system_prompt

    page = synthetic_page(tmp_path / "r.html", tests=4, per_test=10).read_text(encoding="utf-8")
    data = page_data(page)
    texts = data["texts"]
    assert len(texts) == len(set(texts))
    # Each paragraph of the system prompts and each test's recording: once in the page.
    for kind in ("check", "score"):
        for paragraph in system_prompt(kind).split("\n\n"):
            assert texts.count(paragraph) == 1
            written = json.dumps(paragraph, ensure_ascii=False)
            for raw, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
                written = written.replace(raw, escaped)
            assert page.count(written) == 1
    for test in range(4):
        assert page.count(f"I visited city {test} and") == 1
    found = cards(page)
    claims = [card for card in found if card["filter"] != "error"]
    assert len(claims) == 40
    for number, card in enumerate(claims):
        test = number // 10
        kind = "score" if number % 10 % 3 == 2 else "check"
        recording = f"Oscar: I visited city {test} and liked its quiet streets."
        expected = build_messages(kind, card["text"], recording, None)  # type: ignore[arg-type]
        assert card["context"] == [(m["role"], m["content"]) for m in expected]


@pytest.mark.skipif(
    CHROMIUM is None, reason="no chromium on this machine (apt-get install chromium)"
)
def test_search_filters_grouping_sort_and_the_judge_errors_link_in_a_real_browser(
    tmp_path: Path,
) -> None:
    assert CHROMIUM is not None
    report = synthetic_page(tmp_path / "r.html")  # 450 claims, 3 judge errors
    url = file_url(report)
    shown = "document.querySelectorAll('#claims .claim').length"
    statuses = "Array.from(new Set(Array.from(document.querySelectorAll('#claims .claim')).map(e => e.dataset.status))).sort().join(',')"
    count = "document.getElementById('shown').textContent"

    def label(value: str) -> str:
        return f"document.querySelector('input[value={value}]').parentNode.textContent"

    async def drive() -> None:
        async with chromium_page(CHROMIUM) as page:
            # The judge errors' link (the filter's own name) opens on them alone.
            await page.open(url + "#judge-errors")
            assert await page.evaluate(statuses) == "error"
            assert await page.evaluate(count) == "3"
            assert await page.evaluate(
                "document.querySelector('input[value=judge-errors]').checked"
            )
            heading = "document.querySelector('#claims .claim .text').textContent"
            assert await page.evaluate(heading) == "E0"
            await page.open("about:blank")
            await page.open(url + "#errors")  # the older link still works
            assert await page.evaluate(statuses) == "error"
            await page.open("about:blank")
            await page.open(url)
            assert await page.evaluate("document.body.getAttribute('data-ready')") == "1"
            # 453 cards: the first 100 are built, the rest on asking.
            assert await page.evaluate(count) == "453"
            assert await page.evaluate(shown) == 100
            await page.evaluate("document.getElementById('more').click()")
            assert await page.evaluate(shown) == 200
            # Each filter shows its own cards, as many as its label says.
            expected = {
                "passed": "passed",
                "failed": "failed",
                "not-upheld": "by-call-not-upheld",
                "by-call": "by-call-not-upheld,by-call-upheld",
                "judge-errors": "error",
            }
            for value, status in expected.items():
                await page.evaluate(f"document.querySelector('input[value={value}]').click()")
                assert await page.evaluate(statuses) == status, value
                number = await page.evaluate(count)
                assert f"({number})" in await page.evaluate(label(value)), value
            assert await page.evaluate("location.hash") == "#judge-errors"
            await page.evaluate("document.querySelector('input[value=all]').click()")
            # Search: a claim's words, then a justification's.
            search = (
                "(q => { const s = document.getElementById('search'); s.value = q;"
                " s.dispatchEvent(new Event('input')); })"
            )
            await page.evaluate(f"{search}('CLAIM 137:')")
            assert await page.evaluate(count) == "1"
            assert "Claim 137:" in await page.evaluate(heading)
            await page.evaluate(f"{search}('justification 42:')")
            assert await page.evaluate(count) == "1"
            await page.evaluate(f"{search}('city 7.')")
            assert await page.evaluate(count) == "15"
            await page.evaluate(f"{search}('')")
            # Sort: lowest score first.
            await page.evaluate(
                "(s => { s.value = 'score'; s.dispatchEvent(new Event('change')); })"
                "(document.getElementById('sort'))"
            )
            first = "document.querySelector('#claims .claim dd:nth-of-type(2)').textContent"
            assert (await page.evaluate(first)).startswith("0/9")
            # Grouped by test: a heading per test, each test's cards together.
            await page.evaluate("document.getElementById('group').click()")
            order = (
                "Array.from(document.querySelectorAll('#claims > *')).map(e =>"
                " e.tagName === 'H3' ? 'H:' + e.firstChild.textContent.trim()"
                " : e.querySelector('.test').textContent)"
            )
            items = await page.evaluate(order)
            heads = [item[2:] for item in items if item.startswith("H:")]
            assert len(heads) == len(set(heads)) > 1
            current = None
            for item in items:
                if item.startswith("H:"):
                    current = item[2:]
                else:
                    assert item == current
            # A context is built when opened, whole.
            await page.evaluate("document.querySelector('#claims details.context').open = true")
            await asyncio.sleep(0.2)
            assert "RECORDING" in await page.evaluate(
                "document.querySelector('#claims details.context').innerText"
            )
            assert page.errors == []

    asyncio.run(drive())
