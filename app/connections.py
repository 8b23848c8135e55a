"""An asyncio TCP server that keeps track of its connections: the one mechanism under the lab's server
(`app.lab.server`) and `bulkhead proxy` (`app.proxy.server`).

    class MyServer(ConnectionServer):
        async def serve(self, reader, writer): ...      # one connection, until it ends
    host, port = await server.listen("127.0.0.1", 0, limit=64 * 1024)
    await server.stop_listening()                        # stops accepting, cancels and awaits every connection

A connection that breaks (reset, timeout, cancelled) ends quietly; a bug in `serve` is logged and ends only
that connection, never the server; the writer is always closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

log = logging.getLogger(__name__)
QUIET_ENDS = (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError, TimeoutError, OSError)


class ConnectionServer:
    name = "server"  # for the log line of a bug

    def __init__(self) -> None:
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[Any]] = set()

    async def listen(self, host: str, port: int, *, limit: int) -> tuple[str, int]:
        self._server = await asyncio.start_server(
            self._on_connection, host, port, limit=limit, reuse_address=True
        )
        bound_host, bound_port = self._server.sockets[0].getsockname()[:2]
        return bound_host, bound_port

    async def stop_listening(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.close()
        for task in list(self._connections):
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)
        if server is not None:
            await server.wait_closed()

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        raise NotImplementedError

    async def _on_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._connections.add(task)
        try:
            await self.serve(reader, writer)
        except QUIET_ENDS:
            pass
        except Exception:  # a bug must never take the server down
            log.exception("%s: unexpected error while serving a connection", self.name)
        finally:
            if task is not None:
                self._connections.discard(task)
            with contextlib.suppress(Exception):
                writer.close()
