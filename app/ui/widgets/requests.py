"""Requests panel: every request the session sent, and why the gateway rejected one.

A table (time, route, purpose, predicted and actual bytes, status, latency, failure kind,
ladder level), one row per request, appended as RequestStarted arrives and completed by
RequestFinished. Selecting a row shows the stored record (read in a worker, never on the UI loop): a plain-text
explanation (`app.ui.explain`), the classifier's evidence, the request and response headers
(secrets redacted), the error body and a preview of the body sent. **Alt+C** copies the
explanation, **Alt+R** the whole record (the app puts it on the clipboard: `CopyRequested`), **Enter** opens
the whole record on top of everything. The table shows the columns that fit the inspector's width (status,
kind, size and time are the last to go: `app.ui.widgets.fit_columns`), chosen again on a resize.
Records read from the store go through `app.textsafe.display_data`, as live events do: a
gateway's body or header is shown, never interpreted.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict, deque
from datetime import tzinfo
from typing import TYPE_CHECKING, Any, ClassVar

from rich.style import Style
from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.coordinate import Coordinate
from textual.widgets import DataTable, Static

from app.model.events import CapLearned, Event, RequestFinished, RequestStarted
from app.sizes import format_size
from app.textsafe import display_data
from app.ui.textual_ext.steady_scrollbars import SteadyDataTable
from app.ui.widgets.common import Clock, CopyRequested, Panel, clock_text, set_cell, trim_table
from app.ui.widgets.fit_columns import Column, ColumnFit, fit_hint, table_width
from app.ui.widgets.report_lines import ReportLines

if TYPE_CHECKING:
    from app.engine.api.records import SessionRecords

MAX_ROWS = 1_000
MAX_CAP_EVENTS = 200
# A selected request still stored as sending (the session's writer is a moment behind its events) is read
# again, at most this often, this long apart.
BEHIND_READS = 3
BEHIND_WAIT_S = 0.25
EMPTY_DETAIL = (
    "No requests yet. Every request appears here; select one to see its headers, body, "
    "error body and why it was rejected."
)
# Status and kind first: the inspector is narrow, and "why was this rejected" is the question. The rank says
# which columns stay when the width is short (0 is the last to go; the record has every field, Enter).
COLUMNS = (
    ("time", "time"),
    ("status", "status"),
    ("kind", "kind"),
    ("predicted", "predicted"),
    ("actual", "actual"),
    ("ms", "latency"),
    ("L", "level"),
    ("purpose", "purpose"),
    ("route", "route"),
)
RANKS = {
    "status": 0,
    "kind": 1,
    "predicted": 2,
    "time": 3,
    "actual": 4,
    "purpose": 5,
    "latency": 6,
    "route": 7,
}
HINT = "enter: whole record · alt+c: copy why · alt+r: copy record"


class RequestsPanel(Panel):
    NAME = "requests"
    TITLE = "Requests"
    HANDLES = (RequestStarted, RequestFinished, CapLearned)
    COMPONENT_CLASSES: ClassVar[set[str]] = {"requests--failed", "requests--sending", "requests--ok"}
    BINDINGS = [
        Binding(
            "alt+c",
            "copy_explanation",
            "Copy why",
            id="requests.copy",
            tooltip="Copy the plain-text explanation of the selected request",
        ),
        Binding(
            "alt+r",
            "copy_report",
            "Copy record",
            id="requests.copy_record",
            tooltip="Copy the whole record: sizes, evidence, redacted headers, error body",
        ),
        Binding(
            "ctrl+l", "reload", "Reload", id="requests.reload", show=False, tooltip="Reload from the store"
        ),
    ]
    HELP = """\
## Requests

Every request of the session: when, which route, what for (chat, summary, probe), the
**predicted** and **actual** body bytes, the HTTP status, latency, the failure **kind** the
classifier decided and the recovery ladder **level** it was sent at.

Select a request to see *why*: a plain-text explanation, the classifier's evidence (status,
phrases, headers, body shape), the request and response headers with secrets redacted, the
error body and a preview of what was sent.

- **Enter** opens the whole record on top of everything (Esc closes it).
- **Alt+C** (or **Ctrl+C** when nothing runs) copies the explanation, **Alt+R** the whole record —
  ready for your network team.
- The table shows the columns that fit its width: the route, the latency, the ladder level and the purpose
  go first, status and kind last. **F3** widens the inspector; the hint line names what is hidden.
"""

    def __init__(self, *, clock: Clock = time.time, tz: tzinfo | None = None) -> None:
        super().__init__(clock=clock, tz=tz)
        self.records: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self.cap_events: deque[dict[str, Any]] = deque(maxlen=MAX_CAP_EVENTS)
        self.selected_id: str | None = None
        self.explanation = ""
        self.detail_text = ""
        self._order: deque[str] = deque()
        self._cap_by_request: dict[str, int] = {}
        self._last_rejected: str | None = None
        self._stored: set[str] = set()  # rows that hold their whole stored record (no read when selected)
        self._open_when_read: str | None = None  # Enter came while that row's record was being read
        self._reading: str | None = None  # the request whose stored record a worker reads now
        self.table = SteadyDataTable(id="requests-table", cursor_type="row", zebra_stripes=True)
        self.fit = ColumnFit([Column(label, key, RANKS.get(key, 8)) for label, key in COLUMNS])

    def compose(self) -> ComposeResult:
        yield self.table
        with VerticalScroll(id="requests-detail"):
            yield ReportLines(EMPTY_DETAIL, id="requests-detail-body")
        yield Static(HINT, id="requests-hint", classes="panel-hint", markup=False)

    def on_mount(self) -> None:
        for label, key in COLUMNS:
            self.table.add_column(label, key=key)
        # Panel.on_mount runs next: sync, bind, replay events.

    # -- columns by width ------------------------------------------------------------------------------
    def on_resize(self, _event: events.Resize) -> None:
        self.call_after_refresh(self._fit_width)

    def _fit_width(self) -> None:
        if self.fit.choose(table_width(self.table)):
            self._rebuild()

    def _rebuild(self) -> None:
        """The table again with the chosen columns (the width changed, or a wider value arrived)."""
        table, selected = self.table, self._cursor_id()
        labels = {key: label for label, key in COLUMNS}
        table.clear(columns=True)
        for key in self.fit.shown:
            table.add_column(labels[key], key=key)
        for request_id, record in self.records.items():
            table.add_row(*self.fit.row(self._cell_map(record)), key=request_id)
        if selected is not None and selected in self.records:
            table.move_cursor(row=table.get_row_index(selected), animate=False)
        self.query_one("#requests-hint", Static).update(fit_hint(self.fit, HINT))

    def _cell_map(self, record: dict[str, Any]) -> dict[str, Any]:
        return dict(zip((key for _label, key in COLUMNS), self._cells(record), strict=True))

    @on(DataTable.RowSelected, "#requests-table")
    def _open_record(self, event: DataTable.RowSelected) -> None:
        """Enter on a row: the whole record on top of everything."""
        event.stop()
        request_id = self._cursor_id()
        if request_id is None:
            return
        if request_id != self.selected_id or not self.detail_text:
            self._show_detail(request_id)
        if self._reading == request_id:  # its headers and bodies are on their way: open it with them
            self._open_when_read = request_id
            return
        self._open_screen(request_id)

    def _open_screen(self, request_id: str) -> None:
        if self.detail_text:
            from app.ui.widgets.record_screen import RecordScreen

            self.app.push_screen(
                RecordScreen(f"request {request_id}", self.detail_text, copy_what="request record")
            )

    def focus_panel(self) -> None:
        self.table.focus()

    # -- events ----------------------------------------------------------------------------------------
    def on_engine_event(self, event: Event) -> None:
        if isinstance(event, RequestStarted):
            record = {
                "id": event.request_id,
                "created_at": event.started_at or self.now(),
                "route": event.route,
                "purpose": event.purpose,
                "predicted_bytes": event.predicted_bytes,
                "actual_bytes": None,
                "status": None,
                "latency_ms": None,
                "kind": None,
                "reason": "",
                "evidence": [],
                "attempt": event.attempt,
                "level": event.level,
                "outcome": "sending",
            }
            self._upsert({**record, **self.records.get(event.request_id, {})})  # a stored row wins
        elif isinstance(event, RequestFinished):
            record = self.records.get(event.request_id) or {
                "id": event.request_id,
                "created_at": event.started_at or self.now(),
                "attempt": 0,
                "evidence": [],
            }
            record.update(
                {
                    "route": event.route,
                    "purpose": event.purpose,
                    "predicted_bytes": event.predicted_bytes,
                    "actual_bytes": event.bytes,
                    "status": event.status,
                    "latency_ms": event.latency_ms,
                    "kind": event.kind,
                    "reason": event.reason,
                    "level": event.level,
                    "outcome": "failed" if event.kind else "ok",
                }
            )
            self._upsert(record)
            if event.kind:
                self._last_rejected = event.request_id
        elif isinstance(event, CapLearned):
            self.cap_events.append(
                {
                    "cap_bytes": event.cap_bytes,
                    "rejected_bytes": event.rejected_bytes,
                    "created_at": self.now(),
                    "assumed": event.assumed,
                }
            )
            if self._last_rejected and not event.assumed:
                self._cap_by_request.setdefault(self._last_rejected, event.cap_bytes)
            if self.selected_id:
                self._show_detail(self.selected_id, refetch=False)

    def _upsert(self, record: dict[str, Any]) -> None:
        request_id = record["id"]
        self._stored.discard(request_id)  # an event changed it: the stored record is read again when selected
        table = self.table
        cells = self._cell_map(record)
        self.fit.measure(cells)
        refit = self.fit.choose()
        if request_id in self.records and request_id in table.rows:
            self.records[request_id] = record
            if refit:
                self._rebuild()
            else:
                for key in self.fit.shown:
                    set_cell(table, request_id, key, cells[key])
            if request_id == self.selected_id:
                self._show_detail(request_id)
            return
        follow = table.row_count == 0 or table.cursor_row >= table.row_count - 1
        self.records[request_id] = record
        self._order.append(request_id)
        if refit:
            self._rebuild()
        else:
            table.add_row(*self.fit.row(cells), key=request_id)
        while len(self.records) > MAX_ROWS:
            self.records.popitem(last=False)
        trim_table(table, self._order, MAX_ROWS)
        if follow:
            table.move_cursor(row=table.row_count - 1, animate=False)
            if table.row_count == 1:
                self._show_detail(request_id)

    def _cells(self, record: dict[str, Any]) -> tuple:
        outcome = record.get("outcome")
        state = (
            "failed"
            if record.get("kind") or outcome == "failed"
            else "sending"
            if outcome == "sending"
            else "ok"
        )
        style: Style = self.get_component_rich_style(f"requests--{state}", partial=True)
        status = record.get("status")
        status_text = "…" if outcome == "sending" else (str(status) if status else "—")
        latency = record.get("latency_ms")
        return (
            clock_text(record.get("created_at"), self.tz),
            Text(status_text, style=style),
            Text(record.get("kind") or "", style=style),
            format_size(record.get("predicted_bytes")),
            format_size(record.get("actual_bytes")) if record.get("actual_bytes") else "—",
            "…" if latency is None else f"{latency:.0f}",
            str(record.get("level") or 0),
            Text(record.get("purpose") or ""),  # Text, not str: a DataTable reads a str as markup
            Text(record.get("route") or ""),
        )

    # -- the stored records ------------------------------------------------------------------------------------
    def on_session_shown(self) -> None:
        self.reload()

    def reload(self) -> None:
        if self.reader is not None and self.ready:
            self._load()

    @work(exclusive=True, group="requests-load")
    async def _load(self) -> None:
        reader = self.reader
        if reader is None:
            return

        def fetch() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
            rows = [record.row() for record in reader.requests(MAX_ROWS)]
            caps = [{**item.event.to_json(), "created_at": item.at} for item in reader.caps_learned()]
            return display_data(rows), display_data(caps)

        rows, caps = await asyncio.to_thread(fetch)
        if not self.alive or self.reader is not reader:
            return  # removed (another session) or rebound meanwhile
        self._apply_history(rows, caps)

    def _apply_history(self, rows: list[dict[str, Any]], caps: list[dict[str, Any]]) -> None:
        """Rebuild once from the store (a resumed session), keeping rows that only events told of."""
        stored_ids = {row["id"] for row in rows}
        merged: OrderedDict[str, dict[str, Any]] = OrderedDict()
        for row in rows:
            live = self.records.get(row["id"])
            merged[row["id"]] = {**row, **({"latency_ms": live.get("latency_ms")} if live else {})}
        for request_id, record in self.records.items():
            if request_id not in stored_ids:
                merged[request_id] = record
        while len(merged) > MAX_ROWS:
            merged.popitem(last=False)
        known = {(e.get("cap_bytes"), e.get("rejected_bytes")) for e in self.cap_events}
        for event in caps:
            if (event.get("cap_bytes"), event.get("rejected_bytes")) not in known:
                self.cap_events.appendleft(event)
        selected = self.selected_id
        self.records = merged
        self._stored = stored_ids & merged.keys()
        self._order = deque(merged)
        self.fit.reset()
        for record in merged.values():
            self.fit.measure(self._cell_map(record))
        self.fit.choose()
        self._rebuild()
        if selected is not None and selected in merged:
            self.table.move_cursor(row=self.table.get_row_index(selected), animate=False)
        elif merged:
            self.table.move_cursor(row=len(merged) - 1, animate=False)
        self._show_detail(self._cursor_id())

    def _read_again(self, reader: SessionRecords, request_id: str, attempt: int) -> None:
        if self.alive and self.reader is reader and self.selected_id == request_id:
            self._read_record(reader, request_id, attempt)

    @work(exclusive=True, group="requests-read")
    async def _read_record(self, reader: SessionRecords, request_id: str, attempt: int = 0) -> None:
        """The full stored record (headers, bodies, evidence) of the selected request, read off the UI loop;
        shown only if that request is still the one selected (the cursor may have moved on meanwhile)."""
        self._reading = request_id
        try:
            stored = await asyncio.to_thread(reader.request, request_id)
        except Exception:  # a busy or broken database: the detail keeps what the events said
            stored = None
        finally:
            if self._reading == request_id:
                self._reading = None
        if not self.alive or self.reader is not reader or self.selected_id != request_id:
            return  # removed, rebound, or another row is selected now: its own read shows it
        record = self.records.get(request_id)
        if stored is not None and record is not None:
            found = display_data(stored.row())
            # The session writes its rows in order on a thread of its own: a request that just ended may still
            # be stored as sending. Its event is newer then: the row only fills in what the event did not say.
            behind = found.get("outcome") == "sending" and record.get("outcome") not in (None, "sending")
            live_latency = record.get("latency_ms")
            if behind:
                record.update({k: v for k, v in found.items() if record.get(k) in (None, "", [], {})})
            else:
                record.update({k: v for k, v in found.items() if v not in (None, "") or k not in record})
            if record.get("latency_ms") is None:
                record["latency_ms"] = live_latency
            if found.get("outcome") != "sending":
                self._stored.add(request_id)
            elif behind and attempt < BEHIND_READS:  # read it again once the session has written its end
                self.set_timer(BEHIND_WAIT_S, lambda: self._read_again(reader, request_id, attempt + 1))
            self._render_detail(request_id)
        if self._open_when_read == request_id:
            self._open_when_read = None
            self._open_screen(request_id)

    # -- detail ----------------------------------------------------------------------------------------------
    def _cursor_id(self) -> str | None:
        table = self.table
        if table.row_count == 0:
            return None
        row = min(max(0, table.cursor_row), table.row_count - 1)
        return table.coordinate_to_cell_key(Coordinate(row, 0)).row_key.value

    @on(DataTable.RowHighlighted, "#requests-table")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        current = self._cursor_id()  # the cursor now, not when the message was sent
        if current != self.selected_id:
            self._show_detail(current)

    def _show_detail(self, request_id: str | None, *, refetch: bool = True) -> None:
        """Show `request_id`'s record as known now; its stored record (headers, bodies) follows from a worker,
        unless the row holds it already."""
        self.selected_id = request_id
        if request_id != self._open_when_read:
            self._open_when_read = None
        self._render_detail(request_id)
        reader = self.reader
        if refetch and reader is not None and request_id in self.records and request_id not in self._stored:
            self._read_record(reader, request_id)

    def _render_detail(self, request_id: str | None) -> None:
        body = self.query_one("#requests-detail-body", ReportLines)
        record = self.records.get(request_id) if request_id else None
        if record is None or request_id is None:
            self.explanation, self.detail_text = "", ""
            body.update(EMPTY_DETAIL, styled=False)
            return
        # the classifier's tables come with it: imported when a request is opened, not before the first frame
        from app.ui.explain import explain_request, request_report

        self.explanation = explain_request(
            record,
            list(self.records.values()),
            learned_cap=self._cap_by_request.get(request_id),
            cap_events=list(self.cap_events),
        )
        self.detail_text = request_report(record, self.explanation)
        body.update(self.detail_text)

    # -- actions -----------------------------------------------------------------------------------------------
    def action_copy_explanation(self) -> None:
        if self.explanation:
            self.post_message(CopyRequested(self.explanation, what="request explanation"))

    def action_copy_report(self) -> None:
        if self.detail_text:
            self.post_message(CopyRequested(self.detail_text, what="request record"))

    def action_reload(self) -> None:
        self.reload()
