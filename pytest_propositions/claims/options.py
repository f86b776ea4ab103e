"""A claim's options as one checked value (``ClaimOptions``), parsed once where the user passes
them, and the options a Proposition-shaped claim (ours, a simulation library's) carries.

A new claim option is one field of ``ClaimOptions`` (its check in the field's metadata) and one
row of the options list in docs/claims.md.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..checks import check_count, check_flag, check_text, check_window, closest_name, from_site
from ..settings import TIMESTAMP_MODES
from .targets import as_target_list

__all__ = [
    "OPTION_NAMES",
    "REFERENCE_OPTIONS",
    "RUNS_MODES",
    "RUNS_OPTION_NAMES",
    "ClaimOptions",
    "by_option_name",
    "choose_target",
    "claim_and_options",
    "is_proposition_like",
    "own_options",
    "refuse_unknown_names",
    "unknown_names_error",
    "with_own_options",
]

# The keywords a claim over runs takes besides the ordinary options, checked into its rule with
# the target (over_runs/rule.py reads them from here); here, so that an ordinary claim never
# loads the runs machinery. The modes say what the rule is; the others tune it.
RUNS_MODES = ("at_least", "at_most", "better_than", "every_run")
RUNS_OPTION_NAMES = frozenset({*RUNS_MODES, "margin", "confidence", "referee", "referee_fraction"})


def _check_claim_variables(value: Any, name: str) -> Mapping[str, Any] | None:
    """Mustache values: a mapping with str names, or None."""
    __tracebackhide__ = True
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise TypeError(f"{name} must be a mapping (dict), got {type(value).__name__}")
    for key in value:
        if not isinstance(key, str):
            raise TypeError(f"{name} names must be str, got {type(key).__name__} {key!r}")
    return value


def _check_additional_context(value: Any, name: str) -> str | None:
    """Extra context is text (or None), and valid Unicode."""
    __tracebackhide__ = True
    if value is None:
        return None
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string or None, got {type(value).__name__}")
    return check_text(value, name)


def _check_precondition(value: Any, name: str) -> Callable[..., Any] | None:
    __tracebackhide__ = True
    if value is None or callable(value):
        return value  # type: ignore[no-any-return]
    raise TypeError(
        f"{name} must be callable with keyword arguments target, additional_context and "
        f"claim_variables, got {type(value).__name__}"
    )


def _check_timestamps(value: Any, name: str) -> str | None:
    __tracebackhide__ = True
    if value is not None and (not isinstance(value, str) or value not in TIMESTAMP_MODES):
        raise ValueError(
            f"{name} must be one of {', '.join(TIMESTAMP_MODES)} or None (the run's "
            f"--prop-timestamps), got {value!r}"
        )
    return value


def _check_window(value: Any, name: str) -> int | None:
    __tracebackhide__ = True
    return check_window(name, value)


def _check_samples(value: Any, name: str) -> int | None:
    __tracebackhide__ = True
    return check_count(name, value, minimum=1)


@dataclass(frozen=True)
class ClaimOptions:
    """The options of one claim, checked (``parse``); what the judging reads. docs/claims.md
    ("Options of a claim") says what each does; each field's ``check`` checks a given value."""

    claim_variables: Mapping[str, Any] | None = field(
        default=None, metadata={"check": _check_claim_variables}
    )
    additional_context: str | None = field(
        default=None, metadata={"check": _check_additional_context}
    )
    first_n: int | None = field(default=None, metadata={"check": _check_window})
    last_n: int | None = field(default=None, metadata={"check": _check_window})
    include_personas: bool = field(default=False, metadata={"check": check_flag})
    double_check: bool = field(default=False, metadata={"check": check_flag})
    use_reasoning_model: bool = field(default=False, metadata={"check": check_flag})
    precondition: Callable[..., Any] | None = field(
        default=None, metadata={"check": _check_precondition}
    )
    timestamps: str | None = field(default=None, metadata={"check": _check_timestamps})
    # None: the run's --prop-samples.
    samples: int | None = field(default=None, metadata={"check": _check_samples})
    # A score claim with no evidence in the recording gets the lowest score, not the highest
    # (the reference library's rule); a check already needs evidence.
    strict_score: bool = field(default=False, metadata={"check": check_flag})
    # Not options: a claim over runs' keywords, as given (``over_runs.rule.check_rule`` checks
    # them with the target), and the names the caller gave (``given``).
    rule_keywords: Mapping[str, Any] = field(default_factory=dict, compare=False)
    given_names: frozenset[str] = field(default=frozenset(), compare=False, repr=False)

    @classmethod
    def parse(
        cls,
        options: Mapping[str, Any],
        where: str | None,
        base: ClaimOptions | None = None,
        *,
        takes: Iterable[str] = (),
    ) -> ClaimOptions:
        """The options as given at a call site, each checked; ``base``'s where not given. An
        unknown name is a TypeError listing every name the call site accepts (``takes``: its
        own arguments besides the options, such as the expectation's names); every message
        starts with ``where`` when given."""
        __tracebackhide__ = True
        parsed, problems = cls.read(options, base, takes=takes)
        if problems:
            raise from_site(problems[0], where) from None
        return parsed

    @classmethod
    def read(
        cls,
        options: Mapping[str, Any],
        base: ClaimOptions | None = None,
        *,
        takes: Iterable[str] = (),
    ) -> tuple[ClaimOptions, list[TypeError | ValueError]]:
        """The options as given, each checked once: those that are good (over ``base``), and
        every problem found (the unknown names together first, then each bad value in order),
        so that a call site can list them all at once."""
        __tracebackhide__ = True
        if base is None and not options:
            return _NONE, []  # the commonest call gives none
        changes: dict[str, Any] = {}
        rule_keywords: dict[str, Any] = {}
        unknown = []
        problems: list[TypeError | ValueError] = []
        for name, value in options.items():
            if name in _CHECKS:
                changes[name] = value
            elif name in RUNS_OPTION_NAMES:
                rule_keywords[name] = value
            else:
                unknown.append(name)
        if unknown:
            problems.append(
                unknown_names_error(
                    unknown,
                    [
                        ("", list(takes)),
                        ("claim options", sorted(OPTION_NAMES)),
                        ("over runs(...)", sorted(RUNS_OPTION_NAMES)),
                    ],
                )
            )
        checked: dict[str, Any] = {}
        for name, value in changes.items():
            try:
                checked[name] = _CHECKS[name](value, name)
            except (TypeError, ValueError) as error:
                problems.append(error)
        base = base or _NONE
        made = dataclasses.replace(
            base,
            **checked,
            rule_keywords={**base.rule_keywords, **rule_keywords},
            given_names=base.given_names | set(checked),
        )
        return made, problems

    def given(self) -> dict[str, Any]:
        """The ordinary options the caller gave, by name (a claim over runs' referee draws are
        seeded from them)."""
        return {name: getattr(self, name) for name in self.given_names}


_CHECKS: dict[str, Callable[[Any, str], Any]] = {
    item.name: item.metadata["check"]
    for item in dataclasses.fields(ClaimOptions)
    if "check" in item.metadata
}
#: The keyword options every claim-making fixture and marker accepts.
OPTION_NAMES = frozenset(_CHECKS)
_NONE = ClaimOptions()


# -- unknown names -----------------------------------------------------------------------------

# Names one call site takes for what another calls differently: a misspelling of either
# suggests the one this call takes.
_SAME_MEANING = {"threshold": "min_score", "min_score": "threshold"}


def _closest(name: str, accepted: Collection[str]) -> str | None:
    """The accepted name ``name`` most likely misspells, or None when none is close."""
    match = closest_name(name, [*accepted, *_SAME_MEANING])
    if match is None:
        return None
    if match in accepted:
        return match
    other = _SAME_MEANING[match]
    return other if other in accepted else None


def unknown_names_error(
    unknown: Iterable[object], groups: Iterable[tuple[str, Iterable[str]]], what: str = "option"
) -> TypeError:
    """The error for names a call does not take (``what``: option, key): each with the closest
    accepted name, then every accepted name, in ``groups`` of (label, names) (an empty label:
    no label)."""
    groups = [(label, list(names)) for label, names in groups]
    accepted = {name for _, names in groups for name in names}
    named = []
    for name in sorted(map(str, unknown)):
        closest = _closest(name, accepted)
        named.append(f"{name} (did you mean {closest}?)" if closest else name)
    listed = "; ".join(
        f"{label}: {', '.join(names)}" if label else ", ".join(names)
        for label, names in groups
        if names
    )
    word = what if len(named) == 1 else f"{what}s"
    return TypeError(f"unknown {word} {', '.join(named)}; accepted: {listed}")


def refuse_unknown_names(given: Iterable[str], accepted: Iterable[str], where: str) -> None:
    """A call with a fixed signature (``Proposition``, ``check_proposition``): its keyword
    names checked before Python's own error, which neither lists nor suggests names."""
    __tracebackhide__ = True
    names = list(accepted)
    unknown = [name for name in given if name not in names]
    if unknown:
        error = unknown_names_error(unknown, [("", names)])
        raise from_site(error, where)


# -- Proposition-shaped claims ----------------------------------------------------------------

# The options a Proposition-shaped object carries: the reference library's attribute (and
# argument) name, and the option it is here. ``Proposition`` takes and exposes exactly these.
REFERENCE_OPTIONS: Mapping[str, str] = {
    "include_personas": "include_personas",
    "first_n": "first_n",
    "last_n": "last_n",
    "double_check": "double_check",
    "use_reasoning_model": "use_reasoning_model",
    "precondition_function": "precondition",
    "timestamps": "timestamps",
}


def by_option_name(given: Mapping[str, Any]) -> dict[str, Any]:
    """Options given by the reference library's names, by this plugin's."""
    return {REFERENCE_OPTIONS[name]: value for name, value in given.items()}


def is_proposition_like(value: Any) -> bool:
    """Ours, the reference library's, or any object with a str ``claim``: a claim with options."""
    return not isinstance(value, str) and isinstance(getattr(value, "claim", None), str)


def claim_and_options(
    claim: Any, overrides: Mapping[str, Any]
) -> tuple[Any, dict[str, Any], list[Any] | None]:
    """The claim text, its options and its own targets, for a plain claim or a Proposition-shaped one.

    A Proposition-shaped object (see ``is_proposition_like``) gives its claim, the options of
    ``REFERENCE_OPTIONS`` it has (``precondition_function`` as ``precondition``, the
    fixtures' name), and its ``targets``; ``overrides`` (what the call site passed) win over
    its options. Anything else is returned as given, with ``overrides`` as the options and no
    targets: checking it is the caller's part.
    """
    if not is_proposition_like(claim):
        return claim, dict(overrides), None
    options = by_option_name(
        {name: getattr(claim, name) for name in REFERENCE_OPTIONS if hasattr(claim, name)}
    )
    options.update(overrides)
    own = getattr(claim, "targets", None)
    if own is not None and not isinstance(own, list | tuple):
        own = [own]
    return claim.claim, options, None if own is None else list(own)


def own_options(
    target: Any, claim: Any, options: ClaimOptions
) -> tuple[Any, Any, ClaimOptions, list[TypeError | ValueError]]:
    """A Proposition-shaped claim becomes its target (``choose_target``), its text and its own
    options under the call's, with every problem found; a plain claim is returned as given,
    its checks the caller's."""
    __tracebackhide__ = True
    if not is_proposition_like(claim):
        return target, claim, options, []
    text, own, own_targets = claim_and_options(claim, {})
    own = {name: value for name, value in own.items() if name not in options.given_names}
    parsed, problems = ClaimOptions.read(own, base=options)
    try:
        target = choose_target(target, own_targets)
    except ValueError as error:
        problems.append(error)
    return target, text, parsed, problems


def with_own_options(
    target: Any, claim: Any, options: ClaimOptions, where: str | None
) -> tuple[Any, Any, ClaimOptions]:
    """``own_options``, its first problem raised (led by ``where``)."""
    __tracebackhide__ = True
    target, text, parsed, problems = own_options(target, claim, options)
    if problems:
        raise from_site(problems[0], where) from None
    return target, text, parsed


def choose_target(given: Any, own: list[Any] | None) -> Any:
    """The call's target, or the proposition's own; both, unless they are the same, is an error.

    As in the reference library, a proposition created with a target is fixed to it: judging it
    against another target would silently judge something else than its author meant.
    """
    if own is None or not own:
        return given
    if given is None:
        return own
    items = as_target_list(given)
    if len(items) == len(own) and all(a is b for a, b in zip(items, own, strict=True)):
        return own
    raise ValueError(
        "this proposition already has its own target(s) (given when it was created); pass it "
        "without a target, or use a copy created without one"
    )
