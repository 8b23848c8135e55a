"""Just enough HTTP/1.1 for the lab: request heads, complete responses and chunked streams (stdlib only)."""

from __future__ import annotations

import json
import socket
import struct
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from email.utils import formatdate
from http import HTTPStatus
from typing import Any
from urllib.parse import unquote

MAX_HEAD_BYTES = 1024 * 1024
_REASONS = {529: "Site Overloaded", 524: "A Timeout Occurred"}


class BadRequestHead(ValueError):
    """A request line or header block that does not parse."""


@dataclass(frozen=True)
class RequestHead:
    method: str
    target: str
    version: str
    headers: Mapping[str, str]  # lower-case names; a repeated header keeps its last value
    size: int = 0  # bytes of the request line and header block as received (with the final CRLF CRLF)

    @property
    def path(self) -> str:
        return unquote(self.target.split("?", 1)[0])

    @property
    def raw_path(self) -> str:
        return self.target.split("?", 1)[0]

    @property
    def content_length(self) -> int | None:
        value = self.headers.get("content-length")
        if value is None:
            return None
        try:
            length = int(value.strip())
        except ValueError as exc:
            raise BadRequestHead(f"bad Content-Length {value!r}") from exc
        if length < 0:
            raise BadRequestHead(f"bad Content-Length {value!r}")
        return length

    @property
    def chunked(self) -> bool:
        return "chunked" in self.headers.get("transfer-encoding", "").lower()

    @property
    def keep_alive(self) -> bool:
        connection = self.headers.get("connection", "").lower()
        if self.version == "HTTP/1.0":
            return "keep-alive" in connection
        return "close" not in connection

    @property
    def host(self) -> str:
        return self.headers.get("host", "api.example.com").split(":")[0] or "api.example.com"


def parse_head(data: bytes) -> RequestHead:
    try:
        text = data.decode("latin-1")
    except UnicodeDecodeError as exc:  # pragma: no cover - latin-1 decodes every byte
        raise BadRequestHead(str(exc)) from exc
    lines = text.split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise BadRequestHead(f"bad request line {lines[0][:80]!r}")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if not line:
            continue
        name, sep, value = line.partition(":")
        if not sep or not name.strip():
            raise BadRequestHead(f"bad header line {line[:80]!r}")
        headers[name.strip().lower()] = value.strip()
    return RequestHead(parts[0].upper(), parts[1], parts[2], headers, len(data) + 4)


@dataclass(frozen=True)
class Response:
    """A complete response: status, headers in order (their case kept), body; `close` ends the connection."""

    status: int
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""
    close: bool = False

    def header(self, name: str) -> str | None:
        for key, value in self.headers:
            if key.lower() == name.lower():
                return value
        return None


@dataclass
class StreamEvent:
    """One event of a streamed answer; `content` marks text/tool deltas (where a cut or error may fall)."""

    data: bytes
    content: bool = False


@dataclass
class StreamResponse:
    status: int
    headers: tuple[tuple[str, str], ...]
    events: list[StreamEvent] = field(default_factory=list)


def reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return _REASONS.get(status, "Unknown")


def json_body(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def json_response(
    status: int,
    value: Any,
    headers: Iterable[tuple[str, str]] = (),
    *,
    close: bool = False,
    content_type: str = "application/json",
) -> Response:
    return Response(status, (("content-type", content_type), *headers), json_body(value), close)


def request_id(prefix: str = "") -> str:
    return prefix + uuid.uuid4().hex[:24]


def aws_request_id() -> str:
    """An `x-amzn-RequestId`: a UUID, as AWS services send it."""
    return str(uuid.uuid4())


def _has(headers: Iterable[tuple[str, str]], name: str) -> bool:
    return any(k.lower() == name for k, _ in headers)


def encode_head(status: int, headers: Iterable[tuple[str, str]], *, length: int | None, close: bool) -> bytes:
    """Status line and headers; adds date, content-length (or chunked) and connection."""
    headers = list(headers)
    title = any(name[:1].isupper() for name, _ in headers)  # a server that writes `Server:` writes `Date:`

    def name_of(lower: str) -> str:
        return "-".join(p.capitalize() for p in lower.split("-")) if title else lower

    lines = [f"HTTP/1.1 {status} {reason(status)}"]
    if not _has(headers, "date"):
        lines.append(f"{name_of('date')}: {formatdate(usegmt=True)}")
    for name, value in headers:
        if name.lower() in ("content-length", "transfer-encoding", "connection"):
            continue
        if name.lower() == "date" and not value:
            value = formatdate(usegmt=True)
        lines.append(f"{name}: {value}")
    lines.append(
        f"{name_of('content-length')}: {length}"
        if length is not None
        else f"{name_of('transfer-encoding')}: chunked"
    )
    lines.append(f"{name_of('connection')}: {'close' if close else 'keep-alive'}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def encode_response(response: Response, *, close: bool) -> bytes:
    return (
        encode_head(response.status, response.headers, length=len(response.body), close=close) + response.body
    )


def encode_chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode("ascii") + data + b"\r\n" if data else b""


LAST_CHUNK = b"0\r\n\r\n"


def set_linger_zero(sock: socket.socket | Any) -> None:
    """Make close() send RST instead of FIN (SO_LINGER on, timeout 0): the peer sees ECONNRESET."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except (OSError, AttributeError):
        pass
