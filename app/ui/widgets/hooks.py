"""Hooks panel: every hook run (time, event, command, exit code, decision, duration), newest first.

Hooks follow Claude Code's contract: exit 0 is ok, exit 2 blocks (stderr is the reason),
anything else is a non-blocking error; a hook that runs past its timeout is killed. The
table keeps the newest 500 runs; selecting one shows its matcher, full command and output.
A hook's output is outside text: runs loaded from the store go through `app.textsafe` as live
events do, and cells are `Text` (a DataTable reads a str as markup).
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from dataclasses import dataclass
from datetime import tzinfo
from typing import ClassVar

from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.coordinate import Coordinate
from textual.widgets import DataTable, Static

from app.model.events import Event, HookRun, HookStarted
from app.textsafe import display_data
from app.ui.textual_ext.steady_scrollbars import SteadyDataTable
from app.ui.widgets.common import Clock, Panel, clock_text, copy_binding, head_text, one_line
from app.ui.widgets.fit_columns import Column, ColumnFit, table_width

MAX_ROWS = 500
COMMAND_CHARS = 48
OUTPUT_CHARS = 4_000
COLUMNS = (
    ("#", "n"),
    ("time", "time"),
    ("event", "event"),
    ("command", "command"),
    ("exit", "exit"),
    ("decision", "decision"),
    ("ms", "duration"),
)
# Which columns stay when the inspector is narrow (0 is the last to go; `#` orders the rows, so it stays).
RANKS = {"n": 0, "event": 1, "decision": 2, "exit": 3, "command": 4, "time": 5, "duration": 6}
RUNNING = "running… (Esc stops it)"
EMPTY_DETAIL = (
    "No hook has run yet. Configure hooks in config.toml ([[hooks]]) with Claude Code's contract; "
    "every run is listed here."
)


@dataclass(frozen=True)
class HookRecord:
    seq: int
    at: float
    run: HookRun


class HooksPanel(Panel):
    NAME = "hooks"
    TITLE = "Hooks"
    HANDLES = (HookRun, HookStarted)
    COMPONENT_CLASSES: ClassVar[set[str]] = {"hooks--ok", "hooks--block", "hooks--error"}
    BINDINGS = [copy_binding("hooks", "the selected run: command, exit code and output")]
    HELP = """\
## Hooks

Every hook run, newest first: the event (SessionStart, UserPromptSubmit, PreToolUse,
PostToolUse, PreCompact, PostCompact, RequestRejected, Stop, …), the command, its exit code,
the decision bulkhead took from it and how long it ran.

- exit **0**: ok; **2**: block (stderr is the reason); other: a non-blocking error;
  **timeout**: killed after the hook's timeout.
- Select a run to see its matcher, the whole command and its output; **Enter** opens it on top of
  everything. The table shows the columns that fit its width (the command and times go first).
"""

    def __init__(self, *, clock: Clock = time.time, tz: tzinfo | None = None) -> None:
        super().__init__(clock=clock, tz=tz)
        self.runs: dict[str, HookRecord] = {}
        self._hooks_running: dict[
            tuple[str, str], str
        ] = {}  # (event, command) → the row of a hook still running
        self._order: deque[str] = deque()
        self._seq = 0
        self.table = SteadyDataTable(id="hooks-table", cursor_type="row", zebra_stripes=True)
        self.fit = ColumnFit([Column(label, key, RANKS[key]) for label, key in COLUMNS])
        self.detail_text = ""

    def compose(self) -> ComposeResult:
        yield self.table
        with VerticalScroll(id="hooks-detail"):
            yield Static(EMPTY_DETAIL, id="hooks-detail-body", markup=False)

    def on_mount(self) -> None:
        for label, key in COLUMNS:
            self.table.add_column(label, key=key)
        # Panel.on_mount runs next: sync, bind, replay events.

    def focus_panel(self) -> None:
        self.table.focus()

    # -- columns by width ------------------------------------------------------------------------------
    def on_resize(self, _event: events.Resize) -> None:
        self.call_after_refresh(self._fit_width)

    def _fit_width(self) -> None:
        if self.fit.choose(table_width(self.table)):
            self._rebuild()

    def _cell_map(self, record: HookRecord) -> dict[str, object]:
        cells = self._cells(record.seq, record.at, record.run)
        return dict(zip((key for _label, key in COLUMNS), cells, strict=True))

    def _rebuild(self) -> None:
        """The table again with the chosen columns, newest first, the cursor where it was."""
        table, selected = self.table, self._selected_key()
        labels = {key: label for label, key in COLUMNS}
        table.clear(columns=True)
        for key in self.fit.shown:
            table.add_column(labels[key], key=key)
        for key in self._order:
            table.add_row(*self.fit.row(self._cell_map(self.runs[key])), key=key)
        table.sort("n", key=int, reverse=True)
        if selected in self.runs:
            table.move_cursor(row=table.get_row_index(selected), animate=False)

    @on(DataTable.RowSelected, "#hooks-table")
    def _open_record(self, event: DataTable.RowSelected) -> None:
        """Enter on a run: its matcher, whole command and output on top of everything."""
        event.stop()
        key = self._selected_key()
        self._show_detail(key)
        if key is not None and self.detail_text:
            from app.ui.widgets.record_screen import RecordScreen

            title = f"hook run #{key}"
            self.app.push_screen(RecordScreen(title, self.detail_text, copy_what="hook run"))

    @property
    def newest_first(self) -> list[HookRun]:
        return [self.runs[row.key.value].run for row in self.table.ordered_rows if row.key.value is not None]

    # -- events ------------------------------------------------------------------------------------------
    def on_engine_event(self, event: Event) -> None:
        if isinstance(event, HookStarted):  # a row that says "running" until the hook ends
            self._add(
                [(self.now(), HookRun(event.event, event.matcher, event.command, 0.0, None, "ok", RUNNING))]
            )
            self._hooks_running[(event.event, event.command)] = self._order[-1]
        elif isinstance(event, HookRun):
            old = self._hooks_running.pop((event.event, event.command), None)
            if old is not None and old in self.runs:  # its row now says how it ended
                self.runs.pop(old)
                self._order.remove(old)
                self.table.remove_row(old)
            self._add([(self.now(), event)])

    def _selected_key(self) -> str | None:
        table = self.table
        if table.row_count == 0:
            return None
        row = min(max(0, table.cursor_row), table.row_count - 1)
        return table.coordinate_to_cell_key(Coordinate(row, 0)).row_key.value

    def _add(self, runs: list[tuple[float, HookRun]]) -> None:
        table = self.table
        selected = self._selected_key()
        follow = selected is None or table.cursor_row <= 0
        for at, run in runs:
            self._seq += 1
            key = str(self._seq)
            self.runs[key] = HookRecord(self._seq, at, run)
            self._order.append(key)
            cells = self._cell_map(self.runs[key])
            self.fit.measure(cells)
            if self.fit.choose():
                self._rebuild()  # a wider value: the columns chosen again (the new row is in it)
            else:
                table.add_row(*self.fit.row(cells), key=key)
        while len(self._order) > MAX_ROWS:
            oldest = self._order.popleft()
            self.runs.pop(oldest, None)
            table.remove_row(oldest)
        table.sort("n", key=int, reverse=True)  # newest first; a few hundred rows at most
        if follow or selected not in self.runs:
            table.move_cursor(row=0, animate=False)
            self._show_detail(self._order[-1] if self._order else None)
        else:
            table.move_cursor(row=table.get_row_index(selected), animate=False)

    def _cells(self, seq: int, at: float, run: HookRun) -> tuple:
        state = {"ok": "ok", "block": "block"}.get(run.decision, "error")
        style = self.get_component_rich_style(f"hooks--{state}", partial=True)
        return (
            str(seq),
            clock_text(at, self.tz),
            Text(run.event),
            Text(one_line(run.command, COMMAND_CHARS)),
            "—" if run.exit_code is None else str(run.exit_code),
            Text("running" if run.output == RUNNING and run.exit_code is None else run.decision, style=style),
            f"{run.duration_ms:.0f}",
        )

    def on_session_shown(self) -> None:
        if self.reader is not None and not self.runs:
            self._load()

    @work(exclusive=True, group="hooks-load")
    async def _load(self) -> None:
        reader = self.reader
        if reader is None:
            return
        stored = await asyncio.to_thread(reader.hook_runs, MAX_ROWS)
        if not self.alive or self.reader is not reader:
            return  # removed (another session) or rebound meanwhile
        if self.runs:  # live runs arrived meanwhile; they are newer than the stored ones
            return
        runs = [(item.at, display_data(item.event)) for item in stored]  # outside text: made safe
        if runs:
            self._add(runs)

    def copy_text(self) -> str:
        return self.detail_text

    # -- detail --------------------------------------------------------------------------------------------
    @on(DataTable.RowHighlighted, "#hooks-table")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._show_detail(self._selected_key())  # the cursor now, not when the message was sent

    def _show_detail(self, key: str | None) -> None:
        body = self.query_one("#hooks-detail-body", Static)
        record = self.runs.get(key) if key else None
        if record is None:
            self.detail_text = ""
            body.update(EMPTY_DETAIL)
            return
        run = record.run
        exit_text = "no exit code" if run.exit_code is None else f"exit {run.exit_code}"
        lines = [
            f"{run.event} · matcher {run.matcher or '*'} · {exit_text} · {run.decision} · "
            f"{run.duration_ms:.0f} ms",
            f"$ {run.command}",
        ]
        if run.output:
            lines.append(head_text(run.output, OUTPUT_CHARS))
        self.detail_text = "\n".join(lines)
        body.update(Text(self.detail_text))
