"""`bulkhead sessions list --json`, `sessions rm ID [--yes]` and `sessions rename ID TITLE`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from app.cli import main
from app.engine.session import Session
from app.model.messages import Message
from app.store import Store

REPO = Path(__file__).resolve().parents[2]


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def two_sessions():
    store = Store()
    first = Session.create(
        store, route="work", provider="anthropic", model="claude-sonnet-4-5", workspace="/src/app"
    )
    first.append(Message.create("user", "Fix the parser 日本", turn=1))
    second = Session.create(store, route="lab", provider="lab", model="lab-1")
    second.append(Message.create("user", "hello", turn=1))
    second.append(Message.create("assistant", "hi", turn=1))
    yield store, first, second
    store.close()


def test_list_json_is_one_array_newest_first(two_sessions, capsys):
    _store, first, second = two_sessions
    code, out, _ = run_cli(capsys, "sessions", "list", "--json")
    rows = json.loads(out)
    assert code == 0 and [r["id"] for r in rows] == [second.id, first.id]
    assert rows[1] | {"created_at": "", "updated_at": ""} == {
        "id": first.id,
        "title": "Fix the parser 日本",
        "route": "work",
        "provider": "anthropic",
        "model": "claude-sonnet-4-5",
        "workspace": "/src/app",
        "created_at": "",
        "updated_at": "",
        "messages": 1,
        "held_by": None,
    }
    assert rows[0]["updated_at"].endswith("Z") and rows[0]["messages"] == 2


def test_list_json_of_nothing_is_an_empty_array(capsys):
    code, out, _ = run_cli(capsys, "sessions", "list", "--json")
    assert code == 0 and json.loads(out) == []


def test_rm_with_yes_deletes_it_and_its_folder(two_sessions, capsys):
    store, first, second = two_sessions
    folder = second.folder
    code, _, err = run_cli(capsys, "sessions", "rm", second.id, "--yes")
    assert code == 0 and f"deleted session {second.id}" in err
    assert store.find_session(second.id) is None and not folder.exists()
    assert store.find_session(first.id) is not None


def test_rm_deletes_a_session_whose_log_cannot_be_read(two_sessions, capsys):
    """A damaged row (a disk error, a hand edit) is no reason to keep a session one wants gone."""
    store, first, second = two_sessions
    with store._lock:
        store._conn.execute("UPDATE messages SET parts = '[{' WHERE session_id = ? AND seq = 0", (second.id,))
        store._conn.commit()
    code, _, err = run_cli(capsys, "sessions", "rm", second.id, "--yes")
    assert code == 0 and f"deleted session {second.id}" in err and "(2 messages" in err
    assert store.find_session(second.id) is None and store.find_session(first.id) is not None


def test_rm_asks_and_no_keeps_it(two_sessions, capsys, monkeypatch):
    store, _first, second = two_sessions
    asked = []
    monkeypatch.setattr("app.commands.sessions_cmd._confirm", lambda q: asked.append(q) or False)
    code, _, err = run_cli(capsys, "sessions", "rm", second.id)
    assert code == 1 and "kept it" in err and store.find_session(second.id) is not None
    assert "2 messages" in asked[0] and "“hello”" in asked[0]
    monkeypatch.setattr("app.commands.sessions_cmd._confirm", lambda q: True)
    assert run_cli(capsys, "sessions", "rm", second.id)[0] == 0
    assert store.find_session(second.id) is None


def test_rm_refuses_a_session_another_process_holds(two_sessions, capsys):
    """A real lease held by another live process (a sleeper standing in for another bulkhead)."""
    from app.lease import Holder, process_start, this_process

    store, first, _second = two_sessions
    with subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]) as sleeper:
        try:
            other = Holder(
                pid=sleeper.pid,
                started=process_start(sleeper.pid),
                host=this_process().host,
                acquired_at=1.0,
                what="the TUI",
            )
            assert store.acquire_lease(first.id, other) is None
            code, _, err = run_cli(capsys, "sessions", "rm", first.id, "--yes")
            listed = json.loads(run_cli(capsys, "sessions", "list", "--json")[1])
        finally:
            sleeper.kill()
    assert code == 1 and f"open in another bulkhead (pid {sleeper.pid}" in err
    assert store.find_session(first.id) is not None
    assert {row["id"]: row["held_by"] for row in listed}[first.id].startswith(f"pid {sleeper.pid}")


def test_rm_of_an_unknown_session_says_so(capsys):
    code, _, err = run_cli(capsys, "sessions", "rm", "s_nope", "--yes")
    assert code == 1 and "no session 's_nope'" in err and "sessions list" in err


def test_rm_without_a_terminal_needs_yes(two_sessions, tmp_path):
    """The real entry point, with no controlling terminal (a new session: /dev/tty cannot open)."""
    _store, first, _second = two_sessions
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-m", "app", "sessions", "rm", first.id],
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
        timeout=60,
    )
    assert done.returncode == 2 and "add --yes" in done.stderr
    listed = subprocess.run(
        [sys.executable, "-m", "app", "sessions", "list", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert first.id in [row["id"] for row in json.loads(listed.stdout)]


def test_rename(two_sessions, capsys):
    store, first, _second = two_sessions
    code, _, err = run_cli(capsys, "sessions", "rename", first.id, "Parser", "tabs")
    assert code == 0 and "“Parser tabs”" in err
    assert store.find_session(first.id).title == "Parser tabs"


def test_show_and_export_a_session_with_a_damaged_row(two_sessions, capsys, tmp_path):
    """Issue 37, item 14: the readable messages are shown and exported, the damaged one as a stub."""
    store, _first, second = two_sessions
    with store._lock:
        store._conn.execute("UPDATE messages SET parts = '[{' WHERE session_id = ? AND seq = 0", (second.id,))
        store._conn.commit()
    code, out, err = run_cli(capsys, "sessions", "show", second.id)
    assert code == 0, err
    assert "could not be read from the database" in out and "Traceback" not in out + err
    for fmt in ("md", "json", "har"):
        target = tmp_path / f"out.{fmt}"
        code, _out, err = run_cli(capsys, "sessions", "export", second.id, "--format", fmt, "-o", str(target))
        assert code == 0, err
        assert target.exists() and "Traceback" not in err
    assert "could not be read from the database" in (tmp_path / "out.md").read_text()


# --- list filters and prune (issue 40 item 7) ------------------------------------------------------------


def aged(store: Store, session: Session, days: float) -> None:
    """As if it was last used `days` ago."""
    import time

    with store.transaction() as conn:
        conn.execute(
            "UPDATE sessions SET updated_at = ? WHERE id = ?", (time.time() - days * 86_400, session.id)
        )


def test_list_filters_by_folder_and_age(two_sessions, capsys, tmp_path, monkeypatch):
    store, first, second = two_sessions
    aged(store, first, 40)
    code, out, _ = run_cli(capsys, "sessions", "list", "--folder", "/src/app", "--json")
    assert code == 0 and [r["id"] for r in json.loads(out)] == [first.id]
    code, out, _ = run_cli(capsys, "sessions", "list", "--older-than", "30d", "--json")
    assert [r["id"] for r in json.loads(out)] == [first.id]
    code, out, _ = run_cli(capsys, "sessions", "list", "--newer-than", "1w", "--json")
    assert [r["id"] for r in json.loads(out)] == [second.id]
    monkeypatch.chdir(tmp_path)
    code, out, _ = run_cli(capsys, "sessions", "list", "--here")
    assert code == 0 and "no session matches" in out
    code, _out, err = run_cli(capsys, "sessions", "list", "--older-than", "a month")
    assert code == 2 and "30d, 12h" in err


def test_prune_deletes_only_what_is_older_and_asks_first(two_sessions, capsys, monkeypatch):
    store, first, second = two_sessions
    aged(store, first, 40)
    code, _out, err = run_cli(capsys, "sessions", "prune", "--older-than", "30d", "--dry-run")
    assert code == 0 and "would delete 1 session" in err and first.id in err
    monkeypatch.setattr("app.commands.sessions_cmd._confirm", lambda question: None)  # no terminal
    code, _out, err = run_cli(capsys, "sessions", "prune", "--older-than", "30d")
    assert code == 2 and "add --yes" in err
    assert {r["id"] for r in store.list_sessions()} == {first.id, second.id}
    code, _out, err = run_cli(capsys, "sessions", "prune", "--older-than", "30d", "--yes")
    assert code == 0 and "deleted 1 session" in err
    assert [r["id"] for r in store.list_sessions()] == [second.id]
