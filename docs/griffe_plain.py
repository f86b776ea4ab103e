"""A griffe extension for the API reference: an attribute read by inspection shows no docstring
borrowed from its value's type (``MAX_SCORE = 9`` would show int's, ``model = ''`` str's)."""

from __future__ import annotations

from typing import Any

import griffe


class NoBorrowedDocstrings(griffe.Extension):
    """Drops an inspected attribute's docstring when it is its value's type's, not its own."""

    def on_attribute_instance(
        self, *, node: Any, attr: griffe.Attribute, agent: Any, **kwargs: Any
    ) -> None:
        value = getattr(node, "obj", None)
        if attr.docstring is None or value is None or isinstance(value, type):
            return
        if getattr(value, "__doc__", None) == getattr(type(value), "__doc__", None):
            attr.docstring = None
