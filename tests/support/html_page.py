"""The HTML report's claims as the page's script reads them (its JSON data block), for tests."""

from __future__ import annotations

import json
import re
from typing import Any

_BLOCK = re.compile(r'<script type="application/json" id="report-data">(.*?)</script>', re.S)


def page_data(page: str) -> dict[str, Any]:
    """The page's data block: ``texts`` (each distinct text once) and ``claims``."""
    found = _BLOCK.search(page)
    assert found is not None, "no data block in the page"
    data: dict[str, Any] = json.loads(found.group(1))
    return data


def cards(page: str) -> list[dict[str, Any]]:
    """Each card's texts: filter, status, word, test, text, rows (a dict), reasoning, error,
    and context (role and text of each message the judge saw)."""
    data = page_data(page)
    texts = data["texts"]
    found = []
    for claim in data["claims"]:
        rows = claim.get("r", [])
        card = {
            "filter": texts[claim["f"]],
            "status": texts[claim["s"]],
            "word": texts[claim["w"]],
            "test": texts[claim["t"]],
            "text": texts[claim["c"]],
            "rows": {texts[rows[i]]: texts[rows[i + 1]] for i in range(0, len(rows), 2)},
            "reasoning": texts[claim["n"]] if "n" in claim else None,
            "error": texts[claim["e"]] if "e" in claim else None,
            "context": [
                (texts[role], "\n\n".join(texts[part] for part in parts))
                for role, parts in claim.get("x", [])
            ],
        }
        found.append(card)
    return found
