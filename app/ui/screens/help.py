"""F1: help for the focused widget, every key (with its id for keys.toml), slash commands, lab grammar."""

from __future__ import annotations

from collections.abc import Sequence

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Markdown, Static

from app.textsafe import display_line
from app.ui.slash import SLASH_COMPLETIONS
from app.ui.textual_ext.terminal_keys import note

TERMINALS = (
    "Every key above arrives in xterm, tmux, GNOME Terminal, iTerm2, Windows Terminal and the VS Code "
    "terminal unless a note under it says otherwise. `\\` + Enter is a newline everywhere; every "
    "action is also a slash command or in the palette."
)


def _keys_list(bindings: list[tuple[str, str, str, str]]) -> str:
    lines = []
    for key, description, tooltip, binding_id in bindings:
        what = tooltip or description
        lines.append(f"- `{key}` — {what} · *{binding_id}*")
        for one in dict.fromkeys(k.strip() for k in key.split(",")):
            if note(one):
                lines.append(f"    - `{one}`: {note(one)}")
    return "\n".join(lines)


def _cell(text: str) -> str:
    """Text from a file (a command's description, a rule) for one Markdown line: controls escaped, no
    code-span breaking backticks."""
    return display_line(text).replace("`", "'")


def help_markdown(
    *,
    focused_help: str,
    bindings: list[tuple[str, str, str, str]],
    lab_grammar: str = "",
    keymap_file: str = "",
    custom_commands: Sequence[tuple[str, str, str]] = (),
    permissions: Sequence[tuple[str, str, str]] = (),
    approval_mode: str = "",
) -> str:
    """`custom_commands`: (slash word, description, source); `permissions`: (kind, rule, source)."""
    parts = []
    if focused_help:
        parts.append(focused_help.strip())
    parts.append("## Keys\n\n" + _keys_list(bindings) + "\n\n" + TERMINALS)
    if keymap_file:
        parts.append(
            f"Change a key in the `[keys]` table of `{keymap_file}`: one line per binding id, "
            f'e.g. `"app.inspector" = "f4"`.'
        )
    parts.append(
        "## Slash commands\n\n" + "\n".join(f"- `{word}` — {help_}" for word, help_ in SLASH_COMPLETIONS)
    )
    if custom_commands:
        parts.append(
            "## Your commands\n\nFrom Markdown files (`.bulkhead/commands/`, `.claude/commands/`, the config "
            "folder's `commands/`); `$ARGUMENTS` is what you type after the name.\n\n"
            + "\n".join(
                f"- `{_cell(word)}` — {_cell(description)} *({_cell(source)})*"
                for word, description, source in custom_commands
            )
        )
    parts.append(
        "The command palette (**Ctrl+P**) offers the same actions — only those that apply now, "
        'including "panel: …" for each inspector panel. ' + note("ctrl+p") + "."
    )
    rules = "\n".join(f"- **{kind}** `{_cell(rule)}` — {_cell(source)}" for kind, rule, source in permissions)
    parts.append(
        f"## Permission rules\n\nApproval mode `{approval_mode or '?'}`; rules (Claude Code's syntax) "
        f"decide first — deny, then ask, then allow. In an approval, **a** / **p** allow the same call "
        f"for the session / the project. `/permissions` shows them with their files.\n\n"
        + (rules or "- no rules: the approval mode decides")
    )
    if lab_grammar:
        parts.append("## The lab model\n\n```\n" + lab_grammar.strip() + "\n```")
    return "\n\n".join(parts)


class HelpScreen(ModalScreen[None]):
    """Help. Esc, F1 or q closes it."""

    BINDINGS = [Binding("escape,f1,q", "dismiss", "Close", id="help.close")]

    def __init__(self, markdown: str) -> None:
        super().__init__()
        self.markdown = markdown

    def compose(self) -> ComposeResult:
        with Vertical(id="help-dialog"):
            yield Static("bulkhead help — Esc closes", id="help-title", markup=False)
            with VerticalScroll(id="help-body"):
                yield Markdown(self.markdown, id="help-markdown")

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(result)
