"""Append messages to one session in a loop, printing `seq ID` after each commit returns.

Used by test_crash_append.py, which kills this process with SIGKILL at a random point.
Usage: python append_writer.py DB_PATH SESSION_ID VIEW_ID SEED
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

from app.model.messages import Message, ToolCall, ToolResult
from app.store import Store


def main() -> None:
    db_path, session_id, view_id, seed = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    rng = random.Random(seed)
    store = Store(Path(db_path))
    print("ready", flush=True)
    i = 0
    while True:
        size = rng.choice((10, 1_000, 40_000, 200_000))  # some appends span many pages
        body = f"message {i} " + "".join(rng.choice("abcdefgh 日本🧪\n") for _ in range(64)) * (size // 64)
        if i % 3 == 2:
            message = Message.create("tool", [ToolResult(f"c{i}", body)], turn=i)
        elif i % 3 == 1:
            message = Message.create(
                "assistant", [ToolCall(f"c{i + 1}", "read_file", {"path": body[:100]})], turn=i
            )
        else:
            message = Message.create("user", body, turn=i)
        seq = store.append_message(session_id, message, view_id)
        sys.stdout.write(f"{seq} {message.id}\n")
        sys.stdout.flush()
        i += 1


if __name__ == "__main__":
    main()
