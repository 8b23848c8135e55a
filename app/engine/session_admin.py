"""Removing sessions: who holds one, and deleting one nobody holds (`sessions rm`, the F5 screen).

delete_session(store, "s_3f2a", current_id=engine.session.id)   # SessionBusy / SessionNotFound
"""

from __future__ import annotations

from app.engine.session import SessionNotFound
from app.store import SessionRow, Store


class SessionBusy(Exception):
    """The session is in use (here or by another bulkhead): the message says what to do."""


def session_holder(store: Store, session_id: str) -> str | None:
    """Which other live process holds `session_id` open for writing (its lease, `app.lease`), or None."""
    from app.lease import this_process

    holder = store.lease_holder(session_id)
    if holder is None or holder.same_process(this_process()):
        return None
    described: str = holder.describe()
    return described


def delete_session(store: Store, session_id: str, *, current_id: str | None = None) -> SessionRow:
    """Delete a session (by id or unique prefix) with everything it owns; the row it was.

    Refuses the session this process is using and one another process holds."""
    row = store.find_session(session_id)
    if row is None:
        raise SessionNotFound(f"no session {session_id!r}; `bulkhead sessions list` shows them")
    if current_id is not None and row.id == current_id:
        raise SessionBusy(f"{row.id} is the session in use here — start another (/new) or pick another first")
    holder = session_holder(store, row.id)
    if holder:
        raise SessionBusy(f"{row.id} is open in another bulkhead ({holder}); close it there, then delete it")
    store.delete_session(row.id)
    return row
