"""Asked once per version of the workspace's `.bulkhead/gateways.toml`: may its gateway profiles be read?

The file came with the repository. A profile it brings changes what bulkhead sends to an endpoint (a body
cap, which only ever tightens; betas not sent), so bulkhead shows what it holds per endpoint and asks, as
for `.mcp.json` and the rule files. "allow", "deny" or None (not now: asked again next session).
"""

from __future__ import annotations

from textual.binding import Binding

from app.ui.screens.trust import TrustScreen


class GatewaysTrustScreen(TrustScreen):
    HELP = """\
## Gateway profiles from this workspace

This workspace's `.bulkhead/gateways.toml` carries a team's gateway profiles: the body caps,
refused betas and hops of the endpoints behind your network's gateways. A cap from the file is a
starting point that only tightens what bulkhead sends; it never loosens one this machine learned.

- **y**: read them, and remember for this content (a change asks again)
- **n**: leave the file alone, and remember
- **Esc**: not now (asked again next session; `bulkhead gateway trust` reads it ahead)
"""
    BINDINGS = [
        Binding("y", "answer('allow')", "Read them", id="gateways_trust.allow"),
        Binding("n", "answer('deny')", "Leave it", id="gateways_trust.deny"),
        Binding("escape", "answer('')", "Not now", id="gateways_trust.later"),
    ]
    KEYS = "y read them (remembered) · n leave the file alone (remembered) · Esc not now"

    def title_text(self) -> str:
        return f"Gateway profiles from {self.path}"

    def intro(self) -> str:
        return (
            "This repository's file would set what bulkhead knows about these endpoints (a cap only "
            "tightens what is sent):"
        )

    def lines(self) -> list[tuple[str, str]]:
        return [(f"  • {line}", "mcp-trust-server") for found in self.specs for line in found.describe()]
