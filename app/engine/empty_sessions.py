"""An empty session is not kept: a TUI opened and quit, or a `-p` refused before it sent anything.

A session with no message and no title of its own (`/rename`) is deleted when its engine closes, with its
folder; one with anything in it is kept as before. A session another bulkhead has open is never
closed by this one, so never deleted by it.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from app.engine.session import Session


def forget_if_empty(session: Session) -> bool:
    """Delete `session` (an `app.engine.session.Session` whose writes are on disk) if it holds nothing."""
    if session.master_len() or session.title:
        return False
    with contextlib.suppress(Exception):  # a store that cannot delete keeps an empty row: harmless
        return bool(session.store.delete_session(session.id))
    return False
