"""A minimal HTTP forward proxy, the kind corporate networks put in front of everything.

It takes absolute-form requests (`POST http://host:port/path HTTP/1.1`), one per connection,
relays each to its origin with `Connection: close` and streams the answer back as it comes
(so SSE and event streams pass through). With `credentials`, it answers 407 to any request
without the matching `Proxy-Authorization: Basic …`, as an authenticating proxy does.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
from dataclasses import dataclass, field
from urllib.parse import urlsplit

HOP_BY_HOP = ("connection:", "keep-alive:", "proxy-authorization:", "proxy-connection:")


@dataclass
class ForwardProxy:
    credentials: str | None = None  # "user:password"
    seen: list[tuple[str, str, bool]] = field(default_factory=list)  # (method, target, authorized)
    url: str = ""
    _server: asyncio.AbstractServer | None = None

    async def start(self) -> ForwardProxy:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        return self

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    def _authorized(self, headers: list[str]) -> bool:
        if self.credentials is None:
            return True
        expected = "basic " + base64.b64encode(self.credentials.encode()).decode().lower()
        return any(
            line.lower().startswith("proxy-authorization:")
            and line.split(":", 1)[1].strip().lower() == expected
            for line in headers
        )

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
            request_line, *headers = [line for line in head.split("\r\n") if line]
            method, target, version = request_line.split(" ")
            length = next(
                (
                    int(line.split(":", 1)[1])
                    for line in headers
                    if line.lower().startswith("content-length:")
                ),
                0,
            )
            body = await reader.readexactly(length)
            authorized = self._authorized(headers)
            self.seen.append((method, target, authorized))
            if not authorized:
                page = b"<html><body><h1>Proxy login needed</h1></body></html>"
                writer.write(
                    b"HTTP/1.1 407 Proxy Authentication Required\r\n"
                    b'Proxy-Authenticate: Basic realm="corp"\r\nContent-Type: text/html\r\n'
                    + f"Content-Length: {len(page)}\r\nConnection: close\r\n\r\n".encode()
                    + page
                )
                await writer.drain()
                return
            origin = urlsplit(target)
            up_reader, up_writer = await asyncio.open_connection(origin.hostname, origin.port or 80)
            path = origin.path + (f"?{origin.query}" if origin.query else "")
            kept = [line for line in headers if not line.lower().startswith(HOP_BY_HOP)]
            up_writer.write(
                f"{method} {path} {version}\r\n".encode("latin-1")
                + "".join(f"{line}\r\n" for line in [*kept, "Connection: close"]).encode("latin-1")
                + b"\r\n"
                + body
            )
            await up_writer.drain()
            while chunk := await up_reader.read(65536):
                writer.write(chunk)
                await writer.drain()
            up_writer.close()
        except (asyncio.IncompleteReadError, ConnectionError, ValueError):
            pass
        finally:
            with contextlib.suppress(ConnectionError):
                writer.close()
