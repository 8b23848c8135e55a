"""Session commands in the TUI: /retry of a complete answer, /new and /clear, /rename, /exit, and the
F5 screen's search, rename and delete (with confirmation)."""

from __future__ import annotations

from app.engine.session import Session
from app.model.messages import Message
from app.model.session_folders import folder_key
from app.ui.chat_items import UserItem
from app.ui.headless import ready, until
from app.ui.screens.confirm import ConfirmScreen
from app.ui.screens.sessions import SessionsScreen
from tests.ui.conftest import lab_settings
from tests.ui.test_app import SIZE, make_app, send


async def test_retry_regenerates_a_complete_answer(lab, tmp_path):
    app = make_app(lab_settings(lab), tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await send(pilot, "hello there")
        first = app.session.engine.session.view.messages[-1]
        asked = len(lab.requests())
        await send(pilot, "/retry")
        assert len(lab.requests()) == asked + 1
        view = app.session.engine.session.view.messages
        assert [m.role for m in view] == ["user", "assistant"] and view[-1].id != first.id
        assert len(app.chat.answers()) == 2  # the new answer below the old one
        assert app.chat.notices("retry")


async def test_new_and_clear_start_fresh_sessions_and_keep_the_old(lab, tmp_path):
    app = make_app(lab_settings(lab), tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await send(pilot, "remember the parser")
        first = app.session.engine.session.id
        for command in ("/new", "/clear"):
            before = app.session.engine.session.id
            await send(pilot, command)
            await until(
                pilot,
                lambda b=before: app.session is not None and app.session.engine.session.id != b,
                "a new session",
            )
            await until(pilot, app.engine_ready.is_set, "the new engine")
            assert not [i for i in app.chat.items if isinstance(i, UserItem)]  # a clean chat
            assert app.chat.notices("new") and before in app.chat.notices("new")[0].text
            assert app.session.engine.route.name == "lab"
        await send(pilot, "a fresh start")
        assert [m.text for m in app.session.engine.session.master][0] == "a fresh start"
        old = Session.load(app.session.engine.session.store, first)  # still there, resumable
        assert old.master[0].text == "remember the parser"


async def test_rename_sets_the_title_and_exit_quits(lab, tmp_path):
    app = make_app(lab_settings(lab), tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await send(pilot, "hello")
        await send(pilot, "/rename the parser bug")
        assert app.session.engine.session.title == "the parser bug"
        assert "the parser bug" in str(app.query_one("#topbar").render())
        assert (
            app.session.engine.session.store.find_session(app.session.engine.session.id).title
            == "the parser bug"
        )
        await send(pilot, "/exit")
        await until(pilot, lambda: app._exit, "the app to quit")
    assert app.return_code == 0


async def test_sessions_screen_searches_renames_and_deletes(lab, tmp_path):
    settings = lab_settings(lab)
    app = make_app(settings, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        store = app.session.engine.session.store
        here = folder_key(tmp_path)  # sessions of this folder: F5 lists them first
        older = Session.create(store, route="lab", provider="lab", model="lab-1", workspace=here)
        older.append(Message.create("user", "why does nginx answer 413", turn=1))
        other = Session.create(store, route="lab", provider="lab", model="lab-1", workspace=here)
        other.append(Message.create("user", "refactor the lexer", turn=1))
        await send(pilot, "hello")
        await pilot.press("f5")
        await until(pilot, lambda: isinstance(app.screen, SessionsScreen), "the sessions screen")
        screen = app.screen
        assert len(screen.sessions) == 3
        # typing searches titles at once and every message in a worker
        await pilot.press(*"nginx")
        await until(pilot, lambda: [r["id"] for r in screen.sessions] == [older.id], "the search by message")
        assert screen.search_box.value == "nginx"  # the first letter too (it moved the focus to the search)
        await pilot.press("escape")  # clears the search
        assert len(screen.sessions) == 3
        # every letter types, also those that once renamed and deleted: "dry" deleted the highlighted session
        screen.table.move_cursor(row=[r["id"] for r in screen.sessions].index(other.id))
        await pilot.press(*"dry")
        await pilot.pause()
        assert screen.search_box.value == "dry" and isinstance(app.screen, SessionsScreen)
        assert store.find_session(other.id) is not None and not screen.rename_box.display
        await pilot.press("escape")  # clears the search
        # rename the highlighted one
        screen.table.move_cursor(row=[r["id"] for r in screen.sessions].index(other.id))
        await pilot.press("ctrl+r")
        assert screen.rename_box.display and screen.rename_box.value == "refactor the lexer"
        screen.rename_box.value = "lexer work"
        await pilot.press("enter")
        assert store.find_session(other.id).title == "lexer work" and not screen.rename_box.display
        # delete asks first; n keeps it, y deletes it
        await pilot.press("delete")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the confirmation")
        assert "lexer work" in app.screen.question
        await pilot.press("n")
        assert store.find_session(other.id) is not None
        await pilot.press("ctrl+d")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the confirmation")
        await pilot.press("y")
        await until(pilot, lambda: store.find_session(other.id) is None, "the deletion")
        assert other.id not in [r["id"] for r in screen.sessions]
        # the session in use is never deleted
        screen.table.move_cursor(row=[r["id"] for r in screen.sessions].index(app.session.engine.session.id))
        await pilot.press("delete")
        assert isinstance(app.screen, SessionsScreen) and "in use" in screen.status
        assert store.find_session(app.session.engine.session.id) is not None
