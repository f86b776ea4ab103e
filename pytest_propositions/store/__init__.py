"""Where verdicts are kept: the disk cache, the shared PostgreSQL store, recorded requests."""
