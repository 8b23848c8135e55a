"""The proxy in a process of its own, for a front end that owns the terminal (the live view).

    proxy = ProxyProcess(options, settings, cap=None)
    proxy.events.subscribe(callback)        # called on a reader thread: hand each event over, do no work
    url = proxy.start("127.0.0.1", 8788)    # OSError when the port cannot be had
    proxy.status()                          # what `bulkhead proxy status` shows (asked over HTTP)
    proxy.stop()                            # idempotent: listener and connections closed, runfile withdrawn

Why a process and not a thread: drawing the screen holds the interpreter, and a proxy on a thread of
the same process waits for it (measured: a small request's median went from 2.5 ms to 20 ms while the
view drew 100 requests a second). In its own process the proxy never waits for the screen; the events
come over a pipe (records without their bodies: the store keeps the preview), written by a thread of
the proxy's process so a slow reader never blocks the traffic either. The store is the same SQLite
file (WAL): the proxy writes its records, the front end reads them.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import multiprocessing
import queue
import signal
import threading
from typing import Any

from app.config import Settings
from app.proxy.records import ProxyEvent, ProxyEvents, ProxyStopped, RequestFinished, RequestStarted

START_TIMEOUT = 60.0  # seconds for the process to start and bind (it imports the app first)
STOP_TIMEOUT = 30.0  # seconds to close the listener and open connections


class ProxyProcess:
    def __init__(self, options: Any, settings: Settings, *, cap: int | None = None) -> None:
        """`options`: app.proxy.server.ProxyOptions."""
        self.options, self.settings, self.cap = options, settings, cap
        self.events = ProxyEvents()
        self.url = ""
        self.session_id = ""
        self.store: Any = None  # app.store.Store: the proxy's records, read by the panels
        self.final_counts: dict[str, Any] = {}
        self._process: Any = None
        self._control: Any = None
        self._reader: threading.Thread | None = None
        self._stopped = False

    @property
    def exit_note(self) -> str:
        """Why the proxy's process is gone when nobody stopped it ("" while it runs or after `stop`)."""
        if self._process is None or self._stopped or self._process.is_alive():
            return ""
        return f"the proxy's process ended (exit code {self._process.exitcode})"

    @property
    def running(self) -> bool:
        return self._process is not None and not self._stopped and self._process.is_alive()

    def start(self, host: str, port: int) -> str:
        from app.redact import known_secrets

        context = multiprocessing.get_context("spawn")  # a clean interpreter: no thread or lock of ours
        events_in, events_out = context.Pipe(duplex=False)
        control_in, control_out = context.Pipe(duplex=False)
        secrets = list(known_secrets())  # a gateway token given with --header stays redacted there too
        self._process = context.Process(
            target=child_main,
            args=(self.options, self.settings, self.cap, host, port, events_out, control_in, secrets),
            name="bulkhead-proxy",
            daemon=True,
        )
        self._process.start()
        events_out.close()
        control_in.close()
        self._control = control_out
        while True:  # the proxy's own ProxyStarted comes before the word that it listens
            if not events_in.poll(START_TIMEOUT):
                self._abandon()
                raise OSError(f"the proxy process did not start within {START_TIMEOUT:.0f} s")
            try:
                first = events_in.recv()
            except EOFError:
                self._abandon()
                raise OSError(
                    f"the proxy process ended at start (exit code {self._process.exitcode})"
                ) from None
            if not isinstance(first, tuple):
                self.events.emit(first)
                continue
            if first[0] == "error":
                self._abandon()
                raise OSError(first[1])
            break
        _, self.url, self.session_id = first
        from app.store import Store

        self.store = Store()
        self._reader = threading.Thread(
            target=self._read, args=(events_in,), name="bulkhead-proxy-events", daemon=True
        )
        self._reader.start()
        return self.url

    def _read(self, pipe: Any) -> None:
        stopped = False
        while True:
            try:
                message = pipe.recv()
            except (EOFError, OSError):
                if not stopped:  # the process ended without saying so: the front end must know
                    self.events.emit(ProxyStopped(self.session_id))
                return
            if isinstance(message, ProxyStopped):
                stopped = True
            if isinstance(message, tuple) and message and message[0] == "stopped":
                self.final_counts = message[1]
                continue
            self.events.emit(message)

    def status(self) -> dict[str, Any]:
        """What `bulkhead proxy status` shows (counts, caps), asked of the proxy; {} when it does not answer."""
        if not self.running:
            return {}
        from app.proxy.runfile import ask_status

        try:
            return ask_status(self.url)
        except (OSError, ValueError):
            return {}

    def stop(self) -> None:
        if self._stopped or self._process is None:
            return
        self._stopped = True
        with contextlib.suppress(OSError, ValueError):
            self._control.send("stop")
        self._process.join(STOP_TIMEOUT)
        if self._process.is_alive():
            self._process.terminate()
            self._process.join(STOP_TIMEOUT)
        if self._reader is not None:
            self._reader.join(STOP_TIMEOUT)
        if self.store is not None:
            self.store.close()

    def _abandon(self) -> None:
        self._stopped = True
        if self._process is not None:
            self._process.join(STOP_TIMEOUT)
            if self._process.is_alive():
                self._process.terminate()


# -- the proxy's process ----------------------------------------------------------------------------------
def portable(event: ProxyEvent) -> ProxyEvent:
    """`event` as it is now, for the pipe: a record without its body (the store keeps the preview)."""
    if isinstance(event, RequestStarted | RequestFinished):
        return type(event)(dataclasses.replace(event.record, body=None))
    return event


def child_main(
    options: Any,
    settings: Settings,
    cap: int | None,
    host: str,
    port: int,
    events_out: Any,
    control_in: Any,
    secrets: list[str],
) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the front end decides when the proxy stops
    from app.redact import register_secret

    for value in secrets:
        register_secret(value, "proxy")
    asyncio.run(_serve(options, settings, cap, host, port, events_out, control_in))


async def _serve(
    options: Any,
    settings: Settings,
    cap: int | None,
    host: str,
    port: int,
    events_out: Any,
    control_in: Any,
) -> None:
    from app.proxy import runfile
    from app.proxy.proxy_session import ProxySession
    from app.proxy.server import ProxyServer
    from app.proxy.upstream import make_client
    from app.state import State
    from app.store import Store

    outbox: queue.SimpleQueue[Any] = queue.SimpleQueue()

    def send() -> None:  # the pipe may block when the front end is slow: never on the proxy's loop
        while True:
            item = outbox.get()
            if item is None:
                return
            try:
                events_out.send(item)
            except (OSError, ValueError):
                return  # the front end is gone; the proxy stops on its own (the control pipe ends)

    sender = threading.Thread(target=send, name="bulkhead-proxy-sender", daemon=True)
    sender.start()
    store = Store()
    session = ProxySession(store, State(), label=options.upstream.label, configured_cap=cap)
    events = ProxyEvents()
    events.subscribe(lambda event: outbox.put(portable(event)))
    server = ProxyServer(
        options, session, client=make_client(options.upstream, settings, options.idle_timeout), events=events
    )
    try:
        url = await server.start(host, port)
    except OSError as exc:
        outbox.put(("error", f"cannot listen on {host}:{port}: {exc.strerror or exc}"))
        outbox.put(None)
        sender.join(STOP_TIMEOUT)
        session.close()
        store.close()
        return
    announced = runfile.announce_proxy(url, session, options)
    outbox.put(("started", url, session.id))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    with contextlib.suppress(NotImplementedError, RuntimeError):
        loop.add_signal_handler(signal.SIGTERM, stop.set)

    def watch() -> None:  # "stop", or the front end gone (the pipe ends): either way, stop
        with contextlib.suppress(EOFError, OSError):
            control_in.recv()
        loop.call_soon_threadsafe(stop.set)

    threading.Thread(target=watch, name="bulkhead-proxy-control", daemon=True).start()
    try:
        await stop.wait()
    finally:
        runfile.withdraw(announced)
        await server.stop()
        session.close()
        store.close()
        outbox.put(("stopped", session.counts.to_dict()))
        outbox.put(None)
        sender.join(STOP_TIMEOUT)
