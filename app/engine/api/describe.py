"""An event in words (`describe(event)`): the one wording the chat, `bulkhead -p` and the log share
(`app.engine.describe`). Shared by the TUI and the command line."""

from app.engine.describe import describe

__all__ = ["describe"]
