"""Persistence off the event loop (issue 21): a real turn through the lab writes on the session's writer thread."""

from __future__ import annotations

import asyncio
import threading

import pytest

from app.engine import receipts
from app.engine import session as session_module
from app.engine.draft import DraftWriter
from app.engine.session import Session
from app.model.messages import Message
from app.store import DiskFull, Store


@pytest.fixture
def write_threads(monkeypatch) -> dict[str, set[int]]:
    """Every store write, draft append and receipt, by the thread it ran on."""
    seen: dict[str, set[int]] = {}

    def spy(owner, name: str) -> None:
        real = getattr(owner, name)

        def wrapped(*args, **kwargs):
            seen.setdefault(name, set()).add(threading.get_ident())
            return real(*args, **kwargs)

        monkeypatch.setattr(owner, name, wrapped)

    for name in ("append_message", "update_session", "record_event", "record_request"):
        spy(Store, name)
    spy(DraftWriter, "_append")
    spy(DraftWriter, "_discard")
    spy(session_module, "write_receipt")  # what Session.write_receipt queues
    return seen


async def test_a_turn_writes_nothing_on_the_event_loops_thread(make_harness, write_threads):
    h = make_harness()
    (h.engine.workspace / "notes.txt").write_text("alpha\n")
    loop_thread = threading.get_ident()

    first = await h.engine.submit("!big 40KB")  # a long answer: draft appends while it streams
    second = await h.engine.submit("!read notes.txt")  # a tool round

    assert first.outcome == second.outcome == "answered"
    for name in ("append_message", "update_session", "record_request", "_append", "_discard"):
        assert write_threads.get(name), f"{name} never ran: the test no longer exercises it"
    on_loop = sorted(name for name, threads in write_threads.items() if loop_thread in threads)
    assert on_loop == [], f"written on the event loop's thread: {on_loop}"
    # …and the turn is on disk when submit returns (it drained)
    stored = Session.load(h.session.store, h.session.id)
    assert [m.id for m in stored.master] == [m.id for m in h.session.master]
    assert stored.title == h.session.title and stored.counters == h.session.counters


async def test_a_compaction_receipt_is_written_off_the_loop_in_order(make_harness, write_threads):
    h = make_harness()
    h.grow(6, 3_000)

    await h.engine.compact()

    assert receipts.read_receipts(h.session.receipts_path), "the compaction left no receipt"
    assert threading.get_ident() not in write_threads["write_receipt"]


async def test_close_writes_everything_queued(make_harness):
    h = make_harness()
    gate = threading.Event()
    h.session.writer.submit(gate.wait, what="gate")  # the writer is busy: the appends below wait in its queue
    for i in range(20):
        h.session.append(
            Message.create("user" if i % 2 == 0 else "assistant", f"message {i}", turn=i // 2 + 1)
        )
    assert h.session.store.load_master(h.session.id) == []
    asyncio.get_running_loop().call_soon(gate.set)

    await h.engine.close()

    assert [m.text for m in h.session.store.load_master(h.session.id)] == [f"message {i}" for i in range(20)]
    assert h.session.writer.pending == 0 and not h.session.writer.threaded


async def test_a_full_disk_stops_the_turn_with_the_sentence_and_the_next_turn_saves_everything(make_harness):
    h = make_harness()
    store = h.session.store
    assert (await h.engine.submit("hello")).outcome == "answered"
    pages = store.query("PRAGMA page_count")[0][0]
    store.query(f"PRAGMA max_page_count = {pages + 2}")

    with pytest.raises(DiskFull, match="is full.*unsaved change"):
        await h.engine.submit("x" * 200_000)  # the drain before the request: nothing is sent unsaved

    assert h.session.master[-1].text == "x" * 200_000  # the conversation in memory is intact
    store.query("PRAGMA max_page_count = 1073741823")
    assert (await h.engine.submit("and now?")).outcome == "answered"
    stored = [m.text for m in store.load_master(h.session.id) if m.role == "user"]
    assert stored == ["hello", "x" * 200_000, "and now?"]
