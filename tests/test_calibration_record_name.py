"""The calibration record's file name has one home, ``store.location.CALIBRATION_FILE``: the
command that writes it (calibration.py) and the run that looks for it without loading the judge
(session.py) both take it from there, so they cannot come to disagree (issue 49)."""

from __future__ import annotations

from pytest_propositions import calibration, session
from pytest_propositions.store import location
from tests.support.source_scan import PACKAGE, code_strings


def _literals(name: str) -> list[str]:
    """The package's modules that spell ``name`` in a string of their code (docstrings aside)."""
    return [
        path.relative_to(PACKAGE).as_posix()
        for path in sorted(PACKAGE.rglob("*.py"))
        for text in code_strings(path.read_text(encoding="utf-8"))
        if name in text
    ]


def test_the_record_name_is_spelled_once_in_the_package() -> None:
    assert _literals(location.CALIBRATION_FILE) == ["store/location.py"]


def test_the_writer_and_the_run_read_the_one_name() -> None:
    assert not hasattr(calibration, "RECORD_NAME") and not hasattr(session, "CALIBRATION_RECORD")
    assert calibration.CALIBRATION_FILE is location.CALIBRATION_FILE
    assert session.CALIBRATION_FILE is location.CALIBRATION_FILE
