"""Which process is which: a process's identity that survives pid reuse (its start time), whether it still
runs, and `Holder` — a process that holds (or wants) a session's lease (`app.lease`, kept in `app.store`)."""

from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path


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
