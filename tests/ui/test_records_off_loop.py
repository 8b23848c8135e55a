"""The inspector reads a session's records off the UI loop (issue 43): the Requests panel's per-row read runs
in a worker — a slow database never freezes the screen, and a read for a row no longer selected never
overwrites the detail — and `/recall`'s completion after a resume reads no database."""

from __future__ import annotations

import threading

from app.engine.api.records import RequestRecord, SessionRecords
from app.ui.headless import until
from app.ui.widgets.common import PanelSource
from tests.ui.test_panels import InspectorApp, finished, make_engine, settle

GATE_S = 30.0  # how long a held read waits at most (the test lets it go long before)


class HeldRecords(SessionRecords):
    """The real reader, whose `request(id)` waits until the test lets that read go."""

    def __init__(self, store, session_id: str) -> None:
        super().__init__(store, session_id)
        self.gates: dict[str, threading.Event] = {}
        self.asked: list[tuple[str, str]] = []  # (request id, thread name)
        self.done: list[str] = []

    def request(self, request_id: str) -> RequestRecord | None:
        self.asked.append((request_id, threading.current_thread().name))
        self.gates.setdefault(request_id, threading.Event()).wait(GATE_S)
        try:
            return super().request(request_id)
        finally:
            self.done.append(request_id)

    def release(self, request_id: str | None = None) -> None:
        for key in [request_id] if request_id else list(self.gates):
            self.gates.setdefault(key, threading.Event()).set()


def _store(engine, request_id: str, body: str) -> None:
    engine.session.store.record_request(
        {
            "id": request_id,
            "session_id": engine.session.id,
            "created_at": 1_000.0,
            "route": "lab",
            "status": 403,
            "kind": "waf_block",
            "outcome": "failed",
            "actual_bytes": 50_000,
            "request_headers": {"x-trace": f"trace-{request_id}"},
            "error_body": body,
        }
    )


async def test_a_held_record_read_does_not_freeze_the_requests_panel_nor_show_a_stale_row(tmp_path):
    engine = make_engine(tmp_path)
    reader = HeldRecords(engine.session.store, engine.session.id)
    _store(engine, "r0", "BODY-OF-r0 from the gateway")  # in the session's history: loaded whole
    app = InspectorApp()
    try:
        async with app.run_test(size=(100, 50)) as pilot:
            inspector = app.inspector
            inspector.show_session(PanelSource(engine.session.id, reader))
            inspector.show_panel("requests")
            await settle(pilot)
            panel = inspector.requests
            for request_id in ("r1", "r2"):  # told by events; the store has their whole records
                _store(engine, request_id, f"BODY-OF-{request_id} from the gateway")
                inspector.dispatch(finished(request_id, 50_000, 403, "waf_block", reason="blocked"))
            await pilot.pause()
            panel.table.move_cursor(row=1)
            await until(pilot, lambda: "r1" in [a for a, _ in reader.asked], "the read of r1")
            assert panel.selected_id == "r1" and "BODY-OF-r1" not in panel.detail_text  # still reading

            panel.table.focus()
            await pilot.press("up")  # the UI answers while the database read is held
            assert panel.selected_id == "r0" and "BODY-OF-r0" in panel.detail_text

            reader.release("r1")  # r1's read ends after the cursor moved on: it must not show
            await until(pilot, lambda: "r1" in reader.done, "r1's read to end")
            await pilot.pause()
            assert panel.selected_id == "r0" and "BODY-OF-r1" not in panel.detail_text
            assert "BODY-OF-r0" in panel.detail_text

            await pilot.press("down")  # r1 again: read again, shown now
            await until(pilot, lambda: "BODY-OF-r1" in panel.detail_text, "r1's stored record")
            await pilot.press("down")
            await until(pilot, lambda: "r2" in [a for a, _ in reader.asked[-1:]], "the read of r2")
            reader.release("r2")
            await until(pilot, lambda: "BODY-OF-r2" in panel.detail_text, "r2's stored record")
            assert "trace-r2" in panel.detail_text  # the whole record: its headers too
            assert threading.main_thread().name not in {name for _, name in reader.asked}

            asked = len(reader.asked)
            await pilot.press("up", "up")  # rows that hold their record are not read again
            await pilot.pause()
            assert panel.selected_id == "r0" and len(reader.asked) == asked
    finally:
        reader.release()
        engine.session.store.close()


async def test_enter_on_a_row_being_read_opens_the_whole_record(tmp_path):
    from app.ui.widgets.record_screen import RecordScreen

    engine = make_engine(tmp_path)
    reader = HeldRecords(engine.session.store, engine.session.id)
    app = InspectorApp()
    try:
        async with app.run_test(size=(100, 50)) as pilot:
            inspector = app.inspector
            inspector.show_session(PanelSource(engine.session.id, reader))
            inspector.show_panel("requests")
            await settle(pilot)
            _store(engine, "r1", "BODY-OF-r1 from the gateway")
            inspector.dispatch(finished("r1", 50_000, 403, "waf_block", reason="blocked"))
            panel = inspector.requests
            await until(pilot, lambda: reader.asked, "the read of r1")
            panel.table.focus()
            await pilot.press("enter")
            assert not isinstance(app.screen, RecordScreen)  # waits for the record, not a half of it
            reader.release("r1")
            await until(pilot, lambda: isinstance(app.screen, RecordScreen), "the record screen")
            assert "BODY-OF-r1" in panel.detail_text
    finally:
        reader.release()
        engine.session.store.close()


async def test_recall_completes_a_resumed_sessions_archive_without_reading_the_database(tmp_path, lab):
    from app.engine.api.ui_session import open_ui_session
    from app.ui.headless import ready
    from tests.ui.conftest import lab_settings
    from tests.ui.test_app import make_app

    settings = lab_settings(lab)
    session = await open_ui_session(settings, workspace=tmp_path)
    await session.start()
    for n in range(3):
        assert (await session.submit(f"question {n} " + "words " * 400)).outcome == "answered"
    assert (await session.compact()).ran
    session_id = session.info().id
    await session.close()

    app = make_app(settings, tmp_path, resume=session_id)
    async with app.run_test(size=(160, 48)) as pilot:
        await ready(pilot)
        store = app.session.records().store
        expected = store.archive_keys(session_id)
        assert expected  # the compaction archived what it summarized
        reads: list[str] = []
        original = store._read

        def counted(sql, params, take):
            reads.append(threading.current_thread().name)
            return original(sql, params, take)

        store._read = counted
        choices = app.slash_arguments("/recall")
        assert [key for key, _ in choices] == [key for key, *_ in expected]
        key, reason, _size, head = expected[0]
        assert (
            app.has_archive()
            and choices[0][1].startswith(f"{reason} · ")
            and head.split()[0] in choices[0][1]
        )
        assert threading.main_thread().name not in reads


async def test_a_row_still_stored_as_sending_fills_in_without_undoing_its_end(tmp_path):
    """The session writes its rows on a thread of its own, behind its events: a request that just ended may
    still be stored as sending. The detail keeps the event's end and reads the row again until it is written."""
    engine = make_engine(tmp_path)
    reader = HeldRecords(engine.session.store, engine.session.id)
    reader.release("r1")
    app = InspectorApp()
    try:
        async with app.run_test(size=(100, 50)) as pilot:
            inspector = app.inspector
            inspector.show_session(PanelSource(engine.session.id, reader))
            inspector.show_panel("requests")
            await settle(pilot)
            engine.session.store.record_request(
                {
                    "id": "r1",
                    "session_id": engine.session.id,
                    "created_at": 1_000.0,
                    "outcome": "sending",
                    "request_headers": {"x-trace": "trace-r1"},
                }
            )
            inspector.dispatch(finished("r1", 50_000, 403, "waf_block", reason="blocked"))
            panel = inspector.requests
            await until(pilot, lambda: "trace-r1" in panel.detail_text, "the headers of the row as sent")
            assert panel.records["r1"]["outcome"] == "failed" and panel.records["r1"]["status"] == 403
            _store(engine, "r1", "BODY-OF-r1 written after its event")
            await until(pilot, lambda: "BODY-OF-r1" in panel.detail_text, "the row written at its end")
            assert panel.records["r1"]["outcome"] == "failed"
    finally:
        reader.release()
        engine.session.store.close()


def test_the_proxy_views_record_takes_its_body_preview_from_the_proxy_sessions_records(tmp_path):
    """Records come over the pipe without their bodies; the detail reads the preview the proxy stored."""
    from app.proxy.records import ProxyRecord
    from app.ui.proxy_detail import record_report

    engine = make_engine(tmp_path)
    store, session_id = engine.session.store, engine.session.id
    try:
        record = ProxyRecord("r-proxy", session_id, 1_000.0, "POST", "/v1/messages", "anthropic", "curl")
        store.record_request({**record.to_store(), "body_preview": "user: hello through the proxy"})
        text = record_report(record, SessionRecords(store, session_id))
        assert "Body preview:\nuser: hello through the proxy" in text
        assert "Body preview" not in record_report(record, SessionRecords(store, "s_another"))
        assert "Body preview" not in record_report(record, None)
    finally:
        store.close()
