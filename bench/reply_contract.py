"""How often each reply contract would need the re-ask, on the shipped labeled set.

Both contracts read the same replies: those a real judge gave to the plugin's own requests for
every item of the labeled set. First judge the set live into a fresh verdict cache, which keeps
each verdict's raw reply, with the calibrate command (the lenient reader decides there):

    python -m pytest_propositions calibrate --model local --cache-dir DIR --json OUT.json
    python bench/reply_contract.py DIR OUT.json

The lenient reader's re-asks are the judge calls the run paid beyond one per item (no double
check, one sample). When there were none, every reply kept is a first reply, and the strict
reader (``judging/reply.py``) is applied to each: a reply it refuses is a re-ask it would need.
When the lenient run re-asked, the replies it refused are not kept, and the script says so
rather than guessing.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pytest_propositions.errors import VerdictUnparsable
from pytest_propositions.judging.families import strip_thinking
from pytest_propositions.judging.reply import read_reply
from pytest_propositions.store.cache import VerdictCache


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cache_dir", type=Path, help="the verdict cache the calibration filled")
    parser.add_argument("result", type=Path, help="the calibration's --json file")
    args = parser.parse_args()
    result = json.loads(args.result.read_text(encoding="utf-8"))
    items, calls = result["items"], result["judge_calls"]
    refused: list[tuple[str, str]] = []
    replies = 0
    with VerdictCache(args.cache_dir, "replay") as cache:
        for line in cache.export_lines():
            record = json.loads(line)["record"]
            replies += 1
            try:
                read_reply(strip_thinking(record["raw_reply"]), record["kind"])
            except VerdictUnparsable as error:
                refused.append((record["claim"], str(error).split(". Expected")[0]))
    print(f"model: {result.get('model')}; items: {items}; replies kept: {replies}")
    lenient = calls - items
    print(f"lenient reader (today's): {lenient} re-asks in {items} items ({lenient / items:.1%})")
    if lenient:
        print("  the lenient run re-asked, so some first replies are not kept: strict not measured")
        return 1
    print(
        f"strict reader (judging/reply.py): {len(refused)} re-asks in {replies} first replies "
        f"({len(refused) / replies:.1%})"
    )
    for claim, reason in refused[:10]:
        print(f"  refused: {claim[:60]!r}: {reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
