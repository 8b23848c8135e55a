"""`/memory review`: the facts the memory worker suggests (memory = "suggest"), one by one — accept, edit, reject.

Accepting writes the fact to the project's instructions file through `/memory`'s own door (never through a link,
never outside the project); rejecting keeps it out for good (the worker never suggests it again); Esc leaves the
rest waiting. The screen holds no engine: it is given the facts and what accepting and rejecting do.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Input, Static

from app.textsafe import display_line

if TYPE_CHECKING:
    from app.engine.api.memory import Fact

Accept = Callable[["Fact", str | None], str]  # (fact, edited text or None) -> what happened, in words
Reject = Callable[["Fact"], str]


class MemoryReviewScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    MemoryReviewScreen { align: center middle; }
    #memory-dialog { width: 90%; height: 80%; border: round $primary; background: $surface; }
    #memory-table { height: 1fr; }
    #memory-edit { margin: 0 1; }
    #memory-notes { height: auto; padding: 0 1; color: $text-muted; }
    """
    HELP = """\
## Memory review

The memory worker reads the conversation a few turns behind — and whatever a compaction is about to drop — and
suggests durable facts (decisions, conventions, commands that work, paths, gotchas). Nothing reaches your
repository unless you accept it here.

- **a** / **Enter**: accept — appended to the project's AGENTS.md (or CLAUDE.md), as `/memory TEXT` does
- **e**: edit the fact, then Enter accepts the edited text (Esc stops editing)
- **r**: reject — never suggested again · **Esc**: close (the rest keep waiting)
"""
    BINDINGS = [
        Binding("escape", "close", "Close", id="memory.close"),
        Binding("a", "accept", "Accept", id="memory.accept"),
        Binding("e", "edit", "Edit", id="memory.edit"),
        Binding("r", "reject", "Reject", id="memory.reject"),
    ]

    def __init__(self, facts: list[Fact], *, accept: Accept, reject: Reject, target: str) -> None:
        super().__init__()
        self.facts = list(facts)
        self.accept_fact = accept
        self.reject_fact = reject
        self.target = target
        self.said: list[str] = []

    def compose(self) -> ComposeResult:
        with Vertical(id="memory-dialog", classes="dialog"):
            yield Static("", id="memory-title", classes="dialog-title", markup=False)
            yield DataTable(id="memory-table", cursor_type="row", zebra_stripes=True)
            yield Input(id="memory-edit", placeholder="the fact, as it should be written")
            yield Static("", id="memory-notes", markup=False)

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("fact", "from")
        self.query_one("#memory-edit", Input).display = False
        self._fill()
        table.focus()

    def _fill(self) -> None:
        table = self.query_one(DataTable)
        row = table.cursor_row
        table.clear()
        for fact in self.facts:
            table.add_row(display_line(fact.text), display_line(fact.source))
        if self.facts:
            table.move_cursor(row=min(row, len(self.facts) - 1))
        count = len(self.facts)
        self.query_one("#memory-title", Static).update(
            f"Memory — {count} fact{'s' if count != 1 else ''} to review · a accept · e edit · r reject · Esc closes"
        )
        notes = [f"Accepted facts go to {display_line(self.target)}."]
        notes += [display_line(line) for line in self.said[-3:]]
        if not self.facts:
            notes.append("Nothing waits for review.")
        self.query_one("#memory-notes", Static).update("\n".join(notes))

    def _current(self) -> Fact | None:
        if not self.facts:
            return None
        return self.facts[min(self.query_one(DataTable).cursor_row, len(self.facts) - 1)]

    def _decided(self, fact: Fact, said: str) -> None:
        self.facts.remove(fact)
        self.said.append(said)
        self._fill()

    def action_accept(self, text: str | None = None) -> None:
        fact = self._current()
        if fact is None:
            return
        try:
            said = self.accept_fact(fact, text)
        except (OSError, ValueError) as exc:  # a link, an unwritable file: the fact stays, the reason shown
            self.said.append(f"not written: {exc}")
            self._fill()
            return
        self._decided(fact, said)

    def action_reject(self) -> None:
        fact = self._current()
        if fact is not None:
            self._decided(fact, self.reject_fact(fact))

    def action_edit(self) -> None:
        fact = self._current()
        if fact is None:
            return
        editor = self.query_one("#memory-edit", Input)
        editor.value = fact.text
        editor.display = True
        editor.focus()

    @on(Input.Submitted, "#memory-edit")
    def _edited(self, event: Input.Submitted) -> None:
        event.stop()
        editor = self.query_one("#memory-edit", Input)
        editor.display = False
        self.query_one(DataTable).focus()
        self.action_accept(event.value)

    @on(DataTable.RowSelected)
    def _selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_accept()

    def action_close(self) -> None:
        editor = self.query_one("#memory-edit", Input)
        if editor.display:  # Esc while editing: stop editing
            editor.display = False
            self.query_one(DataTable).focus()
            return
        self.dismiss(None)
