"""`app.engine.api.records`: the inspector's reader over a real session's records in a real SQLite store, and
the archive's keys the TUI's session keeps in memory (`has_archive`, `/recall`'s completion) — after a
compaction, a `/rewind`, a resume — without reading the database."""

from __future__ import annotations

import pytest

from app.config import HookSpec, Settings
from app.engine.api.records import RequestRecord, SessionRecords
from app.engine.api.ui_session import open_ui_session
from app.engine.session import Session
from app.model.archive import ArchiveEntry, archive_key
from app.store import Store


async def test_the_reader_gives_a_real_sessions_requests_caps_compactions_hooks_and_archive(
    make_harness, lab
):
    lab.configure(gateway="nginx", cap="128KB")  # a 413 at 128 KB: a cap learned, the ladder, an archive
    h = make_harness(hooks=(HookSpec("UserPromptSubmit", "echo checked"),))
    h.grow(10, 10_000)
    assert (await h.engine.submit("what did we discuss?")).outcome == "answered"
    await h.engine.compact()
    h.session.flush()
    records = SessionRecords(h.session.store, h.session.id)

    requests = records.requests()
    stored = h.session.store.list_requests(h.session.id)
    assert [r.id for r in requests] == [row["id"] for row in stored] and len(requests) >= 2
    refused = requests[0]
    assert isinstance(refused, RequestRecord)
    assert (refused.status, refused.kind, refused.outcome) == (413, "payload_too_large", "failed")
    assert any("413" in item for item in refused.evidence) and refused.actual_bytes > 128 * 1024
    assert refused.request_headers and refused.error_body  # the whole record: headers and the gateway's body
    assert records.request(refused.id) == refused
    row = refused.row()
    assert row["evidence"] == list(refused.evidence) and row["status"] == 413  # what the explanations read
    assert requests[-1].outcome == "ok"
    assert records.requests(limit=1) == (requests[-1],)  # the newest

    sizes = records.request_sizes()
    assert [(s.id, s.bytes, s.kind, s.sending) for s in sizes] == [
        (r.id, r.actual_bytes or r.predicted_bytes, r.kind, False) for r in requests
    ]
    assert [s.id for s in records.request_sizes(limit=1)] == [requests[-1].id]

    learned = h.engine.state.learned_cap(h.engine.route.endpoint_id)
    assert [c.event.cap_bytes for c in records.caps_learned()] == [learned.cap_bytes]

    compactions = records.compactions()
    assert [c.event.trigger for c in compactions][-1] == "manual"
    assert compactions[0].event.trigger == "recovery" and compactions[0].at > 0
    assert isinstance(compactions[0].event.archive_keys, tuple)

    runs = records.hook_runs()
    assert [(r.event.event, r.event.command, r.event.exit_code) for r in runs] == [
        ("UserPromptSubmit", "echo checked", 0)
    ]

    archive = records.archive()
    assert archive and archive == tuple(h.session.store.archive_list(h.session.id))
    word = "lorem"
    assert records.archive(word, limit=5) and all(word in e.content for e in records.archive(word, limit=5))
    assert [k.key for k in records.archive_keys()] == [e.key for e in archive][:200]
    assert records.archive_keys()[0].head == archive[0].content[:60]


def test_another_sessions_request_and_rows_that_no_longer_parse_are_left_out(tmp_path):
    store = Store()
    try:
        mine = Session.create(store, route="lab", provider="lab", model="lab-1", workspace=str(tmp_path))
        other = Session.create(store, route="lab", provider="lab", model="lab-1", workspace=str(tmp_path))
        store.record_request({"id": "r-other", "session_id": other.id, "created_at": 1.0, "outcome": "ok"})
        store.record_request({"id": "r-mine", "session_id": mine.id, "created_at": 2.0, "outcome": "sending"})
        store.record_event(mine.id, "compaction", {"trigger": "manual", "from": "a newer version"})
        store.record_event(mine.id, "hook", {"event": "Stop"})
        records = SessionRecords(store, mine.id)
        assert records.request("r-other") is None and records.request("missing") is None
        assert [r.id for r in records.requests()] == ["r-mine"]
        assert records.request_sizes()[0].sending
        assert records.compactions() == () and records.hook_runs() == ()
    finally:
        store.close()


def _count_reads(store: Store, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    reads: list[str] = []
    original = store._read

    def counted(sql, params, take):
        reads.append(sql)
        return original(sql, params, take)

    monkeypatch.setattr(store, "_read", counted)
    return reads


async def test_the_sessions_archive_keys_after_a_compaction_a_rewind_and_a_resume(tmp_path, monkeypatch):
    """`has_archive` and `recall_keys` (what `/recall` completes) answer from memory: loaded when the session
    opens (a resumed one has its archive at once), added to as the session archives, kept through /rewind."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    settings = Settings(memory="off")
    session = await open_ui_session(settings, workspace=workspace)
    try:
        await session.start()
        assert not session.has_archive() and session.recall_keys() == ()
        for n in range(3):
            assert (await session.submit(f"question {n} " + "words " * 400)).outcome == "answered"
        store = session.engine.session.store
        reads = _count_reads(store, monkeypatch)
        compacted = await session.compact()
        assert compacted.ran
        session.engine.session.flush()
        stored = list(reads)
        assert session.has_archive()
        keys = session.recall_keys()
        assert reads == stored  # answered without a read of the database
        on_disk = store.archive_keys(session.info().id)
        assert [(k.key, k.reason, k.bytes, k.head) for k in keys] == on_disk

        entry = ArchiveEntry(archive_key("a withheld span"), "a withheld span", "withheld")
        session.engine.session.archive([entry])  # archived outside a compaction: known as well, first
        assert session.recall_keys()[0].key == entry.key and len(session.recall_keys()) == len(keys) + 1

        assert session.undo_compaction()  # /rewind compact: the archive keeps what it holds
        assert [k.key for k in session.recall_keys()][1:] == [k.key for k in keys]
        session_id = session.info().id
    finally:
        await session.close()

    resumed = await open_ui_session(settings, workspace=workspace, resume=session_id)
    try:
        reads = _count_reads(resumed.engine.session.store, monkeypatch)
        assert resumed.has_archive()  # before it starts: the keys were read while it opened, in a thread
        assert [k.key for k in resumed.recall_keys()] == [entry.key, *(k.key for k in keys)]
        assert reads == []
    finally:
        await resumed.close()
