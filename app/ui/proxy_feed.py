"""The boundary between `bulkhead proxy` and the live view: proxy events in, Textual messages and the
inspector's own event types out.

    forwarder = Forwarder(); events.subscribe(forwarder)   # on the proxy's thread: a snapshot, posted
    forwarder.attach(app)                                  # once the app runs (earlier events are kept)
    def on_proxy_event_posted(self, message): # on the UI's thread
        for event in inspector_events(message.event): inspector.dispatch(event)

The inspector's panels (Requests, Payload, Cost) render the engine's event types (`app.model.events`);
a proxied exchange is told to them in those words — a request started and finished, a cap learned, the
size of the last conversation request against its endpoint's cap — so the panels need nothing of the
proxy. The Cost panel reads `ProxyCounters.counters` (the session's counters, as the engine keeps them).
"""

from __future__ import annotations

import dataclasses
import threading
from dataclasses import dataclass, field

from textual.message import Message
from textual.message_pump import MessagePump

from app.model import events as model
from app.model.costs import Counters, Usage, price_usd
from app.proxy.records import (
    Action,
    CapLearned,
    ProxyEvent,
    ProxyRecord,
    RequestFinished,
    RequestStarted,
)
from app.proxy.wire import is_conversation
from app.textsafe import display_data

OK_ACTIONS = (Action.PASSED, Action.SHRUNK)


class ProxyEventPosted(Message):
    """One proxy event, handed from the proxy's thread to the UI's (`App.post_message` is thread-safe)."""

    def __init__(self, event: ProxyEvent) -> None:
        super().__init__()
        self.event = event


class Forwarder:
    """A `ProxyEvents` subscriber that posts each event to the app and returns at once (it runs on the
    proxy's thread). Events that come before the app is attached — a client already sending while the
    screen is drawn — are kept and posted on `attach`. A started record is still being filled in by the
    proxy: the app gets a copy of it as it is now, without the body (up to `proxy_record_body_max` each;
    the store keeps its preview)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._target: MessagePump | None = None
        self._early: list[ProxyEvent] = []

    def __call__(self, event: ProxyEvent) -> None:
        if isinstance(event, RequestStarted | RequestFinished):
            event = type(event)(dataclasses.replace(event.record, body=None))
        with self._lock:
            if self._target is None:
                self._early.append(event)
                return
            self._target.post_message(ProxyEventPosted(event))

    def attach(self, target: MessagePump) -> None:
        with self._lock:
            self._target = target
            early, self._early = self._early, []
            for event in early:
                target.post_message(ProxyEventPosted(event))


def declared_bytes(record: ProxyRecord) -> int:
    """What the client said it would send (Content-Length), before its body has been read."""
    if record.request_bytes is not None:
        return record.request_bytes
    try:
        return int(record.request_headers.get("content-length", "0"))
    except ValueError:
        return 0


def failure_kind(record: ProxyRecord) -> str | None:
    """The kind the Requests panel shows: the classifier's, or what the proxy did instead of sending."""
    if record.kind:
        return record.kind
    if record.action is Action.REJECTED_EARLY:
        return "rejected_early"
    if record.action is Action.UNREACHABLE:
        return "unreachable"
    return None


def inspector_events(event: ProxyEvent) -> list[model.Event]:
    """The inspector's events for one proxy event (none for ProxyStarted/ProxyStopped), made safe to show
    (`app.textsafe.display_data`: a client name, an endpoint or a reason came from outside)."""
    return [display_data(found) for found in _inspector_events(event)]


def _inspector_events(event: ProxyEvent) -> list[model.Event]:
    if isinstance(event, RequestStarted):
        record = event.record
        return [
            model.RequestStarted(
                request_id=record.id,
                route=record.endpoint,
                purpose="chat",  # a client's conversation; RequestFinished names the client
                predicted_bytes=declared_bytes(record),
                started_at=record.started_at,
            )
        ]
    if isinstance(event, RequestFinished):
        record = event.record
        found: list[model.Event] = [
            model.RequestFinished(
                request_id=record.id,
                route=record.endpoint,
                purpose=record.client,
                predicted_bytes=declared_bytes(record),
                bytes=record.sent_bytes,
                status=record.status if record.status is not None else record.client_status,
                latency_ms=record.latency_ms or 0.0,
                kind=failure_kind(record),
                reason=record.reason,
                started_at=record.started_at,
            )
        ]
        if is_conversation(record.method, record.path) and record.request_bytes is not None:
            found.append(last_request_view(record))
        return found
    if isinstance(event, CapLearned):
        return [
            model.CapLearned(
                cap_bytes=event.cap_bytes,
                rejected_bytes=event.rejected_bytes,
                endpoint=event.endpoint,
                reason=event.reason,
            )
        ]
    return []


def last_request_view(record: ProxyRecord) -> model.ViewChanged:
    """The Payload panel's gauge for the proxy: the last conversation request against its endpoint's cap."""
    size = record.sent_bytes if record.sent_bytes is not None else record.request_bytes
    return model.ViewChanged(
        view_id=record.id,
        messages=0,
        predicted_bytes=size or 0,
        effective_cap=record.cap_bytes,
        cap_source="learned" if record.cap_bytes else "none",
        context_tokens=int(record.usage.get("input_tokens") or 0),
        context_window=None,
        reason=record.endpoint,
    )


@dataclass
class ProxyCounters:
    """The proxy session's counters as the Cost panel reads them (`app.model.costs.Counters`)."""

    counters: Counters = field(default_factory=Counters)

    def add(self, record: ProxyRecord) -> Usage | None:
        """Count one finished exchange; its usage (to price off the UI's thread), or None."""
        counters = self.counters
        counters.requests += 1
        failed = record.action not in OK_ACTIONS or (record.status or 0) >= 400
        if failed:
            counters.failed_requests += 1
        if record.kind:
            counters.add_rejection(record.kind)
        counters.count_route(record.endpoint, failed=failed)
        usage = record.usage
        if not usage:
            return None
        cache_read = int(usage.get("cache_read_tokens") or 0)
        cache_write = int(usage.get("cache_write_tokens") or 0)
        prompt = int(usage.get("input_tokens") or 0)
        if record.wire == "anthropic":  # Anthropic counts cached tokens apart; bulkhead's input is the whole
            prompt += cache_read + cache_write
        return Usage(prompt, int(usage.get("output_tokens") or 0), cache_read, cache_write)

    def add_usage(self, usage: Usage, cost: float | None, route: str) -> None:
        self.counters.add_usage(usage, cost, route=route)


def price(usage: Usage, model_name: str, wire: str) -> float | None:
    """The cost of one answer (genai-prices, offline; None: a model it does not know). Blocking."""
    provider = "anthropic" if wire == "anthropic" else "openai"
    return price_usd(usage, model_name, provider) if model_name else None
