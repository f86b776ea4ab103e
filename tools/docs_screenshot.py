"""Regenerate docs/images/html-report.png: a real run's ``--prop-html`` page, shot by headless Chromium.

Run from the repository root with the project's virtualenv active and the OS package's Chromium
installed (``apt-get install chromium``):

    python tools/docs_screenshot.py

A four-test suite about the Getting started world is judged by the scripted judge of the tests
(``tests/support/judge_server.py``, on loopback): two tests pass, one claim is false, and one
reply holds no verdict (a judge error), so every kind of card shows.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.browser import find_chromium  # noqa: E402
from tests.support.judge_server import (  # noqa: E402
    RecordedRequest,
    Reply,
    ScriptedJudge,
    echo_fn,
    text,
    verdict,
)

OUTPUT = ROOT / "docs" / "images" / "html-report.png"
WINDOW = "1200,1500"

SUITE = """
def test_oscar_talks_travel(world, assert_proposition, min_score):
    assert_proposition(world, "Oscar mentions his travel preferences.")
    min_score(world, "Every agent stays in character.", 7)

def test_lisa_travels_with_her_cat(world, assert_proposition):
    assert_proposition(world, "Lisa travels with a pet.")

def test_pets(world, assert_proposition):
    assert_proposition(world, "Oscar mentions cats.")

def test_agreement(world, min_score):
    min_score(world, "The agents agree on where to travel together.", 6)
"""


def answer(request: RecordedRequest) -> Reply:
    said = request.text
    if "Oscar mentions cats" in said:
        return verdict(
            False,
            justification="Only Lisa mentions a cat; Oscar talks about quiet cities and architecture.",
            confidence=0.92,
        )
    if "agree on where" in said:
        return text(
            "I'd say they partly agree, but also not really; it depends on how you read it."
        )
    if "in character" in said:
        return verdict(
            8,
            justification="Oscar speaks as an architect and Lisa as someone who travels with her "
            "cat; both stay in their personas.",
            confidence=0.8,
        )
    if "Lisa travels" in said:
        return verdict(True, justification="Lisa says she always travels with her cat.")
    return verdict(True, justification="Oscar says he loves quiet cities with great architecture.")


def conftest_of_getting_started() -> str:
    from tests.support.docs_blocks import DOCS, page_blocks

    [code] = [b.code for b in page_blocks(DOCS / "index.md") if b.title == "conftest.py"]
    return code


def main() -> int:
    chromium = find_chromium()
    if chromium is None:
        print("no Chromium found (apt-get install chromium)", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as folder, ScriptedJudge() as judge:
        project = Path(folder)
        judge.default = echo_fn(answer)
        (project / "conftest.py").write_text(conftest_of_getting_started())
        (project / "test_travel.py").write_text(SUITE)
        env = {k: v for k, v in os.environ.items() if not k.startswith("PROP_")}
        env.update(PROP_API_KEY="not-a-real-key", LITELLM_LOCAL_MODEL_COST_MAP="True")
        run = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        run += ["--prop-model=openai/gpt-4.1-mini", f"--prop-api-base={judge.base_url}"]
        run += ["--prop-retries=0", "--prop-html=propositions.html"]
        subprocess.run(run, cwd=project, env=env, check=False)
        page = project / "propositions.html"
        shot = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"]
        shot += [f"--window-size={WINDOW}", f"--screenshot={OUTPUT}", page.as_uri()]
        subprocess.run(shot, check=True, capture_output=True)
    print(f"wrote {OUTPUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
