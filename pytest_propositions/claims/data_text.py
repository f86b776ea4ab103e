"""The text of targets given as data: results-extraction dicts, and the checks of any data shown.

Data shown to the judge is checked here first (``check_plain_data``), so that no renderer meets
Python's recursion limit. Transcripts (chat messages, traces) are ``transcripts.py``'s.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

#: How deeply lists of targets, or the data in a target, may nest; deeper is surely a mistake
#: (or a list holding itself).
MAX_TARGET_NESTING = 32

_ADDRESS_RE = re.compile(r" at 0x[0-9A-Fa-f]+")


def type_name(value: Any) -> str:
    """A value's class as an error message names it: ``int``, ``mymodule.Robot``."""
    klass = type(value)
    if klass.__module__ == "builtins":
        return klass.__qualname__
    return f"{klass.__module__}.{klass.__qualname__}"


def one_line(text: str) -> str:
    """Names and roles sit inside an event line; a line break there would forge a new line."""
    return " ".join(text.split())


def check_plain_data(value: Any, what: str, outer: tuple[int, ...] = ()) -> None:
    """Data shown to the judge (an extraction result, a persona, a tool call's arguments) is
    refused by name when it contains itself or nests past MAX_TARGET_NESTING levels, before a
    renderer would meet Python's recursion limit."""
    if isinstance(value, Mapping | list | tuple | set | frozenset):
        if id(value) in outer:
            raise ValueError(f"{what} contains itself; expected plain JSON data")
        if len(outer) >= MAX_TARGET_NESTING:
            raise ValueError(
                f"{what} is nested more than {MAX_TARGET_NESTING} levels deep; expected plain "
                "JSON data"
            )
        items = value.values() if isinstance(value, Mapping) else value
        for item in items:
            check_plain_data(item, what, (*outer, id(value)))


def plain_json(value: Any) -> Any:
    """Plain JSON data with str keys; anything else as text with memory addresses removed."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, Mapping):
        return {str(k): plain_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain_json(v) for v in value]
    if isinstance(value, set | frozenset):
        items = [plain_json(v) for v in value]
        return sorted(items, key=lambda v: json.dumps(v, sort_keys=True, ensure_ascii=False))
    return _ADDRESS_RE.sub("", str(value))


# --------------------------------------------------------------------------------------------
# Extraction results


def _scalar_text(value: Any) -> str:
    if isinstance(value, str):
        return value if value.strip() else json.dumps(value)
    if value is None or isinstance(value, bool | int | float):
        return json.dumps(value)
    return _ADDRESS_RE.sub("", str(value))


def _data_entry(pad: str, label: str, value: Any) -> list[str]:
    """One ``label value`` line, or the label and the value's lines beneath it."""
    if isinstance(value, set | frozenset):
        value = plain_json(value)
    if isinstance(value, Mapping | list | tuple):
        if not value:
            return [f"{pad}{label} {'{}' if isinstance(value, Mapping) else '[]'}"]
        return [f"{pad}{label}", *_data_lines(value, pad + "  ")]
    text = _scalar_text(value)
    if "\n" in text or "\r" in text:
        # A value's own line breaks stay inside its indented block, never forging a field.
        return [f"{pad}{label}", *(f"{pad}    | {line}" for line in text.splitlines())]
    return [f"{pad}{label} {text}"]


def _data_lines(value: Mapping[Any, Any] | Sequence[Any], pad: str) -> list[str]:
    lines: list[str] = []
    if isinstance(value, Mapping):
        for key in sorted(value, key=lambda k: str(k)):
            lines += _data_entry(pad, f"{one_line(str(key))}:", value[key])
    else:
        for item in value:
            lines += _data_entry(pad, "-", item)
    return lines


def validate_extraction(result: Mapping[Any, Any]) -> None:
    if not result:
        raise ValueError(
            "the target is an empty dict: as an extraction result it holds nothing to judge (the "
            "reference library's extractor returns {} when it could not read its model's answer)"
        )
    check_plain_data(result, "the extraction result")


def render_extraction(result: Mapping[Any, Any]) -> str:
    """A results-extraction output as readable text: fields sorted by name, nested indented."""
    lines = [
        "---- BEGIN EXTRACTION RESULT ----",
        *_data_lines(result, ""),
        "---- END EXTRACTION RESULT ----",
    ]
    return "\n".join(lines)
