"""The lab in-process: a daemon thread with its own event loop, on a free loopback port.

    with start_embedded_lab(gateway="nginx", cap="128KB") as lab:
        client = anthropic.Anthropic(base_url=lab.url, api_key="lab")
        ...
        lab.configure(faults="429@1")
        lab.requests()   # what the lab received, newest last

The `lab` provider starts one when no route is configured; tests start one per module.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from app.lab.config import LabConfig
from app.lab.server import LabServer

__all__ = ["LabConfig", "LabHandle", "start_embedded_lab"]

T = TypeVar("T")
_TIMEOUT = 10.0


class LabHandle:
    """A running embedded lab. Thread-safe; `stop()` is idempotent; usable as a context manager."""

    def __init__(self, server: LabServer, loop: asyncio.AbstractEventLoop, thread: threading.Thread) -> None:
        self._server = server
        self._loop = loop
        self._thread = thread
        self._lock = threading.Lock()
        self._stopped = False
        self.url: str = server.url
        self.host: str = server.host or "127.0.0.1"
        self.port: int = server.port or 0

    def __repr__(self) -> str:
        return f"<LabHandle {self.url} {'stopped' if self._stopped else self._server.config.describe()}>"

    def _call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run `fn` on the lab's loop (where its state lives) and return its result."""
        if self._stopped:
            raise RuntimeError("the lab is stopped")
        future: concurrent.futures.Future[T] = concurrent.futures.Future()

        def run() -> None:
            try:
                future.set_result(fn(*args, **kwargs))
            except BaseException as exc:  # handed to the caller's thread
                future.set_exception(exc)

        self._loop.call_soon_threadsafe(run)
        return future.result(timeout=_TIMEOUT)

    @property
    def config(self) -> LabConfig:
        return self._call(lambda: self._server.config)

    def configure(self, **changes: Any) -> LabConfig:
        """Change settings (gateway, cap, window, faults, seed, slow_pause); raises ValueError on bad ones."""
        return self._call(self._server.configure, **changes)

    def requests(self) -> list[dict[str, Any]]:
        return self._call(self._server.requests)

    def clear_requests(self) -> int:
        return self._call(self._server.clear_requests)

    def clear_cache(self) -> None:
        self._call(self._server.clear_cache)

    def stop(self) -> None:
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
        try:
            asyncio.run_coroutine_threadsafe(self._server.stop(), self._loop).result(timeout=_TIMEOUT)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=_TIMEOUT)
            if not self._thread.is_alive():
                self._loop.close()

    def __enter__(self) -> LabHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_embedded_lab(
    *,
    gateway: str = "none",
    cap: int | str | None = None,
    window: int | None = None,
    faults: str | None = None,
    seed: int = 0,
    host: str = "127.0.0.1",
    port: int = 0,
    config: LabConfig | None = None,
    on_request: Callable[[dict[str, Any]], None] | None = None,
) -> LabHandle:
    """Start a lab in a daemon thread and return once it listens. `cap`: bytes (int) or a size ("128KB").

    `config` (a LabConfig) replaces the individual settings; `on_request` is called on the lab's thread
    with each request record. Port 0 picks a free port (see `LabHandle.url`).
    """
    config = config or LabConfig(gateway=gateway, cap=cap, window=window, faults=faults, seed=seed)
    server = LabServer(config, on_request=on_request)
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name=f"bulkhead-lab-{id(server):x}", daemon=True)
    thread.start()
    try:
        asyncio.run_coroutine_threadsafe(server.start(host, port), loop).result(timeout=_TIMEOUT)
    except BaseException:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=_TIMEOUT)
        loop.close()
        raise
    return LabHandle(server, loop, thread)
