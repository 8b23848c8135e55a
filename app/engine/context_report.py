"""What `/context` and the Payload panel show about the next request, as one typed record.

    report = engine.context_report()
    report.predicted_bytes, report.effective_cap, report.cap_detail, report.floor_parts

Built by the engine (`Engine.context_report`); read by the UI (`app.ui.reports`, the Payload
panel) without touching the engine.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

PROVIDER_EDIT_KEYS = ("edits", "tool_results", "tokens", "stubbed", "expected_rebuilds", "rebuild_tokens")


@dataclass(frozen=True)
class ContextReport:
    """The next request of a session: its size, the cap in force (and where it came from), the window."""

    messages_in_view: int
    messages_in_master: int
    predicted_bytes: int
    effective_cap: int | None
    cap_source: str  # configured | learned | assumed | none
    cap_detail: (
        str  # e.g. "learned 2026-11-29 10:02 from a waf_block rejection of 412.5 KB (Rejected by a WAF)"
    )
    context_window: int
    estimated_tokens: int
    bytes_per_token: float
    views_stacked: int
    floor_bytes: int
    floor_parts: tuple[Any, ...] = ()  # app.engine.payload.FloorPart
    context_engine: str = "local"
    native_compaction: str = ""  # the provider's compaction on this route ("" when none is in use)
    compact_threshold: int = 0  # tokens from which the provider compacts
    provider_edits: dict[str, int] = field(default_factory=dict)  # app.engine.native.edit_totals
    gateway_profile: tuple[str, ...] = ()  # the endpoint's profile beyond its cap (app.gateway_profile)

    @property
    def cap_share(self) -> float | None:
        """The next request as a share of the cap (None without a cap)."""
        return self.predicted_bytes / self.effective_cap if self.effective_cap else None
