"""The session is open in another bulkhead: read it, fork it, or start a new one (the screen's result)."""

from __future__ import annotations

from typing import Literal

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from app.lease import SessionHeld
from app.textsafe import display

LeaseChoice = Literal["read-only", "fork", "new", "take-over"]


class LeaseScreen(ModalScreen[LeaseChoice]):
    """One writer per session: the other bulkhead keeps writing; this one reads, forks, or starts afresh."""

    HELP = """\
## Session open elsewhere

Another bulkhead is writing this session. Two processes writing one session would lose turns, so:

- **r**: open it read-only — browse it, copy from it; nothing is added
- **f**: fork it — a new session with the conversation so far; what you add goes there
- **n** / **Esc**: start a new session instead
- **u**: take it over — only offered for a lease from another machine older than `lease_foreign_max_age`
  (bulkhead cannot check a process there; take it only if that bulkhead is gone)
"""
    BINDINGS = [
        Binding("r", "choose('read-only')", "Read-only", id="lease.read_only"),
        Binding("f", "choose('fork')", "Fork", id="lease.fork"),
        Binding("n,escape", "choose('new')", "New session", id="lease.new"),
        Binding("u", "choose('take-over')", "Take over", id="lease.take_over", show=False),
    ]

    def __init__(self, held: SessionHeld) -> None:
        super().__init__()
        self.held = held

    def compose(self) -> ComposeResult:
        title = f" “{display(self.held.title)}”" if self.held.title else ""
        with Vertical(id="lease-dialog"):
            yield Static("Session open in another bulkhead", id="lease-title", markup=False)
            yield Static(
                f"Session {self.held.session_id}{title} is being written by another bulkhead, "
                f"{self.held.holder.describe()}. Only one may write it at a time.",
                id="lease-body",
                markup=False,
            )
            if self.held.stale_foreign:
                yield Static(
                    f"The lease was taken on {display(self.held.holder.host)} long ago and bulkhead cannot check a "
                    f"process there. If that bulkhead is gone, take the session over (u).",
                    id="lease-stale",
                    markup=False,
                )
            with Horizontal(id="lease-buttons"):
                yield Button("Read-only (r)", id="read-only", variant="primary")
                yield Button("Fork into a new session (f)", id="fork")
                yield Button("New session (n)", id="new")
                if self.held.stale_foreign:
                    yield Button("Take over (u)", id="take-over")

    def on_mount(self) -> None:
        self.query_one("#read-only", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id)  # type: ignore[arg-type]

    def action_choose(self, choice: LeaseChoice) -> None:
        if choice == "take-over" and not self.held.stale_foreign:
            return  # offered only for an old lease from another machine
        self.dismiss(choice)
