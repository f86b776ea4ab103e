"""Claims a library's own code makes while a test runs (an Intervention's precondition, a quality
check inside a simulation step) are counted and reported, labelled with the library module that
made them, and never named as the cause of the test's own failure.

A claim is the library's when the frame that called into the plugin runs code outside the
project's folders (pytest's rootdir and the folder pytest ran from) or in an installed package (a
``site-packages`` folder, even a ``.venv`` inside the project).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from pytest_propositions.claims.call_site import library_module
from tests.support.html_page import rendered
from tests.support.judge_server import ScriptedJudge, verdict

pytest_plugins = ["pytester"]

# A library, installed outside the project, whose own code asks for claims while it works.
LIBRARY = """
from pytest_propositions import check_proposition


def intervene(world):
    # The library decides whether to act: a claim of its own, judged like any other.
    ready = check_proposition(world, "The room is quiet.")
    calm = check_proposition(world, "Oscar sounds calm.")
    return ready and calm
"""

TESTS = """
import json

from pytest_propositions import check_proposition
from steering_lib import intervene


def test_library_claims_then_a_plain_assert(world):
    intervene(world)
    assert 1 == 2


def test_library_claims_then_the_tests_own_claim(world):
    intervene(world)
    assert check_proposition(world, "Oscar is a chef.")
"""


@pytest.fixture
def library(
    pytester: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory, judge_server: ScriptedJudge
) -> Path:
    folder = tmp_path_factory.mktemp("installed")
    (folder / "steering_lib.py").write_text(LIBRARY, encoding="utf-8")
    pytester.syspathinsert(folder)
    judge_server.on("The room is quiet.", verdict(True, "Nobody speaks."))
    judge_server.on("Oscar sounds calm.", verdict(False, "He raises his voice."))
    judge_server.on("Oscar is a chef.", verdict(False, "He is an architect."))
    return folder


def test_a_librarys_claims_are_labelled_and_never_blamed_for_the_tests_failure(
    pytester: pytest.Pytester,
    library: Path,
    inner_run: list[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", "300")  # the short summary's lines whole
    pytester.makepyfile(test_steering=TESTS)
    result = pytester.runpytest(
        *inner_run,
        "-rf",
        "--prop-report=report.json",
        "--prop-html=page.html",
        "--junitxml=junit.xml",
    )
    result.assert_outcomes(failed=2)
    output = result.stdout.str()
    # The plain assert's line stays pytest's own: the library's claim not upheld is not its cause.
    result.stdout.fnmatch_lines(
        ["FAILED test_steering.py::test_library_claims_then_a_plain_assert - assert 1 == 2"]
    )
    assert "[not upheld:" not in output
    # Still reported, in the test's section, with who made them.
    plain = output[output.index("_ test_library_claims_then_a_plain_assert _") :]
    plain = plain[: plain.index("_ test_library_claims_then_the_tests_own_claim _")]
    assert "NOT UPHELD: Oscar sounds calm." in plain
    assert "UPHELD: The room is quiet." in plain
    assert plain.count("made by: steering_lib (library code, not the test's own claim)") == 2
    assert f"claimed at: {library / 'steering_lib.py'}:" in plain
    # The test's own claim not upheld is named, never the library's that came before it.
    result.stdout.fnmatch_lines(
        [
            "FAILED test_steering.py::test_library_claims_then_the_tests_own_claim - "
            "AssertionError: claim 'Oscar is a chef.' judged False (by check_proposition): "
            "assert False"
        ]
    )
    # Its section shows the test's own claim first.
    own = output[output.index("_ test_library_claims_then_the_tests_own_claim _") :]
    assert own.index("NOT UPHELD: Oscar is a chef.") < own.index("NOT UPHELD: Oscar sounds calm.")
    # Counted like any claim by call.
    result.stdout.fnmatch_lines(["propositions: 5 claims, *, 5 by call (2 upheld, 3 not upheld)*"])
    report = json.loads((pytester.path / "report.json").read_text(encoding="utf-8"))
    made_by = sorted((r["verdict"]["claim"], r.get("made_by")) for r in report["verdicts"])
    assert made_by == [
        ("Oscar is a chef.", None),
        ("Oscar sounds calm.", "steering_lib"),
        ("Oscar sounds calm.", "steering_lib"),
        ("The room is quiet.", "steering_lib"),
        ("The room is quiet.", "steering_lib"),
    ]
    # JUnit's failure message is pytest's own; the library's claims are properties, labelled.
    junit = (pytester.path / "junit.xml").read_text(encoding="utf-8")
    plain_case = junit[junit.index('name="test_library_claims_then_a_plain_assert"') :]
    plain_case = plain_case[: plain_case.index("</testcase>")]
    assert 'message="assert 1 == 2' in plain_case
    assert plain_case.count('.made_by" value="steering_lib"') == 2
    page = rendered((pytester.path / "page.html").read_text(encoding="utf-8"))
    assert page.count("steering_lib (library code, not the test") == 4


def _frame_in(filename: str, module: str) -> object:
    """A real frame whose code claims to come from ``filename``, in module ``module``."""
    namespace: dict[str, object] = {"__name__": module, "sys": sys}
    exec(compile("frame = sys._getframe()", filename, "exec"), namespace)
    return namespace["frame"]


def test_whose_code_a_frame_runs(tmp_path: Path) -> None:
    project = tmp_path / "project"
    cases = [
        # The project's own code: its tests, conftest, helpers and packages.
        (project / "tests" / "test_x.py", "test_x", None),
        (project / "src" / "app" / "sim.py", "app.sim", None),
        # An installed package, even in a virtual environment inside the project.
        (project / ".venv/lib/python3.11/site-packages/lib/steer.py", "lib.steer", "lib.steer"),
        (Path("/usr/lib/python3/dist-packages/lib/steer.py"), "lib.steer", "lib.steer"),
        # Code outside the project's folder.
        (tmp_path / "elsewhere" / "lib.py", "lib", "lib"),
    ]
    for path, module, expected in cases:
        frame = _frame_in(str(path), module)
        assert library_module(frame, (project,)) == expected, path  # type: ignore[arg-type]
    # The project is pytest's rootdir and the folder pytest ran from: `pytest tests/` with no
    # ini file makes tests/ the rootdir, and the project's own helpers stay its own.
    helper = _frame_in(str(project / "helpers.py"), "helpers")
    assert library_module(helper, (project / "tests", project)) is None  # type: ignore[arg-type]
    # Code with no file (made at run time) is the caller's; outside pytest nothing is a library.
    assert library_module(_frame_in("<string>", "x"), (project,)) is None  # type: ignore[arg-type]
    outside = _frame_in(str(tmp_path / "lib.py"), "lib")
    assert library_module(outside, ()) is None  # type: ignore[arg-type]


def test_a_library_imported_through_a_path_with_dotdot_is_still_a_library(
    pytester: pytest.Pytester,
    tmp_path_factory: pytest.TempPathFactory,
    judge_server: ScriptedJudge,
    inner_run: list[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 48: a sys.path entry such as ``<project>/../installed`` reads, unresolved, as a
    folder inside the project; the library's claims then lost their ``made by`` and one was
    named as the test's cause. Paths are compared resolved."""
    folder = tmp_path_factory.mktemp("installed")
    (folder / "steering_lib.py").write_text(LIBRARY, encoding="utf-8")
    dotted = pytester.path / ".." / folder.name
    assert dotted.resolve() == folder.resolve() and not folder.is_relative_to(pytester.path)
    pytester.syspathinsert(str(dotted))
    judge_server.on("The room is quiet.", verdict(True, "Nobody speaks."))
    judge_server.on("Oscar sounds calm.", verdict(False, "He raises his voice."))
    judge_server.on("Oscar is a chef.", verdict(False, "He is an architect."))
    monkeypatch.setenv("COLUMNS", "300")  # the short summary's lines whole
    pytester.makepyfile(test_steering=TESTS)
    result = pytester.runpytest(*inner_run, "-rf", "--prop-report=report.json")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        ["FAILED test_steering.py::test_library_claims_then_a_plain_assert - assert 1 == 2"]
    )
    report = json.loads((pytester.path / "report.json").read_text(encoding="utf-8"))
    made_by = sorted((r["verdict"]["claim"], r.get("made_by")) for r in report["verdicts"])
    assert made_by == [
        ("Oscar is a chef.", None),
        ("Oscar sounds calm.", "steering_lib"),
        ("Oscar sounds calm.", "steering_lib"),
        ("The room is quiet.", "steering_lib"),
        ("The room is quiet.", "steering_lib"),
    ]


def test_paths_are_compared_resolved(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "tests").mkdir(parents=True)
    (tmp_path / "lib").mkdir()
    outside = _frame_in(str(project / "tests" / ".." / ".." / "lib" / "steer.py"), "steer")
    assert library_module(outside, (project,)) == "steer"  # type: ignore[arg-type]
    # The project's own code reached through a link or a `..` stays the project's.
    link = tmp_path / "link"
    link.symlink_to(project, target_is_directory=True)
    own = _frame_in(str(link / "tests" / ".." / "helpers.py"), "helpers")
    assert library_module(own, (project,)) is None  # type: ignore[arg-type]
    assert library_module(own, (link / "tests" / "..",)) is None  # type: ignore[arg-type]
