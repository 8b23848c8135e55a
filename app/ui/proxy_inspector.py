"""The inspector beside the live view of `bulkhead proxy`: Payload in view, Requests, Caps and Cost in tabs.

    inspector = ProxyInspector()
    inspector.show_session(PanelSource(session_id, SessionRecords(store, session_id), counters))   # its records
    inspector.dispatch(event)                                          # app.model.events (app.ui.proxy_feed)

The Requests, Payload and Cost panels are the chat's own (`app.ui.widgets`), fed the engine's event types
by `app.ui.proxy_feed`; Requests reads the proxy session's records from the store as it does a chat's.
Payload says "Last request" (a proxy has no next request of its own). Caps is the proxy's own panel.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from datetime import tzinfo

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static, TabbedContent, TabPane

from app.model.events import Event, RequestFinished, ViewChanged
from app.sizes import format_size
from app.ui.proxy_caps import CapsPanel
from app.ui.widgets.common import Clock, Panel, PanelSource, read_styles
from app.ui.widgets.cost import CostPanel
from app.ui.widgets.payload import PayloadPanel
from app.ui.widgets.requests import RequestsPanel

TABS = ("requests", "caps", "cost")
TAB_TITLES = {"requests": "Requests", "caps": "Caps", "cost": "Cost"}


class ProxyPayloadPanel(PayloadPanel):
    """The Payload panel for proxied traffic: the last conversation request against its endpoint's cap."""

    HELP = """\
## Payload (proxy)

The last conversation request a client sent through the proxy, against the cap in force for its
endpoint; the sparkline has one column per request (`✗` a size refusal, `!` another failure).
"Context" is the prompt's token count as the upstream reported it for that request.
"""

    def on_engine_event(self, event: Event) -> None:
        if isinstance(event, RequestFinished):  # every client's requests are the conversation here
            event = dataclasses.replace(event, purpose="chat")
        elif isinstance(event, ViewChanged) and not event.context_tokens and self.context_tokens:
            event = dataclasses.replace(event, context_tokens=self.context_tokens)  # a refusal has no usage
        super().on_engine_event(event)

    def sync(self) -> None:
        super().sync()
        if not self.ready:
            return
        last = self.predicted_bytes
        next_line = self.query_one("#payload-next", Static)
        if last is None:
            next_line.update("Last request —  (waiting for a client)")
        elif self.cap_bytes:
            next_line.update(f"Last request {format_size(last)} of {format_size(self.cap_bytes)} cap")
        else:
            next_line.update(f"Last request {format_size(last)} · no cap known yet")
        self.query_one("#payload-floor", Static).display = False  # the client's floor is not known here
        context = self.query_one("#payload-context", Static)
        if not self.context_tokens:
            context.update("Context — (the upstream has not reported a prompt's tokens yet)")
        else:
            context.update(
                f"Context {self.context_tokens:,} tokens in the last prompt (as the upstream counted)"
            )


class ProxyInspector(Vertical):
    """Payload above; Requests, Caps and Cost in tabs (`[` and `]`, bound by the proxy view, switch)."""

    DEFAULT_CSS = read_styles("inspector.tcss")
    SCOPED_CSS = False

    def __init__(
        self, *, clock: Clock = time.time, tz: tzinfo | None = None, id: str | None = "inspector"
    ) -> None:
        super().__init__(id=id, classes="proxy-inspector")
        self.payload = ProxyPayloadPanel(clock=clock, tz=tz)
        self.requests = RequestsPanel(clock=clock, tz=tz)
        self.caps = CapsPanel(clock=clock, tz=tz)
        self.cost = CostPanel(clock=clock, tz=tz)
        self.panels: dict[str, Panel] = {
            "payload": self.payload,
            "requests": self.requests,
            "caps": self.caps,
            "cost": self.cost,
        }
        self.errors: list[BaseException] = []
        self._routes: dict[type, tuple[Callable[[Event], None], ...]] = {}

    def compose(self) -> ComposeResult:
        with Vertical(id="inspector-top"):
            yield self.payload
        with TabbedContent(id="inspector-tabs", initial="tab-requests"):
            for name in TABS:
                with TabPane(TAB_TITLES[name], id=f"tab-{name}"):
                    yield self.panels[name]

    def show_session(self, source: PanelSource) -> None:
        for panel in self.panels.values():
            panel.show_session(source)

    def dispatch(self, event: Event) -> None:
        handlers = self._routes.get(type(event))
        if handlers is None:
            handlers = tuple(p.handle for p in self.panels.values() if isinstance(event, p.HANDLES))
            self._routes[type(event)] = handlers
        for handler in handlers:
            try:
                handler(event)
            except Exception as exc:  # a panel bug must not take the proxy's view down
                self.errors.append(exc)
                self.log.error(f"proxy inspector panel failed on {event.type}: {exc!r}")

    def show_panel(self, name: str) -> Panel:
        panel = self.panels[name]
        if name in TABS and self.is_mounted:
            self.query_one("#inspector-tabs", TabbedContent).active = f"tab-{name}"
        return panel

    @property
    def active_tab(self) -> str:
        return self.query_one("#inspector-tabs", TabbedContent).active.removeprefix("tab-")

    def action_step_tab(self, step: int) -> None:
        current = self.active_tab
        index = TABS.index(current) if current in TABS else 0
        self.show_panel(TABS[(index + step) % len(TABS)])
