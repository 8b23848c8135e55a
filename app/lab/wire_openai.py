"""OpenAI Chat Completions: `POST /v1/chat/completions` (JSON, or SSE `data: {chunk}` … `data: [DONE]`).

Request: model, messages (system/developer, user, assistant with tool_calls, tool), tools (functions),
max_tokens / max_completion_tokens, stream, stream_options.include_usage. Usage carries
`prompt_tokens_details.cached_tokens` (OpenAI's automatic prefix cache). Errors are
`{"error":{"message","type","param","code"}}` with an `x-request-id` header.
"""

from __future__ import annotations

import json
import time
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

NAME = "openai"
FINISH_REASONS = {END_TURN: "stop", TOOL_USE_STOP: "tool_calls", MAX_TOKENS: "length"}


def tool_id(neutral_id: str) -> str:
    return f"call_{neutral_id}"


# --- parsing ---------------------------------------------------------------------------------------


def _text_of(content: Any) -> tuple[str, list[str]]:
    """The text of a message's content and the JSON of any non-text parts (images, audio, …)."""
    if content is None:
        return "", []
    if isinstance(content, str):
        return content, []
    if isinstance(content, list):
        texts, others = [], []
        for part in content:
            if isinstance(part, dict) and part.get("type") == "text":
                texts.append(str(part.get("text", "")))
            else:
                others.append(compact_json(part))
        return "\n".join(texts), others
    raise WireError(
        "Invalid type for 'content': expected a string or an array of content parts.", param="messages"
    )


def _max_tokens(body: dict[str, Any]) -> int | None:
    for key in ("max_completion_tokens", "max_tokens"):
        value = body.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            raise WireError(
                f"Invalid type for '{key}': expected an integer, but got {type(value).__name__} instead.",
                param=key,
                code="invalid_type",
            )
        if value < 1:
            raise WireError(
                f"Invalid '{key}': integer below minimum value. Expected a value >= 1, but got "
                f"{value} instead.",
                param=key,
                code="integer_below_min_value",
            )
        return value
    return None


def parse(body: Any, body_bytes: int) -> Conversation:
    if not isinstance(body, dict):
        raise WireError("Invalid request body: expected a JSON object.")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise WireError("you must provide a model parameter", param="model")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise WireError(
            "Missing required parameter: 'messages'.", param="messages", code="missing_required_parameter"
        )
    max_tokens = _max_tokens(body)
    segments: list[Segment] = []
    tools: list[str] = []
    for index, tool in enumerate(body.get("tools") or []):
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise WireError(
                f"Missing required parameter: 'tools[{index}].function.name'.",
                param=f"tools[{index}].function",
            )
        tools.append(function["name"])
        segments.append(
            segment(
                "tool",
                function["name"]
                + "\n"
                + str(function.get("description", ""))
                + compact_json(function.get("parameters", {})),
            )
        )
    system_parts: list[str] = []
    turns: list[Turn] = []
    for index, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if role not in ("system", "developer", "user", "assistant", "tool"):
            raise WireError(
                f"Invalid value for 'messages[{index}].role'.",
                param=f"messages[{index}].role",
                code="invalid_value",
            )
        text, others = _text_of(message.get("content"))
        content = "".join([text, *others])
        if role in ("system", "developer"):
            system_parts.append(text)
            segments.append(segment("system", content, breakpoint=True))
        elif role == "tool":
            block = Block(TOOL_RESULT, text, id=str(message.get("tool_call_id", "")))
            segments.append(segment("tool_result", content, breakpoint=True))
            if turns and turns[-1].role == "user" and turns[-1].tool_results:
                turns[-1] = Turn("user", turns[-1].blocks + (block,))
            else:
                turns.append(Turn("user", (block,)))
        else:
            blocks = [Block(TEXT, text)] if text else []
            blocks += [Block(OTHER) for _ in others]
            calls = ""
            tool_calls = message.get("tool_calls") if role == "assistant" else None
            for call in tool_calls or []:
                function = call.get("function", {}) if isinstance(call, dict) else {}
                raw = function.get("arguments") or "{}"
                try:
                    args = json.loads(raw) if isinstance(raw, str) else dict(raw)
                except (ValueError, TypeError):
                    args = {"_raw": str(raw)}
                blocks.append(
                    Block(
                        TOOL_USE,
                        name=str(function.get("name", "")),
                        id=str(call.get("id", "")),
                        input=args if isinstance(args, dict) else {"_value": args},
                    )
                )
                calls += str(function.get("name", "")) + (raw if isinstance(raw, str) else compact_json(raw))
            segments.append(segment(role, content + calls, breakpoint=True))
            turns.append(Turn(role, tuple(blocks)))
    options = body.get("stream_options") if isinstance(body.get("stream_options"), dict) else {}
    return Conversation(
        NAME,
        model,
        "\n".join(system_parts),
        tuple(turns),
        tuple(tools),
        max_tokens,
        bool(body.get("stream")),
        body_bytes,
        len(messages),
        tuple(segments),
        {"include_usage": bool(options.get("include_usage"))},
    )


def usage_for(conv: Conversation, cache: PromptCache) -> Usage:
    return Usage(conv.input_tokens, cache.automatic(conv.segments).read_tokens, 0)


# --- answers ---------------------------------------------------------------------------------------


def _usage(usage: Usage, output_tokens: int) -> dict[str, Any]:
    return {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": output_tokens,
        "total_tokens": usage.input_tokens + output_tokens,
        "prompt_tokens_details": {"cached_tokens": usage.cache_read_tokens, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def _headers(rid: str) -> tuple[tuple[str, str], ...]:
    return (
        ("x-request-id", rid),
        ("openai-organization", "lab-organization"),
        ("openai-processing-ms", "1"),
        ("openai-version", "2020-10-01"),
    )


def complete(conv: Conversation, reply: Reply, usage: Usage) -> Response:
    rid = request_id("req_")
    text = reply.text
    message: dict[str, Any] = {
        "role": "assistant",
        "content": text or None,
        "refusal": None,
        "annotations": [],
    }
    calls = [
        {
            "id": tool_id(b.id),
            "type": "function",
            "function": {"name": b.name, "arguments": compact_json(b.input or {})},
        }
        for b in reply.blocks
        if b.kind == TOOL_USE
    ]
    if calls:
        message["tool_calls"] = calls
    body = {
        "id": f"chatcmpl-lab{rid[4:]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": conv.model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": FINISH_REASONS[reply.stop_reason],
            }
        ],
        "usage": _usage(usage, reply.output_tokens),
        "service_tier": "default",
        "system_fingerprint": "fp_lab",
    }
    return json_response(200, body, _headers(rid))


def _data(value: dict[str, Any]) -> bytes:
    return b"data: " + json_body(value) + b"\n\n"


def stream(conv: Conversation, reply: Reply, usage: Usage) -> StreamResponse:
    rid = request_id("req_")
    include_usage = bool(conv.options.get("include_usage"))
    base = {
        "id": f"chatcmpl-lab{rid[4:]}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": conv.model,
        "service_tier": "default",
        "system_fingerprint": "fp_lab",
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        value = {**base, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}
        if include_usage:
            value["usage"] = None
        return _data(value)

    events = [StreamEvent(chunk({"role": "assistant", "content": "", "refusal": None}))]
    for piece in text_pieces(reply.text):
        events.append(StreamEvent(chunk({"content": piece}), content=True))
    for index, block in enumerate(b for b in reply.blocks if b.kind == TOOL_USE):
        events.append(
            StreamEvent(
                chunk(
                    {
                        "tool_calls": [
                            {
                                "index": index,
                                "id": tool_id(block.id),
                                "type": "function",
                                "function": {"name": block.name, "arguments": ""},
                            }
                        ]
                    }
                )
            )
        )
        for piece in json_pieces(block.input):
            events.append(
                StreamEvent(
                    chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}), content=True
                )
            )
    events.append(StreamEvent(chunk({}, FINISH_REASONS[reply.stop_reason])))
    if include_usage:
        events.append(
            StreamEvent(_data({**base, "choices": [], "usage": _usage(usage, reply.output_tokens)}))
        )
    events.append(StreamEvent(b"data: [DONE]\n\n"))
    headers = (
        ("content-type", "text/event-stream; charset=utf-8"),
        ("cache-control", "no-cache"),
        *_headers(rid),
    )
    return StreamResponse(200, headers, events)


# --- errors ----------------------------------------------------------------------------------------


def error(
    status: int,
    message: str,
    error_type: str,
    param: str | None = None,
    code: str | None = None,
    headers: tuple[tuple[str, str], ...] = (),
) -> Response:
    body = {"error": {"message": message, "type": error_type, "param": param, "code": code}}
    return json_response(status, body, (*_headers(request_id("req_")), *headers))


def bad_request(exc: WireError) -> Response:
    return error(400, exc.message, "invalid_request_error", exc.param, exc.code)


def overflow(tokens: int, window: int) -> Response:
    return error(
        400,
        f"This model's maximum context length is {window} tokens. However, your messages resulted in "
        f"{tokens} tokens. Please reduce the length of the messages.",
        "invalid_request_error",
        "messages",
        "context_length_exceeded",
    )


def too_large(cap: int) -> Response:
    return error(
        413, f"Request too large. Max size: {cap} bytes.", "invalid_request_error", None, "request_too_large"
    )


RATE_LIMIT_MESSAGE = (
    "Rate limit reached for {model} in organization org-lab on tokens per min (TPM): Limit 30000, "
    "Used 30000, Requested {tokens}. Please try again in {seconds}s. Visit "
    "https://platform.openai.com/account/rate-limits to learn more."
)
OVERLOADED_MESSAGE = "The server is overloaded or not ready yet."


def fault(kind: str, conv: Conversation | None = None) -> Response:
    if kind == "429":
        message = RATE_LIMIT_MESSAGE.format(
            model=conv.model if conv else "lab-1",
            tokens=conv.input_tokens if conv else 1,
            seconds=RETRY_AFTER_SECONDS,
        )
        return error(
            429,
            message,
            "tokens",
            None,
            "rate_limit_exceeded",
            (
                ("retry-after", str(RETRY_AFTER_SECONDS)),
                ("x-ratelimit-limit-tokens", "30000"),
                ("x-ratelimit-remaining-tokens", "0"),
                ("x-ratelimit-reset-tokens", f"{RETRY_AFTER_SECONDS}s"),
            ),
        )
    if kind == "529":
        return error(503, OVERLOADED_MESSAGE, "server_error")
    if kind == "401":
        return error(
            401,
            "Incorrect API key provided: sk-lab***. You can find your API key at "
            "https://platform.openai.com/account/api-keys.",
            "invalid_request_error",
            None,
            "invalid_api_key",
        )
    if kind == "404":
        model = conv.model if conv else "lab-1"
        return error(
            404,
            f"The model `{model}` does not exist or you do not have access to it.",
            "invalid_request_error",
            None,
            "model_not_found",
        )
    if kind == "503":
        return error(503, "Service Unavailable.", "server_error")
    return error(
        500, "The server had an error while processing your request. Sorry about that!", "server_error"
    )


def stream_error() -> bytes:
    """The error chunk the API sends when a stream fails mid-answer."""
    return _data(
        {"error": {"message": OVERLOADED_MESSAGE, "type": "server_error", "param": None, "code": None}}
    )


def decode_error(text: str) -> WireError:
    return WireError(
        "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your "
        "HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid "
        "JSON. If you have trouble figuring out how to fix this, please contact us through our help center "
        "at help.openai.com.)"
    )
