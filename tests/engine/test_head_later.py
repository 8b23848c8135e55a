"""A long session opened from its end (app.engine.head_later): the tail decoded at once, the head when first
needed — and whatever reads the session then finds exactly what a whole load finds."""

from __future__ import annotations

import threading

import app.store
from app.engine.bootstrap import open_session
from app.engine.head_later import HEAD_LATER_FROM, TAIL_MESSAGES
from app.engine.session import Session
from app.engine.turn import Engine, retry_point
from app.engine.view_size import SIZE_FLAG
from app.model.messages import Message, ToolCall, ToolResult
from app.providers.base import make_provider
from app.state import State

TURNS = HEAD_LATER_FROM // 4 + 10  # × (prompt, tool call, its result, answer)


def grow_with_tools(session: Session, turns: int = TURNS) -> None:
    for i in range(turns):
        turn = session.turn + 1
        session.append(Message.create("user", f"prompt {i}", turn=turn))
        call = ToolCall(f"call_{i}", "read_file", {"path": f"module_{i}.py"})
        session.append(Message.create("assistant", [call], turn=turn))
        session.append(Message.create("tool", [ToolResult(call.id, f"contents {i}")], turn=turn))
        session.append(Message.create("assistant", f"answer {i}", turn=turn))


def reopened(engine: Engine) -> Engine:
    """The session opened from its end, on a fresh engine (as the TUI opens it)."""
    session = Session.load(engine.session.store, engine.session.id, head_later=True)
    provider = make_provider(engine.route, engine.settings, engine.provider.api_key)
    return Engine(engine.settings, session, engine.route, provider, state=State(), workspace=engine.workspace)


def assert_same(session: Session, whole: Session) -> None:
    assert session.master == whole.master
    assert [(v.id, v.messages) for v in session.views] == [(v.id, v.messages) for v in whole.views]
    assert session.turn == whole.turn and session.master_ids() == whole.master_ids()


async def test_a_long_session_opens_from_its_end_and_completes_to_what_a_whole_load_finds(make_harness):
    h = make_harness()
    grow_with_tools(h.session)
    await h.session.drain()
    store, session_id = h.session.store, h.session.id

    session = Session.load(store, session_id, head_later=True)
    whole = Session.load(store, session_id)
    assert session.head_waiting and not whole.head_waiting
    tail = session.decoded()
    assert TAIL_MESSAGES - 4 < len(tail) <= TAIL_MESSAGES  # back to a prompt: a tool call keeps its result
    assert tail[0].role == "user" and tail == whole.master[-len(tail) :]
    assert session.master_len() == len(whole.master)
    assert (session.view_id(), session.view_len(), session.views_len()) == (
        whole.view.id,
        len(whole.view),
        len(whole.views),
    )
    assert session.view_ids() == [m.id for m in whole.view.messages]
    assert session.is_master_id(whole.master[0].id)  # every id is known before its message is decoded
    end = list(session.view_end())  # what /retry's check looks back through, to the last prompt
    assert session.head_waiting  # nothing decoded for it
    assert retry_point(end) is not None and end == list(whole.view.messages[-len(end) :])

    assert session.master[0] == whole.master[0]  # reading the log decodes its head first
    assert not session.head_waiting
    assert_same(session, whole)
    assert session.complete() == []  # nothing left


async def test_the_engine_opens_and_starts_without_the_head_and_reports_what_a_whole_load_reports(
    make_harness,
):
    h = make_harness()
    grow_with_tools(h.session)
    h.engine.context_report()
    await h.engine.close()  # its view's size kept (app.engine.view_size)

    again = reopened(h.engine)
    report = again.context_report()
    await again.start(resumed=True)
    assert again.session.head_waiting  # the open, its report and the start decoded no older message
    assert report.predicted_bytes == h.session.flags[SIZE_FLAG]["bytes"]
    assert (report.messages_in_view, report.messages_in_master, report.views_stacked) == (
        len(h.session.view),
        len(h.session.master),
        1,
    )

    kept = again._known_view_bytes()
    again.session.complete()
    assert again._known_view_bytes() == kept  # the same view, decoded: its size still known
    assert kept == again.measure(again.session.view.messages)
    again.session.append(Message.create("user", "one more", turn=again.session.turn + 1))
    assert again._known_view_bytes() is None  # a new view
    await again.close()


async def test_an_append_before_the_head_is_decoded_lands_after_it(make_harness):
    h = make_harness()
    grow_with_tools(h.session)
    await h.engine.close()
    session = Session.load(h.session.store, h.session.id, head_later=True)
    count = session.master_len()

    added = session.append(Message.create("user", "after the resume", turn=session.turn + 1))
    assert not session.head_waiting
    assert session.master[-1] == added and len(session.master) == count + 1
    assert session.view.messages[-1] == added and len(session.view) == count + 1
    again = Session.load(h.session.store, h.session.id)
    assert again.master[-1] == added and again.master[:-1] == session.master[:-1]


async def test_two_threads_reading_at_once_decode_the_head_once(make_harness, monkeypatch):
    h = make_harness()
    grow_with_tools(h.session)
    await h.session.drain()
    session = Session.load(h.session.store, h.session.id, head_later=True)
    loads: list[int] = []
    load = app.store.Store.load_master

    def counted(store, session_id, start=0, stop=None):
        loads.append(start)
        return load(store, session_id, start, stop)

    monkeypatch.setattr(app.store.Store, "load_master", counted)
    seen: list[int] = []
    threads = [threading.Thread(target=lambda: seen.append(len(session.master))) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert seen == [len(h.session.master)] * 4 and loads == [0]


async def test_short_compacted_read_only_and_forked_sessions_load_whole(make_harness, monkeypatch):
    h = make_harness()
    loads: list[tuple[int, int | None]] = []
    load = app.store.Store.load_master

    def counted(store, session_id, start=0, stop=None):
        loads.append((start, stop))
        return load(store, session_id, start, stop)

    monkeypatch.setattr(app.store.Store, "load_master", counted)
    h.grow(HEAD_LATER_FROM // 2 - 5, 20)  # just under the threshold
    await h.session.drain()
    store = h.session.store
    assert not Session.load(store, h.session.id, head_later=True).head_waiting

    h.grow(10, 20)
    h.session.commit_view(h.session.view.messages[-6:], [], "compaction")  # a short view since
    await h.session.drain()
    loads.clear()
    assert not Session.load(store, h.session.id, head_later=True).head_waiting
    assert loads == [(0, None)]  # told by the ids: the log decoded once, whole (no tail decoded first)

    h.grow(TAIL_MESSAGES, 20)  # more messages since the compaction than the tail: opens from its end
    await h.engine.close()
    session = Session.load(store, h.session.id, head_later=True)
    assert session.head_waiting and session.views_len() == 2
    assert_same(session, Session.load(store, h.session.id))

    for how in ({"read_only": True}, {"fork": True}):
        opened, _resumed = open_session(
            store,
            h.engine.route,
            resume=h.session.id,
            continue_=False,
            workspace=h.engine.workspace,
            head_later=True,
            **how,
        )
        assert not opened.head_waiting


async def test_a_damaged_head_row_is_a_stub_and_the_rest_is_read(make_harness):
    h = make_harness()
    grow_with_tools(h.session)
    await h.engine.close()
    store = h.session.store
    with store._lock:  # a row of the head damaged
        store._conn.execute(
            "UPDATE messages SET parts = '[{' WHERE session_id = ? AND seq = 1", (h.session.id,)
        )
        store._conn.commit()

    session = Session.load(store, h.session.id, head_later=True)  # the tail is fine: it opens
    assert session.head_waiting and session.decoded()
    whole = Session.load(
        store, h.session.id
    )  # issue 37, item 14: the damaged row is a stub, the rest is read
    assert len(session.master) == len(whole.master)
    assert "could not be read from the database" in whole.master[1].text
