"""AWS Bedrock through boto3's `converse_stream`: run in a worker thread, bridged to asyncio.

Request parameters (`request.body`) are what `converse_stream(**body)` takes: `modelId`
(sent in the URL), `messages`, `system`, `inferenceConfig`, `toolConfig`. Images are raw
bytes there. botocore serializes the rest with `json.dumps` defaults — `", "` and `": "`
separators, `ensure_ascii=True` (an emoji becomes a 12-byte surrogate pair), blobs as
base64 — and the prediction does exactly the same, per message, once.

- Bedrock demands strict user/assistant alternation: consecutive messages of one role are
  always merged (tool results lead in a user turn). System messages join `system`.
- With no tools in the request, tool calls and results travel as text (Bedrock rejects
  `toolUse` blocks without a `toolConfig`), e.g. for a summarizer request.
- Cache points (chat requests, models that accept them) follow the system prompt and the
  last two user turns.
- Credentials: the AWS chain (env, `profile`, SSO, instance role; `AWS_BEARER_TOKEN_BEDROCK`).
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import threading
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from app.ca_bundle import botocore_verify
from app.config import Route, Settings
from app.model.costs import Usage
from app.model.events import RequestPurpose
from app.model.messages import COMPACTION_SUMMARY_HEADER, Image, Message, Native, Text, ToolCall, ToolResult
from app.model.tools import ToolSpec
from app.providers.base import (
    ListedModel,
    ProbeFloor,
    ProbeReply,
    Provider,
    ProviderError,
    Request,
    StopChunk,
    StreamEvent,
    TextChunk,
    ToolCallChunk,
    UsageChunk,
    one_encoder,
    parse_retry_after,
)
from app.providers.catalog import supports_prompt_cache
from app.providers.html import decode_body
from app.providers.wire import (
    ERROR_BODY_LIMIT,
    Exchange,
    MalformedEvent,
    OneSlot,
    PieceCache,
    StreamParser,
    Turn,
    body_len,
    count_field,
    get,
    incomplete_stream,
    index_field,
    list_len,
    parse_arguments,
    text_field,
    transport_kind,
    unexpected_200,
    wrap_unknown,
)

CACHE_POINT = {"cachePoint": {"type": "default"}}
CACHED_USER_TURNS = 2
EMPTY_RESULT = "(no output)"  # Bedrock rejects blank text
_IMAGE_FORMATS = {
    "image/png": "png",
    "image/jpeg": "jpeg",
    "image/jpg": "jpeg",
    "image/gif": "gif",
    "image/webp": "webp",
}
_STOP_REASONS = {
    "end_turn": "end",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "stop_sequence": "stop_sequence",
}
_ITEM_SEPARATOR = len(", ")
_THREAD = threading.local()


def _blob(value: Any) -> str:
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(value).decode("ascii")
    raise TypeError(f"not JSON serializable: {type(value).__name__}")


# botocore's options: json.dumps's defaults, blobs as base64
_BOTOCORE_ENCODE = one_encoder(_blob, ascii_only=True, separators=(", ", ": "), allow_nan=True)


def botocore_len(obj: Any) -> int:
    """Bytes of `obj` as botocore's rest-json serializer writes it (json.dumps defaults, blobs base64)."""
    if _BOTOCORE_ENCODE is None:
        return len(json.dumps(obj, default=_blob))  # ensure_ascii: characters == bytes
    return len("".join(_BOTOCORE_ENCODE(obj, 0)))


CACHE_POINT_BYTES = botocore_len(CACHE_POINT)


@dataclass(frozen=True, slots=True)
class _Piece:
    role: str  # system | user | assistant
    blocks: tuple[dict[str, Any], ...]
    sizes: tuple[int, ...]


def _call_text(part: ToolCall) -> str:
    return f"[tool call {part.name} {json.dumps(dict(part.args), ensure_ascii=False)}]"


def _is_tool_result(block: dict[str, Any]) -> bool:
    return "toolResult" in block


def translate(message: Message, *, tools: bool) -> _Piece:
    """A message's Converse content blocks, each measured once. Without tools, tool parts are text."""
    role = "user" if message.role == "tool" else message.role
    blocks: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, Text):
            if part.text.strip():
                blocks.append({"text": part.text})
        elif isinstance(part, Native):  # another provider's compaction: its readable summary, if any
            if part.is_compaction and part.readable and role != "system":
                blocks.append({"text": COMPACTION_SUMMARY_HEADER + part.readable})
        elif role == "system":
            continue
        elif isinstance(part, Image):
            blocks.append(
                {
                    "image": {
                        "format": _IMAGE_FORMATS.get(part.media_type.lower(), part.media_type.split("/")[-1]),
                        "source": {"bytes": base64.b64decode(part.data)},
                    }
                }
            )
        elif isinstance(part, ToolCall):
            if role == "assistant" and tools:
                blocks.append(
                    {"toolUse": {"toolUseId": part.id, "name": part.name, "input": dict(part.args)}}
                )
            else:
                blocks.append({"text": _call_text(part)})
        elif isinstance(part, ToolResult):
            if role == "user" and tools:
                result: dict[str, Any] = {
                    "toolUseId": part.call_id,
                    "content": [{"text": part.content if part.content.strip() else EMPTY_RESULT}],
                }
                if part.is_error:
                    result["status"] = "error"
                blocks.append({"toolResult": result})
            else:
                label = "[tool error]" if part.is_error else "[tool result]"
                blocks.append({"text": f"{label}\n{part.content or EMPTY_RESULT}"})
    return _Piece(role, tuple(blocks), tuple(botocore_len(b) for b in blocks))


_OVERHEAD = {role: botocore_len({"role": role, "content": []}) - 2 for role in ("user", "assistant")}


class BedrockProvider(Provider):
    kind = "bedrock"

    def __init__(self, route: Route, settings: Settings, api_key: str | None = None) -> None:
        super().__init__(route, settings, api_key)
        self._pieces: PieceCache[_Piece] = PieceCache()
        self._system_slot: tuple[str, dict[str, Any], int] | None = None
        self._tools_slot = OneSlot()
        self._client: Any = None
        self._client_lock = threading.Lock()

    @property
    def serialized_messages(self) -> int:
        return self._pieces.serialized

    @property
    def region(self) -> str | None:
        return self.route.region or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")

    def _url(self) -> str:
        base = (
            self.route.endpoint_url or f"https://bedrock-runtime.{self.region or 'us-east-1'}.amazonaws.com"
        )
        return f"{base.rstrip('/')}/model/{self.route.model}/converse-stream"

    # -- building -----------------------------------------------------------------------------
    def _tools(self, tools: Sequence[ToolSpec]) -> tuple[dict[str, Any], int]:
        def make() -> tuple[dict[str, Any], int]:
            config = {
                "tools": [
                    {
                        "toolSpec": {
                            "name": t.name,
                            "description": t.description,
                            "inputSchema": {"json": dict(t.input_schema)},
                        }
                    }
                    for t in tools
                ]
            }
            return config, botocore_len(config)

        return self._tools_slot.get(tuple(tools), make)

    def _system_block(self, system: str) -> tuple[dict[str, Any], int]:
        slot = self._system_slot
        if slot is None or slot[0] != system:
            block = {"text": system}
            slot = (system, block, botocore_len(block))
            self._system_slot = slot
        return slot[1], slot[2]

    def _build(
        self,
        view: Sequence[Message],
        system: str,
        tools: Sequence[ToolSpec],
        *,
        max_tokens: int,
        purpose: RequestPurpose = "chat",
    ) -> Request:
        with_tools = bool(tools)
        cache = purpose == "chat" and supports_prompt_cache("bedrock", self.route.model)
        system_blocks: list[dict[str, Any]] = []
        system_sizes: list[int] = []
        if system.strip():
            block, size = self._system_block(system)
            system_blocks.append(block)
            system_sizes.append(size)

        turns: list[Turn] = []
        for message in view:
            key = message.id if with_tools else message.id + "\x00text"
            piece = self._pieces.get(key, partial(translate, message, tools=with_tools))
            if piece.role == "system":
                system_blocks.extend(piece.blocks)
                system_sizes.extend(piece.sizes)
                continue
            if not piece.blocks:
                continue
            if not turns or turns[-1].role != piece.role:
                turns.append(Turn(piece.role))
            turns[-1].add(piece.blocks, piece.sizes, _is_tool_result)

        if cache and system_blocks:
            system_blocks.append(CACHE_POINT)
            system_sizes.append(CACHE_POINT_BYTES)
        marks = set()
        if cache:
            marks = set([i for i, turn in enumerate(turns) if turn.role == "user"][-CACHED_USER_TURNS:])
        messages: list[dict[str, Any]] = []
        message_sizes: list[int] = []
        for index, turn in enumerate(turns):
            blocks, sizes = turn.content()
            if index in marks:
                blocks.append(CACHE_POINT)
                sizes.append(CACHE_POINT_BYTES)
            messages.append({"role": turn.role, "content": blocks})
            message_sizes.append(_OVERHEAD[turn.role] + list_len(sizes, _ITEM_SEPARATOR))

        body: dict[str, Any] = {"modelId": self.route.model, "messages": messages}
        known = {"messages": list_len(message_sizes, _ITEM_SEPARATOR)}
        if system_blocks:
            body["system"] = system_blocks
            known["system"] = list_len(system_sizes, _ITEM_SEPARATOR)
        body["inferenceConfig"] = {"maxTokens": max_tokens}
        if tools:
            body["toolConfig"], known["toolConfig"] = self._tools(tools)
        sized = {k: v for k, v in body.items() if k != "modelId"}  # the model id travels in the URL
        predicted = body_len(sized, known, botocore_len)
        return Request(
            provider=self.kind,
            route=self.route.name,
            model=self.route.model,
            url=self._url(),
            body=body,
            predicted_bytes=predicted,
            max_tokens=max_tokens,
            purpose=purpose,
            message_count=len(view),
        )

    # -- the client (created in the worker thread: importing boto3 is slow) --------------------
    def _ensure_client(self) -> Any:
        with self._client_lock:
            if self._client is not None:
                return self._client
            import boto3
            from botocore.config import Config

            session = boto3.session.Session(
                profile_name=self.route.profile or None, region_name=self.route.region or None
            )
            _register_credentials(session)
            region = session.region_name or ("us-east-1" if self.route.endpoint_url else None)
            config = Config(
                retries={"total_max_attempts": 1},
                read_timeout=self.settings.request_timeout,
                connect_timeout=self.settings.connect_timeout,
                tcp_keepalive=True,
            )
            client = session.client(
                "bedrock-runtime",
                region_name=region,
                endpoint_url=self.route.endpoint_url or None,
                config=config,
                verify=botocore_verify(self.route, self.settings),
            )
            client.meta.events.register("before-sign.bedrock-runtime.*", add_accept_header)
            client.meta.events.register("before-send.bedrock-runtime.*", _before_send)
            client.meta.events.register("before-parse.bedrock-runtime.ConverseStream", _before_parse)
            self._client = client
            return client

    def _fresh_connection(self) -> None:
        """After a failed request the next one goes on a new connection (issue 22): a gateway that answered
        413 before reading the whole body may read the rest as a new request and queue a stray reply (Caddy's
        431) on the pooled connection. Closing the client closes its idle pooled connections; one still in use
        is closed when it is given back. The next request makes a new client."""
        with self._client_lock:
            client, self._client = self._client, None
        if client is not None:
            try:
                client.close()
            except Exception:  # closing is best effort
                pass

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            try:
                client.close()
            except Exception:  # closing is best effort
                pass

    # -- probing --------------------------------------------------------------------------------
    probe_method = (
        "Bedrock's CountTokens operation (/model/{id}/count-tokens): same endpoint and gateway, "
        "but it only counts tokens, so probes cost nothing"
    )

    async def probe(self, size: int, floor: ProbeFloor | None = None) -> ProbeReply:
        floor = floor or ProbeFloor()  # Bedrock's betas travel in the body: no extra headers to carry
        shape = self.build((), floor.system, floor.tools, max_tokens=1, purpose="probe").body
        carried = {key: shape[key] for key in ("system", "toolConfig") if key in shape}
        envelope = {
            "modelId": self.route.model,
            "input": {"converse": {"messages": [{"role": "user", "content": [{"text": ""}]}], **carried}},
        }
        filler = "x" * max(1, size - botocore_len(envelope["input"]))
        return await self._count_tokens([{"text": filler}], carried)

    async def probe_texts(self, texts: Sequence[str]) -> ProbeReply:
        return await self._count_tokens([{"text": text or " "} for text in texts])

    async def _count_tokens(
        self, content: list[dict[str, str]], carried: dict[str, Any] | None = None
    ) -> ProbeReply:
        exchange = Exchange()

        def work() -> None:
            _THREAD.exchange = exchange
            try:
                client = self._ensure_client()
                client.count_tokens(
                    modelId=self.route.model,
                    input={
                        "converse": {"messages": [{"role": "user", "content": content}], **(carried or {})}
                    },
                )
            finally:
                _THREAD.exchange = None

        try:
            await asyncio.to_thread(work)
        except Exception as exc:  # every SDK failure becomes a ProviderError
            await asyncio.to_thread(self._fresh_connection)
            raise bedrock_error(exc, exchange, in_stream=False) from exc
        return ProbeReply(exchange.status or 200, exchange.actual_bytes)

    # -- the model list ------------------------------------------------------------------------
    def _control_endpoint(self) -> str | None:
        """Bedrock's control plane (`bedrock`, not `bedrock-runtime`): the route's endpoint_url with
        `bedrock-runtime.` made `bedrock.`; another endpoint (a gateway, a VPC endpoint) as it is."""
        url = self.route.endpoint_url
        return url.replace("://bedrock-runtime.", "://bedrock.", 1) if url else None

    async def list_models(self) -> list[ListedModel]:
        """ListFoundationModels (text output) and ListInferenceProfiles, every page."""

        def work() -> list[ListedModel]:
            import boto3
            from botocore.config import Config

            session = boto3.session.Session(
                profile_name=self.route.profile or None, region_name=self.route.region or None
            )
            region = session.region_name or "us-east-1"
            config = Config(
                retries={"total_max_attempts": 1},
                read_timeout=self.settings.connect_timeout * 3,
                connect_timeout=self.settings.connect_timeout,
            )
            client = session.client(
                "bedrock",
                region_name=region,
                endpoint_url=self._control_endpoint(),
                config=config,
                verify=botocore_verify(self.route, self.settings),
            )
            client.meta.events.register("before-sign.bedrock.*", add_accept_header)
            try:
                listed = []
                for model in client.list_foundation_models(byOutputModality="TEXT").get("modelSummaries", []):
                    on_demand = "ON_DEMAND" in (model.get("inferenceTypesSupported") or ["ON_DEMAND"])
                    listed.append(
                        ListedModel(
                            model["modelId"],
                            model.get("modelName", ""),
                            note="" if on_demand else "needs an inference profile",
                        )
                    )
                token = None
                while True:
                    page = client.list_inference_profiles(**({"nextToken": token} if token else {}))
                    for profile in page.get("inferenceProfileSummaries", []):
                        listed.append(
                            ListedModel(
                                profile["inferenceProfileId"],
                                profile.get("inferenceProfileName", ""),
                                note="inference profile",
                            )
                        )
                    token = page.get("nextToken")
                    if not token:
                        return listed
            finally:
                client.close()

        try:
            return await asyncio.to_thread(work)
        except Exception as exc:  # every SDK failure becomes a ProviderError
            raise bedrock_error(exc, Exchange(), in_stream=False) from exc

    # -- streaming ----------------------------------------------------------------------------
    async def stream(self, request: Request) -> AsyncIterator[StreamEvent]:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        exchange = Exchange()
        cancel = threading.Event()

        def post(kind: str, value: Any) -> None:
            try:
                loop.call_soon_threadsafe(queue.put_nowait, (kind, value))
            except RuntimeError:  # the loop is gone: nobody is listening any more
                cancel.set()

        def work() -> None:
            _THREAD.exchange = exchange
            events = None
            try:
                client = self._ensure_client()
                response = client.converse_stream(**request.body)
                events = response.get("stream")
                post("started", events is not None)
                if events is not None:
                    for event in events:
                        if cancel.is_set():
                            break
                        post("event", event)
                post("end", None)
            except Exception as exc:  # handed to the event loop, wrapped there
                self._fresh_connection()
                post("error", exc)
            finally:
                _THREAD.exchange = None
                if events is not None:
                    try:
                        events.close()
                    except Exception:
                        pass

        threading.Thread(target=work, name=f"bedrock-{self.route.name}", daemon=True).start()
        parser = BedrockEvents(self.kind, exchange)
        started = False
        try:
            while True:
                kind, value = await queue.get()
                if kind == "event":
                    try:
                        events = parser.feed(value)
                    except ProviderError:
                        raise
                    except Exception as exc:
                        raise wrap_unknown(self.kind, exc, exchange, in_stream=True) from exc
                    for event in events:
                        yield event
                elif kind == "started":
                    started = True
                    exchange.apply(request)
                    if exchange.unexpected_body is not None or not value:
                        content_type = exchange.response_headers.get("content-type")
                        raise unexpected_200(
                            self.kind, exchange.unexpected_body or "", exchange, content_type=content_type
                        )
                elif kind == "error":
                    exchange.apply(request)
                    raise bedrock_error(value, exchange, in_stream=started) from value
                else:
                    break
        finally:
            cancel.set()
        for event in parser.finish():
            yield event


def _register_credentials(session: Any) -> None:
    """The AWS credentials boto3 resolved (env, profile, SSO, role) join the redaction registry."""
    from app.redact import register_secret

    try:
        credentials = session.get_credentials()
        frozen = credentials.get_frozen_credentials() if credentials is not None else None
    except Exception:  # no credentials yet: the request will say so
        return
    if frozen is not None:
        register_secret(frozen.access_key, "AWS access key id")
        register_secret(frozen.secret_key, "AWS secret access key")
        register_secret(frozen.token, "AWS session token")


def add_accept_header(request: Any, **_: Any) -> None:
    """botocore sends no `Accept` header; a browser-less client is expected to (the OWASP CRS scores its
    absence, rule 920300), so say what is read back: the event stream, or JSON."""
    headers = getattr(request, "headers", None)
    if headers is None or "Accept" in headers:
        return
    url = str(getattr(request, "url", ""))
    headers["Accept"] = "application/vnd.amazon.eventstream" if "-stream" in url else "application/json"


def _before_send(request: Any, **_: Any) -> None:
    exchange: Exchange | None = getattr(_THREAD, "exchange", None)
    if exchange is None:
        return
    body = request.body
    size = len(body) if isinstance(body, (bytes, bytearray, str)) else None
    exchange.saw_request(size, request.headers)


def _before_parse(response_dict: Mapping[str, Any], **_: Any) -> None:
    exchange: Exchange | None = getattr(_THREAD, "exchange", None)
    if exchange is None:
        return
    status = response_dict.get("status_code")
    exchange.saw_response(status, response_dict.get("headers"))
    body = response_dict.get("body")
    content_type = exchange.response_headers.get("content-type", "")
    if status is not None and status >= 300:
        if isinstance(body, (bytes, bytearray)):
            exchange.error_body = decode_body(bytes(body), ERROR_BODY_LIMIT)
    elif "eventstream" not in content_type.lower():
        # a 200 that is not an event stream (a captive portal, a block page): keep the page;
        # botocore would otherwise try to decode it as frames
        raw = body.read(ERROR_BODY_LIMIT) if hasattr(body, "read") else body
        exchange.unexpected_body = decode_body(raw, ERROR_BODY_LIMIT) or ""


def bedrock_error(exc: BaseException, exchange: Exchange, *, in_stream: bool) -> ProviderError:
    """A ProviderError for anything boto3/botocore raised, with the HTTP facts the hooks saw."""
    name = type(exc).__name__
    response = getattr(exc, "response", None)
    if isinstance(response, dict) and isinstance(response.get("Error"), dict):
        error = response["Error"]
        meta = response.get("ResponseMetadata") or {}
        stream_error = name == "EventStreamError" or in_stream
        status = meta.get("HTTPStatusCode") or exchange.status
        headers = {
            str(k).lower(): str(v) for k, v in (meta.get("HTTPHeaders") or {}).items()
        } or exchange.response_headers
        code = str(error.get("Code") or name)
        message = str(error.get("Message") or "")
        if stream_error:
            body = json.dumps({"message": message}, ensure_ascii=False)
        else:
            body = exchange.error_body if exchange.error_body is not None else message
        return ProviderError(
            f"bedrock: HTTP {status} {code}: {_short(message or name)}",
            provider="bedrock",
            original=exc,
            status=status,
            headers=headers,
            body=body,
            request_bytes=exchange.actual_bytes,
            retry_after=parse_retry_after(headers),
            error_type=code,
            transport="stream-error" if stream_error else "http",
            request_header_bytes=exchange.request_header_bytes,
        )
    transport = transport_kind(exc)
    request_bytes = exchange.actual_bytes
    if request_bytes is None:
        body = getattr(getattr(exc, "request", None), "body", None)
        request_bytes = len(body) if isinstance(body, (bytes, bytearray, str)) else None
    return ProviderError(
        f"bedrock: {transport or 'error'} {name}: {_short(str(exc) or name)}",
        provider="bedrock",
        original=exc,
        status=exchange.status if in_stream else None,
        headers=exchange.response_headers if in_stream else {},
        body=exchange.error_body,
        request_bytes=request_bytes,
        error_type=name,
        transport=transport or ("stream-error" if in_stream else None),
        request_header_bytes=exchange.request_header_bytes,  # a reset of big headers is judged as for the other SDKs
    )


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "…"


class BedrockEvents(StreamParser):
    """Turns ConverseStream events (plain dicts from botocore) into bulkhead stream events."""

    def __init__(self, provider: str, exchange: Exchange) -> None:
        super().__init__(provider, exchange)
        self.tools: dict[int, dict[str, Any]] = {}
        self.usage: dict[str, int] = {}
        self.stop_reason: str | None = None

    def _feed(self, event: Mapping[str, Any]) -> list[StreamEvent]:
        if not isinstance(event, Mapping):
            raise MalformedEvent(f"event is {type(event).__name__}, not an object")
        if "contentBlockDelta" in event:
            data = event["contentBlockDelta"]
            delta = get(data, "delta") or {}
            text = text_field(delta, "text")
            if text:
                return [TextChunk(text)]
            if "toolUse" in delta:
                tool = self.tools.get(index_field(data, "contentBlockIndex"))
                if tool is not None:
                    tool["json"].append(text_field(delta["toolUse"], "input"))
            return []
        if "contentBlockStart" in event:
            data = event["contentBlockStart"]
            tool = get(get(data, "start"), "toolUse")
            if tool:
                self.tools[index_field(data, "contentBlockIndex")] = {
                    "id": text_field(tool, "toolUseId") or f"tooluse_{uuid.uuid4().hex[:20]}",
                    "name": text_field(tool, "name"),
                    "json": [],
                }
            return []
        if "contentBlockStop" in event:
            tool = self.tools.pop(index_field(event["contentBlockStop"], "contentBlockIndex"), None)
            if tool is None:
                return []
            return [ToolCallChunk(tool["id"], tool["name"], parse_arguments("".join(tool["json"])))]
        if "messageStop" in event:
            self.stop_reason = text_field(event["messageStop"], "stopReason") or "end_turn"
            return []
        if "metadata" in event:
            usage = get(event["metadata"], "usage") or {}
            for key in ("inputTokens", "outputTokens", "cacheReadInputTokens", "cacheWriteInputTokens"):
                value = count_field(usage, key)
                if value is not None:
                    self.usage[key] = value
            return []
        return []  # messageStart and anything newer

    def _finish(self) -> list[StreamEvent]:
        if self.stop_reason is None:
            raise incomplete_stream(self.provider, self.exchange)
        events: list[StreamEvent] = []
        for index in sorted(self.tools):
            tool = self.tools.pop(index)
            events.append(ToolCallChunk(tool["id"], tool["name"], parse_arguments("".join(tool["json"]))))
        if self.usage:
            cache_read = self.usage.get("cacheReadInputTokens", 0)
            cache_write = self.usage.get("cacheWriteInputTokens", 0)
            events.append(
                UsageChunk(
                    Usage(
                        input_tokens=self.usage.get("inputTokens", 0) + cache_read + cache_write,
                        output_tokens=self.usage.get("outputTokens", 0),
                        cache_read_tokens=cache_read,
                        cache_write_tokens=cache_write,
                    )
                )
            )
        events.append(StopChunk(_STOP_REASONS.get(self.stop_reason, "other"), raw=self.stop_reason))
        return events
