"""Stored sessions through the front door, outside a running one: load one to show or export it, rename,
delete one nobody holds, and who holds one (`bulkhead sessions …`, the TUI's F5 screen).

    session = load_session(store, "s_3f2a")              # by id or unique prefix; SessionNotFound
    session_holder(store, session.id)                    # the other bulkhead holding it open, in words; None
    rename_session(store, session.id, "the parser")      # the title stored (ValueError: nothing left of it)
    delete_session(store, "s_3f2a", current_id=…)        # SessionBusy (in use) / SessionNotFound

Both errors carry a sentence that says what to do. A session's rows are read through `app.store`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.engine.session import Session, SessionNotFound, rename_session
from app.engine.session_admin import SessionBusy, delete_session, session_holder

if TYPE_CHECKING:
    from app.store import Store

__all__ = [
    "Session",
    "SessionBusy",
    "SessionNotFound",
    "delete_session",
    "load_session",
    "rename_session",
    "session_holder",
]


def load_session(store: Store, session_id: str) -> Session:
    """The stored session `session_id` (an id or a unique prefix), to read: show, export, HAR."""
    return Session.load(store, session_id)
