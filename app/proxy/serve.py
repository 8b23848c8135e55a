"""Running the proxy in the foreground from the command line: settings → upstream → session → server,
the start-up text, one line per request, until Ctrl+C or SIGTERM."""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import signal
import sys
from dataclasses import dataclass
from typing import Any

from app.config import ConfigError, Settings, load_settings
from app.proxy import runfile
from app.proxy.native_errors import DEFAULT_STYLE, OverflowStyle
from app.proxy.records import CapLearned, ProxyEvent, RequestFinished
from app.proxy.texts import banner, bind_warning, log_line, status_lines
from app.proxy.upstream import Upstream, from_route, from_url, parse_header
from app.proxy.wire import Wire
from app.sizes import SizeError, format_size, parse_size

EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2
LOOPBACK = ("127.0.0.1", "::1", "localhost")


def upstream_from(args: Any, settings: Settings) -> Upstream:
    headers = [parse_header(text) for text in getattr(args, "header", None) or []]
    from app.redact import register_secret

    for _, value in headers:  # a gateway token given here is a secret like any key
        register_secret(value, "proxy --header")
    if getattr(args, "upstream", None):
        return from_url(args.upstream, headers)
    route_name = getattr(args, "proxy_route", None)
    if route_name or settings.routes:
        try:
            return from_route(settings.route(route_name), headers)
        except ConfigError as exc:
            if route_name:
                raise
            raise ConfigError(f"{exc} — or give the proxy --upstream URL / --route NAME") from None
    raise ConfigError(
        "bulkhead proxy needs an upstream: --upstream URL (e.g. https://llm-gw.corp.example) or --route NAME "
        "(a route in config.toml)"
    )


def _bind(args: Any) -> tuple[str, str]:
    """(address, warning): 127.0.0.1 unless --bind names another (then a warning says what that means)."""
    address = (getattr(args, "bind", None) or "127.0.0.1").strip()
    if address in LOOPBACK:
        return address, ""
    try:
        ipaddress.ip_address(address)
    except ValueError:
        raise ConfigError(f"--bind {address!r} is not an IP address (e.g. --bind 0.0.0.0)") from None
    return address, "pending"


@dataclass(frozen=True)
class Prepared:
    """Everything a run of the proxy needs, read from the command line and config.toml."""

    options: Any  # app.proxy.server.ProxyOptions
    settings: Settings
    address: str
    port: int
    cap: int | None
    warn: str  # non-empty: --bind named an address other than loopback


def prepare(args: Any) -> Prepared:
    """Settings, upstream, modes and where to listen (a ConfigError names what is wrong)."""
    settings = load_settings()
    upstream = upstream_from(args, settings)
    try:
        cap = parse_size(args.cap) if getattr(args, "cap", None) else None
    except SizeError as exc:
        raise ConfigError(f"--cap: {exc}") from None
    address, warn = _bind(args)
    port = args.proxy_port if getattr(args, "proxy_port", None) is not None else settings.proxy_port
    style = OverflowStyle(getattr(args, "anthropic_error", None) or settings.proxy_anthropic_error)
    from app.proxy.server import ProxyOptions

    options = ProxyOptions(
        upstream=upstream,
        translate=bool(args.translate or args.early_reject or args.shrink),
        early_reject=bool(args.early_reject),
        shrink=bool(args.shrink),
        styles={**DEFAULT_STYLE, Wire.ANTHROPIC: style},
        idle_timeout=settings.proxy_idle_timeout,
        keep_body_bytes=settings.proxy_record_body_max,
    )
    return Prepared(options, settings, address, port, cap, warn)


def serve_from_args(args: Any) -> int:
    """--headless: the start-up text, then one line per request on stdout, until Ctrl+C or SIGTERM."""
    return serve_headless(prepare(args))


def serve_headless(prepared: Prepared) -> int:
    try:
        return asyncio.run(
            _serve(
                prepared.options,
                prepared.settings,
                prepared.address,
                prepared.port,
                prepared.cap,
                prepared.warn,
            )
        )
    except KeyboardInterrupt:
        return EXIT_OK


async def _serve(
    options: Any, settings: Settings, address: str, port: int, cap: int | None, warn: str
) -> int:
    from app.proxy.proxy_session import ProxySession
    from app.proxy.records import ProxyEvents
    from app.proxy.server import ProxyServer
    from app.proxy.upstream import make_client
    from app.state import State
    from app.store import Store

    store = Store()
    session = ProxySession(store, State(), label=options.upstream.label, configured_cap=cap)
    events = ProxyEvents()
    events.subscribe(print_events)
    server = ProxyServer(
        options, session, client=make_client(options.upstream, settings, options.idle_timeout), events=events
    )
    try:
        url = await server.start(address, port)
    except OSError as exc:
        print(f"bulkhead proxy: cannot listen on {address}:{port}: {exc.strerror or exc}", file=sys.stderr)
        session.close()
        store.close()
        return EXIT_ERROR
    bound_port = int(url.rsplit(":", 1)[1])
    print(
        banner(
            url,
            upstream=options.upstream.label,
            served=options.upstream.served,
            modes=options.modes,
            session_id=session.id,
            bind_warning=bind_warning(address, bound_port) if warn else "",
        ),
        flush=True,
    )
    announced = runfile.announce_proxy(url, session, options)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        runfile.withdraw(announced)
        await server.stop()
        session.close()
        store.close()
    counts = session.counts
    print(f"bulkhead proxy stopped after {counts.requests:,} requests (session {session.id})", flush=True)
    return EXIT_OK


def print_events(event: ProxyEvent) -> None:
    """--headless: one line per request, one per cap learned."""
    if isinstance(event, RequestFinished):
        print(log_line(event.record), flush=True)
    elif isinstance(event, CapLearned):
        print(
            f"  cap learned for {event.endpoint}: {format_size(event.cap_bytes)} "
            f"(¾ of the {format_size(event.rejected_bytes)} refused; shared with bulkhead's routes there)",
            flush=True,
        )


def print_status(*, as_json: bool) -> int:
    """`bulkhead proxy status`: each running proxy's status, or a line saying none runs."""
    import json

    found = []
    for info in runfile.running():
        try:
            found.append(runfile.ask_status(str(info["url"])))
        except (OSError, ValueError) as exc:
            found.append({**info, "error": f"did not answer: {exc}"})
    if as_json:
        print(json.dumps(found, indent=2))
        return EXIT_OK
    if not found:
        print("no bulkhead proxy is running (start one with `bulkhead proxy --upstream URL --headless`)")
        return EXIT_OK
    for index, status in enumerate(found):
        if index:
            print()
        if status.get("error"):
            print(f"bulkhead proxy {status.get('url')} (pid {status.get('pid')}): {status['error']}")
            continue
        print("\n".join(status_lines(status)))
    return EXIT_OK
