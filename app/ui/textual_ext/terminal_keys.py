"""Keys as real terminals send them, and which terminals send which.

xterm, tmux, GNOME Terminal, Windows Terminal and the VS Code terminal send Alt+key as ESC then the
key. Textual reads most of those as `alt+…`, but two cases not:

- ESC CR (Alt+Enter) is read as a plain Enter — so Alt+Enter, meant as a newline, sent the prompt;
- ESC 0…9 (Alt+digit) is read as the character WezTerm on macOS types for Option+digit (`£`, `¢`,
  `¡`…), so Alt+3 typed `£` instead of showing panel 3.

`install()` adds both to Textual's table of sequences (once, before the app reads a key), so they
arrive as `alt+enter` and `alt+0`…`alt+9`. (On macOS, Option+digit still types `£` in Terminal.app
and iTerm2 unless "Option as Meta" / "Esc+" is set: those terminals send the character itself.)

`KEY_NOTES` says, for the default keys that some terminal keeps for itself, where they do not arrive
and what to use there; F1 shows it beside each key.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import cast

from app.ui.textual_ext import gate


class _KeyName(str):
    """A key name where Textual's sequence table expects a `Keys` member (it reads `.value`)."""

    @property
    def value(self) -> str:
        return str(self)


ALT_SEQUENCES = {"\x1b\r": "alt+enter", **{f"\x1b{digit}": f"alt+{digit}" for digit in "0123456789"}}

# Where a default key does not arrive, and what to use there instead.
KEY_NOTES: dict[str, str] = {
    "f1": "VS Code keeps F1 (its command palette): use Alt+H or /help there",
    "alt+h": "macOS Terminal/iTerm2 type ˙ unless Option is set to Meta/Esc+",
    "f5": "VS Code keeps F5 (debug): use Alt+S or /sessions there",
    "f6": "VS Code keeps F6: use Ctrl+O there",
    "ctrl+end": "VS Code keeps Ctrl+End (terminal scroll): use Alt+↓ there",
    "alt+enter": "Windows Terminal keeps Alt+Enter (full screen); macOS needs Option as Meta/Esc+: use Ctrl+J "
    "or \\ + Enter there",
    "shift+enter": "arrives only where the terminal reports it (kitty, WezTerm, foot, Ghostty, iTerm2 with CSI u)",
    "ctrl+j": "VS Code on Linux/Windows keeps Ctrl+J (toggle panel): use \\ + Enter or Alt+Enter there",
    "ctrl+p": "VS Code keeps Ctrl+P (quick open): run `/help` for the commands, or let it through with "
    'terminal.integrated.commandsToSkipShell: ["-workbench.action.quickOpen"]',
    "ctrl+q": "VS Code on Windows/Linux keeps Ctrl+Q: press Ctrl+C twice on an empty prompt there",
    "alt+c": "macOS Terminal/iTerm2 type ç unless Option is set to Meta/Esc+: use Ctrl+C there (nothing running)",
    "alt+k": "macOS Terminal/iTerm2 type ˚ unless Option is set to Meta/Esc+ (Alt+C copies the whole message)",
    "alt+b": "macOS Terminal/iTerm2 type ∫ unless Option is set to Meta/Esc+: use F8 (or /blocked) there",
    "alt+r": "macOS Terminal/iTerm2 type ® unless Option is set to Meta/Esc+",
    "ctrl+pageup": "some terminals switch their own tabs with Ctrl+PageUp/PageDown: use Ctrl+T there",
    "ctrl+pagedown": "some terminals switch their own tabs with Ctrl+PageUp/PageDown: use Ctrl+T there",
    **{
        f"ctrl+{n}": "reaches the app only where the terminal reports it (kitty keyboard protocol); "
        "most terminals send nothing"
        for n in range(1, 10)
    },
    **{
        f"alt+{n}": "macOS Terminal/iTerm2 type a symbol unless Option is set to Meta/Esc+; use Ctrl+T there"
        for n in range(1, 10)
    },
}


def install() -> None:
    """Teach Textual's parser Alt+Enter and Alt+digit as xterm-style terminals send them (idempotent)."""
    from textual import _ansi_sequences  # the parser's table; there is no public API

    table = getattr(_ansi_sequences, "ANSI_SEQUENCES_KEYS", None)
    if not gate.holds(
        "terminal_keys", [] if isinstance(table, MutableMapping) else ["_ansi_sequences.ANSI_SEQUENCES_KEYS"]
    ):
        return  # Alt+Enter / Alt+digit may not arrive; the Ctrl and F-key forms of the bindings still do
    table = cast(MutableMapping[str, object], table)
    for sequence, name in ALT_SEQUENCES.items():
        table[sequence] = (_KeyName(name),)


def note(key: str) -> str:
    """Where `key` (one of a binding's keys) may not arrive; "" when every terminal sends it."""
    return KEY_NOTES.get(key.strip(), "")
