"""A scripted HTTP/1.1 server on 127.0.0.1 for wire tests.

Each incoming request takes the next scripted action (FIFO) and is recorded with the
exact bytes of its body that reached the server. Actions:

- `Reply(status, headers, body)`            one complete response
- `Stream(status, headers, chunks)`         a chunked response sent piece by piece (SSE,
                                            AWS event-stream frames); `reset=True` aborts
                                            the connection after the chunks instead;
                                            `close_delimited=True` sends no framing and
                                            ends the body by closing the connection
- `Reset(after_bytes)`                      read that much of the body, then abort the
                                            connection with SO_LINGER 0 (a TCP RST)
- `Hold()`                                  read the request, answer nothing until the
                                            server stops (drives client read timeouts)

The server speaks raw sockets on purpose: gateways that reset mid-upload or answer
HTML where JSON is expected are exactly what the adapters must survive.
"""

from __future__ import annotations

import socket
import struct
import threading
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

_REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    408: "Request Timeout",
    413: "Request Entity Too Large",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    529: "Overloaded",
}


@dataclass
class Reply:
    status: int = 200
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes | str = b""


@dataclass
class Stream:
    status: int = 200
    headers: Mapping[str, str] = field(default_factory=dict)
    chunks: Iterable[bytes | str] = ()
    reset: bool = False  # abort (RST) after the chunks instead of ending the body
    close_delimited: bool = False  # no framing: the body ends when the server closes (FIN), as behind a
    #                                proxy with `chunked_transfer_encoding off` whose upstream died


@dataclass
class Reset:
    after_bytes: int = 0


@dataclass
class Hold:
    pass


Action = Reply | Stream | Reset | Hold


@dataclass
class ReceivedRequest:
    method: str
    path: str
    headers: dict[str, str]  # lower-cased names
    body: bytes
    complete: bool  # the whole declared body arrived

    @property
    def body_bytes(self) -> int:
        return len(self.body)


class ScriptedServer:
    """Start with `start()`; script with `push()`; read `requests` afterwards."""

    def __init__(self) -> None:
        self._script: deque[Action | Callable[[ReceivedRequest], Action]] = deque()
        self.requests: list[ReceivedRequest] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._sock: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._workers: list[threading.Thread] = []
        self.port = 0

    # -- lifecycle --------------------------------------------------------------------------------
    def start(self) -> ScriptedServer:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        sock.settimeout(0.2)  # lets the accept loop notice stop() promptly
        self._sock = sock
        self.port = sock.getsockname()[1]
        self._thread = threading.Thread(target=self._accept_loop, name="scripted-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._thread:
            self._thread.join(timeout=5)
        if self._sock:
            self._sock.close()
        for worker in self._workers:
            worker.join(timeout=5)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # -- scripting --------------------------------------------------------------------------------
    def push(self, *actions: Action | Callable[[ReceivedRequest], Action]) -> None:
        with self._lock:
            self._script.extend(actions)

    @property
    def last(self) -> ReceivedRequest:
        return self.requests[-1]

    # -- serving ----------------------------------------------------------------------------------
    def _accept_loop(self) -> None:
        assert self._sock is not None
        while not self._stopping.is_set():
            try:
                conn, _ = self._sock.accept()
            except (TimeoutError, OSError):
                continue
            worker = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            self._workers.append(worker)
            worker.start()

    def _serve(self, conn: socket.socket) -> None:
        conn.settimeout(10)
        try:
            self._serve_one(conn)
        except OSError:
            pass
        finally:
            try:
                conn.close()
            except OSError:
                pass

    def _next_action(self, request: ReceivedRequest) -> Action:
        with self._lock:
            action = (
                self._script.popleft()
                if self._script
                else Reply(500, {"content-type": "text/plain"}, b"scripted server: no action left")
            )
        return action(request) if callable(action) else action

    def _serve_one(self, conn: socket.socket) -> None:
        reader = conn.makefile("rb")
        request_line = reader.readline(65536).decode("latin-1").strip()
        if not request_line:
            return
        method, path, _ = request_line.split(" ", 2)
        headers: dict[str, str] = {}
        while True:
            line = reader.readline(65536).decode("latin-1")
            if line in ("\r\n", "\n", ""):
                break
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        declared = int(headers.get("content-length", "0") or 0)

        with self._lock:
            upcoming = self._script[0] if self._script else None
        if isinstance(upcoming, Reset):
            with self._lock:
                self._script.popleft()
            body = _read_exactly(reader, min(upcoming.after_bytes, declared))
            self.requests.append(ReceivedRequest(method, path, headers, body, len(body) == declared))
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            return  # close() with linger 0 sends RST

        body = _read_exactly(reader, declared)
        request = ReceivedRequest(method, path, headers, body, len(body) == declared)
        self.requests.append(request)
        action = self._next_action(request)
        if isinstance(action, Hold):
            self._stopping.wait()
            return
        if isinstance(action, Reset):
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            return
        if isinstance(action, Reply):
            payload = action.body.encode("utf-8") if isinstance(action.body, str) else action.body
            head = _head(action.status, action.headers, {"content-length": str(len(payload))})
            conn.sendall(head + payload)
            return
        if action.close_delimited:
            conn.sendall(_head(action.status, action.headers, {}))
            for chunk in action.chunks:
                conn.sendall(chunk.encode("utf-8") if isinstance(chunk, str) else chunk)
            return  # close() ends the body
        head = _head(action.status, action.headers, {"transfer-encoding": "chunked"})
        conn.sendall(head)
        for chunk in action.chunks:
            data = chunk.encode("utf-8") if isinstance(chunk, str) else chunk
            if data:
                conn.sendall(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        if action.reset:
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            return
        conn.sendall(b"0\r\n\r\n")


def _read_exactly(reader, count: int) -> bytes:
    chunks: list[bytes] = []
    remaining = count
    while remaining > 0:
        chunk = reader.read(min(remaining, 1 << 16))
        if not chunk:
            break
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def _head(status: int, headers: Mapping[str, str], framing: Mapping[str, str]) -> bytes:
    lines = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}"]
    names = {k.lower() for k in headers}
    for name, value in headers.items():
        lines.append(f"{name}: {value}")
    for name, value in framing.items():
        if name not in names:
            lines.append(f"{name}: {value}")
    lines.append("connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
