"""`context_engine = "mcp:NAME"`: an MCP server's `context_compact` writes the Level 2 summary.

    writer = McpContextEngine(manager, "context", timeout=180)
    summary = await writer(segment, budget_chars, instruction)     # raises McpEngineError to fall back

The server is called with `context_compact(segment, budget_chars, instruction)`: the rendered
segment the built-in summarizer would read, the characters the summary may hold and the user's
instruction of a guided `/compact` ("" otherwise). Any failure raises, and the compaction falls
back to the built-in summarizer (app.engine.compaction.summarize): no server of that name, not
running, no such tool, an error result, a timeout (`mcp_compact_timeout`, 3 min).
"""

from __future__ import annotations

from typing import Any

from app.mcp.connection import McpCallError, ServerState

TOOL = "context_compact"


class McpEngineError(Exception):
    """Why the MCP context engine gave no summary (the built-in summarizer takes over)."""


def _text(result: Any) -> str:
    structured = getattr(result, "structured_content", None)
    if isinstance(structured, dict):
        for key in ("summary", "result", "text"):
            if isinstance(structured.get(key), str):
                return structured[key]
    return "\n".join(
        getattr(block, "text", "")
        for block in (getattr(result, "content", None) or ())
        if getattr(block, "type", "") == "text"
    )


class McpContextEngine:
    def __init__(self, manager: Any, server: str, *, timeout: float) -> None:
        self.manager = manager
        self.server = server
        self.timeout = timeout

    async def __call__(self, segment: str, budget_chars: int, instruction: str) -> str:
        manager = self.manager
        connection = manager.connections.get(self.server) if manager is not None else None
        if connection is None:
            raise McpEngineError(f"no MCP server named {self.server!r} is configured")
        if connection.state == ServerState.STARTING:
            await connection.wait_settled(self.timeout)
        if connection.state != ServerState.READY:
            why = f" ({connection.reason})" if connection.reason else ""
            raise McpEngineError(f"MCP server {self.server} is {connection.state.value}{why}")
        if not any(tool.name == TOOL for tool in connection.tools):
            raise McpEngineError(f"MCP server {self.server} has no {TOOL} tool")
        try:
            result = await connection.call(
                TOOL,
                {"segment": segment, "budget_chars": budget_chars, "instruction": instruction},
                timeout=self.timeout,
            )
        except McpCallError as exc:
            raise McpEngineError(str(exc)) from exc
        text = _text(result)
        if getattr(result, "is_error", False):
            raise McpEngineError(f"{TOOL} failed: {' '.join(text.split())[:200] or 'an error result'}")
        return text
