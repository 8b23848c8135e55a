"""The sessions screen (F5, /sessions): search, resume, rename, delete.

Sessions belong to a folder (`app.model.session_folders`): the screen lists this folder's sessions,
each row showing its folder, and **F5** again (or **Ctrl+A**) shows every folder's (a folder with no
session starts there). Typing filters at once by title, id, folder, route and model, and a worker
searches the messages of every session too (the store's `search_sessions`); every letter types (a
search for "dry run" once began with **d**, the delete key, and its **y** confirmed the deletion).
Enter resumes the highlighted session (the screen's result is its id); **Ctrl+R** renames it in
place; **Del** or **Ctrl+D** deletes it after a confirmation — never the session in use, nor one
another bulkhead holds. The screen holds no store: the app hands it what to call (`SessionsActions`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Input, Static

from app.model.ages import age
from app.model.session_folders import shown_folder
from app.textsafe import display_line
from app.ui.screens.confirm import ConfirmScreen
from app.ui.screens.list_typing import typed_into


@dataclass(frozen=True)
class SessionsActions:
    """What the screen may do, each raising an exception whose text is shown when it cannot."""

    search: Callable[[str], list[str]]  # ids of sessions whose messages or title hold the text
    rename: Callable[[str, str], str]  # (id, title) → the title stored
    delete: Callable[[str], object]  # what it returns is not used


def _matches(row: dict[str, Any], needle: str) -> bool:
    return any(
        needle in str(row.get(key) or "").lower() for key in ("title", "id", "route", "model", "workspace")
    )


# From this many cells inside the dialog (90% of the screen) every column shows; narrower, the route column
# goes and titles are cut shorter (the id, title, folder, messages and age fit 100 columns).
WIDE_COLUMNS = 130


class SessionsScreen(ModalScreen[str | None]):
    """Browse sessions; Enter resumes the highlighted one, Esc goes back."""

    HELP = """\
## Sessions

- this folder's sessions; **F5** again (or **Ctrl+A**): every folder's, and back
- **type** (or **/**): search titles, ids, folders, routes and every message · **↑ / ↓**: choose
- **Enter**: resume it here (a session of another folder asks where its tools run) · **Ctrl+R**: rename
  it · **Del** / **Ctrl+D**: delete it (asks first) · **Esc**: back
"""
    BINDINGS = [
        Binding("escape", "cancel", "Back", id="sessions.back"),
        Binding("enter", "resume", "Resume", id="sessions.resume", priority=True),
        Binding("ctrl+r", "rename", "Rename", id="sessions.rename"),
        Binding("delete,ctrl+d", "delete", "Delete", id="sessions.delete"),
        Binding("f5,ctrl+a", "folders", "All folders", id="sessions.folders", priority=True),
        Binding("slash", "search", "Search", id="sessions.search", show=False),
    ]

    def __init__(
        self,
        sessions: list[dict[str, Any]],
        *,
        current_id: str | None = None,
        now: Callable[[], float] = time.time,
        actions: SessionsActions | None = None,
        folder: str | None = None,
    ) -> None:
        """`folder`: this folder (`session_folders.folder_key`): its sessions are shown first; None: every one."""
        super().__init__()
        self.every_session = list(sessions)
        self.folder = folder
        # This folder's sessions, unless it has none (then every folder's, and the title says so).
        self.all_folders = folder is None or not any(row.get("workspace") == folder for row in sessions)
        self.all_sessions = self._in_scope()
        self.sessions = list(self.all_sessions)  # the rows shown, in order
        self.current_id = current_id
        self.now = now
        self.actions = actions
        self.found_in_messages: set[str] = set()
        self.status = ""
        self._cursor_id: str | None = None  # the highlighted session, kept across refills

    def compose(self) -> ComposeResult:
        with Vertical(id="sessions-dialog"):
            yield Static("", id="sessions-title", markup=False)
            # Not selected on focus: the letter typed on the table that moved the focus here would be replaced
            # by the next one ("nginx" searched for "ginx").
            yield Input(
                placeholder="search titles and messages…", id="sessions-search", select_on_focus=False
            )
            yield DataTable(id="sessions-table", cursor_type="row", zebra_stripes=True)
            yield Input(id="sessions-rename", placeholder="a new title — Enter saves, Esc keeps the old one")
            yield Static(
                "Enter resumes · F5 this folder / every folder · Ctrl+R renames · Del / Ctrl+D deletes · "
                "type to search · Esc back",
                id="sessions-keys",
                markup=False,
            )

    @property
    def table(self) -> DataTable:
        return self.query_one("#sessions-table", DataTable)

    @property
    def search_box(self) -> Input:
        return self.query_one("#sessions-search", Input)

    @property
    def rename_box(self) -> Input:
        return self.query_one("#sessions-rename", Input)

    def on_mount(self) -> None:
        self._wide = self.app.size.width * 0.9 - 4 >= WIDE_COLUMNS  # the dialog is 90% of the screen
        self.table.add_columns(
            "id", "title", "folder", *(("route",) if self._wide else ()), "msgs", "updated"
        )
        self.rename_box.display = False
        self._fill()
        self.table.focus()

    def _in_scope(self) -> list[dict[str, Any]]:
        if self.all_folders:
            return list(self.every_session)
        return [row for row in self.every_session if row.get("workspace") == self.folder]

    # -- the table -----------------------------------------------------------------------------------
    def _fill(self) -> None:
        table = self.table
        keep = self._cursor_id
        table.clear()
        now = self.now()
        title_chars = 60 if self._wide else 36
        for row in self.sessions:
            mark = " ●" if row["id"] == self.current_id else ""
            # A title is the first prompt's words: Text (a DataTable reads a str as markup), made safe.
            title = Text(display_line((row.get("title") or "(untitled)")[:title_chars]))
            folder = str(row.get("workspace") or "")
            shown = "this folder" if folder and folder == self.folder else shown_folder(folder, 28)
            route = (Text(display_line(f"{row.get('route') or ''} · {row.get('model') or ''}")),)
            table.add_row(
                row["id"] + mark,
                title,
                Text(display_line(shown)),
                *(route if self._wide else ()),
                str(row.get("messages", 0)),
                f"{age(now - float(row.get('updated_at') or now))} ago",
                key=row["id"],
            )
        ids = [row["id"] for row in self.sessions]
        if keep in ids:
            table.move_cursor(row=ids.index(keep))
        self._update_title()

    def _update_title(self) -> None:
        shown, total = len(self.sessions), len(self.all_sessions)
        count = f"{total}" if shown == total else f"{shown} of {total}"
        if self.all_folders:
            scope = "every folder's" + (
                " (none of this folder yet)" if self.folder is not None and not self._here_count() else ""
            )
        else:
            scope = f"this folder's (F5: every folder's, {len(self.every_session)})"
        text = f"Sessions — {count} · {scope}" + (f" · {self.status}" if self.status else "")
        self.query_one("#sessions-title", Static).update(display_line(text))

    def _here_count(self) -> int:
        return sum(1 for row in self.every_session if row.get("workspace") == self.folder)

    def action_folders(self) -> None:
        """F5 / Ctrl+A: every folder's sessions, or this folder's again."""
        if self.folder is None:
            return
        if self.all_folders and not self._here_count():
            self.status = "this folder has no session yet"
            self._update_title()
            return
        self.all_folders = not self.all_folders
        self.all_sessions = self._in_scope()
        self.status = ""
        self._apply_filter()

    @on(DataTable.RowHighlighted)
    def _row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._cursor_id = event.row_key.value if event.row_key is not None else None

    def _highlighted(self) -> dict[str, Any] | None:
        row = self.table.cursor_row
        return self.sessions[row] if self.sessions and 0 <= row < len(self.sessions) else None

    # -- search --------------------------------------------------------------------------------------
    def action_search(self) -> None:
        self.search_box.focus()

    def on_key(self, event) -> None:
        if self.focused is self.table:  # typing on the table starts a search: no letter acts on a session
            typed_into(self.search_box, event, besides="/")

    @on(Input.Changed, "#sessions-search")
    def _search_changed(self, event: Input.Changed) -> None:
        self.found_in_messages = set()
        self._apply_filter()
        text = event.value.strip()
        if text and self.actions is not None:
            self.status = "searching the messages…"
            self._update_title()
            self._search_messages(text)
        else:
            self.status = ""
            self._update_title()

    def _apply_filter(self) -> None:
        needle = self.search_box.value.strip().lower()
        self.sessions = [
            row
            for row in self.all_sessions
            if not needle or _matches(row, needle) or row["id"] in self.found_in_messages
        ]
        self._fill()

    @work(thread=True, exclusive=True, group="sessions-search", exit_on_error=False, name="search sessions")
    def _search_messages(self, text: str) -> None:
        assert self.actions is not None  # started only when there are actions
        try:
            ids = set(self.actions.search(text))
            error = ""
        except Exception as exc:  # a search that fails says so and filters by title only
            ids, error = set(), f"searching the messages failed: {exc}"
        self.app.call_from_thread(self._searched, text, ids, error)

    def _searched(self, text: str, ids: set[str], error: str) -> None:
        if text != self.search_box.value.strip():
            return  # typing went on; a newer search is running
        self.found_in_messages = ids
        self.status = error
        self._apply_filter()

    @on(Input.Submitted, "#sessions-search")
    def _search_submitted(self) -> None:
        self.table.focus()

    # -- actions -------------------------------------------------------------------------------------
    def action_cancel(self) -> None:
        if self.rename_box.display:
            self._end_rename()
            return
        if self.focused is self.search_box and self.search_box.value:
            self.search_box.value = ""
            self.table.focus()
            return
        self.dismiss(None)

    def action_resume(self) -> None:
        if self.focused is self.rename_box:
            self._save_rename()
            return
        if self.focused is self.search_box:
            self.table.focus()
            return
        row = self._highlighted()
        self.dismiss(row["id"] if row else None)

    def action_rename(self) -> None:
        row = self._highlighted()
        if row is None or self.actions is None:
            return
        box = self.rename_box
        box.value = row.get("title") or ""
        box.display = True
        box.focus()

    def _save_rename(self) -> None:
        row = self._highlighted()
        if row is None or self.actions is None:
            self._end_rename()
            return
        try:
            title = self.actions.rename(row["id"], self.rename_box.value)
        except Exception as exc:  # shown, the old title stays
            self.status = f"not renamed: {exc}"
        else:
            row["title"] = title
            self.status = f"renamed “{display_line(title)[:40]}”"
        self._end_rename()
        self._fill()

    def _end_rename(self) -> None:
        self.rename_box.display = False
        self.table.focus()

    def action_delete(self) -> None:
        row = self._highlighted()
        if row is None or self.actions is None:
            return
        if row["id"] == self.current_id:
            self.status = "that is the session in use — /new first, then delete it"
            self._update_title()
            return
        title = display_line(row.get("title") or "(untitled)")[:60]
        question = (
            f"Delete session {row['id']} “{title}”?\n{row.get('messages', 0)} messages, its archive, "
            f"requests and folder go too. This cannot be undone."
        )
        self.app.push_screen(ConfirmScreen(question), callback=lambda yes: self._delete(row, yes))

    def _delete(self, row: dict[str, Any], yes: bool | None) -> None:
        if not yes:
            self.status = "kept"
            self._update_title()
            return
        if self.actions is None:
            return
        try:
            self.actions.delete(row["id"])
        except Exception as exc:  # e.g. another bulkhead holds it: say so, keep the row
            self.status = f"not deleted: {exc}"
        else:
            self.every_session = [r for r in self.every_session if r["id"] != row["id"]]
            self.all_sessions = [r for r in self.all_sessions if r["id"] != row["id"]]
            self.status = f"deleted {row['id']}"
        self._apply_filter()
