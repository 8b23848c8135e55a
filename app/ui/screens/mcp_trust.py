"""Asked once per workspace: may the MCP servers of this workspace's `.mcp.json` start?

The file came with the repository, and a server is a program that runs with your rights, so
bulkhead shows each server's command (or URL) as written (`${VAR}` unexpanded) and every environment
variable it would receive — a credential's name flagged — and asks before starting any, as Claude Code
does. The answer is remembered in state.toml for these exact definitions (a changed definition
asks again); "not now" asks again next session. The result is "allow", "deny" or None.
"""

from __future__ import annotations

from textual.binding import Binding

from app.ui.screens.trust import TrustScreen


class McpTrustScreen(TrustScreen):
    HELP = """\
## MCP servers from this workspace

This workspace's `.mcp.json` names MCP servers. Each is a program (or a remote URL) that bulkhead
would start and whose tools the model could call.

- **y**: start them, and remember the answer for these definitions
- **n**: do not start them, and remember
- **Esc**: not now (asked again next time; `/mcp restart NAME` starts one)
"""
    BINDINGS = [
        Binding("y", "answer('allow')", "Start them", id="mcp_trust.allow"),
        Binding("n", "answer('deny')", "Don't start", id="mcp_trust.deny"),
        Binding("escape", "answer('')", "Not now", id="mcp_trust.later"),
    ]
    KEYS = "y start them (remembered) · n don't start (remembered) · Esc not now"

    def title_text(self) -> str:
        return f"MCP servers from {self.path}"

    def intro(self) -> str:
        return (
            "This workspace asks to start these MCP servers. Each runs with your rights and its "
            "tools become callable by the model:"
        )

    def lines(self) -> list[tuple[str, str]]:
        lines = []
        for spec in self.specs:
            lines.append((f"  • {spec.name} — {spec.describe()}", "mcp-trust-server"))
            if spec.reads():  # where your environment's values (a key) would go
                lines.append((f"      {spec.reads()}", "mcp-trust-reads"))
        return lines
