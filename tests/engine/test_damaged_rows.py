"""`bulkhead -c -p` goes on with a session that has a damaged row (issue 37, item 14), as a user runs it."""

from __future__ import annotations

from pathlib import Path

from app.store import Store
from tests.reliability.helpers.terminal import run_bulkhead


def test_continue_with_a_damaged_row_answers_and_says_nothing_is_lost(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    first = run_bulkhead(["-p", "first question", "--workspace", str(workspace)])
    assert first.returncode == 0, first.err
    store = Store()
    [session] = store.list_sessions()
    with store._lock:
        store._conn.execute(
            'UPDATE messages SET parts = \'[{"type": "text", "te\' WHERE session_id = ? AND seq = 0',
            (session["id"],),
        )
        store._conn.commit()
    store.close()

    again = run_bulkhead(["-c", "-p", "second question", "--workspace", str(workspace)])

    assert again.returncode == 0, again.err
    assert "Traceback" not in again.err and "second question" in again.out
