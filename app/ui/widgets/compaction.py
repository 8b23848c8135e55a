"""Compaction panel: the phases of the running compaction, live, or of the last one.

A planned compaction (pre-flight, auto, manual) reports its phases as CompactionPhase events
in the seed's wording (📦 start, 🧹 trim, 🧠 summarize, ✓ applied, 🔻 Last 4, …); a
recovery reports its attempts as RecoveryStep events. The panel shows the trigger, each
phase line with a spinner on the current one, then the outcome with the sizes before and
after, and keeps a short history of earlier compactions.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from dataclasses import dataclass
from datetime import tzinfo

from textual import work
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.timer import Timer
from textual.widgets import Static

from app.model.events import Compaction, CompactionPhase, Event, RecoveryStep
from app.model.levels import ladder_label, method_label
from app.sizes import format_size
from app.textsafe import display_data
from app.ui.widgets.common import Clock, Panel, clock_text, copy_binding, one_line

MAX_PHASES = 40
MAX_HISTORY = 20
SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
SPINNER_INTERVAL = 0.1
FINAL_PHASES = frozenset({"done", "cancelled"})


@dataclass(frozen=True)
class CompactionRecord:
    at: float
    event: Compaction


class CompactionPanel(Panel):
    NAME = "compaction"
    TITLE = "Compaction"
    HANDLES = (CompactionPhase, Compaction, RecoveryStep)
    BINDINGS = [copy_binding("compaction", "the phases and the result")]
    HELP = """\
## Compaction

The phases of the **running** compaction, live, or of the **last** one: what triggered it
(`preflight` near the byte cap, `auto` near the context window, `manual` for `/compact`,
`recovery` after a rejection), each phase, and the result — messages and bytes before and
after, the level reached and how many segments were archived.

Cheapest first: microcompact and dedup old tool output, enforce budgets, then a **summary**
only if still over budget, then **last 4** (the last messages only, shrunk to fit). A recovery after
a rejection shows the ladder's steps by name: `ladder L2 (last 10)` is not the summary. Esc cancels a running summary; the view is left as
it was. Every dropped segment is in the Archive panel; `/rewind compact` restores the view
before the last compaction.
"""

    def __init__(self, *, clock: Clock = time.time, tz: tzinfo | None = None) -> None:
        super().__init__(clock=clock, tz=tz)
        self.running = False
        self.trigger = ""
        self.started_at: float | None = None
        self.phases: list[tuple[str, str]] = []
        self.result: Compaction | None = None
        self.failed_text = ""
        self.history: deque[CompactionRecord] = deque(maxlen=MAX_HISTORY)
        self._frame = 0
        self._timer: Timer | None = None

    def compose(self) -> ComposeResult:
        yield Static(id="compaction-status", classes="panel-line", markup=False)
        with VerticalScroll(id="compaction-body"):
            yield Static(id="compaction-phases", markup=False)
            yield Static(id="compaction-result", classes="panel-detail", markup=False)
            yield Static("Earlier", id="compaction-history-title", classes="panel-subtitle")
            yield Static(id="compaction-history", classes="panel-detail", markup=False)

    # -- events ----------------------------------------------------------------------------------------
    def on_engine_event(self, event: Event) -> None:
        if isinstance(event, CompactionPhase):
            if event.phase == "start" or not self.running:
                self._start(event.trigger)
            self._add_phase(event.phase, event.text)
        elif isinstance(event, RecoveryStep):
            self._on_recovery_step(event)
        elif isinstance(event, Compaction):
            if not self.phases or not self.running:
                self.trigger = event.trigger
                self.phases = (
                    [("method", f"{event.trigger}: {method_label(event.trigger, event.method)}")]
                    if event.trigger == "recovery"
                    else []
                )
            self.running = False
            self.trigger = event.trigger
            self.result = event
            self.failed_text = ""
            self.history.appendleft(CompactionRecord(self.now(), event))
        self.sync()

    def _start(self, trigger: str) -> None:
        self.running = True
        self.trigger = trigger
        self.started_at = self.now()
        self.phases = []
        self.result = None
        self.failed_text = ""

    def _add_phase(self, key: str, text: str) -> None:
        self.phases.append((key, text))
        del self.phases[:-MAX_PHASES]

    def _on_recovery_step(self, event: RecoveryStep) -> None:
        if event.outcome in ("exhausted", "refused"):
            if not self.running or self.trigger != "recovery":
                self._start("recovery")
            self._add_phase(event.outcome, f"✗ {event.outcome}: {one_line(event.reason, 200)}")
            self.running = False
            self.result = None
            self.failed_text = f"recovery {event.outcome} — the conversation is unchanged"
            return
        if not self.running or self.trigger != "recovery":
            self._start("recovery")
        marks = {"sending": "→", "not_smaller": "↷", "over_cap": "↷", "succeeded": "✓", "failed": "✗"}
        mark = marks.get(event.outcome, "·")
        self._add_phase(
            f"L{event.level}",
            f"{mark} {ladder_label(event.level)} attempt {event.attempt}/{event.max_attempts}: "
            f"{event.outcome} — {one_line(event.reason, 160)}",
        )

    def on_session_shown(self) -> None:
        """A resumed session: show its earlier compactions from its records (read off the UI loop)."""
        if self.reader is not None and not self.history:
            self._load()

    @work(exclusive=True, group="compaction-load")
    async def _load(self) -> None:
        reader = self.reader
        if reader is None:
            return
        try:
            stored = await asyncio.to_thread(reader.compactions, MAX_HISTORY)
        except Exception:  # a damaged history leaves the panel empty, the session usable
            return
        if not self.alive or self.reader is not reader or self.history:
            return  # removed, rebound, or live compactions arrived meanwhile (they are newer)
        for item in stored:  # stored text is shown like live events: made safe
            self.history.appendleft(CompactionRecord(item.at, display_data(item.event)))
        if self.result is None and self.history and not self.running:
            self.result = self.history[0].event
            self.trigger = self.result.trigger
        self.sync()

    # -- spinner -------------------------------------------------------------------------------------------
    @property
    def animated(self) -> bool:
        return self.app.animation_level != "none"

    def _tick(self) -> None:
        self._frame = (self._frame + 1) % len(SPINNER)
        self.sync()

    def _spinner(self) -> str:
        return SPINNER[self._frame] if self.animated else "●"

    def copy_text(self) -> str:
        if not self.ready:
            return ""
        lines = [str(self.query_one("#compaction-status", Static).render())]
        lines += [text for _, text in self.phases]
        if self.failed_text:
            lines.append(self.failed_text)
        elif self.result is not None:
            lines.append(_result_text(self.result))
        return "\n".join(lines)

    # -- rendering ---------------------------------------------------------------------------------------
    def sync(self) -> None:
        if not self.ready:
            return
        self.set_class(self.running, "-running")
        if self.running and self.animated and self._timer is None:
            self._timer = self.set_interval(SPINNER_INTERVAL, self._tick)
        elif not self.running and self._timer is not None:
            self._timer.stop()
            self._timer = None
        self._sync_status()
        lines = []
        last_index = len(self.phases) - 1
        for index, (key, text) in enumerate(self.phases):
            current = self.running and index == last_index and key not in FINAL_PHASES
            lines.append(f"{self._spinner() if current else ' '} {text}")
        phases = self.query_one("#compaction-phases", Static)
        phases.update("\n".join(lines) if lines else "No compaction yet in this session.")
        result = self.query_one("#compaction-result", Static)
        result.display = bool(self.result or self.failed_text)
        if self.failed_text:
            result.update(self.failed_text)
        elif self.result is not None:
            result.update(_result_text(self.result))
        history = list(self.history)[1:] if self.result is not None and self.history else list(self.history)
        self.query_one("#compaction-history-title").display = bool(history)
        block = self.query_one("#compaction-history", Static)
        block.display = bool(history)
        block.update(
            "\n".join(
                f"{clock_text(r.at, self.tz)} {r.event.trigger:<9} "
                f"{method_label(r.event.trigger, r.event.method):<7} {r.event.outcome:<7} "
                f"{format_size(r.event.bytes_before)} → {format_size(r.event.bytes_after)}"
                for r in history
            )
        )

    def _sync_status(self) -> None:
        if not self.ready:
            return
        status = self.query_one("#compaction-status", Static)
        if self.running:
            since = f" since {clock_text(self.started_at, self.tz)}" if self.started_at else ""
            status.update(f"{self._spinner()} Running · trigger {self.trigger}{since}")
        elif self.failed_text:
            status.update(f"✗ Last: {self.trigger} · failed")
        elif self.result is not None:
            shown = self.result.engine not in (
                "",
                "local",
            )  # only an external engine (or its fallback) is news
            engine = f" · {_engine_text(self.result.engine)}" if shown else ""
            status.update(
                f"Last: {self.result.trigger} · {method_label(self.result.trigger, self.result.method)} · "
                f"{self.result.outcome}{engine}"
            )
        else:
            status.update("Idle")
        self.set_class(
            self.failed_text != "" or (self.result is not None and self.result.outcome == "failed"), "-failed"
        )

    def on_unmount(self) -> None:
        if self._timer is not None:
            self._timer.stop()
            self._timer = None


def _engine_text(engine: str) -> str:
    """`summary by mcp:context`, or `summary by the built-in summarizer (mcp:context failed)`."""
    if engine.startswith("local (fallback: "):
        failed = engine.removeprefix("local (fallback: ").split(" — ")[0]
        return f"summary by the built-in summarizer ({failed} failed)"
    return "summary by the built-in summarizer" if engine == "local" else f"summary by {engine}"


def _result_text(event: Compaction) -> str:
    saved = event.bytes_before - event.bytes_after
    archived = f" · {len(event.archive_keys)} archived" if event.archive_keys else ""
    if event.outcome == "skipped":
        return (
            f"skipped — nothing to compact ({event.messages_before} msgs, {format_size(event.bytes_before)})"
        )
    return (
        f"{event.outcome}: {event.messages_before} → {event.messages_after} msgs · "
        f"{format_size(event.bytes_before)} → {format_size(event.bytes_after)} "
        f"(−{format_size(max(0, saved))}){archived}"  # the step is named on the status line
    )
