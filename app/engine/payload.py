"""Request sizes against limits: the effective cap, preflight decisions, floor diagnosis, tokens.

Request size is bytes of the serialized body (the provider adapters predict it exactly).
Three byte caps may exist — configured (`max_payload`), learned (¾ of a rejected request,
per endpoint, in state.toml) and assumed (4 MiB after a rejection of unknown size) — and
the effective cap is the smallest present. Tokens are estimated as bytes/4, calibrated
from the provider's usage reports.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from app.config import Settings
from app.engine.caps import LEARNED_CAP_RATIO, learned_cap_for  # noqa: F401 - the cap policy, re-exported
from app.model.events import CapSource, CompactionTrigger
from app.sizes import format_size, heaviest, sized_list
from app.state import LearnedCap

FLOOR_WARN_RATIO = 0.75  # seed: warn when the base reaches ¾ of the rejected size
DEFAULT_BYTES_PER_TOKEN = 4.0
CALIBRATION_WEIGHT = 0.3  # how much one usage report moves the bytes-per-token estimate


@dataclass(frozen=True)
class CapInfo:
    """The cap that applies and why, for the gauge and the notices."""

    bytes: int | None
    source: CapSource
    detail: str  # e.g. "learned 2026-11-29 10:02 from a 413 of 126.4 KB"


def effective_cap(
    configured: int | None,
    learned: LearnedCap | None,
    assumed: int | None,
    configured_where: str = "config",
    *,
    imported: LearnedCap | None = None,
    imported_from: str = "",
) -> CapInfo:
    """The smallest cap present; an imported one (a team's gateways.toml) is a starting point that any tighter
    cap — learned here, configured — overrides."""
    candidates: list[CapInfo] = []
    if configured:
        candidates.append(CapInfo(configured, "configured", f"max_payload from {configured_where}"))
    if learned:
        rejected = f" of {format_size(learned.rejected_bytes)}" if learned.rejected_bytes else ""
        when = learned.learned_at.replace("T", " ").rstrip("Z")[:16]
        candidates.append(
            CapInfo(learned.cap_bytes, "learned", f"learned {when} from a {learned.kind} rejection{rejected}")
        )
    if imported:
        candidates.append(
            CapInfo(imported.cap_bytes, "imported", f"imported from {imported_from or 'a gateways file'}")
        )
    if assumed:
        candidates.append(CapInfo(assumed, "assumed", "assumed after a rejection of unknown size"))
    if not candidates:
        return CapInfo(None, "none", "no cap known")
    return min(candidates, key=lambda c: c.bytes or 0)


@dataclass(frozen=True)
class Preflight:
    """What to do before sending: nothing, compact (to `target_bytes`), or warn once."""

    action: Literal["none", "compact", "warn"]
    trigger: CompactionTrigger = "auto"  # preflight (byte cap) | auto (context window); read when compacting
    target_bytes: int | None = None
    message: str = ""


def preflight(
    predicted_bytes: int,
    cap: CapInfo,
    *,
    settings: Settings,
    context_window: int,
    max_output_tokens: int,
    bytes_per_token: float,
    warned_no_cap: bool,
) -> Preflight:
    """Decide before a request: compact against the byte cap, against the window, or warn once.

    When both limits call for compaction the smaller target wins.
    """
    decisions: list[Preflight] = []
    if cap.bytes:
        share = predicted_bytes / cap.bytes
        if share > settings.preflight_ratio:
            label = {
                "configured": "configured cap",
                "learned": "learned cap",
                "imported": "imported cap",
            }.get(cap.source, "cap")
            decisions.append(
                Preflight(
                    "compact",
                    "preflight",
                    int(cap.bytes * settings.preflight_target),
                    f"pre-flight: history {format_size(predicted_bytes)} ≈ {share:.0%} of {label} "
                    f"({format_size(cap.bytes)}) — compacting",
                )
            )
    usable_tokens = max(1, context_window - max_output_tokens)
    estimated_tokens = predicted_bytes / bytes_per_token
    if estimated_tokens > settings.compact_threshold * usable_tokens:
        decisions.append(
            Preflight(
                "compact",
                "auto",
                int(settings.compact_target * usable_tokens * bytes_per_token),
                f"context ≈ {estimated_tokens:,.0f} tokens, {estimated_tokens / usable_tokens:.0%} of the usable "
                f"window ({usable_tokens:,} tokens) — compacting",
            )
        )
    if decisions:
        return min(decisions, key=lambda d: d.target_bytes or 0)
    if cap.bytes is None and predicted_bytes > settings.no_cap_warn_bytes and not warned_no_cap:
        return Preflight(
            "warn",
            message=(
                f"history {format_size(predicted_bytes)} — if you are behind a proxy/gateway, set max_payload "
                f'(e.g. "5MB") in config.toml or export BULKHEAD_MAX_PAYLOAD=5MB (adjust to the proxy limit)'
            ),
        )
    return Preflight("none")


@dataclass(frozen=True)
class FloorPart:
    """One part of the non-compactable request base, in exact request bytes."""

    label: str  # "system prompt" | "instructions" | "tools (built-in)" | "tools (MCP)" | "tools (MCP) NAME"
    bytes: int


@dataclass(frozen=True)
class FloorSizes:
    """The non-compactable base of every request: its parts (system prompt, instructions, tools) and
    the exact bytes of a request with no messages."""

    system_bytes: int  # the system prompt bulkhead writes
    instructions_bytes: int  # AGENTS.md / CLAUDE.md joined to it
    tools_bytes: int  # every tool definition sent (built-in and MCP)
    total_bytes: int  # a request with no messages, exactly
    mcp_bytes: int = 0  # what the MCP part of the tool list adds (the index when deferred)
    parts: tuple[FloorPart, ...] = ()
    mcp_servers: tuple[tuple[str, int], ...] = ()  # full definition bytes by server, heaviest first


MCP_PART = "tools (MCP)"
# The parts that add up to the floor (a "tools (MCP) NAME" part details MCP_PART by server).
FLOOR_LABELS = ("system prompt", "instructions", "memory", "tools (built-in)", MCP_PART)


def floor_breakdown(
    *,
    system_bytes: int,
    builtin_tools_bytes: int,
    instructions_bytes: int = 0,
    mcp_tools_bytes: int = 0,
    mcp_servers: Mapping[str, int] | None = None,
    memory_bytes: int = 0,
) -> list[FloorPart]:
    """The floor as ordered parts: system prompt, instructions, built-in tools, MCP tools (what is sent),
    then one part per MCP server (the bytes its full definitions take, heaviest first)."""
    parts = [FloorPart("system prompt", system_bytes)]
    if instructions_bytes:
        parts.append(FloorPart("instructions", instructions_bytes))
    if memory_bytes:  # memory = "auto": the memory file's facts (app.engine.memory)
        parts.append(FloorPart("memory", memory_bytes))
    parts.append(FloorPart("tools (built-in)", builtin_tools_bytes))
    if mcp_tools_bytes or mcp_servers:
        parts.append(FloorPart(MCP_PART, mcp_tools_bytes))
        for name, size in sorted((mcp_servers or {}).items(), key=lambda item: -item[1]):
            parts.append(FloorPart(f"{MCP_PART} {name}", size))
    return parts


def describe_tools(parts: Sequence[FloorPart]) -> str:
    """`tools: 14.2 KB, of which MCP: 9.1 KB` from a breakdown (tools = built-in + MCP sent)."""
    builtin = sum(p.bytes for p in parts if p.label == "tools (built-in)")
    mcp = sum(p.bytes for p in parts if p.label == MCP_PART)
    text = f"tools: {format_size(builtin + mcp)}"
    if any(p.label == MCP_PART for p in parts):
        text += f", of which MCP: {format_size(mcp)}"
    return text


def describe_floor(parts: Sequence[FloorPart]) -> str:
    """`system prompt 1.1 KB, instructions 40.2 KB, tools (built-in) 6.0 KB` (per-server parts left out)."""
    return sized_list((part.label, part.bytes) for part in parts if part.label in FLOOR_LABELS)


@dataclass(frozen=True)
class FloorDiagnosis:
    fail_fast: bool
    warn: bool
    message: str


def heaviest_servers(servers: Mapping[str, int] | None, limit: int = 3) -> str:
    """`MCP servers big 200.0 KB, demo 1.2 KB` — the heaviest first — or ""."""
    return f"MCP servers {heaviest(servers.items(), limit)}" if servers else ""


_REDUCE = {
    "system prompt": "shorten the system prompt",
    "instructions": "shorten AGENTS.md / CLAUDE.md (or lower instructions_max_bytes)",
    "memory": 'lower memory_max_bytes, or trim the memory file (memory = "auto")',
    "tools (built-in)": 'offer fewer built-in tools (tools = ["read_file", "grep"] in config.toml, or [] for none)',
    MCP_PART: "turn off or defer the heaviest MCP servers (enabled = false, mcp_defer_ratio)",
}


def reduce_advice(parts: Sequence[FloorPart]) -> str:
    """`the biggest part is system prompt (56.7 KB): shorten the system prompt` — what to reduce first."""
    shown = [part for part in parts if part.label in FLOOR_LABELS]
    if not shown:
        return "reduce it"
    biggest = max(shown, key=lambda part: part.bytes)
    return (
        f"the biggest part is {biggest.label} ({format_size(biggest.bytes)}): "
        f"{_REDUCE.get(biggest.label, 'reduce it')}"
    )


def diagnose_floor(
    parts: Sequence[FloorPart],
    floor_bytes: int,
    rejected_bytes: int | None,
    mcp_servers: Mapping[str, int] | None = None,
) -> FloorDiagnosis:
    """Can compaction help at all? The base (system prompt, instructions, tool definitions) is never
    compacted; the message lists its parts, names the biggest and what to reduce, and the heaviest
    MCP servers (`mcp_servers`: full definition bytes by server)."""
    if not rejected_bytes:
        return FloorDiagnosis(False, False, "")
    listed = describe_floor(parts)
    servers = heaviest_servers(mcp_servers)
    if servers:
        listed += f"; {servers}"
    largest = reduce_advice(parts)
    if floor_bytes >= rejected_bytes:
        return FloorDiagnosis(
            True,
            False,
            (
                f"The non-compactable request base ({format_size(floor_bytes)}: {listed}) meets or exceeds the size "
                f"the gateway rejected ({format_size(rejected_bytes)}). History compaction cannot help — {largest}, "
                f"or ask for the proxy/WAF body-size limit to be raised."
            ),
        )
    if floor_bytes >= FLOOR_WARN_RATIO * rejected_bytes:
        return FloorDiagnosis(
            False,
            True,
            (
                f"The request base alone is {format_size(floor_bytes)} ({listed}) — close to the gateway's rejection "
                f"threshold ({format_size(rejected_bytes)}); {largest}."
            ),
        )
    return FloorDiagnosis(False, False, "")


def calibrate(bytes_per_token: float, predicted_bytes: int, reported_input_tokens: int) -> float:
    """Move the bytes-per-token estimate towards what the provider reported."""
    if predicted_bytes <= 0 or reported_input_tokens <= 0:
        return bytes_per_token
    observed = predicted_bytes / reported_input_tokens
    if not 0.5 <= observed <= 16:  # nonsense usage (a proxy rewriting bodies, a lab with odd maths)
        return bytes_per_token
    return bytes_per_token + CALIBRATION_WEIGHT * (observed - bytes_per_token)
