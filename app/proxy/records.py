"""What the proxy tells its front ends: one record per exchange, and a small event bus to subscribe to.

    events = ProxyEvents()
    unsubscribe = events.subscribe(lambda event: print(event))   # RequestStarted, RequestFinished, …
    server = ProxyServer(options, events=events)

Callbacks run on the proxy's event loop, in the order events happen; a callback that raises is logged
and never stops the proxy. A front end on another thread (the TUI) hands each event over to its own loop
(`App.call_from_thread`). `ProxyRecord.to_store()` is the row `app.store` keeps (the same columns as the
chat's request records, so the Requests panel and the HAR export read both).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from app.engine.sender import body_preview
from app.redact import redact_headers, redact_text

log = logging.getLogger(__name__)
ERROR_BODY_CHARS = 16_000


class Action(StrEnum):
    """What the proxy did with one request."""

    PASSED = "passed"  # forwarded unchanged; the upstream's answer went back unchanged
    TRANSLATED = "translated"  # a size refusal went back as the client's own overflow error
    CONTENT_BLOCKED = "content-blocked"  # a content block went back as a non-retryable error
    REJECTED_EARLY = "rejected-early"  # over the learned cap: answered without sending (--early-reject)
    SHRUNK = "shrunk"  # rewritten to fit the cap (--shrink), then forwarded
    RESENT = "resent"  # refused as too large, then shrunk to the cap just learned and sent again (--shrink)
    UNREACHABLE = "unreachable"  # the upstream could not be reached; the client got a 502
    DROPPED = "dropped"  # the upstream dropped the connection and the proxy dropped the client's


@dataclass
class ProxyRecord:
    """One proxied exchange. Mutable while the exchange runs; frozen in spirit once `RequestFinished`."""

    id: str
    session_id: str
    started_at: float
    method: str
    path: str
    wire: str
    client: str  # the client's name from its User-Agent ("Claude Code 2.1.197")
    upstream_url: str = ""
    endpoint: str = ""  # where a learned cap belongs (the same id bulkhead's own routes use)
    model: str = ""
    request_bytes: int | None = None  # what the client sent (None: it never finished sending)
    sent_bytes: int | None = None  # what went upstream (differs when shrunk; None: nothing was sent)
    body_sha256: str = ""  # of what the client sent
    sent_sha256: str = ""  # of what went upstream
    status: int | None = None  # the upstream's status (None: no answer)
    client_status: int | None = None  # what the client got
    stream: bool = False  # the answer was a server-sent event stream
    latency_ms: float | None = None
    first_byte_ms: float | None = None
    action: Action = Action.PASSED
    kind: str = ""  # the classifier's kind, for a refused request
    cause: str = ""  # a gateway refusal's judged cause: size | content | unknown (app.engine.block_cause)
    reason: str = ""
    evidence: tuple[str, ...] = ()
    decision: dict[str, Any] = field(default_factory=dict)  # app.engine.failure_words.decision_of
    incident: str = ""  # the block page's reference, labelled ("Cloudflare Ray ID 8f3a…")
    cap_bytes: int | None = None  # the cap in force when the exchange ended
    notes: tuple[str, ...] = ()  # what the proxy did, in words ("3 tool results stubbed, 98 KB → 60 KB")
    request_headers: dict[str, str] = field(default_factory=dict)
    response_headers: dict[str, str] = field(default_factory=dict)
    error_body: str = ""
    usage: dict[str, Any] = field(default_factory=dict)
    body: bytes | None = field(default=None, repr=False)  # what went upstream, when the proxy held it whole

    @property
    def outcome(self) -> str:
        if self.action in (Action.PASSED, Action.SHRUNK):
            ok = self.status is not None and self.status < 400
            return "ok" if ok else "failed"
        return str(self.action)

    def set_headers(self, request: list[tuple[str, str]] | None = None, response: Any = None) -> None:
        """Keep headers redacted (`app.redact`): the client's key is never held past this call."""
        if request is not None:
            self.request_headers = redact_headers(_joined(request))
        if response is not None:
            self.response_headers = redact_headers(_joined(list(response)))

    def set_error_body(self, text: str) -> None:
        self.error_body = redact_text(text)[:ERROR_BODY_CHARS]

    def to_store(self) -> dict[str, Any]:
        """The row for `Store.record_request`."""
        evidence = list(self.evidence)  # the judged cause is one of its lines ("cause content: …")
        evidence += [f"proxy: {note}" for note in self.notes]
        preview = ""
        if self.body is not None:
            try:
                import json

                preview = body_preview(json.loads(self.body))
            except (ValueError, UnicodeDecodeError):
                preview = f"<{len(self.body):,} bytes, not JSON>"
        return {
            "id": self.id,
            "session_id": self.session_id,
            "created_at": self.started_at,
            "route": self.endpoint,
            "provider": self.wire,
            "model": self.model,
            "url": self.upstream_url,
            "purpose": self.client,
            "predicted_bytes": self.request_bytes,
            "actual_bytes": self.sent_bytes,
            "status": self.client_status if self.status is None else self.status,
            "latency_ms": self.latency_ms,
            "kind": self.kind or None,
            "reason": self.reason,
            "evidence": evidence,
            "request_headers": self.request_headers,
            "response_headers": self.response_headers,
            "body_preview": preview,
            "error_body": self.error_body,
            "usage": self.usage,
            "outcome": self.outcome,
            "decision": self.decision,
        }


def _joined(headers: list[tuple[str, str]]) -> dict[str, str]:
    joined: dict[str, str] = {}
    for key, value in headers:
        name = str(key).lower()
        joined[name] = f"{joined[name]}, {value}" if name in joined else str(value)
    return joined


# -- events -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ProxyStarted:
    url: str
    session_id: str
    upstream: str
    modes: tuple[str, ...]


@dataclass(frozen=True)
class RequestStarted:
    record: ProxyRecord  # still filling in: read id, method, path, client, wire, started_at


@dataclass(frozen=True)
class RequestFinished:
    record: ProxyRecord


@dataclass(frozen=True)
class CapLearned:
    endpoint: str
    cap_bytes: int
    rejected_bytes: int
    reason: str


@dataclass(frozen=True)
class ProxyStopped:
    session_id: str


ProxyEvent = ProxyStarted | RequestStarted | RequestFinished | CapLearned | ProxyStopped


class ProxyEvents:
    """A callback registry: `subscribe(callback)` returns the function that unsubscribes it."""

    def __init__(self) -> None:
        self._subscribers: list[Callable[[ProxyEvent], None]] = []

    def subscribe(self, callback: Callable[[ProxyEvent], None]) -> Callable[[], None]:
        self._subscribers.append(callback)

        def unsubscribe() -> None:
            if callback in self._subscribers:
                self._subscribers.remove(callback)

        return unsubscribe

    def emit(self, event: ProxyEvent) -> None:
        for callback in list(self._subscribers):
            try:
                callback(event)
            except Exception:  # a front end's bug never stops the proxy
                log.exception("proxy: an event subscriber failed on %s", type(event).__name__)
