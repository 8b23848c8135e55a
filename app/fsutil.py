"""Writing a file so that a failure never leaves it half-written: `atomic_write`.

    atomic_write(path, data)              # keeps an existing file's mode (new files: 0666 & ~umask)
    atomic_write(path, data, 0o600)       # bulkhead's own files

The new content goes to a temporary file in the same folder, is flushed and fsync'ed, gets
the mode (and, where allowed, the owner) the file should have, and is renamed over the
target — one atomic step. A symlink is followed: its target is replaced, the link stays.
On any failure (a full disk, a quota, a read-only folder) the temporary file is removed and
`WriteFailed` is raised: an `OSError` whose message says the original is unchanged.

Every file bulkhead writes whole goes through here: `write_file`/`edit_file`, state.toml,
exports, spill files, answer drafts. Appends (receipts, transcript, prompt history) are
single `write` calls of whole lines and are not rewritten.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from pathlib import Path

TEMP_PREFIX = ".bulkhead-"
TEMP_SUFFIX = ".tmp"


class WriteFailed(OSError):
    """Writing `path` failed; the file as it was before (or its absence) is untouched."""

    def __init__(self, errno_: int | None, reason: str, path: Path, existed: bool) -> None:
        super().__init__(errno_, reason, str(path))
        self.path = path
        self.existed = existed
        self.reason = reason

    @property
    def unchanged(self) -> str:
        """The half sentence that says what became of the file."""
        return "the original file is unchanged" if self.existed else "no file was created"

    def __str__(self) -> str:
        return f"cannot write {self.path}: {self.reason} — {self.unchanged}"


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def _target(path: Path) -> Path:
    """Where the bytes really go: a symlink's final target (the link itself is kept)."""
    if path.is_symlink():
        return Path(os.path.realpath(path))
    return path


def atomic_write(
    path: str | os.PathLike[str], data: bytes | str, mode: int | None = None, *, durable: bool = True
) -> Path:
    """Replace `path`'s content with `data` in one atomic step; return the path written.

    `mode` None keeps the existing file's permission bits (a new file gets 0666 minus the
    umask, as `open` would). `durable` fsyncs the file and its folder (off for drafts, which
    are rewritten every few KB and only need to survive a killed process).
    """
    target = _target(Path(path))
    payload = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    try:
        info: os.stat_result | None = target.stat()
    except FileNotFoundError:
        info = None
    except OSError as exc:
        raise WriteFailed(exc.errno, exc.strerror or str(exc), target, existed=False) from None
    if info is not None and not stat.S_ISREG(info.st_mode):
        kind = "a directory" if stat.S_ISDIR(info.st_mode) else "not a regular file"
        raise WriteFailed(None, f"it is {kind}", target, existed=True)
    final_mode = (
        mode if mode is not None else (stat.S_IMODE(info.st_mode) if info is not None else 0o666 & ~_umask())
    )

    folder = target.parent
    tmp = folder / f"{TEMP_PREFIX}{target.name[:80]}-{secrets.token_hex(4)}{TEMP_SUFFIX}"
    fd = -1
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
        view = memoryview(payload)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        if durable:
            os.fsync(fd)
        os.fchmod(fd, final_mode)
        if info is not None and (info.st_uid, info.st_gid) != (os.geteuid(), os.getegid()):
            with contextlib.suppress(OSError):  # only root may give a file away; others keep theirs
                os.fchown(fd, info.st_uid, info.st_gid)
        os.close(fd)
        fd = -1
        os.replace(tmp, target)
    except OSError as exc:
        if fd >= 0:
            with contextlib.suppress(OSError):
                os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise WriteFailed(exc.errno, exc.strerror or str(exc), target, existed=info is not None) from None
    except BaseException:
        if fd >= 0:
            with contextlib.suppress(OSError):
                os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if durable:
        _fsync_folder(folder)
    return target


def _fsync_folder(folder: Path) -> None:
    """Make the rename itself durable (best effort: not every filesystem lets a folder be fsync'ed)."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
