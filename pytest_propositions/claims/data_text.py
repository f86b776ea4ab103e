"""The text of targets given as data: results-extraction dicts, and the checks of any data shown.

A dataclass instance or a pydantic model of the user's own is shown as its fields
(``object_fields``), as the dict of the same fields would be. Data shown to the judge is
checked here first (``check_plain_data``), so that no renderer meets
Python's recursion limit. Transcripts (chat messages, traces) are ``transcripts.py``'s.
"""

from __future__ import annotations

import dataclasses
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


# --------------------------------------------------------------------------------------------
# Objects given as their fields: a dataclass instance, a pydantic model


def _is_model(value: Any) -> bool:
    """A pydantic model instance (its class has ``model_dump`` too, unbound)."""
    return not isinstance(value, type) and callable(getattr(value, "model_dump", None))


def is_fields_object(value: Any) -> bool:
    """Whether ``value`` is shown as its fields: a dataclass instance or a pydantic model."""
    is_dataclass = dataclasses.is_dataclass(value) and not isinstance(value, type)
    return is_dataclass or _is_model(value)


def object_fields(value: Any) -> dict[str, Any]:
    """A dataclass instance's fields (``dataclasses.asdict``'s, without copying the values) or a
    pydantic model's (``model_dump(mode="json")``), nested ones as plain data too; ValueError for
    one with no fields, or one that holds itself."""
    fields = _as_plain(value, ())
    if not isinstance(fields, dict):
        raise TypeError(
            f"expected a dataclass instance or a pydantic model, got {type_name(value)}"
        )
    if not fields:
        raise ValueError(
            f"the target, a {type_name(value)}, has no fields: there is nothing to judge"
        )
    check_plain_data(fields, f"the fields of the {type_name(value)}")
    return fields


def _as_plain(value: Any, outer: tuple[int, ...]) -> Any:
    if id(value) in outer or len(outer) > MAX_TARGET_NESTING:
        raise ValueError(
            f"a {type_name(value)} in the target holds itself or nests more than "
            f"{MAX_TARGET_NESTING} levels deep; expected plain fields"
        )
    inner = (*outer, id(value))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _as_plain(getattr(value, f.name), inner) for f in dataclasses.fields(value)}
    if _is_model(value):
        dumped = value.model_dump(mode="json")
        return dumped if isinstance(dumped, Mapping) else _ADDRESS_RE.sub("", str(value))
    if isinstance(value, Mapping):
        return {key: _as_plain(item, inner) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_as_plain(item, inner) for item in value]
    return value


def render_fields(name: str, fields: Mapping[str, Any]) -> str:
    """An object's fields as readable text, as an extraction result's: sorted, nested indented."""
    return "\n".join(
        [
            f"---- BEGIN FIELDS OF {one_line(name)} ----",
            *_data_lines(fields, ""),
            f"---- END FIELDS OF {one_line(name)} ----",
        ]
    )
