"""A stdio MCP server's stderr, kept in its log redacted and bounded.

The server writes into a pipe, not into the log: a thread reads it line by line, replaces every
secret bulkhead knows (the keys a definition reads among them, `app.redact`), cuts a line past
`MAX_LINE_BYTES`, and appends to `NAME.stderr.log`. Past `max_bytes` the log rotates: the current
part becomes `NAME.stderr.log.1` (replacing an older one) and a new part starts — at most twice
`max_bytes` on disk per server, however much it writes (one call once wrote 60 MB).

    log = StderrLog(path, max_bytes=settings.mcp_log_max_bytes)
    errlog = log.open(header)      # hand it to the SDK's stdio_client(errlog=…)
    …
    log.close()                    # when the connection ends
"""

from __future__ import annotations

import contextlib
import os
import select
import threading
import time
from pathlib import Path
from typing import TextIO, cast

from app.redact import redact_text

MAX_LINE_BYTES = 8 * 1024
READ_CHUNK = 64 * 1024


class StderrLog:
    def __init__(self, path: Path, *, max_bytes: int) -> None:
        self.path = Path(path)
        self.max_bytes = max(4096, int(max_bytes))
        self._writer: TextIO | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._reading = threading.Lock()
        self._read_fd: int | None = None

    @property
    def rotated_path(self) -> Path:
        return self.path.with_name(self.path.name + ".1")

    def open(self, header: str) -> TextIO:
        """Start a part of the log with `header` and return the pipe's write end for the server's stderr."""
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._append(redact_text(header.rstrip("\n")) + "\n")
        read_fd, write_fd = os.pipe()
        self._writer = cast(TextIO, os.fdopen(write_fd, "w", encoding="utf-8", errors="replace"))
        self._thread = threading.Thread(
            target=self._pump, args=(read_fd,), name=f"stderr {self.path.name}", daemon=True
        )
        self._thread.start()
        return self._writer

    def close(self, wait: float = 2.0) -> None:
        """Close our end of the pipe; the thread ends once the server's end is closed too (it exited)."""
        if self._writer is not None:
            with contextlib.suppress(OSError):
                self._writer.close()
            self._writer = None
        if self._thread is not None:
            self._thread.join(wait)

    def size(self) -> int:
        try:
            return self.path.stat().st_size
        except OSError:
            return 0

    def settle(self, wait: float = 1.0) -> None:
        """Until everything the server wrote so far is in the log (at most `wait` seconds): its last words are
        read from the log right after it died."""
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and self._read_fd is not None:
            with self._reading:  # the pump reads and writes under this lock: empty here means all written
                try:
                    pending = bool(select.select([self._read_fd], [], [], 0)[0])
                except (OSError, ValueError):
                    return
            if not pending:
                return
            time.sleep(0.005)

    def _pump(self, read_fd: int) -> None:
        self._read_fd = read_fd
        pending = b""
        dropping = False
        try:
            while True:
                try:
                    ready = select.select([read_fd], [], [], 0.5)[0]
                except (OSError, ValueError):
                    break
                if not ready:
                    continue
                with self._reading:
                    try:
                        chunk = os.read(read_fd, READ_CHUNK)
                    except OSError:
                        break
                    if not chunk:
                        if pending and not dropping:
                            self._line(pending)
                        break
                    pending += chunk
                    while (newline := pending.find(b"\n")) >= 0:
                        line, pending = pending[:newline], pending[newline + 1 :]
                        if not dropping:
                            self._line(line)
                        dropping = False
                    if len(pending) > MAX_LINE_BYTES:  # one endless line: keep its start, drop the rest
                        if not dropping:
                            self._line(pending[:MAX_LINE_BYTES], cut=True)
                        pending, dropping = b"", True
        finally:
            with self._reading:
                self._read_fd = None
                with contextlib.suppress(OSError):
                    os.close(read_fd)

    def _line(self, raw: bytes, *, cut: bool = False) -> None:
        text = redact_text(raw[:MAX_LINE_BYTES].decode("utf-8", "replace"))
        if cut or len(raw) > MAX_LINE_BYTES:
            text += " … [line cut]"
        self._append(text + "\n")

    def _append(self, text: str) -> None:
        data = text.encode("utf-8")
        with self._lock:
            try:
                if self.size() + len(data) > self.max_bytes and self.size() > 0:
                    os.replace(self.path, self.rotated_path)
                    data = (
                        f"--- the log reached {self.max_bytes:,} bytes (mcp_log_max_bytes): the earlier part is "
                        f"{self.rotated_path.name}, anything older was dropped\n"
                    ).encode() + data
                fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
                with os.fdopen(fd, "ab") as handle:
                    handle.write(data)
            except OSError:
                return  # a log that cannot be written costs the log, never the session
