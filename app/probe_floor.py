"""The route's floor for `bulkhead probe` and `bulkhead doctor`: what every chat request carries besides its
messages — the system prompt with the workspace's instructions (AGENTS.md / CLAUDE.md), the built-in tool
definitions and the chat's extra headers (betas) — measured exactly, and whether it passes on its own.

A bare probe (filler, no system prompt, no tools) can pass where every chat request is blocked — a WAF that
judges the tool definitions, a gateway that refuses a beta header, a base already over the body cap. So
every probe carries the floor, and the floor is sent once on its own first.

MCP tools are not in it: their servers start with a session (the TUI's probe uses the session's floor, MCP
tools included).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from app.engine.payload import FloorPart, describe_floor, floor_breakdown
from app.providers.base import ProbeFloor
from app.sizes import format_size

if TYPE_CHECKING:
    from app.config import Settings
    from app.probe import Probe, Prober, ProbeResult
    from app.providers.base import Provider, ToolSpec


@dataclass(frozen=True)
class RouteFloor:
    """The floor to carry, its exact size (an empty chat request of the route) and its parts."""

    floor: ProbeFloor
    bytes: int
    parts: tuple[FloorPart, ...]

    def describe(self) -> str:
        return f"{format_size(self.bytes)} ({describe_floor(self.parts)})"


def measure_floor(
    provider: Provider, base_system: str, system: str, tools: tuple[ToolSpec, ...], *, max_tokens: int
) -> RouteFloor:
    """The floor of a route whose chat requests carry `system` (`base_system` + instructions) and `tools`."""
    measure = provider.measure
    empty = measure((), "", (), max_tokens=max_tokens)
    base = measure((), base_system, (), max_tokens=max_tokens)
    bare = measure((), system, (), max_tokens=max_tokens)
    total = measure((), system, tools, max_tokens=max_tokens)
    parts = floor_breakdown(
        system_bytes=base - empty, instructions_bytes=max(0, bare - base), builtin_tools_bytes=total - bare
    )
    return RouteFloor(ProbeFloor(system, tools, provider.chat_headers()), total, tuple(parts))


def route_floor(settings: Settings, provider: Provider, workspace: Path | None = None) -> RouteFloor:
    """The floor of a new session on `provider`'s route in `workspace` (default: the current folder)."""
    from app.engine.instructions import join_system, load_instructions
    from app.engine.prompts import SYSTEM_PROMPT
    from app.tools.registry import TOOL_SPECS

    folder = Path(workspace or settings.workspace or Path.cwd()).expanduser()
    instructions = load_instructions(folder, max_bytes=settings.instructions_max_bytes)
    system = join_system(SYSTEM_PROMPT, instructions.text)
    return measure_floor(
        provider, SYSTEM_PROMPT, system, tuple(TOOL_SPECS), max_tokens=settings.max_output_tokens
    )


def floor_verdict(floor: RouteFloor, probe: Probe | None, reason: str = "") -> str:
    """One sentence: the floor's size and whether it passed on its own."""
    if probe is None:
        return f"floor {floor.describe()}: not tried ({reason or 'no answer'})"
    if probe.verdict == "passed":
        return f"floor {floor.describe()}: passes on its own ({format_size(probe.size)} sent)"
    return (
        f"floor {floor.describe()}: REFUSED on its own ({probe.kind}: {probe.reason}) — every chat request on "
        f"this route carries it, so every one is refused; reduce the floor (instructions, tools) or take the "
        f"evidence to the gateway's owners"
    )


@dataclass(frozen=True)
class FloorOutcome:
    """The floor sent on its own: its probe (None when no answer came) and the sentence that reports it."""

    floor: RouteFloor
    probe: Probe | None
    line: str

    @property
    def passed(self) -> bool:
        return self.probe is not None and self.probe.verdict == "passed"

    def to_json(self) -> dict:
        return {
            "type": "floor",
            "bytes": self.floor.bytes,
            "parts": {part.label: part.bytes for part in self.floor.parts},
            "headers": sorted(self.floor.floor.headers),
            "passed": self.passed if self.probe is not None else None,
            "sent_bytes": self.probe.size if self.probe is not None else None,
            "message": self.line,
        }


async def probe_with_floor(
    prober: Prober, floor: RouteFloor, low: int, high: int, precision: int
) -> tuple[ProbeResult, FloorOutcome]:
    """The floor on its own first; refused (or no answer), no bisection — otherwise bisect from the floor up
    (no body of this route is smaller than it)."""
    from app.probe import ProbeResult

    probe, why = await prober.try_size(floor.bytes)
    outcome = FloorOutcome(floor, probe, floor_verdict(floor, probe, why))
    if not outcome.passed:
        failure = prober.last_rejection if probe is not None else None
        result = ProbeResult(
            cap_bytes=None,
            smallest_rejected=probe.size if probe is not None else None,
            kind=probe.kind if probe is not None else None,
            evidence=probe.evidence if probe is not None else (),
            probes=prober.probes,
            conclusive=probe is not None,
            message=outcome.line,
            rejection=failure,
        )
        return result, outcome
    start = max(low, probe.size if probe is not None else low)
    if start >= high:
        message = f"the floor alone ({format_size(start)}) passes and is not below --max ({format_size(high)}): raise --max"
        return ProbeResult(None, None, None, (), prober.probes, conclusive=True, message=message), outcome
    return await prober.find(start, high, precision), outcome
