"""Claims: the `Proposition` and what every claim is made of (its options, its expectation, how
its judge is asked, its text), the targets it is about and their text, library trajectories."""
