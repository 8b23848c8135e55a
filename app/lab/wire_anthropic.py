"""Anthropic Messages API: `POST /v1/messages` (JSON or SSE) and `POST /v1/messages/count_tokens`.

Request: model, max_tokens, system (string or text blocks), messages (string or blocks: text, tool_use,
tool_result, image, …; a `system`-role message between them, as the mid-conversation system beta that
Claude Code uses sends it, joins the system prompt), tools, `cache_control` on tools/system/content blocks, stream. Responses,
stream events, usage (`input_tokens` excludes cached tokens) and errors
(`{"type":"error","error":{"type","message"},"request_id"}` with a `request-id` header) are shaped as the
real API sends them.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import replace
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
from app.model.image_check import problem as image_problem

NAME = "anthropic"
STOP_REASONS = {END_TURN: "end_turn", TOOL_USE_STOP: "tool_use", MAX_TOKENS: "max_tokens"}
COMPACTION = "compaction"
SUMMARY_LABEL = "[compacted earlier conversation]\n"
CLEARED_PLACEHOLDER = "[tool result cleared by context management]"
# The API's documented defaults (context editing, threshold compaction).
CLEAR_TRIGGER_DEFAULT = 100_000
CLEAR_KEEP_DEFAULT = 3
COMPACT_TRIGGER_DEFAULT = 150_000


def _request_id() -> str:
    return request_id("req_011CLab")


def tool_id(neutral_id: str) -> str:
    return f"toolu_01{neutral_id}"


# --- parsing ---------------------------------------------------------------------------------------


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [
            part.get("text", "") for part in content if isinstance(part, dict) and part.get("type") == "text"
        ]
        loaded = _references(content)
        if loaded:
            texts.append(f"[tool definitions loaded: {', '.join(loaded)}]")
        return "\n".join(texts)
    return ""


def _references(content: Any) -> list[str]:
    """The tool names of the `tool_reference` blocks in a tool result (Anthropic's tool search)."""
    if not isinstance(content, list):
        return []
    return [
        str(part.get("tool_name", ""))
        for part in content
        if isinstance(part, dict) and part.get("type") == "tool_reference"
    ]


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
        return (
            Block(TOOL_USE, name=name, id=str(raw.get("id", "")), input=args),
            segment("tool_use", name + compact_json(args), breakpoint=mark),
        )
    if kind == "tool_result":
        text = _result_text(raw.get("content"))
        return (
            Block(TOOL_RESULT, text, id=str(raw.get("tool_use_id", "")), is_error=bool(raw.get("is_error"))),
            segment("tool_result", text, breakpoint=mark),
        )
    if kind == "compaction":
        content = raw.get("content")
        if content is not None and (not isinstance(content, str) or not content.strip()):
            raise WireError(f"{where}.content: compaction content must be a non-empty string or null")
        text = SUMMARY_LABEL + (content or "")
        return Block(TEXT, text, name=COMPACTION), segment("compaction", content or "", breakpoint=mark)
    if kind == "image":  # as Anthropic does: an image it cannot read is a 400 naming the block
        _check_image(raw.get("source"), where)
    rest = {k: v for k, v in raw.items() if k != "cache_control"}
    return Block(OTHER), segment(kind, compact_json(rest), breakpoint=mark)


def _system_message(content: Any, where: str) -> tuple[str, Segment]:
    """A `system`-role message inside `messages` (the mid-conversation system beta): text only."""
    if isinstance(content, str):
        return content, segment("system", content)
    if isinstance(content, list) and content:
        texts = []
        for position, raw in enumerate(content):
            if not isinstance(raw, dict) or raw.get("type") != "text" or not isinstance(raw.get("text"), str):
                raise WireError(f"{where}.content.{position}: a system message holds text blocks only")
            texts.append(raw["text"])
        mark = any(isinstance(raw, dict) and raw.get("cache_control") for raw in content)
        return "\n".join(texts), segment("system", "\n".join(texts), breakpoint=mark)
    raise WireError(f"{where}.content: Field required")


def _check_image(source: Any, where: str) -> None:
    if not isinstance(source, dict) or source.get("type") != "base64":
        return
    try:
        data = base64.b64decode(str(source.get("data", "")), validate=True)
    except (ValueError, binascii.Error):
        raise WireError(f"{where}.source.base64.data: invalid base64 data") from None
    if image_problem(str(source.get("media_type", "")), data):
        raise WireError(f"{where}.source.base64: Could not process image")


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
    deferred: dict[
        str, str
    ] = {}  # defer_loading tools: not read by the model until a tool_reference loads them
    for index, tool in enumerate(body.get("tools") or []):
        if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
            raise WireError(f"tools.{index}.name: Field required")
        described = (
            tool["name"]
            + "\n"
            + str(tool.get("description", ""))
            + compact_json(tool.get("input_schema", {}))
        )
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
    parsed: list[tuple[str, list[Block], list[Segment]]] = []
    mid_system: list[str] = []
    for index, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant", "system"):
            raise WireError(f"messages.{index}.role: Input should be 'user', 'assistant' or 'system'")
        content = message.get("content")
        if message["role"] == "system":  # the mid-conversation system beta (Claude Code sends one)
            text, seg = _system_message(content, f"messages.{index}")
            mid_system.append(text)
            segments.append(seg)
            continue
        if isinstance(content, str):
            parsed.append((message["role"], [Block(TEXT, content)], [segment("text", content)]))
        elif isinstance(content, list):
            blocks, segs = [], []
            for position, raw in enumerate(content):
                block, seg = _block(raw, f"messages.{index}.content.{position}")
                blocks.append(block)
                segs.append(seg)
                if isinstance(raw, dict) and raw.get("type") == "tool_result":
                    for name in _references(raw.get("content")):
                        if name not in deferred:
                            raise WireError(
                                f"messages.{index}.content.{position}: tool_reference to {name!r}, which "
                                f"is not a tool of this request with defer_loading: true",
                                code="tool_reference_unresolved",
                            )
                        if name not in tools:  # the API expands the reference into the definition
                            tools.append(name)
                            segments.append(segment("tool", deferred[name]))
            parsed.append((message["role"], blocks, segs))
        else:
            raise WireError(f"messages.{index}.content: Field required")
    options: dict[str, Any] = {}
    if not count_only:
        parsed = _from_latest_compaction(parsed)
        options = _context_options(body, parsed, segments)
    turns = [Turn(role, tuple(blocks)) for role, blocks, _ in parsed]
    segments += [seg for _, _, segs in parsed for seg in segs]
    conv = Conversation(
        NAME,
        model,
        "\n".join([system_text, *mid_system]) if mid_system else system_text,
        tuple(turns),
        tuple(tools),
        max_tokens if not count_only else None,
        bool(body.get("stream")),
        body_bytes,
        len(messages),
        tuple(segments),
        options,
    )
    if options.get("compact_trigger") and conv.input_tokens >= options["compact_trigger"]:
        conv = replace(conv, options={**options, "compaction": _summary(conv)})
    elif options.get("compaction_only"):
        conv = replace(conv, options={**options, "compaction": _summary(conv)})
    return conv


def _summary(conv: Conversation) -> str:
    """The lab's extractive summary; the request's summarization instructions lead it."""
    from app.lab.model import summarize

    instructions = conv.options.get("instructions")
    return (f"Instructions: {instructions}\n" if instructions else "") + summarize(conv)


def _from_latest_compaction(
    parsed: list[tuple[str, list[Block], list[Segment]]],
) -> list[tuple[str, list[Block], list[Segment]]]:
    """What the API reads: every block before the latest compaction block is dropped."""
    for index in range(len(parsed) - 1, -1, -1):
        role, blocks, segs = parsed[index]
        positions = [i for i, b in enumerate(blocks) if b.name == COMPACTION and b.kind == TEXT]
        if positions:
            at = positions[-1]
            return [(role, blocks[at:], segs[at:]), *parsed[index + 1 :]]
    return parsed


def _edits(body: dict[str, Any]) -> list[dict[str, Any]]:
    config = body.get("context_management")
    if config is None:
        return []
    edits = config.get("edits") if isinstance(config, dict) else None
    if not isinstance(edits, list):
        raise WireError("context_management.edits: Input should be a valid list")
    for index, edit in enumerate(edits):
        if not isinstance(edit, dict) or edit.get("type") not in (
            "clear_tool_uses_20250919",
            "clear_thinking_20251015",
            "compact_20260112",
        ):
            raise WireError(
                f"context_management.edits.{index}.type: Input tag does not match any of the expected "
                "tags: 'clear_tool_uses_20250919', 'clear_thinking_20251015', 'compact_20260112'"
            )
    return edits


def _value(obj: Any, default: int | None) -> int | None:
    if isinstance(obj, dict) and isinstance(obj.get("value"), int) and not isinstance(obj.get("value"), bool):
        return obj["value"]
    return default


def _context_options(
    body: dict[str, Any], parsed: list[tuple[str, list[Block], list[Segment]]], prefix: list[Segment]
) -> dict[str, Any]:
    """Apply context editing to `parsed` in place (cleared tool results) and say what was done."""
    edits = _edits(body)
    options: dict[str, Any] = {}
    if body.get("compaction") is not None:
        if edits:
            raise WireError("compaction: cannot be combined with context_management")
        compaction = body["compaction"]
        if not isinstance(compaction, dict) or compaction.get("type") != "summarize":
            raise WireError("compaction.type: Input tag does not match the expected tag: 'summarize'")
        options["compaction_only"] = True
        if isinstance(compaction.get("instructions"), str) and compaction["instructions"].strip():
            options["instructions"] = compaction["instructions"].strip()
        return options
    if not edits:
        return options
    options["context_management"] = True
    applied: list[dict[str, Any]] = []

    def tokens() -> int:
        from app.lab.conversation import estimate_tokens

        return estimate_tokens(
            sum(s.nbytes for s in prefix) + sum(s.nbytes for _, _, segs in parsed for s in segs)
        )

    for edit in edits:
        if edit["type"] == "clear_tool_uses_20250919":
            trigger = _value(edit.get("trigger"), CLEAR_TRIGGER_DEFAULT) or CLEAR_TRIGGER_DEFAULT
            keep = _value(edit.get("keep"), CLEAR_KEEP_DEFAULT)
            at_least = _value(edit.get("clear_at_least"), 0) or 0
            if tokens() < trigger:
                continue
            places = [
                (m, b)
                for m, (_, blocks, _) in enumerate(parsed)
                for b, block in enumerate(blocks)
                if block.kind == TOOL_RESULT and block.text != CLEARED_PLACEHOLDER
            ]
            victims = places[: max(0, len(places) - (keep or 0))]
            from app.lab.conversation import estimate_tokens

            freed = sum(estimate_tokens(len(parsed[m][1][b].text.encode("utf-8"))) for m, b in victims)
            if not victims or freed < at_least:
                continue
            for m, b in victims:
                role, blocks, segs = parsed[m]
                old = blocks[b]
                blocks[b] = Block(TOOL_RESULT, CLEARED_PLACEHOLDER, id=old.id, is_error=old.is_error)
                segs[b] = segment("tool_result", CLEARED_PLACEHOLDER, breakpoint=segs[b].breakpoint)
            applied.append(
                {
                    "type": "clear_tool_uses_20250919",
                    "cleared_tool_uses": len(victims),
                    "cleared_input_tokens": freed,
                }
            )
        elif edit["type"] == "compact_20260112":
            options["compact_trigger"] = _value(edit.get("trigger"), COMPACT_TRIGGER_DEFAULT)
            if isinstance(edit.get("instructions"), str) and edit["instructions"].strip():
                options["instructions"] = edit["instructions"].strip()
    options["applied_edits"] = applied
    return options


def usage_for(conv: Conversation, cache: PromptCache) -> Usage:
    result = cache.breakpoints(conv.segments)
    return Usage(conv.input_tokens, result.read_tokens, result.write_tokens)


# --- answers ---------------------------------------------------------------------------------------


def _usage(usage: Usage, output_tokens: int) -> dict[str, Any]:
    return {
        "input_tokens": usage.uncached_input_tokens,
        "cache_creation_input_tokens": usage.cache_write_tokens,
        "cache_read_input_tokens": usage.cache_read_tokens,
        "cache_creation": {
            "ephemeral_5m_input_tokens": usage.cache_write_tokens,
            "ephemeral_1h_input_tokens": 0,
        },
        "output_tokens": output_tokens,
        "service_tier": "standard",
    }


def _content(reply: Reply) -> list[dict[str, Any]]:
    out = []
    for block in reply.blocks:
        if block.kind == TEXT:
            out.append({"type": "text", "text": block.text})
        else:
            out.append(
                {
                    "type": "tool_use",
                    "id": tool_id(block.id),
                    "name": block.name,
                    "input": dict(block.input or {}),
                }
            )
    return out


def _headers(rid: str) -> tuple[tuple[str, str], ...]:
    return (("request-id", rid), ("anthropic-organization-id", "lab-organization"), ("via", "bulkhead-lab"))


def _answer(conv: Conversation, reply: Reply) -> tuple[list[dict[str, Any]], str, int]:
    """The content blocks, stop reason and output tokens: a compaction block first when one is due;
    a compaction request (the `compaction` parameter) gets that block alone."""
    summary = conv.options.get("compaction")
    compaction = [{"type": "compaction", "content": summary}] if summary else []
    if conv.options.get("compaction_only"):
        return compaction, "compaction", max(1, len(summary or "") // 4)
    return compaction + _content(reply), STOP_REASONS[reply.stop_reason], reply.output_tokens


def _context_management(conv: Conversation) -> dict[str, Any] | None:
    if not conv.options.get("context_management"):
        return None
    return {"applied_edits": list(conv.options.get("applied_edits") or [])}


def complete(conv: Conversation, reply: Reply, usage: Usage) -> Response:
    rid = _request_id()
    content, stop_reason, output_tokens = _answer(conv, reply)
    message = {
        "id": f"msg_01Lab{rid[-20:]}",
        "type": "message",
        "role": "assistant",
        "model": conv.model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": _usage(usage, output_tokens),
    }
    if _context_management(conv) is not None:
        message["context_management"] = _context_management(conv)
    return json_response(200, message, _headers(rid))


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: ".encode() + json_body(data) + b"\n\n"


def stream(conv: Conversation, reply: Reply, usage: Usage) -> StreamResponse:
    rid = _request_id()
    start_usage = _usage(usage, 1)
    events = [
        StreamEvent(
            _sse(
                "message_start",
                {
                    "type": "message_start",
                    "message": {
                        "id": f"msg_01Lab{rid[-20:]}",
                        "type": "message",
                        "role": "assistant",
                        "model": conv.model,
                        "content": [],
                        "stop_reason": None,
                        "stop_sequence": None,
                        "usage": start_usage,
                    },
                },
            )
        ),
        StreamEvent(_sse("ping", {"type": "ping"})),
    ]
    content, stop_reason, output_tokens = _answer(conv, reply)
    offset = 0
    if content and content[0]["type"] == "compaction":
        offset = 1
        events.append(
            StreamEvent(
                _sse(
                    "content_block_start",
                    {
                        "type": "content_block_start",
                        "index": 0,
                        "content_block": {"type": "compaction", "content": None},
                    },
                )
            )
        )
        events.append(
            StreamEvent(
                _sse(
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": 0,
                        "delta": {
                            "type": "compaction_delta",
                            "content": content[0]["content"],
                            "encrypted_content": None,
                        },
                    },
                )
            )
        )
        events.append(StreamEvent(_sse("content_block_stop", {"type": "content_block_stop", "index": 0})))
    blocks = () if conv.options.get("compaction_only") else reply.blocks
    for index, block in enumerate(blocks, start=offset):
        if block.kind == TEXT:
            events.append(
                StreamEvent(
                    _sse(
                        "content_block_start",
                        {
                            "type": "content_block_start",
                            "index": index,
                            "content_block": {"type": "text", "text": ""},
                        },
                    )
                )
            )
            for piece in text_pieces(block.text):
                events.append(
                    StreamEvent(
                        _sse(
                            "content_block_delta",
                            {
                                "type": "content_block_delta",
                                "index": index,
                                "delta": {"type": "text_delta", "text": piece},
                            },
                        ),
                        content=True,
                    )
                )
        else:
            events.append(
                StreamEvent(
                    _sse(
                        "content_block_start",
                        {
                            "type": "content_block_start",
                            "index": index,
                            "content_block": {
                                "type": "tool_use",
                                "id": tool_id(block.id),
                                "name": block.name,
                                "input": {},
                            },
                        },
                    )
                )
            )
            for piece in json_pieces(block.input):
                events.append(
                    StreamEvent(
                        _sse(
                            "content_block_delta",
                            {
                                "type": "content_block_delta",
                                "index": index,
                                "delta": {"type": "input_json_delta", "partial_json": piece},
                            },
                        ),
                        content=True,
                    )
                )
        events.append(StreamEvent(_sse("content_block_stop", {"type": "content_block_stop", "index": index})))
    final = _usage(usage, output_tokens)
    final.pop("service_tier")
    final.pop("cache_creation")
    delta: dict[str, Any] = {
        "type": "message_delta",
        "delta": {"stop_reason": stop_reason, "stop_sequence": None},
        "usage": final,
    }
    if _context_management(conv) is not None:
        delta["context_management"] = _context_management(conv)
    events.append(StreamEvent(_sse("message_delta", delta)))
    events.append(StreamEvent(_sse("message_stop", {"type": "message_stop"})))
    headers = (
        ("content-type", "text/event-stream; charset=utf-8"),
        ("cache-control", "no-cache"),
        *_headers(rid),
    )
    return StreamResponse(200, headers, events)


def count_tokens(conv: Conversation) -> Response:
    return json_response(200, {"input_tokens": conv.input_tokens}, _headers(_request_id()))


# --- errors ----------------------------------------------------------------------------------------


def error(status: int, error_type: str, message: str, headers: tuple[tuple[str, str], ...] = ()) -> Response:
    rid = _request_id()
    body = {"type": "error", "error": {"type": error_type, "message": message}, "request_id": rid}
    return json_response(
        status, body, (*_headers(rid), ("x-should-retry", "true" if status >= 429 else "false"), *headers)
    )


def bad_request(exc: WireError) -> Response:
    return error(400, "invalid_request_error", exc.message)


def overflow(tokens: int, window: int) -> Response:
    return error(400, "invalid_request_error", f"prompt is too long: {tokens} tokens > {window} maximum")


def too_large(cap: int) -> Response:
    return error(413, "request_too_large", "Request exceeds the maximum size")


RATE_LIMIT_MESSAGE = (
    "This request would exceed the rate limit for your organization (lab-organization) of "
    "50,000 input tokens per minute. For details, refer to: https://docs.claude.com/en/api/rate-limits. "
    "You can see the response headers for current usage. Please try again later."
)


def fault(kind: str, conv: Conversation | None = None) -> Response:
    if kind == "429":
        return error(
            429,
            "rate_limit_error",
            RATE_LIMIT_MESSAGE,
            (
                ("retry-after", str(RETRY_AFTER_SECONDS)),
                ("anthropic-ratelimit-input-tokens-limit", "50000"),
                ("anthropic-ratelimit-input-tokens-remaining", "0"),
                ("anthropic-ratelimit-input-tokens-reset", "1970-01-01T00:00:00Z"),
            ),
        )
    if kind == "529":
        return error(529, "overloaded_error", "Overloaded")
    if kind == "401":
        return error(401, "authentication_error", "invalid x-api-key")
    if kind == "404":
        return error(404, "not_found_error", f"model: {conv.model if conv else 'lab-1'}")
    if kind == "503":
        return error(503, "api_error", "Service Unavailable")
    return error(500, "api_error", "Internal server error")


def stream_error() -> bytes:
    """The in-stream error event the API sends when it becomes overloaded mid-answer."""
    return _sse("error", {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})


def decode_error(text: str) -> WireError:
    return WireError(f"Invalid JSON in the request body: {text}")


# The body fields a beta allows, and the beta (any of them) that must be in the `anthropic-beta` header.
BETA_FIELDS = {
    "context_management": ("context-management-2025-06-27", "compact-2026-01-12"),
    "compaction": ("compact-2026-09-04",),
}


def beta_field_without_header(body: Any, header: str) -> str:
    """`context_management: Extra inputs are not permitted` when the body carries a beta's field and the
    header does not name that beta (the real API's answer, e.g. behind a gateway that strips the header);
    "" otherwise."""
    if not isinstance(body, dict):
        return ""
    sent = {b.strip() for b in header.split(",") if b.strip()}
    for name, betas in BETA_FIELDS.items():
        if name in body and not sent.intersection(betas):
            return f"{name}: Extra inputs are not permitted"
    return ""
