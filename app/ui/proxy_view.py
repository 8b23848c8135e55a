"""`bulkhead proxy`'s live view: the proxied requests where the chat would be, the inspector beside them.

    app = ProxyApp(proxy, forwarder, start_text=...)   # a started app.proxy.background.ProxyProcess,
    app.run()                                          # its events' Forwarder; q or Ctrl+C stops it

The proxy runs in its own process and never waits for the screen: its events come over a pipe, are
posted here (`app.ui.proxy_feed.Forwarder`) and drawn at most ten times a second. Selecting a request
shows its record (headers redacted, everything from outside escaped: `app.ui.proxy_detail`); before the
first request the pane shows what to paste into each client.
"""

from __future__ import annotations

import dataclasses
import time
from datetime import tzinfo
from typing import TYPE_CHECKING, Any, ClassVar

from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Footer, Static

from app.model.events import Event, ViewChanged
from app.proxy.background import ProxyProcess
from app.proxy.records import (
    CapLearned,
    ProxyEvent,
    ProxyRecord,
    ProxyStopped,
    RequestFinished,
    RequestStarted,
)
from app.sizes import format_size
from app.textsafe import display_line
from app.ui.clipboard import copy_text
from app.ui.proxy_detail import record_report
from app.ui.proxy_feed import Forwarder, ProxyCounters, ProxyEventPosted, inspector_events, price
from app.ui.proxy_inspector import ProxyInspector
from app.ui.proxy_list import ProxyList
from app.ui.widgets.common import Clock, PanelSource, read_styles
from app.ui.widgets.report_lines import ReportLines

if TYPE_CHECKING:
    from app.engine.api.records import SessionRecords

CATCH_UP_S = 0.1  # the view catches up with the proxy's events at most ten times a second


class ProxyApp(App[int]):
    TITLE = "bulkhead proxy"
    CSS = read_styles("proxy.tcss")
    ENABLE_COMMAND_PALETTE = False
    BINDINGS: ClassVar = [
        Binding("q", "stop", "Quit", id="proxy.quit", tooltip="Stop the proxy and quit"),
        Binding(
            "ctrl+c",
            "stop",
            "Quit",
            id="proxy.quit_ctrl_c",
            priority=True,
            show=False,
            tooltip="Stop the proxy and quit",
        ),
        Binding(
            "question_mark",
            "start_text",
            "Paste lines",
            id="proxy.start_text",
            tooltip="Show what to paste into each client",
        ),
        Binding(
            "c",
            "copy_record",
            "Copy record",
            id="proxy.copy",
            tooltip="Copy the selected request's record (headers redacted)",
        ),
        Binding(
            "left_square_bracket",
            "step_tab(-1)",
            "Prev tab",
            id="proxy.previous_tab",
            show=False,
            tooltip="Show the previous inspector tab",
        ),
        Binding(
            "right_square_bracket",
            "step_tab(1)",
            "Next tab",
            id="proxy.next_tab",
            tooltip="Show the next inspector tab",
        ),
    ]

    def __init__(
        self,
        proxy: ProxyProcess,
        forwarder: Forwarder,
        *,
        start_text: str,
        clock: Clock = time.time,
        tz: tzinfo | None = None,
    ) -> None:
        super().__init__()
        self.proxy, self.forwarder, self.start_text = proxy, forwarder, start_text
        self.clock, self.tz = clock, tz
        self.counters = ProxyCounters()
        self.list = ProxyList(tz=tz)
        self.inspector = ProxyInspector(clock=clock, tz=tz)
        self.title_line = Static(id="proxy-title", markup=False)
        self.detail = ReportLines(start_text, id="proxy-detail-body")
        self.detail_text = ""  # the selected record's report ("" while the start text shows)
        self.stopping = False
        self.gone = False  # the proxy's process ended without being asked
        self._inbox: list[ProxyEvent] = []
        self._catch_up_due = False
        self._detail_due = False

    def compose(self) -> ComposeResult:
        yield self.title_line
        with Horizontal(id="proxy-main"):
            with Vertical(id="proxy-left"):
                yield self.list
                with VerticalScroll(id="proxy-detail"):
                    yield self.detail
            yield self.inspector
        yield Footer()

    def on_mount(self) -> None:
        self.records: SessionRecords | None = None
        if self.proxy.store is not None:
            from app.engine.api.records import SessionRecords

            self.records = SessionRecords(self.proxy.store, self.proxy.session_id)
            self.inspector.show_session(
                PanelSource(self.proxy.session_id, self.records, counters=self.counters.counters)
            )
        self._seed_caps()
        self._title()
        self.list.add_class("-empty")
        self.list.focus()
        self.forwarder.attach(self)

    @work(thread=True, group="caps")
    def _seed_caps(self) -> None:
        caps = self.proxy.status().get("caps") or {}  # asked of the proxy over HTTP: off the UI's loop
        self.call_from_thread(self.inspector.caps.seed, caps)

    # -- the proxy's events ------------------------------------------------------------------------
    @on(ProxyEventPosted)
    def _proxy_event(self, message: ProxyEventPosted) -> None:
        """Kept until the next catch-up: the screen is drawn at most `CATCH_UP_S` apart however busy the
        proxy is (each drawing takes the interpreter from the proxy's thread for a while)."""
        self._inbox.append(message.event)
        if not self._catch_up_due:
            self._catch_up_due = True
            self.set_timer(CATCH_UP_S, self._catch_up)

    def _catch_up(self) -> None:
        self._catch_up_due = False
        events, self._inbox = self._inbox, []
        to_price: list[tuple[Any, str, str, str]] = []
        finished: list[ProxyRecord] = []
        translated: list[Event] = []
        for event in events:
            if isinstance(event, RequestStarted | RequestFinished):
                self.list.upsert(event.record)
            if isinstance(event, RequestFinished):
                record = event.record
                finished.append(record)
                usage = self.counters.add(record)
                if usage is not None:
                    to_price.append((usage, record.model, record.wire, record.endpoint))
            elif isinstance(event, CapLearned):
                self.inspector.caps.cap_learned(event)
                self.notify(
                    display_line(
                        f"cap learned for {event.endpoint}: {format_size(event.cap_bytes)} "
                        f"(from a refusal of {format_size(event.rejected_bytes)})"
                    ),
                    title="Cap learned",
                )
            elif isinstance(event, ProxyStopped):
                if not self.stopping:  # nobody asked: the proxy's process ended on its own
                    self.stopping = True
                    self.gone = True
                    self.notify(
                        f"The proxy stopped on its own ({self.proxy.exit_note or 'its process ended'}): nothing "
                        f"listens on {self.proxy.url} any more. The records so far are kept; q quits.",
                        title="Proxy stopped",
                        severity="error",
                        timeout=30,
                    )
            translated += inspector_events(event)
        views = [e for e in translated if isinstance(e, ViewChanged)]
        if views:  # the gauge needs only the last request's size, and the last prompt's reported tokens
            reported = [view.context_tokens for view in views if view.context_tokens]
            if reported and not views[-1].context_tokens:
                views[-1] = dataclasses.replace(views[-1], context_tokens=reported[-1])
        for shown in translated:
            if not isinstance(shown, ViewChanged):
                self.inspector.dispatch(shown)
        if views:
            self.inspector.dispatch(views[-1])
        self.inspector.caps.add_records(finished)
        self.list.set_class(self.list.row_count == 0, "-empty")
        if to_price:
            self._price(to_price)
        self._title()

    @work(thread=True, group="price")
    def _price(self, answers: list[tuple[Any, str, str, str]]) -> None:
        priced = [(usage, price(usage, model, wire), route) for usage, model, wire, route in answers]
        self.call_from_thread(self._priced, priced)  # genai-prices is blocking: priced off the UI's loop

    def _priced(self, priced: list[tuple[Any, float | None, str]]) -> None:
        for usage, cost, route in priced:
            self.counters.add_usage(usage, cost, route)
        self.inspector.cost.sync()

    def _title(self) -> None:
        counters = self.counters.counters
        state = "STOPPED" if self.gone else "stopping…" if self.stopping else "listening"
        modes = ", ".join(self.proxy.options.modes)
        self.title_line.update(
            display_line(
                f"bulkhead proxy {state} on {self.proxy.url} → {self.proxy.options.upstream.label} · {modes} · "
                f"{counters.requests} requests · {counters.failed_requests} failed or answered by the proxy"
            )
        )

    # -- the detail pane ---------------------------------------------------------------------------
    @on(ProxyList.Chosen)
    def _chosen(self, message: ProxyList.Chosen) -> None:
        if not self._detail_due:  # the cursor following a busy list: one record read per catch-up
            self._detail_due = True
            self.set_timer(CATCH_UP_S, self._show_chosen)

    def _show_chosen(self) -> None:
        self._detail_due = False
        record = self.list.selected
        if record is None:
            self._show_detail(self.start_text, "", styled=False)
            return
        self._load_detail(record)

    @work(thread=True, exclusive=True, group="proxy-detail")
    def _load_detail(self, record: Any) -> None:
        text = record_report(record, self.records)  # reads the store: off the UI's loop
        self.call_from_thread(self._show_detail, text, text)

    def _show_detail(self, text: str, report: str, *, styled: bool = True) -> None:
        self.detail_text = report
        self.detail.update(text, styled=styled)

    @property
    def detail_shown(self) -> str:
        return self.detail.text

    # -- actions -------------------------------------------------------------------------------------
    def action_start_text(self) -> None:
        self._show_detail(self.start_text, "", styled=False)

    def action_copy_record(self) -> None:
        if not self.detail_text:
            self.notify("Select a request first: its record is what c copies.", severity="warning")
            return
        result = copy_text(self, self.detail_text)
        self.notify(result.describe("the request's record"), severity="information" if result.ok else "error")

    def action_step_tab(self, step: int) -> None:
        self.inspector.action_step_tab(step)

    def action_stop(self) -> None:
        if self.gone:
            self.exit(1, return_code=1)
            return
        if self.stopping:
            return
        self.stopping = True
        self._title()
        self._stop_proxy()

    @work(thread=True, group="stop")
    def _stop_proxy(self) -> None:
        self.proxy.stop()  # closes the listener and the open connections; the runfile goes
        self.call_from_thread(self.exit, 0)
