"""Where verdicts are kept: the project's folder for them, the key, the cache record, the disk
cache, the shared PostgreSQL tier."""
