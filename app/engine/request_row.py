"""A request's row in the store: what was sent and how it ended, bounded and with secrets redacted.

The sender writes one row when a request goes ("sending", with a preview of its body) and rewrites it when the
request ends (ok, failed with its classification and error body, or cancelled; the usage and its cost).
"""

from __future__ import annotations

import json
from typing import Any

from app.engine.failures import Failure
from app.model.costs import Usage
from app.providers.base import ProviderError, Request
from app.redact import clip_redacted, redact_headers, redact_text

PREVIEW_STRING_CHARS = 300
PREVIEW_LIST_ITEMS = 6
ERROR_BODY_CHARS = 16_384


def body_preview(body: Any) -> str:
    """A compact, bounded preview of a request body: long strings and long lists are elided."""

    def shrink(value: Any) -> Any:
        if isinstance(value, str):
            value = redact_text(value)  # before the cut: a key cut in two would survive as a prefix
            if len(value) <= PREVIEW_STRING_CHARS:
                return value
            return f"{value[:PREVIEW_STRING_CHARS]}… [{len(value):,} chars]"
        if isinstance(value, bytes | bytearray):
            return f"<{len(value):,} bytes>"
        if isinstance(value, dict):
            return {k: shrink(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            items = list(value)
            if len(items) > PREVIEW_LIST_ITEMS:
                hidden = len(items) - 5
                return (
                    [shrink(v) for v in items[:2]] + [f"… {hidden} more …"] + [shrink(v) for v in items[-3:]]
                )
            return [shrink(v) for v in items]
        return value

    try:
        return json.dumps(shrink(body), ensure_ascii=False, indent=1, default=str)
    except (TypeError, ValueError):
        return "<unprintable body>"


def request_row(
    session_id: str,
    route: str,
    request_id: str,
    request: Request,
    *,
    level: int,
    attempt: int,
    started_at: float,
    outcome: str,
    error: ProviderError | None = None,
    failure: Failure | None = None,
    latency_ms: float | None = None,
    usage: Usage | None = None,
    cost: float | None = None,
) -> dict[str, Any]:
    """The row for `store.record_request`: the request as sent, then (once it ended) its outcome."""
    record: dict[str, Any] = {
        "id": request_id,
        "session_id": session_id,
        "created_at": started_at,
        "route": route,
        "provider": request.provider,
        "model": request.model,
        "url": request.url,
        "purpose": request.purpose,
        "attempt": attempt,
        "level": level,
        "predicted_bytes": request.predicted_bytes,
        "actual_bytes": request.actual_bytes,
        "request_headers": redact_headers(request.request_headers),
        "outcome": outcome,
        "latency_ms": latency_ms,
    }
    if outcome == "sending":
        record["body_preview"] = body_preview(request.body)
    else:
        record["status"] = request.status
        record["response_headers"] = redact_headers(request.response_headers)
    if error is not None:
        record["actual_bytes"] = error.request_bytes or request.actual_bytes
        record["status"] = error.status
        record["response_headers"] = redact_headers(error.headers or request.response_headers)
        record["error_body"] = clip_redacted(error.body or error.message or "", ERROR_BODY_CHARS, marker="")
    if failure is not None:
        from app.engine.failure_words import decision_of

        record["kind"] = failure.kind
        record["reason"] = failure.reason
        record["evidence"] = list(failure.evidence)
        record["decision"] = decision_of(failure)
    if usage is not None:
        record["usage"] = {
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "cache_read_tokens": usage.cache_read_tokens,
            "cache_write_tokens": usage.cache_write_tokens,
            "cost_usd": cost,
        }
    return record
