"""OpenAI Responses API: `POST /v1/responses` (JSON, or SSE) and `POST /v1/responses/compact`.

Request: model, input (a string, or items: messages with role user/assistant/system/developer and
string or `input_text`/`input_image`/`output_text` content; `function_call`; `function_call_output`;
`reasoning`; `compaction`; `custom_tool_call`/`_output`), instructions, tools (`function` and `custom`
ones with a name, a `namespace` of them, and hosted ones such as `web_search`, whose definitions count as
input but which the lab never calls),
max_output_tokens (at least 16, as OpenAI requires — so a probe with 0 gets a 400), stream, store,
include, context_management (`[{"type": "compaction", "compact_threshold": N}]`).

Answers as OpenAI sends them: `event: NAME` + `data: {"type": NAME, "sequence_number", …}` for
response.created, response.in_progress, response.output_item.added / done, content_part.added /
done, output_text.delta / done, function_call_arguments.delta / done, and finally
response.completed or response.incomplete (`incomplete_details.reason = max_output_tokens`).
Usage: input_tokens (cached ones included), input_tokens_details.cached_tokens, output_tokens,
output_tokens_details.reasoning_tokens. With `include: ["reasoning.encrypted_content"]` each
answer starts with a `reasoning` item whose encrypted_content is deterministic (a digest of the
conversation) — replay it and the lab counts it (`reasoning_replayed` in the request log).

Compaction, deterministically: past `compact_threshold` input tokens the answer carries a
`compaction` item first (`encrypted_content` = base64 of the lab's extractive summary, so it is
opaque on the wire and readable to the lab) and the model answers from the compacted context. An
input with a compaction item is read from its latest compaction item on (what came before is
ignored, as OpenAI allows clients to drop it). `/responses/compact` returns the window's user
messages followed by one compaction item (`object: "response.compaction"`).

Errors: `{"error": {"message", "type", "param", "code"}}` with an `x-request-id` header, as for
Chat Completions (`wire_openai`); a stream that fails mid-answer ends with `response.failed`.
"""

from __future__ import annotations

import base64
import hashlib
import json
import time
from typing import Any

from app.lab import wire_openai
from app.lab.cache import PromptCache
from app.lab.conversation import (
    END_TURN,
    MAX_TOKENS,
    OTHER,
    TEXT,
    TOOL_RESULT,
    TOOL_USE,
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
from app.lab.http import Response, StreamEvent, StreamResponse, json_body, json_response, request_id

NAME = "responses"
MIN_OUTPUT_TOKENS = 16
COMPACTION_PREFIX = "lab-compaction:"
REASONING_PREFIX = "lab-reasoning:"
SUMMARY_LABEL = "[compacted earlier conversation]\n"
# Tools the provider runs itself: accepted (their definitions count as input), never called by the lab.
HOSTED_TOOLS = frozenset(
    {
        "web_search",
        "web_search_preview",
        "file_search",
        "code_interpreter",
        "image_generation",
        "local_shell",
        "shell",
        "apply_patch",
        "mcp",
        "computer_use_preview",
        "tool_search",
    }
)

# Errors are shaped as Chat Completions errors (the same API platform).
error = wire_openai.error
bad_request = wire_openai.bad_request
overflow = wire_openai.overflow
too_large = wire_openai.too_large
fault = wire_openai.fault
decode_error = wire_openai.decode_error


def tool_id(neutral_id: str) -> str:
    return f"call_{neutral_id}"


def encode_summary(summary: str) -> str:
    return base64.b64encode((COMPACTION_PREFIX + summary).encode("utf-8")).decode("ascii")


def decode_summary(encrypted: Any) -> str | None:
    try:
        text = base64.b64decode(str(encrypted), validate=True).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return None
    return text[len(COMPACTION_PREFIX) :] if text.startswith(COMPACTION_PREFIX) else None


# --- parsing ---------------------------------------------------------------------------------------


def _content_text(content: Any, where: str) -> tuple[str, list[str]]:
    if content is None:
        return "", []
    if isinstance(content, str):
        return content, []
    if isinstance(content, list):
        texts, others = [], []
        for part in content:
            if isinstance(part, dict) and part.get("type") in ("input_text", "output_text", "text"):
                texts.append(str(part.get("text", "")))
            else:
                others.append(compact_json(part))
        return "\n".join(texts), others
    raise WireError(
        f"Invalid type for '{where}.content': expected a string or an array of content parts.",
        param=f"{where}.content",
    )


def _max_output_tokens(body: dict[str, Any]) -> int | None:
    value = body.get("max_output_tokens")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise WireError(
            f"Invalid type for 'max_output_tokens': expected an integer, but got "
            f"{type(value).__name__} instead.",
            param="max_output_tokens",
            code="invalid_type",
        )
    if value < MIN_OUTPUT_TOKENS:
        raise WireError(
            f"Invalid 'max_output_tokens': integer below minimum value. Expected a value >= "
            f"{MIN_OUTPUT_TOKENS}, but got {value} instead.",
            param="max_output_tokens",
            code="integer_below_min_value",
        )
    return value


def _threshold(body: dict[str, Any]) -> int | None:
    entries = body.get("context_management")
    if entries is None:
        return None
    if not isinstance(entries, list):
        raise WireError(
            "Invalid type for 'context_management': expected an array.", param="context_management"
        )
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict) or entry.get("type") != "compaction":
            raise WireError(
                f"Invalid value for 'context_management[{index}].type': only 'compaction' is supported.",
                param=f"context_management[{index}].type",
                code="invalid_value",
            )
        value = entry.get("compact_threshold")
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise WireError(
                f"Invalid 'context_management[{index}].compact_threshold': expected a positive integer.",
                param=f"context_management[{index}].compact_threshold",
                code="invalid_value",
            )
        return value
    return None


def _from_latest_compaction(items: list[Any]) -> tuple[list[Any], str | None]:
    """The items from the latest compaction item on, and that compaction's summary."""
    latest = None
    for index, item in enumerate(items):
        if isinstance(item, dict) and item.get("type") == "compaction":
            latest = index
    if latest is None:
        return items, None
    summary = decode_summary(items[latest].get("encrypted_content"))
    if summary is None:
        raise WireError(
            "The encrypted content of compaction item could not be verified.",
            param=f"input[{latest}].encrypted_content",
            code="invalid_encrypted_content",
        )
    return items[latest + 1 :], summary


def _named(tool: dict[str, Any], where: str) -> str:
    name = tool.get("name")
    if not isinstance(name, str) or not name:
        raise WireError(
            f"Missing required parameter: '{where}.name'.",
            param=f"{where}.name",
            code="missing_required_parameter",
        )
    return name


def _tool(tool: Any, where: str) -> list[tuple[str, str]]:
    """(callable name or "", what it adds to the prompt) for one entry of `tools`: a function or custom
    tool, a namespace of them (Codex sends its sub-agent tools so), or a hosted tool (web_search, …)
    that the lab accepts and never calls."""
    if not isinstance(tool, dict):
        raise WireError(f"Invalid type for '{where}': expected an object.", param=where)
    kind = tool.get("type")
    if kind == "function":
        name = _named(tool, where)
        return [
            (name, name + "\n" + str(tool.get("description", "")) + compact_json(tool.get("parameters", {})))
        ]
    if kind == "custom":  # a freeform tool: its input is a string (Codex's apply_patch can be one)
        name = _named(tool, where)
        return [(name, name + "\n" + str(tool.get("description", "")) + compact_json(tool.get("format", {})))]
    if kind == "namespace":
        name = _named(tool, where)
        inner = tool.get("tools")
        if not isinstance(inner, list):
            raise WireError(
                f"Missing required parameter: '{where}.tools'.",
                param=f"{where}.tools",
                code="missing_required_parameter",
            )
        found = [(name, name + "\n" + str(tool.get("description", "")))]
        for position, member in enumerate(inner):
            if isinstance(member, dict) and member.get("type") not in ("function", "custom"):
                raise WireError(
                    f"Invalid value for '{where}.tools[{position}].type': a namespace holds function "
                    f"and custom tools.",
                    param=f"{where}.tools[{position}].type",
                    code="invalid_value",
                )
            found += _tool(member, f"{where}.tools[{position}]")
        return found
    if kind in HOSTED_TOOLS:
        return [("", compact_json(tool))]
    raise WireError(
        f"Invalid value for '{where}.type': {kind!r} is not a tool type the lab knows "
        f"(function, custom, namespace, {', '.join(sorted(HOSTED_TOOLS))}).",
        param=f"{where}.type",
        code="invalid_value",
    )


def parse(body: Any, body_bytes: int, *, compact: bool = False) -> Conversation:
    if not isinstance(body, dict):
        raise WireError("Invalid request body: expected a JSON object.")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise WireError(
            "Missing required parameter: 'model'.", param="model", code="missing_required_parameter"
        )
    raw = body.get("input")
    items: list[Any] = [{"role": "user", "content": raw}] if isinstance(raw, str) else raw
    if not isinstance(items, list) or not items:
        raise WireError(
            "Missing required parameter: 'input'.", param="input", code="missing_required_parameter"
        )
    max_tokens = None if compact else _max_output_tokens(body)
    threshold = None if compact else _threshold(body)
    segments: list[Segment] = []
    tools: list[str] = []
    for index, tool in enumerate(body.get("tools") or []):
        for name, described in _tool(tool, f"tools[{index}]"):
            if name:
                tools.append(name)
            segments.append(segment("tool", described))
    system_parts: list[str] = []
    instructions = body.get("instructions")
    if isinstance(instructions, str) and instructions:
        system_parts.append(instructions)
        segments.append(segment("system", instructions, breakpoint=True))
    kept, summary = _from_latest_compaction(items)
    turns: list[Turn] = []
    replayed = 0

    def add(role: str, block: Block) -> None:
        if turns and turns[-1].role == role:
            turns[-1] = Turn(role, turns[-1].blocks + (block,))
        else:
            turns.append(Turn(role, (block,)))

    if summary is not None:
        add("user", Block(TEXT, SUMMARY_LABEL + summary))
        segments.append(segment("compaction", summary, breakpoint=True))
    for index, item in enumerate(kept):
        where = f"input[{index}]"
        if not isinstance(item, dict):
            raise WireError(f"Invalid type for '{where}': expected an object.", param=where)
        kind = item.get("type", "message")
        if kind == "message":
            role = item.get("role")
            if role not in ("user", "assistant", "system", "developer"):
                raise WireError(
                    f"Invalid value for '{where}.role'.", param=f"{where}.role", code="invalid_value"
                )
            text, others = _content_text(item.get("content"), where)
            content = "".join([text, *others])
            if role in ("system", "developer"):
                system_parts.append(text)
                segments.append(segment("system", content, breakpoint=True))
                continue
            if text:
                add(role, Block(TEXT, text))
            for _ in others:
                add(role, Block(OTHER))
            segments.append(segment(role, content, breakpoint=True))
        elif kind == "function_call":
            raw_args = item.get("arguments") or "{}"
            try:
                args = json.loads(raw_args) if isinstance(raw_args, str) else dict(raw_args)
            except (ValueError, TypeError):
                args = {"_raw": str(raw_args)}
            add(
                "assistant",
                Block(
                    TOOL_USE,
                    name=str(item.get("name", "")),
                    id=str(item.get("call_id", "")),
                    input=args if isinstance(args, dict) else {"_value": args},
                ),
            )
            segments.append(
                segment("function_call", str(item.get("name", "")) + str(raw_args), breakpoint=True)
            )
        elif kind == "custom_tool_call":  # a freeform tool's call: its input is a string
            add(
                "assistant",
                Block(
                    TOOL_USE,
                    name=str(item.get("name", "")),
                    id=str(item.get("call_id", "")),
                    input={"input": str(item.get("input", ""))},
                ),
            )
            segments.append(
                segment(
                    "custom_tool_call",
                    str(item.get("name", "")) + str(item.get("input", "")),
                    breakpoint=True,
                )
            )
        elif kind in ("function_call_output", "custom_tool_call_output"):
            output = item.get("output")
            text = output if isinstance(output, str) else compact_json(output)
            add("user", Block(TOOL_RESULT, text, id=str(item.get("call_id", ""))))
            segments.append(segment("tool_result", text, breakpoint=True))
        elif kind == "reasoning":
            encrypted = str(item.get("encrypted_content") or "")
            if encrypted and not encrypted.startswith(REASONING_PREFIX):
                raise WireError(
                    "The encrypted content for item could not be verified.",
                    param=f"{where}.encrypted_content",
                    code="invalid_encrypted_content",
                )
            replayed += 1
            segments.append(segment("reasoning", encrypted))
        else:
            raise WireError(
                f"Invalid value for '{where}.type': {kind!r} is not supported by the lab.",
                param=f"{where}.type",
                code="invalid_value",
            )
    include = body.get("include") or []
    options = {
        "compact_threshold": threshold,
        "reasoning_replayed": replayed,
        "encrypted_reasoning": "reasoning.encrypted_content" in include,
        "compacted_input": summary is not None,
    }
    return Conversation(
        NAME,
        model,
        "\n".join(system_parts),
        tuple(turns),
        tuple(tools),
        max_tokens,
        bool(body.get("stream")),
        body_bytes,
        len(items),
        tuple(segments),
        options,
    )


def usage_for(conv: Conversation, cache: PromptCache) -> Usage:
    return Usage(conv.input_tokens, cache.automatic(conv.segments).read_tokens, 0)


# --- answers ---------------------------------------------------------------------------------------


def _summary(conv: Conversation) -> str:
    from app.lab.model import summarize

    return summarize(conv)


def compaction_due(conv: Conversation) -> bool:
    threshold = conv.options.get("compact_threshold")
    return bool(threshold) and conv.input_tokens >= int(threshold)


def _usage(usage: Usage, output_tokens: int, reasoning_tokens: int = 0) -> dict[str, Any]:
    return {
        "input_tokens": usage.input_tokens,
        "input_tokens_details": {"cached_tokens": usage.cache_read_tokens},
        "output_tokens": output_tokens,
        "output_tokens_details": {"reasoning_tokens": reasoning_tokens},
        "total_tokens": usage.input_tokens + output_tokens,
    }


def _reasoning_item(conv: Conversation, rid: str) -> dict[str, Any]:
    digest = hashlib.sha256(b"".join(s.digest for s in conv.segments)).hexdigest()[:32]
    return {
        "id": f"rs_lab{rid[4:20]}",
        "type": "reasoning",
        "summary": [],
        "encrypted_content": f"{REASONING_PREFIX}{digest}",
    }


def _compaction_item(conv: Conversation, rid: str) -> dict[str, Any]:
    return {
        "id": f"cmp_lab{rid[4:20]}",
        "type": "compaction",
        "encrypted_content": encode_summary(_summary(conv)),
    }


def _output_items(conv: Conversation, reply: Reply, rid: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if compaction_due(conv):
        items.append(_compaction_item(conv, rid))
    if conv.options.get("encrypted_reasoning"):
        items.append(_reasoning_item(conv, rid))
    if reply.text:
        items.append(
            {
                "id": f"msg_lab{rid[4:20]}",
                "type": "message",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": reply.text, "annotations": []}],
            }
        )
    for index, block in enumerate(b for b in reply.blocks if b.kind == TOOL_USE):
        items.append(
            {
                "id": f"fc_lab{rid[4:16]}{index:02d}",
                "type": "function_call",
                "status": "completed",
                "call_id": tool_id(block.id),
                "name": block.name,
                "arguments": compact_json(block.input or {}),
            }
        )
    return items


def _response(
    conv: Conversation,
    rid: str,
    status: str,
    output: list[dict[str, Any]],
    usage: dict[str, Any] | None,
    incomplete: str | None = None,
) -> dict[str, Any]:
    return {
        "id": f"resp_lab{rid[4:]}",
        "object": "response",
        "created_at": int(time.time()),
        "status": status,
        "error": None,
        "incomplete_details": {"reason": incomplete} if incomplete else None,
        "instructions": None,
        "max_output_tokens": conv.max_tokens,
        "model": conv.model,
        "output": output,
        "parallel_tool_calls": True,
        "store": False,
        "usage": usage,
    }


def _headers(rid: str) -> tuple[tuple[str, str], ...]:
    return (
        ("x-request-id", rid),
        ("openai-organization", "lab-organization"),
        ("openai-processing-ms", "1"),
        ("openai-version", "2020-10-01"),
    )


def _status(reply: Reply) -> tuple[str, str | None]:
    return ("incomplete", "max_output_tokens") if reply.stop_reason == MAX_TOKENS else ("completed", None)


def complete(conv: Conversation, reply: Reply, usage: Usage) -> Response:
    rid = request_id("req_")
    status, incomplete = _status(reply)
    body = _response(
        conv, rid, status, _output_items(conv, reply, rid), _usage(usage, reply.output_tokens), incomplete
    )
    return json_response(200, body, _headers(rid))


def _sse(data: dict[str, Any]) -> bytes:
    return f"event: {data['type']}\ndata: ".encode() + json_body(data) + b"\n\n"


def stream(conv: Conversation, reply: Reply, usage: Usage) -> StreamResponse:
    rid = request_id("req_")
    sequence = iter(range(1_000_000))
    events: list[StreamEvent] = []

    def emit(data: dict[str, Any], content: bool = False) -> None:
        events.append(StreamEvent(_sse({**data, "sequence_number": next(sequence)}), content=content))

    status, incomplete = _status(reply)
    emit({"type": "response.created", "response": _response(conv, rid, "in_progress", [], None)})
    emit({"type": "response.in_progress", "response": _response(conv, rid, "in_progress", [], None)})
    output = _output_items(conv, reply, rid)
    for index, item in enumerate(output):
        if item["type"] == "compaction":
            emit(
                {
                    "type": "response.output_item.added",
                    "output_index": index,
                    "item": {"id": item["id"], "type": "compaction", "encrypted_content": ""},
                }
            )
            emit({"type": "response.compaction.compacting", "output_index": index, "item_id": item["id"]})
        elif item["type"] == "reasoning":
            emit(
                {
                    "type": "response.output_item.added",
                    "output_index": index,
                    "item": {"id": item["id"], "type": "reasoning", "summary": []},
                }
            )
        elif item["type"] == "message":
            emit(
                {
                    "type": "response.output_item.added",
                    "output_index": index,
                    "item": {**item, "status": "in_progress", "content": []},
                }
            )
            emit(
                {
                    "type": "response.content_part.added",
                    "item_id": item["id"],
                    "output_index": index,
                    "content_index": 0,
                    "part": {"type": "output_text", "text": "", "annotations": []},
                }
            )
            text = item["content"][0]["text"]
            for piece in text_pieces(text):
                emit(
                    {
                        "type": "response.output_text.delta",
                        "item_id": item["id"],
                        "output_index": index,
                        "content_index": 0,
                        "delta": piece,
                        "logprobs": [],
                    },
                    content=True,
                )
            emit(
                {
                    "type": "response.output_text.done",
                    "item_id": item["id"],
                    "output_index": index,
                    "content_index": 0,
                    "text": text,
                    "logprobs": [],
                }
            )
            emit(
                {
                    "type": "response.content_part.done",
                    "item_id": item["id"],
                    "output_index": index,
                    "content_index": 0,
                    "part": item["content"][0],
                }
            )
        else:  # function_call
            emit(
                {
                    "type": "response.output_item.added",
                    "output_index": index,
                    "item": {**item, "status": "in_progress", "arguments": ""},
                }
            )
            for piece in json_pieces(json.loads(item["arguments"])):
                emit(
                    {
                        "type": "response.function_call_arguments.delta",
                        "item_id": item["id"],
                        "output_index": index,
                        "delta": piece,
                    },
                    content=True,
                )
            emit(
                {
                    "type": "response.function_call_arguments.done",
                    "item_id": item["id"],
                    "output_index": index,
                    "arguments": item["arguments"],
                }
            )
        emit({"type": "response.output_item.done", "output_index": index, "item": item})
    final = _response(conv, rid, status, output, _usage(usage, reply.output_tokens), incomplete)
    emit(
        {"type": "response.incomplete" if status == "incomplete" else "response.completed", "response": final}
    )
    headers = (
        ("content-type", "text/event-stream; charset=utf-8"),
        ("cache-control", "no-cache"),
        *_headers(rid),
    )
    return StreamResponse(200, headers, events)


def compact(conv: Conversation, usage: Usage) -> Response:
    """`POST /responses/compact`: the user messages of the window, then one compaction item."""
    rid = request_id("req_")
    output: list[dict[str, Any]] = []
    for turn in conv.turns:
        if turn.role == "user" and turn.text and not turn.tool_results:
            output.append(
                {
                    "id": f"msg_lab{rid[4:12]}{len(output):03d}",
                    "type": "message",
                    "status": "completed",
                    "role": "user",
                    "content": [{"type": "input_text", "text": turn.text}],
                }
            )
    item = _compaction_item(conv, rid)
    output.append(item)
    out_tokens = max(1, len(decode_summary(item["encrypted_content"]) or "") // 4)
    body = {
        "id": f"resp_lab{rid[4:]}",
        "object": "response.compaction",
        "created_at": int(time.time()),
        "output": output,
        "usage": _usage(usage, out_tokens),
    }
    return json_response(200, body, _headers(rid))


def stream_error() -> bytes:
    """What the API sends when a stream fails mid-answer: `response.failed` with the error."""
    return _sse(
        {
            "type": "response.failed",
            "sequence_number": 999_999,
            "response": {
                "id": "resp_lab_failed",
                "object": "response",
                "status": "failed",
                "output": [],
                "error": {"code": "server_error", "message": wire_openai.OVERLOADED_MESSAGE},
            },
        }
    )


__all__ = ["END_TURN", "NAME", "compact", "complete", "parse", "stream", "usage_for"]
