"""A writer killed with SIGKILL mid-append leaves a sound database holding every reported commit."""

from __future__ import annotations

import os
import random
import selectors
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from app.engine.session import Session
from app.model.messages import Message
from app.store import Store

HELPER = Path(__file__).parent / "helpers" / "append_writer.py"
REPO = Path(__file__).resolve().parents[2]
READ_TIMEOUT = 60.0  # a safety net against a hung child; never a wait


class Reader:
    """Line reader over a child's stdout that polls with a timeout (never blocks forever)."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.proc = proc
        self.selector = selectors.DefaultSelector()
        self.selector.register(proc.stdout, selectors.EVENT_READ)
        self.buffer = b""

    def line(self) -> str | None:
        while b"\n" not in self.buffer:
            if not self.selector.select(timeout=READ_TIMEOUT):
                raise AssertionError("the writer said nothing for a minute")
            chunk = os.read(self.proc.stdout.fileno(), 65536)
            if not chunk:
                return None
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return line.decode()

    def rest(self) -> list[str]:
        """Every complete line left in the pipe after the child died."""
        data = self.buffer + self.proc.stdout.read()
        return [line for line in data.decode().split("\n")[:-1]]


def run_and_kill(db: Path, session_id: str, view_id: str, seed: int, kill_after: int) -> dict[int, str]:
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.Popen(
        [sys.executable, str(HELPER), str(db), session_id, view_id, str(seed)],
        stdout=subprocess.PIPE,
        env=env,
    )
    committed: dict[int, str] = {}
    try:
        reader = Reader(proc)
        assert reader.line() == "ready"
        while len(committed) < kill_after:
            line = reader.line()
            assert line is not None, f"the writer died on its own (exit {proc.poll()})"
            seq, message_id = line.split()
            committed[int(seq)] = message_id
        proc.send_signal(signal.SIGKILL)  # mid-append: the child is always inside its loop
        proc.wait(timeout=READ_TIMEOUT)
        for line in reader.rest():  # reported after our last read but before the kill
            seq, message_id = line.split()
            committed[int(seq)] = message_id
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL
    return committed


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_sigkill_mid_append_loses_no_committed_message(isolated_home, seed):
    rng = random.Random(seed)
    db = isolated_home / "bulkhead.db"
    store = Store(db)
    session = Session.create(store, route="lab", provider="lab", model="lab-1")
    store.close()

    all_committed: dict[int, str] = {}
    for round_ in range(2):  # kill twice: the second writer starts from a crashed database
        kill_after = rng.randint(3, 40)
        committed = run_and_kill(db, session.id, session.view.id, seed * 10 + round_, kill_after)
        assert len(committed) >= kill_after
        all_committed.update(committed)

        conn = sqlite3.connect(db)
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        conn.close()

        reopened = Store(db)
        master = reopened.load_master(session.id)
        by_seq = {i: m.id for i, m in enumerate(master)}
        for seq, message_id in all_committed.items():
            assert by_seq.get(seq) == message_id, f"committed message {seq} is missing"
        # Master log and view agree: every master message is in the view exactly once, in order.
        view = Session.load(reopened, session.id).view
        assert [m.id for m in view.messages] == [m.id for m in master]
        # At most one append was in flight when the child died.
        assert len(master) <= max(all_committed) + 2
        reopened.close()


def test_reopen_after_kill_can_append(isolated_home):
    db = isolated_home / "bulkhead.db"
    store = Store(db)
    session = Session.create(store)
    store.close()
    run_and_kill(db, session.id, session.view.id, seed=99, kill_after=5)
    store = Store(db)
    resumed = Session.load(store, session.id)
    resumed.append(Message.create("user", "after the crash"))
    assert Session.load(store, session.id).master[-1].text == "after the crash"
    store.close()
