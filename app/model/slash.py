"""What a typed slash line means, shared by the TUI and `-p`: `/cap 256KB` → ("cap_set", "256KB").

    parse_slash("/cap 256KB")      → ("cap_set", "256KB")
    parse_slash("/nosuch")         → SlashError("unknown command /nosuch — known: …")

`SLASH_ACTIONS` is the slash word of each of the TUI's actions (`app.ui.actions.ACTIONS`, whose ids these
are; tests/ui/test_app.py checks that the two agree). The completions the prompt offers are the TUI's
(`app.ui.slash`).
"""

from __future__ import annotations

SLASH_ACTIONS: dict[str, str] = {
    "/compact": "compact",
    "/rewind": "rewind_to",
    "/undo": "undo",
    "/blocked": "blocked",
    "/retry": "retry",
    "/new": "new",
    "/rename": "rename",
    "/cost": "cost",
    "/context": "context",
    "/cap": "cap_set",
    "/recall": "recall",
    "/model": "model",
    "/mcp": "mcp",
    "/sessions": "sessions",
    "/export": "export",
    "/init": "init",
    "/memory": "memory",
    "/approval": "approval",
    "/permissions": "permissions",
    "/help": "help",
    "/quit": "quit",
    "/find": "find",
}


class SlashError(ValueError):
    """A slash command that does not parse; the message is shown to the user."""


def parse_slash(text: str) -> tuple[str, str]:
    """`/cap 256KB` → ("cap_set", "256KB"). Raises SlashError with a usage line."""
    word, _, rest = text.strip().partition(" ")
    word, rest = word.lower(), rest.strip()
    if word == "/compact":
        return "compact", rest
    if word == "/rewind":
        if rest.lower() not in ("compact", ""):
            raise SlashError("usage: /rewind (choose a prompt) or /rewind compact")
        return ("rewind", "") if rest else ("rewind_to", "")
    if word == "/cap":
        if not rest:
            return "context", ""
        return ("cap_reset", "") if rest.lower() == "reset" else ("cap_set", rest)
    if word == "/recall":
        if not rest:
            raise SlashError("usage: /recall KEY (16 hex digits, or a [[ccr:KEY]] marker)")
        return "recall", rest
    if word == "/model":
        return "model", rest
    if word in ("/new", "/clear"):
        return "new", ""
    if word in ("/exit", "/quit"):
        return "quit", ""
    if word == "/rename":
        if not rest:
            raise SlashError("usage: /rename TITLE")
        return "rename", rest
    action = SLASH_ACTIONS.get(word)
    if action is not None and action not in ("cap_reset", "cap_set"):
        return action, rest
    known = " ".join(sorted(SLASH_ACTIONS))
    raise SlashError(f"unknown command {word} — known: {known}")
