"""Slash commands as text: what the prompt completes, and (from app.model.slash) what a typed line means.
No textual here.

parse_slash("/cap 256KB")      → ("cap_set", "256KB")
complete_slash("/co")          → [("/compact", …), ("/cost", …), ("/context", …)]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from app.model.slash import SlashError, parse_slash

__all__ = ["SLASH_COMPLETIONS", "SlashError", "complete_slash", "parse_slash"]

SLASH_COMPLETIONS: tuple[tuple[str, str], ...] = (
    ("/compact", "summarize older history now — /compact [instructions]"),
    ("/rewind", "back to before one of your prompts (optionally the files too)"),
    ("/rewind compact", "restore the view before the last compaction"),
    ("/undo", "restore the files the last turn changed"),
    ("/retry", "ask again for the last answer (partial or complete)"),
    ("/new", "start a fresh session; this one stays resumable (F5)"),
    ("/clear", "the same as /new: a fresh session, this one kept"),
    ("/rename", "give this session a title — /rename TITLE"),
    ("/cost", "tokens, cost, compactions, rejections"),
    ("/context", "bytes, cap and window of the next request"),
    ("/cap reset", "forget the learned cap for this endpoint"),
    ("/cap", "set a request body cap for this session — /cap SIZE"),
    ("/recall", "put an archived segment back — /recall KEY"),
    ("/model", "pick a route and model (the list of each route's models) — /model [ROUTE]"),
    ("/mcp", "MCP servers: state, tools, definition bytes — /mcp restart NAME"),
    ("/sessions", "browse and resume sessions"),
    ("/export", "write the session as Markdown (and HAR)"),
    ("/init", "ask the model to write a starter AGENTS.md"),
    ("/memory", "add a line to AGENTS.md — /memory TEXT (or start a prompt with #)"),
    ("/permissions", "the permission rules in force and where they come from"),
    ("/find", "find text anywhere in the conversation — /find TEXT (Ctrl+F; again: the next older match)"),
    ("/help", "keys, commands and the lab grammar"),
    ("/exit", "quit bulkhead (also /quit, Ctrl+Q)"),
    ("/quit", "quit bulkhead"),
)


ARGUMENT_COMMANDS = ("/model", "/recall", "/mcp")  # commands whose argument the prompt completes
MAX_ARGUMENT_COMPLETIONS = 8


def complete_slash(
    text: str,
    arguments: Callable[[str], list[tuple[str, str]]] | None = None,
    extra: Sequence[tuple[str, str]] = (),
) -> list[tuple[str, str]]:
    """Completions for what the prompt holds: `/co` → /compact, /cost, /context; with `arguments`
    (command → its values and help), `/model w` → /model work and `/recall 3f` → /recall 3f2a…;
    `extra` adds more commands (the custom ones from Markdown files)."""
    if not text.startswith("/") or "\n" in text:
        return []
    lowered = text.lower()
    command, space, typed = text.partition(" ")
    if space and arguments is not None and command.lower() in ARGUMENT_COMMANDS:
        matches = [
            (f"{command.lower()} {value}", help_)
            for value, help_ in arguments(command.lower())
            if value.lower().startswith(typed.lower()) and value != typed
        ]
        return matches[:MAX_ARGUMENT_COMPLETIONS]
    words = (*SLASH_COMPLETIONS, *extra)
    longer = [
        (word, help_)
        for word, help_ in words
        if word.lower().startswith(lowered) and word.lower() != lowered.rstrip()
    ]
    # `/rewind` is a command of its own besides `/rewind compact`: offered first, so Enter runs it
    exact = [(word, help_) for word, help_ in words if word.lower() == lowered]
    return exact[:1] + longer if longer and exact else longer
