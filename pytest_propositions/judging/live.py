"""Asking the model: one request judged live in the turns its ``Turns`` says (request.py: the
answer, the double-check's turn, an unparsable reply asked again), and the record the cache
stores; and free-text follow-ups.

judge.py calls it on a cache miss; it takes the request and the counts (request.py) as values
and never imports the judge.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ..checks import quote_claim, terminal_text
from ..errors import JudgeUnavailable, VerdictUnparsable
from ..store.cache_record import new_record
from ..verdict import Usage, Verdict
from .prompts import DOUBLE_CHECK_PROMPT, Message, assistant_turn
from .reply import printable, read_choices
from .response import other_choices, reply_content, reply_cost, reply_usage
from .transport import Transport, queue_waits

if TYPE_CHECKING:
    from ..store.key_material import KeyMaterial
    from .endpoint import Connection
    from .reply import ParsedReply
    from .request import JudgeRequest, JudgeStats

logger = logging.getLogger("pytest_propositions")


@dataclass(frozen=True)
class _Answer:
    parsed: ParsedReply
    raw: str
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None


async def judge_live(
    transport: Transport,
    stats: JudgeStats,
    request: JudgeRequest,
    connection: Connection,
    key: str,
    material: KeyMaterial,
) -> tuple[Verdict, dict[str, Any]]:
    """The verdict on ``request`` and the record to store under ``key``; ``material`` is what
    the key was computed from (its sampling is what is sent)."""
    # A managed local server starts on the first call; its start-up is not judging time.
    await asyncio.to_thread(connection.endpoint)
    started = time.perf_counter()
    waits: list[float] = []
    queue_waits.set(waits)
    sampling = dict(material.sampling)
    messages = list(request.messages)
    turns = request.turns
    first = await _answer(transport, stats, connection, messages, request, sampling)
    final, revised_from = first, None
    answers = [first]
    if turns.double_check:
        follow = [
            *messages,
            assistant_turn(_as_reply(first.parsed)),
            {"role": "user", "content": DOUBLE_CHECK_PROMPT},
        ]
        final = await _answer(transport, stats, connection, follow, request, sampling)
        answers.append(final)
        if final.parsed.value != first.parsed.value:
            revised_from = first.parsed.value
            logger.warning(
                "the judge revised its verdict on %r from %r to %r",
                request.claim,
                first.parsed.value,
                final.parsed.value,
            )
    elapsed = max(time.perf_counter() - started - sum(waits), 0.0)
    usage = Usage(
        prompt_tokens=sum(a.prompt_tokens for a in answers),
        completion_tokens=sum(a.completion_tokens for a in answers),
    )
    costs = [a.cost_usd for a in answers]
    cost = None if any(c is None for c in costs) else sum(c for c in costs if c is not None)
    recorded_at = datetime.now(UTC).replace(microsecond=0).isoformat()
    verdict = Verdict(
        kind=request.kind,
        claim=request.claim,
        value=final.parsed.value,
        justification=final.parsed.justification,
        reasoning=final.parsed.reasoning,
        confidence=final.parsed.confidence,
        model=connection.identity,
        cached=False,
        recorded_at=recorded_at,
        key=key,
        usage=usage,
        cost_usd=cost,
        judge_seconds=round(elapsed, 3),
        raw_reply=final.raw,
        revised_from=revised_from,
    )
    with stats.lock:
        stats.verdicts += 1
        stats.judge_seconds += elapsed
    return verdict, new_record(verdict, material, request.test_id)


async def _answer(
    transport: Transport,
    stats: JudgeStats,
    connection: Connection,
    messages: list[Message],
    request: JudgeRequest,
    sampling: dict[str, Any],
) -> _Answer:
    """One parsed answer; an unparsable reply is asked again as the request's ``Turns`` says
    before giving up."""
    last_error: VerdictUnparsable | None = None
    for _ in range(1 + request.turns.reasks):
        try:
            transport.check_window(connection, messages)  # refused unsent: no call made
            with stats.lock:
                # A call made counts, answered or not (a provider's error, a timeout): a run
                # whose live calls all failed must not read as one that never called the judge.
                stats.judge_calls += 1
            response = await transport.complete(
                connection, messages, sampling=sampling, kind=request.kind
            )
        except JudgeUnavailable as error:
            raise JudgeUnavailable(
                f"{error} (claim {quote_claim(request.claim)})",
                status=error.status,
                format_rejected=error.format_rejected,
            ) from None
        prompt_tokens, completion_tokens = reply_usage(response)
        cost = reply_cost(response)
        with stats.lock:
            # Every reply is paid for, parsed or not: count it now (and for --prop-max-cost).
            stats.prompt_tokens += prompt_tokens
            stats.completion_tokens += completion_tokens
            stats.cost_usd += cost or 0.0
        where = f"model {connection.identity}, claim {quote_claim(request.claim)}"
        try:
            content, refusal = reply_content(response)
        except VerdictUnparsable as error:
            # No message (JudgeReplyInvalid), or one the provider marked incomplete, filtered or
            # failed (JudgeReplyIncomplete): the error keeps its kind.
            last_error = error.located(where)
            continue
        if refusal:
            last_error = VerdictUnparsable(
                f"the judge refused to answer: {terminal_text(printable(refusal[:200]))} ({where})",
                raw_reply=refusal,
            )
            continue
        try:
            texts = [content, *other_choices(response)]
            parsed = read_choices(texts, request.kind)
        except VerdictUnparsable as error:
            # The subclass (JudgeReplyInvalid) says the reply broke the plumbing: keep it.
            last_error = type(error)(f"{error} ({where})", raw_reply=error.raw_reply)
            continue
        return _Answer(parsed, content, prompt_tokens, completion_tokens, cost)
    assert last_error is not None
    raise last_error


async def follow_up(
    transport: Transport,
    connection: Connection,
    messages: list[Message],
    sampling: dict[str, Any],
) -> str:
    """A free-text answer on a preserved chat (recommendations); never cached."""
    response = await transport.complete(connection, messages, sampling=sampling, mode="text")
    content, _ = reply_content(response)
    if not content.strip():
        raise VerdictUnparsable(
            "the judge gave an empty answer to the follow-up", raw_reply=content
        )
    return content.strip()


def _as_reply(parsed: ParsedReply) -> dict[str, Any]:
    return {
        "reasoning": parsed.reasoning,
        "justification": parsed.justification,
        "value": parsed.value,
        "confidence": parsed.confidence,
    }
