"""The lab's HTTP/1.1 server: stdlib asyncio streams, keep-alive, chunked SSE and event-stream answers.

Each request goes through the same three stages, and `/_lab/requests` records which one answered:

1. **gateway** (every path but `/_lab/*`): a body over the cap gets the profile's answer
   (`gateway.py`) before the model sees anything — verdicts `blocked:<profile>-<status>` or `reset`;
2. **provider** (`/v1/messages`, `/v1/messages/count_tokens`, `/v1/chat/completions`, `/v1/responses`,
   `/v1/responses/compact`,
   `/model/{id}/converse`, `/converse-stream`, `/count-tokens`; a path prefix is allowed): malformed
   requests (`bad-request`), injected faults (`fault:<kind>`, `faults.py`), the context window
   (`overflow`), each in the provider's own shape (`wire_*.py`);
3. **model** (`model.py`): the lab model answers — verdict `passed`.

Each record in the log: id, time (UTC ISO 8601), method, path, bytes (body size, or the declared
Content-Length when the gateway answered first), sha256 (of the body, once read whole), wire, verdict, status (None for reset/drop/timeout);
for model requests also model, operation, stream, input_tokens, system_bytes and system_tail (the
last 4,096 characters of the system prompt: project instructions end up there), tools (how many were
declared), beta (the `anthropic-beta` header, "" without one) and, when answered, output_tokens,
stop_reason (neutral: end_turn/tool_use/max_tokens) and cache read/write tokens.

`GET /` and `HEAD /` answer 200 (clients check that a base URL is reachable so). Model lists (`models.py`: `GET /v1/models`, Bedrock's `/foundation-models` and `/inference-profiles`)
are answered at once, never logged. Control plane (never behind the gateway, never logged): `GET /_lab/health`, `GET|DELETE /_lab/requests`,
`GET|POST /_lab/config` (JSON {gateway, cap, window, faults, seed, slow_pause}), `DELETE /_lab/cache`.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import re
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from types import ModuleType
from typing import Any
from urllib.parse import unquote

from app.connections import ConnectionServer
from app.lab import (
    content_rules,
    gateway,
    model,
    models,
    pages,
    wire_anthropic,
    wire_bedrock,
    wire_openai,
    wire_responses,
)
from app.lab.cache import PromptCache
from app.lab.config import LabConfig
from app.lab.conversation import WireError
from app.lab.fault_pages import GATEWAY_FAULTS, gateway_fault
from app.lab.faults import STATUS_FAULTS, FaultPlan
from app.lab.http import (
    LAST_CHUNK,
    MAX_HEAD_BYTES,
    BadRequestHead,
    RequestHead,
    Response,
    StreamResponse,
    encode_chunk,
    encode_head,
    encode_response,
    json_response,
    parse_head,
    set_linger_zero,
)

log = logging.getLogger(__name__)

WIRES: dict[str, ModuleType] = {
    "anthropic": wire_anthropic,
    "openai": wire_openai,
    "bedrock": wire_bedrock,
    "responses": wire_responses,
}
MAX_BODY_BYTES = 512 * 1024 * 1024
READ_CHUNK = 1024 * 1024
_BEDROCK_RE = re.compile(r"/model/([^/]+)/(converse|converse-stream|count-tokens)$")


@dataclass(frozen=True)
class Route:
    wire: str
    operation: str  # "generate" | "count_tokens"
    model_id: str = ""
    force_stream: bool = False


def match_route(method: str, raw_path: str) -> Route | None:
    if method != "POST":
        return None
    path = raw_path.rstrip("/")
    if path.endswith("/v1/messages/count_tokens"):
        return Route("anthropic", "count_tokens")
    if path.endswith("/v1/messages"):
        return Route("anthropic", "generate")
    if path.endswith("/chat/completions"):
        return Route("openai", "generate")
    if path.endswith("/responses/compact"):
        return Route("responses", "compact")
    if path.endswith("/responses"):
        return Route("responses", "generate")
    match = _BEDROCK_RE.search(path)
    if match:
        operation = "count_tokens" if match.group(2) == "count-tokens" else "generate"
        return Route("bedrock", operation, unquote(match.group(1)), match.group(2) == "converse-stream")
    return None


ENDPOINTS = (
    "POST /v1/messages, /v1/messages/count_tokens, /v1/chat/completions, /v1/responses, "
    "/v1/responses/compact, /model/{id}/converse, /model/{id}/converse-stream, /model/{id}/count-tokens"
)


def not_found(method: str, path: str) -> Response:
    message = f"{method} {path} is not a lab endpoint ({ENDPOINTS})"
    return json_response(404, {"type": "error", "error": {"type": "not_found_error", "message": message}})


class _BodyTooLarge(Exception):
    pass


SYSTEM_TAIL_CHARS = 4096  # the end of the system prompt (where project instructions go) kept in the log


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class LabServer(ConnectionServer):
    name = "lab"
    """The lab: settings, fault plan, prompt cache and request log, served over HTTP on one event loop."""

    def __init__(
        self,
        config: LabConfig | None = None,
        *,
        on_request: Callable[[dict[str, Any]], None] | None = None,
        log_limit: int = 10_000,
    ) -> None:
        self._config = config or LabConfig()
        self._plan = FaultPlan(self._config.fault_rules, self._config.seed)
        self._cache = PromptCache()
        self._log: deque[dict[str, Any]] = deque(maxlen=log_limit)
        self._serial = 0
        super().__init__()
        self.on_request = on_request
        self.host: str | None = None
        self.port: int | None = None

    # --- settings and log (call on the server's loop) ---------------------------------------------

    @property
    def config(self) -> LabConfig:
        return self._config

    def configure(self, **changes: Any) -> LabConfig:
        """Apply `changes`; giving `faults` (or a new seed) re-arms the fault plan from request 1."""
        new = self._config.changed(**changes)
        if (new.faults, new.seed) != (self._config.faults, self._config.seed) or "faults" in changes:
            self._plan = FaultPlan(new.fault_rules, new.seed)
        self._config = new
        return new

    def requests(self) -> list[dict[str, Any]]:
        return [dict(record) for record in self._log]

    def clear_requests(self) -> int:
        count = len(self._log)
        self._log.clear()
        return count

    def clear_cache(self) -> None:
        self._cache.clear()

    @property
    def url(self) -> str:
        host = self.host or "127.0.0.1"
        return f"http://{'[' + host + ']' if ':' in host else host}:{self.port}"

    # --- lifecycle ----------------------------------------------------------------------------------

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        self.host, self.port = await self.listen(host, port, limit=MAX_HEAD_BYTES)
        return self.url

    async def stop(self) -> None:
        await self.stop_listening()

    # --- connections --------------------------------------------------------------------------------

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.transport.set_write_buffer_limits(high=0)  # drain() waits until the kernel has everything
        await self._connection(reader, writer)

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        client_ip = peer[0] if isinstance(peer, tuple) else "127.0.0.1"
        while True:
            try:
                raw = await reader.readuntil(b"\r\n\r\n")
            except asyncio.IncompleteReadError:
                return
            except asyncio.LimitOverrunError:
                await self._send(writer, json_response(431, {"error": "request head too large"}), close=True)
                return
            try:
                head = parse_head(raw[:-4])
            except BadRequestHead as exc:
                await self._send(writer, json_response(400, {"error": str(exc)}), close=True)
                return
            try:
                keep = await self._exchange(head, reader, writer, client_ip)
            except (asyncio.IncompleteReadError, ConnectionError):
                return
            except BadRequestHead as exc:
                await self._send(writer, json_response(400, {"error": str(exc)}), close=True)
                return
            if not keep:
                return

    async def _send(self, writer: asyncio.StreamWriter, response: Response, *, close: bool) -> bool:
        close = close or response.close
        writer.write(encode_response(response, close=close))
        await writer.drain()
        return not close

    @staticmethod
    def _reset(writer: asyncio.StreamWriter) -> None:
        set_linger_zero(writer.get_extra_info("socket"))
        writer.transport.abort()

    async def _read_body(self, head: RequestHead, reader: asyncio.StreamReader) -> bytes:
        if head.chunked:
            parts: list[bytes] = []
            total = 0
            while True:
                line = await reader.readuntil(b"\r\n")
                try:
                    size = int(line.split(b";")[0].strip(), 16)
                except ValueError as exc:
                    raise BadRequestHead(f"bad chunk size {line[:20]!r}") from exc
                if size == 0:
                    while (await reader.readuntil(b"\r\n")) != b"\r\n":
                        pass
                    return b"".join(parts)
                total += size
                if total > MAX_BODY_BYTES:
                    raise _BodyTooLarge
                parts.append(await reader.readexactly(size))
                await reader.readexactly(2)
        length = head.content_length or 0
        if length > MAX_BODY_BYTES:
            raise _BodyTooLarge
        return await reader.readexactly(length) if length else b""

    @staticmethod
    async def _drain(reader: asyncio.StreamReader, nbytes: int) -> None:
        """Read and discard `nbytes` of body (or until the client stops sending)."""
        left = nbytes
        while left > 0:
            data = await reader.read(min(READ_CHUNK, left))
            if not data:
                return
            left -= len(data)

    def _record(self, record: dict[str, Any], verdict: str, status: int | None) -> None:
        record.update(verdict=verdict, status=status)
        self._log.append(record)
        if self.on_request is not None:
            try:
                self.on_request(dict(record))
            except Exception:
                log.exception("lab: the request callback failed")

    async def _finish(
        self,
        writer: asyncio.StreamWriter,
        head: RequestHead,
        record: dict[str, Any],
        response: Response,
        verdict: str,
    ) -> bool:
        self._record(record, verdict, response.status)
        return await self._send(writer, response, close=not head.keep_alive)

    # --- one request --------------------------------------------------------------------------------

    async def _exchange(
        self, head: RequestHead, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, client_ip: str
    ) -> bool:
        if head.path.startswith("/_lab"):
            try:
                body = await self._read_body(head, reader)
            except _BodyTooLarge:
                return await self._send(writer, json_response(413, {"error": "too large"}), close=True)
            return await self._send(
                writer, self._control(head.method, head.path, body), close=not head.keep_alive
            )
        if head.method in ("GET", "HEAD") and head.path.rstrip("/") == "":  # a client's reachability check
            root = json_response(200, {"lab": "bulkhead", "endpoints": ENDPOINTS})
            if head.method == "HEAD":
                writer.write(encode_head(200, root.headers, length=len(root.body), close=not head.keep_alive))
                await writer.drain()
                return head.keep_alive
            return await self._send(writer, root, close=not head.keep_alive)
        listed = models.listing(head.method, head.path, dict(head.headers), self._config.effective_window)
        if listed is not None:  # the model list (GET, no body): answered like a provider, never logged
            return await self._send(writer, json_response(200, listed), close=not head.keep_alive)
        self._serial += 1
        config = self._config
        route = match_route(head.method, head.raw_path)
        record: dict[str, Any] = {
            "id": self._serial,
            "time": _now(),
            "method": head.method,
            "path": head.target,
            "bytes": 0,
            "wire": route.wire if route else None,
            "verdict": "",
            "status": None,
        }
        betas = gateway.profile(config.gateway).betas
        if betas and head.headers.get("anthropic-beta"):
            if betas == "refuse":
                with contextlib.suppress(_BodyTooLarge):
                    record["bytes"] = len(await self._read_body(head, reader))
                return await self._finish(
                    writer,
                    head,
                    record,
                    gateway.beta_refused(head.headers["anthropic-beta"]),
                    "blocked:beta-400",
                )
            head = replace(head, headers={k: v for k, v in head.headers.items() if k != "anthropic-beta"})
        cap = config.effective_cap
        declared = None if head.chunked else (head.content_length or 0)
        ctx = gateway.GatewayContext(head.host, head.path, client_ip, self._serial, config.seed)
        if gateway.profile(config.gateway).headers:  # the cap is on the header block; bodies pass
            if gateway.over_cap(cap, head.size):
                record["bytes"] = declared or 0
                record["header_bytes"] = head.size
                self._record(record, "blocked:header-431", 431)
                await self._send(writer, gateway.block_page("header-431", ctx), close=True)
                return False
            cap = None
        if declared is not None and gateway.over_cap(cap, declared):
            record["bytes"] = declared
            return await self._gateway(
                config, route, head, reader, writer, record, ctx, declared, body_read=False
            )
        if "100-continue" in head.headers.get("expect", "").lower():
            writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        try:
            body = await self._read_body(head, reader)
        except _BodyTooLarge:
            record["bytes"] = declared or MAX_BODY_BYTES
            response = (
                WIRES[route.wire].too_large(MAX_BODY_BYTES)
                if route
                else json_response(413, {"error": "body too large for the lab"})
            )
            self._record(record, "blocked:lab-max-body", 413)
            await self._send(writer, response, close=True)
            return False
        record["bytes"] = len(body)
        record["sha256"] = hashlib.sha256(body).hexdigest()  # what arrived, byte for byte (proxy tests)
        if declared is None and gateway.over_cap(cap, len(body)):
            return await self._gateway(
                config, route, head, reader, writer, record, ctx, len(body), body_read=True
            )
        if route is None:
            return await self._finish(writer, head, record, not_found(head.method, head.path), "not-found")
        if config.gateway == "modsecurity":  # a WAF that judges content, not only size
            found = content_rules.inspect(body)
            if found is not None:
                record["rule"] = f"{found.rule.id} {found.rule.msg}: {found.matched!r} in {found.where}"
                return await self._finish(
                    writer, head, record, pages.modsecurity_403(head.host), "blocked:modsecurity-403"
                )
        return await self._model(config, route, head, body, reader, writer, record)

    async def _gateway(
        self,
        config: LabConfig,
        route: Route | None,
        head: RequestHead,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        record: dict[str, Any],
        ctx: gateway.GatewayContext,
        nbytes: int,
        *,
        body_read: bool,
    ) -> bool:
        profile = gateway.profile(config.gateway)
        cap = config.effective_cap or 0
        if not body_read and not profile.early and "100-continue" in head.headers.get("expect", "").lower():
            writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")  # a WAF reads the body it judges
        if profile.name == "reset":
            if not body_read:
                await self._drain(reader, min(cap, nbytes))
            self._record(record, profile.verdict, None)
            self._reset(writer)
            return False
        if profile.name == "none":
            response = (
                WIRES[route.wire].too_large(cap)
                if route
                else json_response(
                    413,
                    {"error": {"type": "request_too_large", "message": "Request exceeds the maximum size"}},
                )
            )
            response = replace(response, close=True)
        else:
            response = gateway.block_page(profile.name, ctx)
        self._record(record, profile.verdict, response.status)
        if profile.early and not body_read:  # nginx answers on Content-Length, then reads the body away
            await self._send(writer, response, close=True)
            await self._drain(reader, nbytes)
            return False
        if not body_read:
            await self._drain(reader, nbytes)
        await self._send(writer, response, close=True)
        return False

    async def _model(
        self,
        config: LabConfig,
        route: Route,
        head: RequestHead,
        body: bytes,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        record: dict[str, Any],
    ) -> bool:
        wire = WIRES[route.wire]
        try:
            payload = json.loads(body)
        except (ValueError, UnicodeDecodeError) as exc:
            return await self._finish(
                writer, head, record, wire.bad_request(wire.decode_error(str(exc))), "bad-request"
            )
        count_only = route.operation == "count_tokens"
        if route.wire == "anthropic":  # a beta's body field without its beta header: refused, as the API does
            missing = wire_anthropic.beta_field_without_header(
                payload, head.headers.get("anthropic-beta", "")
            )
            if missing:
                return await self._finish(
                    writer, head, record, wire.bad_request(WireError(missing)), "bad-request"
                )
        try:
            if route.wire == "bedrock":
                conv = wire.parse(payload, len(body), route.model_id, count_only=count_only)
            elif route.wire == "anthropic":
                conv = wire.parse(payload, len(body), count_only=count_only)
            elif route.wire == "responses":
                conv = wire.parse(payload, len(body), compact=route.operation == "compact")
            else:
                conv = wire.parse(payload, len(body))
        except WireError as exc:
            return await self._finish(writer, head, record, wire.bad_request(exc), "bad-request")
        if route.force_stream:
            conv = replace(conv, stream=True)
        record.update(
            model=conv.model,
            operation=route.operation,
            stream=conv.stream,
            input_tokens=conv.input_tokens,
            system_bytes=len(conv.system.encode("utf-8")),
            system_tail=conv.system[-SYSTEM_TAIL_CHARS:],
            tools=len(conv.tools),
            beta=head.headers.get("anthropic-beta", ""),
        )
        fault = self._plan.next()  # token counting is rate-limited and can fail like any provider request
        if fault in STATUS_FAULTS:
            return await self._finish(writer, head, record, wire.fault(fault, conv), f"fault:{fault}")
        if fault in GATEWAY_FAULTS:  # a gateway's own page, never the wire format
            return await self._finish(writer, head, record, gateway_fault(fault), f"fault:{fault}")
        if fault == "drop":
            self._record(record, "fault:drop", None)
            writer.close()
            return False
        if fault == "timeout":
            self._record(record, "fault:timeout", None)
            while await reader.read(READ_CHUNK):
                pass
            return False
        if count_only:
            return await self._answer(
                wire, wire.count_tokens(conv), head, writer, record, fault, config, conv
            )
        window = config.effective_window
        if conv.input_tokens > window:
            return await self._finish(
                writer, head, record, wire.overflow(conv.input_tokens, window), "overflow"
            )
        usage = wire.usage_for(conv, self._cache)
        for key in ("reasoning_replayed", "compacted_input", "applied_edits"):  # provider-native context
            if conv.options.get(key):
                record[key] = conv.options[key]
        if conv.options.get("compaction") or getattr(wire, "compaction_due", lambda _c: False)(conv):
            record["compaction"] = True
        if route.operation == "compact":
            return await self._answer(
                wire, wire.compact(conv, usage), head, writer, record, fault, config, conv
            )
        reply = model.respond(conv)
        record.update(
            output_tokens=reply.output_tokens,
            stop_reason=reply.stop_reason,
            cache_read_tokens=usage.cache_read_tokens,
            cache_write_tokens=usage.cache_write_tokens,
        )
        if conv.stream:
            return await self._stream(
                wire, wire.stream(conv, reply, usage), head, writer, record, fault, config
            )
        return await self._answer(
            wire, wire.complete(conv, reply, usage), head, writer, record, fault, config, conv
        )

    async def _answer(
        self,
        wire: ModuleType,
        response: Response,
        head: RequestHead,
        writer: asyncio.StreamWriter,
        record: dict[str, Any],
        fault: str | None,
        config: LabConfig,
        conv: Any,
    ) -> bool:
        """A complete (JSON) answer, with what `slow`, `cut` and `stream-error` do to one."""
        verdict = f"fault:{fault}" if fault else "passed"
        if fault == "slow":
            await asyncio.sleep(config.slow_pause * 4)
        if fault == "stream-error":  # no stream to break: the provider's overload answer instead
            return await self._finish(writer, head, record, wire.fault("529", conv), verdict)
        if fault == "cut":  # half the answer, then a reset
            self._record(record, verdict, response.status)
            data = encode_response(response, close=False)
            writer.write(data[: len(data) - len(response.body) // 2])
            await writer.drain()
            self._reset(writer)
            return False
        return await self._finish(writer, head, record, response, verdict)

    async def _stream(
        self,
        wire: ModuleType,
        response: StreamResponse,
        head: RequestHead,
        writer: asyncio.StreamWriter,
        record: dict[str, Any],
        fault: str | None,
        config: LabConfig,
    ) -> bool:
        self._record(record, f"fault:{fault}" if fault else "passed", response.status)
        keep = head.keep_alive
        writer.write(encode_head(response.status, response.headers, length=None, close=not keep))
        events = response.events
        content = [i for i, event in enumerate(events) if event.content]
        stop_at = content[len(content) // 2] if content else max(0, len(events) // 2 - 1)
        for index, event in enumerate(events):
            writer.write(encode_chunk(event.data))
            await writer.drain()
            if fault == "cut" and index == stop_at:
                self._reset(writer)
                return False
            if fault == "stream-error" and index == stop_at:
                writer.write(encode_chunk(wire.stream_error()))
                break
            if fault == "slow" and index < len(events) - 1:
                await asyncio.sleep(config.slow_pause)
        writer.write(LAST_CHUNK)
        await writer.drain()
        return keep

    # --- control plane ------------------------------------------------------------------------------

    def _control(self, method: str, path: str, body: bytes) -> Response:
        headers = (("cache-control", "no-store"),)
        path = path.rstrip("/")
        if path == "/_lab/health" and method in ("GET", "HEAD"):
            return json_response(
                200, {"ok": True, "lab": "bulkhead", "config": self._config.to_dict()}, headers
            )
        if path == "/_lab/requests" and method == "GET":
            return json_response(200, self.requests(), headers)
        if path == "/_lab/requests" and method == "DELETE":
            return json_response(200, {"cleared": self.clear_requests()}, headers)
        if path == "/_lab/cache" and method == "DELETE":
            self.clear_cache()
            return json_response(200, {"cleared": True}, headers)
        if path == "/_lab/config" and method == "GET":
            return json_response(200, self._config.to_dict(), headers)
        if path == "/_lab/config" and method == "POST":
            try:
                changes = json.loads(body or b"{}")
                if not isinstance(changes, dict):
                    raise ValueError('send a JSON object like {"gateway": "nginx", "cap": "128KB"}')
                return json_response(200, self.configure(**changes).to_dict(), headers)
            except (ValueError, TypeError) as exc:
                return json_response(400, {"error": str(exc)}, headers)
        return json_response(404, {"error": f"no lab control endpoint {method} {path}"}, headers)
