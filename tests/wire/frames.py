"""Response bodies in each provider's real wire format, for the scripted server."""

from __future__ import annotations

import json
from typing import Any

from app.lab import eventstream

SSE = {"content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache"}
EVENTSTREAM = {"content-type": "application/vnd.amazon.eventstream"}
JSON = {"content-type": "application/json"}
HTML = {"content-type": "text/html; charset=utf-8"}


# -- Anthropic ------------------------------------------------------------------------------------


def anthropic_event(name: str, payload: dict[str, Any]) -> str:
    return f"event: {name}\ndata: {json.dumps({'type': name, **payload})}\n\n"


def _anthropic_start(usage: dict[str, int]) -> str:
    return anthropic_event(
        "message_start",
        {
            "message": {
                "id": "msg_01FAKE",
                "type": "message",
                "role": "assistant",
                "content": [],
                "model": "claude-sonnet-5",
                "stop_reason": None,
                "stop_sequence": None,
                "usage": usage,
            }
        },
    )


def anthropic_text(
    parts: list[str],
    *,
    stop: str = "end_turn",
    input_tokens: int = 12,
    output_tokens: int = 7,
    cache_read: int = 0,
    cache_write: int = 0,
) -> list[str]:
    usage = {
        "input_tokens": input_tokens,
        "output_tokens": 1,
        "cache_creation_input_tokens": cache_write,
        "cache_read_input_tokens": cache_read,
    }
    frames = [
        _anthropic_start(usage),
        'event: ping\ndata: {"type": "ping"}\n\n',
        anthropic_event("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}}),
    ]
    frames += [
        anthropic_event("content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": p}})
        for p in parts
    ]
    frames += [
        anthropic_event("content_block_stop", {"index": 0}),
        anthropic_event(
            "message_delta",
            {
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": output_tokens},
            },
        ),
        anthropic_event("message_stop", {}),
    ]
    return frames


def anthropic_tool(
    call_id: str, name: str, args: dict[str, Any], *, preface: str = "Let me look."
) -> list[str]:
    encoded = json.dumps(args)
    half = len(encoded) // 2
    usage = {"input_tokens": 20, "output_tokens": 1}
    return [
        _anthropic_start(usage),
        anthropic_event("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}}),
        anthropic_event(
            "content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": preface}}
        ),
        anthropic_event("content_block_stop", {"index": 0}),
        anthropic_event(
            "content_block_start",
            {"index": 1, "content_block": {"type": "tool_use", "id": call_id, "name": name, "input": {}}},
        ),
        anthropic_event(
            "content_block_delta",
            {"index": 1, "delta": {"type": "input_json_delta", "partial_json": encoded[:half]}},
        ),
        anthropic_event(
            "content_block_delta",
            {"index": 1, "delta": {"type": "input_json_delta", "partial_json": encoded[half:]}},
        ),
        anthropic_event("content_block_stop", {"index": 1}),
        anthropic_event(
            "message_delta", {"delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 30}}
        ),
        anthropic_event("message_stop", {}),
    ]


def anthropic_error_event(error_type: str = "overloaded_error", message: str = "Overloaded") -> str:
    return f"event: error\ndata: {json.dumps({'type': 'error', 'error': {'type': error_type, 'message': message}})}\n\n"


def anthropic_error_json(error_type: str, message: str) -> str:
    return json.dumps(
        {"type": "error", "error": {"type": error_type, "message": message}, "request_id": "req_FAKE"}
    )


# -- OpenAI ---------------------------------------------------------------------------------------


def _chunk(
    delta: dict[str, Any] | None,
    finish: str | None = None,
    usage: dict[str, Any] | None = None,
    choices: bool = True,
) -> str:
    body: dict[str, Any] = {
        "id": "chatcmpl-FAKE",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-4o",
        "choices": [],
    }
    if choices:
        body["choices"] = [{"index": 0, "delta": delta or {}, "finish_reason": finish, "logprobs": None}]
    if usage is not None:
        body["usage"] = usage
    return f"data: {json.dumps(body)}\n\n"


def openai_usage(prompt: int = 15, completion: int = 6, cached: int = 0) -> dict[str, Any]:
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": cached},
    }


def openai_text(parts: list[str], *, finish: str = "stop", usage: dict[str, Any] | None = None) -> list[str]:
    frames = [_chunk({"role": "assistant", "content": ""})]
    frames += [_chunk({"content": p}) for p in parts]
    frames += [
        _chunk({}, finish),
        _chunk(None, usage=usage or openai_usage(), choices=False),
        "data: [DONE]\n\n",
    ]
    return frames


def openai_tool(call_id: str, name: str, args: dict[str, Any]) -> list[str]:
    encoded = json.dumps(args)
    half = len(encoded) // 2
    return [
        _chunk(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "index": 0,
                        "id": call_id,
                        "type": "function",
                        "function": {"name": name, "arguments": ""},
                    }
                ],
            }
        ),
        _chunk({"tool_calls": [{"index": 0, "function": {"arguments": encoded[:half]}}]}),
        _chunk({"tool_calls": [{"index": 0, "function": {"arguments": encoded[half:]}}]}),
        _chunk({}, "tool_calls"),
        _chunk(None, usage=openai_usage(40, 12), choices=False),
        "data: [DONE]\n\n",
    ]


def openai_error_json(message: str, error_type: str, code: str | None = None) -> str:
    return json.dumps({"error": {"message": message, "type": error_type, "param": None, "code": code}})


def openai_stream_error(message: str = "The server had an error", error_type: str = "server_error") -> str:
    return f"data: {json.dumps({'error': {'message': message, 'type': error_type, 'code': None}})}\n\n"


# -- Bedrock (AWS event-stream frames) -------------------------------------------------------------


def bedrock_text(
    parts: list[str], *, stop: str = "end_turn", usage: dict[str, int] | None = None
) -> list[bytes]:
    frames = [eventstream.event("messageStart", {"role": "assistant"})]
    frames += [
        eventstream.event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": p}}) for p in parts
    ]
    frames += [
        eventstream.event("contentBlockStop", {"contentBlockIndex": 0}),
        eventstream.event("messageStop", {"stopReason": stop}),
        eventstream.event(
            "metadata",
            {
                "usage": usage or {"inputTokens": 11, "outputTokens": 5, "totalTokens": 16},
                "metrics": {"latencyMs": 42},
            },
        ),
    ]
    return frames


def bedrock_tool(call_id: str, name: str, args: dict[str, Any]) -> list[bytes]:
    encoded = json.dumps(args)
    half = len(encoded) // 2
    return [
        eventstream.event("messageStart", {"role": "assistant"}),
        eventstream.event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "Checking."}}),
        eventstream.event("contentBlockStop", {"contentBlockIndex": 0}),
        eventstream.event(
            "contentBlockStart",
            {"contentBlockIndex": 1, "start": {"toolUse": {"toolUseId": call_id, "name": name}}},
        ),
        eventstream.event(
            "contentBlockDelta", {"contentBlockIndex": 1, "delta": {"toolUse": {"input": encoded[:half]}}}
        ),
        eventstream.event(
            "contentBlockDelta", {"contentBlockIndex": 1, "delta": {"toolUse": {"input": encoded[half:]}}}
        ),
        eventstream.event("contentBlockStop", {"contentBlockIndex": 1}),
        eventstream.event("messageStop", {"stopReason": "tool_use"}),
        eventstream.event(
            "metadata",
            {"usage": {"inputTokens": 30, "outputTokens": 9, "totalTokens": 39}, "metrics": {"latencyMs": 7}},
        ),
    ]


def bedrock_error_json(message: str) -> str:
    return json.dumps({"message": message})


# -- gateway pages ----------------------------------------------------------------------------------

NGINX_413 = (
    "<html>\r\n<head><title>413 Request Entity Too Large</title></head>\r\n<body>\r\n"
    "<center><h1>413 Request Entity Too Large</h1></center>\r\n<hr><center>nginx/1.25.3</center>\r\n"
    "</body>\r\n</html>\r\n"
)
CLOUDFLARE_403 = (
    '<!DOCTYPE html>\n<html lang="en-US"><head><title>Attention Required! | Cloudflare</title>'
    "</head><body><h1>Sorry, you have been blocked</h1><p>This website is using a security service "
    "to protect itself from online attacks.</p><span>Cloudflare Ray ID: <strong>8f1e2d3c4b5a6978"
    "</strong></span></body></html>"
)
CLOUDFLARE_HEADERS = {**HTML, "server": "cloudflare", "cf-ray": "8f1e2d3c4b5a6978-FRA"}
CAPTIVE_200 = (
    "<!DOCTYPE html><html><head><title>Guest Wi-Fi Login</title></head>"
    '<body><form action="/login">Accept the terms to continue</form></body></html>'
)
