"""Session: master log, view stack, transactional commit_view, rewind, resume."""

from __future__ import annotations

import json

import pytest

from app.engine.session import Session, SessionNotFound
from app.model import messages as messages_module
from app.model.archive import ArchiveEntry, make_entry, marker, markers_in, stub_text
from app.model.events import MessageAdded
from app.model.messages import Message, ToolCall, ToolResult, View
from app.store import Store


@pytest.fixture
def store():
    s = Store()
    yield s
    s.close()


def talk(session: Session, n: int, start: int = 0) -> list[Message]:
    added = []
    for i in range(start, start + n):
        role = "user" if i % 2 == 0 else "assistant"
        added.append(session.append(Message.create(role, f"message {i} " + "x" * 50, turn=i // 2 + 1)))
    return added


def compact(session: Session, keep_last: int, reason: str = "L2") -> tuple[View, ArchiveEntry]:
    """A toy compaction: the oldest messages become one archived stub."""
    view = session.view.messages
    dropped, kept = view[:-keep_last], view[-keep_last:]
    carried = [k for m in dropped for k in markers_in(m.text)]  # markers never nest: carry them forward
    fresh = [m for m in dropped if not markers_in(m.text)]
    entry = make_entry("\n".join(m.text for m in fresh), reason, tuple(m.id for m in fresh))
    keys = [*carried, entry.key]
    stub = dropped[0].derive(
        stub_text(f"[{len(dropped)} messages archived]", keys),
        role="user",
        origin="stub",
        archive_keys=tuple(keys),
    )
    return session.commit_view([stub, *kept], [entry], reason), entry


def counts(store: Store, session_id: str) -> tuple[int, int, int]:
    archive = store.query("SELECT COUNT(*) FROM archive WHERE session_id = ?", (session_id,))[0][0]
    derived = store.query(
        "SELECT COUNT(*) FROM messages WHERE session_id = ? AND seq IS NULL", (session_id,)
    )[0][0]
    views = store.query("SELECT COUNT(*) FROM views WHERE session_id = ?", (session_id,))[0][0]
    return archive, derived, views


def test_create_append_and_title(store):
    session = Session.create(store, route="work", provider="lab", model="lab-1")
    seen = []
    session.bus.subscribe(seen.append)
    first = session.append(Message.create("user", "  Fix the parser\nplease", turn=1))
    assert session.title == "Fix the parser"
    assert store.get_session(session.id).title == "Fix the parser"
    assert session.master == [first] and session.view.messages == (first,)
    assert session.is_master(first) and session.master_ids() == {first.id}
    assert seen == [MessageAdded(first.id, "user", "user", "  Fix the parser\nplease", False)]
    assert session.turn == 1
    lines = session.transcript_path.read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["id"] for line in lines] == [first.id]


def test_commit_view_and_rewind_keep_messages_appended_after(store):
    session = Session.create(store)
    original = talk(session, 10)
    base_view = session.view
    compacted, entry = compact(session, keep_last=4)
    assert session.view is compacted and len(session.views) == 2
    assert compacted.parent_id == base_view.id
    assert store.archive_get(entry.key).content.startswith("message 0")
    assert marker(entry.key) in compacted.messages[0].text
    assert session.master == original  # the master log is never rewritten

    later = talk(session, 3, start=10)
    assert session.view.messages[-3:] == tuple(later)
    assert len(session.view) == 1 + 4 + 3

    restored = session.rewind()
    assert restored.id == base_view.id
    assert restored.messages == tuple(original + later)
    assert session.view == restored and len(session.views) == 1
    assert session.rewind() is None  # the bottom of the stack

    reloaded = Session.load(store, session.id)
    assert reloaded.view == restored and len(reloaded.views) == 1
    assert reloaded.master == original + later

    # After a rewind, appends go to the restored view, and the next compaction stacks on it.
    more = talk(session, 1, start=13)
    assert session.view.messages[-1] == more[0]
    compact(session, keep_last=2)
    assert [v.id for v in Session.load(store, session.id).views] == [v.id for v in session.views]


def test_two_compactions_then_two_rewinds(store):
    session = Session.create(store)
    talk(session, 12)
    compact(session, keep_last=6)
    a = talk(session, 2, start=12)
    compact(session, keep_last=3)
    b = talk(session, 2, start=14)
    assert len(session.views) == 3
    assert Session.load(store, session.id).views == session.views

    first = session.rewind()
    assert first.messages[-4:] == tuple(a + b)
    second = session.rewind()
    assert second.messages == tuple(session.master)
    assert Session.load(store, session.id).views == session.views


def test_failing_commit_midway_leaves_previous_view(store, monkeypatch):
    session = Session.create(store)
    talk(session, 8)
    before = session.view
    before_views = list(session.views)

    original_insert = Store._insert_archive

    def insert_then_fail(conn, session_id, entries):
        original_insert(conn, session_id, entries)  # rows written inside the transaction …
        raise RuntimeError("disk on fire")  # … then the commit fails midway

    with monkeypatch.context() as patch:
        patch.setattr(Store, "_insert_archive", staticmethod(insert_then_fail))
        with pytest.raises(RuntimeError, match="disk on fire"):
            compact(session, keep_last=3)

    assert session.view is before and session.views == before_views
    assert counts(store, session.id) == (0, 0, 1)  # no orphan archive rows, no derived messages, no view
    reloaded = Session.load(store, session.id)
    assert reloaded.view == before and len(reloaded.views) == 1
    assert store.archive_list(session.id) == [] and store.archive_search("message") == []

    # The session is still fully usable.
    talk(session, 1, start=8)
    compact(session, keep_last=3)
    assert counts(store, session.id) == (1, 1, 2)


def test_commit_with_invalid_archive_entry_changes_nothing(store):
    session = Session.create(store)
    talk(session, 6)
    before = session.view
    good = make_entry("fine content", "L2")
    bad = ArchiveEntry(key="0123456789abcdef", content="x", reason=None)  # type: ignore[arg-type]
    stub = session.master[0].derive("stub", origin="stub")
    with pytest.raises(Exception):  # noqa: B017 - the store's own constraint error
        session.commit_view([stub, *session.master[-2:]], [good, bad], "L2")
    assert session.view is before
    assert counts(store, session.id) == (0, 0, 1)
    assert Session.load(store, session.id).view == before


def test_commit_with_unknown_message_reference_changes_nothing(store, monkeypatch):
    """A view entry that would not persist (its message row cannot be written) aborts the commit."""
    session = Session.create(store)
    talk(session, 4)
    before = session.view
    derived = session.master[0].derive("stub", origin="stub")
    monkeypatch.setattr(
        session, "_seq", {**session._seq, derived.id: 99}
    )  # claims to be master: not inserted
    with pytest.raises(Exception):  # noqa: B017 - FOREIGN KEY constraint failed
        session.commit_view([derived], [make_entry("dropped", "L2")], "L2")
    assert session.view is before
    assert counts(store, session.id) == (0, 0, 1)


def test_failing_rewind_changes_nothing(store, monkeypatch):
    session = Session.create(store)
    talk(session, 6)
    compact(session, keep_last=2)
    views = list(session.views)

    def boom(*args, **kwargs):
        raise RuntimeError("no")

    monkeypatch.setattr(store, "replace_active_view", boom)
    with pytest.raises(RuntimeError):
        session.rewind()
    assert session.views == views


def test_resume_restores_master_views_counters_flags(store):
    session = Session.create(
        store, route="work", provider="anthropic", model="m", workspace="/w", system_prompt="be brief"
    )
    talk(session, 6)
    compact(session, keep_last=2)
    session.append(Message.create("tool", [ToolResult("c1", "output 日本 🧪")], turn=4))
    session.counters.requests = 7
    session.counters.add_rejection("waf_block")
    session.counters.add_compaction("recovery", 2, 1000)
    session.save_counters()
    session.set_flag("payload_notice", True)
    session.set_route("aws", "bedrock", "anthropic.claude")

    resumed = Session.load(store, session.id[:8] if store.find_session(session.id[:8]) else session.id)
    assert resumed.id == session.id
    assert resumed.master == session.master
    assert resumed.views == session.views and resumed.view == session.view
    assert resumed.counters == session.counters
    assert resumed.counters.rejections == {"waf_block": 1} and resumed.counters.compactions == {"recovery": 1}
    assert resumed.flags == {"payload_notice": True}
    assert (resumed.route, resumed.provider, resumed.model) == ("aws", "bedrock", "anthropic.claude")
    assert (resumed.workspace, resumed.system_prompt, resumed.title) == ("/w", "be brief", session.title)
    assert resumed.turn == session.turn == 4
    assert Session.latest(store).id == session.id


def test_view_stack_order_does_not_depend_on_the_clock(store, monkeypatch):
    """Views are a stack: their order after a reload is the push order, even if the clock went back."""
    clock = iter(range(10_000, 0, -1))
    with monkeypatch.context() as patch:
        patch.setattr(
            messages_module, "time", type("Clock", (), {"time": staticmethod(lambda: float(next(clock)))})
        )
        session = Session.create(store)
        talk(session, 8)
        compact(session, keep_last=6)
        compact(session, keep_last=4)
        compact(session, keep_last=2)
    assert [v.id for v in Session.load(store, session.id).views] == [v.id for v in session.views]


def test_load_unknown_session(store):
    with pytest.raises(SessionNotFound, match="sessions list"):
        Session.load(store, "s_nope")
    assert Session.latest(store) is None


def test_load_rebuilds_a_missing_view(store):
    session = Session.create(store)
    talk(session, 3)
    store.query("DELETE FROM views WHERE session_id = ?", (session.id,))
    reloaded = Session.load(store, session.id)
    assert reloaded.view.messages == tuple(session.master) and reloaded.view.reason == "rebuilt"


def test_archive_and_events(store):
    session = Session.create(store)
    entry = make_entry("some dropped output", "microcompact")
    session.archive([entry])
    session.archive([entry])
    assert [e.key for e in store.archive_list(session.id)] == [entry.key]
    from app.model.events import Notice

    got = []
    session.bus.subscribe(got.append)
    session.record_event(Notice("hello", code="x"))
    assert got == [Notice("hello", code="x")]
    assert store.list_events(session.id, "notice")[0]["data"] == {
        "text": "hello",
        "level": "info",
        "code": "x",
        "type": "notice",
    }


def test_title_from_undecodable_text_does_not_break_append(store):
    session = Session.create(store)
    message = session.append(Message.create("user", "bad \udcff byte"))
    assert Session.load(store, session.id).master == [message]
    assert session.title.startswith("bad")


def test_messages_are_hashable_and_derive_keeps_lineage():
    call = Message.create("assistant", [ToolCall("c1", "grep", {"pattern": "x"})], turn=3)
    assert len({call, call}) == 1
    assert hash(call) == hash(Message.from_dict(call.to_dict()))
    stub = call.derive("[cleared]", origin="stub", archive_keys=("0123456789abcdef",))
    assert stub.id != call.id and stub.meta.source_ids == (call.id,) and stub.meta.turn == 3
    again = stub.derive("[shorter]", created_at=42.0)
    assert again.meta.source_ids == (call.id,)  # still names the master message
    assert again.meta.created_at == 42.0 and again.meta.archive_keys == ("0123456789abcdef",)
