"""`bulkhead proxy`'s live view (issue 42, item 6), driven with Pilot: the proxy on its own thread in
front of a real nginx (client_max_body_size 64k) in front of the lab, the official `anthropic` and `openai`
SDKs as its clients.

    SDK → bulkhead proxy (live view) → nginx (64 KB) → lab
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import pty
import re
import signal
import socket
import struct
import subprocess
import sys
import termios
import threading
from pathlib import Path

import anthropic
import httpx2 as httpx
import openai
import pytest

from app.config import load_settings
from app.engine.caps import learned_cap_for
from app.proxy import runfile
from app.proxy.background import ProxyProcess
from app.proxy.records import Action
from app.proxy.server import ProxyOptions
from app.proxy.upstream import from_url
from app.proxy.wire import Wire
from app.sizes import format_size
from app.state import State
from app.ui.proxy_detail import start_text
from app.ui.proxy_feed import Forwarder
from app.ui.proxy_view import ProxyApp

from .conftest import WAIT, free_port_number, wait_for

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.nginx
KEY = "sk-ant-api03-tui-FAKEKEY-0123456789abcdefXYZ"
OPENAI_KEY = "sk-proj-tui-FAKEKEY-0123456789abcdefXYZ"
MODEL = "lab-1"
SIZE = (200, 50)


def live_view(upstream_url: str, **modes: bool) -> ProxyApp:
    options = ProxyOptions(upstream=from_url(upstream_url), **modes)
    proxy = ProxyProcess(options, load_settings())
    forwarder = Forwarder()
    proxy.events.subscribe(forwarder)
    url = proxy.start("127.0.0.1", 0)
    text = start_text(
        url,
        upstream=options.upstream.label,
        served=options.upstream.served,
        modes=options.modes,
        session_id=proxy.session_id,
    )
    return ProxyApp(proxy, forwarder, start_text=text)


def screen_text(app: ProxyApp) -> str:
    """What the terminal shows, line by line (the compositor's strips, as tests/ui read them)."""
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


async def until(pilot, predicate, what: str) -> None:
    """Poll (letting the app run) until `predicate()` holds."""
    for _ in range(int(WAIT / 0.05)):
        if predicate():
            return
        await pilot.pause(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def refused(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(2)
        return sock.connect_ex(("127.0.0.1", port)) != 0


def all_done(app: ProxyApp) -> bool:
    return all(record.latency_ms is not None for record in app.list.records.values())


def word(n: int) -> str:
    return "word " * (n // 5)


async def test_the_live_view_lists_requests_learns_the_cap_redacts_the_key_and_stops(lab, nginx):
    app = live_view(nginx.url, translate=True)
    url = app.proxy.url
    port = int(url.rsplit(":", 1)[1])
    ours = [info for info in runfile.running() if info["url"] == url]
    assert ours, "a running live view announces itself to `bulkhead proxy status`"
    claude = anthropic.Anthropic(base_url=url, api_key=KEY, max_retries=0, timeout=30)
    gpt = openai.OpenAI(base_url=url + "/v1", api_key=OPENAI_KEY, max_retries=0, timeout=30)

    async with app.run_test(size=SIZE) as pilot:
        shown = screen_text(app)
        assert f"export ANTHROPIC_BASE_URL={url}" in shown  # the start screen: what to paste
        assert f"export OPENAI_BASE_URL={url}/v1" in shown and "[model_providers.bulkhead]" in shown

        answer = await asyncio.to_thread(
            claude.messages.create, model=MODEL, max_tokens=32, messages=[{"role": "user", "content": "hi"}]
        )
        assert answer.content[0].text
        await asyncio.to_thread(
            gpt.chat.completions.create, model=MODEL, messages=[{"role": "user", "content": "hello"}]
        )
        with pytest.raises(anthropic.BadRequestError) as overflow:  # nginx's 413 page, translated
            await asyncio.to_thread(
                claude.messages.create,
                model=MODEL,
                max_tokens=32,
                messages=[{"role": "user", "content": word(100_000)}],
            )
        assert "prompt is too long" in str(overflow.value)

        await until(pilot, lambda: len(app.list.records) == 3 and all_done(app), "three finished rows")
        rows = list(app.list.records.values())
        assert [r.client.split()[0] for r in rows] == [
            "anthropic-python",
            "openai-python",
            "anthropic-python",
        ]
        assert [r.action for r in rows] == [Action.PASSED, Action.PASSED, Action.TRANSLATED]
        cells = [[str(cell) for cell in app.list.get_row(r.id)] for r in rows]
        assert cells[0][1:4] == ["200", "", "passed"] and cells[1][1:4] == ["200", "", "passed"]
        assert cells[2][1] == "413→400" and cells[2][2].startswith("payload_too_large")
        assert cells[2][3] == "translated" and "POST /v1/messages" in cells[2][7]
        assert cells[1][8] == "openai-chat" and cells[0][9] == MODEL

        # the inspector's own panels, fed the same records
        await until(pilot, lambda: len(app.inspector.requests.records) == 3, "the Requests panel's rows")
        assert app.inspector.requests.records[rows[2].id]["kind"] == "payload_too_large"
        learned = learned_cap_for(rows[2].sent_bytes)
        assert app.inspector.payload.cap_bytes == learned
        assert app.inspector.payload.context_tokens, [
            r.usage for r in rows
        ]  # the last answered prompt's tokens, as the lab counted
        await until(pilot, lambda: app.counters.counters.input_tokens > 0, "the Cost panel's tokens")
        assert "input" in app.inspector.cost.values and app.inspector.cost.values["requests"].startswith(
            "3 ·"
        )
        assert app.counters.counters.requests == 3 and app.counters.counters.rejections == {
            "payload_too_large": 1
        }
        app.inspector.show_panel("caps")
        await pilot.pause()
        on_screen = re.compile(
            rf"cap\s+{re.escape(format_size(learned))} · learned \d\d:\d\d:\d\d from a refusal"
        )
        await until(pilot, lambda: on_screen.search(screen_text(app)), "the learned cap in the Caps panel")

        # select the first request: its record, headers redacted, never the key
        app.list.focus()
        await pilot.press("up", "up")
        await until(pilot, lambda: f"Request {rows[0].id}" in app.detail_shown, "the first record")
        assert re.search(
            r"\n  (x-api-key|authorization): \[redacted\]\n", app.detail_shown
        )  # the SDK's key header
        assert KEY not in app.detail_shown and KEY[-20:] not in app.detail_shown
        assert '"content": "hi"' in app.detail_shown  # the body's preview, read from the store
        assert all(record.body is None for record in app.list.records.values())  # bodies are not held
        await pilot.press("down", "down")
        await until(pilot, lambda: f"Request {rows[2].id}" in app.detail_shown, "the refused record")
        assert "overflow error" in app.detail_shown and "nginx" in app.detail_shown
        app.inspector.show_panel("requests")
        await pilot.pause()
        shown = screen_text(app)
        for secret in (KEY, OPENAI_KEY, KEY[-20:], OPENAI_KEY[-20:]):
            assert secret not in shown
        await pilot.press(
            "right_square_bracket"
        )  # the view's keys step the inspector's tabs, wherever the focus is
        assert app.inspector.active_tab == "caps"
        await pilot.press("left_square_bracket", "left_square_bracket")
        assert app.inspector.active_tab == "cost"

        await pilot.press("q")
        await until(pilot, lambda: not app.is_running or app.proxy.running is False, "the proxy to stop")
    assert not app.proxy.running and refused(port)
    assert not [info for info in runfile.running() if info["url"] == url]


async def test_early_reject_is_a_row_and_the_proxy_answers_while_the_screen_is_busy(lab, nginx):
    app = live_view(nginx.url, translate=True, early_reject=True)
    url = app.proxy.url
    gpt = openai.OpenAI(base_url=url + "/v1", api_key=OPENAI_KEY, max_retries=0, timeout=30)

    async with app.run_test(size=SIZE) as pilot:
        # The SDK calls run ON the UI's event loop and block it: the proxy answers all the same (its own
        # thread), and the rows arrive once the screen gets its loop back.
        with pytest.raises(openai.BadRequestError) as overflow:
            gpt.responses.create(model=MODEL, input=word(100_000))
        assert overflow.value.code == "context_length_exceeded"
        with pytest.raises(openai.BadRequestError) as early:  # over the learned cap: never sent
            gpt.responses.create(model=MODEL, input=word(80_000))
        assert early.value.code == "context_length_exceeded"
        stream = gpt.responses.create(model=MODEL, input="stream me", stream=True)
        assert [event.type for event in stream][-1] == "response.completed"
        evil = httpx.post(  # a User-Agent that would retitle the terminal and write its clipboard
            url + "/v1/chat/completions",
            json={"model": MODEL, "messages": [{"role": "user", "content": "hi"}]},
            headers={
                "authorization": f"Bearer {OPENAI_KEY}",
                "user-agent": "evil\x1b]0;pwned\x07\x1b]52;c;aGk=\x07",
            },
            timeout=30,
        )
        assert evil.status_code == 200

        await until(pilot, lambda: len(app.list.records) == 4 and all_done(app), "four finished rows")
        rows = list(app.list.records.values())
        assert [r.action for r in rows] == [
            Action.TRANSLATED,
            Action.REJECTED_EARLY,
            Action.PASSED,
            Action.PASSED,
        ]
        cells = [[str(cell) for cell in app.list.get_row(r.id)] for r in rows]
        assert cells[0][1] == "413→400" and cells[0][8] == "openai-responses"
        assert cells[1][1] == "—→400" and cells[1][3] == "rejected-early"
        assert cells[2][1] == "200" and rows[2].stream
        assert "\x1b" not in cells[3][6] and cells[3][6].startswith("evil\\x1b]0;pwned")  # shown, not obeyed
        assert "\x1b" not in screen_text(app) and "\x07" not in screen_text(app)
        await until(pilot, lambda: len(app.inspector.requests.records) == 4, "the Requests panel's rows")
        assert app.inspector.requests.records[rows[1].id]["kind"] == "rejected_early"

        app.list.focus()
        await pilot.press("up")  # the last request: escaped in the record too, the bearer token redacted
        await until(pilot, lambda: f"Request {rows[3].id}" not in app.detail_shown, "a record")
        await pilot.press("down")
        await until(pilot, lambda: f"Request {rows[3].id}" in app.detail_shown, "the last request")
        assert "user-agent: evil\\x1b]0;pwned" in app.detail_shown and "\x1b" not in app.detail_shown
        assert OPENAI_KEY not in app.detail_shown and "authorization: [redacted]" in app.detail_shown

        await pilot.press("ctrl+c")
        await until(pilot, lambda: not app.proxy.running, "the proxy to stop")
    assert refused(int(url.rsplit(":", 1)[1]))


def test_bulkhead_proxy_in_a_terminal_is_the_live_view_and_sigterm_stops_it(lab, isolated_home):
    """The real entry point in a pseudo-terminal: the live view draws, a request shows, SIGTERM stops the
    proxy cleanly (listener closed, runfile withdrawn, the closing line on the terminal)."""
    port = free_port_number()
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 45, 160, 0, 0))
    process = subprocess.Popen(
        [sys.executable, "-m", "app", "proxy", "--upstream", lab.url, "--port", str(port), "--translate"],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        cwd=REPO,
        env={**os.environ, "TERM": "xterm-256color"},
        start_new_session=True,
    )
    os.close(slave)
    screen = bytearray()

    def read() -> None:
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:
                return
            if not data:
                return
            screen.extend(data)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        wait_for(lambda: not refused(port), "the proxy to listen")
        wait_for(lambda: b"ANTHROPIC_BASE_URL" in screen, "the start screen")
        claude = anthropic.Anthropic(base_url=f"http://127.0.0.1:{port}", api_key=KEY, max_retries=0)
        claude.messages.create(model=MODEL, max_tokens=8, messages=[{"role": "user", "content": "hi"}])
        wait_for(lambda: b"anthropic-python" in screen, "the request's row")
        assert [info for info in runfile.running() if info["url"].endswith(f":{port}")]
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=WAIT) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=WAIT)
    reader.join(WAIT)
    os.close(master)
    shown = screen.decode("utf-8", "replace")
    assert "bulkhead proxy stopped after 1 requests" in shown and KEY not in shown
    assert refused(port) and not list((isolated_home / "proxies").glob("*.json"))


async def test_a_proxy_process_that_dies_is_said_on_screen(lab):
    app = live_view(lab.url)
    async with app.run_test(size=SIZE) as pilot:
        app.proxy._process.kill()  # as the OOM killer would
        await until(pilot, lambda: app.gone, "the view to notice")
        assert "bulkhead proxy STOPPED on" in str(app.title_line.render())
        assert any("The proxy stopped on its own" in n.message for n in app._notifications)
        await pilot.press("q")
    assert app.return_code == 1 and app.return_value == 1
    app.proxy.stop()


async def test_a_cap_bulkhead_learned_before_shows_in_the_caps_panel_at_start(lab):
    endpoint = from_url(lab.url).endpoint_id(Wire.ANTHROPIC)
    State().learn_cap(
        endpoint,
        50_000,
        rejected_bytes=66_667,
        kind="payload_too_large",
        reason="413 from a bulkhead session",
    )
    app = live_view(lab.url)
    async with app.run_test(size=SIZE) as pilot:
        app.inspector.show_panel("caps")
        pattern = re.compile(rf"cap\s+{re.escape(format_size(50_000))} · learned")
        await until(pilot, lambda: pattern.search(screen_text(app)), "the shared cap in the Caps panel")
        await pilot.press("q")
