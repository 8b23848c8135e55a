"""The words of the mcp notices (facts in app.model.notice_facts.mcp)."""

from __future__ import annotations

from app.engine.describe import Description, describe
from app.model.notice_facts.mcp import (
    McpConfigNote,
    McpServerDown,
    McpServersNotApproved,
    McpStillStarting,
    McpWaiting,
)
from app.textsafe import display_line


@describe.register
def _config_note(fact: McpConfigNote) -> Description:
    return Description(fact.note, level="warn", code=fact.code)


@describe.register
def _not_approved(fact: McpServersNotApproved) -> Description:
    return Description(
        f"MCP servers from this workspace's .mcp.json are not started: {', '.join(fact.servers)} — "
        f"`bulkhead mcp approve` allows them (in the TUI /mcp restart NAME, in -p --yes for one run)",
        level="warn",
        code=fact.code,
    )


@describe.register
def _server_down(fact: McpServerDown) -> Description:
    # the reason and the stderr lines come from the server: shown escaped, never as they are
    verb = "stopped working" if fact.crashed else "did not start"
    tail = ""
    if fact.stderr_tail:
        tail = " — last stderr lines:\n" + "\n".join(f"  {display_line(line)}" for line in fact.stderr_tail)
    return Description(
        f"MCP server {fact.server} {verb}: {display_line(fact.reason)}. The session goes on "
        f"without its tools; /mcp restart {fact.server} tries again.{tail}",
        level="warn",
        code=fact.code,
    )


@describe.register
def _waiting(fact: McpWaiting) -> Description:
    return Description(
        f"waiting for MCP servers to start: {', '.join(fact.servers)} "
        f"(at most {fact.wait_seconds:g} s, mcp_tools_wait; Esc cancels)",
        code=fact.code,
    )


@describe.register
def _still_starting(fact: McpStillStarting) -> Description:
    """What a request that goes without a starting server's tools says about it."""
    if fact.wait_seconds > 0:
        text = (
            f"MCP server {fact.server} is still starting after {fact.wait_seconds:g} s (mcp_tools_wait): this "
            f"request goes without its tools, which join from the next request once it is ready — raise "
            f"mcp_tools_wait to wait longer"
        )
    else:
        text = (
            f"MCP server {fact.server} is still starting: this request goes without its tools, which join from "
            f"the next request once it is ready (mcp_tools_wait = 0; set it above 0 to wait for them)"
        )
    return Description(text, level="warn", code=fact.code)
