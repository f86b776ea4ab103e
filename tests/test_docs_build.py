"""The documentation site builds with ``mkdocs build --strict``: no broken link, no orphan page.

Needs the ``docs`` extra (``pip install -e ".[docs]"``); skipped with that reason without it.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_propositions.settings import OPTIONS

ROOT = Path(__file__).resolve().parent.parent
DOCS_EXTRA = ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python")


def _missing_docs_extra() -> list[str]:
    missing = []
    for name in DOCS_EXTRA:
        try:
            found = importlib.util.find_spec(name) is not None
        except ModuleNotFoundError:
            found = False
        if not found:
            missing.append(name)
    return missing


pytestmark = pytest.mark.skipif(
    bool(_missing_docs_extra()),
    reason=f"the docs extra is not installed ({', '.join(_missing_docs_extra())} missing): "
    'pip install -e ".[docs]"',
)


def build(site: Path, config: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1", LITELLM_LOCAL_MODEL_COST_MAP="True")
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)]
    if config is not None:
        command += ["--config-file", str(config)]
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=False)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("site")
    result = build(folder)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "WARNING" not in result.stderr, result.stderr
    return folder


def test_every_page_is_built(site: Path) -> None:
    nav_pages = re.findall(r"^\s+- [^:]+: (\S+\.md)$", (ROOT / "mkdocs.yml").read_text(), re.M)
    on_disk = sorted(path.name for path in (ROOT / "docs").glob("*.md"))
    assert sorted(nav_pages) == on_disk
    for page in nav_pages:
        built = site / ("index.html" if page == "index.md" else f"{page[:-3]}/index.html")
        assert built.is_file(), page


def test_the_options_page_names_every_option(site: Path) -> None:
    html = (site / "options" / "index.html").read_text(encoding="utf-8")
    for option in OPTIONS:
        assert option.flag in html and option.ini in html, option.flag
        assert option.env is None or option.env in html, option.env


def test_the_api_reference_is_read_from_the_docstrings(site: Path) -> None:
    html = (site / "api" / "index.html").read_text(encoding="utf-8")
    from pytest_propositions.claims.targets import register_renderer

    first_line = (register_renderer.__doc__ or "").splitlines()[0]
    assert first_line and first_line.split("``")[0].strip() in html


def test_the_screenshot_is_a_png_on_the_reports_page(site: Path) -> None:
    html = (site / "reports" / "index.html").read_text(encoding="utf-8")
    [source] = re.findall(r'<img[^>]+src="([^"]+html-report\.png)"', html)
    image = (site / "reports" / source).resolve()
    assert image.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_an_orphan_page_or_a_broken_link_fails_the_build(tmp_path: Path) -> None:
    # The same config over a copy of the pages, with one page left out of the nav and one link
    # to a page that does not exist: strict mode must refuse both.
    import shutil

    docs = tmp_path / "docs"
    shutil.copytree(ROOT / "docs", docs)
    # The pages show conftest_examples/ci.yml whole; the build checks it is the file's text.
    shutil.copytree(ROOT / "conftest_examples", tmp_path / "conftest_examples")
    (docs / "orphan.md").write_text("# Not in the nav\n", encoding="utf-8")
    with (docs / "cache.md").open("a", encoding="utf-8") as page:
        page.write("\nSee [nowhere](no-such-page.md).\n")
    config = tmp_path / "mkdocs.yml"
    text = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    config.write_text(
        text.replace("docs_dir: docs", f"docs_dir: {docs}").replace(
            "  - docs/hooks.py", f"  - {docs / 'hooks.py'}"
        ),
        encoding="utf-8",
    )
    result = build(tmp_path / "site", config)
    assert result.returncode != 0
    assert "orphan.md" in result.stderr
    assert "no-such-page.md" in result.stderr


# Every code block on a page: inside the window, and all of its text on screen (its long lines
# wrap), none of it behind a scroll bar or past the edge.
CLIPPED_BLOCKS = """
(() => {
  const width = document.documentElement.clientWidth;
  return [...document.querySelectorAll("pre")].filter((pre) => {
    const code = pre.querySelector("code") || pre;
    const fits = code.scrollWidth <= code.clientWidth + 1;
    const inside = pre.getBoundingClientRect().right <= width + 1;
    return !inside || !fits;
  }).map((pre) => pre.textContent.slice(0, 80));
})()
"""


def test_no_code_block_is_cut_off_at_1280_pixels(site: Path) -> None:
    """At a 1280 px window every code block of every page shows all of its text (wrapped)."""
    import asyncio

    from tests.support.browser import chromium_page, file_url, find_chromium

    chromium = find_chromium()
    if chromium is None:
        pytest.skip("no Chromium (the OS package: apt-get install chromium)")
    pages = [*sorted(site.glob("*/index.html")), site / "index.html"]

    async def clipped() -> dict[str, list[str]]:
        found: dict[str, list[str]] = {}
        async with chromium_page(chromium) as page:
            await page.send(
                "Emulation.setDeviceMetricsOverride",
                width=1280,
                height=900,
                deviceScaleFactor=1,
                mobile=False,
            )
            for path in pages:
                await page.open(file_url(path))
                blocks = await page.evaluate(CLIPPED_BLOCKS)
                if blocks:
                    found[str(path.relative_to(site))] = blocks
        return found

    assert asyncio.run(clipped()) == {}


def test_the_api_reference_shows_no_dunder_no_borrowed_docstring_no_build_path(
    site: Path,
) -> None:
    """Issue 51: inspection listed a module's ``__file__`` (the build machine's path), every
    class's ``__weakref__`` and ``__module__`` with builtins' docstrings, and under each
    attribute its value's type's docstring (int's under ``MAX_SCORE``)."""
    html = (site / "api" / "index.html").read_text(encoding="utf-8")
    dunders = set(re.findall(r'id="[\w.]+\.(__\w+__)"', html))
    assert dunders <= {"__call__"}, dunders
    assert "__file__" not in html and str(ROOT) not in html
    for borrowed in (int.__doc__, str.__doc__, bool.__doc__, tuple.__doc__):
        assert (borrowed or "").splitlines()[0] not in html.replace("&gt;", ">")
    assert "MAX_SCORE" in html and "check_proposition" in html
