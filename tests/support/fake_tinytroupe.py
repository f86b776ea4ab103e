"""A stand-in ``tinytroupe`` package, written to a folder for an inner pytest run: the module
paths, class and attribute names and call shapes of TinyTroupe's own uses of its Proposition, as
its source has them (read, not copied; the claims' wording here is ours).

- ``tinytroupe.experimentation.proposition.Proposition``: the constructor's arguments in
  TinyTroupe's order, ``copy()``, ``__call__`` going through ``check``, and ``check``/``score``
  taking ``target``, ``additional_context``, ``claim_variables``, ``return_full_response``.
  TinyTroupe's own judge needs a key and the network: here it raises, so a test shows that a
  routed claim never reaches it. ``tinytroupe.experimentation`` re-exports the class.
- ``tinytroupe.validation.propositions``: ready-made propositions, instances made at import
  (``persona_adherence``, the per-action ones with ``{{action}}``, ``first_n=5, last_n=10`` and a
  precondition on the action's type, ``task_completion`` with ``{{task_description}}``).
- ``tinytroupe.steering.intervention.Intervention``: ``set_textual_precondition(text)`` makes a
  ``Proposition(claim=..., target=self.targets, first_n=..., last_n=...)`` and calls its
  ``check()`` in ``check_precondition()``; ``execute()`` applies the effect when it holds.
- ``tinytroupe.agent.action_generator.ActionGenerator``: copies of the per-action propositions
  made in its constructor, judged in ``_check_proposition(agent, proposition, tentative_action)``
  by ``score(target=agent, claim_variables={"action": ...}, return_full_response=True)`` against
  ``quality_threshold``.
- ``tinytroupe.config_manager``: ``update(key, value)`` and ``get(key)`` of the settings its
  client reads at each call (``waiting_time``, ``max_attempts``), with ``config.ini``'s defaults.
- ``tinytroupe.agent.TinyPerson`` and ``tinytroupe.environment.TinyWorld``: the objects of
  tests/support/tinytroupe_like.py, with the ``actions_count`` the action generator reads.
  ``TinyWorld.run(steps)`` steps as TinyTroupe's ``_step_in_parallel`` does: each agent's
  ``act(return_actions=True)`` in a thread of a pool, an agent's exception logged on the
  ``tinytroupe`` logger and the step carried on; ``act()`` with no action checks the agent's
  tentative TALK with the action generator first, as TinyTroupe does with quality checks on.
"""

from __future__ import annotations

from pathlib import Path

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
OWN_JUDGE = "{OWN_JUDGE}"


class Proposition:
    MIN_SCORE = 0
    MAX_SCORE = 9

    def __init__(
        self,
        claim,
        target=None,
        include_personas=False,
        first_n=None,
        last_n=None,
        double_check=False,
        use_reasoning_model=False,
        precondition_function=None,
    ):
        self.claim = claim
        self.targets = None if target is None else (target if isinstance(target, list) else [target])
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

    def copy(self):
        return Proposition(
            claim=self.claim,
            target=self.targets,
            include_personas=self.include_personas,
            first_n=self.first_n,
            last_n=self.last_n,
            double_check=self.double_check,
            use_reasoning_model=self.use_reasoning_model,
            precondition_function=self.precondition_function,
        )

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
from tinytroupe.experimentation import Proposition


def _only_for(action_types):
    def precondition(target, additional_context, claim_variables):
        actions = claim_variables.get("action")
        if not isinstance(actions, list):
            actions = [actions]
        for action in actions:
            return action.get("type") in action_types

    return precondition


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
