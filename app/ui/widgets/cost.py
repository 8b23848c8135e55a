"""Cost panel: the session's counters — tokens by kind, cost, the summarizer apart, compactions,
rejections, recoveries and bytes saved.

The numbers are the session's live counters (`PanelSource.counters`, persisted with the
session); they are re-read on the events that change them. Before a session is shown, or in a
front end without one, the panel keeps its own count from UsageRecorded / CountersChanged events.
"""

from __future__ import annotations

import time
from datetime import tzinfo

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from app.model.costs import Counters, Usage
from app.model.events import (
    Compaction,
    CountersChanged,
    Event,
    FallbackMoved,
    RecoveryStep,
    Rejection,
    RequestFinished,
    Retry,
    UsageRecorded,
)
from app.model.levels import COMPACTION_STEPS, LADDER_STEPS, ladder_label
from app.sizes import format_size
from app.ui.widgets.common import Clock, Panel, copy_binding


def usd(amount: float, unpriced: int = 0) -> str:
    """`$0.0123`, `unpriced`, or `$0.0123 + 2 unpriced`."""
    if unpriced and not amount:
        return "unpriced"
    text = f"${amount:.4f}" if amount < 100 else f"${amount:,.2f}"
    return f"{text} + {unpriced} unpriced" if unpriced else text


STEP_ORDER = (*COMPACTION_STEPS.values(), *(ladder_label(level) for level in range(len(LADDER_STEPS))))


def _by(mapping: dict[str, int], order: tuple[str, ...] = ()) -> str:
    if not mapping:
        return "none"
    keys = [k for k in order if k in mapping] + sorted(k for k in mapping if k not in order)
    return " · ".join(f"{k} {mapping[k]}" for k in keys)


class CostPanel(Panel):
    NAME = "cost"
    TITLE = "Cost"
    HANDLES = (
        UsageRecorded,
        CountersChanged,
        Compaction,
        RequestFinished,
        RecoveryStep,
        Rejection,
        Retry,
        FallbackMoved,
    )
    BINDINGS = [copy_binding("cost", "the counters")]
    HELP = """\
## Cost

What this session used and what it cost, from each response's usage report priced with
genai-prices (offline data). A model genai-prices does not know is **unpriced**, never a
guess. The summarizer's calls, tokens and cost are kept apart from the chat's.

Also counted: requests, failures and transient retries; compactions by trigger (pre-flight,
auto, manual, recovery) and by step — a planned compaction's `trim`, `summary`, `last 4`, a recovery's
`ladder L1 (repair)` … `ladder L3 (last 4)`; how often only the last 4 messages were kept (the most
lossy) separately; rejections by kind;
recoveries that worked and that did not; bytes saved by compaction. When a fallback chain moved a
turn, **Routes** counts each route apart (requests, failures, tokens, cost) and the turns that moved.
The memory worker's calls, tokens and cost are a row of their own once it has made some. `/cost` prints
the same.
"""

    def __init__(self, *, clock: Clock = time.time, tz: tzinfo | None = None) -> None:
        super().__init__(clock=clock, tz=tz)
        self.local = Counters()  # used only until a session's source gives the live counters
        self.values: dict[str, str] = {}
        self.sections: tuple[tuple[str, tuple[str, ...]], ...] = _SECTIONS

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="cost-body"):
            yield Static(id="cost-table")

    @property
    def counters(self) -> Counters:
        if self.source is not None:
            return self.source.counters
        return self.local

    def on_engine_event(self, event: Event) -> None:
        if self.source is None:
            if isinstance(event, CountersChanged) and event.counters:
                self.local = Counters.from_dict(event.counters)
            elif isinstance(event, UsageRecorded):
                self.local.add_usage(
                    Usage(
                        event.input_tokens,
                        event.output_tokens,
                        event.cache_read_tokens,
                        event.cache_write_tokens,
                    ),
                    event.cost_usd,
                    summarizer=event.purpose == "summary",
                    memory=event.purpose == "memory",
                    route=event.route,
                )
        self.sync()

    def on_session_shown(self) -> None:
        self.sync()

    def copy_text(self) -> str:
        lines = []
        for title, keys in self.sections:
            lines.append(f"{title}:")
            lines += [f"  {key}: {self.values.get(key, '—')}" for key in keys]
        return "\n".join(lines) if self.values else ""

    def sync(self) -> None:
        if not self.ready:
            return
        c = self.counters
        values = {
            "input": f"{c.input_tokens:,}",
            "output": f"{c.output_tokens:,}",
            "cache read": f"{c.cache_read_tokens:,}",
            "cache write": f"{c.cache_write_tokens:,}",
            "cost": usd(c.cost_usd, c.unpriced_requests),
            "summarizer": (
                f"{c.summarizer_calls} call{'s' if c.summarizer_calls != 1 else ''} · "
                f"{c.summarizer_input_tokens:,} in / {c.summarizer_output_tokens:,} out · "
                f"{usd(c.summarizer_cost_usd)}"
            ),
            "total": usd(c.total_cost_usd, c.unpriced_requests),
            "requests": f"{c.requests} · {c.failed_requests} failed · {c.retries} retried",
            "compactions": _by(c.compactions, ("preflight", "auto", "manual", "recovery")),
            "by step": _by(c.compactions_by_level, STEP_ORDER),
            "last 4 only": str(c.l3_count),
            "rejections": _by(c.rejections),
            "recoveries": f"{c.recoveries_ok} ok · {c.recoveries_failed} failed",
            "bytes saved": format_size(c.bytes_saved) if c.bytes_saved else "0 B",
        }
        if not c.requests and not c.input_tokens and not c.summarizer_calls:
            values["cost"] = values["total"] = "$0.0000" if self.source is not None else "—"
        sections: tuple[tuple[str, tuple[str, ...]], ...] = _SECTIONS
        if c.memory_calls:  # the memory worker's calls, apart (a row only once it has made some)
            values["memory"] = (
                f"{c.memory_calls} call{'s' if c.memory_calls != 1 else ''} · "
                f"{c.memory_input_tokens:,} in / {c.memory_output_tokens:,} out · {usd(c.memory_cost_usd)}"
            )
            sections = (sections[0], ("Cost", ("cost", "summarizer", "memory", "total")), *sections[2:])
        routes = route_rows(c)
        if routes:  # a fallback chain answered on more than one route: each counted apart
            values.update(routes)
            sections = (*_SECTIONS, ("Routes", tuple(routes)))
        self.values = values
        self.sections = sections
        self.query_one("#cost-table", Static).update(_table(values, sections))


_SECTIONS = (
    ("Tokens", ("input", "output", "cache read", "cache write")),
    ("Cost", ("cost", "summarizer", "total")),
    (
        "Session",
        (
            "requests",
            "compactions",
            "by step",
            "last 4 only",
            "rejections",
            "recoveries",
            "bytes saved",
        ),
    ),
)


def route_rows(c: Counters) -> dict[str, str]:
    """One row per route when more than one route sent requests (a fallback chain moved), else none."""
    if len(c.by_route) < 2 and not c.fallbacks:
        return {}
    rows = {}
    for route, entry in sorted(c.by_route.items(), key=lambda item: -item[1].get("requests", 0)):
        failed = int(entry.get("failed", 0))
        rows[route] = (
            f"{int(entry.get('requests', 0))} req"
            + (f" ({failed} failed)" if failed else "")
            + f" · {int(entry.get('input_tokens', 0)):,} in / {int(entry.get('output_tokens', 0)):,} out · "
            + usd(float(entry.get("cost_usd", 0.0)))
        )
    rows["fallbacks"] = f"{c.fallbacks} turn{'s' if c.fallbacks != 1 else ''} moved to the next route"
    return rows


def _table(values: dict[str, str], sections: tuple[tuple[str, tuple[str, ...]], ...] = _SECTIONS) -> Group:
    parts: list = []
    width = max(len(key) for _, keys in sections for key in keys)
    for index, (title, keys) in enumerate(sections):
        if index:
            parts.append(Text(""))
        parts.append(Text(title, style="bold underline"))
        grid = Table.grid(padding=(0, 1), expand=True)
        grid.add_column(justify="right", no_wrap=True, style="bold", min_width=width)
        grid.add_column(ratio=1)
        for key in keys:
            grid.add_row(key, values.get(key, "—"))
        parts.append(grid)
    return Group(*parts)
