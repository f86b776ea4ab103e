"""OpenTelemetry spans in the three forms a user holds them, read into one shape.

The SDK's span objects (``InMemorySpanExporter.get_finished_spans()``), OTLP/JSON
(``{"resourceSpans": [...]}`` or its spans) and ``span.to_json()`` dicts are read alike: name,
trace, times, attributes, event names and what the span says of its failure. A value that cannot
be read is refused with its path in the target (``resourceSpans[0].scopeSpans[1].spans``).
``format_otel`` reads the agent's run from them.
"""

from __future__ import annotations

import reprlib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .data_text import MAX_TARGET_NESTING, one_line, type_name
from .transcript_notation import omitted, unreadable

#: The GenAI conventions' event that may carry a model call's messages instead of its span.
_DETAILS_EVENT = "gen_ai.client.inference.operation.details"
#: A nanosecond time has at most 20 digits (OTLP's fixed64); longer is no time.
_MAX_TIME_DIGITS = 20
#: The status code of a span that failed, as each form writes it (SDK, to_json, OTLP/JSON).
_ERROR_CODES = frozenset({"ERROR", "STATUS_CODE_ERROR", 2, "2"})


@dataclass(frozen=True)
class Span:
    """What a span says, whatever form it came in; no ids or clock times beyond ordering."""

    label: str
    trace: str
    start: int
    end: int
    attributes: Mapping[str, Any]
    event_names: tuple[str, ...]
    #: What the span says of its failure: its status's description and its exception events'
    #: "type: message" (empty when it did not fail).
    errors: tuple[str, ...] = ()
    #: The span's id and its parent's, as the form writes them (empty when not given): a span
    #: whose parent is not in the export is a root of what the user holds.
    span_id: str = ""
    parent: str = ""


# --------------------------------------------------------------------------------------------
# Spans in their three forms


def _is_sdk_span(value: Any) -> bool:
    return (
        not isinstance(value, Mapping | type)
        and isinstance(getattr(value, "attributes", None), Mapping)
        and hasattr(value, "start_time")
        and hasattr(value, "context")
    )


def _is_otlp_span(value: Any) -> bool:
    return isinstance(value, Mapping) and "traceId" in value and "startTimeUnixNano" in value


def _is_json_span(value: Any) -> bool:
    return (
        isinstance(value, Mapping)
        and isinstance(value.get("context"), Mapping)
        and "start_time" in value
        and isinstance(value.get("attributes", {}), Mapping)
    )


def _is_export(value: Any) -> bool:
    """An OTLP/JSON document, or a part of one a user may hold alone: one resource's
    ``{"scopeSpans": [...]}`` or one scope's ``{"spans": [...]}`` of OTLP spans."""
    if not isinstance(value, Mapping):
        return False
    if isinstance(value.get("resourceSpans"), list | tuple):
        return True
    if isinstance(value.get("scopeSpans"), list | tuple):
        return True
    spans = value.get("spans")
    return isinstance(spans, list | tuple) and bool(spans) and all(map(_is_otlp_span, spans))


def _as_document(value: Mapping[str, Any]) -> tuple[str, list[Any]]:
    """An export's resources and the path they are at, a part of one taken as a whole."""
    if "resourceSpans" in value:
        return "resourceSpans", list(value["resourceSpans"])
    if "scopeSpans" in value:
        return "", [value]
    return "", [{"scopeSpans": [value]}]


def is_span(value: Any) -> bool:
    return _is_sdk_span(value) or _is_otlp_span(value) or _is_json_span(value)


#: The keys of a span in the forms a home-made exporter writes: a dict holding one is taken for
#: a span, and refused by the forms read rather than shown as data.
_SPAN_KEYS = frozenset(
    {"traceId", "trace_id", "spanId", "span_id", "parentSpanId", "parent_id", "startTimeUnixNano"}
)
#: The attribute prefixes of the conventions read here.
_CONVENTIONS = ("gen_ai.", "llm.", "openinference.", "tool.")

FORMS_READ = (
    "the forms read are the SDK's span objects (InMemorySpanExporter.get_finished_spans()), "
    "span.to_json() dicts (context, start_time, attributes), OTLP/JSON spans (traceId, "
    "startTimeUnixNano, attributes) and OTLP/JSON documents ({'resourceSpans': [{'scopeSpans': "
    "[{'spans': [...]}]}]}, or one resource's {'scopeSpans': [...]} or one scope's "
    "{'spans': [...]})"
)


def _convention_attributes(value: Mapping[str, Any]) -> bool:
    """Whether a dict's ``attributes`` name one of the conventions read here."""
    attributes = value.get("attributes")
    keys: list[Any] = []
    if isinstance(attributes, Mapping):
        keys = list(attributes)
    elif isinstance(attributes, list | tuple):
        keys = [pair.get("key") for pair in attributes if isinstance(pair, Mapping)]
    return any(isinstance(key, str) and key.startswith(_CONVENTIONS) for key in keys)


def _span_like(value: Any) -> bool:
    """A dict a home-made exporter may have written for a span: span ids with a name or
    attributes, or attributes of the conventions read here."""
    if not isinstance(value, Mapping):
        return False
    ids = _SPAN_KEYS & set(value) or (
        isinstance(value.get("context"), Mapping) and "span_id" in value["context"]
    )
    return bool(ids and {"name", "attributes"} & set(value)) or _convention_attributes(value)


def _trace_like(value: Any) -> bool:
    """A value shaped like a trace export that no form below reads: an OTLP document's part,
    a ``{"spans": [...]}`` or a list of span-like dicts, or one dict with attributes of the
    conventions read here. (One dict with only an id such as ``trace_id`` may be anything, an
    extraction result, and is left to the other readers.)"""
    if isinstance(value, Mapping):
        if {"resourceSpans", "scopeSpans"} & set(value):
            return True
        spans = value.get("spans")
        if isinstance(spans, list | tuple) and spans and all(map(_span_like, spans)):
            return True
        return _convention_attributes(value)
    return (
        isinstance(value, list | tuple)
        and bool(value)
        and all(is_span(item) or _is_export(item) or _span_like(item) for item in value)
    )


def recognise(value: Any) -> bool:
    """A trace export in a form read here, or a value shaped like one (refused by the forms
    read, in read_spans, rather than shown as an extraction dict)."""
    if _is_export(value):
        return True
    if (
        isinstance(value, list | tuple)
        and bool(value)
        and all(is_span(item) or _is_export(item) for item in value)
    ):
        return True
    return _trace_like(value)


_SHORT = reprlib.Repr()
_SHORT.maxlevel, _SHORT.maxstring, _SHORT.maxother, _SHORT.maxlist, _SHORT.maxdict = 2, 40, 40, 4, 4


def _got(value: Any) -> str:
    """A value as an error names it: its type and a short repr (``int 5``, ``list [1, 2]``)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        return f"an int of {value.bit_length()} bits"
    if isinstance(value, str) and value.isdigit() and len(value) > _MAX_TIME_DIGITS:
        return f"a str of {len(value)} digits"
    return f"{type_name(value)} {_SHORT.repr(value)}"


def _expected(path: str, what: str, value: Any) -> TypeError:
    return TypeError(f"{path}: expected {what}, got {_got(value)}")


def _list_at(value: Any, path: str, what: str) -> list[Any] | tuple[Any, ...]:
    """A list field of the export (absent: empty); anything else refused by its path."""
    if value is None:
        return []
    if not isinstance(value, list | tuple):
        raise _expected(path, f"a list ({what})", value)
    return value


def _mapping_at(value: Any, path: str, what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise _expected(path, f"an object ({what})", value)
    return value


def _any_value(value: Any, path: str, depth: int = 0, top: str = "") -> Any:
    """An OTLP/JSON ``AnyValue`` at ``path`` as plain data; of a kind or value no reader knows,
    it is refused by its path, and nested past MAX_TARGET_NESTING levels by the path of the
    attribute's value (``top``)."""
    if not isinstance(value, Mapping) or len(value) != 1:
        raise unreadable(path, value, "an OTLP AnyValue such as {'stringValue': '...'}")
    top = top or path
    if depth >= MAX_TARGET_NESTING:
        raise ValueError(
            f"{top} is nested more than {MAX_TARGET_NESTING} levels deep; expected plain data"
        )
    [(kind, inner)] = value.items()
    at = f"{path}.{kind}"
    if kind in ("stringValue", "boolValue", "doubleValue"):
        return inner
    if kind == "intValue":
        return _int_value(inner, at)
    if kind == "arrayValue":
        items = _mapping_at(inner or {}, at, "{'values': [...]}").get("values")
        values = _list_at(items, f"{at}.values", "of AnyValues")
        return [_any_value(v, f"{at}.values[{k}]", depth + 1, top) for k, v in enumerate(values)]
    if kind == "kvlistValue":
        pairs = _mapping_at(inner or {}, at, "{'values': [...]}").get("values")
        return _otlp_attributes(pairs, f"{at}.values", depth + 1, top)
    if kind == "bytesValue":
        return omitted("bytes")
    raise unreadable(
        f"{path}'s value kind",
        kind,
        "stringValue, boolValue, intValue, doubleValue, arrayValue, kvlistValue or bytesValue",
    )


def _int_value(value: Any, path: str) -> int:
    """An OTLP int64: a JSON number or its decimal text."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() <= 64:
        return value
    if isinstance(value, str) and len(value) <= _MAX_TIME_DIGITS:
        text = value.strip()
        if text.removeprefix("-").isdigit():
            return int(text)
    raise _expected(path, "a 64-bit integer or its decimal text", value)


def _otlp_attributes(pairs: Any, path: str, depth: int = 0, top: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, pair in enumerate(_list_at(pairs, path, "of {key, value}")):
        at = f"{path}[{k}]"
        if not isinstance(pair, Mapping) or not isinstance(pair.get("key"), str):
            raise unreadable(f"{at}, an attribute,", pair, "{'key': ..., 'value': {...}}")
        out[pair["key"]] = _any_value(pair.get("value"), f"{at}.value", depth, top)
    return out


def _nanos(value: Any, path: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        if value.isdigit() and len(value) <= _MAX_TIME_DIGITS:
            return int(value)
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            pass
        else:
            return int(moment.timestamp() * 1_000_000) * 1000
    raise _expected(path, "nanoseconds since the epoch or an ISO time", value)


def _raw_spans(value: Any) -> list[tuple[str, Any]]:
    """Every span in the target with its path, in the order given."""
    raw: list[tuple[str, Any]] = []
    single = isinstance(value, Mapping)
    if single and not _is_export(value):
        raise _not_read(value, "the target")
    for i, item in enumerate([value] if single else value):
        if not _is_export(item):
            if not is_span(item):
                raise _not_read(item, f"span #{i}")
            raw.append((f"span #{i}", item))
            continue
        key, resources = _as_document(item)
        top = key if single else f"[{i}]" + (f".{key}" if key else "")
        for r, resource in enumerate(resources):
            at = f"{top}[{r}]" if key else top
            resource = _mapping_at(resource, at, "a resource's spans: {'scopeSpans': [...]}")
            scopes = _list_at(resource.get("scopeSpans"), f"{at}.scopeSpans", "of scopes' spans")
            for c, scope in enumerate(scopes):
                where = f"{at}.scopeSpans[{c}]"
                scope = _mapping_at(scope, where, "a scope's spans: {'spans': [...]}")
                spans = _list_at(scope.get("spans"), f"{where}.spans", "of spans")
                raw += [(f"{where}.spans[{n}]", span) for n, span in enumerate(spans)]
    return raw


def _not_read(value: Any, where: str) -> TypeError:
    """The error for a value shaped like a trace in no form read: what it holds, and the forms
    read."""
    if isinstance(value, Mapping):
        shown = "a dict with keys " + ", ".join(sorted(map(str, value))[:8])
    else:
        shown = f"a {type_name(value)}"
    return TypeError(f"{where} is {shown}: no OpenTelemetry span form read here; {FORMS_READ}")


def _events_of(events: Any, path: str) -> list[tuple[str, dict[str, Any]]]:
    """A dict span's events: each one's name and attributes (OTLP's list, or to_json's dict)."""
    found: list[tuple[str, dict[str, Any]]] = []
    for k, event in enumerate(_list_at(events, f"{path}.events", "of span events")):
        at = f"{path}.events[{k}]"
        event = _mapping_at(event, at, "a span event: {'name': ..., 'attributes': ...}")
        attributes = event.get("attributes")
        if isinstance(attributes, Mapping):
            found.append((str(event.get("name", "")), dict(attributes)))
        else:
            found.append(
                (str(event.get("name", "")), _otlp_attributes(attributes, f"{at}.attributes"))
            )
    return found


def _status(span: Any, path: str) -> tuple[Any, Any]:
    """A span's status code and description, in whichever form it came."""
    if _is_sdk_span(span):
        status = getattr(span, "status", None)
        code = getattr(getattr(status, "status_code", None), "name", None)
        return code, getattr(status, "description", None)
    status = span.get("status")
    if status is None:
        return None, None
    status = _mapping_at(status, f"{path}.status", "a span status")
    if "status_code" in status:  # span.to_json()
        return status.get("status_code"), status.get("description")
    return status.get("code"), status.get("message")


def _errors(
    code: Any, description: Any, events: list[tuple[str, dict[str, Any]]], error_type: Any
) -> tuple[str, ...]:
    """What a span says of its failure, each thing once: the status's description, then each
    exception event's ``type: message`` that the description does not already say; a failed
    status with neither says the GenAI conventions' ``error.type``, or that it failed."""
    said: list[str] = []
    if code in _ERROR_CODES and isinstance(description, str) and description.strip():
        said.append(description.strip())
    for name, details in events:
        if name != "exception":
            continue
        kind, message = details.get("exception.type"), details.get("exception.message")
        text = ": ".join(str(part) for part in (kind, message) if part not in (None, ""))
        if text and not any(text in earlier for earlier in said):
            said.append(text)
    if code in _ERROR_CODES and not said:
        kind = error_type if isinstance(error_type, str) and error_type.strip() else None
        said.append(kind or "the span's status is ERROR, with no description")
    return tuple(said)


def read_spans(value: Any) -> list[Span]:
    """Every span in the target, in the form above, in the order given."""
    spans: list[Span] = []
    for path, span in _raw_spans(value):
        if _is_sdk_span(span):
            name = getattr(span, "name", "")
            start = _nanos(span.start_time, f"{path}.start_time")
            end = _nanos(span.end_time if span.end_time is not None else start, f"{path}.end_time")
            trace = str(getattr(span.context, "trace_id", ""))
            span_id = str(getattr(span.context, "span_id", ""))
            parent = str(getattr(getattr(span, "parent", None), "span_id", "") or "")
            attributes = dict(span.attributes)
            found = []
            for k, e in enumerate(getattr(span, "events", ()) or ()):
                details = getattr(e, "attributes", None) or {}
                if not isinstance(details, Mapping):
                    raise _expected(f"{path}.events[{k}].attributes", "a mapping", details)
                found.append((str(getattr(e, "name", "")), dict(details)))
        elif _is_otlp_span(span):
            name = span.get("name", "")
            start = _nanos(span["startTimeUnixNano"], f"{path}.startTimeUnixNano")
            end = _nanos(span.get("endTimeUnixNano") or start, f"{path}.endTimeUnixNano")
            trace = str(span["traceId"])
            span_id, parent = str(span.get("spanId") or ""), str(span.get("parentSpanId") or "")
            attributes = _otlp_attributes(span.get("attributes"), f"{path}.attributes")
            found = _events_of(span.get("events"), path)
        elif _is_json_span(span):
            name = span.get("name", "")
            start = _nanos(span["start_time"], f"{path}.start_time")
            end = _nanos(span.get("end_time") or start, f"{path}.end_time")
            trace = str(span["context"].get("trace_id", ""))
            span_id = str(span["context"].get("span_id") or "")
            parent = str(span.get("parent_id") or "")
            attributes = dict(span.get("attributes") or {})
            found = _events_of(span.get("events"), path)
        else:
            raise _not_read(span, path)
        label = f"{path} ({one_line(str(name))!r})"
        for event_name, details in found:
            if event_name == _DETAILS_EVENT:  # where newer instrumentations put the messages
                attributes = {**details, **attributes}
        names = tuple(event_name for event_name, _ in found)
        errors = _errors(*_status(span, path), found, attributes.get("error.type"))
        spans.append(Span(label, trace, start, end, attributes, names, errors, span_id, parent))
    return spans
