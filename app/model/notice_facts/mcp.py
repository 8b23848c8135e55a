"""The facts of the MCP notices: the servers' definitions, the workspace's servers not started, a server
that failed, servers still starting when a request goes (worded by app.engine.notice_words.mcp)."""

from __future__ import annotations

from dataclasses import dataclass

from app.model.notice_facts import NoticeFact


@dataclass(frozen=True)
class McpConfigNote(NoticeFact):
    """A problem reading the MCP servers' definitions (.mcp.json unreadable, a shadowed name), said once."""

    kind = "mcp_config_note"
    code = "mcp"
    note: str  # the problem in app.mcp.manager's words (merge_servers)


@dataclass(frozen=True)
class McpServersNotApproved(NoticeFact):
    """Servers from the workspace's .mcp.json wait for the user's approval: they are not started."""

    kind = "mcp_servers_not_approved"
    code = "mcp"
    servers: tuple[str, ...]


@dataclass(frozen=True)
class McpServerDown(NoticeFact):
    """A server did not start, or stopped working: the session goes on without its tools."""

    kind = "mcp_server_down"
    code = "mcp"
    server: str
    crashed: bool  # it stopped working after it had started (else: it did not start)
    reason: str  # the server's failure, as the connection saw it
    stderr_tail: tuple[str, ...]  # the server's last stderr lines


@dataclass(frozen=True)
class McpWaiting(NoticeFact):
    """A turn waits for servers still starting (at most mcp_tools_wait seconds)."""

    kind = "mcp_waiting"
    code = "mcp_wait"
    servers: tuple[str, ...]
    wait_seconds: float  # mcp_tools_wait


@dataclass(frozen=True)
class McpStillStarting(NoticeFact):
    """A request goes without a server still starting; its tools join from the next request once it is ready."""

    kind = "mcp_still_starting"
    code = "mcp_wait"
    server: str
    wait_seconds: float  # mcp_tools_wait (0: no request waits)


__all__ = ["McpConfigNote", "McpServerDown", "McpServersNotApproved", "McpStillStarting", "McpWaiting"]
