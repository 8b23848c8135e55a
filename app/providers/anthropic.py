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

`context_engine = "provider"` (chat requests; the beta Messages endpoint, headers
`context-management-2025-06-27,compact-2026-01-12`):

- `context_management.edits` carries `clear_tool_uses_20250919` (the seed's settings: past
  100,000 input tokens, keep the 5 latest tool uses, clear at least 20,000 tokens) and
  `compact_20260112` with `trigger.value` = the engine's threshold — threshold compaction
  (https://platform.claude.com/docs/en/build-with-claude/compaction-threshold). A `compaction`
  block (streamed as `content_block_start` + `compaction_delta`) comes back as a NativeChunk;
  the API drops every block before it on later requests.
- `context_management.applied_edits` in `message_delta` (cleared_tool_uses, cleared_input_tokens;
  https://platform.claude.com/docs/en/build-with-claude/context-editing) becomes an EditsChunk,
  which the engine mirrors locally.
- `build_compaction`/`send_compaction` are the on-demand mechanism of the `compact-2026-09-04`
  beta (https://platform.claude.com/docs/en/build-with-claude/compaction-on-demand): a request
  with the top-level `compaction: {"type": "summarize"}` parameter (never combined with
  `context_management`) whose answer is one `compaction` block (`stop_reason: "compaction"`),
  sent first in `messages` from then on in place of the messages it summarizes. Which role that
  first message has is not said; bulkhead keeps the block in the assistant message it came in.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from app.ca_bundle import httpx_verify
from app.config import Route, Settings
from app.model.costs import Usage
from app.model.events import RequestPurpose
from app.model.messages import COMPACTION_SUMMARY_HEADER, Image, Message, Native, Text, ToolCall, ToolResult
from app.providers.base import (
    EditsChunk,
    ListedModel,
    NativeChunk,
    ProbeFloor,
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
    list_field,
    list_len,
    parse_arguments,
    parse_sse_text,
    text_field,
    unexpected_200,
    without_userinfo,
    wrap_unknown,
)

DEFAULT_BASE_URL = "https://api.anthropic.com"
EPHEMERAL = {"type": "ephemeral"}
CACHE_CONTROL_BYTES = compact_len({"cache_control": EPHEMERAL}) - 1  # `,"cache_control":{...}`
CACHED_USER_TURNS = 2
CONTEXT_MANAGEMENT_BETA = "context-management-2025-06-27"
COMPACT_THRESHOLD_BETA = "compact-2026-01-12"
COMPACT_ON_DEMAND_BETA = "compact-2026-09-04"
# The seed's clear_tool_uses settings: past 100 K input tokens, keep the 5 latest tool uses, free >= 20 K tokens.
CLEAR_TOOL_USES = {
    "type": "clear_tool_uses_20250919",
    "trigger": {"type": "input_tokens", "value": 100_000},
    "keep": {"type": "tool_uses", "value": 5},
    "clear_at_least": {"type": "input_tokens", "value": 20_000},
}
CONTEXT_MANAGEMENT = {"edits": [CLEAR_TOOL_USES]}
SUMMARY_HEADER = COMPACTION_SUMMARY_HEADER
NATIVE_API = "anthropic"
# Keys `messages.create()` takes as arguments; anything else in a body goes through `extra_body`.
_SDK_ARGUMENTS = frozenset(
    {
        "max_tokens",
        "messages",
        "model",
        "metadata",
        "stop_sequences",
        "stream",
        "system",
        "temperature",
        "thinking",
        "tool_choice",
        "tools",
        "top_k",
        "top_p",
    }
)
# ... and what the beta endpoint's `create()` takes as well
_BETA_ARGUMENTS = _SDK_ARGUMENTS | {"context_management"}
_STOP_REASONS = {
    "end_turn": "end",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "stop_sequence": "stop_sequence",
    "compaction": "end",
    "pause_turn": "other",
}
PLACEHOLDER_KEY = "sk-local-placeholder"


@dataclass(frozen=True, slots=True)
class _Piece:
    """One bulkhead message in wire form: its role there, its blocks and each block's size."""

    role: str  # system | user | assistant
    blocks: tuple[dict[str, Any], ...]
    sizes: tuple[int, ...]
    references: frozenset[str] = frozenset()  # deferred tools its tool_reference blocks name


def _role_overhead(role: str) -> int:
    return compact_len({"role": role, "content": []}) - 2


_OVERHEAD = {role: _role_overhead(role) for role in ("user", "assistant")}


def _is_tool_result(block: dict[str, Any]) -> bool:
    return block["type"] == "tool_result"


def translate(message: Message, *, references: bool = True) -> _Piece:
    """A message's Anthropic content blocks, each measured once.

    A tool result that loads deferred tools (`references`) is sent as `tool_reference` blocks —
    only those, as the API expands them into the definitions; with `references=False` (the request
    does not defer those tools) it is sent as its text.
    """
    role = "user" if message.role == "tool" else message.role
    blocks: list[dict[str, Any]] = []
    named: set[str] = set()
    for part in message.parts:
        if isinstance(part, Text):
            if part.text.strip():  # the API rejects empty and whitespace-only text blocks
                blocks.append({"type": "text", "text": part.text})
        elif isinstance(part, Native):
            if part.api == NATIVE_API and role != "system":
                blocks.append(dict(part.item))
            elif part.is_compaction and part.readable:  # another provider's readable summary
                blocks.append({"type": "text", "text": SUMMARY_HEADER + part.readable})
        elif role == "system":
            continue  # only text belongs in the system prompt
        elif isinstance(part, Image):
            blocks.append(
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": part.media_type, "data": part.data},
                }
            )
        elif isinstance(part, ToolCall):
            if role == "assistant":
                blocks.append(
                    {"type": "tool_use", "id": part.id, "name": part.name, "input": dict(part.args)}
                )
            else:
                blocks.append(
                    {
                        "type": "text",
                        "text": f"[tool call {part.name} {json.dumps(dict(part.args), ensure_ascii=False)}]",
                    }
                )
        elif isinstance(part, ToolResult):
            if role == "user":
                content: Any = part.content
                if part.references and references and not part.is_error:
                    content = [{"type": "tool_reference", "tool_name": name} for name in part.references]
                    named.update(part.references)
                block: dict[str, Any] = {
                    "type": "tool_result",
                    "tool_use_id": part.call_id,
                    "content": content,
                }
                if part.is_error:
                    block["is_error"] = True
                blocks.append(block)
            elif part.content.strip():
                blocks.append({"type": "text", "text": f"[tool result]\n{part.content}"})
    return _Piece(role, tuple(blocks), tuple(compact_len(b) for b in blocks), frozenset(named))


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
        return without_userinfo(self.route.base_url or DEFAULT_BASE_URL)  # the key authenticates, not the URL

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
            wire = [
                {
                    "name": t.name,
                    "description": t.description,
                    "input_schema": dict(t.input_schema),
                    **({"defer_loading": True} if t.defer_loading else {}),
                }
                for t in tools
            ]
            return wire, compact_len(wire)

        return self._tools_slot.get(tuple(tools), make)

    def _use_context_management(self) -> bool:
        return (
            self.settings.context_engine == "provider" and CONTEXT_MANAGEMENT_BETA not in self.refused_betas
        )

    native_compaction = (
        "Anthropic server-side compaction (compact_20260112 edit past the threshold; the "
        "compaction parameter of compact-2026-09-04 on demand) and clear_tool_uses edits"
    )

    def _context_management(self) -> dict[str, Any]:
        edits: list[dict[str, Any]] = [CLEAR_TOOL_USES]
        if self.compact_threshold and COMPACT_THRESHOLD_BETA not in self.refused_betas:
            edits.append(
                {
                    "type": "compact_20260112",
                    "trigger": {"type": "input_tokens", "value": int(self.compact_threshold)},
                }
            )
        return {"edits": edits}

    def _build(
        self,
        view: Sequence[Message],
        system: str,
        tools: Sequence[ToolSpec],
        *,
        max_tokens: int,
        purpose: RequestPurpose = "chat",
    ) -> Request:
        cache = purpose == "chat"
        system_blocks: list[dict[str, Any]] = []
        system_sizes: list[int] = []
        if system.strip():
            block, size = self._system_block(system, cache)
            system_blocks.append(block)
            system_sizes.append(size)

        turns: list[Turn] = []
        deferred = frozenset(t.name for t in tools if t.defer_loading)
        for message in view:
            piece = self._pieces.get(message.id, partial(translate, message))
            if piece.references and not piece.references <= deferred:  # those tools are not deferred now
                piece = self._pieces.get(
                    message.id + "\x00text", partial(translate, message, references=False)
                )
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

        body: dict[str, Any] = {"max_tokens": max_tokens, "messages": messages, "model": self.route.model}
        if self._use_context_management() and purpose == "chat":  # where the beta SDK puts it
            body["context_management"] = self._context_management()
        body["stream"] = True
        known = {"messages": list_len(message_sizes, 1)}
        if system_blocks:
            body["system"] = system_blocks
            known["system"] = list_len(system_sizes, 1)
        if tools:
            body["tools"], known["tools"] = self._tools(tools)
        predicted = body_len(body, known, compact_len)
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
            verify=httpx_verify(self.route, self.settings),
            event_hooks={"request": [httpx_request_hook], "response": [httpx_response_hook]},
        )
        return anthropic.AsyncAnthropic(
            api_key=self._resolve_key(),
            base_url=self._base_url(),
            max_retries=0,
            timeout=timeout,
            http_client=http_client,
            open_telemetry=False,
        )

    # -- probing --------------------------------------------------------------------------------
    probe_method = (
        "Anthropic's count_tokens endpoint (/v1/messages/count_tokens): it sits behind the same "
        "gateway but only counts tokens, so probes cost nothing"
    )

    async def probe(self, size: int, floor: ProbeFloor | None = None) -> ProbeReply:
        floor = floor or ProbeFloor()
        shape = self.build((), floor.system, floor.tools, max_tokens=1, purpose="probe").body
        carried = {key: shape[key] for key in ("system", "tools") if key in shape}
        envelope = {"messages": [{"role": "user", "content": ""}], "model": self.route.model, **carried}
        filler = "x" * max(1, size - compact_len(envelope))
        arguments: dict[str, Any] = {
            "model": self.route.model,
            "messages": [{"role": "user", "content": filler}],
            **carried,
        }
        if floor.headers:
            arguments["extra_headers"] = dict(floor.headers)
        return await self._probe_call(lambda client: client.messages.count_tokens(**arguments))

    def chat_headers(self) -> dict[str, str]:
        betas = self._chat_betas()
        return {"anthropic-beta": ",".join(betas)} if betas else {}

    def _chat_betas(self) -> list[str]:
        """The betas a chat request of this route declares (context management, with its threshold)."""
        if not self._use_context_management():
            return []
        betas = [CONTEXT_MANAGEMENT_BETA]
        if any(e.get("type") == "compact_20260112" for e in self._context_management().get("edits", [])):
            betas.append(COMPACT_THRESHOLD_BETA)
        return betas

    async def probe_texts(self, texts: Sequence[str]) -> ProbeReply:
        content = [{"type": "text", "text": text or " "} for text in texts]
        return await self._probe_call(
            lambda client: client.messages.count_tokens(
                model=self.route.model, messages=[{"role": "user", "content": content}]
            )
        )

    # -- the model list ------------------------------------------------------------------------
    async def list_models(self) -> list[ListedModel]:
        """`GET /v1/models` (every page), through the same client and gateway as the chat."""

        async def call(client: Any) -> list[ListedModel]:
            return [
                ListedModel(m.id, getattr(m, "display_name", "") or "")
                async for m in client.models.list(limit=100)
            ]

        return await self._call(Exchange(), call)

    # -- streaming ----------------------------------------------------------------------------
    def _call_arguments(self, request: Request) -> dict[str, Any]:
        known = _BETA_ARGUMENTS if "context_management" in request.body else _SDK_ARGUMENTS
        arguments = {k: v for k, v in request.body.items() if k in known}
        extra = {k: v for k, v in request.body.items() if k not in known}
        if extra:
            arguments["extra_body"] = extra
        if "context_management" in request.body:
            betas = [CONTEXT_MANAGEMENT_BETA]
            if any(
                e.get("type") == "compact_20260112"
                for e in request.body["context_management"].get("edits", [])
            ):
                betas.append(COMPACT_THRESHOLD_BETA)
            arguments["extra_headers"] = {"anthropic-beta": ",".join(betas)}
        return arguments

    async def _create(self, client: Any, request: Request) -> Any:
        if "context_management" in request.body:  # the beta types know compaction blocks and applied edits
            return await client.beta.messages.create(**self._call_arguments(request))
        return await client.messages.create(**self._call_arguments(request))

    def build_compaction(
        self,
        view: Sequence[Message],
        system: str,
        tools: Sequence[ToolSpec],
        *,
        instructions: str | None = None,
    ) -> Request:
        """On-demand compaction (`compact-2026-09-04`): a non-streamed request whose answer is one
        compaction block; never combined with `context_management`. NotImplementedError where the
        endpoint refused that beta (the local pipeline compacts)."""
        if COMPACT_ON_DEMAND_BETA in self.refused_betas:
            raise NotImplementedError(f"this endpoint refuses the {COMPACT_ON_DEMAND_BETA} beta")
        request = self.build(
            view, system, tools, max_tokens=self.settings.max_output_tokens, purpose="compact"
        )
        body = {k: v for k, v in request.body.items() if k not in ("stream", "context_management")}
        body["compaction"] = {"type": "summarize", **({"instructions": instructions} if instructions else {})}
        request.body = body
        request.predicted_bytes = compact_len(body)
        return request

    async def send_compaction(self, request: Request) -> tuple[list[NativeChunk], Usage | None]:
        arguments = {k: v for k, v in request.body.items() if k in _SDK_ARGUMENTS}
        arguments["extra_body"] = {"compaction": request.body["compaction"]}
        arguments["extra_headers"] = {"anthropic-beta": COMPACT_ON_DEMAND_BETA}
        exchange = Exchange()
        try:
            result = await self._call(exchange, lambda client: client.beta.messages.create(**arguments))
        finally:
            exchange.apply(request)
        if isinstance(result, str):
            raise unexpected_200(
                self.kind, result, exchange, content_type=exchange.response_headers.get("content-type")
            )
        data = result.to_dict(mode="json", exclude_unset=True) if hasattr(result, "to_dict") else dict(result)
        found = [
            NativeChunk(NATIVE_API, dict(block))
            for block in data.get("content") or []
            if isinstance(block, dict) and block.get("type") == "compaction"
        ]
        usage = data.get("usage") or {}
        return found, Usage(
            input_tokens=int(usage.get("input_tokens") or 0),
            output_tokens=int(usage.get("output_tokens") or 0),
        )

    def _parser(self, exchange: Exchange) -> AnthropicEvents:
        return AnthropicEvents(self.kind, exchange)

    def _from_body(
        self, text: str, content_type: str | None, parser: StreamParser, exchange: Exchange
    ) -> list[StreamEvent]:
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
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": {"usage": message.get("usage") or {}}}
    ]
    for index, block in enumerate(message.get("content") or []):
        events.append({"type": "content_block_start", "index": index, "content_block": block})
        events.append({"type": "content_block_stop", "index": index})
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": message.get("stop_reason")},
            "usage": {},
            "context_management": message.get("context_management"),
        }
    )
    events.append({"type": "message_stop"})
    return events


class AnthropicEvents(StreamParser):
    """Turns Messages-API stream events (SDK models or dicts) into bulkhead stream events."""

    def __init__(self, provider: str, exchange: Exchange) -> None:
        super().__init__(provider, exchange)
        self.tools: dict[int, dict[str, Any]] = {}
        self.compactions: dict[int, dict[str, Any]] = {}
        self.usage: dict[str, int] = {}
        self.stop_reason: str | None = None
        self.stopped = False
        self.applied_edits: list[dict[str, Any]] = []

    def _applied(self, context_management: Any) -> None:
        edits = list_field(context_management, "applied_edits") if context_management else []
        if edits:  # the final message_delta repeats (or replaces) what message_start said
            self.applied_edits = [
                {
                    "type": str(get(e, "type") or ""),
                    "cleared_tool_uses": count_field(e, "cleared_tool_uses") or 0,
                    "cleared_input_tokens": count_field(e, "cleared_input_tokens") or 0,
                }
                for e in edits
            ]

    def _usage(self, usage: Any) -> None:
        for key in (
            "input_tokens",
            "output_tokens",
            "cache_creation_input_tokens",
            "cache_read_input_tokens",
        ):
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
            if delta_type == "compaction_delta":
                block = self.compactions.get(index_field(event, "index"))
                if block is not None:
                    content = get(delta, "content")
                    if isinstance(content, str):
                        block["content"] = (block.get("content") or "") + content
                    for key in ("encrypted_content", "signature"):
                        value = get(delta, key)
                        if isinstance(value, str):
                            block[key] = value
            return []
        if kind == "content_block_start":
            block = get(event, "content_block")
            block_type = get(block, "type")
            if block_type == "text":
                text = text_field(block, "text")
                return [TextChunk(text)] if text else []
            if block_type == "compaction":
                data = (
                    block.to_dict(mode="json", exclude_unset=True)
                    if hasattr(block, "to_dict")
                    else dict(block)
                )
                self.compactions[index_field(event, "index")] = data
                return []
            if block_type == "tool_use":
                initial = get(block, "input")
                self.tools[index_field(event, "index")] = {
                    "id": text_field(block, "id") or f"toolu_{uuid.uuid4().hex[:20]}",
                    "name": text_field(block, "name"),
                    "json": [],
                    "input": dict(initial) if isinstance(initial, dict) else {},
                }
            return []
        if kind == "content_block_stop":
            compaction = self.compactions.pop(index_field(event, "index"), None)
            if compaction is not None:
                return [NativeChunk(NATIVE_API, compaction)]
            tool = self.tools.pop(index_field(event, "index"), None)
            if tool is None:
                return []
            return [
                ToolCallChunk(tool["id"], tool["name"], parse_arguments("".join(tool["json"]), tool["input"]))
            ]
        if kind == "message_start":
            self._usage(get(get(event, "message"), "usage"))
            self._applied(get(get(event, "message"), "context_management"))
            return []
        if kind == "message_delta":
            reason = text_field(get(event, "delta"), "stop_reason")
            if reason:
                self.stop_reason = reason
            self._usage(get(event, "usage"))
            self._applied(get(event, "context_management"))
            return []
        if kind == "message_stop":
            self.stopped = True
            return []
        if kind == "error":
            error = get(event, "error")
            error_type = str(get(error, "type") or "error")
            message = str(get(error, "message") or error_type)
            body = json.dumps(
                {
                    "type": "error",
                    "error": error if isinstance(error, dict) else {"type": error_type, "message": message},
                },
                ensure_ascii=False,
                default=str,
            )
            raise ProviderError(
                f"{self.provider}: stream error {error_type}: {message}",
                provider=self.provider,
                status=self.exchange.status,
                headers=self.exchange.response_headers,
                body=body,
                request_bytes=self.exchange.actual_bytes,
                error_type=error_type,
                transport="stream-error",
            )
        return []  # ping, thinking and anything newer

    def _finish(self) -> list[StreamEvent]:
        if not self.stopped and self.stop_reason is None:
            raise incomplete_stream(self.provider, self.exchange)
        events: list[StreamEvent] = []
        for index in sorted(self.compactions):  # a compaction block the stream never closed
            events.append(NativeChunk(NATIVE_API, self.compactions.pop(index)))
        if self.applied_edits:
            events.append(
                EditsChunk(
                    edits=len(self.applied_edits),
                    cleared_tool_uses=sum(e["cleared_tool_uses"] for e in self.applied_edits),
                    cleared_input_tokens=sum(e["cleared_input_tokens"] for e in self.applied_edits),
                    kinds=tuple(e["type"] for e in self.applied_edits),
                )
            )
        for index in sorted(self.tools):  # blocks the stream never closed
            tool = self.tools.pop(index)
            events.append(
                ToolCallChunk(tool["id"], tool["name"], parse_arguments("".join(tool["json"]), tool["input"]))
            )
        if self.usage:
            cache_write = self.usage.get("cache_creation_input_tokens", 0)
            cache_read = self.usage.get("cache_read_input_tokens", 0)
            events.append(
                UsageChunk(
                    Usage(
                        input_tokens=self.usage.get("input_tokens", 0) + cache_write + cache_read,
                        output_tokens=self.usage.get("output_tokens", 0),
                        cache_read_tokens=cache_read,
                        cache_write_tokens=cache_write,
                    )
                )
            )
        raw = self.stop_reason or ""
        events.append(StopChunk(_STOP_REASONS.get(raw, "other"), raw=raw))
        return events
