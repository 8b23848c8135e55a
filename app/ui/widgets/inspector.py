"""The inspector beside the chat: Payload and Ladder always in view, the other panels in tabs.

    inspector = Inspector(clock=time.time)          # may be mounted before a session is open
    inspector.dispatch(event)                       # every engine event, on the UI thread
    inspector.show_session(source)                  # a PanelSource once the session is open (again after /model)
    inspector.show_panel("archive")                 # switch tab if needed and focus the panel

Layout: `#inspector-top` holds Payload and Ladder (side by side when the inspector has the
`-wide` class, or `inspector.wide = True`); `#inspector-tabs` holds Compaction, Archive,
Requests, Hooks and Cost. `App.-hide-inspector` (or the `-hidden` class) hides it.

The inspector never holds the engine: it renders events, reads the session's records through
the `PanelSource` it is given, and asks the app for everything that changes the conversation.
Messages that bubble to the app: `ArchiveRecallRequested(key)`, `RewindRequested()` and
`CopyRequested(text)`.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from datetime import tzinfo
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.css.query import NoMatches
from textual.reactive import reactive
from textual.widgets import TabbedContent, TabPane

from app.model.events import Event
from app.ui.widgets.archive import ArchivePanel, ArchiveRecallRequested, RewindRequested
from app.ui.widgets.common import Clock, CopyRequested, Panel, PanelSource, read_styles
from app.ui.widgets.compaction import CompactionPanel
from app.ui.widgets.cost import CostPanel
from app.ui.widgets.hooks import HooksPanel
from app.ui.widgets.ladder import LadderPanel
from app.ui.widgets.payload import PayloadPanel
from app.ui.widgets.requests import RequestsPanel

__all__ = [
    "ArchiveRecallRequested",
    "CopyRequested",
    "Inspector",
    "PANEL_NAMES",
    "PanelSource",
    "RewindRequested",
]

PANEL_NAMES = ("payload", "ladder", "compaction", "archive", "requests", "hooks", "cost")
TOP_PANELS = ("payload", "ladder")
TABBED_PANELS = ("compaction", "archive", "requests", "hooks", "cost")
TAB_TITLES = {
    "compaction": "Compaction",
    "archive": "Archive",
    "requests": "Requests",
    "hooks": "Hooks",
    "cost": "Cost",
}
MAX_ERRORS = 50


class Inspector(Vertical):
    """The session inspector: seven panels fed by engine events."""

    DEFAULT_CSS = read_styles("inspector.tcss")
    SCOPED_CSS = False  # the stylesheet also styles `App.-hide-inspector Inspector`
    BINDINGS: ClassVar = [
        Binding(
            "ctrl+pageup",
            "previous_tab",
            "Prev tab",
            id="inspector.previous_tab",
            show=False,
            tooltip="Show the previous inspector tab",
        ),
        Binding(
            "ctrl+pagedown",
            "next_tab",
            "Next tab",
            id="inspector.next_tab",
            show=False,
            tooltip="Show the next inspector tab",
        ),
    ]
    HELP = """\
## Inspector

Live panels for the session: **Payload** (next request vs the cap) and **Ladder** (recovery)
always in view; **Compaction**, **Archive**, **Requests**, **Hooks** and **Cost** in tabs
(**Ctrl+PageUp** / **Ctrl+PageDown** switch tabs; Ctrl+T steps through every panel). F1 on a panel explains it.
"""

    PANELS: ClassVar[tuple[str, ...]] = PANEL_NAMES  # the order the app's panel keys (1–7) follow

    wide: reactive[bool] = reactive(False)

    def __init__(
        self,
        *,
        clock: Clock = time.time,
        tz: tzinfo | None = None,
        initial_tab: str = "requests",
        id: str | None = "inspector",
        classes: str | None = None,
    ) -> None:
        """`clock` stamps events that carry no time (tests inject a fixed one); `tz` formats times
        (None: local)."""
        super().__init__(id=id, classes=classes)
        if initial_tab not in TABBED_PANELS:
            raise ValueError(f"initial_tab must be one of {', '.join(TABBED_PANELS)}")
        self.clock = clock
        self.tz = tz
        self.initial_tab = initial_tab
        self.source: PanelSource | None = None
        self.errors: deque[BaseException] = deque(maxlen=MAX_ERRORS)
        self._routes: dict[type, tuple[Callable[[Event], None], ...]] = {}
        self._make_panels()

    def _make_panels(self) -> None:
        clock, tz = self.clock, self.tz
        self.payload = PayloadPanel(clock=clock, tz=tz)
        self.ladder = LadderPanel(clock=clock, tz=tz)
        self.compaction = CompactionPanel(clock=clock, tz=tz)
        self.archive = ArchivePanel(clock=clock, tz=tz)
        self.requests = RequestsPanel(clock=clock, tz=tz)
        self.hooks = HooksPanel(clock=clock, tz=tz)
        self.cost = CostPanel(clock=clock, tz=tz)
        self.panels: dict[str, Panel] = {
            "payload": self.payload,
            "ladder": self.ladder,
            "compaction": self.compaction,
            "archive": self.archive,
            "requests": self.requests,
            "hooks": self.hooks,
            "cost": self.cost,
        }
        self._routes = {}

    def compose(self) -> ComposeResult:
        with Vertical(id="inspector-top"):
            for name in TOP_PANELS:
                yield self.panels[name]
        with TabbedContent(id="inspector-tabs", initial=f"tab-{self.initial_tab}"):
            for name in TABBED_PANELS:
                with TabPane(TAB_TITLES[name], id=f"tab-{name}"):
                    if name == self.initial_tab:
                        yield self.panels[name]
        # The panels of the hidden tabs join once the first frame is drawn (a third of the inspector's widgets,
        # styled and laid out for a frame that does not show them); until they mount they keep what they are
        # sent (`Panel.handle`), and `show_panel` mounts one at once.
        self.call_after_refresh(self.mount_hidden_panels)

    def mount_hidden_panels(self) -> None:
        """Mount the panels of the tabs not shown at the start (once; again after a recompose)."""
        if not self.is_attached:
            return
        for name in TABBED_PANELS:
            panel = self.panels[name]
            if panel.parent is None:
                try:
                    pane = self.query_one(f"#tab-{name}", TabPane)
                except NoMatches:  # a recompose is under way: it schedules its own
                    continue
                pane.mount(panel)

    def watch_wide(self, wide: bool) -> None:
        self.set_class(wide, "-wide")

    # -- the app calls these -------------------------------------------------------------------------
    def dispatch(self, event: Event) -> None:
        """Hand `event` to the panels that show it (TextDelta and the like go nowhere)."""
        handlers = self._routes.get(type(event))
        if handlers is None:
            handlers = tuple(
                panel.handle for panel in self.panels.values() if isinstance(event, panel.HANDLES)
            )
            self._routes[type(event)] = handlers
        for handler in handlers:
            try:
                handler(event)
            except Exception as exc:  # a panel bug must not take the chat down
                self.errors.append(exc)
                self.log.error(f"inspector panel failed on {event.type}: {exc!r}")

    def show_session(self, source: PanelSource) -> None:
        """Show the session `source` describes from now on. A different session rebuilds the panels."""
        previous = self.source
        self.source = source
        if previous is not None and previous.session_id != source.session_id:
            self._make_panels()
            if self.is_mounted:
                self.call_later(self.recompose)  # the new panels read the source when they mount
        for panel in self.panels.values():
            panel.show_session(source)

    def show_panel(self, name: str) -> Panel:
        """Bring panel `name` (one of PANEL_NAMES) into view and give it the keyboard."""
        if name not in self.panels:
            raise ValueError(f"no inspector panel {name!r}; panels: {', '.join(PANEL_NAMES)}")
        panel = self.panels[name]
        if not self.is_mounted:
            return panel
        if panel.parent is None:  # asked for before the hidden tabs' panels joined (`compose`)
            self.mount_hidden_panels()
            self.call_after_refresh(self.show_panel, name)
            return panel
        if name in TABBED_PANELS:
            tabs = self.query_one("#inspector-tabs", TabbedContent)
            focused = self.screen.focused
            if focused is not None and tabs in focused.ancestors:
                # Let go first: a focused widget in the pane being hidden would hand the focus to a
                # sibling in that pane, and TabbedContent would switch back to it.
                self.screen.set_focus(None)
            tabs.active = f"tab-{name}"
        panel.focus_panel()
        return panel

    @property
    def active_tab(self) -> str:
        """The name of the panel shown in the tabs."""
        if not self.is_mounted:
            return self.initial_tab
        return self.query_one("#inspector-tabs", TabbedContent).active.removeprefix("tab-")

    # -- tabs ---------------------------------------------------------------------------------------------------
    def _step_tab(self, step: int) -> None:
        current = self.active_tab
        index = TABBED_PANELS.index(current) if current in TABBED_PANELS else 0
        self.show_panel(TABBED_PANELS[(index + step) % len(TABBED_PANELS)])

    def action_previous_tab(self) -> None:
        self._step_tab(-1)

    def action_next_tab(self) -> None:
        self._step_tab(1)
