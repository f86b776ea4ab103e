"""The conversation behind a proposition's last evaluation (``Proposition.llm_chat``), which a
test can continue with free-text follow-ups; follow-ups need a live judge and are never cached.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..checks import check_text
from ..judging.prompts import Message, assistant_turn
from ..verdict import Verdict

if TYPE_CHECKING:
    from ..runtime import Runtime

__all__ = ["JudgeChat"]


class JudgeChat:
    """The conversation with the judge behind a proposition's last evaluation.

    ``messages`` holds what the judge was asked and its answer (OpenAI chat format); new turns
    can be added and sent: ``chat.add_user_message("Why?")`` then ``chat()`` returns the judge's
    free-text answer, which joins the conversation. Follow-ups are never cached: they need a
    live judge. Built only when asked for, so a cached suite pays nothing for it.
    """

    def __init__(
        self, request: list[Message], answer: Verdict, model: str, runtime: Runtime
    ) -> None:
        self._request = request
        self._answer = answer
        self._extra: list[Message] = []
        self.model = model
        self._runtime = runtime

    @property
    def messages(self) -> list[Message]:
        return [*self._request, assistant_turn(self._answer.as_response()), *self._extra]

    @property
    def response_json(self) -> dict[str, Any]:
        return self._answer.as_response()

    @property
    def response_value(self) -> bool | int:
        return self._answer.value

    @property
    def response_justification(self) -> str:
        return self._answer.justification

    @property
    def response_reasoning(self) -> str | None:
        return self._answer.reasoning

    @property
    def response_confidence(self) -> float | None:
        return self._answer.confidence

    def add_user_message(self, content: str) -> JudgeChat:
        return self._add("user", content)

    def add_system_message(self, content: str) -> JudgeChat:
        return self._add("system", content)

    def add_assistant_message(self, content: str) -> JudgeChat:
        return self._add("assistant", content)

    def _add(self, role: str, content: Any) -> JudgeChat:
        __tracebackhide__ = True
        if not isinstance(content, str) or not content.strip():
            raise TypeError(f"a {role} message must be a non-empty str, got {content!r}")
        self._extra.append({"role": role, "content": check_text(content, f"the {role} message")})
        return self

    def __call__(self) -> str:
        """Send the conversation; the judge's free-text answer is returned and kept."""
        __tracebackhide__ = True
        if not self._extra or self._extra[-1]["role"] == "assistant":
            raise ValueError("add a user message (add_user_message) before asking the judge again")
        answer = self._runtime.judge.follow_up(self.model, self.messages)
        self._extra.append({"role": "assistant", "content": answer})
        return answer

    def __repr__(self) -> str:
        return f"JudgeChat(model={self.model!r}, {len(self.messages)} messages)"
