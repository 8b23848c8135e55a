"""`/permissions`: every permission rule in force — deny, ask, allow — and the file it comes from."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static

from app.textsafe import display_line

WHERE = (
    "Rules come from config.toml [permissions], the workspace's .bulkhead/settings.toml (\"always for this "
    "project\" adds there), .claude/settings.json and .claude/settings.local.json, and this session's "
    '"always" answers. Deny wins over ask, ask over allow; no rule: the approval mode decides.'
)


class PermissionsScreen(ModalScreen[None]):
    """The rules, in the order they are evaluated."""

    HELP = f"""\
## Permissions

{WHERE}

Rules use Claude Code's syntax: `Bash(npm test:*)`, `Bash(git diff *)`, `Read(./src/**)`, `Edit(//tmp/x)`,
`WebFetch(domain:example.com)`, `mcp__server__tool`. Edit the files to change them; a new session reads them.
"""
    BINDINGS = [Binding("escape,q", "close", "Close", id="permissions.close")]

    def __init__(
        self, rules: list[tuple[str, str, str]], problems: list[str], *, mode: str, workspace: str
    ) -> None:
        super().__init__()
        self.rules = rules
        self.problems = problems
        self.mode = mode
        self.workspace = workspace

    def compose(self) -> ComposeResult:
        with Vertical(id="permissions-dialog", classes="dialog"):
            yield Static(
                f"Permissions — {len(self.rules)} rule{'' if len(self.rules) == 1 else 's'} · approval mode {self.mode} · Esc closes",
                id="permissions-title",
                classes="dialog-title",
                markup=False,
            )
            yield DataTable(id="permissions-table", cursor_type="row", zebra_stripes=True)
            notes = [WHERE, f"Paths in rules start at the workspace: {display_line(self.workspace)}"]
            notes += [f"⚠ {display_line(problem)}" for problem in self.problems]
            yield Static("\n".join(notes), id="permissions-notes", markup=False)

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("", "rule", "from")
        for kind, rule, source in self.rules:
            table.add_row(kind, display_line(rule), display_line(source))
        if not self.rules:
            table.add_row("—", "no rules: the approval mode decides every call", "")
        table.focus()

    def action_close(self) -> None:
        self.dismiss(None)
