"""What `/mcp` and `bulkhead mcp list` say about the servers: state, tools, the bytes they add.

Server names, descriptions, reasons and stderr lines come from outside: every one goes through
`app.textsafe` here, before any front end shows it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from app.mcp.connection import ServerStatus
from app.sizes import format_size
from app.textsafe import display_line

STATE_MARKS = {
    "ready": "✓",
    "starting": "…",
    "failed": "✖",
    "crashed": "✖",
    "pending": "?",
    "denied": "·",
    "disabled": "·",
    "stopped": "·",
}


def source_label(status: ServerStatus) -> str:
    return ".mcp.json" if status.source == "project" else "config.toml"


def status_line(status: ServerStatus, definition_bytes: int | None = None) -> str:
    """`ready · 10 tools · 2.4 KB of definitions · stdio: python3 server.py (.mcp.json)`."""
    parts = [status.state.value if hasattr(status.state, "value") else str(status.state)]
    if status.state == "ready":
        parts.append(f"{len(status.tools)} tool{'s' if len(status.tools) != 1 else ''}")
        if definition_bytes is not None:
            parts.append(f"{format_size(definition_bytes)} of definitions")
    elif status.reason:
        parts.append(status.reason)
    parts.append(f"{status.describe} ({source_label(status)})")
    return display_line(" · ".join(parts))


def detail_lines(status: ServerStatus) -> list[str]:
    """The stderr tail and the log of a server that failed or crashed."""
    if status.state not in ("failed", "crashed"):
        return []
    lines = [f"stderr: {display_line(line)}" for line in status.stderr_tail]
    if status.log_path:
        lines.append(f"log: {display_line(status.log_path)}")
    return lines


def plan_lines(plan: Any, budget: int | None, budget_source: str) -> list[str]:
    """How the definitions are sent now (full, or deferred and why)."""
    if plan is None or plan.mode == "none":
        return []
    share = f"{format_size(budget)} allowed ({budget_source})" if budget is not None else "no cap known"
    if plan.mode == "full":
        return [f"all {plan.tool_count} definitions sent in full: {format_size(plan.full_bytes)}; {share}"]
    how = (
        "sent with defer_loading (Anthropic tool search)"
        if plan.mode == "native"
        else f"deferred: tool_search with an index ({plan.index_level})"
        + (f" and {len(plan.loaded)} loaded tools" if plan.loaded else "")
    )
    return [
        f"{plan.tool_count} definitions, {format_size(plan.full_bytes)} in full — {how}: "
        f"{format_size(plan.sent_bytes)} sent; {share}"
    ]


def engine_report(engine: Any) -> tuple[str, list[tuple[str, str]]]:
    """`/mcp`: (title, rows) for the chat's report; plain strings, which the report shows as text, never markup."""
    mcp = engine.mcp
    if mcp is None or not mcp.connections:
        return (
            "MCP servers — none configured",
            [
                (
                    "how",
                    "add [mcp_servers.NAME] to config.toml (command/args/env, or url) or a .mcp.json "
                    "to the workspace",
                )
            ],
        )
    floor = engine.floor_sizes()
    plan = engine.mcp_plan()
    per_server = dict(floor.mcp_servers)
    rows: list[tuple[str, str]] = []
    for status in mcp.statuses():
        rows.append(
            (
                display_line(status.name),
                f"{STATE_MARKS.get(status.state, ' ')} " + status_line(status, per_server.get(status.name)),
            )
        )
        rows.extend(("", line) for line in detail_lines(status))
    budget, _byte_budget = engine.mcp_budgets()
    cap = engine.cap_info()
    source = f"mcp_defer_ratio {engine.settings.mcp_defer_ratio:.0%} of " + (
        f"the {cap.source} cap"
        if cap.bytes and cap.bytes <= engine.usable_window_tokens() * engine.bytes_per_token
        else "the context window"
    )
    rows.extend(("definitions", line) for line in plan_lines(plan, budget, source))
    rows.append(
        (
            "per request",
            f"tools {format_size(floor.tools_bytes)}, of which MCP {format_size(floor.mcp_bytes)}",
        )
    )
    ready = sum(1 for s in mcp.statuses() if s.state == "ready")
    return f"MCP servers — {ready} of {len(mcp.connections)} ready", rows


def server_table(statuses: Sequence[ServerStatus], sizes: Mapping[str, int]) -> list[str]:
    """`bulkhead mcp list`: one line per server (plus its stderr tail when it failed)."""
    width = max((len(s.name) for s in statuses), default=4)
    lines = []
    for status in statuses:
        mark = STATE_MARKS.get(status.state, " ")
        lines.append(
            f"{mark} {display_line(status.name).ljust(width)}  {status_line(status, sizes.get(status.name))}"
        )
        lines.extend(f"  {' ' * width}  {line}" for line in detail_lines(status))
    return lines
