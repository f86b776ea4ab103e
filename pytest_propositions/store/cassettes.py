"""pytest-recording's cassettes under ``--prop-cache=replay``: read, never recorded to.

A replayed run must reach no model, the simulation's included: a test marked
``@pytest.mark.vcr`` whose cassette or interaction is missing fails instead of calling the
endpoint live. pytest-recording reads ``record_mode`` from ``--record-mode``, the user's
``vcr_config`` and the marker; under replay each is overruled here, before each cassette is
used. Registered only when pytest-recording is installed and the cache mode is replay.
"""

from __future__ import annotations

from typing import Any

import pytest

__all__ = ["ReplayCassettes", "check_record_mode", "replay_cassettes"]

READ_ONLY = "none"


def replay_cassettes(config: pytest.Config) -> None:
    """pytest-recording's cassettes made read only too (the simulation's calls replay); called
    only when it is installed and the cache mode reaches no model (``cache_mode``)."""
    check_record_mode(config)
    config.pluginmanager.register(ReplayCassettes(), "propositions-replay-cassettes")


def check_record_mode(config: pytest.Config) -> None:
    """A ``--record-mode`` that records contradicts ``--prop-cache=replay``: say so at once."""
    chosen = config.getoption("record_mode", None)
    if chosen not in (None, READ_ONLY):
        raise pytest.UsageError(
            f"--record-mode={chosen} records cassettes, but --prop-cache=replay reads only: "
            f"drop --record-mode (or pass --record-mode={READ_ONLY}) to replay, or record with "
            "--prop-cache=use"
        )


class ReplayCassettes:
    """pytest-recording's hook: every cassette of the run opens in record mode ``none``."""

    @pytest.hookimpl(optionalhook=True)
    def pytest_recording_configure(self, config: pytest.Config, vcr: Any) -> None:
        vcr.record_mode = READ_ONLY
        merged = vcr.get_merged_config

        def read_only(**kwargs: Any) -> Any:
            # The cassette's own arguments (vcr_config, the marker) win over the instance's.
            settings = merged(**kwargs)
            settings["record_mode"] = type(settings["record_mode"])(READ_ONLY)
            return settings

        vcr.get_merged_config = read_only
