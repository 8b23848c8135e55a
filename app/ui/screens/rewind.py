"""`/rewind`: the session's prompts, newest first; Enter goes back to just before one (the conversation),
`f` also puts back the files changed since. The screen's result is (message id, files?) or None."""

from __future__ import annotations

import time
from collections.abc import Callable

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static

from app.model.ages import age
from app.model.messages import Message
from app.textsafe import display_line

PROMPT_CHARS = 70


class RewindScreen(ModalScreen[tuple[str, bool] | None]):
    """Choose a prompt to go back to."""

    HELP = """\
## Rewind

Go back to just before one of your prompts. The conversation the model sees becomes what it was
then (the full log is kept: `/rewind compact` goes forward again) and the prompt is put back in the
prompt box to edit and send.

- **Enter**: the conversation only — files stay as they are
- **f**: the conversation **and the files** write_file / edit_file changed since (shell commands are
  not checkpointed)
- **Esc**: back
"""
    BINDINGS = [
        Binding("escape", "cancel", "Back", id="rewind.back"),
        Binding("enter", "choose(False)", "Conversation", id="rewind.conversation", priority=True),
        Binding("f", "choose(True)", "Conversation + files", id="rewind.files"),
    ]

    def __init__(self, points: list[tuple[Message, int]], *, now: Callable[[], float] = time.time) -> None:
        super().__init__()
        self.points = list(reversed(points))  # newest first
        self.now = now

    def compose(self) -> ComposeResult:
        with Vertical(id="rewind-dialog", classes="dialog"):
            yield Static(
                f"Rewind — {len(self.points)} prompts · Enter: the conversation · f: and the files · "
                f"Esc back",
                id="rewind-title",
                classes="dialog-title",
                markup=False,
            )
            yield DataTable(id="rewind-table", cursor_type="row", zebra_stripes=True)

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("turn", "prompt", "when", "files changed since")
        now = self.now()
        for message, changed in self.points:
            first = display_line(" ".join(message.text.split()))
            first = first if len(first) <= PROMPT_CHARS else first[: PROMPT_CHARS - 1] + "…"
            table.add_row(
                str(message.meta.turn),
                first,
                f"{age(now - (message.meta.created_at or now))} ago",
                f"{changed} file{'' if changed == 1 else 's'}" if changed else "—",
                key=message.id,
            )
        table.focus()

    def action_cancel(self) -> None:
        self.dismiss(None)

    def action_choose(self, files: bool) -> None:
        table = self.query_one(DataTable)
        if not self.points or table.cursor_row < 0:
            self.dismiss(None)
            return
        self.dismiss((self.points[table.cursor_row][0].id, files))
