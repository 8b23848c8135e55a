"""The TUI's event loop does not write the session (issue 21): the writer thread does; a failed save is said."""

from __future__ import annotations

import threading

from app.engine.draft import DraftWriter
from app.engine.session import Session
from app.store import Store
from app.ui.app import BulkheadApp
from app.ui.headless import ready, settle, until
from tests.ui.conftest import lab_settings

SIZE = (160, 48)


async def test_a_streamed_turn_in_the_tui_writes_nothing_on_the_event_loop(lab, tmp_path, monkeypatch):
    threads: dict[str, set[int]] = {}
    for owner, name in ((Store, "append_message"), (Store, "update_session"), (DraftWriter, "_append")):
        real = getattr(owner, name)

        def wrapped(*args, _real=real, _name=name, **kwargs):
            threads.setdefault(_name, set()).add(threading.get_ident())
            return _real(*args, **kwargs)

        monkeypatch.setattr(owner, name, wrapped)
    app = BulkheadApp(lab_settings(lab), workspace=tmp_path, cursor_blink=False, keymap={})
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        loop_thread = threading.get_ident()  # the app runs on this test's event loop
        app.prompt.set_text("!big 40KB")
        await pilot.press("enter")
        await settle(pilot)
        session = app.session.engine.session
        assert sum(len(m.text) for m in session.master if m.role == "assistant") > 30_000  # drafts written
        assert set(threads) == {"append_message", "update_session", "_append"}
        assert all(loop_thread not in seen for seen in threads.values()), threads
        stored = Session.load(session.store, session.id)  # the turn ended: it is on disk
        assert [m.id for m in stored.master] == [m.id for m in session.master]


async def test_quitting_with_a_save_that_fails_says_so_on_the_terminal(lab, tmp_path):
    app = BulkheadApp(lab_settings(lab), workspace=tmp_path, cursor_blink=False, keymap={})
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        store = app.session.engine.session.store
        pages = store.query("PRAGMA page_count")[0][0]
        store.query(f"PRAGMA max_page_count = {pages + 1}")
        app.prompt.set_text("a long prompt " * 20_000)
        await pilot.press("enter")
        await until(pilot, lambda: app.chat.notices("error"), "the error notice")
        assert "unsaved change" in app.chat.notices("error")[0].text

        await app.action_quit()

    assert "is full" in app.exit_error and "Free some space" in app.exit_error
