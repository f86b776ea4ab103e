"""The score scale, in a module of its own so that settings and the plugin can name it cheaply.

It is also the one home of a score mapped to [0, 1] and back (the statistics of claims over runs
work in [0, 1]): code elsewhere calls ``score_to_unit`` and ``unit_to_score`` rather than divide
by the top of the scale, so a scale that does not start at 0 would be honoured everywhere.
"""

MIN_SCORE = 0
MAX_SCORE = 9


def score_to_unit(score: float, *, difference: bool = False) -> float:
    """A score on MIN_SCORE..MAX_SCORE as a fraction of the scale: MIN_SCORE is 0, MAX_SCORE 1.
    ``difference``: ``score`` is a difference of scores (a margin), not a point on the scale,
    so it is only scaled, not shifted."""
    shifted = score if difference else score - MIN_SCORE
    return shifted / (MAX_SCORE - MIN_SCORE)


def unit_to_score(unit: float, *, difference: bool = False) -> float:
    """The inverse of ``score_to_unit``: a fraction of the scale as a score (or, with
    ``difference``, as a difference of scores)."""
    scaled = unit * (MAX_SCORE - MIN_SCORE)
    return scaled if difference else MIN_SCORE + scaled
