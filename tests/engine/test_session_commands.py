"""Session commands at the engine layer: /retry of a complete answer, rename, search, delete."""

from __future__ import annotations

import pytest

from app.engine.session import Session, SessionNotFound
from app.engine.session_admin import SessionBusy, delete_session
from app.engine.turn import retry_point
from app.model.archive import ArchiveEntry, archive_key
from app.model.messages import Message, ToolCall, ToolResult
from app.store import Store


async def test_retry_regenerates_a_complete_answer(make_harness, lab):
    h = make_harness()
    assert (await h.engine.submit("tell me about bulkheads")).outcome == "answered"
    first = h.session.view.messages[-1]
    asked = len(lab.requests())

    result = await h.engine.retry()

    assert result.outcome == "answered"
    assert len(lab.requests()) == asked + 1  # asked again
    view = h.session.view.messages
    assert [m.role for m in view] == ["user", "assistant"] and view[-1].id != first.id
    assert first in h.session.master and view[-1] in h.session.master  # the log keeps both answers
    assert any(e.code == "retry" for e in h.of_type("notice"))


async def test_retry_of_a_tool_turn_asks_again_from_the_prompt(make_harness):
    h = make_harness()
    (h.engine.workspace / "notes.txt").write_text("alpha\n")
    await h.engine.submit("!read notes.txt")
    assert [m.role for m in h.session.view.messages] == ["user", "assistant", "tool", "assistant"]

    assert (await h.engine.retry()).outcome == "answered"

    assert [m.role for m in h.session.view.messages] == ["user", "assistant", "tool", "assistant"]
    assert len(h.session.master) == 7  # the first round trip stays in the log


def test_retry_point_keeps_the_prompt_and_its_attachments():
    user = Message.create("user", "explain @a.py", turn=1)
    mention = Message.create(
        "assistant", [ToolCall("t1", "read_file", {"path": "a.py"})], turn=1, origin="mention"
    )
    attached = Message.create("tool", [ToolResult("t1", "x = 1")], turn=1, origin="tool")
    answer = Message.create("assistant", "it sets x", turn=1)
    assert retry_point([user, mention, attached, answer]) == 3
    assert retry_point([user, answer]) == 1
    notice = Message.create("user", "[summary]", turn=0, origin="summary")
    assert retry_point([notice, Message.create("assistant", "ok", turn=0)]) is None


def test_rename_search_and_delete(tmp_path):
    store = Store()
    keep = Session.create(store, route="lab", provider="lab", model="lab-1")
    keep.append(Message.create("user", "the parser breaks on tabs", turn=1))
    gone = Session.create(store, route="lab", provider="lab", model="lab-1")
    gone.append(Message.create("user", "WAF pages from the proxy", turn=1))
    gone.append(Message.create("assistant", "a 403 with cf-ray", turn=1))
    gone.commit_view(
        gone.view.messages,
        [ArchiveEntry(archive_key("old output"), "old output", "microcompact", ("m1",))],
        reason="compaction",
    )
    store.record_event(gone.id, "notice", {"text": "hi"})
    (gone.folder / "compaction.jsonl").write_text("{}\n")

    assert keep.rename("  Parser\n tabs  ") == "Parser tabs"
    assert Session.load(store, keep.id).title == "Parser tabs"
    with pytest.raises(ValueError):
        keep.rename("   ")
    assert store.search_sessions("cf-RAY") == [gone.id]  # message text, any case
    assert store.search_sessions("parser tabs") == [keep.id]  # the title

    with pytest.raises(SessionBusy, match="in use here"):
        delete_session(store, gone.id, current_id=gone.id)
    folder = gone.folder
    assert delete_session(store, gone.id[:8] if store.find_session(gone.id[:8]) else gone.id).id == gone.id
    assert store.find_session(gone.id) is None and not folder.exists()
    for table in ("messages", "views", "archive", "events", "requests"):
        assert not store.query(f"SELECT 1 FROM {table} WHERE session_id = ?", (gone.id,)), table
    assert store.archive_search("old") == []  # the full-text index forgot it too
    assert Session.load(store, keep.id).master[0].text == "the parser breaks on tabs"
    with pytest.raises(SessionNotFound):
        delete_session(store, gone.id)


def test_a_session_another_process_holds_is_refused():
    import subprocess
    import sys

    from app.lease import Holder, process_start, this_process

    store = Store()
    held = Session.create(store, route="lab", provider="lab", model="lab-1")
    with subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]) as sleeper:
        try:
            other = Holder(
                pid=sleeper.pid,
                started=process_start(sleeper.pid),
                host=this_process().host,
                acquired_at=1.0,
                what="bulkhead -p",
            )
            assert store.acquire_lease(held.id, other) is None
            with pytest.raises(SessionBusy, match=f"open in another bulkhead \\(pid {sleeper.pid}"):
                delete_session(store, held.id)
        finally:
            sleeper.kill()
    assert store.find_session(held.id) is not None
    delete_session(store, held.id)  # its holder is gone: the lease is stale, nothing holds it now
    assert store.find_session(held.id) is None
