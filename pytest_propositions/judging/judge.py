"""Turning a claim's request into a verdict: the orchestration, from the cache when it can.

A request (request.py) is keyed and looked up; a miss (unless replay, dry run or the budget
forbids it) is judged live (live.py: the transport asks the model, the reply is parsed, a double
check asks it to reconsider) on the judge's event loop, and the verdict is recorded. Identical
requests in flight at once share one call; the counts for the summary are kept here.

A run whose verdicts are all recorded never imports live.py, the transports, the event loop or
the recorded requests: those four imports stay inside the functions that go live (a guard that
tests/test_cache_plugin.py holds); live.py imports nothing of this module.
"""

from __future__ import annotations

import logging
import os
import threading
import warnings
from collections.abc import Callable
from concurrent.futures import Future
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from ..checks import quote_claim
from ..errors import (
    BudgetExceeded,
    CacheUnusable,
    DryRunSkip,
    JudgeUnavailable,
    SamplesWarning,
    VerdictMissing,
)
from ..redaction import remember_secrets
from ..settings import cache_mode
from ..store.cache import CacheDirectoryError, CacheWarning
from ..store.cache_record import verdict_of_record
from ..store.key_material import KeyMaterial
from ..store.keys import KeyFrame
from ..verdict import Verdict
from . import families
from .endpoint import OWN_KEY_VARIABLE, Connection, credentials, hosted_connection
from .prompts import PROMPT_VERSION, Message
from .request import JudgeRequest, JudgeStats

if TYPE_CHECKING:
    from ..settings import Settings
    from ..store.base import VerdictStore
    from ..verdict import Kind
    from .families import Profile
    from .progress import ProgressLine
    from .transport import Transport

__all__ = ["Judge", "JudgeRequest", "JudgeStats", "hosted_for"]

logger = logging.getLogger("pytest_propositions")

_T = TypeVar("_T")


def _cache_step(step: Callable[..., _T], *args: Any) -> _T:
    """A cache operation on the judge's path; a directory that cannot be used is a judge error."""
    try:
        return step(*args)
    except CacheDirectoryError as error:
        raise CacheUnusable(
            f"{error}; nothing was judged. Fix the folder, or choose another with "
            "--prop-cache-dir (or --prop-cache=off)"
        ) from None


class Judge:
    """Turns judge requests into verdicts, from the cache when it can, from the model when not."""

    def __init__(
        self,
        settings: Settings,
        cache: VerdictStore | None = None,
        connect: Callable[[str], Connection] | None = None,
        sleep: Callable[[float], object] | None = None,
    ) -> None:
        self.settings = settings
        self.cache = cache
        self.stats = JudgeStats()
        self._connect = connect or self._default_connection
        self._connections: dict[str, Connection] = {}
        self._effort_ignored: set[str] = set()
        self._same_samples_warned: set[str] = set()
        self._in_flight: dict[str, Future[Verdict]] = {}
        self._sleep = sleep
        self._transport: Transport | None = None
        self._profiles: dict[str, Profile] = {}
        self._frames: dict[tuple[Any, ...], tuple[KeyMaterial, KeyFrame | None]] = {}
        self._lock = threading.Lock()
        # Asked at each live call for the line told when live judging starts (returns a token)
        # and ends, which the plugin shows; a supplier, so a cached run never builds one.
        self.progress: Callable[[], ProgressLine | None] | None = None

    @property
    def transport(self) -> Transport:
        """Talks to the models: response modes, retries, calls in flight (``sleep``: the
        backoff). Built at the first live call: a run served from the cache never imports it."""
        with self._lock:
            if self._transport is None:
                from .transport import Transport

                self._transport = Transport(self.settings, self.profile, self._sleep)
            return self._transport

    def profile(self, connection: Connection) -> Profile:
        """The model's profile, resolved once per model: what the judge sends it (the key
        records it), how its replies are read, and which path its calls take."""
        model = connection.litellm_model
        with self._lock:
            profile = self._profiles.get(model)
        if profile is None:
            profile = connection.profile(self.settings.transport)
            with self._lock:
                profile = self._profiles.setdefault(model, profile)
        return profile

    # -- public -----------------------------------------------------------------------------

    def evaluate(self, request: JudgeRequest) -> Verdict:
        """A verdict for the request: cached if recorded, else judged live and then stored."""
        connection = self._connection(request.model)
        framed, frame = self._framed(request, connection)
        key = None if frame is None else frame.key(request.messages)
        material: KeyMaterial | None = None
        if key is None:  # messages the frame does not take: the whole is encoded
            material = framed.with_messages(request.messages)
            key = material.key
        if self.cache is not None:
            record = _cache_step(self.cache.get, key, request.kind)
            verdict = self._from_record(record, key, request.kind) if record is not None else None
            if verdict is not None:
                with self.stats.lock:
                    self.stats.verdicts += 1
                    self.stats.cache_hits += 1
                return verdict
        if material is None:  # a miss: what is asked and stored
            material = framed.with_messages(request.messages)
        if self.cache is not None and not cache_mode(self.cache.mode).judges:
            from ..store.replay_miss import explain_miss

            nearest = explain_miss(self.cache, material, request.claim, request.test_id)
            raise VerdictMissing(
                f"no recorded verdict for claim {quote_claim(request.claim)}"
                + (f" in {request.test_id}" if request.test_id else "")
                + f" (key {key[:16]}); --prop-cache=replay never calls the judge: record it "
                "with --prop-cache=use, or import an export with "
                "'python -m pytest_propositions cache import'." + nearest,
                key=key,
                claim=request.claim,
                test_id=request.test_id,
            )
        if self.settings.dry_run:
            tokens, cost = self._estimate(request, connection)
            with self.stats.lock:
                self.stats.dry_run_misses += 1
                self.stats.dry_run_prompt_tokens += tokens
                if cost is None:
                    self.stats.dry_run_unpriced += 1
                else:
                    self.stats.dry_run_cost_usd += cost
            raise DryRunSkip(f"claim {quote_claim(request.claim)} has no cached verdict")
        if self.settings.max_cost is not None:
            self._within_budget(request, connection, self.settings.max_cost)
        # Identical requests in flight at once (soft claims, xdist-free threads) share one call.
        with self._lock:
            shared = self._in_flight.get(key)
            if shared is None:
                owned: Future[Verdict] = Future()
                self._in_flight[key] = owned
        if shared is not None:
            verdict = shared.result()
            with self.stats.lock:
                self.stats.verdicts += 1
                self.stats.coalesced += 1
            return verdict
        progress = self.progress() if self.progress is not None else None
        token = progress.started() if progress is not None else None
        try:
            if self.cache is not None:
                # Before paying for a verdict: a cache that cannot store it is an error now.
                _cache_step(self.cache.prepare_write)
            from .judge_loop import run_on_judge_loop
            from .live import judge_live
            from .transport import reporting_attempts

            # The path's imports here, not on the shared loop where they would stall calls.
            self.transport.prepare(connection)
            news = None if progress is None or token is None else partial(progress.note, token)
            verdict, record = run_on_judge_loop(
                reporting_attempts(
                    judge_live(self.transport, self.stats, request, connection, key, material),
                    news,
                )
            )
            if self.cache is not None:
                standing = self.cache.put(key, record)
                if standing is not record:
                    # A shared store already held a verdict for this request (another machine
                    # judged it at the same moment): the first one stored is everyone's verdict.
                    stored = self._from_record(dict(standing), key, request.kind)
                    if stored is None:
                        raise CacheUnusable(
                            f"the shared verdict {key[:16]} cannot be read by this version, "
                            "and another verdict would make machines disagree: upgrade"
                        )
                    verdict = stored
        except BaseException as error:
            owned.set_exception(error)
            raise
        else:
            owned.set_result(verdict)
        finally:
            with self._lock:
                del self._in_flight[key]
            if progress is not None and token is not None:
                progress.finished(token)
        return verdict

    def _estimate(self, request: JudgeRequest, connection: Connection) -> tuple[int, float | None]:
        """The request's estimated prompt tokens and cost (None: the model has no price in the
        table), every turn of it (the double check's resends the chat)."""
        from .size import request_size

        # Its window is not asked for: a managed server's would look for its model file.
        size = request_size(request.messages, self.profile(connection))
        turns = request.turns.count
        return size.tokens * turns, None if size.cost is None else size.cost * turns

    def _within_budget(self, request: JudgeRequest, connection: Connection, budget: float) -> None:
        """--prop-max-cost, before paying: what was spent, and what this request would add."""
        spent = self.stats.cost_usd
        claim = quote_claim(request.claim)
        if spent > budget:
            raise BudgetExceeded(
                f"the run's judged cost ${spent:.4f} passed --prop-max-cost ${budget:.4f}; claim "
                f"{claim} was not judged (cached verdicts are still served)"
            )
        tokens, cost = self._estimate(request, connection)
        if cost is not None and spent + cost > budget:
            raise BudgetExceeded(
                f"claim {claim} was not judged: its estimated cost ${cost:.4f} (about {tokens:,} "
                f"prompt tokens to {connection.identity}) would take the run's judged cost "
                f"${spent:.4f} past --prop-max-cost ${budget:.4f}; nothing was sent (cached "
                "verdicts are still served)"
            )

    def follow_up(self, model: str, messages: list[Message]) -> str:
        """A free-text answer on a preserved chat (recommendations); never cached."""
        if self.cache is not None and not cache_mode(self.cache.mode).judges:
            raise VerdictMissing(
                "a follow-up question needs a live judge, and --prop-cache=replay never calls one"
            )
        from .judge_loop import run_on_judge_loop
        from .live import follow_up

        connection = self._connection(model)
        self.transport.prepare(connection)
        try:
            sampling = _with_engine_sampling(
                self.profile(connection).follow_up_sampling(self.settings.reasoning_effort),
                connection,
            )
        except families.UnsupportedEffort as error:
            raise JudgeUnavailable(f"{error}; choose another level or unset it") from None
        return run_on_judge_loop(follow_up(self.transport, connection, messages, sampling))

    def identity(self, model: str) -> str:
        """What this judge's cache keys name for ``model`` (for 'local', the model file's hash)."""
        return self._connection(model).identity

    def close(self) -> None:
        """Release the cache and the HTTP client, and stop a local judge server if this run
        started one."""
        if self.cache is not None:
            self.cache.close()
        if self._transport is not None and self._transport.open:
            from .judge_loop import run_on_judge_loop

            run_on_judge_loop(self._transport.aclose())
        for connection in self._connections.values():
            if connection.close is not None:
                connection.close()

    # -- connection and key --------------------------------------------------------------------

    def _connection(self, model: str) -> Connection:
        connection = self._connections.get(model)  # set once per model, under the lock
        if connection is None:
            connection = self._connect(model)
            # Known before anything of a claim is stored or shown (its request, its claim, a
            # traceback's locals), not from the first call on: a replay makes none, and a trace
            # that quotes the key must be redacted of it all the same.
            remember_secrets(
                *credentials(connection.api_key, connection.api_base, connection.litellm_model)
            )
            with self._lock:
                self._connections[model] = connection
        return connection

    def _default_connection(self, model: str) -> Connection:
        """A provider's endpoint (or the server at --prop-api-base). The judge does not choose an
        engine: a managed one (the local judge) comes in as ``connect`` (``runtime.connector``)."""
        if model == "local":
            raise JudgeUnavailable(
                "the local judge's connection is provided by the run (runtime.connector); "
                "this Judge was built without one"
            )
        return hosted_for(self.settings, model)

    def _framed(
        self, request: JudgeRequest, connection: Connection
    ) -> tuple[KeyMaterial, KeyFrame | None]:
        """The request's key material without its messages, and its key frame: the same for
        every claim of a kind to one model, so made once (the sampling is decided by the
        model's name alone, and said once)."""
        memo = (
            connection.identity,
            connection.litellm_model,
            request.kind,
            request.double_check,
            request.sample_index,
            request.run_index,
        )
        found = self._frames.get(memo)
        if found is None:
            material = self._key_material(request, connection).with_messages(())
            found = (material, material.key_frame())
            with self._lock:
                found = self._frames.setdefault(memo, found)
        return found

    def _key_material(self, request: JudgeRequest, connection: Connection) -> KeyMaterial:
        sampling = self._sampling(request, connection)
        return KeyMaterial(
            model=connection.identity,
            prompt_version=PROMPT_VERSION,
            kind=request.kind,
            sampling=sampling,
            messages=tuple(request.messages),
            double_check=request.double_check,
            sample_index=request.sample_index,
            # A judge that always gives the same answer to the same request has no randomness
            # for runs to draw afresh: equal transcripts share its verdict, and pay for it once.
            run_index=0 if _deterministic(sampling) else request.run_index,
        )

    def _sampling(self, request: JudgeRequest, connection: Connection) -> dict[str, Any]:
        """What is sent and what the key records: one decision, from the model's name alone."""
        effort = self.settings.reasoning_effort
        model = connection.litellm_model
        profile = self.profile(connection)
        if profile.effort_ignored(effort):
            with self._lock:
                first = model not in self._effort_ignored
                self._effort_ignored.add(model)
            if first:
                logger.warning(
                    "--prop-reasoning-effort=%s is not sent to %s: its model family takes no "
                    "reasoning effort",
                    effort,
                    connection.identity,
                )
        try:
            sampling = _with_engine_sampling(profile.sampling(request.kind, effort), connection)
        except families.UnsupportedEffort as error:
            raise JudgeUnavailable(f"{error}; choose another level or unset it") from None
        if request.sample_index > 0 and _deterministic(sampling):
            self._warn_same_samples(connection.identity)
        return sampling

    def _warn_same_samples(self, identity: str) -> None:
        with self._lock:
            first = identity not in self._same_samples_warned
            self._same_samples_warned.add(identity)
        if first:
            warnings.warn(
                f"samples > 1 asks {identity} the same request several times, but it decodes "
                "greedily with a fixed seed (temperature 0): every sample gets the same answer, "
                "so the vote adds calls and no evidence. Use samples=1 with this judge, or a "
                "judge that samples.",
                SamplesWarning,
                stacklevel=2,
            )

    # -- cached records ------------------------------------------------------------------------

    def _from_record(self, record: dict[str, Any], key: str, kind: Kind) -> Verdict | None:
        """The stored verdict; None (a miss, with a warning) if the record cannot be read as a
        verdict of the request's kind."""
        try:
            return verdict_of_record(record, kind, key=key)
        except ValueError as error:
            warnings.warn(
                f"the cached record {key[:16]} is not a verdict this version can read ({error}); "
                "treating it as a miss",
                CacheWarning,
                stacklevel=2,
            )
            return None


def hosted_for(settings: Settings, model: str) -> Connection:
    """A hosted model's connection: the referee's or the escalation model's own server (and
    key, when one is given) for that model, else --prop-api-base with the main judge's key."""
    own = (
        (settings.referee_model, settings.referee_api_base, OWN_KEY_VARIABLE["referee"]),
        (settings.escalate_to, settings.escalate_api_base, OWN_KEY_VARIABLE["escalation"]),
    )
    for name, base, key_variable in own:
        if model == name and base:
            return hosted_connection(
                model,
                base,
                api_version=settings.api_version,
                api_key=os.environ.get(key_variable) or None,
            )
    return hosted_connection(
        model, settings.api_base, api_version=settings.api_version, key_env=settings.api_key_env
    )


def _with_engine_sampling(sampling: dict[str, Any], connection: Connection) -> dict[str, Any]:
    """The family's sampling, overridden by what the endpoint's engine requires (the local judge:
    temperature 0 and a fixed seed, for deterministic verdicts); sent and keyed as one."""
    return {**sampling, **(connection.sampling or {})}


def _deterministic(sampling: dict[str, Any]) -> bool:
    """Greedy decoding with a fixed seed: the same request always gets the same answer."""
    return sampling.get("temperature") == 0 and sampling.get("seed") is not None
