"""Where verdicts are kept: the key, the cache record, the disk cache, the shared PostgreSQL tier."""
