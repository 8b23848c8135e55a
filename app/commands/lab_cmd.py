"""`bulkhead lab`: run the gateway simulator and lab model in the foreground until Ctrl+C (or SIGTERM)."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from typing import Any

from app.lab.config import LabConfig
from app.sizes import SizeError, format_size

EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2


def banner(url: str, config: LabConfig) -> str:
    """The start-up text: where the lab listens and how to point bulkhead and the SDKs at it."""
    return "\n".join(
        [
            f"bulkhead lab listening on {url} · {config.describe()}",
            "",
            "Point bulkhead at it (config.toml; any API key is accepted, e.g. ANTHROPIC_API_KEY=lab):",
            "  [routes.lab]",
            '  provider = "anthropic"',
            '  model = "lab-1"',
            f'  base_url = "{url}"',
            "The SDKs, through their environment:",
            f"  anthropic: ANTHROPIC_BASE_URL={url} ANTHROPIC_API_KEY=lab",
            f"  openai:    OPENAI_BASE_URL={url}/v1 OPENAI_API_KEY=lab",
            f"  bedrock:   AWS_ENDPOINT_URL_BEDROCK_RUNTIME={url} AWS_ACCESS_KEY_ID=lab AWS_SECRET_ACCESS_KEY=lab "
            "AWS_REGION=us-east-1",
            f'Change settings live: curl -X POST {url}/_lab/config -d \'{{"gateway": "nginx", "cap": "128KB"}}\'; '
            f"see what arrived: {url}/_lab/requests",
            "Ctrl+C stops.",
        ]
    )


def log_line(record: dict[str, Any]) -> str:
    """`11:09:20  POST /v1/messages  12.4 KB  passed 200`."""
    clock = str(record.get("time", ""))[11:19]
    status = record.get("status")
    extra = f"  ≈{record['input_tokens']:,} tok" if record.get("input_tokens") is not None else ""
    return (
        f"{clock}  {record.get('method', '?')} {record.get('path', '?')}  {format_size(record.get('bytes', 0))}  "
        f"{record.get('verdict', '?')} {status if status is not None else '-'}{extra}"
    )


def _config_from(args: Any) -> LabConfig:
    return LabConfig(
        gateway=args.gateway, cap=args.cap, window=args.window, faults=args.faults, seed=args.seed
    )


async def _serve(config: LabConfig, host: str, port: int) -> int:
    from app.lab.server import LabServer

    def on_request(record: dict[str, Any]) -> None:
        print(log_line(record), flush=True)

    server = LabServer(config, on_request=on_request)
    try:
        url = await server.start(host, port)
    except OSError as exc:
        print(f"bulkhead lab: cannot listen on {host}:{port}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_ERROR
    print(banner(url, config), flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        await server.stop()
    print("bulkhead lab stopped", flush=True)
    return EXIT_OK


def run(args: Any) -> int:
    try:
        config = _config_from(args)
    except (SizeError, ValueError) as exc:
        print(f"bulkhead lab: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        return asyncio.run(_serve(config, args.host, args.port))
    except KeyboardInterrupt:
        print("bulkhead lab stopped", flush=True)
        return EXIT_OK
