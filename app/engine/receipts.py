"""Compaction receipts: one JSON line per compaction in the session folder's `compaction.jsonl`.

Every compaction (manual, budget, preflight, recovery) leaves a receipt (DESIGN.md §8) so one
can ask later whether compaction saves enough, which trigger fires most, whether the single
retry usually works. Writes are serialised across threads (a lock) and processes (`flock` on the
file); the file is 0600. Logging is best effort: a failed write returns False and never raises —
a broken receipt must not block recovery from an already-failing request.
"""

from __future__ import annotations

import fcntl
import json
import os
import threading
import time
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from app.redact import redact_value

RECEIPTS_FILE = "compaction.jsonl"
OUTCOMES = ("applied", "skipped", "failed")
BYTES_PER_TOKEN = 4

_lock = threading.Lock()


def estimate_tokens(n_bytes: int | None) -> int | None:
    return None if n_bytes is None else (int(n_bytes) + BYTES_PER_TOKEN - 1) // BYTES_PER_TOKEN


def make_receipt(
    *,
    trigger: str,
    method: str,
    level: int,
    messages_before: int,
    messages_after: int,
    bytes_before: int,
    bytes_after: int,
    outcome: str,
    elapsed_seconds: float,
    archive_keys: Iterable[str] = (),
    provider_bytes_before: int | None = None,
    provider_bytes_after: int | None = None,
    tokens_before: int | None = None,
    tokens_after: int | None = None,
    retry_success: bool | None = None,
    timestamp: float | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """The receipt record, with DESIGN.md §8's fields (tokens estimated as bytes / 4 when not given).

    `retry_success` is None when no retry followed (planned compaction). Extra keyword fields
    (e.g. `session_id`, `attempt`, `reason`) are added as they are.
    """
    when = time.time() if timestamp is None else timestamp
    record: dict[str, Any] = {
        "timestamp": datetime.fromtimestamp(when, UTC)
        .isoformat(timespec="milliseconds")
        .replace("+00:00", "Z"),
        "trigger": trigger,
        "method": method,
        "level": level,
        "messages": {"before": messages_before, "after": messages_after},
        "bytes": {"before": bytes_before, "after": bytes_after},
        "tokens": {
            "before_estimated": tokens_before if tokens_before is not None else estimate_tokens(bytes_before),
            "after_estimated": tokens_after if tokens_after is not None else estimate_tokens(bytes_after),
        },
        "provider_bytes": {"before": provider_bytes_before, "after": provider_bytes_after},
        "archive_keys": list(dict.fromkeys(archive_keys)),
        "elapsed_seconds": round(float(elapsed_seconds), 6),
        "retry_success": retry_success,
        "outcome": outcome,
    }
    record.update(extra)
    return record


def write_receipt(path: Path, record: dict[str, Any]) -> bool:
    """Append `record` as one JSON line to `path` (or `path/compaction.jsonl` for a folder).

    Returns True when the line was written whole; False on any failure (never raises).
    """
    try:
        target = Path(path)
        if target.is_dir():
            target = target / RECEIPTS_FILE
        line = (
            json.dumps(redact_value(record), ensure_ascii=False, default=str, separators=(",", ":")) + "\n"
        ).encode()
        with _lock:
            if not target.parent.exists():
                target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                try:
                    view = memoryview(line)
                    while view:
                        written = os.write(fd, view)
                        view = view[written:]
                finally:
                    fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)
        return True
    except Exception:  # best effort by contract: a receipt never breaks a compaction
        return False


def read_receipts(path: Path) -> list[dict[str, Any]]:
    """Every receipt in the file (lines that are not JSON objects are skipped)."""
    target = Path(path)
    if target.is_dir():
        target = target / RECEIPTS_FILE
    records: list[dict[str, Any]] = []
    try:
        text = target.read_text(encoding="utf-8")
    except OSError:
        return records
    for line in text.splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            records.append(value)
    return records
