"""Which of a table's columns to show in the width it has: the least important go first, and a column
that is shown is never cut.

The inspector is narrow (64 cells beside a 160-column chat, 40 beside a 100-column one). A DataTable
wider than its widget scrolls sideways, so the columns on the right were cut at the edge — the route,
the purpose, a long failure kind. Instead each column has a rank; the table shows, in their usual order,
the columns that fit, keeping the lowest ranks first, and chooses again when the widget is resized or a
wider value arrives. The whole record is one key away (Enter on a row), whatever is hidden.

    fit = ColumnFit(COLUMNS)                 # (label, key, rank): rank 0 is the last to go
    fit.measure(cells)                       # key → the cell's text, for each row as it is added
    if fit.choose(table_width):              # True when the columns to show changed: rebuild the table
        ...
    fit.shown                                # the keys to show, in the table's order
    fit.hidden_labels                        # what is left out, for a hint
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rich.cells import cell_len
from rich.text import Text

CELL_PADDING = 1  # DataTable's default, on each side of a cell


@dataclass(frozen=True)
class Column:
    label: str
    key: str
    rank: int  # 0 is kept longest; the highest rank is the first left out


def table_width(table: Any) -> int:
    """The cells a DataTable has for its columns: its width less a vertical scrollbar's (kept free, so a
    scrollbar that appears later cuts nothing)."""
    return max(0, table.size.width - table.styles.scrollbar_size_vertical)


def text_width(value: object) -> int:
    if isinstance(value, Text):
        return value.cell_len
    return cell_len(str(value))


class ColumnFit:
    """The columns of one table that fit its width (see the module's docstring)."""

    def __init__(self, columns: Sequence[Column]) -> None:
        self.columns = tuple(columns)
        self.widths = {column.key: text_width(column.label) for column in self.columns}
        self.shown: tuple[str, ...] = tuple(column.key for column in self.columns)
        self.width: int | None = None

    def measure(self, cells: Mapping[str, object]) -> None:
        """A row's cells (key → value): its columns grow to the widest value seen."""
        for key, value in cells.items():
            if key in self.widths:
                self.widths[key] = max(self.widths[key], text_width(value))

    def reset(self) -> None:
        """The rows are about to be filled again: widths from the labels only."""
        self.widths = {column.key: text_width(column.label) for column in self.columns}

    def needed(self, key: str) -> int:
        return self.widths[key] + 2 * CELL_PADDING

    def choose(self, width: int | None = None) -> bool:
        """Choose the columns for `width` (the last width when None); True when they changed."""
        if width is not None:
            self.width = width
        if self.width is None or self.width <= 0:
            return False
        kept: set[str] = set()
        used = 0
        for column in sorted(self.columns, key=lambda column: column.rank):
            need = self.needed(column.key)
            if used + need <= self.width:  # a narrower, less important column may still fit
                kept.add(column.key)
                used += need
        if not kept:  # not even the first fits: show it anyway (cut), rather than an empty table
            kept.add(min(self.columns, key=lambda column: column.rank).key)
        shown = tuple(column.key for column in self.columns if column.key in kept)
        changed = shown != self.shown
        self.shown = shown
        return changed

    def row(self, cells: Mapping[str, object]) -> list[object]:
        """The cells of the shown columns, in order."""
        return [cells.get(key, "") for key in self.shown]

    @property
    def hidden_labels(self) -> list[str]:
        return [column.label for column in self.columns if column.key not in self.shown]


def fit_hint(fit: ColumnFit, hint: str) -> str:
    """A panel's hint line, led by what the width hides (the line is cut at the panel's edge: news first)."""
    hidden = fit.hidden_labels
    if not hidden:
        return hint
    return f"hidden: {', '.join(hidden)} (F3 widens) · {hint}"
