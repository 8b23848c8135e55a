"""Issue 22 item 3 on the wire, for all three SDKs: after a rejection the next request goes on a new
connection. The server here does what Caddy did over TLS: it answers a big upload with 413 *before*
reading the body, keeps the connection open, then reads the rest of the body as a new request and
answers that with a stray 431 — on the same connection. A client that reuses the connection takes the
431 as the answer to its small retry (and bulkhead once learned a 7 KB cap from it)."""

from __future__ import annotations

import asyncio
import json
import socket
import threading

import pytest

from app.config import Route, Settings
from app.providers.base import ProviderError
from app.providers.factory import make_provider

LIMIT = 100_000
OK_BODY = json.dumps(
    {"input_tokens": 1, "inputTokens": 1, "id": "x", "object": "chat.completion", "choices": [], "model": "m"}
).encode()


def _reply(status: int, reason: str, body: bytes, content_type: str = "application/json") -> bytes:
    return (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: {content_type}\r\ncontent-length: {len(body)}\r\n\r\n".encode()
        + body
    )


class StrayReplyServer:
    """Keep-alive HTTP/1.1 server: bodies over LIMIT get 413 unread, then a stray 431 for the rest."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.connections: list[int] = []  # the client port of each request, in order
        self.statuses: list[int] = []
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.sock.close()

    def _accept(self) -> None:
        while True:
            try:
                conn, peer = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn, peer[1]), daemon=True).start()

    def _serve(self, conn: socket.socket, port: int) -> None:
        conn.settimeout(10)
        reader = conn.makefile("rb")
        try:
            while True:
                line = reader.readline(65536)
                if not line:
                    return
                headers = {}
                while (header := reader.readline(65536)) not in (b"\r\n", b"\n", b""):
                    name, _, value = header.decode("latin-1").partition(":")
                    headers[name.strip().lower()] = value.strip()
                declared = int(headers.get("content-length", "0"))
                self.connections.append(port)
                if declared > LIMIT:
                    self.statuses.append(413)
                    conn.sendall(
                        _reply(413, "Request Entity Too Large", b"request body too large", "text/plain")
                    )
                    reader.read(declared)  # the rest of the body, read as the next "request"…
                    conn.sendall(
                        _reply(431, "Request Header Fields Too Large", b"", "text/plain")
                    )  # …answered
                    continue
                reader.read(declared)
                self.statuses.append(200)
                conn.sendall(_reply(200, "OK", OK_BODY))
        except OSError:
            return
        finally:
            conn.close()


@pytest.fixture
def server():
    s = StrayReplyServer()
    yield s
    s.stop()


@pytest.mark.parametrize("provider", ["anthropic", "openai", "bedrock"])
def test_a_rejected_upload_is_followed_by_a_retry_on_a_new_connection(server, monkeypatch, provider):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAFAKEFAKEFAKEFAKE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "fake-secret")
    where = {
        "anthropic": {"base_url": server.url},
        "openai": {"base_url": f"{server.url}/v1"},
        "bedrock": {"endpoint_url": server.url, "region": "us-east-1"},
    }[provider]
    route = Route(name="t", provider=provider, model="m", **where)
    adapter = make_provider(route, Settings(request_timeout=20.0), "sk-FAKE")

    async def run():
        try:
            with pytest.raises(ProviderError) as rejected:
                await adapter.probe(300_000)
            assert rejected.value.status == 413
            return await adapter.probe(2_000)
        finally:
            await adapter.aclose()

    reply = asyncio.run(run())

    assert reply.status == 200  # not the stray 431 left on the rejected connection
    assert server.statuses == [413, 200]
    assert server.connections[1] != server.connections[0]
