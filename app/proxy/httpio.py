"""The proxy's inbound HTTP/1.1: request heads with their headers as sent (order and case kept), request
bodies as a stream of pieces (Content-Length or chunked), and responses written as they come.

Stdlib asyncio streams only. The proxy sets no body limit of its own: a body is never held whole here.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from email.utils import formatdate
from http import HTTPStatus
from urllib.parse import unquote

MAX_HEAD_BYTES = 1024 * 1024  # a request line and headers larger than this get 431
READ_PIECE = 256 * 1024
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-connection",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)


class BadRequest(ValueError):
    """A request head or body framing that does not parse (the client gets a 400 and the connection ends)."""


@dataclass(frozen=True)
class Head:
    """A request head: method, target, version and the headers as sent (names' case and order kept)."""

    method: str
    target: str
    version: str
    headers: tuple[tuple[str, str], ...]
    size: int  # bytes of the head as received

    def get(self, name: str, default: str = "") -> str:
        """The last value of header `name` (case-insensitive)."""
        found = default
        for key, value in self.headers:
            if key.lower() == name:
                found = value
        return found

    @property
    def path(self) -> str:
        return unquote(self.target.split("?", 1)[0])

    @property
    def content_length(self) -> int | None:
        value = self.get("content-length")
        if not value:
            return None
        try:
            length = int(value.strip())
        except ValueError:
            raise BadRequest(f"bad Content-Length {value[:40]!r}") from None
        if length < 0:
            raise BadRequest(f"bad Content-Length {value[:40]!r}")
        return length

    @property
    def chunked(self) -> bool:
        return "chunked" in self.get("transfer-encoding").lower()

    @property
    def has_body(self) -> bool:
        return self.chunked or bool(self.content_length)

    @property
    def keep_alive(self) -> bool:
        connection = self.get("connection").lower()
        if self.version == "HTTP/1.0":
            return "keep-alive" in connection
        return "close" not in connection

    def forwarded_headers(self) -> list[tuple[str, str]]:
        """The headers to send upstream: all but hop-by-hop ones and Host (the upstream's own goes)."""
        named_by_connection = {
            token.strip().lower() for token in self.get("connection").split(",") if token.strip()
        }
        return [
            (key, value)
            for key, value in self.headers
            if key.lower() not in HOP_BY_HOP
            and key.lower() != "host"
            and key.lower() not in named_by_connection
        ]


def parse_head(data: bytes) -> Head:
    text = data.decode("latin-1")
    lines = text.split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise BadRequest(f"bad request line {lines[0][:80]!r}")
    headers: list[tuple[str, str]] = []
    for line in lines[1:]:
        if not line:
            continue
        name, sep, value = line.partition(":")
        if not sep or not name.strip() or name != name.strip():
            raise BadRequest(f"bad header line {line[:80]!r}")
        headers.append((name, value.strip()))
    return Head(parts[0].upper(), parts[1], parts[2], tuple(headers), len(data) + 4)


async def read_head(reader: asyncio.StreamReader) -> Head | None:
    """The next request head on a connection, or None when the client closed it between requests."""
    try:
        raw = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as exc:
        if not exc.partial.strip():
            return None
        raise BadRequest("the connection ended inside a request head") from None
    except asyncio.LimitOverrunError:
        raise HeadTooLarge from None
    return parse_head(raw[:-4])


class HeadTooLarge(BadRequest):
    def __init__(self) -> None:
        super().__init__(f"request head over {MAX_HEAD_BYTES:,} bytes")


async def body_pieces(head: Head, reader: asyncio.StreamReader) -> AsyncIterator[bytes]:
    """The request body as it arrives (de-chunked when the client sent it chunked)."""
    if head.chunked:
        while True:
            line = await reader.readuntil(b"\r\n")
            try:
                size = int(line.split(b";")[0].strip(), 16)
            except ValueError:
                raise BadRequest(f"bad chunk size {line[:20]!r}") from None
            if size == 0:
                while (await reader.readuntil(b"\r\n")) != b"\r\n":  # trailers: read and dropped
                    pass
                return
            left = size
            while left:
                piece = await reader.read(min(READ_PIECE, left))
                if not piece:
                    raise asyncio.IncompleteReadError(b"", left)
                left -= len(piece)
                yield piece
            await reader.readexactly(2)
        return
    left = head.content_length or 0
    while left:
        piece = await reader.read(min(READ_PIECE, left))
        if not piece:
            raise asyncio.IncompleteReadError(b"", left)
        left -= len(piece)
        yield piece


def reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return {529: "Site Overloaded", 524: "A Timeout Occurred"}.get(status, "Unknown")


def encode_head(
    status: int,
    headers: Iterable[tuple[str, str]],
    *,
    length: int | None,
    keep_alive: bool,
    status_text: str | None = None,
) -> bytes:
    """A response head: the given headers (hop-by-hop and framing ones replaced by ours), then
    Content-Length or chunked framing and Connection."""
    lines = [f"HTTP/1.1 {status} {status_text or reason(status)}"]
    has_date = False
    for name, value in headers:
        lower = name.lower()
        if lower in HOP_BY_HOP or lower == "content-length":
            continue
        has_date = has_date or lower == "date"
        lines.append(f"{name}: {value}")
    if not has_date:
        lines.append(f"date: {formatdate(usegmt=True)}")
    lines.append(f"content-length: {length}" if length is not None else "transfer-encoding: chunked")
    lines.append(f"connection: {'keep-alive' if keep_alive else 'close'}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1", "replace")


def encode_chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode("ascii") + data + b"\r\n" if data else b""


LAST_CHUNK = b"0\r\n\r\n"
