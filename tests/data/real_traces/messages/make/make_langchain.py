"""LangChain's storage dicts of a real conversation: ``messages_to_dict`` and ``dumpd``.

A tau-bench conversation (OpenAI chat messages, as the corpus holds it) is read into LangChain
messages by langchain-core's own ``convert_to_messages``, then written in the two shapes LangChain
stores messages in: ``messages_to_dict`` (``[{"type": "human", "data": {...}}]``, what chat
message histories keep) and ``dumpd`` (the serialisation of ``langchain_core.load``,
``{"lc": 1, "type": "constructor", "id": [...], "kwargs": {...}}``). langchain-core is not in the
test extra; run this in a venv that has it.

    python make_langchain.py TAU_CONVERSATION.json OUT_PREFIX
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import langchain_core
from _replay import write
from langchain_core.load import dumpd
from langchain_core.messages import convert_to_messages, messages_to_dict


def main(source: Path, prefix: str) -> None:
    conversation = json.loads(source.read_text(encoding="utf-8"))
    messages = convert_to_messages(conversation["traj"])
    version = langchain_core.__version__
    write(
        Path(f"{prefix}_messages_to_dict.json"),
        {"messages": messages_to_dict(messages), "langchain-core": version},
    )
    write(
        Path(f"{prefix}_dumpd.json"),
        {"messages": [dumpd(m) for m in messages], "langchain-core": version},
    )


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2])
