"""One proxied request's record as plain text, for the live view's detail pane and the clipboard.

    text = record_report(record)        # blocking (it parses the body for its preview): call off the UI thread

What the client sent and what went upstream, the upstream's status and what the client got, what the proxy
did (translated, answered early, shrunk) and why — the same explanation the Requests panel gives — the
classifier's evidence, the headers (secrets redacted again here: `app.redact`; the client's key is never
held past the proxy's first look at it), the error body and a preview of the body. Every string came from
outside and is made safe to show (`app.textsafe`).
"""

from __future__ import annotations

import dataclasses
import time
from typing import TYPE_CHECKING, Any

from app.proxy.records import Action, ProxyRecord
from app.proxy.texts import banner
from app.redact import redact_text
from app.sizes import format_size
from app.textsafe import display, display_data
from app.ui.explain import decision, failure_of, header_lines

if TYPE_CHECKING:
    from app.engine.api.records import SessionRecords

TEXT_CHARS = 8_000  # of an error body or a body preview


def record_report(record: ProxyRecord, records: SessionRecords | None = None) -> str:
    """The whole record; the body's preview is read from the proxy session's `records`, where the proxy wrote
    it. Blocking: call it off the UI's thread."""
    row: dict[str, Any] = display_data(record.to_store())
    quick: ProxyRecord = display_data(dataclasses.replace(record, body=None))
    if not row.get("body_preview") and records is not None:
        row["body_preview"] = display(stored_preview(records, record.id))
    explanation = proxy_why(quick, row)
    sent = quick.sent_bytes
    lines = [
        f"{quick.method} {quick.path} · {quick.client} · {quick.wire}"
        + (f" · {quick.model}" if quick.model else ""),
        f"Request {quick.id} · {time.strftime('%H:%M:%S', time.localtime(quick.started_at))}",
    ]
    if quick.upstream_url:
        lines.append(f"Upstream: {quick.upstream_url}")
    size = f"Size: from the client {format_size(quick.request_bytes) if quick.request_bytes is not None else '—'}"
    if sent is None:
        size += ", nothing sent upstream"
    elif sent != quick.request_bytes:
        size += f", sent upstream {format_size(sent)}"
    if quick.cap_bytes:
        size += f" · cap {format_size(quick.cap_bytes)}"
    lines.append(size)
    upstream = "no answer" if quick.status is None else str(quick.status)
    latency = "—" if quick.latency_ms is None else f"{quick.latency_ms:.0f} ms"
    got = str(quick.client_status or "—")
    if quick.action is Action.RESENT:
        got = "the answer to the request sent again"
    lines.append(
        f"Status: upstream {upstream} · client got {got} · latency {latency}"
        + (" · streamed" if quick.stream else "")
    )
    lines.append(f"Proxy: {quick.action}" + (f" — {'; '.join(quick.notes)}" if quick.notes else ""))
    if quick.kind:
        lines.append(f"Kind: {quick.kind}" + (f" · cause {quick.cause}" if quick.cause else ""))
    if quick.incident:
        lines.append(f"Incident: {quick.incident}")
    if quick.usage:
        lines.append("Usage: " + ", ".join(f"{key} {value:,}" for key, value in sorted(quick.usage.items())))
    if explanation:
        lines += ["", f"Why: {explanation}"]
    if quick.evidence:
        lines += ["", "Evidence:"] + [f"  - {item}" for item in quick.evidence]
    for title, headers in (
        ("Request headers", quick.request_headers),
        ("Response headers", quick.response_headers),
    ):
        found = header_lines(headers)
        if found:
            lines += ["", f"{title}:"] + [f"  {line}" for line in found]
    if quick.error_body:
        lines += ["", "Error body:", _clip(quick.error_body)]
    if row.get("body_preview"):
        lines += ["", "Body preview:", _clip(row["body_preview"])]
    return display(redact_text("\n".join(lines)))


def refusal_text(row: dict[str, Any]) -> str:
    """What refused the request and why, as the classifier decided (reason, size, cause, hop, incident)."""
    failure = failure_of(row)
    text = failure.reason or failure.kind
    size = row.get("actual_bytes")
    if size and format_size(size) not in text:
        text += f", request {format_size(size)}"
    decided = decision(row)
    if decided.get("cause"):
        text += f". Cause: {decided['cause']}"
    hop = decided.get("hop")
    if isinstance(hop, dict) and hop.get("name"):
        text += f". Hop: {hop['name']} ({hop.get('kind') or 'hop'})"
    if decided.get("incident_id"):
        text += f". Incident: {decided['incident_id']} (quote it to your network team)"
    return text


def proxy_why(record: ProxyRecord, row: dict[str, Any]) -> str:
    """One sentence: what happened upstream and what the proxy did about it."""
    action, got, status = record.action, record.client_status, record.status
    cap = f" Cap now {format_size(record.cap_bytes)}." if record.cap_bytes else ""
    if action is Action.PASSED:
        if status is not None and status < 400:
            return f"Passed through unchanged; the upstream answered {status}."
        if record.kind:
            return f"{refusal_text(row)}. Passed back to the client unchanged ({status}).{cap}"
        return f"Passed back to the client unchanged ({status or 'no answer'})."
    if action is Action.TRANSLATED:
        return (
            f"{refusal_text(row)}. The client got {got}, its own provider's overflow error, so its own "
            f"recovery (compaction) acts.{cap}"
        )
    if action is Action.CONTENT_BLOCKED:
        return (
            f"{refusal_text(row)}. The client got {got}, a non-retryable error saying the gateway refused the "
            "content (never an overflow: shrinking would not help)."
        )
    if action is Action.REJECTED_EARLY:
        return (
            f"Over the cap in force: answered at once with the client's own overflow error ({got}); nothing "
            f"was sent upstream.{cap}"
        )
    if action is Action.SHRUNK:
        answered = f"the upstream answered {status}" if status is not None else "no answer"
        return f"Over the cap: rewritten to fit before it was sent; {answered}.{cap}"
    if action is Action.RESENT:
        return f"{refusal_text(row)}. Shrunk to the cap just learned and sent again (the next request).{cap}"
    if action is Action.UNREACHABLE:
        return f"{record.reason or 'The upstream could not be reached'}. The client got {got}."
    return f"{refusal_text(row)}. The upstream dropped the connection; the proxy dropped the client's too."


def stored_preview(records: SessionRecords, record_id: str) -> str:
    try:
        stored = records.request(record_id)
    except Exception:  # a busy or closed database: the record without its preview
        return ""
    return stored.body_preview if stored is not None else ""


def _clip(text: str) -> str:
    if len(text) <= TEXT_CHARS:
        return text
    return f"{text[:TEXT_CHARS]}\n… [{len(text) - TEXT_CHARS:,} more characters]"


def start_text(
    url: str,
    *,
    upstream: str,
    served: tuple[str, ...],
    modes: tuple[str, ...],
    session_id: str,
    bind_warning: str = "",
) -> str:
    """What the detail pane shows before the first request (and on `?`): what to paste for each client,
    as `--headless` prints it, and the keys."""
    text = banner(
        url, upstream=upstream, served=served, modes=modes, session_id=session_id, bind_warning=bind_warning
    )
    text = text.replace(" Ctrl+C stops.", "")
    return display(
        text
        + "\n\nKeys: ↑/↓ select a request (its record shows here) · ? this text again · c copy the record · "
        "[ and ] inspector tabs · q or Ctrl+C stop the proxy and quit"
    )
