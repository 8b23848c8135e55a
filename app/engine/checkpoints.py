"""Checkpoints: the previous bytes and mode of every file a file tool changes, so `/undo` and
`/rewind` can put them back.

Before `write_file` or `edit_file` touches a file, the turn loop calls `snapshot()`: the file's
bytes go to `checkpoints/blobs/<sha256>` in the session folder (0600, stored once per content) and
a line joins `checkpoints/index.jsonl` — the turn, the call, the path, whether the file existed and
its mode. Nothing is ever deleted: undoing appends an `undone` line naming the snapshots it used.

- `undo_last_turn()`: the newest turn with changes not yet undone; each of its files goes back to
  how it was before that turn (its first snapshot in the turn) — a file the turn created is removed.
- `restore_since(turn)`: every file changed in that turn or later, back to how it was before it
  (`/rewind` with files).

Shell commands are not checkpointed: only the file tools know what they will change.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import stat
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from app.fsutil import WriteFailed, atomic_write

Action = Literal["restored", "removed", "unchanged", "skipped"]


@dataclass(frozen=True)
class Snapshot:
    id: str
    turn: int
    call_id: str
    path: str  # absolute
    existed: bool
    mode: int | None = None  # permission bits, when it existed
    blob: str | None = None  # sha256 of the previous bytes
    size: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": "snapshot",
            "id": self.id,
            "turn": self.turn,
            "call_id": self.call_id,
            "path": self.path,
            "existed": self.existed,
            "mode": self.mode,
            "blob": self.blob,
            "size": self.size,
            "at": time.time(),
        }


@dataclass(frozen=True)
class Restored:
    path: str
    action: Action  # restored (bytes and mode back) | removed (it did not exist) | unchanged | skipped
    detail: str = ""


class CheckpointError(Exception):
    """A snapshot could not be taken (the change then does not run)."""


class Checkpoints:
    def __init__(self, session_folder: Path, *, max_bytes: int) -> None:
        self.folder = Path(session_folder) / "checkpoints"
        self.index = self.folder / "index.jsonl"
        self.blobs = self.folder / "blobs"
        self.max_bytes = max_bytes

    # -- recording -------------------------------------------------------------------------------
    def snapshot(self, path: Path, *, turn: int, call_id: str) -> Snapshot | None:
        """Keep `path` as it is now, before a file tool changes it. None when it is not a regular file
        (the tool will refuse it). Raises CheckpointError when it cannot be kept (too big, unreadable)."""
        path = Path(os.path.normpath(path))
        try:
            info = path.stat()
        except FileNotFoundError:
            return self._append(Snapshot(_new_id(), turn, call_id, str(path), existed=False))
        except OSError as exc:
            raise CheckpointError(f"cannot checkpoint {path}: {exc.strerror or exc}") from None
        if not stat.S_ISREG(info.st_mode):
            return None
        if info.st_size > self.max_bytes:
            raise CheckpointError(
                f"{path} is {info.st_size:,} bytes, more than checkpoint_max_bytes "
                f"({self.max_bytes:,}): it cannot be checkpointed, so it was not changed"
            )
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise CheckpointError(f"cannot checkpoint {path}: {exc.strerror or exc}") from None
        digest = hashlib.sha256(data).hexdigest()
        self._store_blob(digest, data)
        return self._append(
            Snapshot(
                _new_id(),
                turn,
                call_id,
                str(path),
                existed=True,
                mode=stat.S_IMODE(info.st_mode),
                blob=digest,
                size=len(data),
            )
        )

    def forget_if_unchanged(self, snapshot: Snapshot) -> bool:
        """After a tool failed: drop the snapshot when the file is still as it was (nothing to undo)."""
        if self._matches(snapshot):
            self._write_line({"kind": "dropped", "ids": [snapshot.id]})
            return True
        return False

    # -- reading ---------------------------------------------------------------------------------
    def active(self) -> list[Snapshot]:
        """Snapshots not undone (or dropped), oldest first."""
        snapshots: list[Snapshot] = []
        gone: set[str] = set()
        with contextlib.suppress(OSError):
            for line in self.index.read_text(encoding="utf-8").splitlines():
                try:
                    entry = json.loads(line)
                except ValueError:
                    continue  # a line cut by a crash
                if entry.get("kind") == "snapshot":
                    snapshots.append(
                        Snapshot(
                            entry["id"],
                            int(entry["turn"]),
                            entry.get("call_id", ""),
                            entry["path"],
                            bool(entry["existed"]),
                            entry.get("mode"),
                            entry.get("blob"),
                            int(entry.get("size", 0)),
                        )
                    )
                else:
                    gone.update(entry.get("ids", ()))
        return [s for s in snapshots if s.id not in gone]

    def last_turn(self) -> int | None:
        turns = [s.turn for s in self.active()]
        return max(turns) if turns else None

    def changed_since(self, turn: int) -> list[str]:
        """The files changed in `turn` or later (not undone), in the order they were first changed."""
        return list(dict.fromkeys(s.path for s in self.active() if s.turn >= turn))

    # -- restoring -------------------------------------------------------------------------------
    def last_turn_snapshots(self) -> tuple[int | None, list[Snapshot]]:
        """The newest turn with changes not undone, and its snapshots (what `/undo` restores)."""
        turn = self.last_turn()
        return turn, [s for s in self.active() if s.turn == turn] if turn is not None else []

    def snapshots_since(self, turn: int) -> list[Snapshot]:
        return [s for s in self.active() if s.turn >= turn]

    def escaping(self, snapshots: Iterable[Snapshot], workspace: Path) -> dict[str, Path]:
        """path → where a restore would write now, for the files that lead outside the workspace *now* (a
        link put in place of the file or of a folder on its way since it was changed): those ask first."""
        root = Path(os.path.realpath(Path(workspace).expanduser()))
        found: dict[str, Path] = {}
        for snapshot in _first_per_path(snapshots):
            real = _landing(snapshot)
            if not _inside(real, root) and not self._matches(snapshot):
                found[snapshot.path] = real
        return found

    def undo_last_turn(
        self, workspace: Path | None = None, *, approved: Iterable[str] = ()
    ) -> tuple[int | None, list[Restored]]:
        turn, snapshots = self.last_turn_snapshots()
        if turn is None:
            return None, []
        return turn, self.restore(snapshots, workspace, approved=approved)

    def restore_since(
        self, turn: int, workspace: Path | None = None, *, approved: Iterable[str] = ()
    ) -> list[Restored]:
        return self.restore(self.snapshots_since(turn), workspace, approved=approved)

    def restore(
        self, snapshots: list[Snapshot], workspace: Path | None = None, *, approved: Iterable[str] = ()
    ) -> list[Restored]:
        """Each file back as its first snapshot kept it. With `workspace`, the place each write or removal
        lands is checked again now, by real path: one that leads outside is restored only when its path is
        in `approved` (the user said yes), else skipped and said so."""
        allowed = set(approved)
        root = Path(os.path.realpath(Path(workspace).expanduser())) if workspace is not None else None
        results = [self._restore_one(snapshot, root, allowed) for snapshot in _first_per_path(snapshots)]
        if snapshots:
            self._write_line({"kind": "undone", "ids": [s.id for s in snapshots]})
        return results

    def _restore_one(self, snapshot: Snapshot, root: Path | None, approved: set[str]) -> Restored:
        path = Path(snapshot.path)
        if self._matches(snapshot):
            return Restored(snapshot.path, "unchanged")
        landing = _landing(snapshot)
        if root is not None and not _inside(landing, root) and snapshot.path not in approved:
            return Restored(
                snapshot.path,
                "skipped",
                f"it now leads outside the workspace ({landing}); not touched without your yes",
            )
        try:
            if not snapshot.existed:
                _remove_created(path)
                return Restored(snapshot.path, "removed")
            data = (self.blobs / str(snapshot.blob)).read_bytes()
            atomic_write(landing, data, snapshot.mode)  # where it lands now, in one step; never half-written
        except WriteFailed as exc:
            return Restored(snapshot.path, "skipped", exc.reason)
        except OSError as exc:
            return Restored(snapshot.path, "skipped", exc.strerror or str(exc))
        return Restored(snapshot.path, "restored")

    def _matches(self, snapshot: Snapshot) -> bool:
        """Is the file now exactly as the snapshot kept it (bytes and mode, or absent)?"""
        path = Path(snapshot.path)
        try:
            info = path.stat()
        except FileNotFoundError:
            return not snapshot.existed
        except OSError:
            return False
        if (
            not snapshot.existed
            or not stat.S_ISREG(info.st_mode)
            or stat.S_IMODE(info.st_mode) != snapshot.mode
        ):
            return False
        try:
            return hashlib.sha256(path.read_bytes()).hexdigest() == snapshot.blob
        except OSError:
            return False

    # -- files -----------------------------------------------------------------------------------
    def _store_blob(self, digest: str, data: bytes) -> None:
        target = self.blobs / digest
        if target.exists():
            return
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.blobs.mkdir(exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(prefix=".blob-", dir=self.blobs)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(tmp, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    def _append(self, snapshot: Snapshot) -> Snapshot:
        self._write_line(snapshot.to_json())
        return snapshot

    def _write_line(self, entry: dict[str, Any]) -> None:
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(self.index, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, (json.dumps(entry, ensure_ascii=False) + "\n").encode("utf-8", "surrogateescape"))
        finally:
            os.close(fd)


def _new_id() -> str:
    return f"c_{time.time_ns():x}{os.urandom(3).hex()}"


def _first_per_path(snapshots: Iterable[Snapshot]) -> list[Snapshot]:
    first: dict[str, Snapshot] = {}
    for snapshot in snapshots:
        first.setdefault(snapshot.path, snapshot)
    return list(first.values())


def _inside(path: Path, root: Path) -> bool:
    return path == root or path.is_relative_to(root)


def _landing(snapshot: Snapshot) -> Path:
    """Where restoring `snapshot` acts now: for bytes, the path with every link resolved, the last one too (a
    file replaced by a link would be written where the link leads); for removing a created file, its folder
    resolved plus its name (removing a link removes the link)."""
    path = Path(snapshot.path)
    if not snapshot.existed:
        return Path(os.path.realpath(path.parent)) / path.name
    return Path(os.path.realpath(path))


def _remove_created(path: Path) -> None:
    """Remove a file the undone turn created, where its folder really is now (the caller checked that
    place), by name in that folder: a link in place of the file is removed itself, never its target."""
    fd = os.open(os.path.realpath(path.parent), os.O_RDONLY | os.O_DIRECTORY)
    try:
        info = os.stat(path.name, dir_fd=fd, follow_symlinks=False)
        if stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError(errno.EISDIR, "it is now a folder", str(path))
        os.unlink(path.name, dir_fd=fd)
    finally:
        os.close(fd)


def describe(results: Iterable[Restored], workspace: Path) -> str:
    """`restored app/x.py; removed new.txt (it did not exist before)`."""

    def shown(path: str) -> str:
        with contextlib.suppress(ValueError):
            return Path(path).relative_to(workspace).as_posix()
        return path

    words = {
        "restored": "restored {}",
        "removed": "removed {} (it did not exist before)",
        "unchanged": "{} was already as before",
        "skipped": "could not restore {}: {}",
    }
    return "; ".join(words[r.action].format(shown(r.path), r.detail) for r in results)
