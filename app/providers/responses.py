"""OpenAI Responses API (`POST /v1/responses`): streamed, tools, reasoning replayed, native compaction.

The default API of `provider = "openai"` routes on OpenAI itself and Azure's v1 endpoints
(`routes.NAME.api = "responses" | "chat"`, see `openai_api`). Wire shape — what this adapter sends:

    {"model", "input": [items], "instructions": system, "max_output_tokens", "stream": true,
     "store": false, "include": ["reasoning.encrypted_content"], "tools": [functions],
     "context_management": [{"type": "compaction", "compact_threshold": N}]}   # context_engine = provider

- Items: a system-role message of the view is a `developer` message; user text/images are
  `input_text`/`input_image`; an assistant answer is replayed as its reasoning items (verbatim,
  with their `encrypted_content`), its text (an assistant message) and its `function_call` items;
  each tool result is a `function_call_output`. Tools are `{"type": "function", "name",
  "description", "parameters", "strict": false}` (bulkhead's schemas are not strict-mode schemas).
- `store=false` keeps nothing at OpenAI; reasoning therefore travels in the request, encrypted:
  each `reasoning` item comes back whole in `response.output_item.done` and is sent back verbatim
  before the answer it led to (https://developers.openai.com/api/docs/guides/conversation-state;
  the SDK's `ResponseReasoningItem` says to replay the item from `output_item.done`, as the one in
  `output_item.added` may be incomplete).
- Streaming events (https://developers.openai.com/docs/guides/streaming-responses):
  `response.output_text.delta`, `response.output_item.added|done` (function calls, reasoning,
  compaction), `response.function_call_arguments.delta`, `response.completed` (usage:
  `input_tokens`, `input_tokens_details.cached_tokens`, `output_tokens`), `response.incomplete`
  (`incomplete_details.reason = max_output_tokens`), `response.failed` (`response.error`) and
  `error` (`code`, `message`). There is no `[DONE]`.
- Server-side compaction (https://developers.openai.com/api/docs/guides/compaction): with
  `context_management: [{"type": "compaction", "compact_threshold": N}]` the stream carries an
  opaque `compaction` item once the rendered tokens pass N; items before the latest compaction
  item may be dropped. The standalone `POST /responses/compact` returns the window's user messages
  followed by one compaction item (`build_compaction` + `send_compaction`).
- Probe: `max_output_tokens: 0`, which the API refuses with a 400 (its minimum is 16) before any
  model runs — a probe that gets past the gateway costs nothing.

Chat Completions lives in `app.providers.openai`; this module shares its client, keys and
helpers (`OpenAIProvider`) and replaces only the body, the call and the stream parser.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from app.config import Route, Settings
from app.model.costs import Usage
from app.model.events import RequestPurpose
from app.model.messages import COMPACTION_SUMMARY_HEADER, Image, Message, Native, Text, ToolCall, ToolResult
from app.providers.base import (
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
from app.providers.openai import TOOL_ERROR_LINE, OpenAIProvider
from app.providers.wire import (
    Exchange,
    OneSlot,
    PieceCache,
    StreamParser,
    body_len,
    compact_len,
    count_field,
    get,
    incomplete_stream,
    index_field,
    list_len,
    parse_arguments,
    parse_sse_text,
    text_field,
    unexpected_200,
    wrap_unknown,
)

API = "openai-responses"  # Native.api of the items this wire replays
INCLUDE = ["reasoning.encrypted_content"]
REPLAYED = ("reasoning", "compaction")  # output items kept in the answer and sent back verbatim
SUMMARY_HEADER = COMPACTION_SUMMARY_HEADER
_SDK_ARGUMENTS = frozenset(
    {
        "model",
        "input",
        "instructions",
        "max_output_tokens",
        "stream",
        "store",
        "include",
        "tools",
        "tool_choice",
        "context_management",
        "temperature",
        "reasoning",
        "parallel_tool_calls",
        "metadata",
        "truncation",
        "user",
    }
)
_INCOMPLETE = {"max_output_tokens": "max_tokens"}


@dataclass(frozen=True, slots=True)
class _Piece:
    items: tuple[dict[str, Any], ...]
    sizes: tuple[int, ...]


def _user_content(texts: list[str], images: list[Image]) -> str | list[dict[str, Any]]:
    if not images and len(texts) == 1:
        return texts[0]
    content: list[dict[str, Any]] = [{"type": "input_text", "text": text} for text in texts]
    content += [
        {"type": "input_image", "image_url": f"data:{image.media_type};base64,{image.data}"}
        for image in images
    ]
    return content


def _output(part: ToolResult) -> str:
    return TOOL_ERROR_LINE + part.content if part.is_error else part.content


def translate(message: Message) -> _Piece:
    """A message's Responses input items, each measured once."""
    out: list[dict[str, Any]] = []
    texts: list[str] = []
    images: list[Image] = []
    calls: list[dict[str, Any]] = []
    natives: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, Text):
            if part.text:
                texts.append(part.text)
        elif isinstance(part, Image):
            images.append(part)
        elif isinstance(part, Native):
            if part.api == API:
                natives.append(dict(part.item))
            elif part.is_compaction and part.readable:  # another provider's readable summary
                texts.append(SUMMARY_HEADER + part.readable)
        elif isinstance(part, ToolResult):
            if message.role in ("tool", "user"):
                out.append({"type": "function_call_output", "call_id": part.call_id, "output": _output(part)})
            else:
                texts.append(f"[tool result]\n{_output(part)}")
        elif isinstance(part, ToolCall):
            arguments = json.dumps(dict(part.args), ensure_ascii=False)
            if message.role == "assistant":
                calls.append(
                    {"type": "function_call", "call_id": part.id, "name": part.name, "arguments": arguments}
                )
            else:
                texts.append(f"[tool call {part.name} {arguments}]")
    if message.role == "system":
        if texts:
            out.append({"role": "developer", "content": "".join(texts)})
    elif message.role == "assistant":
        out.extend(natives)
        if texts:
            out.append({"role": "assistant", "content": "".join(texts)})
        out.extend(calls)
    else:
        out.extend(natives)
        if texts or images:
            out.append({"role": "user", "content": _user_content(texts, images)})
    return _Piece(tuple(out), tuple(compact_len(item) for item in out))


class ResponsesProvider(OpenAIProvider):
    """`provider = "openai"` through the Responses API (the client, keys and Azure handling are shared)."""

    native_compaction = (
        "OpenAI Responses server-side compaction (context_management compact_threshold) "
        "and POST /responses/compact"
    )

    def __init__(self, route: Route, settings: Settings, api_key: str | None = None) -> None:
        super().__init__(route, settings, api_key)
        self._items: PieceCache[_Piece] = PieceCache()
        self._tools_slot = OneSlot()

    @property
    def serialized_messages(self) -> int:
        return self._items.serialized

    def _url(self) -> str:
        return self._base_url().rstrip("/") + "/responses"

    def _tools(self, tools: Sequence[ToolSpec]) -> tuple[list[dict[str, Any]], int]:
        def make() -> tuple[list[dict[str, Any]], int]:
            wire = [
                {
                    "type": "function",
                    "name": t.name,
                    "description": t.description,
                    "parameters": dict(t.input_schema),
                    "strict": False,
                }
                for t in tools
            ]
            return wire, compact_len(wire)

        return self._tools_slot.get(tuple(tools), make)

    def _input(self, view: Sequence[Message]) -> tuple[list[dict[str, Any]], list[int]]:
        items: list[dict[str, Any]] = []
        sizes: list[int] = []
        for message in view:
            piece = self._items.get(message.id, partial(translate, message))
            items.extend(piece.items)
            sizes.extend(piece.sizes)
        return items, sizes

    def _build(
        self,
        view: Sequence[Message],
        system: str,
        tools: Sequence[ToolSpec],
        *,
        max_tokens: int,
        purpose: RequestPurpose = "chat",
    ) -> Request:
        items, sizes = self._input(view)
        body: dict[str, Any] = {"model": self.route.model, "input": items}
        if system:
            body["instructions"] = system
        body.update({"max_output_tokens": max_tokens, "stream": True, "store": False, "include": INCLUDE})
        known = {"input": list_len(sizes, 1)}
        if tools:
            body["tools"], known["tools"] = self._tools(tools)
        if self.settings.context_engine == "provider" and purpose == "chat" and self.compact_threshold:
            body["context_management"] = [
                {"type": "compaction", "compact_threshold": int(self.compact_threshold)}
            ]
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

    # -- probing --------------------------------------------------------------------------------
    probe_method = (
        "a response with max_output_tokens 0: the Responses API has no free counting endpoint, and it "
        "refuses max_output_tokens below 16 with a 400 before running the model — so a probe that gets "
        "past the gateway costs nothing"
    )

    async def probe(self, size: int, floor: ProbeFloor | None = None) -> ProbeReply:
        floor = floor or ProbeFloor()
        shape = self.build((), floor.system, floor.tools, max_tokens=0, purpose="probe").body
        carried = {key: shape[key] for key in ("instructions", "tools") if key in shape}
        envelope = {
            "model": self.route.model,
            "input": [{"role": "user", "content": ""}],
            "max_output_tokens": 0,
            "store": False,
            **carried,
        }
        filler = "x" * max(1, size - compact_len(envelope))
        arguments: dict[str, Any] = {
            "model": self.route.model,
            "input": [{"role": "user", "content": filler}],
            "max_output_tokens": 0,
            "store": False,
            **carried,
        }
        if floor.headers:
            arguments["extra_headers"] = dict(floor.headers)
        return await self._probe_call(lambda client: client.responses.create(**arguments))

    async def probe_texts(self, texts: Sequence[str]) -> ProbeReply:
        content = [{"type": "input_text", "text": text or " "} for text in texts]
        return await self._probe_call(
            lambda client: client.responses.create(
                model=self.route.model,
                input=[{"role": "user", "content": content}],
                max_output_tokens=0,
                store=False,
            )
        )

    # -- streaming ----------------------------------------------------------------------------
    def _call_arguments(self, request: Request) -> dict[str, Any]:
        arguments = {k: v for k, v in request.body.items() if k in _SDK_ARGUMENTS}
        extra = {k: v for k, v in request.body.items() if k not in _SDK_ARGUMENTS}
        if extra:
            arguments["extra_body"] = extra
        return arguments

    async def _create(self, client: Any, request: Request) -> Any:
        return await client.responses.create(**self._call_arguments(request))

    def _parser(self, exchange: Exchange) -> ResponsesEvents:
        return ResponsesEvents(self.kind, exchange)

    def _from_body(
        self, text: str, content_type: str | None, parser: StreamParser, exchange: Exchange
    ) -> list[StreamEvent]:
        """A 200 that is not an SSE stream: an HTML page, a JSON error, a whole response object from a
        server that ignored `stream`, or SSE with the wrong content type."""
        if looks_like_html(text, content_type):
            raise unexpected_200(self.kind, text, exchange, content_type=content_type)
        try:
            data = json.loads(text)
        except ValueError:
            data = None
        events: list[StreamEvent] = []
        if isinstance(data, dict) and data.get("error") and data.get("object") != "response":
            error = data["error"]
            parser.feed(
                {
                    "type": "error",
                    "code": get(error, "code") or get(error, "type"),
                    "message": get(error, "message"),
                }
            )  # raises
        if isinstance(data, dict) and data.get("object") == "response":
            for event in response_events(data):
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

    # -- native compaction ------------------------------------------------------------------------
    def build_compaction(
        self,
        view: Sequence[Message],
        system: str,
        tools: Sequence[ToolSpec],
        *,
        instructions: str | None = None,
    ) -> Request:
        """`POST /responses/compact` (instructions, when given, replace the system prompt's for it)."""
        items, sizes = self._input(view)
        body: dict[str, Any] = {"model": self.route.model, "input": items}
        if instructions or system:
            body["instructions"] = (
                f"{system}\n\n{instructions}" if system and instructions else (instructions or system)
            )
        predicted = body_len(body, {"input": list_len(sizes, 1)}, compact_len)
        return Request(
            provider=self.kind,
            route=self.route.name,
            model=self.route.model,
            url=self._base_url().rstrip("/") + "/responses/compact",
            body=body,
            predicted_bytes=predicted,
            max_tokens=0,
            purpose="compact",
            message_count=len(view),
        )

    async def send_compaction(self, request: Request) -> tuple[list[NativeChunk], Usage | None]:
        """The window's user messages and one opaque compaction item come back; the item is kept."""
        exchange = Exchange()
        try:  # the raw body: the SDK types the window's user messages as output messages (they are input)
            raw = await self._call(
                exchange, lambda client: client.responses.with_raw_response.compact(**request.body)
            )
        finally:
            exchange.apply(request)
        text = raw.http_response.text
        try:
            data = json.loads(text)
        except ValueError:
            data = None
        if not isinstance(data, dict):
            raise unexpected_200(
                self.kind, text, exchange, content_type=exchange.response_headers.get("content-type")
            )
        found = [
            NativeChunk(API, dict(item))
            for item in data.get("output") or []
            if isinstance(item, dict) and item.get("type") == "compaction"
        ]
        return found, _usage(data.get("usage"))


def _usage(usage: Any) -> Usage | None:
    if not usage:
        return None
    cached = count_field(get(usage, "input_tokens_details"), "cached_tokens") or 0
    return Usage(
        input_tokens=count_field(usage, "input_tokens") or 0,
        output_tokens=count_field(usage, "output_tokens") or 0,
        cache_read_tokens=cached,
    )


def _item_dict(item: Any) -> dict[str, Any]:
    if isinstance(item, dict):
        return dict(item)
    if hasattr(item, "to_dict"):
        return item.to_dict(mode="json", exclude_unset=True)
    return dict(item)


def response_events(response: dict[str, Any]) -> list[dict[str, Any]]:
    """A whole (non-streamed) response object as the stream events that would have carried it."""
    events: list[dict[str, Any]] = []
    for index, item in enumerate(response.get("output") or []):
        if not isinstance(item, dict):
            continue
        if item.get("type") == "message":
            for part in item.get("content") or []:
                if isinstance(part, dict) and part.get("type") == "output_text" and part.get("text"):
                    events.append(
                        {"type": "response.output_text.delta", "output_index": index, "delta": part["text"]}
                    )
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    status = response.get("status")
    kind = {"incomplete": "response.incomplete", "failed": "response.failed"}.get(
        status, "response.completed"
    )
    events.append({"type": kind, "response": response})
    return events


class ResponsesEvents(StreamParser):
    """Turns Responses stream events (SDK models or dicts) into bulkhead stream events."""

    def __init__(self, provider: str, exchange: Exchange) -> None:
        super().__init__(provider, exchange)
        self.calls: dict[int, dict[str, Any]] = {}
        self.usage: Usage | None = None
        self.status: str | None = None
        self.incomplete_reason = ""

    def _error(self, code: str, message: str, body: dict[str, Any]) -> ProviderError:
        return ProviderError(
            f"{self.provider}: stream error {code}: {message}",
            provider=self.provider,
            status=self.exchange.status,
            headers=self.exchange.response_headers,
            body=json.dumps(body, ensure_ascii=False, default=str),
            request_bytes=self.exchange.actual_bytes,
            error_type=code,
            transport="stream-error",
        )

    def _finished(self, event: Any, status: str) -> None:
        response = get(event, "response")
        self.status = status
        usage = _usage(get(response, "usage"))
        if usage is not None:
            self.usage = usage
        details = get(response, "incomplete_details")
        self.incomplete_reason = text_field(details, "reason") if details else ""

    def _feed(self, event: Any) -> list[StreamEvent]:
        kind = get(event, "type")
        if kind == "response.output_text.delta":
            text = text_field(event, "delta")
            return [TextChunk(text)] if text else []
        if kind == "response.output_item.added":
            item = get(event, "item")
            if get(item, "type") == "function_call":
                self.calls[index_field(event, "output_index")] = {
                    "call_id": text_field(item, "call_id"),
                    "name": text_field(item, "name"),
                    "arguments": [],
                }
            return []
        if kind == "response.function_call_arguments.delta":
            slot = self.calls.get(index_field(event, "output_index"))
            if slot is not None:
                slot["arguments"].append(text_field(event, "delta"))
            return []
        if kind == "response.output_item.done":
            item = get(event, "item")
            item_type = get(item, "type")
            if item_type == "function_call":
                index = index_field(event, "output_index")
                slot = self.calls.setdefault(index, {"call_id": "", "name": "", "arguments": []})
                slot["call_id"] = text_field(item, "call_id") or slot["call_id"]
                slot["name"] = text_field(item, "name") or slot["name"]
                arguments = text_field(item, "arguments")
                if arguments:
                    slot["arguments"] = [arguments]
                slot["done"] = True
                return []
            if item_type in REPLAYED:
                return [NativeChunk(API, _item_dict(item))]
            return []
        if kind == "response.completed":
            self._finished(event, "completed")
            return []
        if kind == "response.incomplete":
            self._finished(event, "incomplete")
            return []
        if kind == "response.failed":
            error = get(get(event, "response"), "error")
            code = str(get(error, "code") or "server_error")
            message = str(get(error, "message") or code)
            raise self._error(code, message, {"error": {"code": code, "message": message}})
        if kind == "error":
            code = str(get(event, "code") or "error")
            message = str(get(event, "message") or code)
            raise self._error(
                code, message, {"error": {"code": code, "message": message, "param": get(event, "param")}}
            )
        return []  # created, in_progress, content parts, reasoning summaries, compaction.compacting, …

    def _finish(self) -> list[StreamEvent]:
        if self.status is None:
            raise incomplete_stream(self.provider, self.exchange)
        events: list[StreamEvent] = []
        for index in sorted(self.calls):
            call = self.calls[index]
            events.append(
                ToolCallChunk(
                    call["call_id"] or f"call_{uuid.uuid4().hex[:24]}",
                    call["name"],
                    parse_arguments("".join(call["arguments"])),
                )
            )
        if self.usage is not None:
            events.append(UsageChunk(self.usage))
        if self.status == "incomplete":
            raw = self.incomplete_reason or "incomplete"
            events.append(StopChunk(_INCOMPLETE.get(raw, "other"), raw=raw))
        elif self.calls:
            events.append(StopChunk("tool_use", raw="function_call"))
        else:
            events.append(StopChunk("end", raw="completed"))
        self.calls.clear()
        return events
