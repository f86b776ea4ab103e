"""Judging one request: the judge, its event loop, prompts, parsing, families and transports."""
