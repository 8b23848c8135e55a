"""Send one request: record it, stream it, classify failures, retry what is transient.

Every request becomes a row in the store (time, route, predicted and actual bytes, status,
latency, redacted headers, body preview, error body, classification) and a pair of
events. Text is "visible" the moment a delta is emitted to a front end: after that a
failure is never retried — the partial answer is the caller's to keep.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from app.engine.cap_guard import check_fits
from app.engine.draft import DRAFT_FLUSH_CHARS, DRAFT_PREFIX, DraftWriter, leftover_drafts  # noqa: F401 - re-exported
from app.engine.failure_rules import Rule
from app.engine.failures import Failure, classify
from app.engine.payload import CapInfo
from app.engine.request_row import body_preview, request_row  # noqa: F401 - body_preview re-exported
from app.engine.resets import SizeEvidence
from app.engine.retry import RetryPolicy
from app.engine.session import Session
from app.engine.stream_watch import StreamObservation, StreamTiming
from app.model.costs import Usage, price_usd
from app.model.events import Event, RequestFinished, RequestStarted, Retry, TextDelta, UsageRecorded
from app.model.messages import new_id
from app.providers.base import (
    EditsChunk,
    NativeChunk,
    Provider,
    ProviderError,
    Request,
    StopChunk,
    TextChunk,
    ToolCallChunk,
    UsageChunk,
)
from app.redact import redact_text


@dataclass
class StreamResult:
    text: str
    tool_calls: list[ToolCallChunk]
    usage: Usage | None
    stop_reason: str
    request: Request
    request_id: str
    natives: list[NativeChunk] = field(default_factory=list)  # compaction / reasoning items, in order
    edits: EditsChunk | None = None  # context edits the provider applied before the model read it


@dataclass
class RequestFailed(Exception):
    """A request that failed for good (after transient retries), with its classification."""

    error: ProviderError
    failure: Failure
    request: Request
    partial_text: str = ""
    request_id: str = ""
    partial_tool_calls: list[ToolCallChunk] = field(default_factory=list)

    def __str__(self) -> str:
        return self.failure.reason or str(self.error)


def redact_failure(failure: Failure) -> Failure:
    """The failure with known secrets hidden in its reason and evidence (a gateway echoing the key)."""
    hop = failure.hop
    if hop is not None:
        hop = dataclasses.replace(
            hop, name=redact_text(hop.name), evidence=tuple(redact_text(e) for e in hop.evidence)
        )
    return dataclasses.replace(
        failure,
        reason=redact_text(failure.reason),
        evidence=tuple(redact_text(e) for e in failure.evidence),
        hop=hop,
    )


def sent_since(request: Request, started: float) -> float:
    """When the transport sent `request` (monotonic), or `started` when it never went out (or the stamp is
    an earlier attempt's): what came before it — the SDK import, the client, a lazy lab start — is bulkhead's
    own setup, not the network's time."""
    sent = request.sent_at
    return sent if sent is not None and sent >= started else started


def latency_ms(request: Request, started: float) -> float:
    """A request's latency as recorded (Requests panel, HAR): from its sending (`sent_since`) to now."""
    return (time.monotonic() - sent_since(request, started)) * 1000


class Sender:
    def __init__(
        self,
        session: Session,
        provider: Provider,
        *,
        route: str,
        emit: Callable[[Event], None],
        retry_policy: RetryPolicy,
        drop_threshold: int,
        on_rejection: Callable[[Failure, Request], Awaitable[None]] | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        size_evidence: SizeEvidence | None = None,
        user_rules: tuple[Rule, ...] = (),
        floor_bytes: Callable[[], int | None] | None = None,
        cap: Callable[[], CapInfo] | None = None,
        on_stream: Callable[[StreamObservation], None] | None = None,
    ) -> None:
        self.session = session
        self.provider = provider
        self.route = route
        self.emit = emit
        self.retry_policy = retry_policy
        self.drop_threshold = drop_threshold
        self.on_rejection = on_rejection
        self.sleep = sleep
        self.size_evidence = size_evidence if size_evidence is not None else SizeEvidence()
        self.user_rules = user_rules
        self.floor_bytes = floor_bytes  # the request floor, for judging size against content (block_cause)
        self.cap = cap  # the route's effective byte cap now: nothing predicted over it is sent (OverCap)
        self.on_stream = on_stream  # each stream's timing (app.engine.stream_watch: buffered SSE, idle cuts)
        self.draft = DraftWriter(session.folder, session.writer)
        self._visible: list[str] = []  # what the current (or last cancelled) request made visible

    @property
    def streamed_text(self) -> str:
        """The text the current (or last failed or cancelled) request made visible."""
        return "".join(self._visible)

    def forget_streamed_text(self) -> None:
        self._visible = []

    async def send(
        self, request: Request, *, level: int = 0, attempt: int = 0, stream_text: bool = True
    ) -> StreamResult:
        """Send with transient retries. Raises RequestFailed, or OverCap (nothing sent) for a request
        predicted over the route's effective cap; CancelledError passes through."""
        retry = 0
        while True:
            self._check_cap(request)
            try:
                return await self._send_once(request, level=level, attempt=attempt, stream_text=stream_text)
            except RequestFailed as failed:
                if failed.partial_text or not failed.failure.transient:
                    raise
                retry += 1
                delay = self.retry_policy.delay(retry, failed.failure.retry_after)
                if delay is None:
                    raise
                self.session.counters.retries += 1
                self.emit(
                    Retry(
                        kind=failed.failure.kind,
                        attempt=retry,
                        max_attempts=self.retry_policy.max_attempts,
                        delay_s=round(delay, 2),
                        reason=failed.failure.reason,
                    )
                )
                await self.sleep(delay)

    async def _begin(
        self, request: Request, *, level: int, attempt: int
    ) -> tuple[str, float, float, Callable[..., None]]:
        """A request about to go, streamed or not: what it carries is on disk first (a held write failure
        raises here: nothing is sent unsaved); recorded as sending and shown (RequestStarted). Returns its id,
        its start (monotonic and wall clock) and the recorder of its outcome."""
        await self.session.drain()
        request.sent_at = None  # the same request sent again (a retry) is timed from its own sending
        request_id = new_id("r")
        started, started_at = time.monotonic(), time.time()
        record = functools.partial(
            self._record, request_id, request, level=level, attempt=attempt, started_at=started_at
        )
        record(outcome="sending")
        self.emit(
            RequestStarted(
                request_id=request_id,
                route=self.route,
                purpose=request.purpose,
                predicted_bytes=request.predicted_bytes,
                attempt=attempt,
                level=level,
                started_at=started_at,
            )
        )
        return request_id, started, started_at, record

    def _classify(self, error: ProviderError, request: Request) -> Failure:
        """A failed request's classification, streamed or not: the endpoint's size evidence and the user's
        rules count, secrets are redacted, and what it shows about body sizes is learned."""
        from app.engine.block_cause import judge
        from app.engine.failure_target import count_values, target_for

        route = getattr(self.provider, "route", None)
        values = (
            count_values(request.body) if error.status is not None and 400 <= error.status < 500 else None
        )
        failure = redact_failure(
            classify(
                error,
                drop_threshold=self.drop_threshold,
                size_evidence=self.size_evidence,
                user_rules=self.user_rules,
                target=target_for(request.url, request.provider, route, self.route),
                request_values=values,
            )
        )
        failure = judge(
            failure,
            request_bytes=error.request_bytes or request.actual_bytes or request.predicted_bytes,
            accepted_max=self.size_evidence.accepted_max,
            floor_bytes=self._floor(),
            body=redact_text(error.body or error.message or ""),
            headers=error.headers or request.response_headers,
        )
        self._learn_sizes(error, failure, request)
        return failure

    def _floor(self) -> int | None:
        if self.floor_bytes is None:
            return None
        try:
            return self.floor_bytes()
        except Exception:  # a floor that cannot be measured only weakens the judgement
            return None

    def _count_request(self) -> None:
        self.session.counters.requests += 1
        self.session.counters.count_route(self.route)
        self.session.save_counters()

    def _finished(
        self, request_id: str, request: Request, latency_ms: float, level: int, started_at: float
    ) -> None:
        """A request that succeeded, streamed or not: shown (RequestFinished)."""
        self.emit(
            RequestFinished(
                request_id=request_id,
                route=self.route,
                purpose=request.purpose,
                predicted_bytes=request.predicted_bytes,
                bytes=request.actual_bytes,
                status=request.status or 200,
                latency_ms=round(latency_ms, 1),
                level=level,
                started_at=started_at,
            )
        )

    async def _count_failure(
        self,
        request_id: str,
        request: Request,
        error: ProviderError,
        failure: Failure,
        latency_ms: float,
        level: int,
        started_at: float,
    ) -> None:
        """A failed request, streamed or not: counted, saved, shown (RequestFinished), then `on_rejection`."""
        counters = self.session.counters
        counters.requests += 1
        counters.failed_requests += 1
        counters.add_rejection(failure.kind)
        counters.count_route(self.route, failed=True)
        self.session.save_counters()
        self.emit(
            RequestFinished(
                request_id=request_id,
                route=self.route,
                purpose=request.purpose,
                predicted_bytes=request.predicted_bytes,
                bytes=error.request_bytes or request.actual_bytes,
                status=error.status,
                latency_ms=round(latency_ms, 1),
                kind=failure.kind,
                reason=failure.reason,
                level=level,
                started_at=started_at,
            )
        )
        if self.on_rejection is not None:
            await self.on_rejection(failure, request)

    async def _send_once(
        self, request: Request, *, level: int, attempt: int, stream_text: bool
    ) -> StreamResult:
        request_id, started, started_at, record = await self._begin(request, level=level, attempt=attempt)
        text: list[str] = []
        chars = 0
        self._visible = []
        if stream_text:
            self.draft.begin()
        tool_calls: list[ToolCallChunk] = []
        usage: Usage | None = None
        natives: list[NativeChunk] = []
        edits: EditsChunk | None = None
        stop_reason = "end"
        visible = False
        timing = StreamTiming(started)
        try:
            async for chunk in self.provider.stream(request):
                timing.saw(time.monotonic())
                if isinstance(chunk, TextChunk):
                    if not chunk.text:
                        continue
                    text.append(chunk.text)
                    chars += len(chunk.text)
                    if stream_text:
                        visible = True
                        self._visible = text
                        self.emit(TextDelta(chunk.text))
                        self.draft.update(text, chars)
                elif isinstance(chunk, ToolCallChunk):
                    tool_calls.append(chunk)
                elif isinstance(chunk, UsageChunk):
                    usage = chunk.usage
                elif isinstance(chunk, StopChunk):
                    stop_reason = chunk.reason
                elif isinstance(chunk, NativeChunk):
                    natives.append(chunk)
                elif isinstance(chunk, EditsChunk):
                    edits = chunk
        except (ProviderError, Exception) as raised:
            # An adapter raises only ProviderError; anything else is still this request's failure,
            # reported as one (never a crash of the turn), and never "recovered" (kind other).
            error = (
                raised
                if isinstance(raised, ProviderError)
                else ProviderError(
                    f"{request.provider}: unexpected {type(raised).__name__}: {raised}",
                    provider=request.provider,
                    original=raised,
                    status=request.status,
                    request_bytes=request.actual_bytes,
                    error_type=type(raised).__name__,
                    transport="stream-error",
                )
            )
            error.output_visible = visible
            self._observe(
                timing,
                request,
                failed_at=time.monotonic(),
                cut=error.transport in ("connection", "stream-error"),
            )
            failure = self._classify(error, request)
            latency = latency_ms(request, started)
            record(outcome="failed", error=error, failure=failure, latency_ms=latency)
            await self._count_failure(request_id, request, error, failure, latency, level, started_at)
            raise RequestFailed(error, failure, request, "".join(text), request_id, tool_calls) from raised
        except asyncio.CancelledError:
            latency = latency_ms(request, started)
            record(outcome="cancelled", latency_ms=latency)
            self._count_request()
            raise
        latency = latency_ms(request, started)
        cost = None
        if usage is not None:
            # priced as the route that answered: a fallback route's model, not the session's first one
            cost = price_usd(
                usage, request.model or self.session.model, request.provider or self.session.provider
            )
            self.session.counters.add_usage(
                usage,
                cost,
                summarizer=request.purpose == "summary",
                memory=request.purpose == "memory",
                route=self.route,
            )
            self.emit(
                UsageRecorded(
                    input_tokens=usage.input_tokens,
                    output_tokens=usage.output_tokens,
                    cache_read_tokens=usage.cache_read_tokens,
                    cache_write_tokens=usage.cache_write_tokens,
                    cost_usd=cost,
                    purpose=request.purpose,
                    route=self.route,
                )
            )
        self._count_request()
        self._visible = []
        self._observe(timing, request)
        self.size_evidence.accepted(request.actual_bytes or request.predicted_bytes)
        record(outcome="ok", latency_ms=latency, usage=usage, cost=cost)
        self._finished(request_id, request, latency, level, started_at)
        return StreamResult(
            "".join(text), tool_calls, usage, stop_reason, request, request_id, natives, edits
        )

    async def call(self, request: Request, call: Callable[[], Awaitable[Any]]) -> Any:
        """A request that is not a stream (native compaction): recorded and shown like every other one,
        its failure classified. Raises RequestFailed or OverCap; CancelledError passes through."""
        self._check_cap(request)
        request_id, started, started_at, record = await self._begin(request, level=0, attempt=0)
        try:
            result = await call()
        except asyncio.CancelledError:
            record(outcome="cancelled", latency_ms=latency_ms(request, started))
            self._count_request()
            raise
        except ProviderError as error:
            failure = self._classify(error, request)
            latency = latency_ms(request, started)
            record(outcome="failed", error=error, failure=failure, latency_ms=latency)
            await self._count_failure(request_id, request, error, failure, latency, 0, started_at)
            raise RequestFailed(error, failure, request, "", request_id) from error
        latency = latency_ms(request, started)
        self._count_request()
        record(outcome="ok", latency_ms=latency)
        self._finished(request_id, request, latency, 0, started_at)
        return result

    def _observe(
        self, timing: StreamTiming, request: Request, *, failed_at: float | None = None, cut: bool = False
    ) -> None:
        if self.on_stream is None:
            return
        # judged from the sending, as the latency is: a first request's local setup is no wait on the way
        observation = StreamObservation(
            sent_since(request, timing.started), tuple(timing.arrivals), failed_at, cut
        )
        try:
            self.on_stream(observation)
        except Exception:  # remembering a quirk never breaks a request
            pass

    def _check_cap(self, request: Request) -> None:
        """The last check before a request goes: over the route's effective cap, it is not sent (OverCap)."""
        if self.cap is not None:
            check_fits(request, self.cap())

    def _learn_sizes(self, error: ProviderError, failure: Failure, request: Request) -> None:
        """What this failure shows about the endpoint's body sizes (for judging the next reset)."""
        size = error.request_bytes or request.actual_bytes or request.predicted_bytes
        if failure.payload_related:
            self.size_evidence.refused(size)
        elif failure.rule_id == "net.reset-unproven":
            self.size_evidence.reset(size)
        else:  # anything else breaks a run of identical resets
            self.size_evidence.last_reset = None

    def _record(self, request_id: str, request: Request, **outcome: Any) -> None:
        """The request's row in the store (app.engine.request_row), written in order with the session's other
        writes, best effort: a full disk must not turn a good answer into a failure."""
        row = request_row(self.session.id, self.route, request_id, request, **outcome)
        self.session.writer.submit(
            functools.partial(self.session.store.record_request, row), what="request", required=False
        )
