"""Claims over many runs: the `runs(...)` target, its decision, and its statistics."""
