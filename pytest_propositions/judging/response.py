"""What a chat completion holds, whichever path brought it: the reply text or the refusal (both
redacted), whether the provider says the reply ended normally (its envelope), the other choices'
texts, the tokens used and the cost.

Both paths answer with the same attribute names (the light path's ``Completion`` copies
litellm's, ``provider_specific_fields`` included), so one reader serves both.
"""

from __future__ import annotations

import json
from typing import Any

from ..errors import JudgeReplyIncomplete, JudgeReplyInvalid
from ..redaction import redact
from .reply import printable
from .transport_litellm import completion_cost

__all__ = ["NORMAL_STOPS", "other_choices", "reply_content", "reply_cost", "reply_usage"]

#: The words a provider ends a whole reply with: OpenAI's ``stop`` (every OpenAI-compatible
#: server's too), Anthropic's ``end_turn``/``stop_sequence``, Gemini's ``STOP``, Hugging Face's
#: ``eos_token``/``eos`` and Cohere's ``COMPLETE``/``STOP_SEQUENCE`` (litellm maps them all to
#: ``stop`` and keeps the provider's own word as ``native_finish_reason``). Any other word is a
#: reply cut short, filtered, failed or not a reply at all (a tool call), and never a verdict.
#: No word at all is a whole reply: llama.cpp-like servers may omit it, and litellm reads a
#: missing one as ``stop``.
NORMAL_STOPS = frozenset(
    {"stop", "end_turn", "stop_sequence", "STOP", "eos_token", "eos", "COMPLETE", "STOP_SEQUENCE"}
)

# What the provider's word (in OpenAI's words, as litellm maps them) says happened to the reply.
_CUT = (
    "was cut short ({said}): the model reached its output-token limit before it finished, so "
    "the text is not its whole answer. The plugin sends no limit: raise the provider's or the "
    "server's (llama.cpp's --n-predict, the max tokens of vLLM or Ollama), or choose a model "
    "whose answer fits"
)
_FILTERED = (
    "was stopped by the provider's content filter ({said}): what is left is not the judge's "
    "answer. Something in the claim or its target trips the filter; another model or provider "
    "may judge it"
)
_CALL = "is a tool call ({said}), not a reply: the judge is asked for a verdict in text"
_FAILED = "failed: the provider reports an error ({said}); another try may succeed"
_OTHER = "did not end normally ({said}): only a normal stop ({stops}) is read as a verdict"
_MEANINGS = {
    "length": _CUT,
    "max_tokens": _CUT,
    "MAX_TOKENS": _CUT,
    "content_filter": _FILTERED,
    "SAFETY": _FILTERED,
    "RECITATION": _FILTERED,
    "refusal": _FILTERED,
    "tool_calls": _CALL,
    "function_call": _CALL,
    "tool_use": _CALL,
    "error": _FAILED,
}
_SHOWN_CHARS = 200


def reply_content(response: Any) -> tuple[str, str | None]:
    """The reply text and, when the provider flagged one, its refusal; both redacted of every
    known secret (a judge or a proxy may echo the request's Authorization header) before
    anything parses, caches or shows them."""
    try:
        choices = response.choices
        message = choices[0].message if choices else None
    except (AttributeError, IndexError, TypeError):
        message = None
    if message is None:
        shown = redact(str(response))[:2000]
        raise JudgeReplyInvalid(
            "the judge's response holds no message (an empty 'choices' list, or a null "
            "message: a provider's content filter or a broken proxy)",
            raw_reply=printable(shown),
        )
    repeated = getattr(response, "repeated_keys", ())
    if repeated:
        shown = redact(str(getattr(message, "content", "")))[:2000]
        raise JudgeReplyInvalid(
            "the judge's response gives "
            + ", ".join(repr(key) for key in repeated)
            + " more than once: a chat completion that reads two ways, which no reply may",
            raw_reply=printable(shown),
        )
    _check_envelope(response, choices)
    refusal = getattr(message, "refusal", None)
    if refusal is None:  # litellm keeps OpenAI's refusal among provider-specific fields
        extra = getattr(message, "provider_specific_fields", None)
        refusal = extra.get("refusal") if isinstance(extra, dict) else None
    content = getattr(message, "content", None)
    text = redact(content) if isinstance(content, str) else ""
    if isinstance(refusal, str) and refusal.strip():
        return text, redact(refusal)
    return text, None


def _check_envelope(response: Any, choices: Any) -> None:
    """Raise ``JudgeReplyIncomplete`` when the provider says a choice is not a whole reply:
    an ``error`` beside the choices (a 200 body the light path read; litellm raises its own
    error for one) or in a choice, or a ``finish_reason`` other than a normal stop."""
    error = getattr(response, "error", None)
    if error is not None:
        _incomplete(_FAILED, f"error: {_shown(error)}", None, choices[0])
    for choice in choices:
        fields = getattr(choice, "provider_specific_fields", None)
        fields = fields if isinstance(fields, dict) else {}
        if fields.get("error") is not None:
            _incomplete(_FAILED, f"error: {_shown(fields['error'])}", None, choice)
        reason = getattr(choice, "finish_reason", None)
        native = fields.get("native_finish_reason")
        words = [word for word in (reason, native) if word is not None]
        odd = [word for word in words if not (isinstance(word, str) and word in NORMAL_STOPS)]
        if not odd:
            continue
        # The provider's own word first: it is the one its documentation explains.
        said = f"finish_reason {_shown(reason)}"
        if native is not None and native != reason:
            said = f"finish_reason {_shown(native)}, mapped to {_shown(reason)}"
        meaning = next((_MEANINGS[w] for w in odd if isinstance(w, str) and w in _MEANINGS), None)
        word = odd[-1] if isinstance(odd[-1], str) else None
        _incomplete(meaning or _OTHER, said, word, choice)


def _incomplete(meaning: str, said: str, word: str | None, choice: Any) -> None:
    stops = ", ".join(repr(stop) for stop in sorted(NORMAL_STOPS))
    content = getattr(getattr(choice, "message", None), "content", None)
    text = redact(content)[:2000] if isinstance(content, str) else ""
    raise JudgeReplyIncomplete(
        "the judge's reply " + meaning.format(said=said, stops=stops),
        raw_reply=printable(text),
        finish_reason=word,
    )


def _shown(value: Any) -> str:
    """A provider's value as a message shows it: its own message for an error object, quoted,
    redacted, printable and short."""
    if isinstance(value, dict) and isinstance(value.get("message"), str):
        value = value["message"]
    if not isinstance(value, str):
        try:
            value = json.dumps(value)
        except (TypeError, ValueError, RecursionError):
            value = type(value).__name__
    shown = printable(redact(value))
    if len(shown) > _SHOWN_CHARS:
        shown = shown[:_SHOWN_CHARS] + "..."
    return repr(shown)


def other_choices(response: Any) -> list[str]:
    """The texts of a response's choices after the first (a refusal or no text gives ""); the
    judge reads a response with several choices only when they all agree."""
    try:
        choices = list(response.choices)[1:]
    except (AttributeError, TypeError):
        return []
    texts: list[str] = []
    for choice in choices:
        message = getattr(choice, "message", None)
        content = getattr(message, "content", None)
        refusal = getattr(message, "refusal", None)
        refused = isinstance(refusal, str) and refusal.strip()
        texts.append(content if isinstance(content, str) and not refused else "")
    return texts


def reply_cost(response: Any) -> float | None:
    """The call's price in USD as the path priced it (litellm, or the light path from litellm's
    table), else litellm's price of the response; None when unknown."""
    hidden = getattr(response, "_hidden_params", None)
    if isinstance(hidden, dict) and "response_cost" in hidden:
        cost = hidden["response_cost"]  # litellm priced the call already (None: unknown)
    else:
        return completion_cost(response)
    try:
        return float(cost) if cost else None
    except (TypeError, ValueError):
        return None


def reply_usage(response: Any) -> tuple[int, int]:
    """The prompt and completion tokens the response reports (0 for what it does not)."""
    usage = getattr(response, "usage", None)
    prompt = getattr(usage, "prompt_tokens", 0) or 0
    completion = getattr(usage, "completion_tokens", 0) or 0
    return int(prompt), int(completion)
