"""How big a request is before it is sent: its tokens (an estimate), the model's window, and
what it would cost; read from litellm's price and context table as data.

The judge asks before paying: a request clearly over the window is refused with no request
sent, and ``--prop-max-cost`` compares the next request's estimated cost, not only what was
spent. No tokenizer is loaded: the estimate counts the pieces a byte-pair tokenizer makes of
text (words, digit groups, punctuation, other scripts' characters). Measured against OpenAI's
tokenizers on real text (``bench/token_estimate.py``; docs/judges.md gives the figures), it is
over their count by less than ``ESTIMATE_ERROR``; other models' tokenizers (Llama's, Claude's)
make more tokens of the same text, not fewer, so a request is refused before sending only when
even the estimate's low end is over the window.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterable

    from .endpoint import Connection
    from .families import Profile
    from .prompts import Message

__all__ = [
    "ESTIMATE_ERROR",
    "REPLY_TOKENS",
    "RequestSize",
    "estimate_tokens",
    "price_entry",
    "price_names",
    "request_size",
    "size_for",
    "text_tokens",
]

#: How far ``estimate_tokens`` may be over OpenAI's tokenizers' count (o200k_base, cl100k_base),
#: with room: measured by ``bench/token_estimate.py``, it was 0.81x-1.20x their count on English
#: prose, code and JSON (0.98x-1.04x on the judge's own requests), and 0.44x-1.20x on other
#: scripts (it counts too few more often there: Chinese with cl100k_base). A request is refused
#: before sending only when its estimate is over the window by more than this.
ESTIMATE_ERROR = 0.3
#: Tokens a reply is counted at in a cost estimate: the bounded reply schema's longest reply
#: (800 + 500 characters of reasoning and justification, and the JSON around them).
REPLY_TOKENS = 400
# What a chat message costs beside its text (its role and the separators), and the reply's
# priming: OpenAI's documented count for its chat models.
_PER_MESSAGE = 4
_PRIMING = 3

_PRICE_FILE = "model_prices_and_context_window_backup.json"

# The pieces a byte-pair tokenizer mostly keeps whole, counted apart (a loop over every piece
# would take seconds a megabyte): a word (a single space before it is part of it), a run of
# digits, a run of punctuation, a run of whitespace (a newline in it, or two blanks), one other
# character (an emoji, a sign of another script).
_WORDS = re.compile(r"[^\W\d_]+")
_DIGITS = re.compile(r"[0-9]+")
_PUNCTUATION = re.compile(r"[!-/:-@\[-`{-~]+")
_WHITESPACE_RUNS = re.compile(r"[ \t]*[\r\n]+[ \t]*|[ \t]{2,}")
_OTHER = re.compile(r"(?![^\W\d_])[^\x00-\x7f]")
# Fitted on the texts of bench/token_estimate.py: a word splits into pieces of about this many
# ASCII letters; a letter of another script (accented, Cyrillic, CJK) is 0.4 of a token (OpenAI's
# tokenizers disagree there: o200k_base reads Chinese at 0.6 tokens a character, cl100k_base at
# 1; the lower count keeps a refusal before sending on the safe side); digits go in threes; a
# run of punctuation is about this many characters to a token (``": "``, ``"},{"``); a run of
# whitespace is merged into its neighbour about half the time.
_WORD_PIECE = 8
_OTHER_LETTER = 0.4
_DIGIT_PIECE = 3
_PUNCTUATION_PIECE = 3
_WHITESPACE = 0.5


def _word_tokens(word: str) -> float:
    if word.isascii():
        return -(-len(word) // _WORD_PIECE)
    ascii_letters = sum(1 for char in word if char.isascii())
    other = len(word) - ascii_letters
    return max(-(-ascii_letters // _WORD_PIECE) + other * _OTHER_LETTER, 1.0)


@functools.lru_cache(maxsize=16)
def text_tokens(text: str) -> int:
    """An estimate of the tokens a byte-pair tokenizer makes of ``text`` (about half a second
    a megabyte; kept for the last few texts: the system prompt, and a claim's request asked
    again, double-checked or sized first for --prop-max-cost, are counted once)."""
    count = sum(_word_tokens(word) for word in _WORDS.findall(text))
    count += sum(-(-len(run) // _DIGIT_PIECE) for run in _DIGITS.findall(text))
    count += sum(-(-len(run) // _PUNCTUATION_PIECE) for run in _PUNCTUATION.findall(text))
    count += _WHITESPACE * len(_WHITESPACE_RUNS.findall(text))
    count += len(_OTHER.findall(text))
    return math.ceil(count)


def estimate_tokens(messages: Iterable[Message]) -> int:
    """An estimate of a chat request's prompt tokens: every message's text, and what each costs
    beside it."""
    total = _PRIMING
    for message in messages:
        total += _PER_MESSAGE
        for name, value in message.items():
            if name == "role":  # in the message's own cost
                continue
            if isinstance(value, str):
                total += text_tokens(value)
            elif value is not None:
                total += text_tokens(json.dumps(value, ensure_ascii=False))
    return total


# -- litellm's table, read as data -------------------------------------------------------------


@functools.cache
def _table_text() -> str:
    """The table's text, read once per process ("" when litellm is not installed)."""
    try:
        spec = importlib.util.find_spec("litellm")  # finds, never imports
    except (ImportError, ValueError):
        spec = None
    locations = spec.submodule_search_locations if spec is not None else None
    for location in locations or ():
        path = Path(location) / _PRICE_FILE
        if path.is_file():
            return path.read_text(encoding="utf-8")
    return ""


@functools.cache
def price_entry(name: str) -> dict[str, Any] | None:
    """litellm's table entry for a model name, or None; only that entry is decoded."""
    text = _table_text()
    found = re.search(r"\n\s{1,8}" + re.escape(json.dumps(name)) + r"\s*:\s*(?=\{)", text)
    if found is None:
        return None
    try:
        value, _ = json.JSONDecoder().raw_decode(text, found.end())
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def price_names(profile: Profile, served: str | None = None) -> list[str]:
    """The names the table may know the model by: with its provider, then bare."""
    names = []
    for name in (profile.wire_model, served):
        if not name:
            continue
        if profile.provider not in (None, "openai"):
            names.append(f"{profile.provider}/{name}")
        names.append(name)
    return names


def table_entry(profile: Profile, served: str | None = None) -> dict[str, Any] | None:
    """The model's entry in the table, or None when it does not know the model (an entry of
    another provider's model of the same name is not OpenAI's)."""
    for name in price_names(profile, served):
        entry = price_entry(name)
        if entry is None:
            continue
        if profile.provider == "openai" and entry.get("litellm_provider") not in (None, "openai"):
            continue
        return entry
    return None


def _number(entry: dict[str, Any], name: str) -> float | None:
    value = entry.get(name)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


# -- one request's size ------------------------------------------------------------------------


@dataclass(frozen=True)
class RequestSize:
    """A request as the judge sizes it before sending: its estimated prompt ``tokens``, the
    model's ``window`` (input tokens; None when unknown) and where it was read (``source``), and
    the estimated cost in US dollars of one call (None when the model has no price)."""

    tokens: int
    window: int | None = None
    source: str = ""
    cost: float | None = None

    @property
    def clearly_over(self) -> bool:
        """Over the window even at the estimate's low end: no use sending it."""
        return self.window is not None and self.tokens * (1 - ESTIMATE_ERROR) > self.window

    def said(self) -> str:
        """The size and the window, as a message says them."""
        window = (
            f"the window is {self.window:,} tokens ({self.source})"
            if self.window is not None
            else "the model's window is not known here"
        )
        return f"about {self.tokens:,} prompt tokens (estimated); {window}"


def request_size(
    messages: Iterable[Message],
    profile: Profile | None,
    *,
    window: int | None = None,
    source: str = "",
) -> RequestSize:
    """The request's size: ``window`` when the endpoint says it (the local judge's context),
    else the table's ``max_input_tokens`` for the model; the cost from the table's prices (a
    reply counted at ``REPLY_TOKENS``)."""
    tokens = estimate_tokens(messages)
    entry = table_entry(profile) if profile is not None else None
    cost: float | None = None
    if entry is not None:
        if window is None:
            limit = _number(entry, "max_input_tokens") or _number(entry, "max_tokens")
            if limit:
                window, source = int(limit), "litellm's model table"
        prompt_rate = _number(entry, "input_cost_per_token")
        reply_rate = _number(entry, "output_cost_per_token")
        if prompt_rate is not None or reply_rate is not None:
            cost = tokens * (prompt_rate or 0.0) + REPLY_TOKENS * (reply_rate or 0.0)
    return RequestSize(tokens, window, source, cost)


def size_for(connection: Connection, profile: Profile, messages: Iterable[Message]) -> RequestSize:
    """A request to ``connection``'s model: its window the endpoint's own (a managed server's
    context) where it says one, else the model table's."""
    window = connection.context() if connection.context is not None else None
    source = "the local judge's context, --prop-local-context" if window is not None else ""
    return request_size(messages, profile, window=window, source=source)
