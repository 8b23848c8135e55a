"""The proxy on a thread of its own, for a front end that owns the main thread (the live view).

    proxy = BackgroundProxy(options, settings, cap=None)
    proxy.events.subscribe(callback)        # called on the proxy's thread: hand each event over, do no work
    url = proxy.start("127.0.0.1", 8788)    # OSError when the port cannot be had
    ...
    proxy.stop()                            # idempotent: the listener closed, the runfile withdrawn

The proxy's event loop never waits for the front end: a slow screen cannot slow the traffic.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from pathlib import Path
from typing import Any

from app.config import Settings
from app.proxy import runfile
from app.proxy.proxy_session import ProxySession
from app.proxy.records import ProxyEvents
from app.proxy.server import ProxyOptions, ProxyServer
from app.proxy.upstream import make_client
from app.state import State
from app.store import Store

START_TIMEOUT = 30.0  # seconds to bind the port and to stop (closing connections included)


class BackgroundProxy:
    def __init__(self, options: ProxyOptions, settings: Settings, *, cap: int | None = None) -> None:
        self.options, self.settings, self.cap = options, settings, cap
        self.events = ProxyEvents()
        self.url = ""
        self.store: Store | None = None
        self.session: ProxySession | None = None
        self.server: ProxyServer | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._announced: Path | None = None
        self._stopped = False

    @property
    def running(self) -> bool:
        return self.server is not None and not self._stopped

    def start(self, host: str, port: int) -> str:
        self.store = Store()
        self.session = ProxySession(
            self.store, State(), label=self.options.upstream.label, configured_cap=self.cap
        )
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="bulkhead-proxy", daemon=True)
        self._thread.start()
        self.server = ProxyServer(
            self.options,
            self.session,
            client=make_client(self.options.upstream, self.settings, self.options.idle_timeout),
            events=self.events,
        )
        try:
            self.url = self._call(self.server.start(host, port))
        except OSError:
            self.server = None
            self._close()
            raise
        self._announced = runfile.announce(
            {
                "pid": os.getpid(),
                "url": self.url,
                "session_id": self.session.id,
                "upstream": self.options.upstream.label,
                "modes": list(self.options.modes),
                "started_at": self.session.started_at,
            }
        )
        return self.url

    def status(self) -> dict[str, Any]:
        """What `bulkhead proxy status` shows (counts and the caps in force), read on the proxy's thread."""
        if self.server is None or self._loop is None or self._stopped:
            return {}
        server = self.server

        async def read() -> dict[str, Any]:
            return server.status()

        status: dict[str, Any] = self._call(read())
        return status

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        if self._announced is not None:
            runfile.withdraw(self._announced)
        if self.server is not None:
            with contextlib.suppress(Exception):  # stopping must finish: the process is leaving
                self._call(self.server.stop())
        self._close()

    def _call(self, coroutine: Any) -> Any:
        assert self._loop is not None
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(START_TIMEOUT)

    def _close(self) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            if self._thread is not None:
                self._thread.join(START_TIMEOUT)
            if not self._loop.is_running():
                self._loop.close()
        if self.session is not None:
            self.session.close()
        if self.store is not None:
            self.store.close()
