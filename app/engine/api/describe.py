"""An engine event in words, through the front door: the one presenter of the chat, `-p` and the logs.

    line = describe(event)            # Description | None (None: the event is not told as a line)
    line.text, line.level, line.code, line.title, line.mark, line.line

What a user reads in the TUI is what a script reads on stderr. Outside text in an event (a provider's
reason, a hook's output) is left as it came: each front end makes it safe where it prints it
(`app.textsafe`). A `Notice` carries its text and, for the engine's own notices, the facts it tells
(`event.fact`, `app.model.notice_facts`) for a front end that words them its own way. Light: it imports
`app.model`, `app.sizes` and `app.textsafe` only.
"""

from __future__ import annotations

from app.engine.describe import Description
from app.engine.notice_words import describe  # the one presenter, with every notice fact's words registered

__all__ = ["Description", "describe"]
