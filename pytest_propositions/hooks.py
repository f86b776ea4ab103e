"""Hook specifications that other plugins and conftest files can implement."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.hookspec(firstresult=True)
def pytest_proposition_render_target(target: Any, options: Any) -> str | None:
    """Render ``target`` as context text for the judge, or return None to let others try.

    ``options`` is a ``pytest_propositions.RenderOptions`` (first_n, last_n,
    include_personas). Registered renderers (``register_renderer``) are consulted first.
    """
