"""`bulkhead proxy` without --headless: the proxy in its own process, the live view on the terminal.

The proxy is started before the screen is drawn, so a port that cannot be had is said on the terminal;
it is stopped when the view quits (q, Ctrl+C), on SIGTERM, and if the view fails.
"""

from __future__ import annotations

import contextlib
import signal
import sys
from typing import Any

from app.proxy.texts import bind_warning

EXIT_OK, EXIT_ERROR = 0, 1


def run(args: Any) -> int:
    """`bulkhead proxy`: the live view in a terminal; status, --headless and no terminal as the command does."""
    from app.commands.proxy_cmd import serve_unless_live

    outcome = serve_unless_live(args)
    return outcome if isinstance(outcome, int) else run_live(outcome)


def run_live(prepared: Any) -> int:
    """`prepared`: app.proxy.serve.Prepared."""
    from app.proxy.background import ProxyProcess
    from app.ui.proxy_detail import start_text
    from app.ui.proxy_feed import Forwarder
    from app.ui.proxy_view import ProxyApp

    proxy = ProxyProcess(prepared.options, prepared.settings, cap=prepared.cap)
    forwarder = Forwarder()
    proxy.events.subscribe(forwarder)
    print("bulkhead proxy: starting…", flush=True)
    try:
        url = proxy.start(prepared.address, prepared.port)
    except OSError as exc:
        print(f"bulkhead proxy: {exc}", file=sys.stderr)
        return EXIT_ERROR
    session_id = proxy.session_id
    text = start_text(
        url,
        upstream=prepared.options.upstream.label,
        served=prepared.options.upstream.served,
        modes=prepared.options.modes,
        session_id=session_id,
        bind_warning=bind_warning(prepared.address, int(url.rsplit(":", 1)[1])) if prepared.warn else "",
    )
    app = ProxyApp(proxy, forwarder, start_text=text)
    previous = signal.getsignal(signal.SIGTERM)

    def on_term(signum: int, frame: Any) -> None:
        loop = getattr(app, "_loop", None)
        if loop is not None:
            loop.call_soon_threadsafe(app.action_stop)

    with contextlib.suppress(ValueError):  # not the main thread (a test): no signal handler
        signal.signal(signal.SIGTERM, on_term)
    note = ""
    try:
        code = app.run()
        note = proxy.exit_note
    finally:
        proxy.stop()
        with contextlib.suppress(ValueError, TypeError):
            signal.signal(signal.SIGTERM, previous)
    if note:
        print(f"bulkhead proxy: {note}; its records are kept (session {session_id})", file=sys.stderr)
        return EXIT_ERROR
    counts = int(proxy.final_counts.get("requests") or 0)
    print(f"bulkhead proxy stopped after {counts:,} requests (session {session_id})")
    return int(code or 0)
