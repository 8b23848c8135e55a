"""Asked once per workspace: may the MCP servers of this workspace's `.mcp.json` start?

The file came with the repository, and a server is a program that runs with your rights, so
bulkhead shows each server's command (or URL) as written (`${VAR}` unexpanded) and every environment
variable it would receive — a credential's name flagged — and asks before starting any, as Claude Code
does. The answer is remembered in state.toml for these exact definitions (a changed definition
asks again); "not now" asks again next session. The result is "allow", "deny" or None.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from app.textsafe import display_line


class McpTrustScreen(ModalScreen[str | None]):
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

    def __init__(self, specs, path: str) -> None:
        super().__init__()
        self.specs = list(specs)
        self.path = path

    def compose(self) -> ComposeResult:
        with Vertical(id="mcp-trust-dialog"):
            yield Static(f"MCP servers from {display_line(self.path)}", id="mcp-trust-title", markup=False)
            with VerticalScroll(id="mcp-trust-body"):
                yield Static(
                    "This workspace asks to start these MCP servers. Each runs with your rights and its "
                    "tools become callable by the model:",
                    markup=False,
                )
                for spec in self.specs:
                    yield Static(
                        f"  • {display_line(spec.name)} — {display_line(spec.describe())}",
                        markup=False,
                        classes="mcp-trust-server",
                    )
                    if spec.reads():  # where your environment's values (a key) would go
                        yield Static(
                            f"      {display_line(spec.reads())}", markup=False, classes="mcp-trust-reads"
                        )
            yield Static(
                "y start them (remembered) · n don't start (remembered) · Esc not now",
                id="mcp-trust-keys",
                markup=False,
            )

    def action_answer(self, answer: str) -> None:
        self.dismiss(answer or None)
