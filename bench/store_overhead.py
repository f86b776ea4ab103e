"""How much does serving 500 claims from the shared PostgreSQL store cost, next to the disk cache?

In one run this script:

1. starts a throwaway PostgreSQL server on loopback (``tests/support/postgres.py``: initdb and
   pg_ctl in a temporary folder, as the ``postgres`` OS user when run as root);
2. writes the 500-claim suite of ``cache_overhead.py`` and records it once against the scripted
   judge with ``--prop-store``, so every verdict is in the store and in one disk cache;
3. times ``python -m pytest -p no:cacheprovider -q`` round by round, alternating:
   - ``store``: a fresh, empty disk cache each round, served by the store (and copied to disk);
   - ``store-replay``: the same with ``--prop-cache=replay`` (a fresh CI machine replaying);
   - ``local+store``: the recorded disk cache, with ``--prop-store`` given (never connects);
   - ``local``: the recorded disk cache without a store: the plugin as it was before the store;
4. prints the medians and the ratios store/local+store (target <= 3) and local+store/local
   (target: no slower, about 1.0), and checks that no run made a judge call;
5. measures the store itself in process: lookups one by one, in batches, and the round trips
   and bytes per verdict, for the scale estimate in ``bench/README.md``.

    python bench/store_overhead.py [--tests 500] [--rounds 5]

It is not a test and CI does not run it.
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench._common import environment  # noqa: E402
from bench.cache_overhead import pytest_command, write_suites  # noqa: E402
from pytest_propositions.store.postgres import PostgresStore  # noqa: E402
from tests.support.judge_server import ScriptedJudge, verdict  # noqa: E402
from tests.support.postgres import find_bindir, running_server  # noqa: E402

RATIO_TARGET = 3.0
PASSWORD = "bench-password"
_CALLS = re.compile(r"propositions: (\d+) claims?, .*?(\d+) from cache, .*?(\d+) judge calls?")


def timed(command: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"pytest failed ({done.returncode}): {' '.join(command)}\n{done.stdout[-4000:]}")
    return elapsed, done.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--tests", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    bindir = find_bindir()
    if bindir is None:
        sys.exit("no PostgreSQL server programs (initdb, pg_ctl) on this machine")
    with (
        running_server(bindir) as server,
        ScriptedJudge() as judge,
        tempfile.TemporaryDirectory() as tmp,
    ):
        judge.default = verdict(True, justification="He names the city and its trains.")
        server.create_role("bench", PASSWORD)
        server.create_database("verdicts", owner="bench")
        url = server.url("bench", None, "verdicts")
        env = environment(extra={"PGPASSWORD": PASSWORD})
        root = Path(tmp)
        claims, _plain = write_suites(root, args.tests)
        recorded = root / "recorded"
        store_flag = f"--prop-store={url}"
        command = pytest_command(claims, recorded, judge.base_url, pytest_flags=[store_flag])
        _, out = timed(command, root, env)
        found = _CALLS.search(out)
        assert found is not None and int(found[3]) == args.tests, out[-2000:]
        judge.clear_requests()

        def variant(name: str) -> list[str]:
            if name == "local":
                return pytest_command(claims, recorded, judge.base_url)
            if name == "local+store":
                return pytest_command(claims, recorded, judge.base_url, pytest_flags=[store_flag])
            fresh = root / f"fresh-{time.perf_counter_ns()}"
            flags = [store_flag] + (["--prop-cache=replay"] if name == "store-replay" else [])
            return pytest_command(claims, fresh, judge.base_url, pytest_flags=flags)

        names = ["store", "store-replay", "local+store", "local"]
        times: dict[str, list[float]] = {name: [] for name in names}
        for number in range(args.rounds):
            order = names if number % 2 == 0 else names[::-1]
            for name in order:
                elapsed, out = timed(variant(name), root, env)
                found = _CALLS.search(out)
                assert found is not None and int(found[2]) == args.tests, out[-2000:]
                assert int(found[3]) == 0, f"{name} called the judge"
                times[name].append(elapsed)
        assert judge.requests == [], "a timed run reached the judge"
        medians = {name: statistics.median(values) for name, values in times.items()}
        print(f"{args.tests} claims, {args.rounds} rounds, median wall seconds of a pytest run:")
        for name in names:
            spread = ", ".join(f"{value:.2f}" for value in times[name])
            print(f"  {name:13s} {medians[name]:6.2f}  ({spread})")
        ratio = medians["store"] / medians["local+store"]
        replay_ratio = medians["store-replay"] / medians["local+store"]
        local_ratio = medians["local+store"] / medians["local"]
        print(f"store / local cache:        {ratio:.2f}  (target <= {RATIO_TARGET})")
        print(f"store replay / local cache: {replay_ratio:.2f}  (target <= {RATIO_TARGET})")
        print(f"local cache with --prop-store / without: {local_ratio:.2f}  (target: about 1)")

        # The store in process: one by one (a test's claim), and in batches (soft claims).
        store = PostgresStore(server.url("bench", PASSWORD, "verdicts"))
        keys = store.keys()
        store.connect()
        before = store.round_trips
        started = time.perf_counter()
        for key in keys:
            store.get(key)
        single = (time.perf_counter() - started) / len(keys)
        trips_single = store.round_trips - before
        before = store.round_trips
        started = time.perf_counter()
        store.get_many(keys)
        batch = time.perf_counter() - started
        trips_batch = store.round_trips - before
        stats = store.stats()
        store.close()
        [(table_bytes, index_bytes)] = server.sql(
            "SELECT pg_table_size('prop_verdicts'), pg_indexes_size('prop_verdicts')", "verdicts"
        )
        print(
            f"store.get one by one: {single * 1e3:.2f} ms a lookup, {trips_single} round trips "
            f"for {len(keys)} keys; get_many: {batch * 1e3:.1f} ms, {trips_batch} round trip(s)"
        )
        print(
            f"rows: {stats.entries}; row bytes {stats.size_bytes / max(stats.entries, 1):.0f} a "
            f"verdict; table {table_bytes} bytes, indexes {index_bytes} bytes "
            f"({(int(table_bytes) + int(index_bytes)) / max(stats.entries, 1):.0f} bytes a verdict)"
        )
        shutil.rmtree(root / "recorded", ignore_errors=True)
        return 0 if ratio <= RATIO_TARGET and local_ratio <= 1.15 else 1


if __name__ == "__main__":
    sys.exit(main())
