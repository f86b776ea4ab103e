"""The plugin's version, in a module of its own so that any module can read it without importing
the package's facade (``__init__``), which loads others lazily."""

from __future__ import annotations

__version__ = "0.1.0"
