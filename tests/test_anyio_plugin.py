"""anyio's pytest plugin (anyio comes with litellm and httpx): the plugin leaves it as the user
configured it, and the way docs/speed.md gives to drop it works (issue 52)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

SPEED = Path(__file__).resolve().parents[1] / "docs" / "speed.md"

PROBE = """
def pytest_configure(config):
    manager = config.pluginmanager
    with open("plugins.txt", "w") as out:
        out.write(f"anyio={manager.has_plugin('anyio')} ours={manager.has_plugin('propositions')}")
"""


def documented_ini() -> str:
    """The ini block of the section on anyio's plugin."""
    section = SPEED.read_text(encoding="utf-8").split("## anyio's pytest plugin", 1)[1]
    found = re.search(r"```ini\n(.*?)```", section.split("\n## ", 1)[0], re.DOTALL)
    assert found, "docs/speed.md gives no ini block to drop anyio's plugin"
    return found.group(1)


def plugins(pytester: pytest.Pytester) -> str:
    pytester.makeconftest(PROBE)
    pytester.makepyfile("def test_one():\n    assert True\n")
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)
    return (pytester.path / "plugins.txt").read_text()


def test_the_plugin_leaves_anyios_plugin_loaded(pytester: pytest.Pytester) -> None:
    pytest.importorskip("anyio.pytest_plugin")
    pytester.makeini("[pytest]\n")
    assert plugins(pytester) == "anyio=True ours=True"


def test_the_documented_ini_drops_anyios_plugin_and_keeps_this_one(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeini(documented_ini())
    assert plugins(pytester) == "anyio=False ours=True"
