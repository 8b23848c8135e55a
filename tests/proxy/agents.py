"""The real Claude Code and Codex CLIs, run offline for the proxy tests.

They are installed from npm into one folder (`.ci/run` does it; `BULKHEAD_AGENTS_NPM` names another):

    npm install --prefix /tmp/agents-npm @anthropic-ai/claude-code @openai/codex

A missing one is a `pytest.skip` that says how to install it. Each run gets its own HOME (and CODEX_HOME),
a minimal environment, and HTTP_PROXY/HTTPS_PROXY/ALL_PROXY pointed at `Refuser` — a local listener that
answers 403 to anything and records what was asked — with NO_PROXY=127.0.0.1,localhost, so the only
traffic that can succeed is to the lab, nginx and the proxy on 127.0.0.1. Tests assert the refuser saw
nothing. Claude Code also runs with CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1, DISABLE_TELEMETRY=1,
DISABLE_AUTOUPDATER=1; Codex with `--disable plugins -c analytics.enabled=false`.
"""

from __future__ import annotations

import os
import socket
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

AGENTS_NPM = Path(os.environ.get("BULKHEAD_AGENTS_NPM", "/tmp/agents-npm"))
RUN_TIMEOUT = 120.0  # seconds one CLI run may take (they take about one here)
INSTALL = (
    "npm install --prefix /tmp/agents-npm @anthropic-ai/claude-code @openai/codex "
    "(.ci/run does it; BULKHEAD_AGENTS_NPM names another folder)"
)


def agent(name: str, package: str) -> str:
    path = AGENTS_NPM / "node_modules" / ".bin" / name
    if not os.access(path, os.X_OK):
        reason = f"{package} is not installed in {AGENTS_NPM}: {INSTALL}"
        print(f"SKIPPED: {reason}")
        pytest.skip(reason)
    probe = subprocess.run([str(path), "--version"], capture_output=True, text=True, timeout=60)
    if probe.returncode != 0:
        pytest.skip(f"{package} at {path} does not run here: {probe.stderr.strip()[:200]}")
    return str(path)


class Refuser:
    """A local HTTP proxy that refuses everything and records the request line of each attempt."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(16)
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(5)
                try:
                    data = conn.recv(4096)
                    self.seen.append(data.split(b"\r\n", 1)[0].decode("latin-1"))
                    conn.sendall(b"HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                except OSError:
                    pass

    def close(self) -> None:
        self._sock.close()


@dataclass
class Run:
    code: int
    out: str
    err: str

    @property
    def text(self) -> str:
        return self.out + self.err


def _env(home: Path, refuser: Refuser, extra: dict[str, str]) -> dict[str, str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
    }
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        env[name] = refuser.url
    return {**env, **extra}


def claude(
    exe: str, base_url: str, prompt: str, *, home: Path, workdir: Path, refuser: Refuser, resume: bool = False
) -> Run:
    env = _env(
        home,
        refuser,
        {
            "ANTHROPIC_BASE_URL": base_url,
            "ANTHROPIC_API_KEY": "sk-ant-api03-offline-agent-test-0123456789",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_AUTOUPDATER": "1",
        },
    )
    args = [exe, "-p", prompt, "--model", "lab-1", "--tools", "Read"] + (["--continue"] if resume else [])
    done = subprocess.run(
        args,
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        stdin=subprocess.DEVNULL,
    )
    return Run(done.returncode, done.stdout, done.stderr)


def codex(
    exe: str, base_url: str, prompt: str, *, home: Path, workdir: Path, refuser: Refuser, resume: bool = False
) -> Run:
    codex_home = home / "codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    (codex_home / "config.toml").write_text(
        'model = "lab-1"\n'
        'model_provider = "bulkhead"\n'
        "[model_providers.bulkhead]\n"
        'name = "bulkhead proxy"\n'
        f'base_url = "{base_url}/v1"\n'
        'wire_api = "responses"\n'
        'env_key = "BULKHEAD_TEST_KEY"\n'
    )
    env = _env(
        home,
        refuser,
        {"CODEX_HOME": str(codex_home), "BULKHEAD_TEST_KEY": "sk-offline-agent-test-0123456789"},
    )
    args = [exe, "exec", "--skip-git-repo-check", "--disable", "plugins", "-c", "analytics.enabled=false"]
    args += ["resume", "--last", prompt] if resume else [prompt]
    done = subprocess.run(
        args,
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        stdin=subprocess.DEVNULL,
    )
    return Run(done.returncode, done.stdout, done.stderr)


def lines_file(path: Path, lines: int) -> Path:
    """A text file of `lines` numbered lines (about 97 bytes each)."""
    path.write_text(
        "".join(
            f"{path.name} line {i:05d}: the quick brown fox jumps over the lazy dog, again and again, to make it big.\n"
            for i in range(lines)
        )
    )
    return path
