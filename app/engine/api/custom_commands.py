"""Custom slash commands (Markdown files in `.bulkhead/commands`, `.claude/commands`, the global folder):
`discover(workspace, reserved)` reads them (blocking: a front end calls it off its event loop, or where it
may block), each a `CustomCommand` (`.slash`, `.expand(arguments)`). Shared by the TUI and `-p`."""

from app.engine.custom_commands import CustomCommand, discover

__all__ = ["CustomCommand", "discover"]
