"""Rules with one home (issue 49): whether a verdict passes its bar (``verdict.passes_bar``) and a
score mapped to [0, 1] and back (``scale.score_to_unit``, ``scale.unit_to_score``).

Each caller is driven through the same table, so a caller that decided on its own copy of a rule
(and let it drift) fails here; the source scans find a second copy of the arithmetic."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import NamedTuple

import pytest

from pytest_propositions import scale
from pytest_propositions.claims.expectation import Expectation
from pytest_propositions.cli.calibrate import Item
from pytest_propositions.cli.calibrate import Outcome as CalibrationOutcome
from pytest_propositions.cli.rejudge import Rejudged
from pytest_propositions.over_runs.deciders import Comparison, Mean
from pytest_propositions.over_runs.rule import Rule
from pytest_propositions.reports import diff
from pytest_propositions.runtime import Runtime
from pytest_propositions.scale import MAX_SCORE, MIN_SCORE, score_to_unit, unit_to_score
from pytest_propositions.settings import Settings
from pytest_propositions.verdict import Kind, Verdict, passes_bar

PACKAGE = Path(__file__).resolve().parent.parent / "pytest_propositions"


class Case(NamedTuple):
    kind: Kind
    value: bool | int
    threshold: int | None
    holds: bool
    passes: bool


# Written out by hand, not computed: the rule as the docs state it.
CASES = [
    Case("check", True, None, True, True),
    Case("check", False, None, True, False),
    Case("check", True, None, False, False),
    Case("check", False, None, False, True),
    # min_score: at least the bar
    Case("score", 6, 7, True, False),
    Case("score", 7, 7, True, True),
    Case("score", 8, 7, True, True),
    Case("score", MIN_SCORE, MIN_SCORE, True, True),
    Case("score", MAX_SCORE, MAX_SCORE, True, True),
    Case("score", MAX_SCORE - 1, MAX_SCORE, True, False),
    # max_score: at most the bar
    Case("score", 6, 7, False, True),
    Case("score", 7, 7, False, True),
    Case("score", 8, 7, False, False),
    Case("score", MIN_SCORE, MIN_SCORE, False, True),
    Case("score", MIN_SCORE + 1, MIN_SCORE, False, False),
    Case("score", MAX_SCORE, MAX_SCORE, False, True),
]
# The callers that know only claims that must hold (a claim over runs, a claim made by a call,
# calibrate, rejudge): every case with a bar they can express.
MUST_HOLD = [case for case in CASES if case.holds]


def _verdict(case: Case) -> Verdict:
    return Verdict(case.kind, "The claim.", case.value)


def _id(case: Case) -> str:
    bar = "" if case.threshold is None else (">=" if case.holds else "<=") + str(case.threshold)
    return f"{case.kind}-{case.value}{bar}-{'holds' if case.holds else 'not'}"


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_the_home_and_an_assertion_agree_with_the_table(case: Case) -> None:
    assert passes_bar(case.kind, case.value, case.threshold, case.holds) is case.passes
    assert Expectation(case.threshold, case.holds).passes(_verdict(case)) is case.passes


@pytest.mark.parametrize("case", MUST_HOLD, ids=_id)
def test_a_run_over_runs_a_call_and_calibrate_agree_with_the_table(case: Case) -> None:
    verdict = _verdict(case)
    rule = Rule("every_run", case.kind, 0.95, 0.0, case.threshold)
    assert rule.held(verdict) is case.passes

    runtime = Runtime(Settings(min_score=case.threshold if case.threshold is not None else 7))
    runtime.note_call(verdict, "check_proposition", None, "test_x")
    assert runtime.record.outcomes[-1].passed is case.passes

    item = Item("i", case.kind, {"text": "t"}, "c", label=True)
    judged = CalibrationOutcome(item, case.value).judged_pass(
        case.threshold if case.threshold is not None else 7
    )
    assert judged is case.passes


def test_a_mean_score_over_runs_has_no_bar_for_one_run() -> None:
    # Each run counts by its score (``unit``), so every run "held".
    rule = Rule("mean", "score", 0.95, bar=5.0)
    assert rule.held(Verdict("score", "c", MIN_SCORE)) is True
    with pytest.raises(ValueError, match="no bar"):
        passes_bar("score", MIN_SCORE, None)


def _pairs(cases: list[Case]) -> list[tuple[Case, Case]]:
    """Every two cases one claim can have: the same kind, bar and direction."""
    return [
        (a, b)
        for a in cases
        for b in cases
        if (a.kind, a.threshold, a.holds) == (b.kind, b.threshold, b.holds)
    ]


@pytest.mark.parametrize(("old", "new"), _pairs(MUST_HOLD))
def test_rejudge_flips_exactly_when_the_table_says_the_outcome_changed(
    old: Case, new: Case
) -> None:
    rejudged = Rejudged("c", "t", old.kind, old.value, new.value, "old-model", "")
    min_score = old.threshold if old.threshold is not None else 7
    assert rejudged.flipped(min_score) is (old.passes != new.passes)


def _report(path: Path, cases: list[Case]) -> Path:
    """A --prop-report file with one claim per case, as json_report writes a record."""
    records = [
        {
            "test_id": f"t.py::test_{index}",
            "threshold": case.threshold,
            "holds": case.holds,
            "passed": case.passes,
            "where": None,
            "verdict": _verdict(case).as_dict(),
        }
        for index, case in enumerate(cases)
    ]
    path.write_text(json.dumps({"verdicts": records}), encoding="utf-8")
    return path


def test_diff_flips_and_sides_agree_with_the_table(tmp_path: Path) -> None:
    pairs = _pairs(CASES)
    old = diff.load_report(_report(tmp_path / "old.json", [a for a, _ in pairs]))
    new = diff.load_report(_report(tmp_path / "new.json", [b for _, b in pairs]))
    changes = diff.compare(old, new)
    flipped = {before.test_id for before, _ in changes.flipped}
    for index, (a, b) in enumerate(pairs):
        assert (f"t.py::test_{index}" in flipped) is (a.passes != b.passes), (a, b)
    for case, claim in zip((a for a, _ in pairs), old.values(), strict=True):
        text = diff.lines(diff.Changes([], [], [claim], []))
        side = next(text)
        if case.kind == "score":
            bar = "minimum" if case.holds else "maximum"
            expected = f"{bar} {case.threshold}: {'passes' if case.passes else 'fails'}"
            assert expected in side, (case, side)


# -- a score mapped to [0, 1] and back -------------------------------------------------------------


def test_every_score_maps_into_the_unit_interval_and_back() -> None:
    assert score_to_unit(MIN_SCORE) == 0.0
    assert score_to_unit(MAX_SCORE) == 1.0
    for score in range(MIN_SCORE, MAX_SCORE + 1):
        unit = score_to_unit(score)
        assert 0.0 <= unit <= 1.0
        assert unit_to_score(unit) == pytest.approx(score)
    # A difference of scores (a margin) is scaled, never shifted.
    width = MAX_SCORE - MIN_SCORE
    assert score_to_unit(width, difference=True) == 1.0
    assert unit_to_score(-1.0, difference=True) == -width
    assert score_to_unit(0, difference=True) == 0.0


@pytest.fixture
def other_scale(monkeypatch: pytest.MonkeyPatch) -> tuple[int, int]:
    """A scale from 1 to 5: what the functions (and so their callers) must honour."""
    monkeypatch.setattr(scale, "MIN_SCORE", 1)
    monkeypatch.setattr(scale, "MAX_SCORE", 5)
    return 1, 5


def test_another_scale_is_honoured_by_the_functions_and_their_callers(
    other_scale: tuple[int, int],
) -> None:
    low, high = other_scale
    for score in range(low, high + 1):
        assert unit_to_score(score_to_unit(score)) == pytest.approx(score)
    assert score_to_unit(low) == 0.0 and score_to_unit(high) == 1.0
    assert score_to_unit(3) == 0.5
    assert score_to_unit(2, difference=True) == 0.5

    # A run's value, a mean's bar and its figures, a comparison's margin and figures.
    mean = Rule("mean", "score", 0.95, bar=3.0)
    assert mean.unit(Verdict("score", "c", 3), True) == 0.5
    decider = Mean(mean, 1, 10)
    decider.add(mean.unit(Verdict("score", "c", 3), True), True)
    assert decider._figures().estimate == pytest.approx(3.0)
    assert decider.test.bar == pytest.approx(0.5)
    comparison = Comparison(Rule("better_than", "score", 0.95, bar=2.0), 1, 10)
    comparison.add_pair(score_to_unit(5), True, score_to_unit(1))
    figures = comparison._figures()
    assert figures.estimate == pytest.approx(5.0)
    assert figures.control == pytest.approx(1.0)


_SCALE_NAMES = {"MIN_SCORE", "MAX_SCORE"}


def _scale_operand(node: ast.expr) -> bool:
    """The top or bottom of the scale, its width, or a literal 9."""
    if isinstance(node, ast.Name) and node.id in _SCALE_NAMES:
        return True
    if isinstance(node, ast.Attribute) and node.attr in _SCALE_NAMES:
        return True
    if isinstance(node, ast.Constant) and type(node.value) in (int, float) and node.value == 9:
        return True
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub):
        return _scale_operand(node.left) or _scale_operand(node.right)
    return False


def scale_arithmetic(source: str) -> list[int]:
    """Lines that multiply or divide by the scale: a copy of the mapping to [0, 1]."""
    return sorted(
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.BinOp)
        and isinstance(node.op, ast.Mult | ast.Div)
        and (_scale_operand(node.left) or _scale_operand(node.right))
    )


def test_only_the_scale_maps_scores_to_the_unit_interval() -> None:
    found = {
        str(path.relative_to(PACKAGE)): lines
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.name != "scale.py" and (lines := scale_arithmetic(path.read_text(encoding="utf-8")))
    }
    assert found == {}


def test_the_scale_scan_finds_a_copy() -> None:
    assert scale_arithmetic("x = score / MAX_SCORE\n") == [1]
    assert scale_arithmetic("x = (s - MIN_SCORE) / (MAX_SCORE - MIN_SCORE)\n") == [1]
    assert scale_arithmetic("y = mean * scale.MAX_SCORE\nz = v / 9\n") == [1, 2]
    assert scale_arithmetic("counts = [0] * (MAX_SCORE - MIN_SCORE + 1)\n") == []


# -- whether a verdict passes its bar: no second copy in the source ----------------------------

_BAR_NAMES = {"threshold", "min_score", "max_score"}


def _names(node: ast.expr) -> set[str]:
    return {
        n.id if isinstance(n, ast.Name) else n.attr
        for n in ast.walk(node)
        if isinstance(n, ast.Name | ast.Attribute)
    }


def bar_comparisons(source: str) -> list[int]:
    """Lines that order a verdict's value against a bar: a copy of ``passes_bar``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Compare):
            continue
        if not all(isinstance(op, ast.Lt | ast.LtE | ast.Gt | ast.GtE) for op in node.ops):
            continue
        sides = [_names(side) for side in (node.left, *node.comparators)]
        if any(
            ("value" in a and b & _BAR_NAMES) or ("value" in b and a & _BAR_NAMES)
            for i, a in enumerate(sides)
            for b in sides[i + 1 :]
        ):
            found.append(node.lineno)
    return found


def test_only_the_verdict_module_compares_a_value_with_its_bar() -> None:
    found = {
        str(path.relative_to(PACKAGE)): lines
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.name != "verdict.py"
        and (lines := bar_comparisons(path.read_text(encoding="utf-8")))
    }
    assert found == {}


def test_the_bar_scan_finds_a_copy() -> None:
    assert bar_comparisons("ok = int(verdict.value) >= self.threshold\n") == [1]
    assert bar_comparisons("ok = min_score <= self.value\n") == [1]
    assert bar_comparisons("near = abs(int(verdict.value) - self.threshold) <= within\n") == []


# -- a kind compared by name: verdict.CHECK / SCORE / KINDS, never the strings -------------------

_KIND_STRINGS = {"check", "score"}


def _kind_literal(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return node.value in _KIND_STRINGS
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return any(_kind_literal(element) for element in node.elts)
    return False


def kind_comparisons(source: str) -> list[int]:
    """Lines that compare with "check" or "score" spelled out (``==``, ``!=``, ``is``, or ``in``
    a tuple of them): a second spelling of ``verdict.Kind``. The string tested for membership in
    something else (``"check" in item.metadata``) is not a kind."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            for op, left, right in zip(node.ops, operands[:-1], operands[1:], strict=True):
                if isinstance(op, ast.In | ast.NotIn):
                    hit = _kind_literal(right) and not isinstance(right, ast.Constant)
                else:
                    hit = _kind_literal(left) or _kind_literal(right)
                if hit:
                    found.append(node.lineno)
                    break
        elif isinstance(node, ast.MatchValue) and _kind_literal(node.value):
            found.append(node.lineno)
    return sorted(found)


def test_only_the_verdict_module_spells_a_kind_in_a_comparison() -> None:
    """Compare a kind with ``verdict.CHECK``, ``SCORE`` or ``KINDS``; the strings stay what
    caches, reports and JSON store, spelled where ``Kind`` is."""
    found = {
        str(path.relative_to(PACKAGE)): lines
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.name != "verdict.py"
        and (lines := kind_comparisons(path.read_text(encoding="utf-8")))
    }
    assert found == {}


def test_the_kind_scan_finds_a_spelled_kind() -> None:
    source = (
        'a = verdict.kind == "check"\n'
        'b = "score" != kind\n'
        'c = kind not in ("check", "score")\n'
        "d = data['kind'] in ['score']\n"
        'e = "check" in item.metadata\n'
        "f = kind == CHECK\n"
        'match kind:\n    case "score":\n        pass\n'
    )
    assert kind_comparisons(source) == [1, 2, 3, 4, 8]


def test_the_kinds_by_name_are_what_is_stored() -> None:
    from pytest_propositions import verdict

    assert (verdict.CHECK, verdict.SCORE) == ("check", "score") == verdict.KINDS
    assert set(verdict.KINDS) == set(verdict.Kind.__args__)  # type: ignore[attr-defined]
    assert Verdict(verdict.SCORE, "c", 3).as_dict()["kind"] == "score"
