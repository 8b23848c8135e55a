"""What `bulkhead proxy` prints: the start-up text (what to paste into each client), one line per request
(--headless) and `bulkhead proxy status`. Pure functions of what they are given."""

from __future__ import annotations

import time
from typing import Any

from app.proxy.records import Action, ProxyRecord
from app.sizes import format_size
from app.textsafe import display_line

MODE_WORDS = {
    "observe": "observe — nothing is changed, every exchange is recorded",
    "translate": "translate — a size refusal becomes the client's own overflow error",
    "early-reject": "early reject — a request over the learned cap is answered without sending it",
    "shrink": "shrink — a request over the learned cap is rewritten to fit (stable stubs, originals archived)",
}


def banner(
    url: str,
    *,
    upstream: str,
    served: tuple[str, ...],
    modes: tuple[str, ...],
    session_id: str,
    bind_warning: str = "",
) -> str:
    lines = [f"bulkhead proxy on {url} → {upstream}"]
    lines += [f"  mode: {MODE_WORDS.get(mode, mode)}" for mode in modes]
    lines.append(f"  records: session {session_id} (bulkhead sessions export {session_id} --format har)")
    if bind_warning:
        lines += ["", bind_warning]
    if "anthropic" in served:
        lines += [
            "",
            "Claude Code (and the Anthropic SDKs) — in the shell that starts it:",
            f"  export ANTHROPIC_BASE_URL={url}",
        ]
    if "openai" in served:
        lines += [
            "",
            "Codex — in ~/.codex/config.toml (your OPENAI_API_KEY passes through):",
            '  model_provider = "bulkhead"',
            "  [model_providers.bulkhead]",
            '  name = "bulkhead proxy"',
            f'  base_url = "{url}/v1"',
            '  wire_api = "responses"',
            '  env_key = "OPENAI_API_KEY"',
            "",
            "The OpenAI SDKs (and other OpenAI-compatible clients):",
            f"  export OPENAI_BASE_URL={url}/v1",
        ]
    lines += ["", "Your API key passes through to the upstream untouched; it is never stored. Ctrl+C stops."]
    return "\n".join(lines)


def bind_warning(address: str, port: int) -> str:
    return (
        f"warning: listening on {address}:{port}, not 127.0.0.1 — anyone who can reach this address can "
        f"send requests through this proxy (with their own key) and their requests are recorded in your "
        f"data folder. Use a firewall, or leave out --bind."
    )


def log_line(record: ProxyRecord) -> str:
    """`11:09:20  Claude Code 2.1.197  POST /v1/messages  74.4 KB → 413 nginx, sent 400 prompt too long  1.2 s`."""
    clock = time.strftime("%H:%M:%S", time.localtime(record.started_at))
    size = format_size(record.request_bytes) if record.request_bytes is not None else "?"
    if record.sent_bytes is not None and record.sent_bytes != record.request_bytes:
        size += f" (sent {format_size(record.sent_bytes)})"
    upstream = str(record.status) if record.status is not None else "no answer"
    outcome = upstream
    if record.action is Action.TRANSLATED:
        outcome = f"{upstream} {record.kind} → {record.client_status} translated"
    elif record.action is Action.CONTENT_BLOCKED:
        outcome = f"{upstream} content block → {record.client_status}"
    elif record.action is Action.REJECTED_EARLY:
        outcome = f"not sent (over the cap) → {record.client_status}"
    elif record.action is Action.UNREACHABLE:
        outcome = f"unreachable → {record.client_status}"
    elif record.action is Action.RESENT:
        outcome = f"{upstream} {record.kind} → shrunk and sent again"
    elif record.action is Action.DROPPED:
        outcome = f"dropped ({record.kind})"
    elif record.kind:
        outcome = f"{upstream} {record.kind}"
    latency = f"{(record.latency_ms or 0) / 1000:.1f} s"
    extra = f"  [{'; '.join(record.notes)}]" if record.notes else ""
    return display_line(
        f"{clock}  {record.client}  {record.method} {record.path.split('?', 1)[0]}  {size} → {outcome}  "
        f"{latency}{extra}"
    )


def status_lines(status: dict[str, Any]) -> list[str]:
    counts = status.get("counts") or {}
    started = time.strftime("%Y-%m-%d %H:%M", time.localtime(float(status.get("started_at") or 0)))
    lines = [
        f"bulkhead proxy {status.get('url')} (pid {status.get('pid')}) → {status.get('upstream')}",
        f"  modes: {', '.join(status.get('modes') or [])} · since {started} · session {status.get('session_id')}",
        f"  requests: {counts.get('requests', 0):,} · from clients {format_size(counts.get('bytes_in', 0))}"
        f" · sent upstream {format_size(counts.get('bytes_up', 0))}",
    ]
    for title, key in (("by outcome", "by_action"), ("by kind", "by_kind"), ("by client", "by_client")):
        table = counts.get(key) or {}
        if table:
            lines.append(f"  {title}: " + ", ".join(f"{name} {n}" for name, n in sorted(table.items())))
    for endpoint, cap in (status.get("caps") or {}).items():
        size = format_size(cap.get("cap_bytes")) if cap.get("cap_bytes") else "none known"
        lines.append(f"  cap for {endpoint}: {size} ({cap.get('detail', '')})")
    if status.get("store_write_errors"):
        lines.append(f"  ⚠ {status['store_write_errors']} records could not be saved (disk full?)")
    return [display_line(line) for line in lines]
