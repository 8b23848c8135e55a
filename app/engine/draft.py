"""The draft of the answer being streamed: appended to a file as it arrives, so a crash loses at most its tail.

The file is named after the id the answer will have (`draft-<message id>.txt`), so after a crash the
next start can tell a draft whose answer was committed (delete it) from one that was cut short (keep
it as a partial answer): see `leftover_drafts`.

The draft is append-only: each flush writes only the text that arrived since the last one, so a
200,000-character answer costs about 200,000 characters of writes (rewriting the whole answer on
every flush cost O(n²)). It is fsynced once every `DRAFT_FSYNC_CHARS` written, not on every flush.
Known secrets are redacted in what is written; text is held back while a secret could still be
cut in two by the flush boundary (the last `longest secret` characters), so no secret is written
in two halves that the redaction would each miss.

The writes go through the session's writer (`app.engine.writer`): queued behind the session's other
writes, in order, off the event loop once an engine started it. Only the file's own state (its open
descriptor, the bytes written) lives on the writer's side; what arrived and the id are the caller's.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from app.engine.writer import SessionWriter
from app.model.messages import new_id
from app.redact import known_secrets, redact_known

DRAFT_FLUSH_CHARS = 2_000  # write the draft when this much new text arrived
DRAFT_FSYNC_CHARS = 64_000  # fsync the draft once this much was written since the last fsync
DRAFT_PREFIX = "draft-"


def _safe_cut(text: str, cut: int, secrets: list[str]) -> int:
    """The largest position ≤ `cut` that splits no occurrence of a secret in `text`."""
    moved = True
    while moved and cut > 0:
        moved = False
        for value in secrets:
            start = text.find(value, max(0, cut - len(value) + 1))
            while start != -1 and start < cut:
                if start + len(value) > cut:
                    cut, moved = start, True
                    break
                start = text.find(value, start + 1)
    return cut


class DraftWriter:
    """Appends the answer being streamed to `draft-<id>.txt` in the session folder."""

    def __init__(self, folder: Path, writer: SessionWriter | None = None) -> None:
        self.folder = folder
        self.writer = writer if writer is not None else SessionWriter("draft")  # inline unless started
        self.message_id = new_id()
        self._parts_seen = 0  # how many of the stream's parts are in `_tail` or written
        self._tail = ""  # raw text that arrived but is not written yet
        # The writer's side: the open draft file, and what was written to it.
        self._fd: int | None = None
        self._fd_path: Path | None = None
        self._unsynced = 0
        self.bytes_written = 0  # this answer's draft bytes (what a flush costs is visible to a test)

    @property
    def path(self) -> Path:
        return self.folder / f"{DRAFT_PREFIX}{self.message_id}.txt"

    def begin(self) -> str:
        """A new answer starts: the id it will be committed under."""
        self.clear()
        return self.message_id

    def update(self, parts: list[str], chars: int) -> None:
        """The answer so far is `parts` (`chars` long, growing): append what is new once enough arrived."""
        if len(parts) < self._parts_seen:  # a new list: a new stream
            self._parts_seen = 0
        if self._parts_seen < len(parts):
            self._tail += "".join(parts[self._parts_seen :])
            self._parts_seen = len(parts)
        if len(self._tail) < DRAFT_FLUSH_CHARS:
            return
        secrets = sorted(known_secrets(), key=len, reverse=True)
        hold = len(secrets[0]) if secrets else 0
        if len(self._tail) - hold < DRAFT_FLUSH_CHARS:
            return
        cut = _safe_cut(self._tail, len(self._tail) - hold, secrets)
        if cut <= 0:
            return
        chunk, self._tail = self._tail[:cut], self._tail[cut:]
        path = self.path
        self.writer.submit(lambda: self._append(path, chunk), what="draft", required=False)

    def _append(self, path: Path, chunk: str) -> None:
        """(The writer's side.) Append `chunk`, redacted, to the draft at `path`."""
        data = redact_known(chunk).encode("utf-8", "replace")
        with contextlib.suppress(OSError):
            if self._fd_path != path:  # another answer's draft
                self._close_file()
                self._unsynced = self.bytes_written = 0
            if self._fd is None:
                self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
                self._fd_path = path
            view = memoryview(data)
            while view:
                view = view[os.write(self._fd, view) :]
            self.bytes_written += len(data)
            self._unsynced += len(data)
            if self._unsynced >= DRAFT_FSYNC_CHARS:
                os.fsync(self._fd)
                self._unsynced = 0

    def clear(self) -> None:
        """The answer was committed (or kept partial): drop its draft — after the writes issued before, so the
        answer's commit is on disk before its draft goes; the next answer gets a new id."""
        self._parts_seen = 0
        self._tail = ""
        path = self.path
        self.writer.submit(lambda: self._discard(path), what="draft", required=False)
        self.message_id = new_id()

    def _discard(self, path: Path) -> None:
        """(The writer's side.) Close and remove the draft at `path`."""
        if self._fd_path == path:
            self._close_file()
            self._unsynced = 0
            self.bytes_written = 0
        with contextlib.suppress(OSError):
            path.unlink()

    def _close_file(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
        self._fd, self._fd_path = None, None


def leftover_drafts(folder: Path) -> list[tuple[str, Path]]:
    """(message id, path) of every draft a crashed process left in a session folder."""
    found = []
    for path in sorted(folder.glob(f"{DRAFT_PREFIX}*.txt")):
        found.append((path.stem[len(DRAFT_PREFIX) :], path))
    return found
