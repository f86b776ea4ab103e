"""The state of one run: settings, the judge and cache built on first need, and what was judged.

Inside pytest the plugin activates a runtime built from the session's options; outside pytest
the first claim builds one from environment variables.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from .settings import Settings, from_environment

if TYPE_CHECKING:
    from .cache import VerdictCache
    from .judge import Judge
    from .verdict import Verdict


@dataclass(frozen=True)
class Outcome:
    """One evaluated claim of a test, as the reports need it."""

    test_id: str | None
    verdict: Verdict
    threshold: int | None
    passed: bool


@dataclass
class Runtime:
    settings: Settings
    cache_dir: Path | None = None
    current_test: str | None = None
    outcomes: list[Outcome] = field(default_factory=list)
    judge_errors: list[tuple[str | None, str]] = field(default_factory=list)
    # Why this run may not have used every verdict it needs; prune trusts complete runs only.
    partial_reasons: set[str] = field(default_factory=set)
    _merged_keys: set[str] = field(default_factory=set, repr=False)
    _judge: Judge | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def judge(self) -> Judge:
        """The judge, built on first use so that an unused plugin imports nothing heavy."""
        with self._lock:
            if self._judge is None:
                from .judge import Judge

                self._judge = Judge(self.settings, self._open_cache())
            return self._judge

    @property
    def cache(self) -> VerdictCache | None:
        return self.judge.cache if self._judge is not None else None

    def _open_cache(self) -> VerdictCache | None:
        if self.settings.cache == "off" or self.cache_dir is None:
            return None
        from .cache import VerdictCache

        return VerdictCache(self.cache_dir, self.settings.cache)  # type: ignore[arg-type]

    def note(self, verdict: Verdict, threshold: int | None, passed: bool) -> None:
        with self._lock:
            self.outcomes.append(Outcome(self.current_test, verdict, threshold, passed))

    def note_error(self, error: BaseException) -> None:
        with self._lock:
            self.judge_errors.append((self.current_test, f"{type(error).__name__}: {error}"))

    @property
    def used(self) -> bool:
        """Whether any claim was evaluated in this run (the summary stays silent otherwise)."""
        return self._judge is not None or bool(self.outcomes or self.judge_errors)

    def outcomes_of(self, test_id: str) -> list[Outcome]:
        with self._lock:
            return [outcome for outcome in self.outcomes if outcome.test_id == test_id]

    def used_keys(self) -> set[str]:
        """Cache keys this process (and, on an xdist controller, its workers) read or stored."""
        cache = self.cache
        own = set(cache.used_keys) if cache is not None else set()
        return own | self._merged_keys

    def merge_used_keys(self, keys: Iterable[str]) -> None:
        with self._lock:
            self._merged_keys.update(keys)

    def record_complete_run(self) -> bool:
        """Remember the keys of a complete run, so that `cache prune` knows what is still used."""
        if (
            self.partial_reasons
            or self.settings.cache in ("off", "replay")
            or self.cache_dir is None
        ):
            return False
        keys = self.used_keys()
        if not keys and not self.used:
            return False
        from .cache import VerdictCache

        cache = self.cache or VerdictCache(self.cache_dir, self.settings.cache)  # type: ignore[arg-type]
        cache.record_complete_run(keys)
        if cache is not self.cache:
            cache.close()
        return True

    def close(self) -> None:
        with self._lock:
            judge, self._judge = self._judge, None
        if judge is not None:
            judge.close()


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


def current() -> Runtime:
    """The pytest session's runtime, or one built from the environment outside pytest."""
    global _fallback
    with _active_lock:
        if _active:
            return _active[-1]
        if _fallback is None:
            settings = from_environment()
            _fallback = Runtime(settings, Path(settings.cache_dir) if settings.cache_dir else None)
        return _fallback
