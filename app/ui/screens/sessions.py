"""The sessions screen: recent sessions, Enter resumes one (the screen's result is its id)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static

from app.textsafe import display_line


def age(seconds: float) -> str:
    """`42 s`, `5 min`, `3 h`, `2 d` ago."""
    seconds = max(0.0, seconds)
    if seconds < 60:
        return f"{int(seconds)} s ago"
    if seconds < 3600:
        return f"{int(seconds // 60)} min ago"
    if seconds < 86400:
        return f"{int(seconds // 3600)} h ago"
    return f"{int(seconds // 86400)} d ago"


class SessionsScreen(ModalScreen[str | None]):
    """Browse sessions; Enter resumes the highlighted one, Esc goes back."""

    HELP = """\
## Sessions

- **↑ / ↓**: choose · **Enter**: resume it here · **Esc**: back
"""
    BINDINGS = [
        Binding("escape", "cancel", "Back", id="sessions.back"),
        Binding("enter", "resume", "Resume", id="sessions.resume", priority=True),
    ]

    def __init__(self, sessions: list[dict[str, Any]], *, current_id: str | None = None,
                 now: Callable[[], float] = time.time) -> None:
        super().__init__()
        self.sessions = sessions
        self.current_id = current_id
        self.now = now

    def compose(self) -> ComposeResult:
        with Vertical(id="sessions-dialog"):
            yield Static(f"Sessions — {len(self.sessions)} · Enter resumes · Esc back", id="sessions-title",
                         markup=False)
            yield DataTable(id="sessions-table", cursor_type="row", zebra_stripes=True)

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("id", "title", "route", "messages", "updated")
        now = self.now()
        for row in self.sessions:
            mark = " ●" if row["id"] == self.current_id else ""
            # A title is the first prompt's words: Text (a DataTable reads a str as markup), made safe.
            title = Text(display_line((row.get("title") or "(untitled)")[:60]))
            table.add_row(row["id"] + mark, title, Text(display_line(f"{row.get('route') or ''} · "
                                                                     f"{row.get('model') or ''}")),
                          str(row.get("messages", 0)), age(now - float(row.get("updated_at") or now)),
                          key=row["id"])
        table.focus()

    def action_cancel(self) -> None:
        self.dismiss(None)

    def action_resume(self) -> None:
        table = self.query_one(DataTable)
        if not self.sessions or table.cursor_row < 0:
            self.dismiss(None)
            return
        self.dismiss(self.sessions[table.cursor_row]["id"])
