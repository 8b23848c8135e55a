"""Sessions belong to their folder, from the real command line (`bulkhead -c`, `--resume ID`, F5).

Each test parses an argv with the CLI's own parser and builds the TUI as `bulkhead` does
(`app.ui.run.build_app`), in a working folder set with `chdir`, then drives it with Pilot.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from app.cli import build_parser
from app.engine.session import Session
from app.model.messages import Message
from app.model.session_folders import folder_key
from app.store import Store
from app.ui.headless import ready, settle, until
from app.ui.run import build_app
from app.ui.screens.folder import FolderScreen
from app.ui.screens.sessions import SessionsScreen

SIZE = (160, 45)


def tui(argv: list[str], monkeypatch: pytest.MonkeyPatch, folder: Path):
    monkeypatch.chdir(folder)
    return build_app(build_parser().parse_args(argv), cursor_blink=False, keymap={})


def seed(store: Store, folder: Path, prompt: str) -> str:
    session = Session.create(store, route="lab", provider="lab", model="lab-1", workspace=folder_key(folder))
    session.append(Message.create("user", prompt, turn=1))
    session.append(Message.create("assistant", f"(lab) {prompt}", turn=1, origin="model"))
    return session.id


@pytest.fixture
def folders(tmp_path: Path) -> tuple[Path, Path]:
    here, other = tmp_path / "ws", tmp_path / "ws2"
    here.mkdir()
    other.mkdir()
    return here, other


async def test_continue_takes_the_newest_session_of_this_folder(folders, monkeypatch):
    here, other = folders
    store = Store()
    mine = seed(store, here, "the parser in ws")
    seed(store, other, "newer, but of ws2")  # the newest session of all: not this folder's
    app = tui(["-c"], monkeypatch, here)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        assert app.session.engine.session.id == mine
        assert [m.text for m in app.session.engine.session.master][0] == "the parser in ws"


async def test_continue_in_a_folder_without_sessions_says_so_and_starts_one(folders, monkeypatch):
    here, other = folders
    store = Store()
    theirs = seed(store, other, "of ws2")
    app = tui(["--continue"], monkeypatch, here)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        assert app.session.engine.session.id != theirs and not app.session.engine.session.master
        notice = " ".join(n.text for n in app.chat.notices("session"))
        assert f"no session of {here.resolve()} to continue" in notice
        assert "bulkhead sessions list" in notice and "F5" in notice


async def test_the_picker_lists_this_folder_then_every_folder(folders, monkeypatch):
    here, other = folders
    store = Store()
    mine = seed(store, here, "mine")
    theirs = seed(store, other, "theirs")
    app = tui([], monkeypatch, here)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press("f5")
        await until(pilot, lambda: isinstance(app.screen, SessionsScreen), "the sessions screen")
        screen = app.screen
        shown = {row["id"] for row in screen.sessions}
        assert mine in shown and theirs not in shown
        assert "this folder" in str(screen.query_one("#sessions-title").render())
        folder_column = [str(c.label) for c in screen.table.columns.values()].index("folder")
        assert str(screen.table.get_row(mine)[folder_column]) == "this folder"
        await pilot.press("f5")  # every folder's
        assert {mine, theirs} <= {row["id"] for row in screen.sessions}
        shown_folder = str(screen.table.get_row(theirs)[folder_column])  # its end, when long
        assert shown_folder.endswith("/ws2") and shown_folder.lstrip("…") in str(other.resolve())
        await pilot.press("f5")  # this folder's again
        assert theirs not in {row["id"] for row in screen.sessions}


async def test_resuming_another_folders_session_asks_where_its_tools_run(folders, monkeypatch):
    here, other = folders
    store = Store()
    theirs = seed(store, other, "theirs")
    app = tui(["--approval", "never-ask"], monkeypatch, here)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        first = app.session.engine.session.id
        await pilot.press("f5", "f5")
        screen = app.screen
        screen.table.move_cursor(row=[row["id"] for row in screen.sessions].index(theirs))
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, FolderScreen), "the folder question")
        await pilot.press("escape")  # back: the session in use goes on
        await until(pilot, lambda: not isinstance(app.screen, FolderScreen), "the question to close")
        assert app.session.engine.session.id == first
        await pilot.press("f5", "f5")
        screen = app.screen
        screen.table.move_cursor(row=[row["id"] for row in screen.sessions].index(theirs))
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, FolderScreen), "the folder question")
        await pilot.press("o")  # its own folder
        await until(
            pilot,
            lambda: app.session is not None and app.session.engine.session.id == theirs,
            "the session of ws2",
        )
        await ready(pilot)
        assert app.workspace == Path(str(other.resolve())) and app.session.engine.workspace == other.resolve()
        assert "/ws2 · theirs" in str(app.query_one("#topbar").render())  # the top bar names the folder
        app.prompt.set_text("!shell pwd")
        await pilot.press("enter")
        await settle(pilot)
        assert app.chat.tool_blocks()[-1].result.strip() == str(other.resolve())


async def test_resume_of_another_folders_session_at_start_runs_here_when_told(folders, monkeypatch):
    here, other = folders
    store = Store()
    theirs = seed(store, other, "theirs")
    app = tui(["--resume", theirs, "--approval", "never-ask"], monkeypatch, here)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: isinstance(app.screen, FolderScreen), "the folder question")
        await pilot.press("h")  # here
        await ready(pilot)
        assert app.session.engine.session.id == theirs and app.session.engine.workspace == here.resolve()
        said = " ".join(n.text for n in app.chat.notices("session"))
        assert f"was started in {other.resolve()}" in said and f"now run in {here.resolve()}" in said
        app.prompt.set_text("!shell pwd")
        await pilot.press("enter")
        await settle(pilot)
        assert app.chat.tool_blocks()[-1].result.strip() == str(here.resolve())
    # it belongs to this folder now: -c here continues it
    assert Store().find_session(theirs).workspace == str(here.resolve())


async def test_resume_with_workspace_given_does_not_ask(folders, monkeypatch):
    here, other = folders
    theirs = seed(Store(), other, "theirs")
    app = tui(["--resume", theirs, "--workspace", str(here)], monkeypatch, here)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        assert not isinstance(app.screen, FolderScreen) and app.session.engine.session.id == theirs


def _run(folder: Path, *argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "app", *argv],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=120,
        env={**__import__("os").environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )


def test_one_shot_continue_and_resume_say_which_folder(folders):
    here, other = folders
    first = _run(other, "-p", "remember ws2", "--json")
    assert first.returncode == 0, first.stderr
    done = _run(here, "-c", "-p", "anything here?")
    assert done.returncode == 0, done.stderr
    assert f"no session of {here.resolve()} to continue" in done.stderr
    theirs = Store().list_sessions(workspace=str(other.resolve()))[0]["id"]
    resumed = _run(here, "--resume", theirs, "-p", "go on")
    assert f"session {theirs} was started in {other.resolve()}" in resumed.stderr
    assert f"its tools now run in {here.resolve()}" in resumed.stderr
