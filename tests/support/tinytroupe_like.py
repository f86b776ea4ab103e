"""Objects shaped like the reference simulation library's (TinyTroupe 0.6.0), without importing it.

The text, attribute names and signatures follow that library's source as described in
shared/docs/TINYTROUPE-FORMAT.md: a header line with rich style tags around the names, content
wrapped at 100 columns behind an indent, the closing ``[/]`` at the end of the event, a world
clock that starts at ``datetime.now()`` taken when the module is imported and advances by a
fixed step, and a ``Proposition`` with the library's attribute names.

Two ways to use it:

- in process, the ``Library*`` objects below, for tests that render the library's text;
- ``install(folder)`` writes a stand-in ``tinytroupe`` package for an inner pytest run (its
  ``FILES``, built on those objects): the module paths, class and attribute names and call
  shapes of TinyTroupe's own uses of its Proposition, as its source has them (read, not copied;
  the claims' wording here is ours).

- ``tinytroupe.experimentation.proposition.Proposition``: the constructor's arguments in
  TinyTroupe's order and ``copy()`` (``LibraryProposition``'s), ``__call__`` going through ``check``, and ``check``/``score``
  taking ``target``, ``additional_context``, ``claim_variables``, ``return_full_response``.
  TinyTroupe's own judge needs a key and the network: here it raises, so a test shows that a
  routed claim never reaches it. ``tinytroupe.experimentation`` re-exports the class.
- ``tinytroupe.validation.propositions``: ready-made propositions, instances made at import
  (``persona_adherence``, the per-action ones with ``{{action}}``, ``first_n=5, last_n=10`` and a
  precondition on the action's type (``action_type_precondition``), ``task_completion`` with ``{{task_description}}``).
- ``tinytroupe.steering.intervention.Intervention``: ``set_textual_precondition(text)`` makes a
  ``Proposition(claim=..., target=self.targets, first_n=..., last_n=...)`` and calls its
  ``check()`` in ``check_precondition()``; ``execute()`` applies the effect when it holds.
- ``tinytroupe.agent.action_generator.ActionGenerator``: copies of the per-action propositions
  made in its constructor, judged in ``_check_proposition(agent, proposition, tentative_action)``
  by ``score(target=agent, claim_variables={"action": ...}, return_full_response=True)`` against
  ``quality_threshold``.
- ``tinytroupe.config_manager``: ``update(key, value)`` and ``get(key)`` of the settings its
  client reads at each call (``waiting_time``, ``max_attempts``), with ``config.ini``'s defaults.
- ``tinytroupe.agent.TinyPerson`` and ``tinytroupe.environment.TinyWorld``: ``LibraryPerson``
  and ``LibraryWorld``, with the ``actions_count`` the action generator reads.
  ``TinyWorld.run(steps)`` steps as TinyTroupe's ``_step_in_parallel`` does: each agent's
  ``act(return_actions=True)`` in a thread of a pool, an agent's exception logged on the
  ``tinytroupe`` logger and the step carried on; ``act()`` with no action checks the agent's
  tentative TALK with the action generator first, as TinyTroupe does with quality checks on.
"""

from __future__ import annotations

import os
import textwrap
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

# The library evaluates its default start time once, at import. A test that needs two processes
# to disagree for certain shifts it further through the environment.
_IMPORT_TIME = datetime.now() + timedelta(minutes=int(os.environ.get("CLOCK_SHIFT_MINUTES", "0")))

TEXT_WIDTH = 100

_STIMULUS_STYLES = {"CONVERSATION": "bold italic cyan1", "THOUGHT": "dim italic cyan1"}
_ACTION_STYLES = {"DONE": "grey82", "TALK": "bold green3", "THINK": "green"}


def _fill(actor: str, content: str) -> str:
    indent = " " * len(actor) + "      > "
    return textwrap.fill(content, width=TEXT_WIDTH, initial_indent=indent, subsequent_indent=indent)


class LibraryPerson:
    """An agent: ``name``, ``_persona`` (a plain dict) and ``pretty_current_interactions``."""

    def __init__(self, name: str, persona: dict[str, Any] | None = None) -> None:
        self.name = name
        self._persona: dict[str, Any] = {"name": name, **(persona or {})}
        self.environment: LibraryWorld | None = None
        # Stored memory messages: (role, payload, simulation_timestamp).
        self._memory: list[tuple[str, dict[str, Any], str | None]] = []

    def _now(self) -> str | None:
        if self.environment is None:
            return None
        return self.environment.current_datetime.isoformat()

    def listen(self, content: str, source: str = "", kind: str = "CONVERSATION") -> None:
        stimulus = {"type": kind, "content": content, "source": source}
        self._memory.append(("user", {"stimuli": [stimulus]}, self._now()))

    def act(self, kind: str, content: str = "") -> None:
        self._memory.append(
            ("assistant", {"action": {"type": kind, "content": content}}, self._now())
        )

    def _selected(
        self, first_n: int | None, last_n: int | None, include_omission_info: bool
    ) -> list[tuple[str, dict[str, Any], str | None]]:
        memory = self._memory
        if first_n is None and last_n is None:
            return list(memory)
        head = memory[:first_n] if first_n is not None else []
        tail = memory[-last_n:] if last_n is not None else []
        # The library stores its omission note in a shape its renderer cannot print: it shows as
        # an empty event, and it is there even when nothing was left out.
        note = [("omission", {}, None)] if include_omission_info else []
        return [*head, *note, *tail]

    def _pretty(self, role: str, payload: dict[str, Any]) -> str:
        if role == "user":
            lines = []
            for stimulus in payload["stimuli"]:
                actor = stimulus["source"] or "USER"
                style = _STIMULUS_STYLES.get(stimulus["type"], "italic")
                lines.append(
                    f"[{style}][underline]{actor}[/] --> [{style}][underline]{self.name}[/]: "
                    f"[{stimulus['type']}] \n{_fill(actor, stimulus['content'])}[/]"
                )
            return "\n".join(lines)
        if role == "assistant":
            action = payload["action"]
            style = _ACTION_STYLES.get(action["type"], "purple")
            return (
                f"[{style}][underline]{self.name}[/] acts: [{action['type']}] "
                f"\n{_fill(self.name, action.get('content', ''))}[/]"
            )
        raise KeyError(role)  # what the library's renderer hits on its omission note

    def pretty_current_interactions(
        self,
        simplified: bool = True,
        skip_system: bool = True,
        max_content_length: int | None = None,
        first_n: int | None = None,
        last_n: int | None = None,
        include_omission_info: bool = True,
    ) -> str:
        lines = [f"**** BEGIN SIMULATION TRAJECTORY FOR {self.name} ****"]
        last = 0
        for i, (role, payload, stamp) in enumerate(
            self._selected(first_n, last_n, include_omission_info)
        ):
            last = i
            lines.append(f"Agent simulation trajectory event #{i}:")
            lines.append(f">>>>>>>>> Date and time of events: {stamp}")
            try:
                lines.append(self._pretty(role, payload))
            except KeyError:
                continue
        lines.append(
            f"The last agent simulation trajectory event number was {last}, thus the current "
            f"number of the NEXT POTENTIAL TRAJECTORY EVENT is {last + 1}."
        )
        lines.append(f"**** END SIMULATION TRAJECTORY FOR {self.name} ****\n\n")
        return "\n".join(lines)


class LibraryWorld:
    """A world: ``name``, ``agents``, a clock from ``initial_datetime`` advanced per step."""

    def __init__(
        self,
        name: str,
        agents: list[LibraryPerson],
        initial_datetime: datetime | None = None,
        step: timedelta = timedelta(minutes=5),
    ) -> None:
        self.name = name
        self.agents = list(agents)
        self.current_datetime = _IMPORT_TIME if initial_datetime is None else initial_datetime
        self._step = step
        for agent in self.agents:
            agent.environment = self

    def advance(self) -> None:
        self.current_datetime += self._step

    def pretty_current_interactions(
        self,
        simplified: bool = True,
        skip_system: bool = True,
        max_content_length: int | None = None,
        first_n: int | None = None,
        last_n: int | None = None,
        include_omission_info: bool = True,
    ) -> str:
        blocks = []
        for agent in self.agents:
            body = agent.pretty_current_interactions(
                simplified=simplified,
                skip_system=skip_system,
                max_content_length=max_content_length,
                first_n=first_n,
                last_n=last_n,
                include_omission_info=include_omission_info,
            )
            blocks.append(
                f"**BEGIN AGENT {agent.name} HISTORY.**\n{body}\n**FINISHED AGENT {agent.name} HISTORY.**"
            )
        return "\n\n".join(blocks)


def travel_chat() -> LibraryWorld:
    """Oscar and Lisa over three steps of a default world (clock from the import time)."""
    oscar = LibraryPerson("Oscar", {"occupation": {"title": "Architect"}, "age": 30})
    lisa = LibraryPerson("Lisa", {"occupation": {"title": "Data scientist"}, "age": 28})
    world = LibraryWorld("Chat room", [oscar, lisa])
    oscar.listen("Tell me a bit about your travel preferences.")
    lisa.listen("Tell me a bit about your travel preferences.")
    world.advance()
    oscar.act("THINK", "I should mention quiet cities.")
    oscar.act("TALK", "I love quiet cities with great architecture. Click the [red] button [/] ok.")
    lisa.listen(
        "I love quiet cities with great architecture. Click the [red] button [/] ok.", "Oscar"
    )
    world.advance()
    lisa.act("TALK", "Beaches for me [citation needed], always with my cat.")
    lisa.act("DONE")
    oscar.act("DONE")
    return world


class LibraryProposition:
    """The attributes of the library's ``Proposition``: ``claim``, ``targets`` (None or a list) and
    the evaluation options, with the evaluation state it keeps after a check."""

    MIN_SCORE = 0
    MAX_SCORE = 9

    def __init__(
        self,
        claim: str,
        target: Any = None,
        include_personas: bool = False,
        first_n: int | None = None,
        last_n: int | None = None,
        double_check: bool = False,
        use_reasoning_model: bool = False,
        precondition_function: Callable[..., Any] | None = None,
    ) -> None:
        self.claim = claim
        self.targets = (
            None if target is None else (target if isinstance(target, list) else [target])
        )
        self.include_personas = include_personas
        self.first_n = first_n
        self.last_n = last_n
        self.double_check = double_check
        self.use_reasoning_model = use_reasoning_model
        self.precondition_function = precondition_function
        self.llm_chat = None
        self.value = None
        self.justification = None
        self.confidence = None
        self.recommendations = None

    def copy(self) -> LibraryProposition:
        return type(self)(
            self.claim,
            self.targets,
            self.include_personas,
            self.first_n,
            self.last_n,
            self.double_check,
            self.use_reasoning_model,
            self.precondition_function,
        )


def action_type_precondition(kinds: list[str]) -> Callable[..., bool]:
    """A precondition with the library's signature: the claim applies to some action types only."""

    def precondition(target: Any, additional_context: Any, claim_variables: dict[str, Any]) -> bool:
        actions = claim_variables.get("action")
        if not isinstance(actions, list):
            actions = [actions]
        return any(isinstance(a, dict) and a.get("type") in kinds for a in actions)

    return precondition


# -- a stand-in package for an inner run -------------------------------------------------------

OWN_JUDGE = "TinyTroupe's own judge was called (it needs a key and the network)"

FILES = {
    "tinytroupe/__init__.py": """
class _ConfigManager:
    def __init__(self):
        self._config = {"waiting_time": 1.0, "max_attempts": 5.0}

    def update(self, key, value):
        self._config[key.lower()] = value

    def get(self, key, default=None):
        return self._config.get(key.lower(), default)


config_manager = _ConfigManager()
""",
    "tinytroupe/experimentation/__init__.py": """
from .proposition import Proposition, check_proposition, compute_score
""",
    "tinytroupe/experimentation/proposition.py": f'''
from tests.support.tinytroupe_like import LibraryProposition

OWN_JUDGE = "{OWN_JUDGE}"


class Proposition(LibraryProposition):
    """The library's attributes (tests/support/tinytroupe_like.py); its judge raises."""

    def __call__(self, target=None, additional_context=None, claim_variables={{}}, return_full_response=False):
        return self.check(
            target=target,
            additional_context=additional_context,
            claim_variables=claim_variables,
            return_full_response=return_full_response,
        )

    def check(self, target=None, additional_context="No additional context available.", claim_variables={{}}, return_full_response=False):
        raise RuntimeError(OWN_JUDGE)

    def score(self, target=None, additional_context="No additional context available.", claim_variables={{}}, return_full_response=False):
        raise RuntimeError(OWN_JUDGE)

    def recommendations_for_improvement(self):
        return "No recommendations."


def check_proposition(target, claim, additional_context="No additional context available.", first_n=None, last_n=None, return_full_response=False):
    proposition = Proposition(claim, target, first_n=first_n, last_n=last_n)
    return proposition.check(additional_context=additional_context, return_full_response=return_full_response)


def compute_score(target, claim, additional_context="No additional context available.", first_n=None, last_n=None, return_full_response=False):
    proposition = Proposition(claim, target, first_n=first_n, last_n=last_n)
    return proposition.compute(additional_context=additional_context, return_full_response=return_full_response)
''',
    "tinytroupe/validation/__init__.py": """
from tinytroupe.validation.propositions import *
""",
    "tinytroupe/validation/propositions.py": '''
from tests.support.tinytroupe_like import action_type_precondition as _only_for
from tinytroupe.experimentation import Proposition


persona_adherence = Proposition(
    """
    The agent behaves as its persona specification says it would.
    """,
    include_personas=True,
    double_check=False,
)

action_persona_adherence = Proposition(
    """
    The next action fits the agent's persona. THE NEXT ACTION: {{action}}
    """,
    include_personas=True,
    double_check=False,
    first_n=5,
    last_n=10,
    precondition_function=_only_for(["THINK", "TALK"]),
)

hard_action_persona_adherence = Proposition(
    """
    The next action fits the agent's persona exactly. THE NEXT ACTION: {{action}}
    """,
    include_personas=True,
    double_check=False,
    first_n=5,
    last_n=10,
    precondition_function=_only_for(["THINK", "TALK"]),
)

action_self_consistency = Proposition(
    """
    The next action agrees with the agent's earlier actions. THE NEXT ACTION: {{action}}
    """,
    include_personas=False,
    first_n=5,
    last_n=10,
    precondition_function=_only_for(["THINK", "TALK"]),
)

action_fluency = Proposition(
    """
    The next action reads naturally. THE NEXT ACTION: {{action}}
    """,
    include_personas=False,
    first_n=5,
    last_n=10,
    precondition_function=_only_for(["THINK", "TALK"]),
)

action_suitability = Proposition(
    """
    The next action suits the situation. THE NEXT ACTION: {{action}}
    """,
    include_personas=True,
    first_n=5,
    last_n=10,
    precondition_function=_only_for(["THINK", "TALK"]),
)

task_completion = Proposition(
    """
    The agent completes this task: "{{task_description}}"
    """,
    include_personas=False,
    double_check=False,
)
''',
    "tinytroupe/steering/__init__.py": """
from tinytroupe.steering.intervention import Intervention
""",
    "tinytroupe/steering/intervention.py": """
from tinytroupe.experimentation import Proposition

DEFAULT_FIRST_N = 10
DEFAULT_LAST_N = 100


class Intervention:
    def __init__(self, targets, first_n=DEFAULT_FIRST_N, last_n=DEFAULT_LAST_N, name=None):
        self.targets = targets
        self.text_precondition = None
        self.precondition_func = None
        self.effect_func = None
        self.first_n = first_n
        self.last_n = last_n
        self.name = name or "Intervention"
        self._last_text_precondition_proposition = None
        self.propositional_precondition = None
        self.propositional_precondition_threshold = None

    def __call__(self):
        return self.execute()

    def execute(self):
        if self.check_precondition():
            self.apply_effect()
            return True
        return False

    def check_precondition(self):
        if self.text_precondition is not None:
            self._last_text_precondition_proposition = Proposition(
                claim=self.text_precondition, target=self.targets, first_n=self.first_n, last_n=self.last_n
            )
            by_text = self._last_text_precondition_proposition.check()
        else:
            by_text = True
        by_function = True if self.precondition_func is None else self.precondition_func(self.targets)
        by_proposition = True
        if self.propositional_precondition is not None:
            if self.propositional_precondition_threshold is not None:
                score = self.propositional_precondition.score(target=self.targets)
                by_proposition = score >= self.propositional_precondition_threshold
            else:
                by_proposition = self.propositional_precondition.check(target=self.targets)
        return by_text and by_function and by_proposition

    def apply_effect(self):
        self.effect_func(self.targets)

    def set_textual_precondition(self, text):
        self.text_precondition = text
        return self

    def set_functional_precondition(self, func):
        self.precondition_func = func
        return self

    def set_effect(self, effect_func):
        self.effect_func = effect_func
        return self

    def set_propositional_precondition(self, proposition, threshold=None):
        self.propositional_precondition = proposition
        self.propositional_precondition_threshold = threshold
        return self

    def precondition_justification(self):
        proposition = self._last_text_precondition_proposition
        if proposition is None:
            return ""
        return f"{proposition.justification} (confidence = {proposition.confidence})"
""",
    "tinytroupe/agent/__init__.py": """
from tests.support.tinytroupe_like import LibraryPerson


class TinyPerson(LibraryPerson):
    @property
    def actions_count(self):
        return sum(1 for role, _, _ in self._memory if role == "assistant")

    def act(self, kind=None, content="", return_actions=False):
        if kind is None:
            from tinytroupe.agent.action_generator import ActionGenerator

            tentative = {"type": "TALK", "content": "Kyoto, again."}
            generator = ActionGenerator()
            generator._check_proposition(self, generator.action_persona_adherence, tentative)
            kind, content = tentative["type"], tentative["content"]
        super().act(kind, content)
        return [{"type": kind, "content": content}] if return_actions else None
""",
    "tinytroupe/agent/action_generator.py": """
from tinytroupe.experimentation import Proposition
from tinytroupe.validation import propositions


class ActionGenerator:
    def __init__(self, quality_threshold=7):
        self.quality_threshold = quality_threshold
        self.action_persona_adherence = propositions.hard_action_persona_adherence.copy()
        self.action_self_consistency = propositions.action_self_consistency.copy()
        self.action_fluency = propositions.action_fluency.copy()
        self.action_suitability = propositions.action_suitability.copy()

    def _check_proposition(
        self,
        agent,
        proposition,
        tentative_action,
        minimum_required_qty_of_actions=0,
        enable_proposition_check=True,
    ):
        if not enable_proposition_check or agent.actions_count < minimum_required_qty_of_actions:
            return True, Proposition.MAX_SCORE, "Not checked."
        result = proposition.score(
            target=agent,
            claim_variables={"action": tentative_action},
            return_full_response=True,
        )
        feedback = f"Score = {result['value']} (out of {Proposition.MAX_SCORE}). Justification = {result['justification']}"
        return result["value"] >= self.quality_threshold, result["value"], feedback
""",
    "tinytroupe/environment/__init__.py": """
import concurrent.futures
import logging

from tests.support.tinytroupe_like import LibraryWorld

logger = logging.getLogger("tinytroupe")


class TinyWorld(LibraryWorld):
    def run(self, steps):
        for _ in range(steps):
            self.advance()
            self._step_in_parallel()

    def _step_in_parallel(self):
        with concurrent.futures.ThreadPoolExecutor() as executor:
            futures = {executor.submit(agent.act, return_actions=True): agent for agent in self.agents}
            concurrent.futures.wait(futures.keys())
            for future, agent in futures.items():
                try:
                    future.result()
                except Exception as exc:
                    logger.error(f"[{self.name}] Agent {agent.name} generated an exception: {exc}")
""",
}


def install(folder: Path) -> Path:
    """Write the stand-in package under ``folder`` (put that folder on ``sys.path``)."""
    for name, source in FILES.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source.lstrip("\n"), encoding="utf-8")
    return folder
