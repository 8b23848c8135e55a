"""Pieces the inspector panels share: the panel base class, a byte gauge, a request-size
sparkline, time and text formatting, and the `CopyRequested` message.

A panel keeps its state in plain attributes (what the tests read) and renders it into a
few small widgets. Events that arrive before the panel is mounted are kept and replayed
on mount, so the app may dispatch from the first frame.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields
from datetime import datetime, tzinfo
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from rich.cells import cell_len
from rich.text import Text
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.reactive import reactive
from textual.widget import Widget
from textual.widgets import DataTable

from app.config import Settings
from app.model.costs import Counters
from app.model.events import Event

if TYPE_CHECKING:
    from app.engine.api import ContextReport
    from app.engine.api.records import SessionRecords

Clock = Callable[[], float]

PENDING_EVENTS_MAX = 2_000  # events kept for a panel that is not mounted yet


def setting_default(name: str) -> Any:
    """The default of one typed setting (`app.config.Settings`): the panels' values before an event says more."""
    for item in fields(Settings):
        if item.name == name:
            return item.default
    raise KeyError(name)


@dataclass(frozen=True)
class PanelSource:
    """What the panels read besides events: one session's stored records (read only, in their workers: every
    method reads the database), its live counters, the engine's report on the next request when the session
    opened, and one limit. `records` is None for a session that stores nothing (a test's fake).

    The app builds it (`app.ui.panel_source.panel_source`); panels never see the engine."""

    session_id: str
    records: SessionRecords | None
    counters: Counters = field(default_factory=Counters)
    report: ContextReport | None = None
    max_recovery_attempts: int = field(default_factory=lambda: setting_default("max_recovery_attempts"))


PAYLOAD_FAILURE_KINDS = frozenset({"payload_too_large", "waf_block", "connection_drop", "context_overflow"})


def styles_file(name: str) -> Path | None:
    """`styles/NAME` in a checkout (repo/styles) or an installed wheel (app/styles)."""
    here = Path(__file__).resolve()
    for folder in (here.parents[3] / "styles", here.parents[2] / "styles"):
        candidate = folder / name
        if candidate.is_file():
            return candidate
    return None


def read_styles(name: str) -> str:
    path = styles_file(name)
    try:
        return path.read_text(encoding="utf-8") if path else ""
    except OSError:
        return ""


# -- formatting ------------------------------------------------------------------------------------
def clock_text(timestamp: float | None, tz: tzinfo | None = None) -> str:
    """`14:02:07` in `tz` (local time when None); `—` when unknown."""
    if timestamp is None:
        return "—"
    return datetime.fromtimestamp(timestamp, tz).strftime("%H:%M:%S")


def one_line(text: str, limit: int) -> str:
    """`text` on one line (whitespace collapsed), cut to `limit` characters with an ellipsis."""
    flat = " ".join(str(text or "").split())
    return flat if len(flat) <= limit else flat[: max(0, limit - 1)] + "…"


def head_text(text: str, limit: int) -> str:
    """The first `limit` characters of `text`, saying how much was left out."""
    text = str(text or "")
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n… [{len(text) - limit:,} more characters]"


def tokens_text(n: int | None) -> str:
    """`850`, `12.3k`, `1.2M` — a token count for a narrow column."""
    if n is None:
        return "—"
    if n < 1000:
        return str(n)
    if n < 1_000_000:
        return f"{n / 1000:.1f}k"
    return f"{n / 1_000_000:.2f}M"


# -- messages ----------------------------------------------------------------------------------------
class CopyRequested(Message):
    """A panel asks the app to put `text` on the clipboard (OSC 52 + fallback is the app's job)."""

    def __init__(self, text: str, what: str = "") -> None:
        super().__init__()
        self.text = text
        self.what = what  # e.g. "request explanation", for the toast


# -- the panel base --------------------------------------------------------------------------------
class Panel(Vertical):
    """One inspector panel: renders engine events; reads the session's records once given a `PanelSource`."""

    NAME: ClassVar[str] = ""
    TITLE: ClassVar[str] = ""
    HANDLES: ClassVar[tuple[type[Event], ...]] = ()
    can_focus = True

    def __init__(
        self,
        *,
        clock: Clock = time.time,
        tz: tzinfo | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(id=id or f"panel-{self.NAME}", classes=classes)
        self.clock = clock
        self.tz = tz
        self.source: PanelSource | None = None
        self._pending: deque[Event] = deque(maxlen=PENDING_EVENTS_MAX)
        self._bind_pending = False
        self.ready = False  # set when mounted: from then on events render at once
        self.border_title = self.TITLE

    # -- the inspector calls these ------------------------------------------------------------
    def handle(self, event: Event) -> None:
        if not self.ready:
            self._pending.append(event)
            return
        self.on_engine_event(event)

    def show_session(self, source: PanelSource) -> None:
        self.source = source
        if not self.ready:
            self._bind_pending = True
            return
        self.on_session_shown()

    def focus_panel(self) -> None:
        """Give the keyboard to this panel (its table when it has one)."""
        self.focus()

    # -- subclasses implement these -------------------------------------------------------------
    def on_engine_event(self, event: Event) -> None:  # pragma: no cover - every panel overrides
        pass

    def on_session_shown(self) -> None:
        """A session's source was given (`self.source`): load its history from its records (in a worker)."""

    def sync(self) -> None:
        """Render the panel's state into its widgets."""

    def copy_text(self) -> str:
        """What Alt+C (Ctrl+C when nothing runs) copies: the panel's state as plain text."""
        return ""

    def action_copy(self) -> None:
        text = self.copy_text()
        if text:
            self.post_message(CopyRequested(text, what=f"{self.TITLE.lower()} panel"))

    def on_mount(self) -> None:
        self.ready = True
        self.sync()
        if self._bind_pending:
            self._bind_pending = False
            self.on_session_shown()
        while self._pending:
            self.on_engine_event(self._pending.popleft())

    # -- helpers ----------------------------------------------------------------------------------
    @property
    def alive(self) -> bool:
        """Mounted and not being removed (a worker that finishes late must not touch a dying panel)."""
        return (
            self.ready
            and self.is_attached
            and not getattr(self, "_pruning", False)
            and not getattr(self, "_closing", False)
        )

    @property
    def session_id(self) -> str | None:
        return self.source.session_id if self.source is not None else None

    @property
    def reader(self) -> SessionRecords | None:
        """The session's stored records (read them in a worker: every method reads the database)."""
        return self.source.records if self.source is not None else None

    def now(self) -> float:
        return self.clock()


def copy_binding(panel: str, what: str) -> Binding:
    """The copy key every panel has (Alt+C; the app's Ctrl+C does the same when nothing runs): copy what it
    shows, as plain text. Not a letter: letters typed on a panel go to the prompt (`app.ui.focus_rules`)."""
    return Binding("alt+c", "copy", "Copy", id=f"{panel}.copy", tooltip=f"Copy {what} as plain text")


def set_cell(table: DataTable, row: str, column: str, value: str | Text) -> None:
    """Update one cell; its column is widened if the value is wider, never measured again if it is not.

    `DataTable.update_cell(update_width=True)` measures every cell of the column again whenever the new
    value is narrower than the column: the archive's ages (`59s` → `1m`) for 440 entries measured
    190,000 cells and held the event loop 3.6 s, every 10 s. A column keeps its width until the table
    is filled again."""
    if table.get_cell(row, column) == value and not isinstance(value, Text):
        return
    width = value.cell_len if isinstance(value, Text) else cell_len(value)
    table.update_cell(row, column, value, update_width=width > table.columns[column].content_width)  # type: ignore[index]


def trim_table(table: DataTable, order: deque[str], max_rows: int) -> None:
    """Drop the oldest rows of `table` (keys in `order`, oldest first) beyond `max_rows`."""
    while len(order) > max_rows:
        key = order.popleft()
        try:
            table.remove_row(key)
        except Exception:  # already gone (cleared by a reload)
            pass


# -- the gauge ---------------------------------------------------------------------------------------
class Gauge(Widget):
    """A one-line bar of `value` against `total`, with a tick at the warning ratio and a percentage.

    `level` is `ok`, `warn` (at or above `warn_ratio`) or `over` (at or above the total); with
    `soft` set, exceeding the total only warns (a threshold, not a cap).
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "gauge--ok",
        "gauge--warn",
        "gauge--over",
        "gauge--empty",
        "gauge--tick",
        "gauge--idle",
    }
    DEFAULT_CSS = """
    Gauge { height: 1; width: 1fr; }
    """

    value: reactive[int | None] = reactive(None)
    total: reactive[int | None] = reactive(None)
    warn_ratio: reactive[float] = reactive(setting_default("preflight_ratio"))
    soft: reactive[bool] = reactive(False)

    @property
    def ratio(self) -> float | None:
        if self.value is None or not self.total:
            return None
        return self.value / self.total

    @property
    def level(self) -> str:
        ratio = self.ratio
        if ratio is None:
            return "idle"
        if ratio >= 1.0:
            return "warn" if self.soft else "over"
        if ratio >= self.warn_ratio:
            return "warn"
        return "ok"

    def watch_value(self) -> None:
        self._update_classes()

    def watch_total(self) -> None:
        self._update_classes()

    def watch_soft(self) -> None:
        self._update_classes()

    def _update_classes(self) -> None:
        level = self.level  # one restyle for the change (a class at a time restyled twice: off, then on)
        self.update_classes({f"-{name}": level == name for name in ("idle", "ok", "warn", "over")})

    def render(self) -> Text:
        width = max(1, self.content_size.width)
        ratio = self.ratio
        label = "—" if ratio is None else (f"{ratio:.0%}" if ratio < 10 else ">999%")
        bar_width = max(1, width - 6)
        empty_style = self.get_component_rich_style("gauge--empty")
        tick_style = self.get_component_rich_style("gauge--tick")
        fill_style = self.get_component_rich_style(f"gauge--{self.level}")
        text = Text(no_wrap=True, overflow="crop")
        filled = 0.0 if ratio is None else min(1.0, ratio) * bar_width
        full = int(filled)
        half = filled - full >= 0.5 and full < bar_width
        tick = int(self.warn_ratio * bar_width) if not self.soft else -1
        for column in range(bar_width):
            if column < full:
                text.append("━", fill_style)
            elif column == full and half:
                text.append("╸", fill_style)
            elif column == tick:
                text.append("┃", tick_style)
            else:
                text.append("━", empty_style)
        text.append(f" {label:>5}", fill_style if ratio is not None else empty_style)
        return text


# -- the request-size sparkline ----------------------------------------------------------------------
@dataclass(frozen=True)
class SizeSample:
    bytes: int
    kind: str | None = None  # failure kind; None for an accepted request
    purpose: str = "chat"

    @property
    def rejected(self) -> bool:
        return self.kind is not None


_EIGHTHS = " ▁▂▃▄▅▆▇█"


class SizeSparkline(Widget):
    """One column per request (newest on the right), bars scaled to the largest of the samples and
    the cap; the last row marks rejections: `✗` payload-related, `!` other failures."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "sparkline--ok",
        "sparkline--rejected",
        "sparkline--failed",
        "sparkline--aux",
        "sparkline--axis",
    }
    DEFAULT_CSS = """
    SizeSparkline { height: 3; width: 1fr; }
    """

    def __init__(self, max_samples: int = 240, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.samples: deque[SizeSample] = deque(maxlen=max_samples)
        self.cap: int | None = None

    def push(self, sample: SizeSample) -> None:
        self.samples.append(sample)
        self.refresh()

    def extend(self, samples: Iterable[SizeSample]) -> None:
        self.samples.extend(samples)
        self.refresh()

    def set_cap(self, cap: int | None) -> None:
        if cap != self.cap:
            self.cap = cap
            self.refresh()

    def render(self) -> Text:
        width = max(1, self.content_size.width)
        height = max(1, self.content_size.height)
        marker_row = height >= 2
        bar_rows = height - 1 if marker_row else height
        shown = list(self.samples)[-width:]
        axis_style = self.get_component_rich_style("sparkline--axis")
        if not shown:
            text = Text(no_wrap=True, overflow="crop")
            for row in range(height):
                text.append("no requests yet" if row == 0 else "", axis_style)
                if row < height - 1:
                    text.append("\n")
            return text
        top = max(max(s.bytes for s in shown), self.cap or 0, 1)
        styles = {
            "ok": self.get_component_rich_style("sparkline--ok"),
            "rejected": self.get_component_rich_style("sparkline--rejected"),
            "failed": self.get_component_rich_style("sparkline--failed"),
            "aux": self.get_component_rich_style("sparkline--aux"),
        }

        def style_of(sample: SizeSample) -> str:
            if sample.kind in PAYLOAD_FAILURE_KINDS:
                return "rejected"
            if sample.kind:
                return "failed"
            return "aux" if sample.purpose != "chat" else "ok"

        eighths = [max(1, round(s.bytes / top * bar_rows * 8)) if s.bytes > 0 else 0 for s in shown]
        text = Text(no_wrap=True, overflow="crop")
        for row in range(bar_rows):
            floor = (bar_rows - 1 - row) * 8
            for sample, height8 in zip(shown, eighths, strict=True):
                level = min(8, max(0, height8 - floor))
                text.append(_EIGHTHS[level], styles[style_of(sample)])
            text.append("\n")
        if marker_row:
            for sample in shown:
                kind = style_of(sample)
                if kind == "rejected":
                    text.append("✗", styles["rejected"])
                elif kind == "failed":
                    text.append("!", styles["failed"])
                else:
                    text.append("▔", axis_style)
        else:
            text.rstrip()
        return text
