"""One writer per session: the lease a bulkhead process holds on the session it writes.

A lease is a row in the database (`leases`: session, pid, the process's start time, host, since
when, what kind of bulkhead) taken when a session is opened for writing and dropped when it is
closed. A second process that wants the same session is told who holds it and may open it
read-only or fork it into a new session; `--continue` simply picks the newest session nobody
holds. A lease whose process is gone — its pid is dead, or now belongs to a process that started
at another time (a reused pid) — is stale and taken over, so a crash never locks a session.

    holder = store.acquire_lease(session_id, this_process("TUI"))   # None: it is ours now
    if holder: raise SessionHeld(session_id, title, holder)
"""

from __future__ import annotations

from app.model.ages import age
from app.processes import Holder, pid_alive, process_start, this_process
from app.store import StoreError

__all__ = [
    "Holder",
    "SessionHeld",
    "SessionReadOnly",
    "pid_alive",
    "process_start",
    "this_process",
]


class SessionHeld(StoreError):
    """The session is open for writing in another bulkhead; the message names it and the two ways on."""

    exit_code = 2

    def __init__(
        self, session_id: str, title: str, holder: Holder, *, foreign_max_age: float | None = None
    ) -> None:
        self.session_id = session_id
        self.title = title
        self.holder = holder
        # A lease from another machine cannot be checked: past `foreign_max_age` seconds it may be taken over.
        self.stale_foreign = holder.foreign and foreign_max_age is not None and holder.age() > foreign_max_age
        takeover = (
            f" It was taken on {holder.host} {age(holder.age(), words=True)} ago, and bulkhead cannot check a process "
            f"there: if that bulkhead is gone, `bulkhead sessions unlock {session_id}` frees it."
            if self.stale_foreign
            else ""
        )
        super().__init__(
            f"session {session_id}{f' “{title}”' if title else ''} is open in another bulkhead, "
            f"{holder.describe()}. Continue it as a new session with --fork "
            f"(`bulkhead --resume {session_id} --fork …`), or open it without writing with --read-only "
            f"(the TUI; `bulkhead sessions show {session_id}` prints it) — or close the other bulkhead first."
            + takeover
        )


class SessionReadOnly(StoreError):
    """A write to a session opened read-only."""

    exit_code = 2

    def __init__(self, session_id: str, holder: Holder | None) -> None:
        held = f" (another bulkhead holds it, {holder.describe()})" if holder else ""
        super().__init__(
            f"session {session_id} is open read-only{held}: nothing can be added to it here. To go on, "
            f"fork it into a new session (`bulkhead --resume {session_id} --fork`)."
        )
