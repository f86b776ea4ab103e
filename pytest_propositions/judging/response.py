"""What a chat completion holds, whichever path brought it: the reply text or the refusal (both
redacted), the other choices' texts, the tokens used and the cost.

Both paths answer with the same attribute names (the light path's ``Completion`` copies
litellm's), so one reader serves both.
"""

from __future__ import annotations

from typing import Any

from ..errors import JudgeReplyInvalid
from ..redaction import redact
from .reply import printable
from .transport_litellm import completion_cost

__all__ = ["other_choices", "reply_content", "reply_cost", "reply_usage"]


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
    refusal = getattr(message, "refusal", None)
    if refusal is None:  # litellm keeps OpenAI's refusal among provider-specific fields
        extra = getattr(message, "provider_specific_fields", None)
        refusal = extra.get("refusal") if isinstance(extra, dict) else None
    content = getattr(message, "content", None)
    text = redact(content) if isinstance(content, str) else ""
    if isinstance(refusal, str) and refusal.strip():
        return text, redact(refusal)
    return text, None


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
