"""The cells of a drawn line that the user's mouse selection covers, for widgets that draw with the line API.

cells = selected_cells(widget, y, strip.cell_length)   # (start, end) or None
"""

from __future__ import annotations

from textual.widget import Widget


def selected_cells(widget: Widget, y: int, length: int) -> tuple[int, int] | None:
    """The selected cells `(start, end)` of `widget`'s line `y`, `length` cells long; None if none are."""
    selection = widget.text_selection
    span = selection.get_span(y) if selection is not None else None
    if span is None:
        return None
    start, end = span
    end = length if end == -1 else end
    return (start, end) if end > start else None
