"""``calibrate``: measure a judge on labeled claims before it may gate CI, and record the result.

It owns the labeled-item format, the shipped set, the metrics (balanced accuracy, false-pass
rate, score AUC, sample agreement) and the command's output; the record it saves beside the
verdict cache is calibration.py's. Items are judged through the same claim path as tests
(``assertions.judge_claim``), cache included.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from .._version import __version__
from ..calibration import judge_identity, record_key, save_record
from ..checks import TOO_DEEP, plural, read_text_lines, terminal_text
from ..claims.targets import as_target_list
from ..errors import CalibrationError, DryRunSkip, JudgeError, VerdictUnparsable
from ..judging.prompts import PROMPT_VERSION
from ..runtime import Runtime
from ..scale import MAX_SCORE, MIN_SCORE
from ..settings import (
    Settings,
    add_command_flags,
    cache_mode,
    checked,
    command_settings,
    parse_fraction,
    reference_judge,
)
from ..store.location import find_project
from ..trace import Agent, World
from ..verdict import KINDS, SCORE, Kind, passes_bar

#: Name for the shipped set on the command line (``--set builtin``).
BUILTIN = "builtin"
#: What "fit" means when the user gives no threshold (the exit code only follows given ones).
DEFAULT_MIN_BALANCED_ACCURACY = 0.9
DEFAULT_MAX_FALSE_PASS = 0.05

_TARGET_FORMS = ("text", "chat", "world", "agent")
_ITEM_FIELDS = frozenset({"id", "kind", "target", "claim", "label", "tags", "include_personas"})

# --- items -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Item:
    """One labeled claim: for a check the right answer, for a score whether it must pass the bar."""

    id: str
    kind: Kind
    target: Mapping[str, Any]
    claim: str
    label: bool
    tags: tuple[str, ...] = ()
    include_personas: bool = False
    source: str = ""

    def build_target(self) -> Any:
        return build_target(self.target)


def shipped_set() -> Path:
    """The set that ships with the package (176 items; see tools/calibration_set.py)."""
    return Path(__file__).parent.parent / "data" / "calibration.jsonl"


def _fail(where: str, message: str) -> CalibrationError:
    # The message may quote the user's item file, which a terminal must not act on.
    return CalibrationError(terminal_text(f"{where}: {message}"))


# The events a target may list: each verb's method, and how many arguments it takes (least,
# most). A world's events other than talk and broadcast name their agent first.
_AGENT_EVENTS: dict[str, tuple[Callable[..., Any], int, int]] = {
    "say": (Agent.says, 1, 1),
    "think": (Agent.thinks, 1, 1),
    "hear": (Agent.hears, 1, 2),
    "see": (Agent.sees, 1, 1),
    "act": (Agent.acts, 1, 2),
}
_WORLD_EVENTS: dict[str, tuple[Callable[..., Any], int, int]] = {
    "talk": (World.talk, 2, 3),
    "think": (Agent.thinks, 2, 2),
    "act": (Agent.acts, 2, 3),
    "hear": (Agent.hears, 2, 3),
    "broadcast": (World.broadcast, 1, 2),
}
_EXPECTED_EVENTS = {
    "agent": "[say, text], [think, text], [hear, text, source?], [see, text], "
    "[act, KIND, content?]",
    "world": "[talk, speaker, text, to?], [think, agent, text], [act, agent, KIND, content?], "
    "[hear, agent, text, source?], [broadcast, text, source?]",
}


def _play(where: str, events: Any, owner: Agent | World) -> None:
    """Replay a target's ``events`` on the agent or world ``owner``."""
    if not isinstance(events, list) or not all(
        isinstance(event, list) and event and isinstance(event[0], str) for event in events
    ):
        raise _fail(where, 'expected "events" to be a list of lists such as ["say", "text"]')
    form, table = ("agent", _AGENT_EVENTS) if isinstance(owner, Agent) else ("world", _WORLD_EVENTS)
    for event in events:
        verb, args = event[0], event[1:]
        known = table.get(verb)
        if known is None or not known[1] <= len(args) <= known[2]:
            raise _fail(
                where,
                f"unknown {form} event {event!r}; expected one of {_EXPECTED_EVENTS[form]}",
            )
        method = known[0]
        if isinstance(owner, World) and verb not in ("talk", "broadcast"):
            method(owner.get(args[0]), *args[1:])
        else:
            method(owner, *args)


def _agent_from(where: str, spec: Any, *, standalone: bool) -> Agent:
    if not isinstance(spec, Mapping) or not isinstance(spec.get("name"), str):
        raise _fail(where, 'expected an agent as {"name": "...", "persona": {...}}')
    agent = Agent(spec["name"], persona=spec.get("persona"))
    if standalone:
        _play(where, spec.get("events", []), agent)
    return agent


def _world_from(where: str, spec: Any) -> World:
    if not isinstance(spec, Mapping) or not isinstance(spec.get("name"), str):
        raise _fail(where, 'expected a world as {"name": "...", "agents": [...], "events": [...]}')
    world = World(spec["name"])
    for agent in spec.get("agents", []):
        world.add(_agent_from(where, agent, standalone=False))
    _play(where, spec.get("events", []), world)
    return world


def build_target(spec: Mapping[str, Any], where: str = "target") -> Any:
    """The judged object an item's target describes: text, a chat list, a World or an Agent."""
    if not isinstance(spec, Mapping) or len(spec) != 1 or next(iter(spec)) not in _TARGET_FORMS:
        raise _fail(where, f"expected a target with exactly one of {', '.join(_TARGET_FORMS)}")
    form, value = next(iter(spec.items()))
    try:
        if form == "text":
            if not isinstance(value, str) or not value.strip():
                raise _fail(where, 'expected "text" to be a non-empty string')
            return value
        if form == "chat":
            if not isinstance(value, list) or not value:
                raise _fail(where, 'expected "chat" to be a non-empty list of chat messages')
            as_target_list(value)  # validates the messages
            return value
        if form == "world":
            return _world_from(where, value)
        return _agent_from(where, value, standalone=True)
    except (TypeError, ValueError, KeyError) as error:
        raise _fail(where, str(error)) from None


def parse_item(data: Any, where: str) -> Item:
    """One line of a set, checked; the error names the file and line."""
    if not isinstance(data, dict):
        raise _fail(where, "expected a JSON object per line")
    unknown = sorted(set(data) - _ITEM_FIELDS)
    if unknown:
        raise _fail(where, f"unknown field(s) {', '.join(unknown)}")
    for name in ("id", "claim"):
        if not isinstance(data.get(name), str) or not data[name].strip():
            raise _fail(where, f'expected "{name}" to be a non-empty string')
    if data.get("kind") not in KINDS:
        raise _fail(where, f'expected "kind" to be "check" or "score", got {data.get("kind")!r}')
    if type(data.get("label")) is not bool:
        raise _fail(where, 'expected "label" to be true or false')
    tags = data.get("tags", [])
    if not isinstance(tags, list) or not all(isinstance(tag, str) for tag in tags):
        raise _fail(where, 'expected "tags" to be a list of strings')
    personas = data.get("include_personas", False)
    if type(personas) is not bool:
        raise _fail(where, 'expected "include_personas" to be true or false')
    item = Item(
        id=data["id"],
        kind=data["kind"],
        target=data.get("target", {}),
        claim=data["claim"],
        label=data["label"],
        tags=tuple(tags),
        include_personas=personas,
        source=where,
    )
    build_target(item.target, where)
    return item


def load_set(path: str | os.PathLike[str]) -> list[Item]:
    """Every item of a JSON-lines set; blank lines are skipped, ids must be unique."""
    name, lines = read_text_lines(str(path))
    items: list[Item] = []
    seen: dict[str, str] = {}
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{name}:{lineno}"
        try:
            item = parse_item(json.loads(line), where)
        except json.JSONDecodeError as error:
            raise _fail(where, f"not valid JSON ({error.msg})") from None
        except RecursionError:
            raise _fail(where, TOO_DEEP) from None
        if item.id in seen:
            raise _fail(where, f"id {item.id!r} already used at {seen[item.id]}")
        seen[item.id] = where
        items.append(item)
    if not items:
        raise CalibrationError(f"{name}: no items")
    return items


def load_sets(names: Sequence[str]) -> list[Item]:
    """The named sets (``builtin`` is the shipped one), ids unique across all of them."""
    items: list[Item] = []
    seen: dict[str, str] = {}
    for name in names or [BUILTIN]:
        for item in load_set(shipped_set() if name == BUILTIN else name):
            if item.id in seen:
                raise _fail(item.source, f"id {item.id!r} already used at {seen[item.id]}")
            seen[item.id] = item.source
            items.append(item)
    return items


# --- judging and metrics ---------------------------------------------------------------------


@dataclass
class Outcome:
    """What the judge made of one item; ``error`` holds an unparsable reply's message."""

    item: Item
    value: bool | int | None = None
    votes: tuple[bool | int, ...] = ()
    justification: str = ""
    error: str | None = None

    def judged_pass(self, min_score: int) -> bool | None:
        if self.value is None:
            return None
        return passes_bar(self.item.kind, self.value, min_score)

    def correct(self, min_score: int) -> bool:
        return self.judged_pass(min_score) is self.item.label


@dataclass
class Metrics:
    """A judge's numbers on a set, in the order its record lists them; the counts behind the two
    error rates are kept so reports can bound them (``upper_bound``)."""

    items: int
    balanced_accuracy: float
    false_pass_rate: float
    false_fail_rate: float
    positives: int
    negatives: int
    false_passes: int
    false_fails: int
    parse_failures: int
    score_auc: float | None
    agreement: float | None
    per_tag: dict[str, dict[str, int]] = field(default_factory=dict)

    def record(self) -> dict[str, Any]:
        """The numbers as the record keeps them (rates to four places), ``per_tag`` aside."""
        return {
            name: round(value, 4) if isinstance(value, float) else value
            for name, value in asdict(self).items()
            if name != "per_tag"
        }


def _rate(part: int, whole: int) -> float:
    return part / whole if whole else 0.0


def score_auc(pairs: Iterable[tuple[bool, int | None]]) -> float | None:
    """The chance that a true claim outscores a false one (ties count half).

    An unanswered item takes the worst score for its label, so failing to answer never helps.
    """
    positives: list[int] = []
    negatives: list[int] = []
    for label, value in pairs:
        if label:
            positives.append(MIN_SCORE - 1 if value is None else value)
        else:
            negatives.append(MAX_SCORE + 1 if value is None else value)
    if not positives or not negatives:
        return None
    wins = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p in positives for n in negatives)
    return wins / (len(positives) * len(negatives))


def compute_metrics(outcomes: Sequence[Outcome], min_score: int) -> Metrics:
    """The numbers a gate cares about; an unanswered item counts as wrong, never as a pass."""
    positives = [o for o in outcomes if o.item.label]
    negatives = [o for o in outcomes if not o.item.label]
    true_pass = sum(1 for o in positives if o.judged_pass(min_score) is True)
    false_fail = sum(1 for o in positives if o.judged_pass(min_score) is False)
    true_fail = sum(1 for o in negatives if o.judged_pass(min_score) is False)
    false_pass = sum(1 for o in negatives if o.judged_pass(min_score) is True)
    if positives and negatives:
        balanced = (_rate(true_pass, len(positives)) + _rate(true_fail, len(negatives))) / 2
    else:
        balanced = _rate(true_pass + true_fail, len(outcomes))
    sampled = [o for o in outcomes if len(o.votes) > 1]
    agreement = (
        _rate(sum(1 for o in sampled if len(set(o.votes)) == 1), len(sampled)) if sampled else None
    )
    per_tag: dict[str, dict[str, int]] = {}
    for outcome in outcomes:
        for tag in (outcome.item.kind, *outcome.item.tags):
            row = per_tag.setdefault(tag, {"items": 0, "correct": 0, "false_pass": 0})
            row["items"] += 1
            row["correct"] += outcome.correct(min_score)
            row["false_pass"] += not outcome.item.label and outcome.judged_pass(min_score) is True
    return Metrics(
        items=len(outcomes),
        balanced_accuracy=balanced,
        false_pass_rate=_rate(false_pass, len(negatives)),
        false_fail_rate=_rate(false_fail, len(positives)),
        parse_failures=sum(1 for o in outcomes if o.error is not None),
        score_auc=score_auc((o.item.label, o.value) for o in outcomes if o.item.kind == SCORE),
        agreement=agreement,
        per_tag=dict(sorted(per_tag.items())),
        positives=len(positives),
        negatives=len(negatives),
        false_passes=false_pass,
        false_fails=false_fail,
    )


def fitness(
    metrics: Metrics, min_balanced_accuracy: float, max_false_pass: float
) -> tuple[bool, list[str]]:
    """Whether the judge meets both bars, and each reason it does not."""
    reasons = []
    if metrics.balanced_accuracy < min_balanced_accuracy:
        reasons.append(
            f"balanced accuracy {metrics.balanced_accuracy:.2f} < {min_balanced_accuracy:.2f}"
        )
    if metrics.false_pass_rate > max_false_pass:
        reasons.append(f"false-pass rate {metrics.false_pass_rate:.2f} > {max_false_pass:.2f}")
    return not reasons, reasons


def judge_items(
    items: Sequence[Item],
    settings: Settings,
    cache_dir: Path | None,
    *,
    samples: int,
    on_judged: Callable[[], None] | None = None,
) -> tuple[list[Outcome], dict[str, Any]]:
    """Judge every item through the test path (cache, retries, samples); and the judge's counts.
    ``on_judged`` is called as each item is done (the command's progress).

    An unparsable reply marks its item unanswered; any other judge error (unreachable, no key,
    a replay miss) stops the run, since the numbers would describe the setup, not the judge.
    """
    # assertions imports pytest: loaded when items are judged, not when the cache commands
    # build this command's parser.
    from ..assertions import judge_claim
    from ..claims.options import ClaimOptions

    runtime = Runtime(settings, cache_dir)

    def one(item: Item) -> Outcome:
        try:
            return answer(item)
        finally:
            if on_judged is not None:
                on_judged()

    def answer(item: Item) -> Outcome:
        try:
            verdict = judge_claim(
                runtime,
                item.build_target(),
                item.claim,
                kind=item.kind,
                options=ClaimOptions(include_personas=item.include_personas, samples=samples),
            )
        except VerdictUnparsable as error:
            return Outcome(item, error=str(error))
        except DryRunSkip:
            raise CalibrationError(
                f"item {terminal_text(item.id)} has no cached verdict, and PROP_DRY_RUN "
                "forbids judging it"
            ) from None
        return Outcome(item, verdict.value, verdict.votes, verdict.justification)

    try:
        workers = max(1, min(settings.concurrency, len(items)))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="prop-calibrate") as pool:
            # map cancels the items not started yet when one raises: the run stops there.
            outcomes = list(pool.map(one, items))
        stats = runtime.stats()
        counts = {
            "judge_calls": stats.judge_calls,
            "cache_hits": stats.cache_hits,
            "cost_usd": round(stats.cost_usd, 6),
            "prompt_tokens": stats.prompt_tokens,
            "completion_tokens": stats.completion_tokens,
        }
        return outcomes, counts
    finally:
        runtime.close()


# --- progress --------------------------------------------------------------------------------

#: Where standard error is not a terminal (a CI log), a line is written once both this many
#: seconds and this share of the items have passed since the last one: a log stays short.
LOG_EVERY_SECONDS = 10.0
LOG_EVERY_SHARE = 0.1


class Progress:
    """Items judged out of the total, and about how long the rest will take, on standard error
    while a calibration runs (a whole set on a local model takes many minutes): on a terminal one
    line rewritten in place, elsewhere a plain line now and then. ``clock`` gives seconds."""

    def __init__(self, total: int, stream: TextIO, clock: Callable[[], float]) -> None:
        self._total = total
        self._stream = stream
        self._clock = clock
        try:
            self._tty = stream.isatty()
        except (AttributeError, ValueError, OSError):
            self._tty = False
        self._done = 0
        self._started = clock()
        self._logged = (self._started, 0)
        self._width = 0
        self._lock = threading.Lock()
        self._show(f"judging {plural(total, 'item')}...")

    def judged(self) -> None:
        """One more item is done (from any of the judging threads)."""
        with self._lock:
            self._done += 1
            now = self._clock()
            if not self._tty:
                since, done_then = self._logged
                if now - since < LOG_EVERY_SECONDS or (
                    self._done - done_then < self._total * LOG_EVERY_SHARE
                    and self._done < self._total
                ):
                    return
                self._logged = (now, self._done)
            self._show(self._line(now))

    def _line(self, now: float) -> str:
        line = f"judged {self._done} of {self._total}"
        left = self._total - self._done
        if left and self._done:
            seconds = (now - self._started) / self._done * left
            minutes = math.ceil(seconds / 60)
            line += f", about {minutes} min left" if minutes > 1 else ", about a minute left"
        return line

    def _show(self, line: str) -> None:
        with contextlib.suppress(OSError, ValueError):  # progress must never stop the judging
            if self._tty:
                self._width = max(self._width, len(line))
                self._stream.write("\r" + line.ljust(self._width))
            else:
                self._stream.write(f"calibrate: {line}\n")
            self._stream.flush()

    def close(self) -> None:
        """End the terminal's line, so what follows starts on a line of its own."""
        with self._lock:
            if self._tty:
                with contextlib.suppress(OSError, ValueError):
                    self._stream.write("\n")
                    self._stream.flush()


# --- the command ------------------------------------------------------------------------------


#: The command's flags, from the options' table (``settings.add_command_flags``).
FLAGS = {
    "model": "the judge",
    "api_base": "OpenAI-compatible server",
    "reasoning_effort": "passed to the judge as --prop-reasoning-effort is",
    "samples": "ask N times per item; reports agreement",
    "min_score": "the bar score items must reach",
    "concurrency": "items judged at once",
    "cache": "verdict cache mode",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_command_flags(parser, FLAGS, reads_ini=True)
    parser.add_argument(
        "--set",
        metavar="FILE.jsonl",
        action="append",
        dest="sets",
        default=[],
        help=f"labeled items (repeatable); '{BUILTIN}' is the shipped set (default: {BUILTIN})",
    )
    parser.add_argument(
        "--min-balanced-accuracy",
        metavar="X",
        type=checked(parse_fraction),
        help="exit 1 below this",
    )
    parser.add_argument(
        "--max-false-pass",
        metavar="X",
        type=checked(parse_fraction),
        help="exit 1 above this false-pass rate",
    )
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def table_lines(metrics: Metrics) -> list[str]:
    lines = [f"{'tag':<22} {'items':>5} {'correct':>7} {'accuracy':>8} {'false pass':>10}"]
    for tag, row in metrics.per_tag.items():
        lines.append(
            f"{terminal_text(tag):<22} {row['items']:>5} {row['correct']:>7} "
            f"{_rate(row['correct'], row['items']):>8.2f} {row['false_pass']:>10}"
        )
    lines.append("")
    lines.append(
        f"items {metrics.items}, balanced accuracy {metrics.balanced_accuracy:.2f}, "
        f"false-pass {metrics.false_pass_rate:.2f}, false-fail {metrics.false_fail_rate:.2f}, "
        f"parse failures {metrics.parse_failures}, score AUC {_pct(metrics.score_auc)}, "
        f"agreement {_pct(metrics.agreement)}"
    )
    return lines


def _wrong(outcome: Outcome, min_score: int) -> dict[str, Any]:
    return {
        "id": outcome.item.id,
        "kind": outcome.item.kind,
        "claim": outcome.item.claim,
        "label": outcome.item.label,
        "value": outcome.value,
        "votes": list(outcome.votes),
        "judged_pass": outcome.judged_pass(min_score),
        "justification": outcome.justification,
        "error": outcome.error,
        "tags": list(outcome.item.tags),
        "source": outcome.item.source,
    }


def run(
    args: argparse.Namespace,
    cache_dir: Path,
    env: Mapping[str, str] | None = None,
    *,
    progress_stream: TextIO | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> int:
    """The ``calibrate`` command, on the verdict cache at ``cache_dir`` (cli/main.py finds it as
    for the other commands); 0 fit or no bar given, 1 a given bar missed, 2 a usage error.
    Progress goes to ``progress_stream`` (standard error), timed by ``clock``."""
    environ = os.environ if env is None else env
    # As a test run started here: flags, then PROP_* variables, then the project's ini file and
    # a reference-library config.ini (the judge a run would gate), then the defaults.
    project = find_project(Path.cwd())
    reference = reference_judge([project.root, Path.cwd()])
    settings = command_settings(args, FLAGS, environ, project.option_values(), reference)
    items = load_sets(args.sets)
    started = time.perf_counter()
    progress = Progress(
        len(items), sys.stderr if progress_stream is None else progress_stream, clock
    )
    try:
        outcomes, counts = judge_items(
            items,
            settings,
            cache_dir if cache_mode(settings.cache).uses_cache else None,
            samples=settings.samples,
            on_judged=progress.judged,
        )
    except JudgeError as error:
        raise CalibrationError(
            f"the judge could not be calibrated: {type(error).__name__}: {error}"
        ) from None
    finally:
        progress.close()
    seconds = time.perf_counter() - started
    metrics = compute_metrics(outcomes, settings.min_score)
    min_ba = args.min_balanced_accuracy
    max_fp = args.max_false_pass
    fit, reasons = fitness(
        metrics,
        DEFAULT_MIN_BALANCED_ACCURACY if min_ba is None else min_ba,
        DEFAULT_MAX_FALSE_PASS if max_fp is None else max_fp,
    )
    identity = judge_identity(settings)
    recorded_at = datetime.now(UTC).replace(microsecond=0).isoformat()
    wrong = [_wrong(o, settings.min_score) for o in outcomes if not o.correct(settings.min_score)]
    result: dict[str, Any] = {
        "model": settings.model,
        "identity": identity,
        "prompt_version": PROMPT_VERSION,
        "reasoning_effort": settings.reasoning_effort,
        "plugin_version": __version__,
        "sets": list(args.sets or [BUILTIN]),
        "min_score": settings.min_score,
        "samples": settings.samples,
        **metrics.record(),
        "seconds": round(seconds, 3),
        "recorded_at": recorded_at,
        "fit": fit,
        "reasons": reasons,
        **counts,
        "per_tag": metrics.per_tag,
        "wrong": wrong,
    }
    for line in table_lines(metrics):
        print(line)
    if wrong:
        print("")
        print(f"wrongly judged ({len(wrong)}):")
        for entry in wrong:
            got = "no answer" if entry["error"] else entry["value"]
            expected = "true" if entry["label"] else "false"
            # Ids, claims and tags come from the user's item file: shown escaped, never obeyed.
            shown_id, claim = terminal_text(entry["id"]), terminal_text(entry["claim"])
            print(f"  {shown_id:<22} expected {expected:<5} got {got!s:<6} {claim}")
    if cache_mode(settings.cache).uses_cache:
        summary = {
            name: value for name, value in result.items() if name not in ("wrong", "per_tag")
        }
        save_record(
            cache_dir, record_key(identity, PROMPT_VERSION, settings.reasoning_effort), summary
        )
    if args.json:
        Path(args.json).write_text(
            json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )
    why = "; ".join(reasons)
    print("")
    if fit:
        print(
            f"FIT: judge {settings.model} meets the bars (balanced accuracy "
            f"{metrics.balanced_accuracy:.2f}, false-pass {metrics.false_pass_rate:.2f}, "
            f"{metrics.items} items, ${counts['cost_usd']:.4f}, {seconds:.1f}s)"
        )
    else:
        print(f"NOT FIT: judge {settings.model} should not gate CI: {why}")
    missed = (min_ba is not None and metrics.balanced_accuracy < min_ba) or (
        max_fp is not None and metrics.false_pass_rate > max_fp
    )
    sys.stdout.flush()
    return 1 if missed else 0
