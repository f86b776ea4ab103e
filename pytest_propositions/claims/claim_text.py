"""A claim's text with its mustache variables filled in: every variable the claim uses must be
given, values are never HTML-escaped, and the text is the same in every run (it is keyed).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

import chevron
from chevron.tokenizer import tokenize

from ..checks import check_text, check_variable_value, quote_claim

__all__ = ["render_claim", "unused_variables"]


def render_claim(claim: str, claim_variables: Mapping[str, Any] | None) -> str:
    """Fill mustache variables; every variable the claim uses must be given, in or out of sections.

    Values are never HTML-escaped; mappings and lists become sorted JSON rather than reprs.
    Partials are refused (they would read files), and so are values whose text is not the same
    in every run (see ``check_variable_value``): the rendered claim is part of the cache key.
    """
    __tracebackhide__ = True
    variables = dict(claim_variables or {})
    if "{{" not in claim:
        return claim  # no tag (even a delimiter change starts with "{{"): nothing to render
    try:
        tokens = list(tokenize(claim))
        tree, _ = _template_tree(tokens, 0, None)
    except chevron.ChevronError as error:
        raise ValueError(
            f"the claim is not a valid mustache template: {error}; claim: {quote_claim(claim)}"
        ) from None
    parts: list[str] = []
    _render_tree(tree, [variables], parts, claim, variables)
    text = "".join(parts)
    if not text.strip():
        raise ValueError(
            f"the claim renders to blank text; claim: {quote_claim(claim)}, claim_variables: "
            f"{', '.join(sorted(variables)) or 'none'}"
        )
    return check_text(text, "the rendered claim")


def _names_used(claim: str) -> set[str] | None:
    """The variable names a claim's tags use (the first part of a dotted name), in sections too;
    None when the claim is no valid template (``render_claim`` says why)."""
    if "{{" not in claim:
        return set()
    try:
        tokens = list(tokenize(claim))
    except chevron.ChevronError:
        return None
    kinds = ("variable", "no escape", "section", "inverted section")
    return {key.split(".", 1)[0] for tag, key in tokens if tag in kinds}


def unused_variables(claim: str, claim_variables: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """The ``claim_variables`` no tag of the claim uses, split in two: those the claim writes
    in another template syntax (``{name}``, ``${name}``, ``%(name)s``), which it surely meant
    as a variable and would send literally, and the rest. Nothing for an invalid template."""
    used = _names_used(claim)
    if used is None:
        return [], []
    unused = sorted(name for name in claim_variables if name not in used)
    meant = [name for name in unused if _other_syntax(name).search(claim)]
    return meant, [name for name in unused if name not in meant]


def _other_syntax(name: str) -> re.Pattern[str]:
    """``{name}`` (Python's format, JavaScript's ``${name}``) not inside ``{{...}}``, or
    ``%(name)s``."""
    word = re.escape(name)
    return re.compile(rf"(?<!\{{)\{{\s*{word}\s*\}}(?!\}})|%\({word}\)")


# A parsed template: literal text, ("var", key), or (section kind, key, children).
_Node = str | tuple[str, str] | tuple[str, str, list[Any]]


def _template_tree(
    tokens: list[tuple[str, str]], start: int, section: str | None
) -> tuple[list[_Node], int]:
    """Nest chevron's token stream into sections; partials are refused."""
    __tracebackhide__ = True
    nodes: list[_Node] = []
    index = start
    while index < len(tokens):
        tag, key = tokens[index]
        index += 1
        if tag == "literal":
            nodes.append(key)
        elif tag in ("variable", "no escape"):
            nodes.append(("var", key))
        elif tag in ("section", "inverted section"):
            children, index = _template_tree(tokens, index, key)
            nodes.append((tag, key, children))
        elif tag == "end":
            return nodes, index
        elif tag == "partial":
            raise ValueError(
                f"the claim uses the partial {{{{> {key}}}}}; partials are not supported (they "
                "would read template files from disk): put the text in claim_variables instead"
            )
        # comments and delimiter changes render nothing
    return nodes, index


def _lookup(key: str, scopes: list[Any], claim: str, variables: Mapping[str, Any]) -> Any:
    __tracebackhide__ = True
    if key == ".":
        return scopes[0]
    for scope in scopes:
        value: Any = scope
        for part in key.split("."):
            if isinstance(value, Mapping) and part in value:
                value = value[part]
            elif isinstance(value, list | tuple) and part.isdigit() and int(part) < len(value):
                value = value[int(part)]
            else:
                break
        else:
            return value
    available = ", ".join(sorted(variables)) or "none"
    raise ValueError(
        f"the claim uses the variable {{{{{key}}}}} but claim_variables has no value for it "
        f"(given: {available}); claim: {quote_claim(claim)}. Stricter than the reference "
        "library on purpose, which would render it as empty text: pass it in claim_variables"
    )


def _render_tree(
    nodes: list[_Node],
    scopes: list[Any],
    parts: list[str],
    claim: str,
    variables: Mapping[str, Any],
) -> None:
    __tracebackhide__ = True
    for node in nodes:
        if isinstance(node, str):
            parts.append(node)
            continue
        key = node[1]
        value = _lookup(key, scopes, claim, variables)
        check_variable_value(value, "{{" + key + "}}")
        if node[0] == "var":
            parts.append(_value_text(value))
            continue
        children: list[_Node] = node[2]  # type: ignore[misc]
        if node[0] == "inverted section":
            if not value:
                _render_tree(children, scopes, parts, claim, variables)
        elif isinstance(value, list | tuple):
            for item in value:
                _render_tree(children, [item, *scopes], parts, claim, variables)
        elif value:
            _render_tree(children, [value, *scopes], parts, claim, variables)


# Characters that end a line for str.splitlines() and that JSON leaves as they are.
_LINE_BREAKS_JSON_KEEPS = str.maketrans(
    {"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"}
)


def _value_text(value: Any) -> str:
    """A variable's value as claim text. A value is data, often from the simulation itself: one
    that spans lines is written as a JSON string, so it stays on the claim's line and cannot
    open a section of the judge's request of its own (a "# Additional context" heading, say)."""
    if isinstance(value, Mapping | list | tuple):
        return json.dumps(value, sort_keys=True, ensure_ascii=False).translate(
            _LINE_BREAKS_JSON_KEEPS
        )
    text = value if isinstance(value, str) else str(value)
    if len(f"{text}.".splitlines()) > 1:  # a line break anywhere, at the end too
        return json.dumps(text, ensure_ascii=False).translate(_LINE_BREAKS_JSON_KEEPS)
    return text
