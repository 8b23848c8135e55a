"""The live view's main pane: one row per proxied request, newest at the bottom.

    table = ProxyList()
    table.upsert(record)         # a copy of a ProxyRecord, as RequestStarted / RequestFinished carry it
    table.selected               # the record under the cursor (a `ProxyList.Chosen` is posted when it moves)

Columns: time, client, request (method and path), wire format, model, request bytes (→ what went
upstream when shrunk), status (upstream → client when the proxy answered otherwise), verdict (the
classifier's kind and the judged cause), latency, and what the proxy did. Everything in a cell came from
outside (a User-Agent, a path, a model name) and is shown through `app.textsafe`.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from datetime import tzinfo
from typing import ClassVar

from rich.style import Style
from rich.text import Text
from textual import on
from textual.coordinate import Coordinate
from textual.message import Message
from textual.widgets import DataTable

from app.proxy.records import Action, ProxyRecord
from app.sizes import format_size
from app.textsafe import display_line
from app.ui.widgets.common import clock_text, one_line, set_cell, trim_table

MAX_ROWS = 2_000  # rows kept on screen; every record stays in the store
# What happened first (a narrow terminal shows these), then who asked what.
COLUMNS = (
    ("time", "time"),
    ("status", "status"),
    ("verdict", "verdict"),
    ("action", "action"),
    ("bytes", "bytes"),
    ("ms", "latency"),
    ("client", "client"),
    ("request", "request"),
    ("wire", "wire"),
    ("model", "model"),
)
SENDING = "sending"
FAILED_ACTIONS = (Action.TRANSLATED, Action.CONTENT_BLOCKED, Action.REJECTED_EARLY, Action.UNREACHABLE)


def row_state(record: ProxyRecord) -> str:
    """`sending`, `ok`, `changed` (the proxy answered or rewrote it) or `failed`."""
    if record.latency_ms is None:
        return SENDING
    if record.action in FAILED_ACTIONS or record.action is Action.RESENT:
        return "changed"
    if record.action is Action.SHRUNK:
        return "changed" if (record.status or 0) < 400 else "failed"
    if record.action is Action.DROPPED or (record.status or 0) >= 400 or record.status is None:
        return "failed"
    return "ok"


def status_text(record: ProxyRecord) -> str:
    if record.latency_ms is None:
        return "…"
    upstream = "—" if record.status is None else str(record.status)
    if record.client_status is not None and record.client_status != record.status:
        return f"{upstream}→{record.client_status}"
    return upstream


def size_text(record: ProxyRecord) -> str:
    if record.request_bytes is None:
        return "…" if record.latency_ms is None else "?"
    text = format_size(record.request_bytes)
    if record.sent_bytes is not None and record.sent_bytes != record.request_bytes:
        text += f"→{format_size(record.sent_bytes)}"
    return text


def verdict_text(record: ProxyRecord) -> str:
    if not record.kind:
        return ""
    cause = f" · {record.cause}" if record.cause and record.cause not in record.kind else ""
    return record.kind + cause


def action_text(record: ProxyRecord) -> str:
    return SENDING if record.latency_ms is None else str(record.action)


class ProxyList(DataTable[str | Text]):
    """The proxied requests, one row each; `Chosen` says which record is under the cursor."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "proxy-list--ok",
        "proxy-list--sending",
        "proxy-list--changed",
        "proxy-list--failed",
    }
    DEFAULT_CSS = """
    ProxyList > .proxy-list--ok { color: $success; }
    ProxyList > .proxy-list--sending { color: $text-muted; }
    ProxyList > .proxy-list--changed { color: $warning; }
    ProxyList > .proxy-list--failed { color: $error; }
    """

    class Chosen(Message):
        """The cursor is on `record_id` (None: the list is empty)."""

        def __init__(self, record_id: str | None) -> None:
            super().__init__()
            self.record_id = record_id

    def __init__(self, *, tz: tzinfo | None = None, id: str | None = "proxy-list") -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        self.tz = tz
        self.records: OrderedDict[str, ProxyRecord] = OrderedDict()
        self._order: deque[str] = deque()
        self._chosen: str | None = None

    def on_mount(self) -> None:
        for label, key in COLUMNS:
            self.add_column(label, key=key)

    @property
    def selected(self) -> ProxyRecord | None:
        record_id = self.cursor_id()
        return self.records.get(record_id) if record_id else None

    def cursor_id(self) -> str | None:
        if self.row_count == 0:
            return None
        row = min(max(0, self.cursor_row), self.row_count - 1)
        return self.coordinate_to_cell_key(Coordinate(row, 0)).row_key.value

    def upsert(self, record: ProxyRecord) -> None:
        """Add `record`'s row, or bring it up to date; the cursor follows the newest row when it was on
        the last one."""
        cells = self.cells(record)
        if record.id in self.records and record.id in self.rows:
            self.records[record.id] = record
            for (_, key), value in zip(COLUMNS, cells, strict=True):
                set_cell(self, record.id, key, value)
            if record.id == self._chosen:
                self.post_message(self.Chosen(record.id))  # the detail shows the finished record
            return
        follow = self.row_count == 0 or self.cursor_row >= self.row_count - 1
        self.records[record.id] = record
        self._order.append(record.id)
        self.add_row(*cells, key=record.id)
        while len(self.records) > MAX_ROWS:
            self.records.popitem(last=False)
        trim_table(self, self._order, MAX_ROWS)
        if follow:
            self.move_cursor(row=self.row_count - 1, animate=False)

    def cells(self, record: ProxyRecord) -> tuple[str | Text, ...]:
        try:
            style = self.get_component_rich_style(f"proxy-list--{row_state(record)}", partial=True)
        except KeyError:  # a row before the list's first styling (a client already sending at start-up)
            style = Style()
        path = record.path.split("?", 1)[0]
        return (
            clock_text(record.started_at, self.tz),
            Text(status_text(record), style=style),
            Text(verdict_text(record), style=style),
            Text(action_text(record), style=style),
            size_text(record),
            "…" if record.latency_ms is None else f"{record.latency_ms:.0f}",
            Text(one_line(display_line(record.client), 26)),  # Text, not str: a str cell is read as markup
            Text(one_line(display_line(f"{record.method} {path}"), 32)),
            Text(record.wire),
            Text(one_line(display_line(record.model), 24)),
        )

    @on(DataTable.RowHighlighted)
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        current = self.cursor_id()
        if current != self._chosen:
            self._chosen = current
            self.post_message(self.Chosen(current))
