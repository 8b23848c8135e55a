"""Every process a command started, so that a timeout or Esc can kill them all — `setsid` ones too.

A process group is not enough: `setsid cmd &` leaves the group (and the session), and a
double fork (`(cmd &)`) even leaves the parent chain. Three ways to track a command's tree,
the best one available is used:

- **cgroup** (Linux cgroup v2, where this user may create a child of its own cgroup): the
  command joins a fresh cgroup before it runs (`sh -c 'echo $$ > …/cgroup.procs; exec …'`);
  everything it starts stays in it whatever it does with sessions and parents, and
  `cgroup.kill` (or SIGKILL to each member) ends them all. Nothing escapes.
- **proc** (any Linux): `/proc` is walked — the command's process group, its session, and
  every descendant by parent — at each poll while it runs and again at the kill, remembering
  each process with its start time (so a reused pid is never killed). A process that detached
  *and* lost its parent between two polls cannot be seen; the result says so.
- **group** (no /proc): the process group only, and the result says what that cannot cover.

After the kill, `survivors` lists what is still alive: the tool's result names them instead of
claiming everything was killed.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

USE_CGROUPS = True  # tests turn it off to exercise the /proc walk
USE_PROC = True
POLL_SECONDS = 0.2  # how often the /proc walk looks for new descendants while a command runs
CGROUP_PREFIX = "bulkhead-"
_PROC = Path("/proc")
_counter = itertools.count(1)
_cgroup_base: Path | None | bool = False  # False: not looked up yet; None: not usable here
_pending_removal: list[Path] = []  # emptied cgroups the kernel did not let go of yet (zombies being reaped)


# -- /proc -------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ProcInfo:
    pid: int
    ppid: int
    pgid: int
    sid: int
    state: str
    start: int  # clock ticks after boot: with the pid, a process's identity
    name: str


def read_proc(pid: int) -> ProcInfo | None:
    """One process from /proc/PID/stat, or None when it is gone (or /proc is missing)."""
    try:
        line = (_PROC / str(pid) / "stat").read_text()
    except (OSError, ValueError):
        return None
    name = line[line.find("(") + 1 : line.rfind(")")]
    fields_ = line[line.rfind(")") + 2 :].split()
    try:
        return ProcInfo(
            pid, int(fields_[1]), int(fields_[2]), int(fields_[3]), fields_[0], int(fields_[19]), name
        )
    except (IndexError, ValueError):
        return None


def all_processes() -> list[ProcInfo]:
    found: list[ProcInfo] = []
    try:
        entries = list(os.scandir(_PROC))
    except OSError:
        return found
    for entry in entries:
        if entry.name.isdigit():
            info = read_proc(int(entry.name))
            if info is not None:
                found.append(info)
    return found


def alive(info: ProcInfo) -> bool:
    """The same process (pid and start time) still runs (a zombie is dead)."""
    now = read_proc(info.pid)
    return now is not None and now.start == info.start and now.state not in ("Z", "X")


# -- cgroup v2 -----------------------------------------------------------------------------------------
def _own_cgroup() -> Path | None:
    """This process's cgroup v2 folder (from /proc/self/cgroup and the cgroup2 mount), or None."""
    try:
        lines = (_PROC / "self" / "cgroup").read_text().splitlines()
        mounts = (_PROC / "self" / "mountinfo").read_text().splitlines()
    except OSError:
        return None
    relative = next((line[3:] for line in lines if line.startswith("0::")), None)
    if relative is None:
        return None
    for mount in mounts:
        left, _, right = mount.partition(" - ")
        if right.split(" ", 1)[0] == "cgroup2":
            mount_point = left.split()[4]
            folder = Path(mount_point + relative.rstrip("/")) if relative != "/" else Path(mount_point)
            if folder.is_dir():
                return folder
    return None


def cgroup_base() -> Path | None:
    """Where command cgroups are made: our own cgroup, if we may create a child there; else None."""
    global _cgroup_base
    if _cgroup_base is False:
        base = _own_cgroup()
        if base is not None:
            probe = base / f"{CGROUP_PREFIX}probe-{os.getpid()}"
            try:
                probe.mkdir()
                probe.rmdir()
            except OSError:
                base = None
        _cgroup_base = base
        if base is not None:
            _remove_stale(base)
            atexit.register(_sweep)
    return _cgroup_base if isinstance(_cgroup_base, Path) else None


def _remove_stale(base: Path) -> None:
    """Empty cgroups left by bulkhead processes that are gone (a crash, a kill -9)."""
    with contextlib.suppress(OSError):
        for folder in base.glob(f"{CGROUP_PREFIX}*-*"):
            owner = folder.name[len(CGROUP_PREFIX) :].split("-", 1)[0]
            if owner.isdigit() and read_proc(int(owner)) is None:
                with contextlib.suppress(OSError):
                    folder.rmdir()


def _sweep() -> None:
    for folder in list(_pending_removal):
        try:
            folder.rmdir()
        except FileNotFoundError:
            pass
        except OSError:
            continue
        _pending_removal.remove(folder)


def _read_pids(path: Path) -> list[int]:
    try:
        return [int(line) for line in path.read_text().split()]
    except (OSError, ValueError):
        return []


# -- the tree ------------------------------------------------------------------------------------------
@dataclass
class ProcessTree:
    """The processes of one command. Call `wrap(argv)` before spawning, `started(pid)` after."""

    cgroup: Path | None = None
    leader: int | None = None
    seen: dict[int, ProcInfo] = field(default_factory=dict)
    _last_poll: float = 0.0

    @classmethod
    def create(cls) -> ProcessTree:
        tree = cls()
        _sweep()
        base = cgroup_base() if USE_CGROUPS else None
        if base is not None:
            folder = base / f"{CGROUP_PREFIX}{os.getpid()}-{next(_counter)}"
            with contextlib.suppress(OSError):
                folder.mkdir()
                tree.cgroup = folder
        return tree

    @property
    def method(self) -> str:
        if self.cgroup is not None:
            return "cgroup"
        return "proc" if USE_PROC and _PROC.is_dir() else "group"

    def wrap(self, argv: list[str]) -> list[str]:
        """`argv` started so that it joins the cgroup before it runs anything (unchanged without one)."""
        if self.cgroup is None:
            return argv
        return [
            "/bin/sh",
            "-c",
            'echo $$ > "$0" 2>/dev/null; exec "$@"',
            str(self.cgroup / "cgroup.procs"),
            *argv,
        ]

    def started(self, pid: int) -> None:
        self.leader = pid
        self.poll(force=True)

    def _check_cgroup(self) -> None:
        """The wrapper joins the cgroup before it execs; if the leader runs elsewhere (the write failed,
        or it has not happened yet), walk /proc instead — never claim a cgroup that holds nothing."""
        if self.cgroup is None or self.leader is None:
            return
        info = read_proc(self.leader)
        if info is None or info.state in ("Z", "X"):
            return
        try:
            inside = (_PROC / str(self.leader) / "cgroup").read_text()
        except OSError:
            return
        if f"/{self.cgroup.name}\n" not in inside and not inside.rstrip().endswith(f"/{self.cgroup.name}"):
            self._drop_cgroup()
            self.poll(force=True)

    # -- watching --------------------------------------------------------------------------------------
    def members(self) -> list[ProcInfo]:
        """What belongs to the command now: cgroup members, or (proc) group, session and descendants."""
        if self.cgroup is not None:
            return [info for pid in _read_pids(self.cgroup / "cgroup.procs") if (info := read_proc(pid))]
        if self.method != "proc" or self.leader is None:
            return []
        processes = all_processes()
        known = {info.pid for info in self.seen.values() if alive(info)} | {self.leader}
        found = {
            p.pid: p for p in processes if p.pgid == self.leader or p.sid == self.leader or p.pid in known
        }
        changed = True
        while changed:  # descendants of anything found, to any depth
            changed = False
            for process in processes:
                if process.pid not in found and process.ppid in found:
                    found[process.pid] = process
                    changed = True
        return [p for p in found.values() if p.state not in ("Z", "X")]

    def poll(self, force: bool = False) -> None:
        """Remember the command's processes (the /proc walk only; cheap to call often)."""
        if self.cgroup is not None or self.method != "proc":
            return
        now = time.monotonic()
        if not force and now - self._last_poll < POLL_SECONDS:
            return
        self._last_poll = now
        for info in self.members():
            self.seen.setdefault(info.pid, info)

    # -- killing ---------------------------------------------------------------------------------------
    def signal_all(self, sig: int) -> None:
        self._check_cgroup()
        if self.leader is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.leader, sig)
        if self.cgroup is not None and sig == signal.SIGKILL and (self.cgroup / "cgroup.kill").exists():
            with contextlib.suppress(OSError):
                (self.cgroup / "cgroup.kill").write_text("1")
        self.poll(force=True)
        targets = self.members() if self.cgroup is not None else [i for i in self.seen.values() if alive(i)]
        for info in targets:
            if info.pid == os.getpid():
                continue
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(info.pid, sig)

    def remaining(self) -> list[ProcInfo]:
        """Processes of the command still alive (the group's too, where nothing better exists)."""
        if self.cgroup is not None:
            return [i for i in self.members() if i.state not in ("Z", "X")]
        if self.method == "proc":
            self.poll(force=True)
            fresh = [read_proc(i.pid) for i in self.seen.values() if alive(i) and i.pid != os.getpid()]
            return [i for i in fresh if i is not None]  # as they are now (a name changes at exec)
        return (
            [ProcInfo(self.leader, 0, self.leader, 0, "?", 0, "?")]
            if self.leader and _group_alive(self.leader)
            else []
        )

    def release(self) -> None:
        """Done with the command: processes left running on purpose (`server &`) leave the cgroup,
        which is removed."""
        if self.cgroup is None:
            return
        for pid in _read_pids(self.cgroup / "cgroup.procs"):
            with contextlib.suppress(OSError):
                (self.cgroup.parent / "cgroup.procs").write_text(str(pid))
        self._drop_cgroup()

    def _drop_cgroup(self) -> None:
        folder, self.cgroup = self.cgroup, None
        if folder is not None:
            try:
                folder.rmdir()
            except FileNotFoundError:
                pass
            except OSError:  # members not reaped yet: removed on a later command or at exit
                _pending_removal.append(folder)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def describe(processes: list[ProcInfo], limit: int = 5) -> str:
    shown = ", ".join(f"{p.pid} ({p.name})" for p in processes[:limit])
    return shown + (f" and {len(processes) - limit} more" if len(processes) > limit else "")
