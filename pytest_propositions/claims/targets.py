"""Turning any target of a claim into the context text the judge reads, and the renderer registry.

Lookup for one target: a registered renderer (MRO walk), then the plugin's hook callback, then a
duck-typed simulation object (``pretty_current_interactions``; ``trace.World``/``trace.Agent``
take this path too), ``str`` (the text itself), a transcript (the formats of ``transcripts``), an
extraction dict, or a dataclass or pydantic model (its fields). The transcript formats are imported
only for a target that is neither a str nor a simulation object, so a run judging those never loads
them. The output is deterministic
(no clock, no ids, no addresses, sorted JSON) because it is part of the cache key.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .. import runtime as runtime_module
from ..checks import check_window, plural, quote_name
from ..trace import Agent, World
from .data_text import (
    MAX_TARGET_NESTING,
    check_plain_data,
    is_fields_object,
    object_fields,
    plain_json,
    render_extraction,
    render_fields,
    type_name,
    validate_extraction,
)
from .library_text import check_timestamps, normalise_library_text

__all__ = [
    "HookRenderer",
    "RenderOptions",
    "Renderer",
    "as_target_list",
    "describe_target",
    "register_renderer",
    "render_context",
    "render_target",
    "set_hook_renderer",
    "unregister_renderer",
]


@dataclass(frozen=True)
class RenderOptions:
    """What part of each target the judge sees.

    ``first_n``/``last_n`` count events per target (in a transcript of any format, each said
    text, thought, tool call and tool result is one); with both, the first ``first_n`` and the
    last ``last_n`` are shown with the gap noted. They do not apply to ``str`` targets, which
    are taken verbatim. ``timestamps`` (relative, absolute, none) says how a simulation object's
    clock lines are shown; ``str`` targets are never rewritten.
    """

    first_n: int | None = None
    last_n: int | None = None
    include_personas: bool = False
    # How a simulation library's "Date and time of events" lines reach the judge (see
    # library_text.relative_timestamps); --prop-timestamps sets it for a run.
    timestamps: str = "relative"

    def __post_init__(self) -> None:
        check_window("first_n", self.first_n)
        check_window("last_n", self.last_n)
        check_timestamps(self.timestamps)
        if not isinstance(self.include_personas, bool):
            raise ValueError(
                f"include_personas must be a bool, got {type(self.include_personas).__name__}"
            )


Renderer = Callable[[Any, RenderOptions], str]
HookRenderer = Callable[[Any, RenderOptions], str | None]

_registry: dict[type, Renderer] = {}
_hook_renderer: HookRenderer | None = None


# --------------------------------------------------------------------------------------------
# Registry


def register_renderer(target_type: type, renderer: Renderer) -> None:
    """Render instances of ``target_type`` (and subclasses) with ``renderer(target, options)``.

    A registered renderer wins over every built-in kind and owns its whole section body
    (personas included, if it wants them); registering the same type again replaces it.
    """
    if not isinstance(target_type, type):
        raise TypeError(f"target_type must be a class, got {type(target_type).__name__}")
    if not callable(renderer):
        raise TypeError(f"renderer must be callable, got {type(renderer).__name__}")
    _registry[target_type] = renderer


def unregister_renderer(target_type: type) -> None:
    """Forget the renderer registered for exactly ``target_type``; a no-op if there is none."""
    _registry.pop(target_type, None)


def _current_hook_renderer() -> HookRenderer | None:
    """The installed callback, else the running pytest session's (set without importing us)."""
    if _hook_renderer is not None:
        return _hook_renderer
    hook: HookRenderer | None = runtime_module.current().render_hook
    return hook


def set_hook_renderer(fn: HookRenderer | None) -> None:
    """Install the callback that asks the ``pytest_proposition_render_target`` hook; None removes.

    ``as_target_list`` asks it once, with default options, about a target of an unknown type, to
    refuse at once what no hook implementation renders.
    """
    global _hook_renderer
    if fn is not None and not callable(fn):
        raise TypeError(f"the hook renderer must be callable or None, got {type(fn).__name__}")
    _hook_renderer = fn


def _registered(target: Any) -> Renderer | None:
    for klass in type(target).__mro__:
        renderer = _registry.get(klass)
        if renderer is not None:
            return renderer
    return None


# --------------------------------------------------------------------------------------------
# Recognising and validating targets


def _is_simulation_object(target: Any) -> bool:
    # A class has the method too, unbound; only instances hold a run to render.
    return not isinstance(target, type) and callable(
        getattr(target, "pretty_current_interactions", None)
    )


def _members(target: Any) -> list[Any] | None:
    """A world's member agents, or None for an agent-like object."""
    agents = getattr(target, "agents", None)
    return list(agents) if isinstance(agents, list | tuple) else None


_ACCEPTED = (
    "A target can be:\n"
    "  - an object with a pretty_current_interactions() method: an agent or a world of a\n"
    "    simulation library, or pytest_propositions.trace.Agent / trace.World;\n"
    "  - a str holding the trajectory text;\n"
    "  - a transcript: a list of OpenAI chat messages or Responses items, Anthropic messages,\n"
    "    Gemini contents, LangChain messages or OpenTelemetry spans, or a mapping holding a\n"
    '    "messages" list (a LangGraph state) or an OTLP/JSON export;\n'
    "  - a results-extraction output: a dict of fields (any dict that is not a chat message),\n"
    "    or a dataclass instance or a pydantic model, shown as its fields;\n"
    "  - a list or tuple of any of these, for several targets."
)


def _unsupported(target: Any) -> TypeError:
    name = type_name(target)
    short = type(target).__name__
    return TypeError(
        f"cannot judge a target of type {name}.\n{_ACCEPTED}\n"
        f"To judge {short} objects, register a renderer with "
        f"pytest_propositions.register_renderer({short}, fn), where "
        f"fn(target, options) returns the context text, or implement the "
        f"pytest_proposition_render_target hook in a conftest.py or plugin."
    )


def as_target_list(target: Any) -> list[Any]:
    """The targets in ``target``, validated: one target, or a list/tuple of several.

    A list whose items are all dicts is one chat transcript; nested lists are flattened.
    Raises TypeError for a kind that cannot be rendered, ValueError for an empty list, a
    malformed chat message, a list that contains itself or lists nested absurdly deep.
    """
    __tracebackhide__ = True
    if type(target) is str:
        return [target]  # what the checks below conclude for any str, asked for every claim
    return _target_list(target, (), ())


def _target_list(target: Any, path: tuple[int, ...], outer: tuple[int, ...]) -> list[Any]:
    __tracebackhide__ = True
    if _registered(target) is not None:
        return [target]
    if isinstance(target, str) or _is_simulation_object(target):
        return [target]
    from .transcripts import is_message, transcript_events, transcript_format

    if isinstance(target, list | tuple):
        if not target:
            raise ValueError(
                f"the target is an empty {type(target).__name__}: give at least one agent, "
                "world, text or chat message"
            )
        if transcript_format(target) is not None:
            transcript_events(target)  # a part no reader knows is refused here, by name
            return [target]
        messages = [is_message(item) for item in target]
        if any(messages):
            odd = messages.index(False) if not all(messages) else None
            which = (
                "messages of different formats"
                if odd is None
                else f"item #{odd}, a {type_name(target[odd])}, is no message of a transcript"
            )
            raise TypeError(
                f"the target list mixes messages of a transcript with other objects ({which}). "
                "A list of messages (or of a trace's spans) is read as one transcript, each item "
                "in one format; to judge a transcript together with other targets, put the "
                "transcript in its own list: [agent, [message, message, ...]]."
            )
        out: list[Any] = []
        for index, item in enumerate(target):
            inner = (*outer, id(target))
            if isinstance(item, list | tuple):
                _check_nesting(item, (*path, index), inner)
            out.extend(_target_list(item, (*path, index), inner))
        return out
    if is_message(target):
        raise TypeError(
            f"the target is a single message of a transcript ({type_name(target)}). To judge "
            'a transcript, pass the list of its messages: [{"role": "user", "content": "..."}, '
            "...] (or the list of a trace's spans)."
        )
    if isinstance(target, Mapping):
        if transcript_format(target) is not None:
            transcript_events(target)
        else:
            validate_extraction(target)
        return [target]
    hook = _current_hook_renderer()
    if hook is not None and hook(target, RenderOptions()) is not None:
        # Only the hook can tell whether it renders this type, so it is asked once here.
        return [target]
    if is_fields_object(target):
        object_fields(target)  # one with no fields, or holding itself, is refused here
        return [target]
    raise _unsupported(target)


def _check_nesting(item: Any, path: tuple[int, ...], outer: tuple[int, ...]) -> None:
    """Refuse a list that holds itself, or lists nested past MAX_TARGET_NESTING, by name."""
    where = "target" + "".join(f"[{i}]" for i in path)
    if id(item) in outer:
        raise ValueError(
            f"the target list contains itself (at {where}); give each target once, in a flat list"
        )
    if len(path) > MAX_TARGET_NESTING:
        raise ValueError(
            f"the target lists nest more than {MAX_TARGET_NESTING} levels deep (at "
            f"{where[:80]}...); give the targets in a flat list"
        )


# --------------------------------------------------------------------------------------------
# Rendering


def _name_of(target: Any) -> str | None:
    name = getattr(target, "name", None)
    return name if isinstance(name, str) and name else None


def _named(target: Any, base: str, unnamed: str) -> str:
    name = _name_of(target)
    return f"{base} {quote_name(name)}" if name else unnamed


def _kind(target: Any) -> str:
    """What a single target is, whoever renders it: headings and labels follow from this."""
    if isinstance(target, str):
        return "text"
    if _is_simulation_object(target):
        return "world" if _members(target) is not None else "agent"
    from .transcripts import is_message, transcript_format

    if transcript_format(target) is not None:
        return "transcript"
    if isinstance(target, Mapping) and not is_message(target):
        return "extraction"
    if is_fields_object(target):
        return "fields"
    return "other"


# The kinds given as data: their section heading, their label in reports, what their size counts.
_DATA_KINDS = {
    "text": ("Text", "text", "char"),
    "transcript": ("Transcript", "transcript", "event"),
    "extraction": ("Extraction result", "extraction result", "field"),
}


def _heading(target: Any) -> str:
    """The section heading; never a repr, so no memory address reaches the cache key."""
    kind = _kind(target)
    if kind in _DATA_KINDS:
        return _DATA_KINDS[kind][0]
    if kind in ("other", "fields"):
        return _named(target, type(target).__name__, type(target).__name__)
    return _named(
        target, kind.capitalize(), f"{kind.capitalize()} (unnamed {type(target).__name__})"
    )


def _persona_json(persona: Mapping[str, Any], label: str) -> str:
    check_plain_data(persona, f"the persona specification of {label}")
    return json.dumps(
        plain_json(persona), indent=2, sort_keys=True, ensure_ascii=False, default=str
    )


def _persona_block(agent: Any, level: str) -> str:
    name = _name_of(agent)
    label = f"agent {quote_name(name)}" if name else "an unnamed agent"
    persona = getattr(agent, "_persona", None)
    title = f"{level} Persona specification of {label}"
    if not isinstance(persona, Mapping):
        return f"{title}\n\n(no persona specification available)"
    return (
        f"{title}\n\n"
        "This is the static specification the agent was created from: what the agent is "
        "meant to be, NOT part of the simulation and NOT something it said or did.\n\n"
        f"{_persona_json(persona, label)}"
    )


def _call_trajectory(target: Any, options: RenderOptions) -> str:
    """Call ``pretty_current_interactions`` with only the keyword arguments it accepts."""
    method = target.pretty_current_interactions
    wanted: dict[str, Any] = {
        "max_content_length": None,
        "first_n": options.first_n,
        "last_n": options.last_n,
    }
    try:
        params = inspect.signature(method).parameters.values()
    except (TypeError, ValueError):  # some builtins and C extensions have no signature
        accepted = dict(wanted)
    else:
        named = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
        takes_any = any(p.kind is p.VAR_KEYWORD for p in params)
        accepted = {k: v for k, v in wanted.items() if takes_any or k in named}
    for key in ("first_n", "last_n"):
        if wanted[key] is not None and key not in accepted:
            # Rendering the whole run when a window was asked for would judge the wrong thing.
            raise ValueError(
                f"{key}={wanted[key]} was requested, but "
                f"{type(target).__name__}.pretty_current_interactions() takes no {key} "
                "argument; drop the window or register a renderer for this type"
            )
    text = method(**accepted)
    if not isinstance(text, str):
        raise TypeError(
            f"{type(target).__name__}.pretty_current_interactions() returned "
            f"{type_name(text)}, expected str"
        )
    # Our own recorder writes neither style tags nor clock times: its text is left as recorded.
    if isinstance(target, Agent | World):
        return text
    return normalise_library_text(text, options.timestamps)


def _render_simulation_object(target: Any, options: RenderOptions) -> str:
    parts: list[str] = []
    if options.include_personas:
        members = _members(target)
        agents = members if members is not None else [target]
        if not agents:
            parts.append("### Persona specifications\n\n(the world has no agents)")
        parts.extend(_persona_block(agent, "###") for agent in agents)
        parts.append("### Simulation trajectory")
    parts.append(_call_trajectory(target, options))
    return "\n\n".join(parts)


def _render_one(target: Any, options: RenderOptions) -> tuple[str, str]:
    """The heading and the body of one target's section."""
    renderer = _registered(target)
    if renderer is not None:
        return _heading(target), _expect_str(renderer(target, options), renderer)
    hook = _current_hook_renderer()
    if hook is not None:
        text = hook(target, options)
        if text is not None:
            return _heading(target), _expect_str(text, "the render-target hook")
    kind = _kind(target)
    if kind in ("world", "agent"):
        body = _render_simulation_object(target, options)
    elif kind == "text":
        body = target or "(empty text)"
    elif kind == "transcript":
        from .transcripts import render_transcript

        body = render_transcript(target, options.first_n, options.last_n)
    elif kind == "extraction":
        body = render_extraction(target)
    elif kind == "fields":
        body = render_fields(type(target).__name__, object_fields(target))
    else:
        raise _unsupported(target)
    return _heading(target), body


def _expect_str(value: Any, source: Any) -> str:
    if not isinstance(value, str):
        who = source if isinstance(source, str) else getattr(source, "__qualname__", "renderer")
        raise TypeError(f"{who} returned {type_name(value)}, expected the context text as str")
    return value


def render_context(targets: Sequence[Any], options: RenderOptions) -> str:
    """Every target's section, in order: a ``## heading``, persona blocks only if asked, the run.

    Each item is normalised with ``as_target_list``, so nested lists are accepted here too.
    """
    if not isinstance(options, RenderOptions):
        raise TypeError(f"options must be a RenderOptions, got {type_name(options)}")
    if isinstance(targets, str) or not isinstance(targets, Sequence):
        raise TypeError(
            f"render_context expects a sequence of targets (see as_target_list), "
            f"got {type_name(targets)}"
        )
    items: list[Any] = []
    for target in targets:
        items.extend(as_target_list(target))
    if not items:
        raise ValueError("render_context needs at least one target")
    sections: list[str] = []
    for index, target in enumerate(items, start=1):
        heading, body = _render_one(target, options)
        if len(items) > 1:
            heading += f" (target {index} of {len(items)})"
        sections.append(f"## {heading}\n\n{body}")
    return "\n\n".join(sections)


def render_target(
    target: Any,
    *,
    first_n: int | None = None,
    last_n: int | None = None,
    include_personas: bool = False,
    timestamps: str = "relative",
) -> str:
    """The text the judge is shown for ``target``, exactly as a claim about it sends it.

    Check a trace here before paying for a verdict: every event the judge will read, in order,
    with the same window (``first_n``, ``last_n``) and options a claim takes. A target the
    plugin cannot read raises here as it would in the claim. Several targets (a list of them)
    are one section each. The text is part of the cache key: the same target gives the same
    text in every run.
    """
    __tracebackhide__ = True
    options = RenderOptions(
        first_n=first_n,
        last_n=last_n,
        include_personas=include_personas,
        timestamps=timestamps,
    )
    return render_context([target], options)


def describe_target(target: Any) -> str:
    """A short label for reports, e.g. "agent 'Oscar'"; never raises."""
    try:
        if isinstance(target, list | tuple) and _registered(target) is None:
            items = as_target_list(target)
            if len(items) > 1:
                shown = ", ".join(describe_target(t) for t in items[:3])
                more = f", and {len(items) - 3} more" if len(items) > 3 else ""
                return f"{len(items)} targets: {shown}{more}"
            target = items[0]
        kind = _kind(target)
        if kind == "transcript":
            from .transcripts import transcript_events, transcript_format

            found = transcript_format(target)
            events = plural(len(transcript_events(target)), "event")
            return f"transcript ({found.name if found else '?'}, {events})"
        if kind in _DATA_KINDS:
            _, label, unit = _DATA_KINDS[kind]
            return f"{label} ({plural(len(target), unit)})"
        if kind == "fields":
            fields = plural(len(object_fields(target)), "field")
            return f"{_named(target, type(target).__name__, type(target).__name__)} ({fields})"
        if kind == "other":
            return _named(target, type(target).__name__, f"{type(target).__name__} object")
        return _named(target, kind, f"unnamed {kind}")
    except Exception:
        return f"{type(target).__name__} object"
