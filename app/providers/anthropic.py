"""Anthropic Messages API: streamed over SSE, tool use, prompt caching, exact request bytes.

Wire shape (key order as the SDK sends it, so `dumps(request.body)` is the body byte for byte):

    {"max_tokens", "messages", "model", "stream": true, "system": [blocks], "tools": [...]}

- System-role messages of the view join the `system` blocks after the `system` argument.
- Tool results travel as `tool_result` blocks in a user message; consecutive messages of
  one role are merged, and in a merged user message the `tool_result` blocks come first
  (they must directly answer the assistant's `tool_use`).
- Prompt caching (chat requests only): `cache_control: ephemeral` on the system block and
  on the last block of the last two user turns, so each turn reads the prefix the previous
  one wrote.

The SDK is imported on first use only (it is slow to import) and is created with
`max_retries=0`: bulkhead owns retries.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from app.config import Route, Settings
from app.engine.costs import Usage
from app.engine.messages import Image, Message, Text, ToolCall, ToolResult
from app.providers.base import (
    ListedModel,
    ProbeReply,
    ProviderError,
    Request,
    StopChunk,
    StreamEvent,
    TextChunk,
    ToolCallChunk,
    ToolSpec,
    UsageChunk,
)
from app.providers.html import looks_like_html
from app.providers.httpx_sdk import HttpxSdkProvider
from app.providers.wire import (
    Exchange,
    OneSlot,
    PieceCache,
    StreamParser,
    Turn,
    body_len,
    compact_len,
    count_field,
    get,
    httpx_request_hook,
    httpx_response_hook,
    incomplete_stream,
    index_field,
    is_local_url,
    list_len,
    parse_arguments,
    parse_sse_text,
    text_field,
    unexpected_200,
    wrap_unknown,
)

DEFAULT_BASE_URL = "https://api.anthropic.com"
EPHEMERAL = {"type": "ephemeral"}
CACHE_CONTROL_BYTES = compact_len({"cache_control": EPHEMERAL}) - 1  # `,"cache_control":{...}`
CACHED_USER_TURNS = 2
CONTEXT_MANAGEMENT_BETA = "context-management-2025-06-27"
CONTEXT_MANAGEMENT = {"edits": [{"type": "clear_tool_uses_20250919"}]}
# Keys `messages.create()` takes as arguments; anything else in a body goes through `extra_body`.
_SDK_ARGUMENTS = frozenset({"max_tokens", "messages", "model", "metadata", "stop_sequences", "stream",
                            "system", "temperature", "thinking", "tool_choice", "tools", "top_k", "top_p"})
_STOP_REASONS = {"end_turn": "end", "tool_use": "tool_use", "max_tokens": "max_tokens",
                 "stop_sequence": "stop_sequence"}
PLACEHOLDER_KEY = "sk-local-placeholder"


@dataclass(frozen=True, slots=True)
class _Piece:
    """One bulkhead message in wire form: its role there, its blocks and each block's size."""

    role: str  # system | user | assistant
    blocks: tuple[dict[str, Any], ...]
    sizes: tuple[int, ...]


def _role_overhead(role: str) -> int:
    return compact_len({"role": role, "content": []}) - 2


_OVERHEAD = {role: _role_overhead(role) for role in ("user", "assistant")}


def _is_tool_result(block: dict[str, Any]) -> bool:
    return block["type"] == "tool_result"


def translate(message: Message) -> _Piece:
    """A message's Anthropic content blocks, each measured once."""
    role = "user" if message.role == "tool" else message.role
    blocks: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, Text):
            if part.text.strip():  # the API rejects empty and whitespace-only text blocks
                blocks.append({"type": "text", "text": part.text})
        elif role == "system":
            continue  # only text belongs in the system prompt
        elif isinstance(part, Image):
            blocks.append({"type": "image", "source": {"type": "base64", "media_type": part.media_type,
                                                        "data": part.data}})
        elif isinstance(part, ToolCall):
            if role == "assistant":
                blocks.append({"type": "tool_use", "id": part.id, "name": part.name, "input": dict(part.args)})
            else:
                blocks.append({"type": "text", "text": f"[tool call {part.name} "
                                                       f"{json.dumps(dict(part.args), ensure_ascii=False)}]"})
        elif isinstance(part, ToolResult):
            if role == "user":
                block: dict[str, Any] = {"type": "tool_result", "tool_use_id": part.call_id,
                                         "content": part.content}
                if part.is_error:
                    block["is_error"] = True
                blocks.append(block)
            elif part.content.strip():
                blocks.append({"type": "text", "text": f"[tool result]\n{part.content}"})
    return _Piece(role, tuple(blocks), tuple(compact_len(b) for b in blocks))


class AnthropicProvider(HttpxSdkProvider):
    kind = "anthropic"
    sdk_module = "anthropic"

    def __init__(self, route: Route, settings: Settings, api_key: str | None = None) -> None:
        super().__init__(route, settings, api_key)
        self._pieces: PieceCache[_Piece] = PieceCache()
        self._system_slot: tuple[str, dict[str, Any], int] | None = None
        self._tools_slot = OneSlot()

    # -- building -----------------------------------------------------------------------------
    @property
    def serialized_messages(self) -> int:
        """How many messages were ever translated and measured (the rest came from the cache)."""
        return self._pieces.serialized

    def _base_url(self) -> str:
        return self.route.base_url or DEFAULT_BASE_URL

    def _url(self) -> str:
        return self._base_url().rstrip("/") + "/v1/messages"

    def _system_block(self, system: str, cached: bool) -> tuple[dict[str, Any], int]:
        slot = self._system_slot
        if slot is None or slot[0] != system:
            block = {"type": "text", "text": system}
            slot = (system, block, compact_len(block))
            self._system_slot = slot
        _, block, size = slot
        if cached:
            return {**block, "cache_control": EPHEMERAL}, size + CACHE_CONTROL_BYTES
        return block, size

    def _tools(self, tools: Sequence[ToolSpec]) -> tuple[list[dict[str, Any]], int]:
        def make() -> tuple[list[dict[str, Any]], int]:
            wire = [{"name": t.name, "description": t.description, "input_schema": dict(t.input_schema)}
                    for t in tools]
            return wire, compact_len(wire)

        return self._tools_slot.get(tuple(tools), make)

    def _use_context_management(self) -> bool:
        return self.settings.context_engine == "provider"

    def build(self, view: Sequence[Message], system: str, tools: Sequence[ToolSpec], *,
              max_tokens: int, purpose: str = "chat") -> Request:
        cache = purpose == "chat"
        system_blocks: list[dict[str, Any]] = []
        system_sizes: list[int] = []
        if system.strip():
            block, size = self._system_block(system, cache)
            system_blocks.append(block)
            system_sizes.append(size)

        turns: list[Turn] = []
        for message in view:
            piece = self._pieces.get(message.id, lambda m=message: translate(m))
            if piece.role == "system":
                system_blocks.extend(piece.blocks)
                system_sizes.extend(piece.sizes)
                continue
            if not piece.blocks:
                continue
            if not turns or turns[-1].role != piece.role:
                turns.append(Turn(piece.role))
            turns[-1].add(piece.blocks, piece.sizes, _is_tool_result)

        messages: list[dict[str, Any]] = []
        message_sizes: list[int] = []
        marks = set()
        if cache:
            user_turns = [i for i, turn in enumerate(turns) if turn.role == "user"]
            marks = set(user_turns[-CACHED_USER_TURNS:])
        for index, turn in enumerate(turns):
            blocks, sizes = turn.content()
            if index in marks:
                blocks[-1] = {**blocks[-1], "cache_control": EPHEMERAL}
                sizes[-1] += CACHE_CONTROL_BYTES
            messages.append({"role": turn.role, "content": blocks})
            message_sizes.append(_OVERHEAD[turn.role] + list_len(sizes, 1))

        body: dict[str, Any] = {"max_tokens": max_tokens, "messages": messages, "model": self.route.model,
                                "stream": True}
        known = {"messages": list_len(message_sizes, 1)}
        if system_blocks:
            body["system"] = system_blocks
            known["system"] = list_len(system_sizes, 1)
        if tools:
            body["tools"], known["tools"] = self._tools(tools)
        if self._use_context_management():
            body["context_management"] = CONTEXT_MANAGEMENT
        predicted = body_len(body, known, compact_len)
        return Request(provider=self.kind, route=self.route.name, model=self.route.model, url=self._url(),
                       body=body, predicted_bytes=predicted, max_tokens=max_tokens, purpose=purpose,
                       message_count=len(view))

    # -- the client ---------------------------------------------------------------------------
    def _resolve_key(self) -> str | None:
        if self.api_key:
            return self.api_key
        if self.route.api_key_env and os.environ.get(self.route.api_key_env):
            return os.environ[self.route.api_key_env]
        if is_local_url(self.route.base_url) and not os.environ.get("ANTHROPIC_API_KEY"):
            return PLACEHOLDER_KEY
        return None  # the SDK looks in the environment and its own profiles

    def _new_client(self) -> Any:
        import anthropic

        timeout = anthropic.Timeout(self.settings.request_timeout, connect=self.settings.connect_timeout)
        http_client = anthropic.DefaultAsyncHttpxClient(
            timeout=timeout,
            event_hooks={"request": [httpx_request_hook], "response": [httpx_response_hook]})
        return anthropic.AsyncAnthropic(
            api_key=self._resolve_key(), base_url=self._base_url(), max_retries=0, timeout=timeout,
            http_client=http_client, open_telemetry=False)

    # -- probing --------------------------------------------------------------------------------
    probe_method = ("Anthropic's count_tokens endpoint (/v1/messages/count_tokens): it sits behind the same "
                    "gateway but only counts tokens, so probes cost nothing")

    async def probe(self, size: int) -> ProbeReply:
        envelope = {"messages": [{"role": "user", "content": ""}], "model": self.route.model}
        filler = "x" * max(1, size - compact_len(envelope))
        return await self._probe_call(lambda client: client.messages.count_tokens(
            model=self.route.model, messages=[{"role": "user", "content": filler}]))

    # -- the model list ------------------------------------------------------------------------
    async def list_models(self) -> list[ListedModel]:
        """`GET /v1/models` (every page), through the same client and gateway as the chat."""

        async def call(client: Any) -> list[ListedModel]:
            return [ListedModel(m.id, getattr(m, "display_name", "") or "") async for m in client.models.list(limit=100)]

        return await self._call(Exchange(), call)

    # -- streaming ----------------------------------------------------------------------------
    def _call_arguments(self, request: Request) -> dict[str, Any]:
        arguments = {k: v for k, v in request.body.items() if k in _SDK_ARGUMENTS}
        extra = {k: v for k, v in request.body.items() if k not in _SDK_ARGUMENTS}
        if extra:
            arguments["extra_body"] = extra
        if "context_management" in extra:
            arguments["extra_headers"] = {"anthropic-beta": CONTEXT_MANAGEMENT_BETA}
        return arguments

    async def _create(self, client: Any, request: Request) -> Any:
        return await client.messages.create(**self._call_arguments(request))

    def _parser(self, exchange: Exchange) -> AnthropicEvents:
        return AnthropicEvents(self.kind, exchange)

    def _from_body(self, text: str, content_type: str | None, parser: StreamParser,
                   exchange: Exchange) -> list[StreamEvent]:
        """A 200 that is not an SSE stream: an HTML page, a JSON error or message, or mislabelled SSE."""
        if looks_like_html(text, content_type):
            raise unexpected_200(self.kind, text, exchange, content_type=content_type)
        try:
            data = json.loads(text)
        except ValueError:
            data = None
        events: list[StreamEvent] = []
        if isinstance(data, dict) and data.get("type") == "error":
            parser.feed({"type": "error", "error": data.get("error")})  # raises
        if isinstance(data, dict) and data.get("type") == "message":
            for event in message_events(data):
                events.extend(parser.feed(event))
            return events + parser.finish()
        sse = parse_sse_text(text) if data is None else []
        if not sse:
            raise unexpected_200(self.kind, text, exchange, content_type=content_type)
        for _name, payload in sse:
            try:
                event = json.loads(payload)
            except ValueError as exc:
                raise wrap_unknown(self.kind, exc, exchange, in_stream=True) from exc
            events.extend(parser.feed(event))
        return events + parser.finish()


def message_events(message: dict[str, Any]) -> list[dict[str, Any]]:
    """A complete (non-streamed) Message as the stream events that would have carried it."""
    events: list[dict[str, Any]] = [{"type": "message_start", "message": {"usage": message.get("usage") or {}}}]
    for index, block in enumerate(message.get("content") or []):
        events.append({"type": "content_block_start", "index": index, "content_block": block})
        events.append({"type": "content_block_stop", "index": index})
    events.append({"type": "message_delta", "delta": {"stop_reason": message.get("stop_reason")}, "usage": {}})
    events.append({"type": "message_stop"})
    return events


class AnthropicEvents(StreamParser):
    """Turns Messages-API stream events (SDK models or dicts) into bulkhead stream events."""

    def __init__(self, provider: str, exchange: Exchange) -> None:
        super().__init__(provider, exchange)
        self.tools: dict[int, dict[str, Any]] = {}
        self.usage: dict[str, int] = {}
        self.stop_reason: str | None = None
        self.stopped = False

    def _usage(self, usage: Any) -> None:
        for key in ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"):
            value = count_field(usage, key)
            if value is not None:
                self.usage[key] = value

    def _feed(self, event: Any) -> list[StreamEvent]:
        kind = get(event, "type")
        if kind == "content_block_delta":
            delta = get(event, "delta")
            delta_type = get(delta, "type")
            if delta_type == "text_delta":
                text = text_field(delta, "text")
                return [TextChunk(text)] if text else []
            if delta_type == "input_json_delta":
                tool = self.tools.get(index_field(event, "index"))
                if tool is not None:
                    tool["json"].append(text_field(delta, "partial_json"))
            return []
        if kind == "content_block_start":
            block = get(event, "content_block")
            block_type = get(block, "type")
            if block_type == "text":
                text = text_field(block, "text")
                return [TextChunk(text)] if text else []
            if block_type == "tool_use":
                initial = get(block, "input")
                self.tools[index_field(event, "index")] = {
                    "id": text_field(block, "id") or f"toolu_{uuid.uuid4().hex[:20]}",
                    "name": text_field(block, "name"),
                    "json": [], "input": dict(initial) if isinstance(initial, dict) else {}}
            return []
        if kind == "content_block_stop":
            tool = self.tools.pop(index_field(event, "index"), None)
            if tool is None:
                return []
            return [ToolCallChunk(tool["id"], tool["name"], parse_arguments("".join(tool["json"]), tool["input"]))]
        if kind == "message_start":
            self._usage(get(get(event, "message"), "usage"))
            return []
        if kind == "message_delta":
            reason = text_field(get(event, "delta"), "stop_reason")
            if reason:
                self.stop_reason = reason
            self._usage(get(event, "usage"))
            return []
        if kind == "message_stop":
            self.stopped = True
            return []
        if kind == "error":
            error = get(event, "error")
            error_type = str(get(error, "type") or "error")
            message = str(get(error, "message") or error_type)
            body = json.dumps({"type": "error", "error": error if isinstance(error, dict) else
                               {"type": error_type, "message": message}}, ensure_ascii=False, default=str)
            raise ProviderError(f"{self.provider}: stream error {error_type}: {message}", provider=self.provider,
                                status=self.exchange.status, headers=self.exchange.response_headers, body=body,
                                request_bytes=self.exchange.actual_bytes, error_type=error_type,
                                transport="stream-error")
        return []  # ping, thinking and anything newer

    def _finish(self) -> list[StreamEvent]:
        if not self.stopped and self.stop_reason is None:
            raise incomplete_stream(self.provider, self.exchange)
        events: list[StreamEvent] = []
        for index in sorted(self.tools):  # blocks the stream never closed
            tool = self.tools.pop(index)
            events.append(ToolCallChunk(tool["id"], tool["name"], parse_arguments("".join(tool["json"]), tool["input"])))
        if self.usage:
            cache_write = self.usage.get("cache_creation_input_tokens", 0)
            cache_read = self.usage.get("cache_read_input_tokens", 0)
            events.append(UsageChunk(Usage(
                input_tokens=self.usage.get("input_tokens", 0) + cache_write + cache_read,
                output_tokens=self.usage.get("output_tokens", 0),
                cache_read_tokens=cache_read, cache_write_tokens=cache_write)))
        raw = self.stop_reason or ""
        events.append(StopChunk(_STOP_REASONS.get(raw, "other"), raw=raw))
        return events
