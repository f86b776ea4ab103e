"""The score scale, in a module of its own so that settings and the plugin can name it cheaply."""

MIN_SCORE = 0
MAX_SCORE = 9
