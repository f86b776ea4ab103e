"""Checks of what a call site gives (claims, options, claim variables, precondition results,
the files a command is given).

Every mistake is a clear error where it is made: a value that would be read by truthiness, or
whose text changes from run to run (and with it the cache key), is refused, never guessed at.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import math
import os
import re
import sys
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from .redaction import redact_values

__all__ = [
    "CLAIM_QUOTE_LIMIT",
    "CLOSE_ENOUGH",
    "DOCUMENT_LIMIT",
    "LINE_LIMIT",
    "TOO_DEEP",
    "InputFileError",
    "at_site",
    "check_claim",
    "check_count",
    "check_flag",
    "check_precondition_result",
    "check_text",
    "check_variable_value",
    "check_window",
    "closest_name",
    "from_site",
    "plural",
    "problems_listed",
    "quote_claim",
    "quote_name",
    "read_json_document",
    "read_text_lines",
    "short_repr",
    "terminal_text",
    "warn_at_caller",
]

#: How many characters of a claim a one-line message quotes; the report section has the rest.
CLAIM_QUOTE_LIMIT = 120

# Patterns are compiled at first use (re keeps them): a run whose claims all pass needs none.
_WHITESPACE = r"\s+"
# The default repr of objects (and of functions, classes' instances...) carries a memory
# address, which differs between runs: a claim holding it would miss the cache every time.
_ADDRESS = r"\bat 0x[0-9A-Fa-f]{4,}"


# What a terminal acts on rather than shows: C0 and C1 controls (ESC sequences clear the screen,
# set the title or make links; CR rewrites a line; a newline starts one that may pass for a
# result line in a CI log), DEL, the line and paragraph separators, and bidi controls, which
# reorder what follows them.
_TERMINAL_UNSAFE = "[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]"
_NAMED_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(found: re.Match[str]) -> str:
    char = found.group()
    named = _NAMED_ESCAPES.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal_text(text: str) -> str:
    """Text from a claim or a judge (a justification, reasoning) as a terminal may print it:
    one line, each control or bidi character shown as its escape (a newline as ``\\n``), so
    the text cannot move the cursor, restyle the terminal or forge a line of pytest's output."""
    return re.sub(_TERMINAL_UNSAFE, _escape, text)


def quote_claim(claim: str, limit: int = CLAIM_QUOTE_LIMIT) -> str:
    """The claim as one readable quoted line: redacted of the known secrets (a claim variable
    may hold a key), whitespace runs folded, long text cut with '…'."""
    text = re.sub(_WHITESPACE, " ", redact_values(claim)).strip()
    if len(text) > limit:
        text = text[: limit - 1].rstrip() + "…"
    return repr(text)


def check_text(text: str, what: str) -> str:
    """Refuse text that cannot be sent or stored: an unpaired surrogate has no UTF-8 form."""
    __tracebackhide__ = True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        start = max(0, error.start - 20)
        around = text[start : error.start + 20]
        raise ValueError(
            f"{what} holds an unpaired surrogate {text[error.start]!r} at position {error.start} "
            f"(near {around!r}); such text has no UTF-8 form, so no judge can read it. It often "
            "comes from bytes decoded with errors='surrogateescape': decode them as UTF-8 "
            "with errors='replace'"
        ) from None
    return text


def check_claim(claim: Any, where: str = "claim") -> str:
    """A claim is a str with something to judge in it, and valid Unicode."""
    __tracebackhide__ = True
    if not isinstance(claim, str):
        raise TypeError(
            f"{where} must be a non-empty string, got {type(claim).__name__}: {claim!r}"
        )
    if not claim.strip():
        raise ValueError(f"{where} must be a non-empty string, got {claim!r}")
    return check_text(claim, where)


def check_flag(value: Any, name: str) -> bool:
    """An on/off option must be True or False: "false" or "no" is truthy, so it is refused."""
    __tracebackhide__ = True
    if isinstance(value, bool):
        return value
    raise TypeError(
        f"{name} must be True or False, got {type(value).__name__} {short_repr(value)} "
        "(stricter than the reference library on purpose, which reads it by truthiness: pass "
        "a bool)"
    )


def check_precondition_result(function: Callable[..., Any], result: Any) -> bool:
    """Whether to judge the claim: a precondition answers True or None (judge it) or False (the
    claim holds trivially), as the reference library documents. Anything else (0, "", a list,
    "no") is refused: read by truthiness, a mistake would silently pass a claim."""
    __tracebackhide__ = True
    if result is None:
        return True
    if isinstance(result, bool):
        return result
    kind = type(result)
    if kind.__module__ == "numpy" and kind.__name__ in ("bool_", "bool"):
        return bool(result)
    name = getattr(function, "__qualname__", None) or getattr(function, "__name__", None)
    label = name if isinstance(name, str) else repr(function)
    raise TypeError(
        f"the precondition {label} returned {kind.__name__} {short_repr(result)}; a "
        "precondition must return True (judge the claim), False (the claim holds trivially) or "
        "None (judge the claim). This is stricter than the reference library, which compares "
        "the result with == False (so 0 skips the judge, and '' or [] is judged): return "
        "a bool, e.g. bool(...) of what you meant"
    )


def check_variable_value(value: Any, path: str, seen: frozenset[int] = frozenset()) -> None:
    """A claim variable's text must be the same in every run: it is part of the cache key.

    Plain data (str, numbers, None, bools, and dicts with str keys or lists of it) always is;
    sets are not (their order follows the hash seed), nor is a repr with a memory address.
    """
    __tracebackhide__ = True
    if value is None or isinstance(value, bool | int):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"claim variable {path} is {value!r}; expected a finite number")
        return
    if isinstance(value, str):
        check_text(value, f"claim variable {path}")
        return
    if id(value) in seen:
        raise ValueError(f"claim variable {path} contains itself; expected plain data")
    if len(seen) > 50:
        raise ValueError(f"claim variable {path} nests deeper than 50 levels; expected plain data")
    inner = seen | {id(value)}
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(
                    f"claim variable {path} has a key of type {type(key).__name__} ({key!r}); "
                    "expected str keys"
                )
            check_variable_value(item, f"{path}.{key}", inner)
        return
    if isinstance(value, list | tuple):
        for index, item in enumerate(value):
            check_variable_value(item, f"{path}[{index}]", inner)
        return
    if isinstance(value, set | frozenset):
        raise TypeError(
            f"claim variable {path} is a {type(value).__name__}, whose order changes between "
            "runs (and with it the cache key); pass sorted(...) instead"
        )
    if callable(value):
        raise TypeError(
            f"claim variable {path} is a callable ({type(value).__name__}); expected a value "
            "(str, number, or a dict/list of them)"
        )
    text = str(value)
    if re.search(_ADDRESS, text):
        raise TypeError(
            f"claim variable {path} is a {type(value).__name__} whose text {short_repr(text)} "
            "holds a memory address, which changes every run (and with it the cache key); "
            "pass a str (or give the class a __str__)"
        )
    check_text(text, f"claim variable {path}")


def short_repr(value: Any, limit: int = 60) -> str:
    """``repr(value)`` cut to ``limit`` characters with '…' (a failing repr shows the type)."""
    try:
        text = repr(value)
    except Exception:
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 1] + "…"


# -- counts and names, as every message and rendered text words them ---------------------------


def check_count(name: str, value: object, minimum: int = 1) -> int | None:
    """Counts of entries: a whole number of at least ``minimum``, or None; bools are a likely
    mistake."""
    __tracebackhide__ = True
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be a whole number or None, got {value!r}")
    if value < minimum:
        raise ValueError(
            f"{name} must be a whole number of at least {minimum}, or None, got {value}"
        )
    return value


def check_window(name: str, value: object) -> int | None:
    """An event window: a whole number of at least 0, or None (``trace.notation.select_window`` says
    what 0 means)."""
    __tracebackhide__ = True
    if isinstance(value, int) and not isinstance(value, bool) and value < 0:
        raise ValueError(
            f"{name} must be a whole number of at least 0, or None, got {value} (0 means what it "
            "means to the reference library: first_n=0 shows no event from the start, last_n=0 "
            "shows every event)"
        )
    return check_count(name, value, minimum=0)


def plural(count: int, word: str, words: str | None = None) -> str:
    """``1 claim``, ``2 claims``: every count a report or a rendered text writes goes here."""
    return f"{count} {word if count == 1 else (words or word + 's')}"


def quote_name(name: str) -> str:
    """Names go in single quotes on one line, so a name cannot break the layout."""
    return "'" + " ".join(name.splitlines()) + "'"


# --- call sites and the names they take ------------------------------------------------------


def at_site(where: str | None) -> str:
    """The start of a message about what a call site gave: ``where: `` (nothing without one).
    Every call-site error is led by this, so the user reads the call that went wrong first."""
    return f"{where}: " if where else ""


_AnError = TypeVar("_AnError", bound=Exception)


def from_site(error: _AnError, where: str | None) -> _AnError:
    """The same kind of error, its message led by ``at_site(where)``; unchanged without one."""
    if not where:
        return error
    return type(error)(at_site(where) + str(error))


def problems_listed(where: str, problems: Iterable[object]) -> str:
    """Several problems of one call site (a claim, a marker) in one message, one a line."""
    listed = [f"\n  - {problem}" for problem in problems]
    return f"{where} has {len(listed)} problems:{''.join(listed)}"


#: How alike a misspelt name and the name meant must be for a "did you mean" (difflib's ratio).
CLOSE_ENOUGH = 0.7


def closest_name(name: str, accepted: Iterable[str]) -> str | None:
    """The accepted name ``name`` most likely misspells, or None when none is close: the one
    rule of every "did you mean" (an option, an ini key, a batch item's key)."""
    close = difflib.get_close_matches(name, list(accepted), n=1, cutoff=CLOSE_ENOUGH)
    return close[0] if close else None


# The package's folder: a warning about what a call gave is shown at the first frame outside it.
_PACKAGE_FOLDER = os.path.join(os.path.dirname(__file__), "")


def warn_at_caller(message: str, category: type[Warning]) -> None:
    """Warn at the user's line: the first frame outside the package (the call that gave it),
    however deep inside the package the check that found it runs."""
    level, frame = 2, sys._getframe(1)  # stacklevel 2: the frame that called this
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_FOLDER):
        level += 1
        frame = frame.f_back  # type: ignore[assignment]
    warnings.warn(message, category, stacklevel=level)


# --- files a command is given --------------------------------------------------------------

#: The longest line read from a file of JSON lines (an export, a calibration set): an export
#: line keeps a judge request, which no judge's context comes near. A longer one is a mistake
#: (the wrong file, /dev/zero), refused before it fills memory.
LINE_LIMIT = 64 * 2**20
#: The largest JSON document read whole (a --prop-report), for the same reason.
DOCUMENT_LIMIT = 256 * 2**20


#: What a JSON value nested deeper than the interpreter can follow is called.
TOO_DEEP = "JSON nested too deeply to be read"


class InputFileError(ValueError):
    """A file a command was given cannot be read as asked; the message names the file (and
    the line) and what is wrong with it."""


def _size(limit: int) -> str:
    return f"{limit / 2**20:g} MiB"


def read_text_lines(path: str) -> tuple[str, list[str]]:
    """The name to show and the lines (without their ends) of the UTF-8 text file at ``path``
    (``-``: standard input); InputFileError for a file that cannot be read, a line that is not
    UTF-8, or a line longer than LINE_LIMIT."""
    name = "<stdin>" if path == "-" else path
    limit = LINE_LIMIT
    lines: list[str] = []
    try:
        with contextlib.ExitStack() as stack:
            file = sys.stdin.buffer if path == "-" else stack.enter_context(open(path, "rb"))
            while raw := file.readline(limit + 2):
                lineno = len(lines) + 1
                raw = raw.removesuffix(b"\n").removesuffix(b"\r")
                if len(raw) > limit:
                    raise InputFileError(
                        f"{name}:{lineno}: a line longer than {_size(limit)}: not a file of "
                        "JSON lines (or an endless one, such as /dev/zero)"
                    )
                try:
                    lines.append(raw.decode("utf-8"))
                except UnicodeDecodeError:
                    raise InputFileError(f"{name}:{lineno}: expected UTF-8 text") from None
    except OSError as exc:
        raise InputFileError(f"cannot read {name}: {exc.strerror or exc}") from None
    return name, lines


def read_json_document(path: str) -> Any:
    """The JSON value of the file at ``path``; InputFileError for a file that cannot be read,
    is larger than DOCUMENT_LIMIT, is not UTF-8 JSON, or nests too deeply to be read."""
    limit = DOCUMENT_LIMIT
    try:
        with open(path, "rb") as file:
            data = file.read(limit + 1)
    except OSError as exc:
        raise InputFileError(f"cannot read {path}: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise InputFileError(
            f"{path}: larger than {_size(limit)}: not a JSON file this reads (or an endless "
            "one, such as /dev/zero)"
        )
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise InputFileError(f"{path}: expected UTF-8 text") from None
    except RecursionError:
        raise InputFileError(f"{path}: {TOO_DEEP}") from None
    except ValueError as exc:
        raise InputFileError(f"{path}: not JSON ({exc})") from None
