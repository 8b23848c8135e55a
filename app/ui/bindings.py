"""The App's keys: each with an id (users remap them by id in `[keymap]`), a tooltip (F1 lists them) and,
for the panel keys, both the Alt and the Ctrl form (`app.ui.textual_ext.terminal_keys` says which terminals send which)."""

from __future__ import annotations

from textual.binding import Binding

from app.ui.widgets.inspector import PANEL_NAMES

PANEL_KEYS = 7  # alt+1 … alt+7 (ctrl+1 … ctrl+7 where the terminal reports them); ctrl+t steps through them
VIEW = Binding.Group("View")
BLOCKED_KEYS = "f8,alt+b"  # shown (and live) only while the last turn was refused for its content
BLOCKED_KEY_WORDS = "F8"  # how the content-block notice names it

APP_BINDINGS: list[Binding | tuple[str, str] | tuple[str, str, str]] = [
    Binding(
        "ctrl+q",
        "quit",
        "Quit",
        tooltip="Quit bulkhead (the terminal is restored)",
        priority=True,
        id="app.quit",
    ),
    Binding(
        "f1,alt+h",
        "help",
        "Help",
        tooltip="Help for the focused pane, every key and command",
        id="app.help",
    ),
    Binding(
        "escape",
        "cancel",
        "Cancel",
        tooltip="Cancel the running turn or compaction; from anywhere, back to the prompt",
        priority=True,
        show=False,
        id="app.cancel",
    ),
    Binding(
        "ctrl+c",
        "interrupt",
        "Interrupt",
        priority=True,
        show=False,
        id="app.interrupt",
        tooltip="Cancel the running turn; else copy the selection (in the chat or a panel: what its cursor is "
        "on) or clear the prompt; twice quits",
    ),
    Binding(
        "ctrl+f",
        "find",
        "Find",
        tooltip="Find text anywhere in the conversation (/find)",
        show=False,
        priority=True,
        id="app.find",
    ),
    Binding(
        "ctrl+o,f6",
        "focus_chat",
        "Chat",
        tooltip="Move into the chat to copy or fold (Esc returns)",
        id="app.chat",
    ),
    Binding(
        "ctrl+end,alt+down",
        "jump_latest",
        "Latest",
        tooltip="Jump to the newest output and follow it",
        show=False,
        id="app.latest",
    ),
    Binding(
        "f2,ctrl+backslash",
        "toggle_inspector",
        "Inspector",
        tooltip="Hide or show the inspector",
        group=VIEW,
        id="app.inspector",
    ),
    Binding(
        "f3,alt+w",
        "widen_inspector",
        "Wide",
        tooltip="Widen or narrow the inspector",
        group=VIEW,
        id="app.widen",
    ),
    Binding(
        BLOCKED_KEYS,
        "command('blocked')",
        "Find blocked",
        tooltip="After a content block: find the text the gateway refuses, then withhold it (/blocked)",
        id="app.blocked",
    ),
    Binding(
        "f5,alt+s",
        "command('sessions')",
        "Sessions",
        tooltip="Browse sessions and resume one",
        id="app.sessions",
    ),
    Binding(
        "ctrl+t",
        "next_panel",
        "Panels",
        tooltip="Show the inspector and move to its next panel",
        group=VIEW,
        id="app.next_panel",
    ),
    *(
        Binding(
            f"alt+{n},ctrl+{n}",
            f"panel({n})",
            f"Panel {n}",
            show=False,
            tooltip=f"Show and focus inspector panel {n} ({name})",
            id=f"app.panel{n}",
        )
        for n, name in enumerate(PANEL_NAMES[:PANEL_KEYS], start=1)
    ),
]
