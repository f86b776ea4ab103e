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
            "row_list": [(texts[rows[i]], texts[rows[i + 1]]) for i in range(0, len(rows), 2)],
            "reasoning": texts[claim["n"]] if "n" in claim else None,
            "error": texts[claim["e"]] if "e" in claim else None,
            "context": [
                (texts[role], "\n\n".join(texts[part] for part in parts))
                for role, parts in claim.get("x", [])
            ],
        }
        found.append(card)
    return found


def rendered(page: str) -> str:
    """The page with its cards as markup, as the page's script builds them (the package's
    ``claims.mustache``, the same cards pytest-html gets; a judge error as its own card): what a
    reader of the page sees, for tests that look for a card's words."""
    from importlib.resources import files

    import chevron

    template = (files("pytest_propositions.reports") / "templates" / "claims.mustache").read_text(
        encoding="utf-8"
    )
    data = page_data(page)
    shown = []
    errors = []
    for card, claim in zip(cards(page), data["claims"], strict=True):
        if card["error"] is not None:
            errors.append(card)
            continue
        context = card["context"]
        shown.append(
            {
                **card,
                "rows": [{"name": name, "text": text} for name, text in card["row_list"]],
                "runs": claim.get("u"),
                "context": {
                    "count": f"{len(context)} message" + ("" if len(context) == 1 else "s"),
                    "messages": [{"role": role, "content": text} for role, text in context],
                }
                if context
                else None,
            }
        )
    markup = str(chevron.render(template, {"claims": shown}))
    markup += "".join(
        chevron.render(
            '<section class="claim error" data-status="error"><div class="status">{{word}}'
            '</div><div class="test">{{test}}</div><div class="text">{{text}}</div>'
            "<pre>{{error}}</pre></section>\n",
            card,
        )
        for card in errors
    )
    # Without the data block: a card's words are counted once, as a reader sees them.
    page = _BLOCK.sub("", page)
    return page.replace('<main id="claims"></main>', f'<main id="claims">{markup}</main>')
