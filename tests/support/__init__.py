"""Test helpers shared by the suite: the scripted judge server lives in ``judge_server``."""
