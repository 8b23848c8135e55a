"""Asked once per version of the workspace's rule files: may their allow rules be in force?

`.claude/settings.json`, `.claude/settings.local.json` and `.bulkhead/settings.toml` came with the
repository; their allow rules would let tool calls run without asking. The question lists them
(the file's deny and ask rules are in force either way). Same keys and answers as the `.mcp.json`
question: "allow", "deny" or None (not now: asked again next session).
"""

from __future__ import annotations

from textual.binding import Binding

from app.ui.screens.trust import TrustScreen


class RulesTrustScreen(TrustScreen):
    HELP = """\
## Permission rules from this workspace

This workspace's rule files (`.claude/settings.json`, `.claude/settings.local.json`,
`.bulkhead/settings.toml`) allow some tool calls to run without asking. They came with the
repository, so bulkhead asks before their allow rules are in force; their deny and ask rules
always are.

- **y**: put them in force, and remember for these rules (a change asks again)
- **n**: keep them off, and remember
- **Esc**: not now (asked again next session; `bulkhead permissions approve` approves ahead)
"""
    BINDINGS = [
        Binding("y", "answer('allow')", "Allow them", id="rules_trust.allow"),
        Binding("n", "answer('deny')", "Keep them off", id="rules_trust.deny"),
        Binding("escape", "answer('')", "Not now", id="rules_trust.later"),
    ]
    KEYS = "y put them in force (remembered) · n keep them off (remembered) · Esc not now"

    def title_text(self) -> str:
        return f"Permission rules from {self.path}"

    def intro(self) -> str:
        return (
            "This repository's files allow these tool calls without asking. Their deny and ask "
            "rules are in force either way:"
        )

    def lines(self) -> list[tuple[str, str]]:
        lines = []
        for file in self.specs:
            lines.append((f"  {file.relative}", ""))
            lines += [(f"    • allow {rule}", "mcp-trust-server") for rule in file.allow]
        return lines
