"""--prop-html: a self-contained page of every claim, escaped, checked in a real headless browser."""

from __future__ import annotations

import asyncio
import html
import json
import re
from pathlib import Path

import pytest

from tests.support.browser import chromium_page, file_url, find_chromium
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
    assert page.count("<script") == 1  # only the page's own script
    assert "&lt;script&gt;window.__pwned = 1" in page  # the trajectory, inert
    assert "She injects &lt;/pre&gt;&lt;script&gt;x()&lt;/script&gt;." in page
    assert "Mallory stays &lt;b&gt;polite&lt;/b&gt;." in page
    assert "He answers &lt;quickly&gt;." in page
    assert "http://" not in page and "https://" not in page  # nothing to fetch
    assert re.search(r"script-src 'sha256-[A-Za-z0-9+/=]+'", page)
    assert page.count('data-status="passed"') == 2
    assert page.count('data-status="failed"') == 1
    assert page.count('data-status="error"') == 1
    assert "8/9, minimum 6" in page and "VerdictUnparsable" in page
    # The exact request: system instructions and the user turn with the fenced recording.
    assert page.count('<details class="context">') == 3
    assert "<h4>system</h4>" in page and "RECORDING" in page


def test_each_filter_says_its_own_count(report: Path) -> None:
    """The filters read "all (4)", "failed (1)", "judge errors (1)", and the shown count stands
    apart: no count can be read as the judge errors'."""
    page = report.read_text(encoding="utf-8")
    filters = re.search(r'<div class="filters">(.*?)</div>', page)
    assert filters is not None
    words = re.sub(r"<[^>]+>", "", filters.group(1))
    assert words == "Show:  all (4)  failed (1)  judge errors (1) &middot; 4 of 4 shown"
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
            await page.evaluate("document.querySelector('input[value=failures]').click()")
            assert await page.evaluate(visible) == "failed"
            assert await page.evaluate("document.getElementById('shown').textContent") == "1"
            await page.evaluate("document.querySelector('input[value=errors]').click()")
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
    assert page.count('<details class="context">') == 2
    assert "No judge request was recorded" not in page


def test_the_templates_quote_every_attribute_with_double_quotes() -> None:
    """chevron escapes ``"`` in values but not ``'``: an attribute quoted with ``'`` would let a
    value close it. Every attribute of the package's templates is quoted with ``"``."""
    from importlib.resources import files

    from pytest_propositions.reports.html import TEMPLATES

    for name in TEMPLATES:
        if name.endswith(".mustache"):
            text = (files("pytest_propositions.reports") / "templates" / name).read_text()
            assert re.findall(r"=\s*'", text) == [], name
