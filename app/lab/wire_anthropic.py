"""Anthropic Messages API: `POST /v1/messages` (JSON or SSE) and `POST /v1/messages/count_tokens`.

Request: model, max_tokens, system (string or text blocks), messages (string or blocks: text, tool_use,
tool_result, image, …), tools, `cache_control` on tools/system/content blocks, stream. Responses,
stream events, usage (`input_tokens` excludes cached tokens) and errors
(`{"type":"error","error":{"type","message"},"request_id"}` with a `request-id` header) are shaped as the
real API sends them.
"""

from __future__ import annotations

from typing import Any

from app.lab.cache import PromptCache
from app.lab.conversation import (
    END_TURN,
    MAX_TOKENS,
    OTHER,
    TEXT,
    TOOL_RESULT,
    TOOL_USE,
    TOOL_USE_STOP,
    Block,
    Conversation,
    Reply,
    Segment,
    Turn,
    Usage,
    WireError,
    compact_json,
    json_pieces,
    segment,
    text_pieces,
)
from app.lab.faults import RETRY_AFTER_SECONDS
from app.lab.http import Response, StreamEvent, StreamResponse, json_body, json_response, request_id

NAME = "anthropic"
STOP_REASONS = {END_TURN: "end_turn", TOOL_USE_STOP: "tool_use", MAX_TOKENS: "max_tokens"}


def _request_id() -> str:
    return request_id("req_011CLab")


def tool_id(neutral_id: str) -> str:
    return f"toolu_01{neutral_id}"


# --- parsing ---------------------------------------------------------------------------------------

def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [part.get("text", "") for part in content if isinstance(part, dict) and part.get("type") == "text"]
        loaded = _references(content)
        if loaded:
            texts.append(f"[tool definitions loaded: {', '.join(loaded)}]")
        return "\n".join(texts)
    return ""


def _references(content: Any) -> list[str]:
    """The tool names of the `tool_reference` blocks in a tool result (Anthropic's tool search)."""
    if not isinstance(content, list):
        return []
    return [str(part.get("tool_name", "")) for part in content
            if isinstance(part, dict) and part.get("type") == "tool_reference"]


def _block(raw: Any, where: str) -> tuple[Block, Segment]:
    if not isinstance(raw, dict) or not isinstance(raw.get("type"), str):
        raise WireError(f"{where}: Input should be a valid dictionary with a type")
    kind, mark = raw["type"], bool(raw.get("cache_control"))
    if kind == "text":
        text = raw.get("text")
        if not isinstance(text, str):
            raise WireError(f"{where}.text: Field required")
        return Block(TEXT, text), segment("text", text, breakpoint=mark)
    if kind == "tool_use":
        name, args = str(raw.get("name", "")), raw.get("input") if isinstance(raw.get("input"), dict) else {}
        return (Block(TOOL_USE, name=name, id=str(raw.get("id", "")), input=args),
                segment("tool_use", name + compact_json(args), breakpoint=mark))
    if kind == "tool_result":
        text = _result_text(raw.get("content"))
        return (Block(TOOL_RESULT, text, id=str(raw.get("tool_use_id", "")), is_error=bool(raw.get("is_error"))),
                segment("tool_result", text, breakpoint=mark))
    rest = {k: v for k, v in raw.items() if k != "cache_control"}
    return Block(OTHER), segment(kind, compact_json(rest), breakpoint=mark)


def parse(body: Any, body_bytes: int, *, count_only: bool = False) -> Conversation:
    if not isinstance(body, dict):
        raise WireError("Input should be a valid dictionary or object to extract fields from")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise WireError("model: Field required")
    messages = body.get("messages")
    if not isinstance(messages, list):
        raise WireError("messages: Field required")
    max_tokens = body.get("max_tokens")
    if not count_only:
        if max_tokens is None:
            raise WireError("max_tokens: Field required")
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            raise WireError("max_tokens: Input should be greater than or equal to 1")
    segments: list[Segment] = []
    tools: list[str] = []
    deferred: dict[str, str] = {}  # defer_loading tools: not read by the model until a tool_reference loads them
    for index, tool in enumerate(body.get("tools") or []):
        if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
            raise WireError(f"tools.{index}.name: Field required")
        described = tool["name"] + "\n" + str(tool.get("description", "")) + compact_json(tool.get("input_schema", {}))
        if tool.get("defer_loading") is True:
            deferred[tool["name"]] = described
            continue
        tools.append(tool["name"])
        segments.append(segment("tool", described, breakpoint=bool(tool.get("cache_control"))))
    if deferred and not tools:
        raise WireError("tools: at least one tool must not have defer_loading set")
    system = body.get("system")
    system_text = ""
    if isinstance(system, str):
        system_text = system
        segments.append(segment("system", system))
    elif isinstance(system, list):
        parts = []
        for index, raw in enumerate(system):
            block, seg = _block(raw, f"system.{index}")
            parts.append(block.text)
            segments.append(seg)
        system_text = "\n".join(parts)
    turns: list[Turn] = []
    for index, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
            raise WireError(f"messages.{index}.role: Input should be 'user' or 'assistant'")
        content = message.get("content")
        if isinstance(content, str):
            blocks = [Block(TEXT, content)]
            segments.append(segment("text", content))
        elif isinstance(content, list):
            blocks = []
            for position, raw in enumerate(content):
                block, seg = _block(raw, f"messages.{index}.content.{position}")
                blocks.append(block)
                segments.append(seg)
                if isinstance(raw, dict) and raw.get("type") == "tool_result":
                    for name in _references(raw.get("content")):
                        if name not in deferred:
                            raise WireError(f"messages.{index}.content.{position}: tool_reference to {name!r}, which "
                                            f"is not a tool of this request with defer_loading: true",
                                            code="tool_reference_unresolved")
                        if name not in tools:  # the API expands the reference into the definition
                            tools.append(name)
                            segments.append(segment("tool", deferred[name]))
        else:
            raise WireError(f"messages.{index}.content: Field required")
        turns.append(Turn(message["role"], tuple(blocks)))
    return Conversation(NAME, model, system_text, tuple(turns), tuple(tools),
                        max_tokens if not count_only else None, bool(body.get("stream")), body_bytes,
                        len(messages), tuple(segments))


def usage_for(conv: Conversation, cache: PromptCache) -> Usage:
    result = cache.breakpoints(conv.segments)
    return Usage(conv.input_tokens, result.read_tokens, result.write_tokens)


# --- answers ---------------------------------------------------------------------------------------

def _usage(usage: Usage, output_tokens: int) -> dict[str, Any]:
    return {"input_tokens": usage.uncached_input_tokens,
            "cache_creation_input_tokens": usage.cache_write_tokens,
            "cache_read_input_tokens": usage.cache_read_tokens,
            "cache_creation": {"ephemeral_5m_input_tokens": usage.cache_write_tokens, "ephemeral_1h_input_tokens": 0},
            "output_tokens": output_tokens, "service_tier": "standard"}


def _content(reply: Reply) -> list[dict[str, Any]]:
    out = []
    for block in reply.blocks:
        if block.kind == TEXT:
            out.append({"type": "text", "text": block.text})
        else:
            out.append({"type": "tool_use", "id": tool_id(block.id), "name": block.name, "input": dict(block.input or {})})
    return out


def _headers(rid: str) -> tuple[tuple[str, str], ...]:
    return (("request-id", rid), ("anthropic-organization-id", "lab-organization"), ("via", "bulkhead-lab"))


def complete(conv: Conversation, reply: Reply, usage: Usage) -> Response:
    rid = _request_id()
    message = {"id": f"msg_01Lab{rid[-20:]}", "type": "message", "role": "assistant", "model": conv.model,
               "content": _content(reply), "stop_reason": STOP_REASONS[reply.stop_reason], "stop_sequence": None,
               "usage": _usage(usage, reply.output_tokens)}
    return json_response(200, message, _headers(rid))


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: ".encode() + json_body(data) + b"\n\n"


def stream(conv: Conversation, reply: Reply, usage: Usage) -> StreamResponse:
    rid = _request_id()
    start_usage = _usage(usage, 1)
    events = [StreamEvent(_sse("message_start", {"type": "message_start", "message": {
        "id": f"msg_01Lab{rid[-20:]}", "type": "message", "role": "assistant", "model": conv.model, "content": [],
        "stop_reason": None, "stop_sequence": None, "usage": start_usage}})),
        StreamEvent(_sse("ping", {"type": "ping"}))]
    for index, block in enumerate(reply.blocks):
        if block.kind == TEXT:
            events.append(StreamEvent(_sse("content_block_start", {"type": "content_block_start", "index": index,
                                                                    "content_block": {"type": "text", "text": ""}})))
            for piece in text_pieces(block.text):
                events.append(StreamEvent(_sse("content_block_delta", {
                    "type": "content_block_delta", "index": index,
                    "delta": {"type": "text_delta", "text": piece}}), content=True))
        else:
            events.append(StreamEvent(_sse("content_block_start", {
                "type": "content_block_start", "index": index,
                "content_block": {"type": "tool_use", "id": tool_id(block.id), "name": block.name, "input": {}}})))
            for piece in json_pieces(block.input):
                events.append(StreamEvent(_sse("content_block_delta", {
                    "type": "content_block_delta", "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": piece}}), content=True))
        events.append(StreamEvent(_sse("content_block_stop", {"type": "content_block_stop", "index": index})))
    final = _usage(usage, reply.output_tokens)
    final.pop("service_tier")
    final.pop("cache_creation")
    events.append(StreamEvent(_sse("message_delta", {
        "type": "message_delta", "delta": {"stop_reason": STOP_REASONS[reply.stop_reason], "stop_sequence": None},
        "usage": final})))
    events.append(StreamEvent(_sse("message_stop", {"type": "message_stop"})))
    headers = (("content-type", "text/event-stream; charset=utf-8"), ("cache-control", "no-cache"), *_headers(rid))
    return StreamResponse(200, headers, events)


def count_tokens(conv: Conversation) -> Response:
    return json_response(200, {"input_tokens": conv.input_tokens}, _headers(_request_id()))


# --- errors ----------------------------------------------------------------------------------------

def error(status: int, error_type: str, message: str, headers: tuple[tuple[str, str], ...] = ()) -> Response:
    rid = _request_id()
    body = {"type": "error", "error": {"type": error_type, "message": message}, "request_id": rid}
    return json_response(status, body, (*_headers(rid), ("x-should-retry", "true" if status >= 429 else "false"),
                                        *headers))


def bad_request(exc: WireError) -> Response:
    return error(400, "invalid_request_error", exc.message)


def overflow(tokens: int, window: int) -> Response:
    return error(400, "invalid_request_error", f"prompt is too long: {tokens} tokens > {window} maximum")


def too_large(cap: int) -> Response:
    return error(413, "request_too_large", "Request exceeds the maximum size")


RATE_LIMIT_MESSAGE = ("This request would exceed the rate limit for your organization (lab-organization) of "
                      "50,000 input tokens per minute. For details, refer to: https://docs.claude.com/en/api/rate-limits. "
                      "You can see the response headers for current usage. Please try again later.")


def fault(kind: str, conv: Conversation | None = None) -> Response:
    if kind == "429":
        return error(429, "rate_limit_error", RATE_LIMIT_MESSAGE, (
            ("retry-after", str(RETRY_AFTER_SECONDS)),
            ("anthropic-ratelimit-input-tokens-limit", "50000"),
            ("anthropic-ratelimit-input-tokens-remaining", "0"),
            ("anthropic-ratelimit-input-tokens-reset", "1970-01-01T00:00:00Z")))
    if kind == "529":
        return error(529, "overloaded_error", "Overloaded")
    if kind == "503":
        return error(503, "api_error", "Service Unavailable")
    return error(500, "api_error", "Internal server error")


def stream_error() -> bytes:
    """The in-stream error event the API sends when it becomes overloaded mid-answer."""
    return _sse("error", {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})


def decode_error(text: str) -> WireError:
    return WireError(f"Invalid JSON in the request body: {text}")

