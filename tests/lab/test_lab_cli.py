"""`bulkhead lab` as a real process: it starts, says where it listens, serves, logs, and stops on a signal."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import anthropic
import pytest

from app.commands.lab_cmd import banner, log_line
from app.lab.config import LabConfig

REPO = Path(__file__).resolve().parents[2]


def wait_healthy(url: str, proc: subprocess.Popen, deadline_s: float = 20.0) -> dict:
    """Poll /_lab/health until it answers, the process dies, or the deadline passes.

    Between polls it waits on the process's stdout (the banner is printed once the port listens), not on a timer.
    """
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"bulkhead lab exited early with {proc.returncode}: {proc.stderr.read()}")
        try:
            with urllib.request.urlopen(url + "/_lab/health", timeout=1) as response:
                return json.loads(response.read())
        except (urllib.error.URLError, ConnectionError):
            select.select([proc.stdout], [], [], 0.05)
    raise AssertionError("bulkhead lab did not become healthy in time")


def test_bulkhead_lab_runs_as_a_process(free_port):
    url = f"http://127.0.0.1:{free_port}"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "app",
            "lab",
            "--port",
            str(free_port),
            "--gateway",
            "nginx",
            "--cap",
            "8KB",
            "--window",
            "50000",
            "--faults",
            "500@2",
            "--seed",
            "5",
        ],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        health = wait_healthy(url, proc)
        assert health["config"]["gateway"] == "nginx" and health["config"]["cap"] == 8192
        client = anthropic.Anthropic(base_url=url, api_key="lab", max_retries=0, timeout=10)
        answer = client.messages.create(
            model="lab-1", max_tokens=100, messages=[{"role": "user", "content": "hi"}]
        )
        assert answer.content[0].text.startswith("Lab model · turn 1")
        with pytest.raises(anthropic.ContentTooLargeError):
            client.messages.create(
                model="lab-1", max_tokens=100, messages=[{"role": "user", "content": "x" * 9000}]
            )
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    lines = out.splitlines()
    assert lines[0] == (
        f"bulkhead lab listening on {url} · gateway nginx · cap 8.0 KB · window 50,000 tokens · "
        "faults 500@2 · seed 5"
    )
    assert '  provider = "anthropic"' in lines and f'  base_url = "{url}"' in lines
    assert any(f"OPENAI_BASE_URL={url}/v1" in line for line in lines)
    assert any(f"AWS_ENDPOINT_URL_BEDROCK_RUNTIME={url}" in line for line in lines)
    logged = [line for line in lines if " POST /v1/messages " in line]
    assert len(logged) == 2 and "passed 200" in logged[0] and "blocked:nginx-413 413" in logged[1]
    assert lines[-1] == "bulkhead lab stopped"


def test_bad_settings_are_a_usage_error(free_port):
    proc = subprocess.run(
        [sys.executable, "-m", "app", "lab", "--port", str(free_port), "--faults", "boom:1"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 2 and "unknown kind 'boom'" in proc.stderr


def test_banner_and_log_line_text():
    text = banner("http://127.0.0.1:8787", LabConfig())
    assert text.splitlines()[0] == (
        "bulkhead lab listening on http://127.0.0.1:8787 · gateway none · no cap · "
        "window 200,000 tokens · faults none · seed 0"
    )
    assert "[routes.lab]" in text and "Ctrl+C stops." in text
    line = log_line(
        {
            "time": "2026-01-02T03:04:05.678+00:00",
            "method": "POST",
            "path": "/v1/messages",
            "bytes": 12_700,
            "verdict": "reset",
            "status": None,
        }
    )
    assert line == "03:04:05  POST /v1/messages  12.4 KB  reset -"
