"""Sessions as the TUI's sessions screen handles them, besides the one that is open: renaming and deleting
one in the store, and the error of a session that is not there (`--resume` of an unknown id). The command
line's `bulkhead sessions` may share it."""

from app.engine.session import SessionNotFound, rename_session
from app.engine.session_admin import delete_session

__all__ = ["SessionNotFound", "delete_session", "rename_session"]
