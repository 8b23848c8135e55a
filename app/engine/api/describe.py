"""An engine event in words, through the front door: the one presenter of the chat, `-p` and the logs.

    line = describe(event)            # Description | None (None: the event is not told as a line)
    line.text, line.level, line.code, line.title, line.mark, line.line

What a user reads in the TUI is what a script reads on stderr. Outside text in an event (a provider's
reason, a hook's output) is left as it came: each front end makes it safe where it prints it
(`app.textsafe`). Light: it imports `app.model` and `app.sizes` only.
"""

from __future__ import annotations

from app.engine.describe import Description, describe

__all__ = ["Description", "describe"]
