"""Request sizes against limits: the effective cap, preflight decisions, floor diagnosis, tokens.

Request size is bytes of the serialized body (the provider adapters predict it exactly).
Three byte caps may exist — configured (`max_payload`), learned (¾ of a rejected request,
per endpoint, in state.toml) and assumed (4 MiB after a rejection of unknown size) — and
the effective cap is the smallest present. Tokens are estimated as bytes/4, calibrated
from the provider's usage reports.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass

from app.config import Settings
from app.engine.instructions import join_system
from app.sizes import format_size
from app.state import LearnedCap

LEARNED_CAP_RATIO = 0.75  # seed: "¾ of the rejected size"
FLOOR_WARN_RATIO = 0.75  # seed: warn when the base reaches ¾ of the rejected size
DEFAULT_BYTES_PER_TOKEN = 4.0
CALIBRATION_WEIGHT = 0.3  # how much one usage report moves the bytes-per-token estimate


def learned_cap_for(rejected_bytes: int) -> int:
    """The cap learned from a payload rejection of `rejected_bytes`: floor(0.75 × N)."""
    return math.floor(LEARNED_CAP_RATIO * rejected_bytes)


@dataclass(frozen=True)
class CapInfo:
    """The cap that applies and why, for the gauge and the notices."""

    bytes: int | None
    source: str  # configured | learned | assumed | none
    detail: str  # e.g. "learned 2026-11-29 10:02 from a 413 of 126.4 KB"


def effective_cap(configured: int | None, learned: LearnedCap | None, assumed: int | None,
                  configured_where: str = "config") -> CapInfo:
    candidates: list[CapInfo] = []
    if configured:
        candidates.append(CapInfo(configured, "configured", f"max_payload from {configured_where}"))
    if learned:
        rejected = f" of {format_size(learned.rejected_bytes)}" if learned.rejected_bytes else ""
        when = learned.learned_at.replace("T", " ").rstrip("Z")[:16]
        candidates.append(CapInfo(learned.cap_bytes, "learned",
                                  f"learned {when} from a {learned.kind} rejection{rejected}"))
    if assumed:
        candidates.append(CapInfo(assumed, "assumed", "assumed after a rejection of unknown size"))
    if not candidates:
        return CapInfo(None, "none", "no cap known")
    return min(candidates, key=lambda c: c.bytes or 0)


@dataclass(frozen=True)
class Preflight:
    """What to do before sending: nothing, compact (to `target_bytes`), or warn once."""

    action: str  # none | compact | warn
    trigger: str = ""  # preflight (byte cap) | auto (context window)
    target_bytes: int | None = None
    message: str = ""


def preflight(predicted_bytes: int, cap: CapInfo, *, settings: Settings, context_window: int,
              max_output_tokens: int, bytes_per_token: float, warned_no_cap: bool) -> Preflight:
    """Decide before a request: compact against the byte cap, against the window, or warn once.

    When both limits call for compaction the smaller target wins.
    """
    decisions: list[Preflight] = []
    if cap.bytes:
        share = predicted_bytes / cap.bytes
        if share > settings.preflight_ratio:
            label = {"configured": "configured cap", "learned": "learned cap"}.get(cap.source, "cap")
            decisions.append(Preflight(
                "compact", "preflight", int(cap.bytes * settings.preflight_target),
                f"pre-flight: history {format_size(predicted_bytes)} ≈ {share:.0%} of {label} "
                f"({format_size(cap.bytes)}) — compacting"))
    usable_tokens = max(1, context_window - max_output_tokens)
    estimated_tokens = predicted_bytes / bytes_per_token
    if estimated_tokens > settings.compact_threshold * usable_tokens:
        decisions.append(Preflight(
            "compact", "auto", int(settings.compact_target * usable_tokens * bytes_per_token),
            f"context ≈ {estimated_tokens:,.0f} tokens, {estimated_tokens / usable_tokens:.0%} of the usable "
            f"window ({usable_tokens:,} tokens) — compacting"))
    if decisions:
        return min(decisions, key=lambda d: d.target_bytes or 0)
    if cap.bytes is None and predicted_bytes > settings.no_cap_warn_bytes and not warned_no_cap:
        return Preflight("warn", message=(
            f"history {format_size(predicted_bytes)} — if you are behind a proxy/gateway, set max_payload "
            f"(e.g. \"5MB\") in config.toml or export BULKHEAD_MAX_PAYLOAD=5MB (adjust to the proxy limit)"))
    return Preflight("none")


@dataclass(frozen=True)
class FloorPart:
    """One part of the non-compactable base of every request, with its serialized bytes."""

    label: str  # "system prompt" | "instructions" | "tools (built-in)" | "tools (MCP)" | "tools (MCP: NAME)"
    bytes: int


def _json_len(value: object) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


def floor_breakdown(base_system: str, instructions: str, tools: Sequence[object]) -> list[FloorPart]:
    """The floor's parts: the system prompt, project instructions (AGENTS.md, CLAUDE.md) and tool
    definitions — built-in and MCP (`mcp__SERVER__TOOL`) apart. Parts of 0 bytes are left out."""
    full = join_system(base_system, instructions)
    parts = [FloorPart("system prompt", _json_len(base_system)),
             FloorPart("instructions", _json_len(full) - _json_len(base_system) if instructions else 0)]
    groups: dict[str, list[dict]] = {}
    for tool in tools:
        name = getattr(tool, "name", "")
        label = "tools (MCP)" if name.startswith("mcp__") else "tools (built-in)"
        groups.setdefault(label, []).append({"name": name, "description": getattr(tool, "description", ""),
                                             "input_schema": dict(getattr(tool, "input_schema", {}) or {})})
    for label in ("tools (built-in)", "tools (MCP)"):
        if groups.get(label):
            parts.append(FloorPart(label, _json_len(groups[label])))
    return [part for part in parts if part.bytes > 0]


def describe_floor(parts: Sequence[FloorPart]) -> str:
    """`system prompt 1.1 KB, instructions 40.2 KB, tools (built-in) 6.0 KB`."""
    return ", ".join(f"{part.label} {format_size(part.bytes)}" for part in parts)


@dataclass(frozen=True)
class FloorDiagnosis:
    fail_fast: bool
    warn: bool
    message: str


_REDUCE = {"system prompt": "shorten the system prompt",
           "instructions": "shorten AGENTS.md / CLAUDE.md (or lower instructions_max_bytes)",
           "tools (built-in)": "turn tools off", "tools (MCP)": "turn MCP servers off"}


def diagnose_floor(parts: Sequence[FloorPart], floor_bytes: int, rejected_bytes: int | None) -> FloorDiagnosis:
    """Can compaction help at all? The base (system prompt, instructions, tool definitions) is never
    compacted; the message names its biggest part and what to reduce."""
    if not rejected_bytes:
        return FloorDiagnosis(False, False, "")
    listed = describe_floor(parts)
    biggest = max(parts, key=lambda part: part.bytes) if parts else None
    largest = "reduce it"
    if biggest is not None:
        advice = _REDUCE.get(biggest.label) or ("turn MCP servers off" if biggest.label.startswith("tools (MCP")
                                                else "reduce it")
        largest = f"the biggest part is {biggest.label} ({format_size(biggest.bytes)}): {advice}"
    if floor_bytes >= rejected_bytes:
        return FloorDiagnosis(True, False, (
            f"The non-compactable request base ({format_size(floor_bytes)}: {listed}) meets or exceeds the size "
            f"the gateway rejected ({format_size(rejected_bytes)}). History compaction cannot help — {largest}, "
            f"or ask for the proxy/WAF body-size limit to be raised."))
    if floor_bytes >= FLOOR_WARN_RATIO * rejected_bytes:
        return FloorDiagnosis(False, True, (
            f"The request base alone is {format_size(floor_bytes)} ({listed}) — close to the gateway's rejection "
            f"threshold ({format_size(rejected_bytes)}); {largest}."))
    return FloorDiagnosis(False, False, "")


def calibrate(bytes_per_token: float, predicted_bytes: int, reported_input_tokens: int) -> float:
    """Move the bytes-per-token estimate towards what the provider reported."""
    if predicted_bytes <= 0 or reported_input_tokens <= 0:
        return bytes_per_token
    observed = predicted_bytes / reported_input_tokens
    if not 0.5 <= observed <= 16:  # nonsense usage (a proxy rewriting bodies, a lab with odd maths)
        return bytes_per_token
    return bytes_per_token + CALIBRATION_WEIGHT * (observed - bytes_per_token)
