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
README = EXAMPLES / "README.md"
SAMPLE_AFTER = "## What the first run shows"


def sample_of(output: str) -> str:
    """The README's sample, cut from a first run's output: the header, the first two claims
    listed, the summary line and the last line. Elided: what differs between machines and runs
    (the cache's folder, the model's reasons, tokens, cost and time)."""
    lines = output.splitlines()
    [header] = [line for line in lines if line.startswith("propositions: model local (")]
    header = re.sub(r"cache use \([^)]*\)", "cache use (...)", header)
    start = next(i for i, line in enumerate(lines) if "propositions: claims and the judge" in line)
    entries = []
    for line in lines[start + 1 : start + 9]:
        entries.append("    why:     ..." if line.startswith("    why:     ") else line)
    [summary] = [line for line in lines if re.match(r"^propositions: \d+ claims, ", line)]
    summary = summary[: summary.index(" judge calls, ") + len(" judge calls")] + ", ..."
    last = re.sub(r" in [0-9.]+s( \([0-9:]+\))?", " in ...s", lines[-1].strip("= "))
    shown = [header, "...", "=== propositions: claims and the judge's verdicts ===", *entries]
    return "\n".join([*shown, "...", summary, f"=== {last} ==="]) + "\n"


def readme_sample() -> str:
    text = README.read_text(encoding="utf-8")
    section = text[text.index(SAMPLE_AFTER) :]
    return re.findall(r"```text\n(.*?)```", section, re.S)[0]


def run_examples(folder: Path) -> subprocess.CompletedProcess[str]:
    env = {name: value for name, value in os.environ.items() if not name.startswith("PROP_")}
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    # A judge call on a loaded 2-core machine can take minutes: the bound is the suite's, not 60 s.
    env["PROP_TIMEOUT"] = "900"
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
    listed = [
        line
        for line in lines
        if re.match(r"^(PASSED|FAILED|INCONCLUSIVE|UPHELD|NOT UPHELD) +conftest_examples/", line)
    ]
    assert len(listed) >= 10, first.stdout
    assert sum(line.startswith("    why:     ") for line in lines) == len(listed)
    [last] = [line for line in lines if re.match(r"^=+ .* in [0-9.]+s", line)][-1:]
    assert " passed" in last and "failed" not in last and "judge error" not in last, last

    # The README's sample is this run's output (PROP_WRITE_SAMPLE=1 writes it there).
    sample = sample_of(first.stdout)
    if os.environ.get("PROP_WRITE_SAMPLE") == "1":
        text = README.read_text(encoding="utf-8")
        README.write_text(text.replace(readme_sample(), sample, 1), encoding="utf-8")
    assert readme_sample() == sample, (
        f"conftest_examples/README.md is stale; a run shows:\n{sample}"
    )

    second = run_examples(tmp_path)
    assert second.returncode == 0, second.stdout + second.stderr
    assert re.search(
        r"^propositions: every verdict \(\d+\) came from the cache; the judge was not called$",
        second.stdout,
        re.M,
    ), second.stdout
    # The README's sentence about the second run is this run's too.
    [from_cache] = re.findall(r"every verdict \(\d+\) came from the cache", second.stdout)
    if os.environ.get("PROP_WRITE_SAMPLE") == "1":
        text = README.read_text(encoding="utf-8")
        README.write_text(
            re.sub(r"every verdict \(\d+\) came from the cache", from_cache, text, count=1),
            encoding="utf-8",
        )
    assert f"`propositions: {from_cache}; the judge was not called`" in README.read_text()
    # The same verdicts, so the same outcomes.
    assert [line for line in second.stdout.splitlines() if line in listed] == listed
