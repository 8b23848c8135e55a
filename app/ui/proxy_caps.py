"""Caps panel (the live view of `bulkhead proxy`): each endpoint the proxy forwards to, the cap in force
there and where it came from, what it has accepted and refused.

    panel.seed(caps)                 # {endpoint: {"cap_bytes", "source", "detail"}} from the proxy's status
    panel.add_record(record)         # a finished ProxyRecord
    panel.cap_learned(event)         # app.proxy.records.CapLearned

A cap learned here is the one bulkhead's own routes to the same endpoint use (state.toml), and the other
way round: the panel says so. Endpoint names come from config or the command line and are shown escaped.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import tzinfo
from typing import Any

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from app.proxy.records import CapLearned, ProxyRecord
from app.sizes import format_size
from app.textsafe import display_line
from app.ui.widgets.common import Clock, Panel, clock_text, copy_binding

EMPTY = (
    "No endpoint has answered yet. Each endpoint's cap shows here once known (learned from a refusal, "
    "given with --cap, or already in state.toml)."
)


@dataclass
class EndpointCaps:
    endpoint: str
    cap_bytes: int | None = None
    detail: str = "no cap known"
    requests: int = 0
    refused: int = 0  # refusals judged to be about size
    largest_ok: int | None = None
    learned: list[str] = field(default_factory=list)  # one line per cap learned in this run


class CapsPanel(Panel):
    NAME = "caps"
    TITLE = "Caps"
    BINDINGS = [copy_binding("caps", "the caps")]
    HELP = """\
## Caps

Each endpoint the proxy forwards to: the **cap** in force (the smaller of `--cap` and the learned one),
where it came from, how many requests went there, how many were refused for their size, and the largest
body it accepted. A cap learned from a refusal is written to `state.toml`: bulkhead's own routes to the
same endpoint use it too (and a cap they learned is used here).
"""

    def __init__(self, *, clock: Clock = time.time, tz: tzinfo | None = None) -> None:
        super().__init__(clock=clock, tz=tz)
        self.endpoints: dict[str, EndpointCaps] = {}

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="caps-body"):
            yield Static(EMPTY, id="caps-table", markup=False)

    def _entry(self, endpoint: str) -> EndpointCaps:
        return self.endpoints.setdefault(endpoint, EndpointCaps(endpoint))

    def seed(self, caps: dict[str, Any]) -> None:
        for endpoint, info in caps.items():
            entry = self._entry(endpoint)
            entry.cap_bytes = info.get("cap_bytes")
            entry.detail = str(
                info.get("detail") or ("no cap known" if not entry.cap_bytes else info.get("source"))
            )
        self.sync()

    def add_record(self, record: ProxyRecord) -> None:
        self.add_records([record])

    def add_records(self, records: list[ProxyRecord]) -> None:
        for record in records:
            if record.endpoint:
                self._count(record)
        if records:
            self.sync()

    def _count(self, record: ProxyRecord) -> None:
        entry = self._entry(record.endpoint)
        entry.requests += 1
        if record.cause == "size" or record.kind in ("payload_too_large", "context_overflow"):
            entry.refused += 1
        elif record.status is not None and record.status < 400 and record.sent_bytes:
            entry.largest_ok = max(entry.largest_ok or 0, record.sent_bytes)
        if record.cap_bytes and record.cap_bytes != entry.cap_bytes:
            entry.cap_bytes = record.cap_bytes

    def cap_learned(self, event: CapLearned) -> None:
        entry = self._entry(event.endpoint)
        entry.cap_bytes = event.cap_bytes
        entry.detail = (
            f"learned {clock_text(self.now(), self.tz)} from a refusal of {format_size(event.rejected_bytes)}"
        )
        entry.learned.append(
            f"{clock_text(self.now(), self.tz)} {format_size(event.cap_bytes)} "
            f"(¾ of {format_size(event.rejected_bytes)} refused: {event.reason})"
        )
        self.sync()

    def lines(self) -> list[str]:
        out = []
        for entry in self.endpoints.values():
            cap = format_size(entry.cap_bytes) if entry.cap_bytes else "none known"
            largest = format_size(entry.largest_ok) if entry.largest_ok else "—"
            out.append(
                display_line(
                    f"{entry.endpoint}: cap {cap} ({entry.detail}) · {entry.requests} requests · "
                    f"{entry.refused} refused for size · largest accepted {largest}"
                )
            )
            out += [display_line(f"  learned {line}") for line in entry.learned]
        return out

    def copy_text(self) -> str:
        return "\n".join(self.lines())

    def sync(self) -> None:
        if not self.alive:
            return
        body = self.query_one("#caps-table", Static)
        if not self.endpoints:
            body.update(EMPTY)
            return
        table = Table.grid(padding=(0, 1), expand=True)
        table.add_column(justify="right", no_wrap=True, style="bold")
        table.add_column(ratio=1)
        for index, entry in enumerate(self.endpoints.values()):
            if index:
                table.add_row("", "")
            table.add_row("endpoint", Text(display_line(entry.endpoint)))
            cap = format_size(entry.cap_bytes) if entry.cap_bytes else "none known"
            table.add_row("cap", Text(f"{cap} · {display_line(entry.detail)}"))
            table.add_row(
                "seen",
                Text(
                    f"{entry.requests} requests · {entry.refused} refused for size · largest accepted "
                    f"{format_size(entry.largest_ok) if entry.largest_ok else '—'}"
                ),
            )
            for line in entry.learned:
                table.add_row("learned", Text(display_line(line)))
        table.add_row("", "")
        table.add_row(
            "", Text("shared with bulkhead's own routes to the same endpoint (state.toml)", style="dim")
        )
        body.update(table)
