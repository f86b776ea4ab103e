"""Reading the package's own source for the tests that hold a rule to its one home: which string
constants a module's code holds (docstrings aside, since prose may name anything)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest_propositions

PACKAGE = Path(pytest_propositions.__file__).resolve().parent


def code_strings(source: str) -> list[str]:
    """The string constants of a module that are not docstrings."""
    tree = ast.parse(source)
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
    ]
