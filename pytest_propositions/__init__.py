"""pytest-propositions: assert natural-language claims about simulations, judged by an LLM.

Importing this package is cheap: the heavy parts (litellm, diskcache, pydantic) load only when
a claim is actually evaluated.
"""

from __future__ import annotations

__version__ = "0.1.0"
