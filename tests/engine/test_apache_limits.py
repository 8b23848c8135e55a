"""Issue 38 items 6 and 7 against the real Apache + ModSecurity (the lab variants: test_hops_lab.py).

- ModSecurity stops parsing a JSON body past its argument limit (1,000 values by default) and Apache
  answers with its stock HTML 400: bulkhead says it is the gateway, not the provider's validation error,
  and makes one attempt with fewer messages, which passes;
- Apache's `RequestReadTimeout` answers an upload too slow for it with its stock 408: bulkhead says a
  smaller request helps (not a longer request_timeout) and the smaller one passes. The upload is slowed
  by a throttling relay between bulkhead and Apache (a slow link), started by the test.

Debian's apache2, libapache2-mod-security2 and modsecurity-crs (installed by `.ci/run`): without them each
test skips, naming the package.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time

import pytest

from app.engine import prompts
from tests.engine.real_gateways import start_apache_modsecurity


def _records(h):
    return h.session.store.list_requests(h.session.id)


@pytest.fixture
def apache(lab, tmp_path):
    started = []

    def start(extra_config: str = ""):
        gateway = start_apache_modsecurity(tmp_path / f"apache{len(started)}", lab.port, 1, extra_config)
        started.append(gateway)
        return gateway

    yield start
    for gateway in started:
        gateway.stop()


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
async def test_modsecuritys_400_past_its_argument_limit_gets_one_attempt_with_fewer_messages(
    make_harness, apache, provider
):
    gateway = apache()
    base = f"{gateway.url}/v1" if provider == "openai" else gateway.url
    h = make_harness(provider, base_url=base, system=prompts.SYSTEM_PROMPT)
    for _ in range(300):  # 600 short messages: well over 1,000 JSON values in a body far under 128 KB
        h.grow(1, 30)

    result = await h.engine.submit("next")

    assert result.outcome == "answered", result.error
    first, second = _records(h)[:2]
    assert first["status"] == 400 and first["kind"] == "other", first
    assert first["actual_bytes"] < 128 * 1024  # not ModSecurity's body limit (that is a 413)
    assert "from a gateway, not the provider's JSON" in first["reason"]
    assert "SecArgumentsLimit" in first["reason"] and "one attempt with fewer messages" in first["reason"]
    assert any("JSON values ≥ 1,000" in line for line in first["evidence"]), first["evidence"]
    assert second["status"] == 200 and second["level"] == 2
    assert h.engine.state.learned_cap(h.engine.route.endpoint_id) is None  # not a byte cap
    assert h.sleeps == []


class ThrottledRelay:
    """A TCP relay that passes what the client sends at `rate` bytes a second (a slow uplink); answers come
    back at full speed."""

    CHUNK = 4096

    def __init__(self, upstream_port: int, rate: int) -> None:
        self.upstream_port, self.rate = upstream_port, rate
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.stopped = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://localhost:{self.port}"

    def _accept(self) -> None:
        while not self.stopped.is_set():
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
            threading.Thread(target=self._pipe, args=(client, upstream, True), daemon=True).start()
            threading.Thread(target=self._pipe, args=(upstream, client, False), daemon=True).start()

    def _pipe(self, source: socket.socket, target: socket.socket, throttled: bool) -> None:
        with contextlib.suppress(OSError):
            while True:
                data = source.recv(self.CHUNK)
                if not data:
                    break
                target.sendall(data)
                if throttled:
                    time.sleep(len(data) / self.rate)
        for sock in (source, target):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def stop(self) -> None:
        self.stopped.set()
        self.server.close()


READ_TIMEOUT = """LoadModule reqtimeout_module {modules}/mod_reqtimeout.so
RequestReadTimeout header=20 body=2,MinRate=500000"""
UPLINK_BYTES_PER_SECOND = 20_000  # Apache reads ~40 KB in its 2 s: the ~110 KB body never arrives in time


async def test_apaches_408_for_a_slow_upload_means_a_smaller_request(make_harness, apache):
    gateway = apache(READ_TIMEOUT)
    relay = ThrottledRelay(gateway.port, UPLINK_BYTES_PER_SECOND)
    try:
        h = make_harness("anthropic", base_url=relay.url, system=prompts.SYSTEM_PROMPT)
        h.grow(40, 1_200)  # ≈ 110 KB in 80 messages: under ModSecurity's 128 KB body limit (a 413 above)

        result = await h.engine.submit("and now?")

        assert result.outcome == "answered", result.error
        first, second = _records(h)[:2]
        assert first["status"] == 408 and first["kind"] == "timeout", first
        assert "a smaller request helps, raising request_timeout does not" in first["reason"]
        assert second["level"] == 2 and second["actual_bytes"] < first["actual_bytes"]
        assert second["status"] == 200, second  # fewer messages: up in time on the same slow link
        assert h.sleeps == []  # the same body is never sent again
    finally:
        relay.stop()
