"""Custom slash commands through the front door: the Markdown prompt files of `.bulkhead/commands`,
`.claude/commands` and the config folder (`app/engine/custom_commands.py` says how they are found).

    commands, problems = discover(workspace, reserved=["/help", …])   # the TUI's palette and /help
    prompt = expand_slash("/review the parser", workspace)            # `-p "/review …"`; None: no such command

A command's name, description and body come from files: a front end shows them through `app.textsafe`.
"""

from __future__ import annotations

from app.engine.custom_commands import CustomCommand, discover, expand_slash

__all__ = ["CustomCommand", "discover", "expand_slash"]
