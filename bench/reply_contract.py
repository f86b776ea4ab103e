"""How often each reply contract needs the re-ask, on the shipped labeled set.

Both readers read the same replies: those a real judge gave to the plugin's own requests for
every item of the labeled set. First judge the set live into a fresh verdict cache, which keeps
each verdict's raw reply, with the calibrate command (the strict reader, ``judging/reply.py``,
decides there):

    python -m pytest_propositions calibrate --model local --cache-dir DIR --json OUT.json
    python bench/reply_contract.py DIR OUT.json

The strict reader's re-asks are the judge calls the run paid beyond one per item (no double
check, one sample). When there were none, every reply kept is a first reply, and the lenient
grammar the package had before (``judging/parsing.py`` at ``--lenient-from``, read from git) is
applied to each as well: a reply it refuses is a re-ask it would have needed. When the strict
run re-asked, the replies it refused are not kept, and the script says so rather than guessing.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from pytest_propositions.errors import VerdictUnparsable
from pytest_propositions.judging.reply import read_reply, strip_thinking
from pytest_propositions.store.cache import VerdictCache

ROOT = Path(__file__).resolve().parent.parent
#: The last commit whose package read replies by the lenient grammar.
LENIENT_FROM = "5893da18ecb4"


def lenient_reader(revision: str) -> Callable[[str, Any], Any]:
    """``parse_reply`` of ``judging/parsing.py`` as it was at ``revision``, loaded beside the
    package so that its relative imports (errors, scale) resolve."""
    source = subprocess.run(
        ["git", "show", f"{revision}:pytest_propositions/judging/parsing.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    name = "pytest_propositions.judging._lenient_parsing"
    module = ModuleType(name)
    module.__package__ = "pytest_propositions.judging"
    sys.modules[name] = module
    exec(compile(source, f"{revision}:parsing.py", "exec"), module.__dict__)
    reader: Callable[[str, Any], Any] = module.parse_reply
    return reader


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cache_dir", type=Path, help="the verdict cache the calibration filled")
    parser.add_argument("result", type=Path, help="the calibration's --json file")
    parser.add_argument("--lenient-from", default=LENIENT_FROM, help="a git revision")
    args = parser.parse_args()
    result = json.loads(args.result.read_text(encoding="utf-8"))
    items, calls = result["items"], result["judge_calls"]
    readers = {"strict": read_reply, "lenient": lenient_reader(args.lenient_from)}
    refused: dict[str, list[tuple[str, str]]] = {name: [] for name in readers}
    replies = 0
    with VerdictCache(args.cache_dir, "replay") as cache:
        for line in cache.export_lines():
            record = json.loads(line)["record"]
            replies += 1
            text = strip_thinking(record["raw_reply"])
            for name, read in readers.items():
                try:
                    read(text, record["kind"])
                except VerdictUnparsable as error:
                    refused[name].append((record["claim"], str(error).split(". Expected")[0]))
    print(
        f"model: {result.get('model')}; prompt version {result.get('prompt_version')}; "
        f"items: {items}; judge calls: {calls}; replies kept: {replies}"
    )
    reasks = calls - items
    print(f"strict reader (in force): {reasks} re-asks in {items} items ({reasks / items:.1%})")
    if reasks:
        print("  the run re-asked, so some first replies are not kept: lenient not measured")
        return 1
    for name in readers:
        count = len(refused[name])
        print(
            f"{name} reader on the {replies} first replies: {count} refused ({count / replies:.1%})"
        )
        for claim, reason in refused[name][:10]:
            print(f"  refused: {claim[:60]!r}: {reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
