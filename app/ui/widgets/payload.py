"""Payload panel: the next request's bytes against the cap that applies, request sizes, context.

- a gauge of the predicted bytes of the next request against the effective cap, warning
  from the pre-flight ratio (85%) and red over the cap; it names the cap (configured from
  where, learned when and from which rejection, assumed) — or, with no cap, says so and
  measures against the 2.5 MB no-cap warning threshold;
- a sparkline of request sizes, one column per request, rejections marked under it;
- context tokens against the model's window.
"""

from __future__ import annotations

import asyncio
import time
from datetime import tzinfo
from typing import TYPE_CHECKING

from textual import work
from textual.app import ComposeResult
from textual.widgets import Static

from app.model.events import (
    CapLearned,
    Event,
    ProviderEdits,
    RecoveryStep,
    RequestFinished,
    TurnFinished,
    TurnStarted,
    ViewChanged,
)
from app.sizes import format_size
from app.ui.widgets.common import (
    Clock,
    Gauge,
    Panel,
    SizeSample,
    SizeSparkline,
    copy_binding,
    setting_default,
)

if TYPE_CHECKING:
    from app.engine.api import ContextReport

SPARKLINE_SAMPLES = 240

_SOURCE_WORDS = {
    "configured": "configured",
    "learned": "learned",
    "imported": "imported",
    "assumed": "assumed",
    "none": "no cap known",
}


class PayloadPanel(Panel):
    NAME = "payload"
    TITLE = "Payload"
    HANDLES = (
        ViewChanged,
        RequestFinished,
        CapLearned,
        TurnStarted,
        RecoveryStep,
        TurnFinished,
        ProviderEdits,
    )
    BINDINGS = [copy_binding("payload", "the sizes, the cap and where it came from")]
    HELP = """\
## Payload

The size of the **next request** (the exact bytes of the serialized body, predicted from the
active view) against the **effective cap** — the smallest of the configured `max_payload`, the
cap *learned* from a gateway rejection (¾ of the rejected size, remembered per endpoint) and an
*assumed* 4 MB after a rejection of unknown size.

- The gauge turns **yellow** past the pre-flight ratio (85%): the next request compacts first.
  It turns **red** over the cap.
- With no cap known the gauge measures against the 2.5 MB threshold above which bulkhead warns
  that a proxy may be near.
- While the recovery ladder sends a smaller candidate ("Recovery L1 sending …") the gauge shows
  that candidate; the view itself changes only once the candidate is accepted.
- The sparkline shows one column per request; `✗` marks a payload rejection (413, WAF block,
  dropped connection, context overflow), `!` another failure.
- Context: estimated input tokens against the model's context window.
- Floor: what every request carries and compaction never shrinks — the system prompt, your project
  instructions (AGENTS.md / CLAUDE.md) and the tool definitions, with bytes for each.
- Gateway: what this endpoint has shown beyond its cap (`bulkhead gateway show`) — a header limit,
  betas it refuses, content blocks, streaming quirks, the proxy hop — and a profile imported from a
  team's gateways.toml, with its source.

`/cap reset` forgets a learned cap; `/context` shows the same numbers in the chat.
"""

    def __init__(self, *, clock: Clock = time.time, tz: tzinfo | None = None) -> None:
        super().__init__(clock=clock, tz=tz)
        self.predicted_bytes: int | None = None
        self.cap_bytes: int | None = None
        self.recovering: tuple[int, int | None] | None = None  # (level, candidate bytes) while one is sent
        self.cap_source = "none"
        self.cap_detail = "no cap known"
        self.context_tokens: int | None = None
        self.context_window: int | None = None
        self.messages: int | None = None
        self.provider_cleared: tuple[int, int, int] | None = (
            None  # edits, tool results, tokens (this session)
        )
        self.floor: tuple = ()  # app.engine.payload.FloorPart of the last ViewChanged: the non-compactable base
        self.floor_bytes: int | None = None
        # the typed settings' defaults until a ViewChanged carries the session's own
        self.warn_ratio: float = setting_default("preflight_ratio")
        self.window_warn_ratio: float = setting_default("compact_threshold")
        self.no_cap_warn_bytes: int = setting_default("no_cap_warn_bytes")
        self.mcp_deferred_from: int | None = None  # MCP definitions deferred: what they would add in full
        self.gateway_profile: tuple[
            str, ...
        ] = ()  # what the endpoint showed beyond its cap (app.gateway_profile)
        self.gauge = Gauge(id="payload-gauge")
        self.context_gauge = Gauge(id="payload-context-gauge")
        self.sparkline = SizeSparkline(SPARKLINE_SAMPLES, id="payload-sparkline")
        self._seen_requests: set[str] = set()

    def compose(self) -> ComposeResult:
        yield Static(id="payload-next", classes="panel-line", markup=False)
        yield self.gauge
        yield Static(id="payload-cap", classes="panel-detail", markup=False)
        yield Static(id="payload-floor", classes="panel-detail", markup=False)
        yield Static(id="payload-profile", classes="panel-detail", markup=False)
        yield Static(id="payload-spark-title", classes="panel-line", markup=False)
        yield self.sparkline
        yield Static(id="payload-context", classes="panel-line", markup=False)
        yield self.context_gauge

    # -- state ---------------------------------------------------------------------------------------
    @property
    def samples(self) -> list[SizeSample]:
        return list(self.sparkline.samples)

    @property
    def gauge_total(self) -> int:
        """What the gauge measures against: the cap, or the no-cap warning threshold."""
        return self.cap_bytes or self.no_cap_warn_bytes

    @property
    def cap_label(self) -> str:
        """One line naming the cap that applies and where it came from."""
        if self.cap_bytes is None:
            return f"no cap known · warns above {format_size(self.no_cap_warn_bytes)}"
        source = _SOURCE_WORDS.get(self.cap_source, self.cap_source)
        detail = self.cap_detail or source
        if not detail.startswith(source):
            detail = f"{source}: {detail}"
        return f"cap {format_size(self.cap_bytes)} · {detail}"

    @property
    def floor_label(self) -> str:
        """`Floor 9.6 KB: system prompt 512 B · instructions 1.2 KB · tools (built-in) 7.0 KB`, and when MCP
        tools are in play `· tools: 7.4 KB, of which MCP: 2.6 KB (deferred from 311.7 KB)` (the floor is
        what compaction cannot shrink)."""
        if self.floor_bytes is None:
            return "Floor —"
        from app.engine.api.ui_text import (  # not before a session: first frame
            FLOOR_LABELS,
            MCP_PART,
            describe_tools,
        )

        parts = " · ".join(
            f"{p.label} {format_size(p.bytes)}" for p in self.floor if p.label in FLOOR_LABELS and p.bytes > 0
        )
        text = f"Floor {format_size(self.floor_bytes)}" + (f": {parts}" if parts else "")
        if any(p.label == MCP_PART for p in self.floor):
            text += f" — {describe_tools(self.floor)}"
            if self.mcp_deferred_from is not None:
                text += f" (deferred from {format_size(self.mcp_deferred_from)})"
        return text

    @property
    def profile_label(self) -> str:
        """`Gateway: refused beta: … · streaming: buffered SSE …` — what the endpoint showed beyond its cap
        (its text came from outside: shown escaped)."""
        from app.textsafe import display_line

        if not self.gateway_profile:
            return ""
        return "Gateway: " + "\n  ".join(display_line(line) for line in self.gateway_profile)

    # -- events ----------------------------------------------------------------------------------------
    def on_engine_event(self, event: Event) -> None:
        if isinstance(event, ProviderEdits):
            self.provider_cleared = (event.total_edits, event.total_tool_results, event.total_tokens)
            self.sync()
        elif isinstance(event, RecoveryStep | TurnFinished):
            # While the ladder sends a candidate the view stays as it was until the candidate is
            # accepted: the gauge shows the candidate (the request on the wire), not the old view.
            recovering = (
                (event.level, event.bytes_after)
                if isinstance(event, RecoveryStep) and event.outcome == "sending"
                else None
            )
            if recovering != self.recovering:
                self.recovering = recovering
                self.sync()
        elif isinstance(event, ViewChanged):
            self.recovering = None
            self.predicted_bytes = event.predicted_bytes
            self.messages = event.messages
            self.context_tokens = event.context_tokens
            self.context_window = event.context_window
            if event.floor_bytes is not None:
                self.floor, self.floor_bytes = event.floor, event.floor_bytes
            self.mcp_deferred_from = event.mcp_deferred_from
            self.gateway_profile = event.gateway_profile
            if event.cap_detail:
                self.cap_detail = event.cap_detail
            elif event.effective_cap != self.cap_bytes or event.cap_source != self.cap_source:
                self.cap_detail = _SOURCE_WORDS.get(event.cap_source, event.cap_source)
            self.cap_bytes = event.effective_cap
            self.cap_source = event.cap_source if event.effective_cap else "none"
            if event.preflight_ratio is not None:
                self.warn_ratio = event.preflight_ratio
            if event.compact_threshold is not None:
                self.window_warn_ratio = event.compact_threshold
            if event.no_cap_warn_bytes is not None:
                self.no_cap_warn_bytes = event.no_cap_warn_bytes
            self.sync()
        elif isinstance(event, RequestFinished):
            if event.request_id in self._seen_requests:
                return
            self._seen_requests.add(event.request_id)
            if len(self._seen_requests) > SPARKLINE_SAMPLES * 4:
                self._seen_requests = {event.request_id}
            self.sparkline.push(SizeSample(event.bytes or event.predicted_bytes, event.kind, event.purpose))
            self._sync_spark_title()
        elif isinstance(event, CapLearned):
            # The gauge switches on the next ViewChanged; say at once what was learned.
            if event.assumed:
                self.cap_detail = f"assumed {format_size(event.cap_bytes)} after a rejection of unknown size"
            else:
                self.cap_detail = f"learned just now from a rejection of {format_size(event.rejected_bytes)}"
            if self.cap_bytes is None or event.cap_bytes <= self.cap_bytes:
                self.cap_bytes = event.cap_bytes
                self.cap_source = "assumed" if event.assumed else "learned"
            self.sync()

    def on_session_shown(self) -> None:
        report = self.source.report if self.source is not None else None
        if report is not None and self.predicted_bytes is None:
            self.show_report(report)
        self._load_history()
        self.sync()

    def show_report(self, report: ContextReport) -> None:
        """The engine's numbers on the next request when the session opened (before any ViewChanged)."""
        self.predicted_bytes = report.predicted_bytes
        self.cap_bytes = report.effective_cap
        self.cap_source = report.cap_source if report.effective_cap else "none"
        self.cap_detail = report.cap_detail or _SOURCE_WORDS.get(report.cap_source, report.cap_source)
        self.context_tokens = report.estimated_tokens
        self.context_window = report.context_window
        self.messages = report.messages_in_view
        edits = report.provider_edits
        if edits.get("edits"):
            self.provider_cleared = (edits["edits"], edits["tool_results"], edits["tokens"])
        self.floor = tuple(report.floor_parts)
        self.floor_bytes = report.floor_bytes
        self.gateway_profile = tuple(report.gateway_profile)

    @work(exclusive=True, group="payload-history")
    async def _load_history(self) -> None:
        """Seed the sparkline with the session's earlier requests (a resumed session)."""
        reader = self.reader
        if reader is None or self.sparkline.samples:
            return
        try:
            sizes = await asyncio.to_thread(reader.request_sizes, SPARKLINE_SAMPLES)
        except Exception:  # no history is not an error
            return
        if not self.alive or self.reader is not reader or self.sparkline.samples:
            return  # removed, rebound, or live requests arrived meanwhile (they are newer)
        samples = []
        for size in sizes:
            if size.sending:
                continue
            self._seen_requests.add(size.id)
            samples.append(SizeSample(size.bytes, size.kind, size.purpose))
        self.sparkline.extend(samples)
        self._sync_spark_title()

    def copy_text(self) -> str:
        if not self.ready:
            return ""
        lines = [
            str(self.query_one("#payload-next", Static).render()),
            self.cap_label,
            self.floor_label,
            *([self.profile_label] if self.gateway_profile else []),
            str(self.query_one("#payload-spark-title", Static).render()),
            str(self.query_one("#payload-context", Static).render()),
        ]
        sizes = ", ".join(
            format_size(s.bytes) + (f" ({s.kind})" if s.kind else "") for s in self.samples[-20:]
        )
        if sizes:
            lines.append(f"Last requests: {sizes}")
        return "\n".join(lines)

    # -- rendering ---------------------------------------------------------------------------------------
    def sync(self) -> None:
        if not self.ready:
            return
        total = self.gauge_total
        predicted = self.predicted_bytes
        candidate = self.recovering[1] if self.recovering is not None else None
        if candidate is not None:
            predicted = candidate  # the request actually being sent; the view stays until it is accepted
        self.gauge.warn_ratio = self.warn_ratio
        self.gauge.soft = self.cap_bytes is None
        self.gauge.total = total
        self.gauge.value = predicted
        level = self.gauge.level
        self.update_classes({"-warn": level == "warn", "-over": level == "over"})  # the panel restyled once
        next_line = self.query_one("#payload-next", Static)
        if predicted is None:
            next_line.update("Next request —  (waiting for the session)")
        else:
            against = (
                f"of {format_size(self.cap_bytes)} cap"
                if self.cap_bytes
                else f"of {format_size(total)} warning threshold"
            )
            messages = f" · {self.messages} msgs" if self.messages is not None else ""
            if self.recovering is not None:
                next_line.update(f"Recovery L{self.recovering[0]} sending {format_size(predicted)} {against}")
            else:
                next_line.update(f"Next request {format_size(predicted)} {against}{messages}")
        self.query_one("#payload-cap", Static).update(self.cap_label)
        self.query_one("#payload-floor", Static).update(self.floor_label)
        profile = self.query_one("#payload-profile", Static)
        profile.update(self.profile_label)
        profile.display = bool(self.gateway_profile)
        self.sparkline.set_cap(self.cap_bytes)
        self._sync_spark_title()
        context = self.query_one("#payload-context", Static)
        if self.context_tokens is None:
            context.update("Context —")
        else:
            window = f" / {self.context_window:,}" if self.context_window else ""
            cleared = ""
            if self.provider_cleared:
                edits, results, tokens = self.provider_cleared
                cleared = (
                    f" · provider cleared {results:,} tool result{'s' if results != 1 else ''}, "
                    f"{tokens:,} tokens in {edits:,} edit{'s' if edits != 1 else ''}"
                )
            context.update(f"Context {self.context_tokens:,}{window} tokens (est.){cleared}")
        self.context_gauge.warn_ratio = self.window_warn_ratio
        self.context_gauge.total = self.context_window
        self.context_gauge.value = self.context_tokens

    def _sync_spark_title(self) -> None:
        if not self.ready:
            return
        samples = self.sparkline.samples
        rejected = sum(1 for s in samples if s.rejected)
        if samples:
            largest = max(s.bytes for s in samples)
            title = (
                f"Requests {len(samples)} · {rejected} rejected · last {format_size(samples[-1].bytes)}"
                f" · max {format_size(largest)}"
            )
        else:
            title = "Requests —"
        self.query_one("#payload-spark-title", Static).update(title)
