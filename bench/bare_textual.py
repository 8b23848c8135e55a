"""A bare Textual app with the widget kinds bulkhead's first frame has, for bench/startup.py to compare against.

    python3 bench/bare_textual.py     # a top bar ("bulkhead · bare"), Markdown, TextArea, DataTable,
                                      # TabbedContent with panes, Footer; Ctrl+Q quits

No bulkhead import: what Textual alone costs to paint the same kinds of widgets on the same terminal.
"""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import DataTable, Footer, Markdown, Static, TabbedContent, TabPane, TextArea


class Bare(App):
    def compose(self) -> ComposeResult:
        yield Static("bulkhead · bare Textual", id="top")
        with Horizontal():
            with Vertical():
                yield Markdown("# Welcome\n\nA chat would be here.")
                yield TextArea("", id="prompt")
            with TabbedContent():
                for title in ("Requests", "Payload", "Caps", "Archive", "Cost"):
                    with TabPane(title):
                        table = DataTable()
                        table.add_columns("time", "status", "size")
                        yield table
        yield Footer()


if __name__ == "__main__":
    Bare().run()
