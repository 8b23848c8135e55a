"""The proxy's exchange: one client request in, one upstream request out, one answer back, one record.

    server = ProxyServer(options, session, client=make_client(...), events=events)
    url = await server.start("127.0.0.1", 8788)
    ...
    await server.stop()

Bodies stream both ways as they come (`httpio.body_pieces` → httpx → `aiter_raw` → the client), with no
limit of the proxy's own; a body is held whole only when `--shrink` or `--early-reject` must see it (a
request whose declared size is over the cap, or a chunked one). An upstream error is read whole (it is
small), classified (`app.engine.failures`) and judged as the engine judges (`app.engine.block_cause`: size,
content or unknown); in translate mode a size refusal (or an unknown one, which bulkhead treats as size) goes
back as the client's own overflow error, a content block as a non-retryable error. Everything else — success,
the provider's own errors, rate limits — goes back byte for byte.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from app.connections import ConnectionServer
from app.engine.block_cause import hop_label, judge
from app.engine.caps import learned_cap_for
from app.engine.failure_words import decision_of
from app.engine.failures import Failure, classify_fields
from app.engine.profile_evidence import on_failure
from app.model.messages import new_id
from app.proxy import httpio, native_errors
from app.proxy.client_body import ClientBody, model_of
from app.proxy.native_errors import DEFAULT_STYLE, Answer, OverflowStyle, Refusal
from app.proxy.proxy_session import ProxySession
from app.proxy.records import (
    Action,
    CapLearned,
    ProxyEvents,
    ProxyRecord,
    ProxyStarted,
    ProxyStopped,
    RequestFinished,
    RequestStarted,
)
from app.proxy.shrink import Shrunk, shrink
from app.proxy.upstream import Upstream, netloc
from app.proxy.usage import decode_body, usage_from
from app.proxy.wire import Wire, client_name, is_conversation, wire_for
from app.sizes import MIB, format_size

ERROR_BODY_LIMIT = 4 * MIB  # an error answer is read whole up to this (pages are a few KB)
USAGE_HEAD_BYTES = 32 * 1024  # the start and end of an answer are read for its usage
CONTROL_PREFIX = "/_bulkhead/"


@dataclass(frozen=True)
class ProxyOptions:
    upstream: Upstream
    translate: bool = False
    early_reject: bool = False
    shrink: bool = False
    styles: Mapping[Wire, OverflowStyle] = field(default_factory=lambda: dict(DEFAULT_STYLE))
    idle_timeout: float = 900.0  # seconds without a byte either way before a connection is given up
    keep_body_bytes: int = 4 * MIB  # bodies up to this are kept whole for the record (preview, model)

    @property
    def modes(self) -> tuple[str, ...]:
        named = [("translate", self.translate), ("early-reject", self.early_reject), ("shrink", self.shrink)]
        return tuple(name for name, on in named if on) or ("observe",)


@dataclass(frozen=True)
class _Resend:
    record: ProxyRecord  # the record of the second try
    body: bytes


class ProxyServer(ConnectionServer):
    name = "proxy"

    def __init__(
        self,
        options: ProxyOptions,
        session: ProxySession,
        *,
        client: Any,
        events: ProxyEvents | None = None,
    ) -> None:
        self.options, self.session, self.client = options, session, client
        self.events = events or ProxyEvents()
        super().__init__()
        self.url = ""

    # -- lifecycle -----------------------------------------------------------------------------------
    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        bound_host, bound_port = await self.listen(host, port, limit=httpio.MAX_HEAD_BYTES)
        shown = f"[{bound_host}]" if ":" in bound_host else bound_host
        self.url = f"http://{shown}:{bound_port}"
        self.events.emit(
            ProxyStarted(self.url, self.session.id, self.options.upstream.label, self.options.modes)
        )
        return self.url

    async def stop(self) -> None:
        await self.stop_listening()
        with contextlib.suppress(Exception):
            await self.client.aclose()
        self.events.emit(ProxyStopped(self.session.id))

    def status(self) -> dict[str, Any]:
        """What `bulkhead proxy status` shows: where, what, counts and the caps in force."""
        upstream = self.options.upstream
        caps = {}
        for wire in (Wire.ANTHROPIC, Wire.OPENAI_CHAT):
            if upstream.base_for(wire) is None:
                continue
            endpoint = upstream.endpoint_id(wire)
            info = self.session.cap(endpoint)
            caps[endpoint] = {"cap_bytes": info.bytes, "source": info.source, "detail": info.detail}
        return {
            "url": self.url,
            "pid": os.getpid(),
            "session_id": self.session.id,
            "upstream": upstream.label,
            "modes": list(self.options.modes),
            "started_at": self.session.started_at,
            "counts": self.session.counts.to_dict(),
            "caps": caps,
            "store_write_errors": self.session.write_errors,
        }

    # -- connections ---------------------------------------------------------------------------------
    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """One client connection: exchanges until it closes, goes idle or a head is refused."""
        while True:
            try:
                head = await asyncio.wait_for(httpio.read_head(reader), self.options.idle_timeout)
            except httpio.HeadTooLarge as exc:
                await self._write_answer(writer, native_errors.plain(431, str(exc)), keep_alive=False)
                return
            except httpio.BadRequest as exc:
                await self._write_answer(writer, native_errors.plain(400, str(exc)), keep_alive=False)
                return
            if head is None:
                return
            if not await self._exchange(head, reader, writer):
                return

    # -- one exchange ----------------------------------------------------------------------------------
    async def _exchange(
        self, head: httpio.Head, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> bool:
        if head.path.startswith(CONTROL_PREFIX):
            return await self._control(head, reader, writer)
        started, clock = time.time(), time.monotonic()
        options, upstream = self.options, self.options.upstream
        wire = wire_for(head.method, head.path, bool(head.get("anthropic-version")))
        record = ProxyRecord(
            id=new_id("r"),
            session_id=self.session.id,
            started_at=started,
            method=head.method,
            path=head.target,
            wire=str(wire),
            client=client_name(head.get("user-agent")),
        )
        record.set_headers(request=list(head.headers))
        if "100-continue" in head.get("expect").lower():
            writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        url = upstream.url_for(wire, head.target)
        body = ClientBody(head, reader, options.keep_body_bytes, options.idle_timeout)
        if url is None:
            await body.rest()
            answer = native_errors.unreachable(
                wire,
                f"bulkhead proxy forwards to {upstream.label}, which does not serve this API "
                f"({wire}); run another bulkhead proxy for it",
            )
            return await self._answered(record, body, answer, Action.UNREACHABLE, writer, head, clock)
        record.upstream_url = url
        record.endpoint = upstream.endpoint_id(wire)
        self.events.emit(RequestStarted(record))
        conversation = wire.generates and is_conversation(head.method, head.path)
        cap = self.session.cap(record.endpoint).bytes if conversation else None
        declared = None if head.chunked else (head.content_length or 0)
        held: bytes | None = None
        over = cap is not None and (declared is None or declared > cap)
        if conversation and (options.shrink or (options.early_reject and over)):
            held = await body.whole()  # --shrink may resend it; --early-reject must see it whole
            self._client_body(record, body, held)
        client_sent = held
        if held is not None and cap:
            held = await self._fit(record, wire, held, cap)
            if held is None:  # over the cap and not shrunk: answered without sending (--early-reject)
                refusal = Refusal(
                    hop=f"the gateway at {netloc(url)}",
                    rejected_bytes=body.size,
                    cap_bytes=cap,
                    evidence=(self.session.cap(record.endpoint).detail,),
                    early=True,
                )
                answer = native_errors.overflow(wire, options.styles.get(wire, DEFAULT_STYLE[wire]), refusal)
                return await self._answered(record, body, answer, Action.REJECTED_EARLY, writer, head, clock)
        original = client_sent if options.shrink and conversation else None  # what a resend shrinks
        while True:
            outcome = await self._forward(record, wire, head, body, held, url, writer, clock, original)
            if not isinstance(outcome, _Resend):
                return outcome
            record, held, original = outcome.record, outcome.body, None  # once: never a second resend

    async def _fit(self, record: ProxyRecord, wire: Wire, held: bytes, cap: int) -> bytes | None:
        """The body to send: as it is when it fits, else shrunk (--shrink); None: over the cap and
        answered early (--early-reject). Without --early-reject a body that cannot shrink goes up as it is."""
        options = self.options
        if len(held) <= cap:
            return held
        if options.shrink:
            result = await asyncio.to_thread(shrink, held, wire, cap)
            if isinstance(result, Shrunk):
                await self.session.archive(result.entries)
                record.action = Action.SHRUNK
                record.notes += (result.note,)
                return result.body
            record.notes += (f"not shrunk: {result.reason}",)
        if options.early_reject:
            return None
        return held

    async def _forward(
        self,
        record: ProxyRecord,
        wire: Wire,
        head: httpio.Head,
        body: ClientBody,
        held: bytes | None,
        url: str,
        writer: asyncio.StreamWriter,
        clock: float,
        original: bytes | None = None,
    ) -> bool | _Resend:
        """Send one upstream request and answer the client; a `_Resend` when a size refusal of a held
        body was shrunk to the cap just learned (--shrink) and should go up once more."""
        import httpx2 as httpx  # the client module is imported by now; typing only

        options = self.options
        headers = head.forwarded_headers()
        if held is not None:
            headers = [(k, v) for k, v in headers if k.lower() != "content-length"]
            headers.append(("content-length", str(len(held))))
            content: Any = held
            record.sent_bytes = len(held)
            record.sent_sha256 = hashlib.sha256(held).hexdigest()
            record.body = held
        elif head.has_body:
            content = body.pieces()
        else:
            content = None
        headers += list(options.upstream.headers)
        request = self.client.build_request(head.method, url, headers=headers, content=content)
        try:
            response = await self.client.send(request, stream=True)
        except httpx.ConnectError as exc:
            return await self._unreachable(record, wire, body, writer, head, clock, exc)
        except (httpx.TransportError, TimeoutError) as exc:
            return await self._dropped(record, wire, head, body, writer, clock, exc)
        record.first_byte_ms = (time.monotonic() - clock) * 1000
        if held is None:
            self._client_body(record, body)
        record.status = response.status_code
        record.set_headers(response=response.headers.multi_items())
        record.stream = "text/event-stream" in response.headers.get("content-type", "")
        try:
            if response.status_code >= 400:
                return await self._refused(record, wire, head, body, response, writer, clock, original)
            if record.sent_bytes:
                self.session.accepted(record.endpoint, record.sent_bytes)
            return await self._relay(record, head, body, response, writer, clock)
        finally:
            await response.aclose()

    def _client_body(self, record: ProxyRecord, body: ClientBody, held: bytes | None = None) -> None:
        """What the client sent (size, hash, model); when nothing was rewritten, also what went up."""
        record.request_bytes = body.size
        record.body_sha256 = body.sha.hexdigest()
        whole = (
            held if held is not None else (bytes(body.kept) if body.kept is not None and body.done else None)
        )
        record.model = model_of(whole, bytes(body.first))
        if record.body is None:
            record.body = whole
        if held is None and body.done:
            record.sent_bytes, record.sent_sha256 = body.size, record.body_sha256

    async def _relay(
        self,
        record: ProxyRecord,
        head: httpio.Head,
        body: ClientBody,
        response: Any,
        writer: asyncio.StreamWriter,
        clock: float,
    ) -> bool:
        """The upstream's answer to the client as it comes: status, headers, and each piece of body."""
        keep_alive = head.keep_alive and body.done
        no_body = head.method == "HEAD" or response.status_code in (204, 304)
        length = response.headers.get("content-length")
        framed = length is not None and "transfer-encoding" not in response.headers
        raw_headers = response.headers.multi_items()
        if no_body:
            writer.write(_head(response, raw_headers, length=0, keep_alive=keep_alive, exact=length))
            await writer.drain()
            record.client_status = response.status_code
            await self._done(record, clock)
            return keep_alive
        writer.write(
            _head(
                response,
                raw_headers,
                length=int(length) if framed and length else None,
                keep_alive=keep_alive,
            )
        )
        await writer.drain()
        start, end = bytearray(), bytearray()
        try:
            async for piece in response.aiter_raw():
                writer.write(piece if framed else httpio.encode_chunk(piece))
                await writer.drain()
                if len(start) < USAGE_HEAD_BYTES:
                    start += piece[: USAGE_HEAD_BYTES - len(start)]
                end = (end + piece)[-USAGE_HEAD_BYTES:]
        except Exception as exc:  # the upstream (or the client) broke off mid-answer
            if not _is_transport_error(exc):
                raise
            record.notes += (f"the answer broke off mid-way: {type(exc).__name__}",)
            record.client_status = response.status_code
            await self._done(record, clock)
            return False
        if not framed:
            writer.write(httpio.LAST_CHUNK)
            await writer.drain()
        text = decode_body(bytes(start) + b"\n" + bytes(end), response.headers.get("content-encoding", ""))
        if text:
            record.usage = usage_from(text)
        record.client_status = response.status_code
        await self._done(record, clock)
        return keep_alive

    async def _refused(
        self,
        record: ProxyRecord,
        wire: Wire,
        head: httpio.Head,
        body: ClientBody,
        response: Any,
        writer: asyncio.StreamWriter,
        clock: float,
        original: bytes | None = None,
    ) -> bool | _Resend:
        """An error answer: read it, classify it, learn from it; pass it on, translate it, or (--shrink,
        a size refusal of the client's `original` body) shrink to the cap just learned and resend."""
        raw = bytearray()
        async for piece in response.aiter_raw():
            raw += piece
            if len(raw) > ERROR_BODY_LIMIT:
                break
        complete = len(raw) <= ERROR_BODY_LIMIT
        headers = {k: v for k, v in response.headers.items()}
        text = decode_body(bytes(raw), response.headers.get("content-encoding", "")) or ""
        record.set_error_body(text)
        evidence = self.session.evidence(record.endpoint)
        failure = classify_fields(
            status=response.status_code,
            body=text,
            headers=headers,
            request_bytes=record.sent_bytes,
            provider=wire.provider or None,
            size_evidence=evidence,
        )
        failure = judge(
            failure,
            request_bytes=record.sent_bytes,
            accepted_max=evidence.accepted_max,
            floor_bytes=None,  # the client's floor is not known here
            body=text,
            headers=headers,
        )
        self._classified(record, failure)
        hop = hop_label(failure, headers, text, where=netloc(record.upstream_url))
        cap = self._learn(record, failure) if failure.payload_related else None
        conversation = is_conversation(head.method, head.path) and wire.generates
        if failure.payload_related and original is not None and cap:
            resend = await self._resend(record, wire, original, cap, clock)
            if resend is not None:
                return resend
        if conversation and self.options.translate and complete:
            if failure.payload_related:
                refusal = Refusal(hop, record.sent_bytes, cap, failure.evidence)
                answer = native_errors.overflow(
                    wire, self.options.styles.get(wire, DEFAULT_STYLE[wire]), refusal
                )
                return await self._answered(record, body, answer, Action.TRANSLATED, writer, head, clock)
            if failure.cause == "content":
                answer = native_errors.content_block(
                    wire, hop=hop, incident=record.incident or None, evidence=failure.evidence
                )
                return await self._answered(record, body, answer, Action.CONTENT_BLOCKED, writer, head, clock)
        keep_alive = head.keep_alive and body.done and complete
        length = len(raw) if complete else None
        writer.write(_head(response, response.headers.multi_items(), length=length, keep_alive=keep_alive))
        writer.write(bytes(raw) if complete else httpio.encode_chunk(bytes(raw)))
        if not complete:
            async for piece in response.aiter_raw():
                writer.write(httpio.encode_chunk(piece))
                await writer.drain()
            writer.write(httpio.LAST_CHUNK)
        await writer.drain()
        record.client_status = response.status_code
        await self._done(record, clock)
        return keep_alive

    async def _resend(
        self, record: ProxyRecord, wire: Wire, original: bytes, cap: int, clock: float
    ) -> _Resend | None:
        """The client's body shrunk to `cap` for a second try, with the refused attempt recorded; None
        when it cannot be made to fit (the refusal then goes back translated)."""
        result = await asyncio.to_thread(shrink, original, wire, cap)
        if not isinstance(result, Shrunk) or len(result.body) >= (record.sent_bytes or 0):
            reason = result.reason if not isinstance(result, Shrunk) else "no smaller than what was refused"
            record.notes += (f"not resent: {reason}",)
            return None
        await self.session.archive(result.entries)
        again = replace(
            record,
            id=new_id("r"),
            started_at=time.time(),
            action=Action.SHRUNK,
            notes=(f"{result.note}, after a refusal of {format_size(record.sent_bytes)}",),
            kind="",
            cause="",
            reason="",
            evidence=(),
            decision={},
            incident="",
            status=None,
            response_headers={},
            error_body="",
            body=None,
        )
        record.action = Action.RESENT
        record.notes += (f"shrunk to {format_size(len(result.body))} and sent again ({again.id})",)
        await self._done(record, clock)
        self.events.emit(RequestStarted(again))
        return _Resend(again, result.body)

    def _classified(self, record: ProxyRecord, failure: Failure) -> None:
        """The judged failure on the record; what it shows about sizes and the refusing hop is kept (the
        endpoint's evidence, and its gateway profile in state.toml, shared with bulkhead's routes)."""
        record.kind, record.reason, record.cause = failure.kind, failure.reason, failure.cause
        record.incident = failure.incident_id or ""
        record.decision = decision_of(failure)
        evidence = self.session.evidence(record.endpoint)  # as the engine's sender keeps it
        if failure.payload_related:
            evidence.refused(record.sent_bytes)
        elif failure.rule_id == "net.reset-unproven":
            evidence.reset(record.sent_bytes)
        else:
            evidence.last_reset = None
        record.evidence = tuple(failure.evidence)
        on_failure(self.session.state, record.endpoint, failure)

    def _learn(self, record: ProxyRecord, failure: Any) -> int | None:
        """Learn the cap from a size refusal of `sent_bytes` (shared with bulkhead's routes); the cap now
        in force."""
        if record.sent_bytes:
            learned = self.session.learn(record.endpoint, record.sent_bytes, failure)
            if learned.cap_bytes == learned_cap_for(record.sent_bytes):  # this refusal tightened it
                self.events.emit(
                    CapLearned(record.endpoint, learned.cap_bytes, record.sent_bytes, failure.reason)
                )
            record.notes += (f"cap {format_size(learned.cap_bytes)} for {record.endpoint}",)
        cap = self.session.cap(record.endpoint).bytes
        record.cap_bytes = cap
        return cap

    async def _unreachable(
        self,
        record: ProxyRecord,
        wire: Wire,
        body: ClientBody,
        writer: asyncio.StreamWriter,
        head: httpio.Head,
        clock: float,
        exc: BaseException,
    ) -> bool:
        record.sent_bytes = None
        record.reason = f"nothing answered at {netloc(record.upstream_url)}: {exc or type(exc).__name__}"
        answer = native_errors.unreachable(wire, f"bulkhead proxy: {record.reason}")
        return await self._answered(record, body, answer, Action.UNREACHABLE, writer, head, clock)

    async def _dropped(
        self,
        record: ProxyRecord,
        wire: Wire,
        head: httpio.Head,
        body: ClientBody,
        writer: asyncio.StreamWriter,
        clock: float,
        exc: BaseException,
    ) -> bool:
        """The upstream dropped the connection (or went quiet) before answering. A drop judged to be about
        size is translated in translate mode; otherwise the client's connection is dropped too, as the
        gateway dropped ours (observe changes nothing)."""
        if record.request_bytes is None:
            self._client_body(record, body)
        if record.sent_bytes is None:  # dropped while the body was still going up: its declared size
            record.sent_bytes = head.content_length if not head.chunked else None
        timeout = isinstance(exc, TimeoutError) or "Timeout" in type(exc).__name__
        evidence = self.session.evidence(record.endpoint)
        failure = classify_fields(
            message=str(exc) or type(exc).__name__,
            request_bytes=record.sent_bytes,
            transport="timeout" if timeout else "connection",
            error_type=type(exc).__name__,
            provider=wire.provider or None,
            size_evidence=evidence,
        )
        failure = judge(
            failure, request_bytes=record.sent_bytes, accepted_max=evidence.accepted_max, floor_bytes=None
        )
        self._classified(record, failure)
        conversation = is_conversation(head.method, head.path) and wire.generates
        if failure.payload_related:
            cap = self._learn(record, failure)
            if conversation and self.options.translate:
                hop = hop_label(failure, where=netloc(record.upstream_url))
                refusal = Refusal(hop, record.sent_bytes, cap, failure.evidence)
                style = self.options.styles.get(wire, DEFAULT_STYLE[wire])
                answer = native_errors.overflow(wire, style, refusal)
                return await self._answered(record, body, answer, Action.TRANSLATED, writer, head, clock)
        record.action = Action.DROPPED
        await self._done(record, clock)
        return False

    async def _answered(
        self,
        record: ProxyRecord,
        body: ClientBody,
        answer: Answer,
        action: Action,
        writer: asyncio.StreamWriter,
        head: httpio.Head,
        clock: float,
    ) -> bool:
        """An answer the proxy wrote itself (a translated error, an early reject, a 502)."""
        if not body.done:
            with contextlib.suppress(Exception):
                await body.rest()
        if record.request_bytes is None:
            self._client_body(record, body)
        if record.action is not Action.PASSED:  # e.g. shrunk, and still refused
            record.notes += (f"was {record.action} first",)
        record.action = action
        record.client_status = answer.status
        keep_alive = head.keep_alive and body.done
        await self._write_answer(writer, answer, keep_alive=keep_alive)
        await self._done(record, clock)
        return keep_alive

    async def _write_answer(self, writer: asyncio.StreamWriter, answer: Answer, *, keep_alive: bool) -> None:
        writer.write(
            httpio.encode_head(answer.status, answer.headers, length=len(answer.body), keep_alive=keep_alive)
        )
        writer.write(answer.body)
        await writer.drain()

    async def _done(self, record: ProxyRecord, clock: float) -> None:
        record.latency_ms = (time.monotonic() - clock) * 1000
        if record.cap_bytes is None and record.endpoint:
            record.cap_bytes = self.session.cap(record.endpoint).bytes
        await self.session.record(record)
        self.events.emit(RequestFinished(record))

    # -- control plane -------------------------------------------------------------------------------
    async def _control(
        self, head: httpio.Head, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> bool:
        async for _ in httpio.body_pieces(head, reader):
            pass
        if head.method == "GET" and head.path.rstrip("/") == CONTROL_PREFIX + "status":
            answer = Answer(200, (("content-type", "application/json"),), json.dumps(self.status()).encode())
        else:
            answer = native_errors.plain(
                404, f"no proxy control endpoint {head.method} {head.path} (try GET {CONTROL_PREFIX}status)"
            )
        await self._write_answer(writer, answer, keep_alive=head.keep_alive)
        return head.keep_alive


def _head(
    response: Any,
    headers: list[tuple[str, str]],
    *,
    length: int | None,
    keep_alive: bool,
    exact: str | None = None,
) -> bytes:
    """The upstream's status line and headers as they came (hop-by-hop ones replaced by ours)."""
    reason = response.reason_phrase or None
    if exact is not None:  # HEAD, 204, 304: the upstream's Content-Length as it said, no body
        data = httpio.encode_head(
            response.status_code, headers, length=0, keep_alive=keep_alive, status_text=reason
        )
        return data.replace(b"content-length: 0\r\n", f"content-length: {exact}\r\n".encode("latin-1"), 1)
    return httpio.encode_head(
        response.status_code, headers, length=length, keep_alive=keep_alive, status_text=reason
    )


def _is_transport_error(exc: BaseException) -> bool:
    import httpx2 as httpx

    return isinstance(exc, httpx.TransportError | TimeoutError | ConnectionError)
