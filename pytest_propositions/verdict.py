"""Pydantic models of what a judge says: the reply schema it is asked for, and the Verdict kept."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Kind = Literal["check", "score"]


class JudgeReply(BaseModel):
    """The JSON object the judge is asked to produce; reasoning comes first so it is written first."""

    model_config = ConfigDict(extra="ignore")

    reasoning: str = Field(
        description="Step-by-step analysis of the evidence, written before deciding."
    )
    justification: str = Field(
        description="Concise, concrete reasons for the value, citing the context."
    )
    value: Any = Field(
        description="The verdict: true/false for a check, an integer 0..9 for a score."
    )
    confidence: float = Field(ge=0.0, le=1.0, description="How sure the judge is, from 0.0 to 1.0.")


class Usage(BaseModel):
    model_config = ConfigDict(frozen=True)

    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class Verdict(BaseModel):
    """One evaluated claim: the judge's answer plus where it came from."""

    model_config = ConfigDict(frozen=True)

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

    def as_response(self) -> dict[str, Any]:
        """The reference library's "full response" shape."""
        return {
            "value": self.value,
            "justification": self.justification,
            "confidence": self.confidence,
            "reasoning": self.reasoning,
        }


def combine_samples(samples: list[Verdict]) -> Verdict:
    """One verdict from several samples: the majority for a check, the lower median for a score.

    Ties go against the claim (a 2-2 check is False; an even count takes the lower middle
    score), because a judge that cannot make up its mind has not supported the claim.
    """
    if not samples:
        raise ValueError("combine_samples needs at least one sample")
    values = [sample.value for sample in samples]
    if samples[0].kind == "check":
        value: bool | int = sum(1 for v in values if v is True) * 2 > len(values)
    else:
        value = sorted(int(v) for v in values)[(len(values) - 1) // 2]
    representative = next(sample for sample in samples if sample.value == value)
    costs = [sample.cost_usd for sample in samples if sample.cost_usd is not None]
    return representative.model_copy(
        update={
            "value": value,
            "votes": tuple(values),
            "cached": all(sample.cached for sample in samples),
            "usage": Usage(
                prompt_tokens=sum(s.usage.prompt_tokens for s in samples),
                completion_tokens=sum(s.usage.completion_tokens for s in samples),
            ),
            "cost_usd": sum(costs) if costs else None,
            "judge_seconds": sum(sample.judge_seconds for sample in samples),
        }
    )
