"""The session's writer (issue 21): one thread, writes in the order issued, drains that wait, failures kept."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from app.engine.draft import DRAFT_FLUSH_CHARS, DraftWriter, leftover_drafts
from app.engine.session import Session
from app.engine.writer import SessionWriter
from app.model.messages import Message
from app.store import DiskFull, Store


def waiting_drains(writer: SessionWriter) -> int:
    with writer._cond:
        return len(writer._waiters)


def release_when_waited_on(writer: SessionWriter, gate: threading.Event) -> threading.Thread:
    """Open `gate` once a flush waits on `writer` (a polling helper with a generous deadline)."""

    def watch() -> None:
        deadline = time.monotonic() + 30
        while waiting_drains(writer) == 0 and time.monotonic() < deadline:
            time.sleep(0.001)
        gate.set()

    thread = threading.Thread(target=watch)
    thread.start()
    return thread


def threaded() -> SessionWriter:
    writer = SessionWriter("test")
    writer.start()
    return writer


def test_writes_run_in_the_order_issued_on_one_thread_that_is_not_the_callers():
    writer = threaded()
    done: list[tuple[int, int]] = []
    for i in range(500):
        writer.submit(lambda i=i: done.append((i, threading.get_ident())), what="w", required=i % 3 == 0)
    writer.flush()
    assert [i for i, _ in done] == list(range(500))
    assert len({thread for _, thread in done}) == 1
    assert done[0][1] != threading.get_ident()


def test_draft_appends_the_commit_and_the_draft_removal_keep_their_order(tmp_path):
    writer = threaded()
    draft = DraftWriter(tmp_path, writer)
    gate = threading.Event()
    writer.submit(gate.wait, what="gate")  # everything below queues behind it
    draft.begin()
    parts = ["x" * DRAFT_FLUSH_CHARS, "y" * DRAFT_FLUSH_CHARS]
    draft.update(parts[:1], DRAFT_FLUSH_CHARS)
    draft.update(parts, 2 * DRAFT_FLUSH_CHARS)
    seen: list[list[str]] = []
    writer.submit(lambda: seen.append([p.read_text() for _, p in leftover_drafts(tmp_path)]), what="commit")
    draft.clear()

    assert leftover_drafts(tmp_path) == []  # nothing written yet: the writer waits at the gate
    gate.set()
    writer.flush()

    assert seen == [["x" * DRAFT_FLUSH_CHARS + "y" * DRAFT_FLUSH_CHARS]]  # the commit saw the whole draft
    assert leftover_drafts(tmp_path) == []  # …and the draft went after it


async def test_a_drain_waits_for_everything_queued_without_blocking_the_loop():
    writer = threaded()
    gate = threading.Event()
    done: list[int] = []
    writer.submit(gate.wait, what="gate")
    for i in range(50):
        writer.submit(lambda i=i: done.append(i), what="w")

    drain = asyncio.ensure_future(writer.drain())
    ticks = 0
    for _ in range(20):  # the loop keeps running while the drain waits
        await asyncio.sleep(0)
        ticks += 1
    assert ticks == 20 and not drain.done() and done == []

    gate.set()
    await drain
    assert done == list(range(50)) and writer.pending == 0


def test_flush_blocks_until_the_queue_is_empty():
    writer = threaded()
    gate = threading.Event()
    done: list[int] = []
    writer.submit(gate.wait, what="gate")
    writer.submit(lambda: done.append(1), what="w")
    watcher = release_when_waited_on(writer, gate)

    writer.flush()  # returns only after the gate opened and the write behind it ran

    watcher.join()
    assert gate.is_set() and done == [1] and writer.pending == 0


def test_a_best_effort_write_that_fails_is_dropped_and_the_rest_go_on():
    writer = threaded()
    done: list[str] = []

    def broken() -> None:
        raise OSError(28, "No space left on device")

    writer.submit(broken, what="event", required=False)
    writer.submit(lambda: done.append("after"), what="w")
    writer.flush()
    assert done == ["after"] and writer.failure is None


def tight_session(tmp_path) -> tuple[Store, Session]:
    store = Store(tmp_path / "bulkhead.db")
    session = Session.create(store, route="lab", provider="lab", model="lab-1")
    session.append(Message.create("user", "kept", turn=1))
    session.start_writer()
    return store, session


def make_full(store: Store) -> int:
    pages = store.query("PRAGMA page_count")[0][0]
    store.query(f"PRAGMA max_page_count = {pages + 2}")  # SQLite's own SQLITE_FULL, at the write call
    return pages


async def test_a_failed_append_surfaces_at_the_next_drain_with_the_sentence_and_is_written_once_fixed(
    tmp_path,
):
    store, session = tight_session(tmp_path)
    make_full(store)

    big = session.append(Message.create("user", "y" * 200_000, turn=2))  # returns at once: queued
    after = session.append(Message.create("assistant", "z", turn=2))
    assert [m.id for m in session.master[-2:]] == [big.id, after.id]  # memory has both already

    with pytest.raises(DiskFull) as caught:
        await session.drain()
    message = str(caught.value)
    assert message.startswith(f"the disk holding {tmp_path / 'bulkhead.db'} is full")
    assert "Free some space" in message and "unsaved changes of this session in memory" in message
    assert [m.text for m in store.load_master(session.id)] == ["kept"]  # nothing half-written
    assert session.writer.pending >= 2  # held, in order, not dropped

    with pytest.raises(DiskFull):  # still full: the next drain tries again and says so again
        await session.drain()

    store.query("PRAGMA max_page_count = 1073741823")  # room again
    await session.drain()
    assert [m.id for m in store.load_master(session.id)] == [m.id for m in session.master]
    assert [m.text for m in Session.load(store, session.id).view.messages] == ["kept", "y" * 200_000, "z"]


def test_a_view_commit_waits_for_the_queued_appends(tmp_path):
    store, session = tight_session(tmp_path)
    gate = threading.Event()
    session.writer.submit(gate.wait, what="gate")
    session.append(Message.create("assistant", "queued", turn=1))
    watcher = release_when_waited_on(session.writer, gate)  # the commit waits: no missing message

    session.commit_view(session.view.messages, [], reason="test")
    watcher.join()

    assert [m.text for m in Session.load(store, session.id).view.messages] == ["kept", "queued"]


async def test_stopping_the_writer_writes_everything_then_writes_inline(tmp_path):
    store, session = tight_session(tmp_path)
    gate = threading.Event()
    session.writer.submit(gate.wait, what="gate")
    session.append(Message.create("assistant", "queued", turn=1))
    asyncio.get_running_loop().call_soon(gate.set)

    await session.stop_writer()

    assert [m.text for m in store.load_master(session.id)] == ["kept", "queued"]
    assert not session.writer.threaded
    session.append(Message.create("user", "inline", turn=2))  # written before append returns
    assert store.load_master(session.id)[-1].text == "inline"


def test_an_inline_writer_raises_at_the_write_and_changes_nothing(tmp_path):
    store = Store(tmp_path / "bulkhead.db")
    session = Session.create(store, route="lab", provider="lab", model="lab-1")
    session.append(Message.create("user", "kept", turn=1))
    make_full(store)
    with pytest.raises(DiskFull):
        session.append(Message.create("user", "y" * 200_000, turn=2))
    assert [m.text for m in session.master] == ["kept"]
