"""Claims: the `Proposition`, the targets it is about and their text, library trajectories."""
