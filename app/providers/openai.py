"""OpenAI Chat Completions (and compatible servers): streamed with usage, tools, exact bytes.

Wire shape (key order as the SDK sends it, so `dumps(request.body)` is the body byte for byte):

    {"model", "stream": true, "messages", "max_completion_tokens" | "max_tokens",
     "stream_options": {"include_usage": true}, "tools"}

- The `system` argument is the first system message; system-role messages of the view
  stay system messages where they are.
- Every tool result is its own `tool` message (an error result starts with an error
  line); images travel as `image_url` data URLs.
- `base_url` reaches Azure OpenAI (its v1 endpoint; the key also goes in `api-key`),
  Ollama, vLLM, llama.cpp and LM Studio. A localhost base URL needs no key.
- OpenAI itself and Azure take `max_completion_tokens` (the o-series reject
  `max_tokens`); other compatible servers get the long-supported `max_tokens`.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any
from urllib.parse import urlsplit

from app.ca_bundle import httpx_verify
from app.config import Route, Settings
from app.model.costs import Usage
from app.model.events import RequestPurpose
from app.model.messages import COMPACTION_SUMMARY_HEADER, Image, Message, Native, Text, ToolCall, ToolResult
from app.providers.base import (
    ListedModel,
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

DEFAULT_BASE_URL = "https://api.openai.com/v1"
LOCAL_PLACEHOLDER_KEY = "sk-no-key-required"
TOOL_ERROR_LINE = "ERROR: the tool call failed.\n"
_AZURE_SUFFIXES = (".openai.azure.com", ".cognitiveservices.azure.com", ".services.ai.azure.com")
_STOP_REASONS = {"stop": "end", "length": "max_tokens", "tool_calls": "tool_use", "function_call": "tool_use"}
_SDK_ARGUMENTS = frozenset(
    {
        "model",
        "stream",
        "messages",
        "max_completion_tokens",
        "max_tokens",
        "stream_options",
        "tools",
        "tool_choice",
        "temperature",
        "stop",
        "user",
    }
)
_TYPE_ATTRS = ("code", "type")


@dataclass(frozen=True, slots=True)
class _Piece:
    """One bulkhead message as zero or more Chat Completions messages, each measured."""

    messages: tuple[dict[str, Any], ...]
    sizes: tuple[int, ...]


def _call_text(part: ToolCall) -> str:
    return f"[tool call {part.name} {json.dumps(dict(part.args), ensure_ascii=False)}]"


def _result_content(part: ToolResult) -> str:
    return TOOL_ERROR_LINE + part.content if part.is_error else part.content


def _user_content(texts: list[str], images: list[Image]) -> str | list[dict[str, Any]]:
    if not images and len(texts) == 1:
        return texts[0]
    content: list[dict[str, Any]] = [{"type": "text", "text": text} for text in texts]
    content += [
        {"type": "image_url", "image_url": {"url": f"data:{image.media_type};base64,{image.data}"}}
        for image in images
    ]
    return content


def translate(message: Message) -> _Piece:
    """A message's Chat Completions form: tool results first (one message each), then the rest."""
    out: list[dict[str, Any]] = []
    texts: list[str] = []
    images: list[Image] = []
    calls: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, Text):
            if part.text:
                texts.append(part.text)
        elif isinstance(part, Image):
            images.append(part)
        elif isinstance(part, Native):  # another API's compaction: its readable summary, if any
            if part.is_compaction and part.readable:
                texts.append(COMPACTION_SUMMARY_HEADER + part.readable)
        elif isinstance(part, ToolResult):
            if message.role in ("tool", "user"):
                out.append({"role": "tool", "tool_call_id": part.call_id, "content": _result_content(part)})
            else:
                texts.append(f"[tool result]\n{_result_content(part)}")
        elif isinstance(part, ToolCall):
            if message.role == "assistant":
                calls.append(
                    {
                        "id": part.id,
                        "type": "function",
                        "function": {
                            "name": part.name,
                            "arguments": json.dumps(dict(part.args), ensure_ascii=False),
                        },
                    }
                )
            else:
                texts.append(_call_text(part))
    if message.role == "system":
        if texts:
            out.append({"role": "system", "content": "".join(texts)})
    elif message.role == "assistant":
        if texts or calls:
            wire: dict[str, Any] = {"role": "assistant", "content": "".join(texts) if texts else None}
            if calls:
                wire["tool_calls"] = calls
            out.append(wire)
    elif texts or images:  # user, or what a tool message carried besides results
        out.append({"role": "user", "content": _user_content(texts, images)})
    return _Piece(tuple(out), tuple(compact_len(m) for m in out))


def _host(url: str | None) -> str:
    return (urlsplit(url).hostname or "").lower() if url else ""


def openai_api(route: Route) -> str:
    """Which OpenAI API a route speaks: its `api`, else `responses` for OpenAI itself and Azure's v1
    endpoints (`https://RESOURCE.openai.azure.com/openai/v1/`), `chat` for every other base URL —
    Ollama, vLLM, llama.cpp, LM Studio and gateways speak Chat Completions."""
    if route.api:
        return route.api
    if not route.base_url or _host(route.base_url) == "api.openai.com":
        return "responses"
    if _host(route.base_url).endswith(_AZURE_SUFFIXES) and "/openai/v1" in urlsplit(route.base_url).path:
        return "responses"
    return "chat"


class OpenAIProvider(HttpxSdkProvider):
    kind = "openai"
    sdk_module = "openai"
    type_attrs = _TYPE_ATTRS

    def __init__(self, route: Route, settings: Settings, api_key: str | None = None) -> None:
        super().__init__(route, settings, api_key)
        self._pieces: PieceCache[_Piece] = PieceCache()
        self._system_slot: tuple[str, dict[str, Any], int] | None = None
        self._tools_slot = OneSlot()

    @property
    def serialized_messages(self) -> int:
        return self._pieces.serialized

    # -- endpoint -----------------------------------------------------------------------------
    def _base_url(self) -> str:
        return without_userinfo(self.route.base_url or DEFAULT_BASE_URL)  # the key authenticates, not the URL

    @property
    def is_azure(self) -> bool:
        return _host(self.route.base_url).endswith(_AZURE_SUFFIXES)

    @property
    def is_official(self) -> bool:
        return not self.route.base_url or _host(self.route.base_url) == "api.openai.com"

    @property
    def max_tokens_field(self) -> str:
        return "max_completion_tokens" if self.is_official or self.is_azure else "max_tokens"

    def _url(self) -> str:
        return self._base_url().rstrip("/") + "/chat/completions"

    # -- building -----------------------------------------------------------------------------
    def _system_message(self, system: str) -> tuple[dict[str, Any], int]:
        slot = self._system_slot
        if slot is None or slot[0] != system:
            message = {"role": "system", "content": system}
            slot = (system, message, compact_len(message))
            self._system_slot = slot
        return slot[1], slot[2]

    def _tools(self, tools: Sequence[ToolSpec]) -> tuple[list[dict[str, Any]], int]:
        def make() -> tuple[list[dict[str, Any]], int]:
            wire = [
                {
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": dict(t.input_schema),
                    },
                }
                for t in tools
            ]
            return wire, compact_len(wire)

        return self._tools_slot.get(tuple(tools), make)

    def _build(
        self,
        view: Sequence[Message],
        system: str,
        tools: Sequence[ToolSpec],
        *,
        max_tokens: int,
        purpose: RequestPurpose = "chat",
    ) -> Request:
        messages: list[dict[str, Any]] = []
        sizes: list[int] = []
        if system:
            message, size = self._system_message(system)
            messages.append(message)
            sizes.append(size)
        for item in view:
            piece = self._pieces.get(item.id, partial(translate, item))
            messages.extend(piece.messages)
            sizes.extend(piece.sizes)
        body: dict[str, Any] = {
            "model": self.route.model,
            "stream": True,
            "messages": messages,
            self.max_tokens_field: max_tokens,
            "stream_options": {"include_usage": True},
        }
        known = {"messages": list_len(sizes, 1)}
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
        if os.environ.get("OPENAI_API_KEY"):
            return os.environ["OPENAI_API_KEY"]
        if is_local_url(self.route.base_url):
            return LOCAL_PLACEHOLDER_KEY  # local servers need none; the SDK insists on one
        return None

    def _new_client(self) -> Any:
        import openai

        key = self._resolve_key()
        timeout = openai.Timeout(self.settings.request_timeout, connect=self.settings.connect_timeout)
        http_client = openai.DefaultAsyncHttpxClient(
            timeout=timeout,
            verify=httpx_verify(self.route, self.settings),
            event_hooks={"request": [httpx_request_hook], "response": [httpx_response_hook]},
        )
        headers = {"api-key": key} if self.is_azure and key else None
        return openai.AsyncOpenAI(
            api_key=key,
            base_url=self._base_url(),
            max_retries=0,
            timeout=timeout,
            http_client=http_client,
            default_headers=headers,
        )

    # -- probing --------------------------------------------------------------------------------
    probe_method = (
        "a completion with max_tokens 0: Chat Completions has no free counting endpoint, and the "
        "provider refuses max_tokens 0 with a 400 before running the model — so a probe that gets "
        "past the gateway costs nothing"
    )

    async def probe(self, size: int, floor: ProbeFloor | None = None) -> ProbeReply:
        floor = floor or ProbeFloor()
        field = self.max_tokens_field
        shape = self.build((), floor.system, floor.tools, max_tokens=0, purpose="probe").body
        system = list(shape["messages"])
        carried = {"tools": shape["tools"]} if "tools" in shape else {}
        envelope = {
            "messages": [*system, {"role": "user", "content": ""}],
            "model": self.route.model,
            field: 0,
            **carried,
        }
        filler = "x" * max(1, size - compact_len(envelope))
        arguments: dict[str, Any] = {
            "model": self.route.model,
            "messages": [*system, {"role": "user", "content": filler}],
            field: 0,
            **carried,
        }
        if floor.headers:
            arguments["extra_headers"] = dict(floor.headers)
        return await self._probe_call(lambda client: client.chat.completions.create(**arguments))

    async def probe_texts(self, texts: Sequence[str]) -> ProbeReply:
        field = self.max_tokens_field
        content = [{"type": "text", "text": text or " "} for text in texts]
        return await self._probe_call(
            lambda client: client.chat.completions.create(
                model=self.route.model, messages=[{"role": "user", "content": content}], **{field: 0}
            )
        )

    # -- the model list ------------------------------------------------------------------------
    async def list_models(self) -> list[ListedModel]:
        """`GET {base_url}/models`: OpenAI, Azure's v1, Ollama, vLLM (its `max_model_len` is the window),
        llama.cpp, LM Studio."""

        async def call(client: Any) -> list[ListedModel]:
            listed = []
            async for model in client.models.list():
                extra = getattr(model, "model_extra", None) or {}
                window = extra.get("max_model_len") or extra.get("context_length")
                listed.append(
                    ListedModel(
                        model.id,
                        "",
                        int(window) if isinstance(window, int) and window > 0 else None,
                        str(getattr(model, "owned_by", "") or ""),
                    )
                )
            return listed

        return await self._call(Exchange(), call)

    # -- streaming ----------------------------------------------------------------------------
    def _call_arguments(self, request: Request) -> dict[str, Any]:
        arguments = {k: v for k, v in request.body.items() if k in _SDK_ARGUMENTS}
        extra = {k: v for k, v in request.body.items() if k not in _SDK_ARGUMENTS}
        if extra:
            arguments["extra_body"] = extra
        return arguments

    async def _create(self, client: Any, request: Request) -> Any:
        return await client.chat.completions.create(**self._call_arguments(request))

    def _parser(self, exchange: Exchange) -> OpenAIEvents:
        return OpenAIEvents(self.kind, exchange)

    def _from_body(
        self, text: str, content_type: str | None, parser: StreamParser, exchange: Exchange
    ) -> list[StreamEvent]:
        """A 200 that is not an SSE stream: an HTML page, a JSON error, a whole completion from a
        server that ignored `stream`, or SSE with the wrong content type."""
        if looks_like_html(text, content_type):
            raise unexpected_200(self.kind, text, exchange, content_type=content_type)
        try:
            data = json.loads(text)
        except ValueError:
            data = None
        events: list[StreamEvent] = []
        if isinstance(data, dict) and data.get("error"):
            parser.feed(data)  # raises
        if isinstance(data, dict) and isinstance(data.get("choices"), list):
            exchange.saw_done = True  # a whole JSON completion is complete by construction
            events.extend(parser.feed(completion_as_chunk(data)))
            return events + parser.finish()
        sse = parse_sse_text(text) if data is None else []
        if not sse:
            raise unexpected_200(self.kind, text, exchange, content_type=content_type)
        for _name, payload in sse:
            if payload.strip() == "[DONE]":
                exchange.saw_done = True
                break
            try:
                chunk = json.loads(payload)
            except ValueError as exc:
                raise wrap_unknown(self.kind, exc, exchange, in_stream=True) from exc
            events.extend(parser.feed(chunk))
        return events + parser.finish()


def completion_as_chunk(completion: dict[str, Any]) -> dict[str, Any]:
    """A whole (non-streamed) chat.completion as one chunk carrying all of it."""
    choices = []
    for choice in completion.get("choices") or []:
        message = choice.get("message") or {}
        calls = [{**call, "index": i} for i, call in enumerate(message.get("tool_calls") or [])]
        choices.append(
            {
                "index": choice.get("index", 0),
                "finish_reason": choice.get("finish_reason"),
                "delta": {"content": message.get("content"), "tool_calls": calls or None},
            }
        )
    return {"choices": choices, "usage": completion.get("usage")}


class OpenAIEvents(StreamParser):
    """Turns chat.completion.chunk objects (SDK models or dicts) into bulkhead stream events."""

    def __init__(self, provider: str, exchange: Exchange) -> None:
        super().__init__(provider, exchange)
        self.calls: dict[int, dict[str, Any]] = {}
        self.usage: Usage | None = None
        self.finish_reason: str | None = None

    def _feed(self, chunk: Any) -> list[StreamEvent]:
        error = get(chunk, "error")
        if error:
            error_type = get(error, "code") or get(error, "type") or "error"
            message = get(error, "message") or str(error_type)
            raise ProviderError(
                f"{self.provider}: stream error {error_type}: {message}",
                provider=self.provider,
                status=self.exchange.status,
                headers=self.exchange.response_headers,
                body=json.dumps(
                    {"error": error} if isinstance(error, dict) else {"error": str(error)},
                    ensure_ascii=False,
                    default=str,
                ),
                request_bytes=self.exchange.actual_bytes,
                error_type=str(error_type),
                transport="stream-error",
            )
        usage = get(chunk, "usage")
        if usage:
            cached = count_field(get(usage, "prompt_tokens_details"), "cached_tokens") or 0
            self.usage = Usage(
                input_tokens=count_field(usage, "prompt_tokens") or 0,
                output_tokens=count_field(usage, "completion_tokens") or 0,
                cache_read_tokens=cached,
            )
        events: list[StreamEvent] = []
        for choice in list_field(chunk, "choices"):
            if index_field(choice, "index") != 0:
                continue
            delta = get(choice, "delta")
            text = text_field(delta, "content")
            if text:
                events.append(TextChunk(text))
            for call in list_field(delta, "tool_calls"):
                index = index_field(call, "index", len(self.calls))
                slot = self.calls.setdefault(index, {"id": "", "name": "", "arguments": []})
                call_id = text_field(call, "id")
                if call_id and not slot["id"]:
                    slot["id"] = call_id
                function = get(call, "function")
                name = text_field(function, "name")
                if name and not slot["name"]:
                    slot["name"] = name
                arguments = text_field(function, "arguments")
                if arguments:
                    slot["arguments"].append(arguments)
            reason = text_field(choice, "finish_reason")
            if reason:
                self.finish_reason = reason
        return events

    def _finish(self) -> list[StreamEvent]:
        if not self.finish_reason and not self.exchange.saw_done:
            # Neither a finish_reason nor `[DONE]`: the stream was cut (a close-delimited body behind a proxy
            # ends cleanly when the upstream dies). What arrived is kept, marked partial, never retried.
            raise incomplete_stream(self.provider, self.exchange)
        events: list[StreamEvent] = []
        for index in sorted(self.calls):
            call = self.calls[index]
            events.append(
                ToolCallChunk(
                    call["id"] or f"call_{uuid.uuid4().hex[:24]}",
                    call["name"],
                    parse_arguments("".join(call["arguments"])),
                )
            )
        self.calls.clear()
        if self.usage is not None:
            events.append(UsageChunk(self.usage))
        raw = self.finish_reason or ""
        events.append(StopChunk(_STOP_REASONS.get(raw, "other"), raw=raw))
        return events
