"""The state of one run: what judges (settings, the judge and cache built on first need) and,
in ``record``, what the run records (``record.py``: outcomes, judge errors, workers' results).

``current()`` is the one way fixtures and the Python API reach it: inside pytest the plugin
activates a runtime built from the session's options (hooks read the same object from the
config's stash); outside pytest the first claim builds one from environment variables, caching
verdicts in the user's cache folder unless ``PROP_CACHE_DIR`` or ``PROP_CACHE`` say otherwise.
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from .checks import closest_name, warn_at_caller
from .record import Outcome, RunRecord, stat_names
from .settings import KEY_VARIABLES, OPTIONS, Settings, cache_mode, from_environment, user_cache_dir

if TYPE_CHECKING:
    from .judging.endpoint import Connection
    from .judging.judge import Judge, JudgeStats
    from .judging.progress import ProgressLine
    from .store.base import VerdictStore
    from .verdict import Verdict

__all__ = ["Outcome", "Runtime", "activate", "active", "connector", "current", "deactivate"]


class Expected(Protocol):
    """What the record keeps of a claim's expectation (``claims.expectation.Expectation``,
    a wing above this module, is one)."""

    @property
    def threshold(self) -> int | None: ...

    @property
    def holds(self) -> bool: ...


class Runtime:
    """What judges in a run: its settings, the judge and cache (built on first need), the test
    being run; and ``record``, what the run records. (Mutable state, not a value: a plain class,
    which costs nothing to define at start-up.)"""

    def __init__(self, settings: Settings, cache_dir: Path | None = None) -> None:
        self.settings = settings
        self.cache_dir = cache_dir
        self.current_test: str | None = None
        # The project's folders (pytest's rootdir, the folder pytest ran from): a claim called
        # from code outside them, or from an installed package inside them, was made by a
        # library, not by the test. Empty: not known (outside pytest).
        self.project_folders: tuple[Path, ...] = ()
        # Builds the progress line (set by the plugin; None: no line, as with -qq). Called at
        # the first need: a live call, or an xdist controller's relay; see ``progress``.
        self.progress_factory: Callable[[], ProgressLine] | None = None
        self._progress: ProgressLine | None = None
        self._progress_lock = threading.Lock()
        # On an xdist controller: the folder where workers say what they are judging.
        self.progress_dir: Path | None = None
        # Asks the pytest_proposition_render_target hook; set by the plugin, read by
        # claims/targets.py.
        self.render_hook: Callable[[Any, Any], str | None] | None = None
        # Called once, at the first claim evaluated or noted: the plugin's per-test reporting
        # hooks start then, so a suite without claims does not pay for them on every test.
        self.on_first_claim: Callable[[], None] | None = None
        # Set by the plugin: told of each claim made in async code (a coroutine; see
        # claims/awaiting.py), so that its test fails if it is never awaited.
        self.on_awaitable: Callable[[Any], None] | None = None
        self.record = RunRecord()
        self._judge: Judge | None = None
        self._claimed = False
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"Runtime(settings={self.settings!r}, cache_dir={self.cache_dir!r})"

    @property
    def judge(self) -> Judge:
        """The judge, built on first use so that an unused plugin imports nothing heavy."""
        judge = self._judge
        if judge is not None and self._claimed:
            return judge  # every claim after the first (set once, under the lock)
        self._first_claim()
        with self._lock:
            if self._judge is None:
                from .judging.judge import Judge

                self._judge = Judge(
                    self.settings, self._open_cache(), connect=connector(self.settings)
                )
                self._judge.progress = lambda: self.progress
            return self._judge

    @property
    def progress(self) -> ProgressLine | None:
        """The line shown while claims are judged live, built when first needed: a run that
        judges nothing live (every verdict cached, or no claim) never imports it."""
        with self._progress_lock:
            if self._progress is None and self.progress_factory is not None:
                self._progress, self.progress_factory = self.progress_factory(), None
            return self._progress

    @property
    def cache(self) -> VerdictStore | None:
        return self.judge.cache if self._judge is not None else None

    def _open_cache(self) -> VerdictStore | None:
        if not cache_mode(self.settings.cache).uses_cache or self.cache_dir is None:
            return None
        if self.settings.store:
            from .store.shared import open_shared_store
            from .store.tiered import SharedVerdictCache

            store = open_shared_store(
                self.settings.store, query_timeout=self.settings.store_timeout
            )
            return SharedVerdictCache(
                self.cache_dir,
                self.settings.cache,  # type: ignore[arg-type]
                store=store,
            )
        from .store.cache import VerdictCache

        return VerdictCache(self.cache_dir, self.settings.cache)  # type: ignore[arg-type]

    def _first_claim(self) -> None:
        """Tell the plugin, once, that claims are being made (``on_first_claim``)."""
        if self._claimed:
            return
        with self._lock:
            first, self._claimed = not self._claimed, True
        if first and self.on_first_claim is not None:
            self.on_first_claim()

    # -- filing what was judged in the record, under the test being run -------------------------

    def note(
        self,
        verdict: Verdict,
        expectation: Expected,
        passed: bool,
        where: str | None = None,
        runs: dict[str, Any] | None = None,
        escalated_from: Verdict | None = None,
    ) -> None:
        """File an asserted claim's outcome (what it was expected to do, whether it did) under
        the test being run."""
        self._first_claim()
        test_id, threshold, holds = self.current_test, expectation.threshold, expectation.holds
        self.record.add(
            Outcome(test_id, verdict, threshold, passed, holds, where, runs, escalated_from)
        )

    def note_call(
        self,
        verdict: Verdict,
        call: str,
        where: str | None,
        made_in: str,
        made_by: str | None = None,
    ) -> None:
        """File a verdict reached by a call of the reference library's API (``call`` names it)
        under ``made_in``, the test running when the call began (the caller notes nothing
        outside a test). A call from a thread its test left running may end after that test:
        it is filed under it all the same, never under the test running then, and marked as
        judged after it. ``made_by``: the library module that made the call, when the test's
        own code did not.

        Not asserted: upheld is a check judged True, or a score of at least the run's minimum
        score; either way it fails nothing (``assert not check_proposition(...)`` is legitimate).
        """
        from .verdict import CHECK, passes_bar

        threshold = None if verdict.kind == CHECK else self.settings.min_score
        upheld = passes_bar(verdict.kind, verdict.value, threshold)
        self._first_claim()
        after = made_in != self.current_test
        self.record.add(
            Outcome(
                made_in,
                verdict,
                threshold,
                upheld,
                where=where,
                by_call=call,
                after_its_test=after,
                made_by=made_by,
            )
        )

    def note_error(
        self, error: BaseException, made_in: str | None = None, claim: str | None = None
    ) -> None:
        """File a judge's error under the test being run, or ``made_in`` (see ``note``), with the
        claim it was about."""
        self._first_claim()
        self.record.add_error(self.current_test if made_in is None else made_in, error, claim)

    def remember_context(self, key: str, messages: Any) -> None:
        """Keep what the judge was shown, for an HTML report; nothing when none is written."""
        self.record.remember_context(key, messages, wanted=bool(self.settings.html))

    # -- the run as a whole: this process's judge and cache, plus the record's merged parts ----

    @property
    def used(self) -> bool:
        """Whether any claim was evaluated in this run (the summary stays silent otherwise)."""
        record = self.record
        return (
            self._judge is not None
            or record.workers_used
            or bool(record.outcomes or record.judge_errors)
        )

    def used_keys(self) -> set[str]:
        """Cache keys this process (and, on an xdist controller, its workers) read or stored."""
        cache = self.cache
        own = set(cache.used_keys) if cache is not None else set()
        return own | self.record.merged_keys

    def stats(self) -> JudgeStats:
        """This run's counters: this process's judge plus, on an xdist controller, its workers'.

        A snapshot, so the summary and the JSON report agree; it never builds the judge.
        """
        from .judging.judge import JudgeStats

        names = stat_names()
        own: dict[str, float] = {}
        if self._judge is not None:
            judge_stats = self._judge.stats
            with judge_stats.lock:
                own = {name: getattr(judge_stats, name) for name in names}
        merged = JudgeStats()
        for name in names:
            value = own.get(name, 0) + self.record.merged_stat(name)
            setattr(merged, name, type(getattr(merged, name))(value))
        return merged

    def store_counts(self) -> dict[str, int]:
        """The shared store's counts (store/tiered.py): this process's cache plus its workers'."""
        counts = dict(self.record.merged_store)
        cache = self._judge.cache if self._judge is not None else None
        if cache is not None:
            for name, value in cache.store_counts().items():
                counts[name] = counts.get(name, 0) + value
        return counts

    def record_usage(self) -> bool:
        """Tell the cache which verdicts this finished run used: `cache prune` keeps those."""
        if (
            self.record.usage_lost
            or not cache_mode(self.settings.cache).writes
            or self.cache_dir is None
        ):
            return False
        keys = self.used_keys()
        if not keys and not self.used:
            return False
        from .store.cache import VerdictCache

        # "is None", not "or": a cache's truth is its length, which opens the database.
        own = self.cache
        cache = own if own is not None else VerdictCache(self.cache_dir, self.settings.cache)  # type: ignore[arg-type]
        cache.record_usage(keys, self.record.started_at)
        if cache is not own:
            cache.close()
        return True

    def close(self) -> None:
        with self._lock:
            judge, self._judge = self._judge, None
        if judge is not None:
            judge.close()
        if self._progress is not None:
            self._progress.close()
        if self.progress_dir is not None:
            shutil.rmtree(self.progress_dir, ignore_errors=True)
            self.progress_dir = None


def connector(settings: Settings) -> Callable[[str], Connection]:
    """How a run's judge reaches a model: the managed local engine for 'local' (started on the
    first cache miss), else the provider's endpoint. The judge never chooses the engine itself.

    The one place the core names the ``local`` wing, imported on first use; the rest of the core
    knows it as a ``judging.local_judge.LocalJudge`` (tests/test_architecture.py holds this)."""

    def connect(model: str) -> Connection:
        if model == "local":
            from .local.engine import local_connection

            return local_connection(settings)
        from .judging.judge import hosted_for

        # The referee's and the escalation model's own servers, when given, else the main one.
        return hosted_for(settings, model)

    return connect


# A stack, so that a pytest run nested inside another (pytester) restores the outer one's runtime.
_active: list[Runtime] = []
_fallback: Runtime | None = None
_active_lock = threading.Lock()


def activate(runtime: Runtime) -> None:
    with _active_lock:
        _active.append(runtime)


def deactivate(runtime: Runtime) -> None:
    with _active_lock:
        if runtime in _active:
            _active.remove(runtime)


def active() -> Runtime | None:
    """The pytest session's runtime when one is active; never builds one (unlike ``current``)."""
    with _active_lock:
        return _active[-1] if _active else None


def misspelt_variables(env: Mapping[str, str]) -> list[str]:
    """Each ``PROP_`` variable set in ``env`` that is none of the plugin's but nearly one
    (``PROP_MODLE``), with the name meant; never its value (it may be a key). Other tools use
    ``PROP_`` names too, so a name like none of ours is not told."""
    known = [option.env for option in OPTIONS] + list(KEY_VARIABLES)
    # Compared without the prefix every name shares, which would make any two look alike.
    stems = [name.removeprefix("PROP_") for name in known]
    found = []
    for name in sorted(name for name in env if name.startswith("PROP_") and name not in known):
        close = closest_name(name.removeprefix("PROP_").upper(), stems)
        if close is not None:
            found.append(
                f"the environment variable {name} is no variable of pytest-propositions "
                f"(did you mean PROP_{close}?); it is ignored"
            )
    return found


def current() -> Runtime:
    """The pytest session's runtime, or one built from the environment outside pytest."""
    global _fallback
    with _active_lock:
        if _active:
            return _active[-1]
        if _fallback is None:
            for line in misspelt_variables(os.environ):
                warn_at_caller(f"pytest-propositions: {line}", UserWarning)
            settings = from_environment()
            # Scripts and notebooks cache like test runs do: PROP_CACHE_DIR, else the user's
            # cache folder (PROP_CACHE=off turns it off).
            folder = Path(settings.cache_dir).expanduser() if settings.cache_dir else None
            _fallback = Runtime(settings, folder or user_cache_dir())
        return _fallback
