"""One record of an inspector table, whole, on top of everything: Enter on a row of the Requests or Hooks
panel. The inspector's tables show what fits their width; this shows every field, wrapped to the screen.

    app.push_screen(RecordScreen("request r_… · route work", report_text, copy_what="request record"))

Esc, Enter or q closes it; Alt+C copies the text (the app's clipboard path: OSC 52, then the system's).
It lives beside the panels that open it (app.ui.screens imports the widgets, never the other way).
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from app.textsafe import display_line
from app.ui.widgets.common import CopyRequested
from app.ui.widgets.report_lines import ReportLines


class RecordScreen(ModalScreen[None]):
    """A record's whole text (see the module's docstring)."""

    BINDINGS = [
        Binding("escape,enter,q", "dismiss", "Close", id="record.close"),
        Binding("alt+c,c", "copy", "Copy", id="record.copy", tooltip="Copy the whole record as plain text"),
    ]

    def __init__(self, title: str, text: str, *, copy_what: str = "record") -> None:
        super().__init__()
        self.title_text = title
        self.text = text
        self.copy_what = copy_what

    def compose(self) -> ComposeResult:
        with Vertical(id="record-dialog"):
            yield Static(
                f"{display_line(self.title_text)} — Esc closes · Alt+C copies",
                classes="dialog-title",
                markup=False,
            )
            with VerticalScroll(id="record-body"):
                yield ReportLines(self.text, styled=True, id="record-text")

    def on_mount(self) -> None:
        self.query_one("#record-body").focus()

    def action_copy(self) -> None:
        self.post_message(CopyRequested(self.text, what=self.copy_what))

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(result)
