"""What a judge said about a claim: the Verdict a test gets back, and its stored form.

Verdicts are frozen dataclasses, not pydantic models: a cached run builds one per claim and
must not pay pydantic's import (about 0.1 s a process). Data from outside the process (an
imported export line) is checked by ``check_stored_verdict``, which does use pydantic.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import Any, ClassVar, Final, Literal

from .scale import MAX_SCORE, MIN_SCORE

Kind = Literal["check", "score"]
# The two kinds by name: the strings themselves are spelled here only (they are also what
# caches, reports and JSON store), so code elsewhere compares a kind with these.
CHECK: Final = "check"
SCORE: Final = "score"
KINDS: Final[tuple[Kind, ...]] = (CHECK, SCORE)

# Known only to the process that made the verdict; a stored verdict leaves them out.
_PER_RUN_FIELDS = ("cached", "recorded_at", "key", "judge_seconds")


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def as_dict(self) -> dict[str, int]:
        """Every field as plain JSON data (``dataclasses.asdict`` without its deep copies: its
        fields are ints)."""
        return dict(vars(self))


@dataclass(frozen=True)
class Verdict:
    """One evaluated claim: the judge's answer plus where it came from."""

    # A stored verdict with a field this version does not know is refused, not half-read.
    __pydantic_config__: ClassVar[dict[str, str]] = {"extra": "forbid"}

    kind: Kind
    claim: str
    value: bool | int
    justification: str = ""
    reasoning: str = ""
    confidence: float | None = None
    model: str = ""
    # Provenance: a verdict served from the cache says when it was first recorded.
    cached: bool = False
    recorded_at: str | None = None
    key: str = ""
    usage: Usage = Usage()
    cost_usd: float | None = None
    judge_seconds: float = 0.0
    raw_reply: str = ""
    # Extra facts: the double-check revision, sample votes, a skipped precondition.
    revised_from: bool | int | None = None
    votes: tuple[bool | int, ...] = ()
    precondition_skipped: bool = False

    def __post_init__(self) -> None:
        # The invariants every report and comparison relies on, whoever built the verdict.
        if self.kind == CHECK:
            if type(self.value) is not bool:
                raise ValueError(
                    f"a check verdict's value must be True or False, got {self.value!r}"
                )
        elif self.kind == SCORE:
            if type(self.value) is not int or not MIN_SCORE <= self.value <= MAX_SCORE:
                raise ValueError(
                    f"a score verdict's value must be a whole number from {MIN_SCORE} to "
                    f"{MAX_SCORE}, got {self.value!r}"
                )
        else:
            raise ValueError(f"a verdict's kind must be 'check' or 'score', got {self.kind!r}")
        if self.confidence is not None and not 0.0 <= self.confidence <= 1.0:
            raise ValueError(f"a verdict's confidence must be from 0 to 1, got {self.confidence!r}")

    def as_response(self) -> dict[str, Any]:
        """The reference library's "full response" shape."""
        return {
            "value": self.value,
            "justification": self.justification,
            "confidence": self.confidence,
            "reasoning": self.reasoning,
        }

    def as_dict(self) -> dict[str, Any]:
        """Every field as plain JSON data (votes a list, usage an object)."""
        data = dict(vars(self))  # its fields, in order: __init__ sets each, and only them
        if len(data) != len(field_names(type(self))):  # something else set on it: by name
            data = {name: getattr(self, name) for name in field_names(type(self))}
        data["usage"] = self.usage.as_dict()
        data["votes"] = list(self.votes)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any], **overrides: Any) -> Verdict:
        """The inverse of ``as_dict``, for data this plugin wrote; ValueError if it is not that."""
        fields = {**data, **overrides}
        try:
            usage = fields.get("usage")
            if usage is not None:
                fields["usage"] = Usage(**usage)
            votes = fields.get("votes")
            if votes is not None:
                fields["votes"] = tuple(votes)
            if cls is Verdict and _REQUIRED <= fields.keys() <= _DEFAULTS.keys():
                # What __init__ does, without setting each field through the frozen class (a
                # cached run reads a verdict a claim): the defaults, the values, the checks.
                made = object.__new__(cls)
                made.__dict__.update(_DEFAULTS)
                made.__dict__.update(fields)
                made.__post_init__()
                return made
            return cls(**fields)
        except TypeError as error:
            raise ValueError(f"not a verdict: {error}") from None

    def stored(self) -> dict[str, Any]:
        """What the cache keeps: the fields that stay true when the verdict is read again."""
        data = self.as_dict()
        for name in _PER_RUN_FIELDS:
            del data[name]
        return data

    def replace(self, **changes: Any) -> Verdict:
        return dataclasses.replace(self, **changes)


def passes_bar(kind: Kind, value: bool | int, threshold: int | None, holds: bool = True) -> bool:
    """Whether a verdict's value passes its bar: a check that comes out as ``holds`` (True
    unless the claim must not hold), a score of at least ``threshold`` (``holds``) or at most it
    (``holds=False``: a ``max_score``). A check has no threshold (one given is not read); a
    score without one has no bar, and asking is a ValueError.

    The one home of this rule: an assertion, a run of a claim over runs, a claim made by a call,
    ``calibrate``, ``cache rejudge`` and ``diff`` all ask it, so they cannot disagree.
    """
    if kind == CHECK:
        return value is holds
    if threshold is None:
        raise ValueError("a score without a threshold has no bar to pass")
    return int(value) >= threshold if holds else int(value) <= threshold


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}

# Every field of a verdict in order, with its default (None for a field without one), and the
# fields without one (a default_factory counts as none), which a verdict read back must give:
# ``Verdict.from_dict``'s build.
_DEFAULTS: dict[str, Any] = {
    item.name: None if item.default is dataclasses.MISSING else item.default
    for item in dataclasses.fields(Verdict)
}
_REQUIRED = frozenset(
    item.name for item in dataclasses.fields(Verdict) if item.default is dataclasses.MISSING
)


def field_names(cls: type) -> tuple[str, ...]:
    """A dataclass's field names, read once per class: a report writes every claim's verdict,
    and every claim's outcome is looked over for secrets (``record.py``)."""
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = tuple(item.name for item in dataclasses.fields(cls))
    return names


@functools.cache
def _verdict_adapter() -> Any:
    import pydantic

    return pydantic.TypeAdapter(Verdict)


def check_stored_verdict(data: Any) -> None:
    """Raise ValueError unless ``data`` is a stored verdict: exact JSON types, no unknown fields.

    For data from outside the process (imported export lines): the cache's readers trust what
    is stored, so it must be right on the way in.
    """
    import json

    import pydantic

    if not isinstance(data, dict):
        raise ValueError(f"expected the verdict as a JSON object, got {type(data).__name__}")
    misplaced = sorted(set(data) & set(_PER_RUN_FIELDS))
    if misplaced:
        raise ValueError(f"a stored verdict has no {', '.join(misplaced)} field")
    try:
        text = json.dumps(data)
    except (TypeError, ValueError) as error:
        raise ValueError(f"the verdict is not plain JSON: {error}") from None
    try:
        _verdict_adapter().validate_json(text, strict=True)
    except pydantic.ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in problem['loc']) or 'verdict'}: {problem['msg']}"
            for problem in error.errors(include_url=False)
        )
        raise ValueError(f"not a valid verdict ({problems})") from None


def combine_samples(samples: list[Verdict], holds: bool = True) -> Verdict:
    """One verdict from several samples: the majority for a check, the median for a score.

    Ties go against what the test expects, because a judge that cannot make up its mind has
    supported neither side. For a claim that must hold (``holds=True``), a 2-2 check is False
    and an even count of scores takes the lower middle one; for a claim that must not hold (a
    check with ``holds=False``, a score with ``max_score``), a 2-2 check is True and an even
    count takes the upper middle score.
    """
    if not samples:
        raise ValueError("combine_samples needs at least one sample")
    values = [sample.value for sample in samples]
    if samples[0].kind == CHECK:
        upheld = sum(1 for v in values if v is True) * 2
        value: bool | int = upheld > len(values) or (not holds and upheld == len(values))
    else:
        ordered = sorted(int(v) for v in values)
        value = ordered[(len(values) - 1) // 2] if holds else ordered[len(values) // 2]
    representative = next(sample for sample in samples if sample.value == value)
    costs = [sample.cost_usd for sample in samples if sample.cost_usd is not None]
    return representative.replace(
        value=value,
        votes=tuple(values),
        cached=all(sample.cached for sample in samples),
        usage=Usage(
            prompt_tokens=sum(s.usage.prompt_tokens for s in samples),
            completion_tokens=sum(s.usage.completion_tokens for s in samples),
        ),
        cost_usd=sum(costs) if costs else None,
        judge_seconds=sum(sample.judge_seconds for sample in samples),
    )
