"""A session's requests as HAR 1.2 — open it in a browser's devtools or send it to the network team.

Headers are redacted again on the way out (they were redacted when recorded), bodies are
cut to `har_body_limit`, and each entry's comment carries bulkhead's classification and
evidence, so the file alone explains why a gateway said no.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from app.engine.session import Session
from app.redact import redact_headers, redact_value

_STATUS_TEXT = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    406: "Not Acceptable",
    408: "Request Timeout",
    413: "Payload Too Large",
    429: "Too Many Requests",
    431: "Request Header Fields Too Large",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
    524: "A Timeout Occurred",
    529: "Overloaded",
}


def _cut(text: str, limit: int) -> tuple[str, str]:
    """(text cut to `limit` UTF-8 bytes, a note when it was cut)."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text, ""
    return data[:limit].decode("utf-8", errors="ignore"), f" (cut to {limit:,} of {len(data):,} bytes)"


def _headers(mapping: dict[str, str] | None) -> list[dict[str, str]]:
    return [{"name": str(k), "value": str(v)} for k, v in redact_headers(mapping).items()]


def _mime(headers: dict[str, str] | None, default: str) -> str:
    for key, value in (headers or {}).items():
        if key.lower() == "content-type":
            return str(value)
    return default


def entry(record: dict[str, Any], body_limit: int) -> dict[str, Any]:
    started = datetime.fromtimestamp(record["created_at"], UTC).isoformat(timespec="milliseconds")
    latency = float(record.get("latency_ms") or 0.0)
    request_text, request_note = _cut(record.get("body_preview") or "", body_limit)
    status = int(record.get("status") or 0)
    if record.get("outcome") == "ok":
        response_text = "(streamed answer — stored in the session, not repeated here)"
    else:
        response_text = record.get("error_body") or ""
    response_text, response_note = _cut(response_text, body_limit)
    comment = (
        f"bulkhead {record.get('purpose', 'chat')} request, outcome {record.get('outcome') or 'unknown'}"
    )
    if record.get("kind"):
        comment += f"; classified {record['kind']}: {record.get('reason', '')}"
        if record.get("evidence"):
            comment += "; evidence: " + "; ".join(record["evidence"])
    if record.get("level"):
        comment += f"; recovery level L{record['level']} attempt {record.get('attempt', 0)}"
    comment += (
        f"; predicted body {record.get('predicted_bytes')} bytes, actual {record.get('actual_bytes')} bytes"
    )
    comment += "; request body is a preview (long strings and lists elided)" + request_note
    return {
        "startedDateTime": started,
        "time": round(latency, 3),
        "request": {
            "method": "POST",
            "url": record.get("url") or "",
            "httpVersion": "HTTP/1.1",
            "cookies": [],
            "headers": _headers(record.get("request_headers")),
            "queryString": [],
            "postData": {"mimeType": "application/json", "text": request_text},
            "headersSize": -1,
            "bodySize": int(record.get("actual_bytes") or record.get("predicted_bytes") or -1),
        },
        "response": {
            "status": status,
            "statusText": _STATUS_TEXT.get(status, ""),
            "httpVersion": "HTTP/1.1",
            "cookies": [],
            "headers": _headers(record.get("response_headers")),
            "content": {
                "size": len((record.get("error_body") or "").encode("utf-8")),
                "mimeType": _mime(record.get("response_headers"), "application/json"),
                "text": response_text,
                **({"comment": f"cut{response_note}"} if response_note else {}),
            },
            "redirectURL": "",
            "headersSize": -1,
            "bodySize": -1,
        },
        "cache": {},
        "timings": {"send": 0, "wait": round(latency, 3), "receive": 0},
        "comment": comment,
    }


def to_har(session: Session, *, body_limit: int) -> dict[str, Any]:
    from app import __version__

    records = session.store.list_requests(session.id)
    return redact_value(
        {
            "log": {
                "version": "1.2",
                "creator": {"name": "bulkhead", "version": __version__},
                "comment": f"session {session.id} ({session.title or 'untitled'}), route {session.route}",
                "entries": [entry(r, body_limit) for r in records],
            }
        }
    )
