"""Running proxies announce themselves in `<data home>/proxies/<pid>.json` (removed when they stop), so
`bulkhead proxy status` finds them and asks each for its counts (`GET /_bulkhead/status`)."""

from __future__ import annotations

import contextlib
import json
import os
import urllib.request
from pathlib import Path
from typing import Any

from app.config import data_home
from app.fsutil import atomic_write
from app.lease import pid_alive

STATUS_TIMEOUT = 3.0  # seconds `bulkhead proxy status` waits for each proxy


def folder() -> Path:
    return data_home() / "proxies"


def announce(info: dict[str, Any]) -> Path:
    where = folder()
    where.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = where / f"{os.getpid()}.json"
    atomic_write(path, json.dumps(info), 0o600)
    return path


def announce_proxy(url: str, session: Any, options: Any) -> Path:
    """This process's announcement as a running proxy (`proxy status` reads it): where it listens, its
    session (`ProxySession`), its upstream and modes (`ProxyOptions`)."""
    return announce(
        {
            "pid": os.getpid(),
            "url": url,
            "session_id": session.id,
            "upstream": options.upstream.label,
            "modes": list(options.modes),
            "started_at": session.started_at,
        }
    )


def withdraw(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()


def running() -> list[dict[str, Any]]:
    """Each running proxy's announcement (stale files of dead processes are removed)."""
    found = []
    for path in sorted(folder().glob("*.json")) if folder().is_dir() else []:
        try:
            info = json.loads(path.read_text(encoding="utf-8"))
            pid = int(info["pid"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if not pid_alive(pid):
            withdraw(path)
            continue
        found.append(info)
    return found


def ask_status(url: str) -> dict[str, Any]:
    """A running proxy's status (raises OSError or ValueError when it does not answer)."""
    control = url.replace("://0.0.0.0:", "://127.0.0.1:").replace("://[::]:", "://[::1]:")
    request = urllib.request.Request(control + "/_bulkhead/status")
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # a local port: never via a proxy
    with opener.open(request, timeout=STATUS_TIMEOUT) as answer:
        data = json.loads(answer.read())
    if not isinstance(data, dict):
        raise ValueError("not a status object")
    return data
