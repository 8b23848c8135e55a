"""Bedrock Converse: `POST /model/{modelId}/converse`, `/converse-stream` and `/count-tokens`.

Request: messages (content blocks text, toolUse, toolResult, image, cachePoint), system (text,
cachePoint), toolConfig.tools (toolSpec, cachePoint), inferenceConfig.maxTokens. SigV4 is ignored: any
credentials are accepted. Streams use `application/vnd.amazon.eventstream` frames (`eventstream.py`);
errors are AWS JSON `{"message": …}` with `x-amzn-ErrorType` and `x-amzn-RequestId`, and in-stream errors
are exception frames. `usage.inputTokens` excludes cache reads and writes, as Bedrock reports it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from app.lab import eventstream
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
from app.lab.http import Response, StreamEvent, StreamResponse, aws_request_id, json_response

NAME = "bedrock"
STOP_REASONS = {END_TURN: "end_turn", TOOL_USE_STOP: "tool_use", MAX_TOKENS: "max_tokens"}
EVENTSTREAM = "application/vnd.amazon.eventstream"
LATENCY_MS = 42


def tool_id(neutral_id: str) -> str:
    return f"tooluse_{neutral_id}"


# --- parsing ---------------------------------------------------------------------------------------


def _mark_last(segments: list[Segment]) -> None:
    """A cachePoint block: a cache breakpoint after everything before it."""
    if segments:
        segments[-1] = replace(segments[-1], breakpoint=True)


def _result_text(content: Any) -> str:
    parts = []
    for item in content if isinstance(content, list) else []:
        if isinstance(item, dict) and "text" in item:
            parts.append(str(item["text"]))
        elif isinstance(item, dict) and "json" in item:
            parts.append(compact_json(item["json"]))
    return "\n".join(parts)


def _content(content: Any, where: str, segments: list[Segment]) -> list[Block]:
    if not isinstance(content, list):
        raise WireError(f"{where}.content: a list of content blocks is required")
    blocks = []
    for raw in content:
        if not isinstance(raw, dict) or len(raw) < 1:
            raise WireError(f"{where}.content: each content block must be an object")
        if "cachePoint" in raw:
            _mark_last(segments)
        elif "text" in raw:
            blocks.append(Block(TEXT, str(raw["text"])))
            segments.append(segment("text", str(raw["text"])))
        elif "toolUse" in raw:
            use = raw["toolUse"] if isinstance(raw["toolUse"], dict) else {}
            args = use.get("input") if isinstance(use.get("input"), dict) else {}
            blocks.append(
                Block(TOOL_USE, name=str(use.get("name", "")), id=str(use.get("toolUseId", "")), input=args)
            )
            segments.append(segment("tool_use", str(use.get("name", "")) + compact_json(args)))
        elif "toolResult" in raw:
            result = raw["toolResult"] if isinstance(raw["toolResult"], dict) else {}
            text = _result_text(result.get("content"))
            blocks.append(
                Block(
                    TOOL_RESULT,
                    text,
                    id=str(result.get("toolUseId", "")),
                    is_error=result.get("status") == "error",
                )
            )
            segments.append(segment("tool_result", text))
        else:
            blocks.append(Block(OTHER))
            segments.append(segment("other", compact_json(raw)))
    return blocks


def parse(body: Any, body_bytes: int, model_id: str, *, count_only: bool = False) -> Conversation:
    if count_only:
        body = (body.get("input") or {}).get("converse") if isinstance(body, dict) else None
        if not isinstance(body, dict):
            raise WireError(
                "1 validation error detected: Value at 'input' failed to satisfy constraint: "
                "Member must not be null"
            )
    if not isinstance(body, dict):
        raise WireError("Malformed input request, please reformat your input and try again.")
    messages = body.get("messages")
    if not isinstance(messages, list):
        raise WireError(
            "A conversation must start with a user message. Try again with a conversation that starts "
            "with a user message."
        )
    segments: list[Segment] = []
    tools: list[str] = []
    tool_config = body.get("toolConfig") if isinstance(body.get("toolConfig"), dict) else {}
    for tool in tool_config.get("tools") or []:
        if not isinstance(tool, dict):
            continue
        if "cachePoint" in tool:
            _mark_last(segments)
            continue
        spec = tool.get("toolSpec") if isinstance(tool.get("toolSpec"), dict) else {}
        name = str(spec.get("name", ""))
        tools.append(name)
        schema = (
            spec.get("inputSchema", {}).get("json", {}) if isinstance(spec.get("inputSchema"), dict) else {}
        )
        segments.append(
            segment("tool", name + "\n" + str(spec.get("description", "")) + compact_json(schema))
        )
    system_parts = []
    for raw in body.get("system") or []:
        if isinstance(raw, dict) and "cachePoint" in raw:
            _mark_last(segments)
        elif isinstance(raw, dict) and "text" in raw:
            system_parts.append(str(raw["text"]))
            segments.append(segment("system", str(raw["text"])))
    turns = []
    for index, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
            raise WireError(
                f"1 validation error detected: Value at 'messages.{index + 1}.member.role' failed to "
                "satisfy constraint: Member must satisfy enum value set: [user, assistant]"
            )
        turns.append(
            Turn(message["role"], tuple(_content(message.get("content"), f"messages.{index}", segments)))
        )
    inference = body.get("inferenceConfig") if isinstance(body.get("inferenceConfig"), dict) else {}
    max_tokens = inference.get("maxTokens")
    if max_tokens is not None and (
        isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1
    ):
        raise WireError(
            "1 validation error detected: Value at 'inferenceConfig.maxTokens' failed to satisfy "
            "constraint: Member must have value greater than or equal to 1"
        )
    return Conversation(
        NAME,
        model_id,
        "\n".join(system_parts),
        tuple(turns),
        tuple(tools),
        None if count_only else max_tokens,
        False,
        body_bytes,
        len(messages),
        tuple(segments),
    )


def usage_for(conv: Conversation, cache: PromptCache) -> Usage:
    result = cache.breakpoints(conv.segments)
    return Usage(conv.input_tokens, result.read_tokens, result.write_tokens)


# --- answers ---------------------------------------------------------------------------------------


def _usage(usage: Usage, output_tokens: int) -> dict[str, int]:
    uncached = usage.uncached_input_tokens
    return {
        "inputTokens": uncached,
        "outputTokens": output_tokens,
        "totalTokens": uncached + output_tokens + usage.cache_read_tokens + usage.cache_write_tokens,
        "cacheReadInputTokens": usage.cache_read_tokens,
        "cacheWriteInputTokens": usage.cache_write_tokens,
    }


def _headers(rid: str) -> tuple[tuple[str, str], ...]:
    return (("x-amzn-RequestId", rid),)


def complete(conv: Conversation, reply: Reply, usage: Usage) -> Response:
    content: list[dict[str, Any]] = []
    for block in reply.blocks:
        if block.kind == TEXT:
            content.append({"text": block.text})
        else:
            content.append(
                {
                    "toolUse": {
                        "toolUseId": tool_id(block.id),
                        "name": block.name,
                        "input": dict(block.input or {}),
                    }
                }
            )
    body = {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": STOP_REASONS[reply.stop_reason],
        "usage": _usage(usage, reply.output_tokens),
        "metrics": {"latencyMs": LATENCY_MS},
    }
    return json_response(200, body, _headers(aws_request_id()))


def stream(conv: Conversation, reply: Reply, usage: Usage) -> StreamResponse:
    ev = eventstream.event
    events = [StreamEvent(ev("messageStart", {"role": "assistant"}))]
    for index, block in enumerate(reply.blocks):
        if block.kind == TEXT:
            for piece in text_pieces(block.text):
                events.append(
                    StreamEvent(
                        ev("contentBlockDelta", {"contentBlockIndex": index, "delta": {"text": piece}}),
                        content=True,
                    )
                )
        else:
            events.append(
                StreamEvent(
                    ev(
                        "contentBlockStart",
                        {
                            "contentBlockIndex": index,
                            "start": {"toolUse": {"toolUseId": tool_id(block.id), "name": block.name}},
                        },
                    )
                )
            )
            for piece in json_pieces(block.input):
                events.append(
                    StreamEvent(
                        ev(
                            "contentBlockDelta",
                            {"contentBlockIndex": index, "delta": {"toolUse": {"input": piece}}},
                        ),
                        content=True,
                    )
                )
        events.append(StreamEvent(ev("contentBlockStop", {"contentBlockIndex": index})))
    events.append(StreamEvent(ev("messageStop", {"stopReason": STOP_REASONS[reply.stop_reason]})))
    events.append(
        StreamEvent(
            ev(
                "metadata",
                {"usage": _usage(usage, reply.output_tokens), "metrics": {"latencyMs": LATENCY_MS}},
            )
        )
    )
    return StreamResponse(200, (("content-type", EVENTSTREAM), *_headers(aws_request_id())), events)


def count_tokens(conv: Conversation) -> Response:
    return json_response(200, {"inputTokens": conv.input_tokens}, _headers(aws_request_id()))


# --- errors ----------------------------------------------------------------------------------------


def error(status: int, error_type: str, message: str, headers: tuple[tuple[str, str], ...] = ()) -> Response:
    return json_response(
        status,
        {"message": message},
        (("x-amzn-ErrorType", error_type), *_headers(aws_request_id()), *headers),
    )


def bad_request(exc: WireError) -> Response:
    return error(400, "ValidationException", exc.message)


def overflow(tokens: int, window: int) -> Response:
    return error(400, "ValidationException", "Input is too long for requested model.")


def too_large(cap: int) -> Response:
    return error(
        413, "RequestEntityTooLargeException", f"Request body is larger than the maximum of {cap} bytes."
    )


def fault(kind: str, conv: Conversation | None = None) -> Response:
    if kind == "429":
        return error(
            429,
            "ThrottlingException",
            "Too many requests, please wait before trying again.",
            (("retry-after", str(RETRY_AFTER_SECONDS)),),
        )
    if kind == "401":
        return error(
            403, "UnrecognizedClientException", "The security token included in the request is invalid."
        )
    if kind == "404":
        return error(400, "ValidationException", "The provided model identifier is invalid.")
    if kind in ("529", "503"):
        return error(503, "ServiceUnavailableException", "Bedrock is unable to process your request.")
    return error(
        500,
        "InternalServerException",
        "The system encountered an unexpected error during processing. Try your request again.",
    )


def stream_error() -> bytes:
    """The exception frame Bedrock sends when a stream fails mid-answer."""
    return eventstream.exception("serviceUnavailableException", "Bedrock is unable to process your request.")


def decode_error(text: str) -> WireError:
    return WireError("Malformed input request, please reformat your input and try again.")
