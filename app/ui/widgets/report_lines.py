"""A long plain-text report (a request's record) that draws only the lines on screen.

    view = ReportLines(id="requests-detail-body")    # inside a VerticalScroll, which scrolls it
    view.update(report_text)                          # titles bold, "Why: …" emphasised
    view.update(hint, styled=False)                   # as it is

A `Static` draws every line of its text again at each update — 11–26 ms for a request's ~180-line record,
updated ~4 times a turn, each time in one of the stream's first frames. This widget wraps the text once per
width and draws a line when the compositor asks for it: an update costs the lines on screen (3–4 ms).
The text is shown as it is (through `app.textsafe.display`), never read as markup; a selection copies what is drawn.
"""

from __future__ import annotations

from textual.content import Content
from textual.selection import Selection
from textual.strip import Strip
from textual.widget import Widget

from app.textsafe import display
from app.ui.selection import selected_cells


def styled_line(index: int, line: str) -> Content:
    """Section titles (the first line, and a line that ends with ':') bold; the explanation emphasised."""
    if index == 0 or (line.endswith(":") and not line.startswith(" ")):
        return Content.styled(line, "bold")
    if line.startswith("Why: "):
        return Content.assemble(("Why: ", "bold"), (line[5:], "italic"))
    return Content(line)


class ReportLines(Widget):
    """Plain text wrapped to the width, drawn with the line API (see the module's docstring)."""

    DEFAULT_CSS = "ReportLines { height: auto; }"

    def __init__(self, text: str = "", *, styled: bool = False, **kwargs) -> None:
        super().__init__(**kwargs)
        self._text = display(text)
        self._styled = styled
        self._width = -1
        self._rows: list[Content] = []

    @property
    def text(self) -> str:
        return self._text

    def update(self, text: str, *, styled: bool = True) -> None:
        shown = display(text)
        if (shown, styled) == (self._text, self._styled):
            return
        self._text, self._styled = shown, styled
        self._width = -1
        self.refresh(layout=True)

    def _wrapped(self, width: int) -> list[Content]:
        if width != self._width:
            self._rows = [
                row
                for index, line in enumerate(self._text.split("\n"))
                for row in (
                    (styled_line(index, line) if self._styled else Content(line)).wrap(width) or [Content("")]
                )
            ]
            self._width = width
        return self._rows

    def get_content_height(self, container, viewport, width: int) -> int:
        return len(self._wrapped(max(1, width)))

    def render_line(self, y: int) -> Strip:
        rows = self._wrapped(max(1, self.size.width))
        if y >= len(rows):
            return Strip.blank(0)
        row = rows[y]
        if (cells := selected_cells(self, y, row.cell_length)) is not None:
            row = row.stylize(self.screen.get_visual_style("screen--selection"), *cells)
        return Strip(row.render_segments(self.visual_style)).apply_offsets(0, y)

    def get_selection(self, selection: Selection) -> tuple[str, str] | None:
        return selection.extract("\n".join(row.plain for row in self._wrapped(max(1, self.size.width)))), "\n"

    def selection_updated(self, selection: Selection | None) -> None:
        self.refresh()
