"""Archive panel: browse, search and restore what compaction and recovery archived (CCR).

A table of the session's archived segments (key, reason, size, age, preview), newest first,
an Input for full-text search (SQLite FTS5, prefix match per word), and a preview of the
selected segment. **Enter** asks to recall the segment into the conversation, as the recall
tool would; **Ctrl+Z** asks to restore the view before the last compaction.

Recall and rewind change the conversation, so the panel only *asks*: it posts
`ArchiveRecallRequested(key)` / `RewindRequested()`, which bubble to the app. The app decides
(e.g. not while a turn is streaming) and carries them out through its busy guard; the panel
never changes the conversation itself. Archived content is outside text: every place it is shown (the
row, the preview, the copy) goes through `app.textsafe.display`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from datetime import tzinfo

from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.coordinate import Coordinate
from textual.message import Message
from textual.widgets import DataTable, Input, Static

from app.model.ages import age
from app.model.archive import ArchiveEntry
from app.model.events import Compaction, Event
from app.model.levels import archive_reason_label
from app.sizes import format_size
from app.textsafe import display
from app.ui.textual_ext.steady_scrollbars import SteadyScrollbars
from app.ui.widgets.common import (
    Clock,
    CopyRequested,
    Panel,
    clock_text,
    head_text,
    one_line,
    set_cell,
)
from app.ui.widgets.fit_columns import CELL_PADDING, Column, ColumnFit, table_width

MAX_ROWS = 500
SEARCH_LIMIT = 100
PREVIEW_CHARS = 20_000
ROW_PREVIEW_CHARS = 60  # the most a row's preview shows; less when the inspector is narrower
MIN_ROW_PREVIEW = 10  # a preview narrower than this is left out (the pane below shows the segment)
# Which columns stay when the inspector is narrow (0 is the last to go; the key orders the rows); the preview
# takes what is left.
FIXED_COLUMNS = (("key", "key", 0), ("reason", "reason", 1), ("size", "size", 2), ("age", "age", 3))
HINT = "enter recall · ctrl+z rewind view · shift+tab search · alt+c copy"
EMPTY_PREVIEW = (
    "No archived segments yet. Compaction and recovery archive everything they drop or cut; "
    "each segment can be recalled here with Enter."
)


class ArchiveRecallRequested(Message):
    """The user asked to put archived segment `key` back into the conversation."""

    def __init__(self, key: str) -> None:
        super().__init__()
        self.key = key


class RewindRequested(Message):
    """The user asked to restore the view before the last compaction (`/rewind compact`)."""


class ArchiveTable(SteadyScrollbars, DataTable):
    """The archive's table: Enter recalls (a mouse click only selects, it never recalls)."""

    BINDINGS = [
        Binding(
            "enter",
            "recall_row",
            "Recall",
            id="archive.recall",
            tooltip="Put the selected segment back into the conversation",
        ),
    ]

    def action_recall_row(self) -> None:
        for ancestor in self.ancestors:
            if isinstance(ancestor, ArchivePanel):
                ancestor.action_recall()
                return


AGE_REFRESH_S = 10.0  # how often the age column is brought up to date


class ArchivePanel(Panel):
    NAME = "archive"
    TITLE = "Archive"
    HANDLES = (Compaction,)
    BINDINGS = [
        Binding(
            "enter",
            "recall",
            "Recall",
            id="archive.recall_panel",
            show=False,
            tooltip="Put the selected segment back into the conversation",
        ),
        Binding(
            "ctrl+z",
            "rewind",
            "Rewind view",
            id="archive.rewind",
            tooltip="Restore the view before the last compaction (/rewind compact)",
        ),
        Binding("alt+c", "copy", "Copy", id="archive.copy", tooltip="Copy the selected segment's content"),
        Binding("ctrl+l", "reload", "Reload", id="archive.reload", show=False, tooltip="Reload the archive"),
    ]
    HELP = """\
## Archive

Everything a compaction or a recovery dropped or cut is archived, content-addressed
(`<<ccr:KEY>>`), and can be brought back. Newest first.

- Type in the search box (**Tab** or **Shift+Tab** reaches it; a letter typed on the table goes to
  the prompt) for a full-text search; every word matches the
  start of a word.
- **Enter** recalls the selected segment into the conversation, as the `recall` tool would
  (the model sees it on the next request).
- **Ctrl+Z** restores the view before the last compaction (`/rewind compact`);
  messages sent since are kept.
- **Alt+C** (or **Ctrl+C** when nothing runs) copies the selected segment.
"""

    def __init__(self, *, clock: Clock = time.time, tz: tzinfo | None = None) -> None:
        super().__init__(clock=clock, tz=tz)
        self.entries: dict[str, ArchiveEntry] = {}
        self.query_text = ""
        self.preview_key: str | None = None
        self.preview_text = ""
        self._search_mode = False
        self.table = ArchiveTable(id="archive-table", cursor_type="row", zebra_stripes=True)
        self.fit = ColumnFit([Column(label, key, rank) for label, key, rank in FIXED_COLUMNS])
        self.preview_chars = ROW_PREVIEW_CHARS
        self.search = Input(placeholder="search the archive (Shift+Tab from the list)", id="archive-search")

    def compose(self) -> ComposeResult:
        yield self.search
        yield self.table
        yield Static(id="archive-preview-title", classes="panel-subtitle", markup=False)
        with VerticalScroll(id="archive-preview"):
            yield Static(EMPTY_PREVIEW, id="archive-preview-body", markup=False)
        yield Static(HINT, id="archive-hint", classes="panel-hint", markup=False)

    def on_mount(self) -> None:
        self._add_columns()
        self.set_interval(AGE_REFRESH_S, self.refresh_ages, name="archive ages")
        # Panel.on_mount runs next (Textual calls each class's handler): sync, bind, replay events.

    # -- columns by width ------------------------------------------------------------------------------
    def _add_columns(self) -> None:
        for key in self.fit.shown:
            self.table.add_column(key, key=key)
        if self.preview_chars:
            self.table.add_column("preview", key="preview")

    def on_resize(self, _event: events.Resize) -> None:
        self.call_after_refresh(self._fit_width)

    def _fit_width(self, *, force: bool = False) -> None:
        width = table_width(self.table)
        if width <= 0:
            return
        changed = self.fit.choose(width)
        left = width - sum(self.fit.needed(key) for key in self.fit.shown) - 2 * CELL_PADDING
        preview = min(ROW_PREVIEW_CHARS, left) if left >= MIN_ROW_PREVIEW else 0
        if changed or preview != self.preview_chars or force:
            self.preview_chars = preview
            self._rebuild()

    @staticmethod
    def _fixed(entry: ArchiveEntry, now: float) -> dict[str, object]:
        return {
            "key": entry.key,
            "reason": archive_reason_label(entry.reason),
            "size": format_size(entry.bytes),
            "age": age(now - entry.created_at, compact=True),
        }

    def _cells(self, entry: ArchiveEntry, now: float) -> list[object]:
        row = self.fit.row(self._fixed(entry, now))
        if self.preview_chars:
            row.append(Text(display(one_line(entry.content, self.preview_chars))))
        return row

    def _rebuild(self) -> None:
        """The table again with the chosen columns, rows in the order they were, the cursor where it was."""
        table, selected = self.table, self.selected_key
        order = [row.key.value for row in table.ordered_rows if row.key.value in self.entries]
        table.clear(columns=True)
        self._add_columns()
        now = self.now()
        for key in order:
            table.add_row(*self._cells(self.entries[key], now), key=key)
        if selected in self.entries:
            table.move_cursor(row=table.get_row_index(selected), animate=False)

    def refresh_ages(self) -> None:
        """Ages grow while the list stands still (it is reloaded only when the archive changes)."""
        if "age" not in self.fit.shown:
            return
        now = self.now()
        for key, entry in self.entries.items():
            set_cell(self.table, key, "age", age(now - entry.created_at, compact=True))

    def focus_panel(self) -> None:
        self.table.focus()

    # -- state for the app and the tests -----------------------------------------------------------
    @property
    def selected_key(self) -> str | None:
        table = self.table
        if table.row_count == 0:
            return None
        row = min(max(0, table.cursor_row), table.row_count - 1)
        return table.coordinate_to_cell_key(Coordinate(row, 0)).row_key.value

    @property
    def row_keys(self) -> list[str]:
        """The table's keys, top to bottom."""
        return [row.key.value for row in self.table.ordered_rows if row.key.value is not None]

    # -- session -----------------------------------------------------------------------------------------
    def on_session_shown(self) -> None:
        self.reload()

    def on_engine_event(self, event: Event) -> None:
        if isinstance(event, Compaction) and (event.archive_keys or event.outcome == "applied"):
            self.reload()

    def reload(self) -> None:
        """Fetch the list (or the current search) again, in a worker."""
        if self.reader is None or not self.ready:
            return
        self._load(self.query_text)

    @work(exclusive=True, group="archive-load")
    async def _load(self, query: str) -> None:
        reader = self.reader
        if reader is None:
            return
        limit = SEARCH_LIMIT if query.strip() else MAX_ROWS
        entries = await asyncio.to_thread(reader.archive, query, limit)
        if not self.alive or self.reader is not reader:
            return  # removed (another session) or rebound meanwhile
        self._apply(entries, search=bool(query.strip()))

    def _apply(self, entries: Sequence[ArchiveEntry], *, search: bool) -> None:
        table = self.table
        selected = self.selected_key
        if search or self._search_mode:  # the set of rows changes wholesale: start afresh
            table.clear()
            self.entries = {}
        self._search_mode = search
        now = self.now()
        for entry in entries:
            if entry.key in self.entries:
                self.entries[entry.key] = entry
                if "age" in self.fit.shown:
                    set_cell(table, entry.key, "age", age(now - entry.created_at, compact=True))
                continue
            self.entries[entry.key] = entry
            self.fit.measure(self._fixed(entry, now))
            table.add_row(*self._cells(entry, now), key=entry.key)
        if not search:
            created = {k: e.created_at for k, e in self.entries.items()}
            table.sort("key", key=lambda k: created.get(k, 0.0), reverse=True)
            extra = list(table.ordered_rows)[MAX_ROWS:]
            for row in extra:
                table.remove_row(row.key)
                if row.key.value is not None:
                    self.entries.pop(row.key.value, None)
        if selected and selected in self.entries:
            table.move_cursor(row=table.get_row_index(selected), animate=False)
        self._fit_width()  # a wider reason or size may leave the preview less room
        self.set_class(not self.entries, "-empty")
        self._show_preview(self.selected_key)

    def sync(self) -> None:
        if self.ready:
            self._show_preview(self.selected_key)

    # -- preview -------------------------------------------------------------------------------------------
    @on(DataTable.RowHighlighted, "#archive-table")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._show_preview(self.selected_key)  # the cursor now, not when the message was sent

    def _show_preview(self, key: str | None) -> None:
        title = self.query_one("#archive-preview-title", Static)
        body = self.query_one("#archive-preview-body", Static)
        entry = self.entries.get(key) if key else None
        self.preview_key = key if entry else None
        if entry is None:
            if self.query_text.strip():
                self.preview_text = display(f"Nothing in the archive matches {self.query_text!r}.")
            elif self.source is None:
                self.preview_text = "Waiting for the session…"
            else:
                self.preview_text = EMPTY_PREVIEW
            title.update("")
            body.update(self.preview_text)
            return
        sources = len(entry.source_ids)
        origin = f" · from {sources} message{'s' if sources != 1 else ''}" if sources else ""
        title.update(
            f"ccr:{entry.key} · {archive_reason_label(entry.reason)} · {format_size(entry.bytes)} · "
            f"{clock_text(entry.created_at, self.tz)}{origin}"
        )
        self.preview_text = display(head_text(entry.content, PREVIEW_CHARS))
        body.update(Text(self.preview_text))
        self.query_one("#archive-preview", VerticalScroll).scroll_home(animate=False)

    # -- search --------------------------------------------------------------------------------------------
    @on(Input.Changed, "#archive-search")
    def _search_changed(self, event: Input.Changed) -> None:
        self.query_text = event.value
        self.reload()

    @on(Input.Submitted, "#archive-search")
    def _search_submitted(self, event: Input.Submitted) -> None:
        self.table.focus()

    def action_focus_search(self) -> None:
        self.search.focus()

    def action_reload(self) -> None:
        self.reload()

    # -- recall, rewind, copy ----------------------------------------------------------------------------
    def action_recall(self) -> None:
        key = self.selected_key
        if key is None:
            self.notify("Nothing selected to recall.", severity="warning")
            return
        self.post_message(ArchiveRecallRequested(key))

    def action_rewind(self) -> None:
        self.post_message(RewindRequested())

    def action_copy(self) -> None:
        key = self.selected_key
        entry = self.entries.get(key) if key else None
        if entry is not None:
            self.post_message(CopyRequested(display(entry.content), what=f"archived segment ccr:{entry.key}"))
