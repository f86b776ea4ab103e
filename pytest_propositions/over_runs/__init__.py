"""Claims over many runs: the `runs(...)` target, its rule, one decider per rule, the scheduler
that simulates and judges runs, the decided result, and the statistics."""
