"""Judging one request: the judge, its event loop, prompts, replies, families and transports."""
