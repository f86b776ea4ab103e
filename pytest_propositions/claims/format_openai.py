"""OpenAI's two ways of writing a conversation: chat messages and Responses items."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .data_text import one_line, type_name
from .transcript_notation import (
    Event,
    TranscriptFormat,
    act,
    as_data,
    call_text,
    data_text,
    heard,
    items_of,
    omitted,
    tool_result,
    unreadable,
)

# --------------------------------------------------------------------------------------------
# Chat messages

# A dict is a chat message when it has a "role" and something said or done: "content" (even
# None), "tool_calls", "function_call", "refusal" or "audio" (a spoken reply, which the SDK's
# model_dump writes without its None content). Any other dict is a results-extraction output
# (the reference library's extractor returns a dict per agent or world, a list of them for several).
_MESSAGE_BODY_KEYS = ("content", "tool_calls", "function_call", "refusal", "audio")
#: Content parts that are not text: named, never inlined.
_CHAT_MEDIA = ("image_url", "input_audio", "file")


def is_chat_message(value: Any) -> bool:
    return (
        isinstance(value, Mapping)
        and "role" in value
        and any(key in value for key in _MESSAGE_BODY_KEYS)
    )


def _is_chat_list(value: Any) -> bool:
    """A list of dicts, at least one of them a chat message: one transcript."""
    return (
        isinstance(value, list | tuple)
        and all(isinstance(m, Mapping) for m in value)
        and any(is_chat_message(m) for m in value)
    )


def _validate_chat(messages: Sequence[Any]) -> None:
    for i, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise TypeError(f"chat message #{i} must be a dict, got {type_name(message)}")
        kind = message.get("type")
        if "role" not in message and isinstance(kind, str) and kind != "message":
            raise ValueError(
                f"item #{i} of the list has the type {kind!r}, which no transcript format read "
                f'here writes: not an OpenAI chat message (those have a "role"), nor an OpenAI '
                f"Responses item of a type read here ({', '.join(sorted(RESPONSES_ITEM_TYPES))}). "
                "A list of dicts holding a chat message is one transcript; to judge extraction "
                "results, pass them without chat messages among them"
            )
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
            raise TypeError(f'chat message #{i}: "name" must be a str, got {type_name(name)}')
        content = message.get("content")
        if content is not None and not isinstance(content, str | list | tuple):
            raise TypeError(
                f'chat message #{i}: "content" must be a str, a list of content parts or None, '
                f"got {type_name(content)}"
            )
        for j, part in enumerate(content if isinstance(content, list | tuple) else ()):
            if not isinstance(as_data(part), Mapping | str):
                raise TypeError(
                    f"chat message #{i}: content part #{j} must be a dict such as "
                    f'{{"type": "text", "text": "..."}} or a str, got {type_name(part)}'
                )
        calls = message.get("tool_calls")
        if calls is not None and not (
            isinstance(calls, list | tuple) and all(isinstance(c, Mapping) for c in calls)
        ):
            raise TypeError(f'chat message #{i}: "tool_calls" must be a list of dicts')


def _chat_content(content: Any, where: str) -> str:
    """A message's text; images, audio and files named, an unknown part refused."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    pieces: list[str] = []
    for j, item in enumerate(content):
        part = as_data(item)  # a typed part, such as a reply's text block appended as it came
        if isinstance(part, str):
            pieces.append(part)
            continue
        kind = part.get("type")
        if kind == "text" and isinstance(part.get("text"), str):
            pieces.append(part["text"])
        elif kind == "refusal" and isinstance(part.get("refusal"), str):
            pieces.append(f"(refused) {part['refusal']}")
        elif kind in _CHAT_MEDIA:
            pieces.append(omitted(kind))
        else:
            raise unreadable(
                f"{where}: content part #{j}'s type",
                kind,
                "text, refusal, image_url, input_audio or file",
            )
    return "\n".join(pieces)


def _function_call(function: Any) -> tuple[str | None, str]:
    """A call's tool name (if it has one) and its ``name(arguments)`` text."""
    if not isinstance(function, Mapping):
        return None, call_text(None, None)
    name = function.get("name")
    return (name if isinstance(name, str) else None), call_text(name, function.get("arguments"))


def _tool_call(call: Mapping[str, Any], where: str) -> tuple[str | None, str]:
    """One of an assistant's ``tool_calls``: a function's, or a custom tool's (its free-text
    ``input``); a call of another kind is refused by name."""
    kind = call.get("type", "function")
    if kind == "function" and isinstance(call.get("function"), Mapping):
        return _function_call(call["function"])
    custom = call.get("custom")
    if kind == "custom" and isinstance(custom, Mapping):
        name = custom.get("name")
        return (name if isinstance(name, str) else None), call_text(name, custom.get("input"))
    raise unreadable(
        f"{where}'s type",
        kind if isinstance(kind, str) else call,
        'function (with a "function": {name, arguments}) or custom (with a "custom": '
        "{name, input})",
    )


def _spoken_audio(audio: Any, where: str) -> str:
    """What an assistant said aloud: the transcript of its audio reply; the audio itself (or a
    reference to an earlier reply's, with no transcript) is named, never inlined."""
    if not isinstance(audio, Mapping):
        raise TypeError(f'{where}: "audio" must be a dict, got {type_name(audio)}')
    transcript = audio.get("transcript")
    if isinstance(transcript, str) and transcript.strip():
        return transcript
    return omitted("audio")


def _answered_tool(
    message: Mapping[str, Any], tool_names: dict[str, str], where: str
) -> str | None:
    """The tool a result answers, by the call's id: ``tool_call_id``, or SWE-agent's
    ``tool_call_ids`` (a list; the names of several calls answered at once are joined)."""
    call_id = message.get("tool_call_id")
    if isinstance(call_id, str):
        return tool_names.get(call_id)
    ids = message.get("tool_call_ids")
    if ids is None:
        return None
    if not isinstance(ids, list | tuple) or not all(isinstance(i, str) for i in ids):
        raise TypeError(f'{where}: "tool_call_ids" must be a list of str, got {type_name(ids)}')
    names = [tool_names[i] for i in ids if i in tool_names]
    return ", ".join(dict.fromkeys(names)) if len(names) == len(ids) and names else None


def _chat_events(messages: Sequence[Any]) -> list[Event]:
    _validate_chat(messages)
    tool_names: dict[str, str] = {}
    events: list[Event] = []
    for i, message in enumerate(messages):
        role = one_line(message["role"])
        name = one_line(message.get("name") or "") or None
        text = _chat_content(message.get("content"), f"chat message #{i}")
        if role == "assistant":
            actor = name or "assistant"
            refusal = message.get("refusal")
            if isinstance(refusal, str) and refusal:
                text = f"{text}\n(refused) {refusal}" if text else f"(refused) {refusal}"
            if message.get("audio") is not None:
                spoken = _spoken_audio(message["audio"], f"chat message #{i}")
                text = f"{text}\n{spoken}" if text and spoken != text else spoken
            calls = list(message.get("tool_calls") or [])
            legacy = message.get("function_call")
            if text or not (calls or legacy):
                events.append(act(actor, "TALK", text))
            for j, call in enumerate(calls):
                fname, shown = _tool_call(call, f"chat message #{i}: tool call #{j}")
                events.append(act(actor, "TOOL_CALL", shown))
                call_id = call.get("id")
                if isinstance(call_id, str) and fname is not None:
                    tool_names[call_id] = fname
            if legacy is not None:
                events.append(act(actor, "TOOL_CALL", _function_call(legacy)[1]))
        elif role in ("tool", "function"):
            tool = name or _answered_tool(message, tool_names, f"chat message #{i}")
            events.append(tool_result(tool, text))
        elif role in ("system", "developer"):
            events.append(heard(name or role, "SYSTEM", text))
        else:
            events.append(
                heard(name or role, "CONVERSATION" if role == "user" else "MESSAGE", text)
            )
    return events


CHAT = TranscriptFormat(
    name="OpenAI chat messages",
    is_message=is_chat_message,
    recognise=_is_chat_list,
    events=_chat_events,
)


# --------------------------------------------------------------------------------------------
# Responses items

#: The items read, by "type"; a message may also come without one.
_RESPONSES_ITEMS = (
    "message",
    "function_call",
    "function_call_output",
    "reasoning",
    "custom_tool_call",
    "custom_tool_call_output",
    "mcp_call",
    # The tools the Responses API runs itself (below, _HOSTED_CALLS and _HOSTED_OUTPUTS).
    "web_search_call",
    "file_search_call",
    "code_interpreter_call",
    "image_generation_call",
    "computer_call",
    "computer_call_output",
    "local_shell_call",
    "local_shell_call_output",
    "shell_call",
    "shell_call_output",
    "apply_patch_call",
    "apply_patch_call_output",
    "mcp_list_tools",
    "mcp_approval_request",
    "mcp_approval_response",
    "tool_search_call",
    "tool_search_output",
    "program",
    "program_output",
    "additional_tools",
    "configuration_update",
    "compaction",
    "compaction_trigger",
)
#: Item types of the Responses API that are refused, and why: what they stand for is not in
#: the transcript.
REFUSED_RESPONSES_ITEMS = {
    "item_reference": "it names an item OpenAI stores by its id, whose content the transcript "
    "does not hold; pass the item itself (the response's output item) instead",
}
#: Every Responses item type this reader knows, read or refused (tests compare it with the
#: installed openai SDK's unions, so that no new type is dropped silently).
RESPONSES_ITEM_TYPES = frozenset(_RESPONSES_ITEMS) | frozenset(REFUSED_RESPONSES_ITEMS)
#: Item types only the Responses API writes: one of them makes a list a Responses transcript.
_RESPONSES_ONLY = RESPONSES_ITEM_TYPES - {"message"}
_RESPONSES_PARTS = frozenset(
    {"input_text", "output_text", "input_image", "input_file", "input_audio"}
)


def _is_responses_item(value: Any) -> bool:
    return isinstance(value, Mapping) and value.get("type") in _RESPONSES_ONLY


def _has_responses_parts(value: Any) -> bool:
    content = value.get("content") if isinstance(value, Mapping) else None
    return isinstance(content, list | tuple) and any(
        isinstance(part, Mapping) and part.get("type") in _RESPONSES_PARTS for part in content
    )


def _is_responses_list(value: Any) -> bool:
    return (
        isinstance(value, list | tuple)
        and all(isinstance(item, Mapping) for item in value)
        and any(_is_responses_item(item) or _has_responses_parts(item) for item in value)
    )


def _responses_parts(content: Any, where: str) -> str:
    if content is None or isinstance(content, str):
        return content or ""
    if not isinstance(content, list | tuple):
        raise TypeError(
            f"{where}: content must be a str or a list of parts, got {type_name(content)}"
        )
    pieces: list[str] = []
    for j, part in enumerate(content):
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind in ("input_text", "output_text", "text") and isinstance(part.get("text"), str):
            pieces.append(part["text"] + _sources(part.get("annotations"), f"{where}, part #{j}"))
        elif kind == "refusal" and isinstance(part.get("refusal"), str):
            pieces.append(f"(refused) {part['refusal']}")
        elif kind == "input_image":
            pieces.append(omitted("image"))
        elif kind == "input_file":
            pieces.append(omitted("file", part.get("filename")))
        elif kind == "input_audio":
            pieces.append(omitted("audio"))
        else:
            raise unreadable(
                f"{where}: content part #{j}'s type",
                kind if isinstance(kind, str) else part,
                "input_text, output_text, refusal, input_image, input_file or input_audio",
            )
    return "\n".join(pieces)


def _source(note: Any, where: str) -> str:
    """One annotation of a text: a web page cited (title and URL), a file cited or written."""
    kind = note.get("type") if isinstance(note, Mapping) else None
    if kind == "url_citation":
        title, url = note.get("title"), note.get("url")
        return f"{one_line(title)} <{url}>" if isinstance(title, str) and title else f"<{url}>"
    if kind in ("file_citation", "container_file_citation"):
        return f"file {one_line(str(note.get('filename') or note.get('file_id')))}"
    if kind == "file_path":
        return f"file written: {one_line(str(note.get('file_id')))}"
    raise unreadable(
        f"{where}: an annotation's type",
        kind if isinstance(kind, str) else note,
        "url_citation, file_citation, container_file_citation or file_path",
    )


def _sources(annotations: Any, where: str) -> str:
    """The sources a text cites (its annotations), each once, in the order cited; "" if none."""
    if annotations is None:
        return ""
    if not isinstance(annotations, list | tuple):
        raise TypeError(f"{where}: annotations must be a list, got {type_name(annotations)}")
    cited = list(dict.fromkeys(_source(as_data(note), where) for note in annotations))
    return "".join(["\nSources cited:", *(f"\n- {source}" for source in cited)]) if cited else ""


def _reasoning_text(item: Mapping[str, Any], where: str) -> str:
    """A reasoning item's summary or text; encrypted or withheld reasoning says so."""
    texts: list[str] = []
    for key in ("summary", "content"):
        for part in item.get(key) or ():
            text = part.get("text") if isinstance(part, Mapping) else None
            if not isinstance(text, str):
                raise unreadable(f"{where}: a {key} part", part, 'a dict with a "text"')
            texts.append(text)
    return "\n".join(texts) if texts else "(reasoning not shown)"


# A hosted tool's call: the tool's name, and the item's key holding its arguments (the whole
# item less its ids, status and results when None).
_HOSTED_CALLS: dict[str, tuple[str, str | None]] = {
    "web_search_call": ("web_search", "action"),
    "file_search_call": ("file_search", None),
    "code_interpreter_call": ("code_interpreter", None),
    "image_generation_call": ("image_generation", None),
    "computer_call": ("computer", "action"),
    "local_shell_call": ("local_shell", "action"),
    "shell_call": ("shell", "action"),
    "apply_patch_call": ("apply_patch", "operation"),
    "mcp_list_tools": ("mcp_list_tools", None),
    "tool_search_call": ("tool_search", "arguments"),
}
# What a hosted call carries besides its arguments: ids, its state, and what it returned
# (shown as the call's result).
_NOT_ARGUMENTS = frozenset(
    {"type", "id", "call_id", "status", "results", "outputs", "result", "output", "tools"}
    | {"pending_safety_checks", "container_id", "encrypted_content", "error"}
)


def _hosted_result(kind: str, item: Mapping[str, Any], where: str) -> str | None:
    """What a hosted tool returned, as its call item carries it (None: nothing yet)."""
    if kind == "image_generation_call":
        return omitted("image") if item.get("result") else None
    if kind == "code_interpreter_call":
        pieces = []
        for output in item.get("outputs") or ():
            kind_of = output.get("type") if isinstance(output, Mapping) else None
            if kind_of == "logs":
                pieces.append(data_text(output.get("logs"), where))
            elif kind_of == "image":
                pieces.append(omitted("image"))
            else:
                raise unreadable(f"{where}: an output's type", kind_of or output, "logs or image")
        return "\n".join(pieces) if pieces else None
    if kind == "mcp_list_tools":
        tools = item.get("tools") or ()
        return ", ".join(str(t.get("name")) for t in tools if isinstance(t, Mapping)) or None
    results = item.get("results")
    if results is None:
        return None
    if isinstance(results, list | tuple):  # a file search's hits, less their files' ids
        results = [
            {k: v for k, v in hit.items() if k != "file_id"} if isinstance(hit, Mapping) else hit
            for hit in results
        ]
    return data_text(results, where)


def _hosted_call(kind: str, item: Mapping[str, Any], where: str) -> list[Event]:
    """A tool the Responses API ran itself: its call, then what it returned when the item
    says (a web search's results come as the next message's citations)."""
    tool, key = _HOSTED_CALLS[kind]
    if key is not None:
        arguments: Any = item.get(key)
    else:
        arguments = {k: v for k, v in item.items() if k not in _NOT_ARGUMENTS and v is not None}
    events = [act("assistant", "TOOL_CALL", call_text(tool, arguments or None))]
    if item.get("error"):
        events.append(tool_result(tool, data_text(item["error"], where), error=True))
    else:
        result = _hosted_result(kind, item, where)
        if result is not None:
            events.append(tool_result(tool, result))
    return events


def _hosted_output(kind: str, item: Mapping[str, Any], where: str) -> Event:
    """What a hosted tool the caller runs returned (a computer's screenshot, a shell's output,
    a patch applied)."""
    tool = _HOSTED_CALLS[kind.removesuffix("_output")][0]
    output = item.get("output")
    if kind == "computer_call_output":
        return tool_result(tool, omitted("screenshot"))
    if kind == "apply_patch_call_output" and output is None:
        return tool_result(
            tool, str(item.get("status") or ""), error=item.get("status") == "failed"
        )
    return tool_result(tool, data_text(output, where))


def _responses_events(items: Sequence[Any]) -> list[Event]:
    tool_names: dict[str, str] = {}
    events: list[Event] = []
    for i, item in enumerate(items):
        where = f"Responses item #{i}"
        if not isinstance(item, Mapping):
            raise TypeError(f"{where} must be a dict, got {type_name(item)}")
        kind = item.get("type", "message")
        if kind == "message":
            role = item.get("role")
            if not isinstance(role, str) or not role.strip():
                raise ValueError(f'{where} is a message without a "role"; expected one')
            text = _responses_parts(item.get("content"), where)
            if role == "assistant":
                events.append(act("assistant", "TALK", text))
            elif role in ("system", "developer"):
                events.append(heard(role, "SYSTEM", text))
            else:
                events.append(heard(role, "CONVERSATION" if role == "user" else "MESSAGE", text))
        elif kind in ("function_call", "custom_tool_call"):
            name = item.get("name")
            arguments = item.get("arguments" if kind == "function_call" else "input")
            events.append(act("assistant", "TOOL_CALL", call_text(name, arguments)))
            if isinstance(item.get("call_id"), str) and isinstance(name, str):
                tool_names[item["call_id"]] = name
        elif kind in ("function_call_output", "custom_tool_call_output"):
            call_id = item.get("call_id")
            tool = tool_names.get(call_id) if isinstance(call_id, str) else None
            events.append(tool_result(tool, _responses_parts(item.get("output"), where)))
        elif kind == "reasoning":
            events.append(act("assistant", "THINK", _reasoning_text(item, where)))
        elif kind == "mcp_call":
            name = item.get("name")
            events.append(act("assistant", "TOOL_CALL", call_text(name, item.get("arguments"))))
            error = item.get("error")
            if error:
                events.append(tool_result(name, data_text(error, where), error=True))
            elif "output" in item:
                events.append(tool_result(name, data_text(item["output"], where)))
        elif isinstance(kind, str) and kind in _HOSTED_CALLS:
            events.extend(_hosted_call(kind, item, where))
        elif isinstance(kind, str) and kind.removesuffix("_output") in _HOSTED_CALLS:
            events.append(_hosted_output(kind, item, where))
        elif isinstance(kind, str) and kind in _OTHER_ITEMS:
            events.append(_OTHER_ITEMS[kind](item, where))
        elif isinstance(kind, str) and kind in REFUSED_RESPONSES_ITEMS:
            raise ValueError(
                f"{where} is an OpenAI Responses item of type {kind!r}, which is not read: "
                f"{REFUSED_RESPONSES_ITEMS[kind]}"
            )
        else:
            raise unreadable(f"{where}'s type", kind, ", ".join(_RESPONSES_ITEMS))
    return events


def _tool_names(tools: Any, where: str) -> str:
    """The names of the tools a list declares (a namespace's as ``namespace.tool``)."""
    names: list[str] = []
    for tool in items_of(tools, where, "tools"):
        if not isinstance(tool, Mapping):
            raise TypeError(f"{where}: a tool must be a dict, got {type_name(tool)}")
        name = tool.get("name") or tool.get("server_label") or tool.get("type")
        inner = tool.get("tools")
        if isinstance(inner, list | tuple):
            names += [f"{name}.{n}" for n in _tool_names(inner, where).split(", ") if n]
        else:
            names.append(one_line(str(name)))
    return ", ".join(names)


def _tool_search_output(item: Mapping[str, Any], where: str) -> Event:
    """The tools a tool search found (loaded for the model to call)."""
    found = _tool_names(item.get("tools"), where)
    return tool_result("tool_search", f"tools found: {found}" if found else "(no tools found)")


def _program(item: Mapping[str, Any], where: str) -> Event:
    """Code the model wrote to call its tools (programmatic tool calling), as a call."""
    return act("assistant", "TOOL_CALL", call_text("program", {"code": item.get("code")}))


def _program_output(item: Mapping[str, Any], where: str) -> Event:
    failed = item.get("status") == "incomplete"
    return tool_result("program", data_text(item.get("result"), where), error=failed)


def _approval_request(item: Mapping[str, Any], where: str) -> Event:
    """The model asks the user to approve a call of an MCP server's tool (not yet made)."""
    shown = call_text(item.get("name"), item.get("arguments"))
    server = item.get("server_label")
    on = f" on the MCP server {one_line(server)}" if isinstance(server, str) and server else ""
    return act("assistant", "APPROVAL_REQUEST", f"{shown}{on}")


def _approval_response(item: Mapping[str, Any], where: str) -> Event:
    answer = "approved" if item.get("approve") is True else "denied"
    reason = item.get("reason")
    return heard("user", "APPROVAL", f"{answer}: {reason}" if reason else answer)


def _additional_tools(item: Mapping[str, Any], where: str) -> Event:
    names = _tool_names(item.get("tools"), where) or "(none)"
    return heard(str(item.get("role") or "developer"), "SYSTEM", f"tools made available: {names}")


def _configuration_update(item: Mapping[str, Any], where: str) -> Event:
    settings = {k: v for k, v in item.items() if k not in ("type", "id") and v is not None}
    return heard("developer", "SYSTEM", f"configuration updated: {data_text(settings, where)}")


def _compaction(item: Mapping[str, Any], where: str) -> Event:
    """Earlier items the API compacted: encrypted, so what they said is not shown."""
    return heard(
        "openai",
        "COMPACTION",
        "the earlier conversation was compacted into an encrypted item; its content is not "
        "visible here",
    )


def _compaction_trigger(item: Mapping[str, Any], where: str) -> Event:
    return heard("user", "COMPACTION", "asks the API to compact the conversation here")


_OTHER_ITEMS = {
    "tool_search_output": _tool_search_output,
    "program": _program,
    "program_output": _program_output,
    "mcp_approval_request": _approval_request,
    "mcp_approval_response": _approval_response,
    "additional_tools": _additional_tools,
    "configuration_update": _configuration_update,
    "compaction": _compaction,
    "compaction_trigger": _compaction_trigger,
}


RESPONSES = TranscriptFormat(
    name="OpenAI Responses items",
    is_message=_is_responses_item,
    recognise=_is_responses_list,
    events=_responses_events,
)
