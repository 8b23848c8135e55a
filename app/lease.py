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

import os
import socket
import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from app.store import StoreError


@cache
def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def process_start(pid: int) -> str:
    """When `pid` started, as a stable string (boot id + clock ticks on Linux); "" when unknown or gone."""
    try:
        line = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    fields = line[line.rfind(")") + 2 :].split()
    try:
        return f"{_boot_id()}:{int(fields[19])}"
    except (IndexError, ValueError):
        return ""


def pid_alive(pid: int) -> bool:
    """A process with this id runs on this machine (a zombie does not count)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    stat = Path(f"/proc/{pid}/stat")
    if stat.exists():
        try:
            text = stat.read_text()
            return text[text.rfind(")") + 2] not in "ZX"
        except OSError:
            return False
    return True


@dataclass(frozen=True)
class Holder:
    """A process that holds (or wants) a session's lease."""

    pid: int
    started: str
    host: str
    acquired_at: float = 0.0
    what: str = ""  # "the TUI", "bulkhead -p"

    def same_process(self, other: Holder) -> bool:
        return (self.pid, self.started, self.host) == (other.pid, other.started, other.host)

    def alive(self) -> bool:
        """Still running? A lease from another host cannot be checked and counts as held."""
        if self.host != socket.gethostname():
            return True
        if not pid_alive(self.pid):
            return False
        now = process_start(self.pid)
        return not (self.started and now and now != self.started)

    @property
    def foreign(self) -> bool:
        """Taken on another machine: bulkhead cannot tell whether that process still runs."""
        return self.host != socket.gethostname()

    def age(self, now: float | None = None) -> float:
        return max(0.0, (time.time() if now is None else now) - self.acquired_at) if self.acquired_at else 0.0

    def describe(self) -> str:
        since = time.strftime("%H:%M", time.localtime(self.acquired_at)) if self.acquired_at else "?"
        where = "" if self.host == socket.gethostname() else f" on {self.host}"
        return f"pid {self.pid}{where} ({self.what or 'bulkhead'}, since {since})"


def this_process(what: str = "") -> Holder:
    pid = os.getpid()
    return Holder(
        pid=pid, started=process_start(pid), host=socket.gethostname(), acquired_at=time.time(), what=what
    )


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
            f" It was taken on {holder.host} {format_age(holder.age())} ago, and bulkhead cannot check a process "
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


def format_age(seconds: float) -> str:
    if seconds >= 2 * 86400:
        return f"{seconds / 86400:.0f} days"
    if seconds >= 2 * 3600:
        return f"{seconds / 3600:.0f} hours"
    return f"{max(1, round(seconds / 60)):.0f} minutes"


class SessionReadOnly(StoreError):
    """A write to a session opened read-only."""

    exit_code = 2

    def __init__(self, session_id: str, holder: Holder | None) -> None:
        held = f" (another bulkhead holds it, {holder.describe()})" if holder else ""
        super().__init__(
            f"session {session_id} is open read-only{held}: nothing can be added to it here. To go on, "
            f"fork it into a new session (`bulkhead --resume {session_id} --fork`)."
        )
