"""Benchmark: does the live view slow the proxy? Small requests back to back through `bulkhead proxy`,
headless and with the live view drawing every one of them (headless Textual, as `run_test` drives it).

    python3 bench/proxy_live_view.py            # 300 requests each way
    python3 bench/proxy_live_view.py --quick    # 50

The client is another process (as Claude Code or Codex would be), one keep-alive httpx connection; the
proxy is `app.proxy.background.ProxyProcess` in both runs (its own process, recording every exchange in
a temporary BULKHEAD_HOME), in front of `bulkhead lab` (a process too) on 127.0.0.1. Medians and p95.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
BODY = b'{"model":"lab-1","max_tokens":8,"messages":[{"role":"user","content":"hi"}]}'
HEADERS = {"x-api-key": "sk-ant-bench-0123456789", "anthropic-version": "2023-06-01"}
CLIENT = """
import json, sys, time
import httpx2 as httpx
url, n, body, headers = sys.argv[1], int(sys.argv[2]), sys.argv[3].encode(), json.loads(sys.argv[4])
headers["content-type"] = "application/json"
times = []
with httpx.Client(timeout=30) as client:
    client.post(url + "/v1/messages", content=body, headers=headers).read()
    for _ in range(n):
        start = time.perf_counter()
        client.post(url + "/v1/messages", content=body, headers=headers).read()
        times.append((time.perf_counter() - start) * 1000)
print(json.dumps(times))
"""


def fire(url: str, n: int) -> list[float]:
    """`n` requests from another process; each one's milliseconds."""
    out = subprocess.run(
        [sys.executable, "-c", CLIENT, url, str(n), BODY.decode(), json.dumps(HEADERS)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [float(t) for t in json.loads(out)]


def summary(label: str, times: list[float]) -> str:
    ordered = sorted(times)
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    return f"{label:<10} median {statistics.median(times):5.1f} ms · p95 {p95:5.1f} ms over {len(times)}"


@contextlib.contextmanager
def lab_process() -> Iterator[str]:
    """`bulkhead lab` in a process of its own (in this one it would wait for the screen too)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    lab = subprocess.Popen(
        [sys.executable, "-m", "app", "lab", "--port", str(port)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}"
    finally:
        lab.terminate()
        lab.wait(10)


def main() -> None:
    n = 50 if "--quick" in sys.argv else 300
    home = tempfile.mkdtemp(prefix="bulkhead-bench-")
    os.environ["BULKHEAD_HOME"] = home
    (Path(home) / "config.toml").touch()
    os.environ["BULKHEAD_CONFIG"] = str(Path(home) / "config.toml")

    from app.config import load_settings
    from app.proxy.background import ProxyProcess
    from app.proxy.server import ProxyOptions
    from app.proxy.upstream import from_url
    from app.ui.proxy_feed import Forwarder
    from app.ui.proxy_view import ProxyApp

    with lab_process() as lab_url:

        def started() -> tuple[ProxyProcess, Forwarder, str]:
            proxy = ProxyProcess(ProxyOptions(upstream=from_url(lab_url)), load_settings())
            forwarder = Forwarder()
            proxy.events.subscribe(forwarder)
            return proxy, forwarder, proxy.start("127.0.0.1", 0)

        proxy, _, url = started()
        print(summary("headless", fire(url, n)))
        proxy.stop()

        async def live() -> None:
            proxy, forwarder, url = started()
            app = ProxyApp(proxy, forwarder, start_text="bench")
            async with app.run_test(size=(170, 48)) as pilot:
                times = await asyncio.to_thread(fire, url, n)
                answered = time.perf_counter()
                while len(app.list.records) < n + 1 or any(
                    r.latency_ms is None for r in app.list.records.values()
                ):
                    await pilot.pause(0.01)
                behind = (time.perf_counter() - answered) * 1000
                print(
                    summary("live view", times) + f" · last row drawn {behind:.0f} ms after the last answer"
                )
                await pilot.press("q")
            proxy.stop()

        asyncio.run(live())


if __name__ == "__main__":  # the proxy's process is spawned: it imports this module again
    main()
