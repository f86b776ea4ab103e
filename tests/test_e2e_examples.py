"""End to end: `pytest conftest_examples` on the bundled stand-in judge, as a newcomer runs it.

It must exit 0, name the judge as a stand-in, list every claim with the judge's reasons, and on
a second run say that every verdict came from the cache. Nothing here asserts truth.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from tests.test_e2e_local import pytestmark  # noqa: F401  (e2e, and skipped without the engine)

EXAMPLES = Path(__file__).resolve().parent.parent / "conftest_examples"


def run_examples(folder: Path) -> subprocess.CompletedProcess[str]:
    env = {name: value for name, value in os.environ.items() if not name.startswith("PROP_")}
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    command = [sys.executable, "-m", "pytest", "conftest_examples", "-p", "no:randomly"]
    command.append(f"--prop-cache-dir={folder / 'verdicts'}")
    return subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True)


def test_the_examples_teach_on_the_stand_in_judge(tmp_path: Path) -> None:
    shutil.copytree(EXAMPLES, tmp_path / "conftest_examples")
    first = run_examples(tmp_path)
    assert first.returncode == 0, first.stdout + first.stderr
    lines = first.stdout.splitlines()
    [header] = [line for line in lines if line.startswith("propositions: model local (")]
    assert "SmolLM2-135M-Instruct, a tiny stand-in" in header and "outcome report" in header
    listed = [line for line in lines if re.match(r"^(UPHELD|NOT UPHELD) +conftest_examples/", line)]
    assert len(listed) >= 10, first.stdout
    assert sum(line.startswith("    why:     ") for line in lines) == len(listed)
    [last] = [line for line in lines if re.match(r"^=+ .* in [0-9.]+s", line)][-1:]
    assert " passed" in last and "failed" not in last and "judge error" not in last, last

    second = run_examples(tmp_path)
    assert second.returncode == 0, second.stdout + second.stderr
    assert re.search(
        r"^propositions: every verdict \(\d+\) came from the cache; the judge was not called$",
        second.stdout,
        re.M,
    ), second.stdout
    # The same verdicts, so the same outcomes.
    assert [line for line in second.stdout.splitlines() if line in listed] == listed
