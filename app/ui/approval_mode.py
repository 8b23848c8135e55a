"""The approval mode, changed in the session: `/approval [MODE]`, Shift+Tab in the prompt, the palette.

    /approval            says the mode in force and what each one asks
    /approval auto-edit  from the next tool call on (for this run; config.toml's `approval` is the default)
    Shift+Tab            ask → auto-read → auto-edit → ask (never-ask only by name: it asks for nothing)

The prompt's border shows the mode in force, so it is never a surprise.
"""

from __future__ import annotations

from typing import Any

from app.config import APPROVAL_MODES
from app.ui.actions import Host, handles

CYCLE = ("ask", "auto-read", "auto-edit")  # Shift+Tab steps through these
WHAT_ASKS = {
    "ask": "every tool call asks",
    "auto-read": "reads run; the shell and edits ask",
    "auto-edit": "reads and edits in the workspace run; the shell asks",
    "never-ask": "everything runs without asking (paths outside the workspace still ask)",
}


def mode_label(mode: str) -> str:
    """What the prompt's border says."""
    return f"approval: {mode} · Shift+Tab"


def show_mode(app: Any) -> None:
    """Put the mode in force on the prompt's border."""
    if app.session is not None:
        app.prompt.border_subtitle = mode_label(app.session.approval_mode())


def set_mode(app: Host, mode: str) -> str:
    """Use `mode` from the next tool call on; the sentence that says so."""
    app.session.set_approval(mode)
    show_mode(app)
    default = app.settings.approval
    note = "" if mode == default else f" (config.toml's default: {default})"
    return f"approval mode {mode}: {WHAT_ASKS[mode]} — for this run{note}"


@handles("approval")
async def approval(app: Host, arg: str) -> None:
    mode = arg.strip().lower()
    if not mode:
        current = app.session.approval_mode()
        lines = [
            f"{name}{' (in force)' if name == current else ''}: {what}" for name, what in WHAT_ASKS.items()
        ]
        await app.chat.add_notice(
            "approval modes — /approval MODE changes it, Shift+Tab steps through ask, auto-read, auto-edit:\n"
            + "\n".join(lines),
            code="approval",
            title="approval",
        )
        return
    if mode not in APPROVAL_MODES:
        await app.chat.add_notice(
            f"/approval: {mode!r} is not a mode — {', '.join(APPROVAL_MODES)}", level="warn", code="approval"
        )
        return
    await app.chat.add_notice(set_mode(app, mode), code="approval", title="approval")


def cycle(app: Host) -> None:
    """Shift+Tab: the next mode of CYCLE (never-ask, set by name, steps back to ask)."""
    if app.session is None:
        return
    current = app.session.approval_mode()
    following = CYCLE[(CYCLE.index(current) + 1) % len(CYCLE)] if current in CYCLE else CYCLE[0]
    app.notify(set_mode(app, following), timeout=4)
