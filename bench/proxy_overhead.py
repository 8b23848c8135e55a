"""Benchmark: what `bulkhead proxy` (observe mode) adds to a request, against the lab on 127.0.0.1.

    python3 bench/proxy_overhead.py            # 200 small requests, 5 × 8 MB bodies, direct and proxied
    python3 bench/proxy_overhead.py --quick    # 50 small requests, 2 × 8 MB bodies

Both paths use one keep-alive httpx client; the proxy runs in this process on its own thread, records
every exchange in a temporary BULKHEAD_HOME (SQLite), exactly as `bulkhead proxy` does. Medians.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main() -> None:
    quick = "--quick" in sys.argv
    small, large = (50, 2) if quick else (200, 5)
    os.environ["BULKHEAD_HOME"] = tempfile.mkdtemp(prefix="bulkhead-bench-")
    config = Path(os.environ["BULKHEAD_HOME"]) / "config.toml"
    config.touch()
    os.environ["BULKHEAD_CONFIG"] = str(config)

    import httpx2 as httpx

    from app.config import load_settings
    from app.lab.embedded import start_embedded_lab
    from app.proxy.proxy_session import ProxySession
    from app.proxy.server import ProxyOptions, ProxyServer
    from app.proxy.upstream import from_url, make_client
    from app.state import State
    from app.store import Store

    with start_embedded_lab() as lab:
        lab.configure(window="none")  # an 8 MB body is ≈2M tokens: no overflow here
        upstream = from_url(lab.url)
        store = Store()
        session = ProxySession(store, State(), label=lab.url)
        options = ProxyOptions(upstream=upstream)
        loop = asyncio.new_event_loop()
        threading.Thread(target=loop.run_forever, daemon=True).start()
        server = ProxyServer(options, session, client=make_client(upstream, load_settings(), 900.0))
        proxy_url = asyncio.run_coroutine_threadsafe(server.start("127.0.0.1", 0), loop).result(10)
        headers = {
            "x-api-key": "bench",
            "anthropic-version": "2023-06-01",
            "content-type": "application/json",
        }
        tiny = b'{"model":"lab-1","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}'
        filler = "x" * (8 * 1024 * 1024)
        heavy = (
            '{"model":"lab-1","max_tokens":16,"messages":[{"role":"user","content":"' + filler + '"}]}'
        ).encode()

        def timed(base: str, body: bytes, runs: int) -> list[float]:
            times = []
            with httpx.Client(timeout=120) as client:
                client.post(base + "/v1/messages", content=tiny, headers=headers)  # warm the connection
                for _ in range(runs):
                    start = time.perf_counter()
                    answer = client.post(base + "/v1/messages", content=body, headers=headers)
                    times.append(time.perf_counter() - start)
                    assert answer.status_code == 200, answer.text[:200]
            return times

        for label, body, runs in (("small request (78 B)", tiny, small), ("8 MB body", heavy, large)):
            direct = statistics.median(timed(lab.url, body, runs))
            proxied = statistics.median(timed(proxy_url, body, runs))
            print(
                f"{label:<22} direct {direct * 1000:8.2f} ms   through the proxy {proxied * 1000:8.2f} ms   "
                f"added {(proxied - direct) * 1000:7.2f} ms  ({runs} runs, medians)"
            )
        asyncio.run_coroutine_threadsafe(server.stop(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        session.close()
        store.close()


if __name__ == "__main__":
    main()
