"""`bulkhead proxy` as a user runs it: the start-up text says what to paste for each client, --headless
prints one line per request, `bulkhead proxy status` finds the running proxy and shows its counts and
caps, SIGTERM stops it cleanly; a missing upstream or a non-loopback bind is said plainly."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import anthropic
import pytest

REPO = Path(__file__).resolve().parents[2]
DEADLINE = 30.0


class Running:
    def __init__(self, *args: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "app", "proxy", *args],
            cwd=REPO,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.seen: list[str] = []

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))

    def until(self, text: str) -> str:
        deadline = time.monotonic() + DEADLINE
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.2)
            except queue.Empty:
                if self.process.poll() is not None:
                    break
                continue
            self.seen.append(line)
            if text in line:
                return line
        raise AssertionError(f"no line with {text!r}; saw {self.seen}; stderr {self._stderr()}")

    def _stderr(self) -> str:
        if self.process.poll() is None:
            return "(still running)"
        return self.process.stderr.read() if self.process.stderr else ""

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=DEADLINE)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait(timeout=DEADLINE)


def _bulkhead(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app", *args], cwd=REPO, capture_output=True, text=True, timeout=DEADLINE
    )


def test_start_paste_lines_a_line_per_request_status_and_stop(lab, isolated_home):
    proxy = Running("--upstream", lab.url, "--port", "0", "--headless", "--translate")
    try:
        first = proxy.until("bulkhead proxy on ")
        url = first.split(" on ", 1)[1].split(" → ", 1)[0]
        assert url.startswith("http://127.0.0.1:") and first.endswith(f"→ {lab.url}")
        proxy.until("Ctrl+C stops.")
        text = "\n".join(proxy.seen)
        for paste in (
            f"export ANTHROPIC_BASE_URL={url}",
            "[model_providers.bulkhead]",
            f'base_url = "{url}/v1"',
            'wire_api = "responses"',
            f"export OPENAI_BASE_URL={url}/v1",
        ):
            assert paste in text
        assert "mode: translate" in text

        client = anthropic.Anthropic(base_url=url, api_key="sk-ant-cli-test-0123456789", max_retries=0)
        client.messages.create(model="lab-1", max_tokens=8, messages=[{"role": "user", "content": "hi"}])
        line = proxy.until("anthropic-python")
        assert "POST /v1/messages" in line and "→ 200" in line

        status = _bulkhead("proxy", "status")
        assert status.returncode == 0, status.stderr
        assert f"bulkhead proxy {url}" in status.stdout and "requests: 1 " in status.stdout
        assert "anthropic-python" in status.stdout and "cap for anthropic " + lab.url in status.stdout
        listed = json.loads(_bulkhead("proxy", "status", "--json").stdout)
        assert listed[0]["counts"]["requests"] == 1 and listed[0]["modes"] == ["translate"]
    finally:
        code = proxy.stop()
    assert code == 0
    proxy.until("bulkhead proxy stopped after 1 requests")
    assert "no bulkhead proxy is running" in _bulkhead("proxy", "status").stdout
    assert not list((isolated_home / "proxies").glob("*.json"))


def test_a_proxy_needs_an_upstream_and_says_so():
    result = _bulkhead("proxy", "--headless")
    assert result.returncode == 2 and "--upstream URL" in result.stderr and "--route NAME" in result.stderr
    result = _bulkhead("proxy", "--upstream", "gw.corp.example")
    assert result.returncode == 2 and "is not an http(s) URL" in result.stderr


def test_another_bind_address_is_said_out_loud_and_no_flag_runs_headless(lab):
    proxy = Running("--upstream", lab.url, "--port", "0", "--bind", "0.0.0.0")
    try:
        warning = proxy.until("warning: listening on 0.0.0.0:")
        assert "anyone who can reach this address" in warning
        proxy.until("Ctrl+C stops.")
    finally:
        proxy.stop()
    assert "the live view beside the request list is not built yet" in proxy.process.stderr.read()
    bad = _bulkhead("proxy", "--upstream", lab.url, "--bind", "everywhere")
    assert bad.returncode == 2 and "is not an IP address" in bad.stderr


@pytest.fixture
def lab():
    from app.lab.embedded import start_embedded_lab

    with start_embedded_lab() as handle:
        yield handle
