"""The commands of ``python -m pytest_propositions`` (cache, store, rejudge, diff, calibrate)."""
