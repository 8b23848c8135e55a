"""Proxy fixtures: the lab, a real nginx (client_max_body_size 64k) in front of it, and `bulkhead proxy`
in front of that — each on its own port, the proxy on a thread with its own event loop (the SDK calls in
the tests block)."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from app.config import load_settings
from app.lab.embedded import LabHandle
from app.proxy.proxy_session import ProxySession
from app.proxy.records import ProxyEvent, ProxyEvents, ProxyRecord, RequestFinished
from app.proxy.server import ProxyOptions, ProxyServer
from app.proxy.upstream import from_url, make_client
from app.state import State
from app.store import Store
from tests.engine.real_gateways import Gateway, start_nginx

NGINX_64K = """    server {
        listen 127.0.0.1:{port};
        client_max_body_size 64k;
        location / {
            proxy_pass http://127.0.0.1:{upstream};
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_buffering off;
            proxy_read_timeout 300s;
        }
    }"""
LIMIT = 64 * 1024
WAIT = 20.0  # seconds a helper waits for something the proxy does after answering


@pytest.fixture
def lab(lab_server: LabHandle) -> LabHandle:
    lab_server.configure(gateway="none", cap=None, window=None, faults=None, seed=0, slow_pause=0.25)
    lab_server.clear_requests()
    lab_server.clear_cache()
    return lab_server


@pytest.fixture(scope="module")
def nginx(lab_server: LabHandle, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    """A real nginx refusing bodies over 64 KB with its own HTML 413, streaming answers unbuffered."""
    gateway = start_nginx(tmp_path_factory.mktemp("nginx"), lab_server.port, NGINX_64K)
    yield gateway
    gateway.stop()


def nginx_refusals(gateway: Gateway) -> int:
    """How many bodies nginx has refused (its error log says so for each)."""
    log = Path(gateway.process.args[gateway.process.args.index("-p") + 1]) / "error.log"
    try:
        return log.read_text().count("client intended to send too large body")
    except OSError:
        return 0


class ProxyHandle:
    """`bulkhead proxy` on 127.0.0.1:<free port>, run on its own thread; its events are collected."""

    def __init__(self, upstream_url: str, headers: tuple[tuple[str, str], ...] = (), **options: Any) -> None:
        self.events: list[ProxyEvent] = []
        self.store = Store()
        settings = load_settings()
        upstream = from_url(upstream_url, headers)
        self.options = ProxyOptions(upstream=upstream, **options)
        self.session = ProxySession(self.store, State(), label=upstream.label)
        bus = ProxyEvents()
        bus.subscribe(self.events.append)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="bulkhead-proxy", daemon=True)
        self.thread.start()
        self.server = ProxyServer(
            self.options,
            self.session,
            client=make_client(upstream, settings, self.options.idle_timeout),
            events=bus,
        )
        self.url = asyncio.run_coroutine_threadsafe(self.server.start("127.0.0.1", 0), self.loop).result(WAIT)

    def records(self, count: int | None = None) -> list[ProxyRecord]:
        """The finished records, waiting (polling) until there are at least `count`."""
        deadline = time.monotonic() + WAIT
        while True:
            found = [e.record for e in list(self.events) if isinstance(e, RequestFinished)]
            if count is None or len(found) >= count or time.monotonic() > deadline:
                return found
            time.sleep(0.02)

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self.server.stop(), self.loop).result(WAIT)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(WAIT)
        self.session.close()
        self.store.close()


@pytest.fixture
def start_proxy() -> Iterator[Callable[..., ProxyHandle]]:
    started: list[ProxyHandle] = []

    def start(upstream_url: str, headers: tuple[tuple[str, str], ...] = (), **options: Any) -> ProxyHandle:
        handle = ProxyHandle(upstream_url, headers, **options)
        started.append(handle)
        return handle

    yield start
    for handle in started:
        handle.stop()


def free_port_number() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for(predicate: Callable[[], Any], what: str) -> Any:
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")
