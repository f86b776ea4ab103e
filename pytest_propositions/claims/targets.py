"""Turning any target of a claim into the context text the judge reads, and the renderer registry.

Lookup for one target: a registered renderer (MRO walk), then the plugin's hook callback, then a
duck-typed simulation object (``pretty_current_interactions``; ``trace.World``/``trace.Agent``
take this path too), then ``str`` (the text itself), then a list of chat messages. The output is
deterministic (no clock, no ids, no addresses, sorted JSON) because it is part of the cache key.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .. import runtime as runtime_module
from ..checks import check_window, plural, quote_name
from ..settings import TIMESTAMP_MODES

# The trajectory notation (trace.py) and the reference library's text (library_text.py) are
# imported by the renderers that use them: a str target, the commonest, needs neither.

__all__ = [
    "HookRenderer",
    "RenderOptions",
    "Renderer",
    "as_target_list",
    "describe_target",
    "register_renderer",
    "render_context",
    "set_hook_renderer",
    "unregister_renderer",
]


@dataclass(frozen=True)
class RenderOptions:
    """What part of each target the judge sees.

    ``first_n``/``last_n`` count events (chat messages for transcripts) per target; with both,
    the first ``first_n`` and the last ``last_n`` are shown with the gap noted. They do not apply
    to ``str`` targets, which are taken verbatim. ``timestamps`` (relative, absolute, none) says
    how a simulation object's clock lines are shown; ``str`` targets are never rewritten.
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
        if self.timestamps not in TIMESTAMP_MODES:
            raise ValueError(
                f"timestamps must be one of {', '.join(TIMESTAMP_MODES)}, got {self.timestamps!r}"
            )
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


def _type_name(value: Any) -> str:
    klass = type(value)
    if klass.__module__ == "builtins":
        return klass.__qualname__
    return f"{klass.__module__}.{klass.__qualname__}"


_ACCEPTED = (
    "A target can be:\n"
    "  - an object with a pretty_current_interactions() method: an agent or a world of a\n"
    "    simulation library, or pytest_propositions.trace.Agent / trace.World;\n"
    "  - a str holding the trajectory text;\n"
    '  - a list of chat messages (dicts with a "role" and a "content", OpenAI format, tool\n'
    "    calls included);\n"
    "  - a results-extraction output: a dict of fields (any dict that is not a chat message);\n"
    "  - a list or tuple of any of these, for several targets."
)


def _unsupported(target: Any) -> TypeError:
    name = _type_name(target)
    short = type(target).__name__
    return TypeError(
        f"cannot judge a target of type {name}.\n{_ACCEPTED}\n"
        f"To judge {short} objects, register a renderer with "
        f"pytest_propositions.register_renderer({short}, fn), where "
        f"fn(target, options) returns the context text, or implement the "
        f"pytest_proposition_render_target hook in a conftest.py or plugin."
    )


def _validate_transcript(messages: Sequence[Any]) -> None:
    for i, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise TypeError(f"chat message #{i} must be a dict, got {_type_name(message)}")
        if "role" not in message:
            raise ValueError(
                f'chat message #{i} has no "role" key (keys: {sorted(map(str, message))}); '
                'each message needs one, e.g. {"role": "user", "content": "..."} (a list of '
                "dicts holding a chat message is one transcript; to judge extraction results, "
                "pass them without chat messages among them)"
            )
        if not any(key in message for key in _MESSAGE_BODY_KEYS):
            raise ValueError(
                f'chat message #{i} has a "role" but no "content" (nor "tool_calls"); give it '
                '"content", even None'
            )
        role = message["role"]
        if not isinstance(role, str) or not role.strip():
            raise TypeError(f'chat message #{i}: "role" must be a non-empty str, got {role!r}')
        name = message.get("name")
        if name is not None and not isinstance(name, str):
            raise TypeError(f'chat message #{i}: "name" must be a str, got {_type_name(name)}')
        content = message.get("content")
        if content is not None and not isinstance(content, str | list | tuple):
            raise TypeError(
                f'chat message #{i}: "content" must be a str, a list of content parts or None, '
                f"got {_type_name(content)}"
            )
        if isinstance(content, list | tuple):
            for j, part in enumerate(content):
                if not isinstance(part, Mapping | str):
                    raise TypeError(
                        f"chat message #{i}: content part #{j} must be a dict such as "
                        f'{{"type": "text", "text": "..."}} or a str, got {_type_name(part)}'
                    )
        calls = message.get("tool_calls")
        if calls is not None and not (
            isinstance(calls, list | tuple) and all(isinstance(c, Mapping) for c in calls)
        ):
            raise TypeError(f'chat message #{i}: "tool_calls" must be a list of dicts')


# A dict is a chat message when it has a "role" and something said or done: "content" (even
# None), "tool_calls", "function_call" or "refusal". Any other dict is a results-extraction output (the
# reference library's extractor returns a dict per agent or world, a list of them for several).
_MESSAGE_BODY_KEYS = ("content", "tool_calls", "function_call", "refusal")


def _is_chat_message(value: Any) -> bool:
    return (
        isinstance(value, Mapping)
        and "role" in value
        and any(key in value for key in _MESSAGE_BODY_KEYS)
    )


def _is_message_list(value: Any) -> bool:
    """A non-empty list of dicts, at least one of them a chat message: one transcript."""
    return (
        isinstance(value, list | tuple)
        and bool(value)
        and all(isinstance(m, Mapping) for m in value)
        and any(_is_chat_message(m) for m in value)
    )


def _is_extraction(value: Any) -> bool:
    return isinstance(value, Mapping) and not _is_chat_message(value)


def _validate_extraction(result: Mapping[Any, Any]) -> None:
    if not result:
        raise ValueError(
            "the target is an empty dict: as an extraction result it holds nothing to judge (the "
            "reference library's extractor returns {} when it could not read its model's answer)"
        )
    check_plain_data(result, "the extraction result")


#: How deeply lists of targets may nest; deeper is surely a mistake (or a list holding itself).
MAX_TARGET_NESTING = 32


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
    if isinstance(target, list | tuple):
        if not target:
            raise ValueError(
                f"the target is an empty {type(target).__name__}: give at least one agent, "
                "world, text or chat message"
            )
        if _is_message_list(target):
            _validate_transcript(target)
            return [target]
        if any(_is_chat_message(item) for item in target):
            kinds = sorted({_type_name(item) for item in target if not isinstance(item, Mapping)})
            raise TypeError(
                "the target list mixes chat-message dicts with other objects "
                f"({', '.join(kinds)}). A list of dicts is read as one chat transcript; to "
                "judge a transcript together with other targets, put the transcript in its "
                "own list: [agent, [message, message, ...]]."
            )
        out: list[Any] = []
        for index, item in enumerate(target):
            inner = (*outer, id(target))
            if isinstance(item, list | tuple):
                _check_nesting(item, (*path, index), inner)
            out.extend(_target_list(item, (*path, index), inner))
        return out
    if _is_chat_message(target):
        raise TypeError(
            f"the target is a single chat message ({_type_name(target)}). To judge a chat "
            'transcript, pass a list of messages: [{"role": "user", "content": "..."}, ...].'
        )
    if isinstance(target, Mapping):
        _validate_extraction(target)
        return [target]
    if isinstance(target, str) or _is_simulation_object(target):
        return [target]
    hook = _current_hook_renderer()
    if hook is not None and hook(target, RenderOptions()) is not None:
        # Only the hook can tell whether it renders this type, so it is asked once here.
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


def _kind(target: Any) -> str:
    """What a single target is, whoever renders it: headings and labels follow from this."""
    if isinstance(target, str):
        return "text"
    if _is_message_list(target):
        return "transcript"
    if _is_extraction(target):
        return "extraction"
    if _is_simulation_object(target):
        return "world" if _members(target) is not None else "agent"
    return "other"


def _heading(target: Any) -> str:
    """The section heading; never a repr, so no memory address reaches the cache key."""
    kind = _kind(target)
    if kind in ("text", "transcript"):
        return kind.capitalize()
    if kind == "extraction":
        return "Extraction result"
    name = _name_of(target)
    base = kind.capitalize() if kind != "other" else type(target).__name__
    if name:
        return f"{base} {quote_name(name)}"
    return base if kind == "other" else f"{base} (unnamed {type(target).__name__})"


_ADDRESS_RE = re.compile(r" at 0x[0-9A-Fa-f]+")


def _jsonable(value: Any) -> Any:
    """Plain JSON data with str keys; anything else as text with memory addresses removed."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, set | frozenset):
        items = [_jsonable(v) for v in value]
        return sorted(items, key=lambda v: json.dumps(v, sort_keys=True, ensure_ascii=False))
    return _ADDRESS_RE.sub("", str(value))


def _persona_json(persona: Mapping[str, Any], label: str) -> str:
    check_plain_data(persona, f"the persona specification of {label}")
    return json.dumps(_jsonable(persona), indent=2, sort_keys=True, ensure_ascii=False, default=str)


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
        params = inspect.signature(method).parameters
    except (TypeError, ValueError):  # some builtins and C extensions have no signature
        accepted = dict(wanted)
    else:
        takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
        accepted = {
            k: v
            for k, v in wanted.items()
            if takes_any
            or (
                k in params
                and params[k].kind
                in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
            )
        }
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
            f"{_type_name(text)}, expected str"
        )
    from ..trace import Agent, World
    from .library_text import normalise_library_text

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


# Chat transcripts ---------------------------------------------------------------------------


def _content_text(content: Any) -> str:
    """A message's text; non-text parts (images, audio, files) are named, never inlined."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    pieces: list[str] = []
    for part in content:
        if isinstance(part, str):
            pieces.append(part)
            continue
        kind = part.get("type")
        if kind == "text" and isinstance(part.get("text"), str):
            pieces.append(part["text"])
        elif kind == "refusal" and isinstance(part.get("refusal"), str):
            pieces.append(f"(refused) {part['refusal']}")
        else:
            pieces.append(f"<{kind if isinstance(kind, str) else 'unknown'} part omitted>")
    return "\n".join(pieces)


def _call_text(function: Any) -> str:
    """``name(arguments)`` with JSON arguments re-serialised with sorted keys."""
    if not isinstance(function, Mapping):
        return "unknown_tool()"
    name = function.get("name")
    name = _one_line(name) if isinstance(name, str) and name.strip() else "unknown_tool"
    raw = function.get("arguments")
    if raw is None or raw == "":
        return f"{name}()"
    if isinstance(raw, str):
        try:
            parsed = json.loads(raw)
        except ValueError:
            return f"{name}({raw})"  # shown as the model wrote it
        except RecursionError:
            raise ValueError(
                f"the tool call {name}'s argument data is nested too deeply to read; expected "
                "plain JSON data"
            ) from None
    else:
        parsed = raw
    check_plain_data(parsed, f"the tool call {name}'s argument data")
    return f"{name}({json.dumps(_jsonable(parsed), sort_keys=True, ensure_ascii=False)})"


def _one_line(text: str) -> str:
    """Names and roles sit inside an event line; a line break there would forge a new line."""
    return " ".join(text.split())


def _transcript_entries(messages: Sequence[Mapping[str, Any]]) -> list[list[tuple[str, str]]]:
    """For each message, its ``(head, content)`` events in the trajectory notation."""
    from ..trace import _action_head, _stimulus_head

    speakers = {
        _one_line(m.get("name") or "assistant") for m in messages if m.get("role") == "assistant"
    }
    assistant = speakers.pop() if len(speakers) == 1 else "assistant"
    tool_names: dict[str, str] = {}
    entries: list[list[tuple[str, str]]] = []
    for message in messages:
        role = _one_line(message["role"])
        name = _one_line(message.get("name") or "") or None
        text = _content_text(message.get("content"))
        events: list[tuple[str, str]] = []
        if role == "assistant":
            actor = name or "assistant"
            refusal = message.get("refusal")
            if isinstance(refusal, str) and refusal:
                text = f"{text}\n(refused) {refusal}" if text else f"(refused) {refusal}"
            calls = list(message.get("tool_calls") or [])
            legacy = message.get("function_call")
            if text or not (calls or legacy):
                events.append((_action_head(actor, "TALK"), text))
            for call in calls:
                function = call.get("function")
                events.append((_action_head(actor, "TOOL_CALL"), _call_text(function)))
                call_id = call.get("id")
                fname = function.get("name") if isinstance(function, Mapping) else None
                if isinstance(call_id, str) and isinstance(fname, str):
                    tool_names[call_id] = _one_line(fname)
            if legacy is not None:
                events.append((_action_head(actor, "TOOL_CALL"), _call_text(legacy)))
        elif role in ("tool", "function"):
            call_id = message.get("tool_call_id")
            tool = name or (tool_names.get(call_id) if isinstance(call_id, str) else None)
            source = f"tool:{tool}" if tool else "tool"
            events.append((_stimulus_head(source, assistant, "TOOL_RESULT"), text))
        elif role in ("system", "developer"):
            events.append((_stimulus_head(name or role, assistant, "SYSTEM"), text))
        else:
            kind = "CONVERSATION" if role == "user" else "MESSAGE"
            events.append((_stimulus_head(name or role, assistant, kind), text))
        entries.append(events)
    return entries


def _render_transcript(messages: Sequence[Mapping[str, Any]], options: RenderOptions) -> str:
    from ..trace import _format_entry, _omission_note, _select_window

    entries = _transcript_entries(messages)
    lines = [f"---- BEGIN CHAT TRANSCRIPT ({plural(len(messages), 'message')}) ----"]
    for item in _select_window(len(entries), options.first_n, options.last_n):
        if isinstance(item, tuple):
            lines.append(_omission_note(*item, unit="message"))
            continue
        for head, content in entries[item]:
            lines.append(_format_entry(f"Message #{item}", head, content))
    lines.append("---- END CHAT TRANSCRIPT ----")
    return "\n".join(lines)


# Extraction results -------------------------------------------------------------------------


def check_plain_data(value: Any, what: str, outer: tuple[int, ...] = ()) -> None:
    """Data shown to the judge (an extraction result, a persona, a tool call's arguments) is
    refused by name when it contains itself or nests past MAX_TARGET_NESTING levels, before a
    renderer would meet Python's recursion limit."""
    if isinstance(value, Mapping | list | tuple | set | frozenset):
        if id(value) in outer:
            raise ValueError(f"{what} contains itself; expected plain JSON data")
        if len(outer) >= MAX_TARGET_NESTING:
            raise ValueError(
                f"{what} is nested more than {MAX_TARGET_NESTING} levels deep; expected plain "
                "JSON data"
            )
        items = value.values() if isinstance(value, Mapping) else value
        for item in items:
            check_plain_data(item, what, (*outer, id(value)))


def _scalar_text(value: Any) -> str:
    if isinstance(value, str):
        return value if value.strip() else json.dumps(value)
    if value is None or isinstance(value, bool | int | float):
        return json.dumps(value)
    return _ADDRESS_RE.sub("", str(value))


def _data_entry(pad: str, label: str, value: Any) -> list[str]:
    """One ``label value`` line, or the label and the value's lines beneath it."""
    if isinstance(value, set | frozenset):
        value = _jsonable(value)
    if isinstance(value, Mapping | list | tuple):
        if not value:
            return [f"{pad}{label} {'{}' if isinstance(value, Mapping) else '[]'}"]
        return [f"{pad}{label}", *_data_lines(value, pad + "  ")]
    text = _scalar_text(value)
    if "\n" in text or "\r" in text:
        # A value's own line breaks stay inside its indented block, never forging a field.
        return [f"{pad}{label}", *(f"{pad}    | {line}" for line in text.splitlines())]
    return [f"{pad}{label} {text}"]


def _data_lines(value: Mapping[Any, Any] | Sequence[Any], pad: str) -> list[str]:
    lines: list[str] = []
    if isinstance(value, Mapping):
        for key in sorted(value, key=lambda k: str(k)):
            lines += _data_entry(pad, f"{_one_line(str(key))}:", value[key])
    else:
        for item in value:
            lines += _data_entry(pad, "-", item)
    return lines


def _render_extraction(result: Mapping[Any, Any]) -> str:
    """A results-extraction output as readable text: fields sorted by name, nested indented."""
    lines = [
        "---- BEGIN EXTRACTION RESULT ----",
        *_data_lines(result, ""),
        "---- END EXTRACTION RESULT ----",
    ]
    return "\n".join(lines)


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
        return _heading(target), _render_simulation_object(target, options)
    if kind == "text":
        return _heading(target), target if target else "(empty text)"
    if kind == "transcript":
        return _heading(target), _render_transcript(target, options)
    if kind == "extraction":
        return _heading(target), _render_extraction(target)
    raise _unsupported(target)


def _expect_str(value: Any, source: Any) -> str:
    if not isinstance(value, str):
        who = source if isinstance(source, str) else getattr(source, "__qualname__", "renderer")
        raise TypeError(f"{who} returned {_type_name(value)}, expected the context text as str")
    return value


def render_context(targets: Sequence[Any], options: RenderOptions) -> str:
    """Every target's section, in order: a ``## heading``, persona blocks only if asked, the run.

    Each item is normalised with ``as_target_list``, so nested lists are accepted here too.
    """
    if not isinstance(options, RenderOptions):
        raise TypeError(f"options must be a RenderOptions, got {_type_name(options)}")
    if isinstance(targets, str) or not isinstance(targets, Sequence):
        raise TypeError(
            f"render_context expects a sequence of targets (see as_target_list), "
            f"got {_type_name(targets)}"
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
        if kind == "text":
            return f"text ({plural(len(target), 'char')})"
        if kind == "transcript":
            return f"chat transcript ({plural(len(target), 'message')})"
        if kind == "extraction":
            return f"extraction result ({plural(len(target), 'field')})"
        name = _name_of(target)
        base = kind if kind != "other" else type(target).__name__
        if name:
            return f"{base} {quote_name(name)}"
        return f"{base} object" if kind == "other" else f"unnamed {kind}"
    except Exception:
        return f"{type(target).__name__} object"
