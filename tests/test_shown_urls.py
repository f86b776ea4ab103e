"""A URL shown without its credentials has one home, ``redaction.redact_url``: every caller that
shows one (the judge's connection, a refused redirect's Location, the verdict store's name) is
driven through the same table, and no other module reads a URL's credentials itself."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytest_propositions.judging.endpoint import Connection
from pytest_propositions.judging.transport_http import _shown_location
from pytest_propositions.redaction import redact_url
from pytest_propositions.store.postgres import describe_store

PACKAGE = Path(__file__).resolve().parent.parent / "pytest_propositions"

# (the URL after its scheme, its password's pieces, which no caller shows, and what a caller
# showing the URL shows)
CASES = [
    ("ana:Pa55word-x1@judge.example:8443/v1", ("Pa55word-x1",), "[redacted]@judge.example:8443/v1"),
    # Unencoded, the password reads to a parser as a host, a path or a query: it still ends
    # at the URL's last "@".
    (
        "ana:pa/ss@wo?rd#x1@judge.example/v1",
        ("pa/ss", "wo?rd", "rd#x1"),
        "[redacted]@judge.example/v1",
    ),
    # A user alone: a token to an api_base, a user to the store (which names it).
    ("Tok3nOnly-abc@judge.example/v1", (), "[redacted]@judge.example/v1"),
    (
        "judge.example/v1?api_key=Qu3rySecret&x=1",
        ("Qu3rySecret",),
        "judge.example/v1?api_key=[redacted]&x=1",
    ),
    ("judge.example/v1", (), "judge.example/v1"),
]


@pytest.mark.parametrize(("rest", "hidden", "want"), CASES)
def test_every_caller_shows_a_url_as_redact_url_does(
    rest: str, hidden: tuple[str, ...], want: str
) -> None:
    url = f"https://{rest}"
    connection = Connection("m", "openai/m", url, "k")
    base, _key = connection.secret_endpoint()
    shown = {
        "redact_url": redact_url(url),
        "Connection.shown_base": connection.shown_base,
        "a refused redirect's Location": _shown_location(url),
        "the wrapped api_base": repr(base).removeprefix("Secret(").removesuffix(")").strip("'"),
    }
    assert shown == dict.fromkeys(shown, f"https://{want}")
    assert f"api_base='https://{want}'" in repr(connection)


@pytest.mark.parametrize(("rest", "hidden", "want"), CASES)
def test_the_store_is_named_without_its_password(
    rest: str, hidden: tuple[str, ...], want: str
) -> None:
    """The store's name keeps a user the driver reads as one (it is no secret), never a
    password; a password the driver would misread takes the user with it."""
    shown = describe_store(f"postgresql://{rest}", {})
    assert "judge.example" in shown
    for piece in hidden:
        assert piece not in shown
    if "[redacted]@" in want and rest.count("@") > 1:
        assert shown.startswith("postgresql://[redacted]@judge.example:")


def test_no_module_but_redaction_reads_a_urls_credentials() -> None:
    """Where a URL's credentials end (its last "@" after the scheme) is read in one place."""
    readings = re.compile(r"""rpartition\(["']@["']\)|\(\?<=://\)|\[redacted\]@""")
    found = [
        str(path.relative_to(PACKAGE))
        for path in sorted(PACKAGE.rglob("*.py"))
        if readings.search(path.read_text(encoding="utf-8"))
    ]
    assert found == ["redaction.py"]
