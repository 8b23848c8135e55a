"""Helpers shared by the wire tests: views, tools, and draining a provider stream."""

from __future__ import annotations

import base64
import struct
import zlib
from typing import Any

import pytest

from app.model.messages import Image, Message, Text, ToolCall, ToolResult
from app.model.tools import ToolSpec
from app.providers.base import (
    Provider,
    ProviderError,
    Request,
    StopChunk,
    StreamEvent,
    TextChunk,
    ToolCallChunk,
    UsageChunk,
)

READ_TOOL = ToolSpec(
    "read_file",
    "Read a text file from the workspace.",
    {
        "type": "object",
        "properties": {"path": {"type": "string", "description": "relative path"}},
        "required": ["path"],
    },
)
SYSTEM = "You are bulkhead's coding assistant. Be brief."
BYTE_RATIOS: dict[str, list[float]] = {}  # provider -> predicted/actual bytes, shown in the summary


def tiny_png() -> str:
    """A valid 1x1 PNG, base64."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            len(data).to_bytes(4, "big")
            + kind
            + data
            + (zlib.crc32(kind + data) & 0xFFFFFFFF).to_bytes(4, "big")
        )

    header = struct.pack(">IIBBBBB", 1, 1, 8, 6, 0, 0, 0)  # 1x1, 8-bit RGBA
    raw = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
    raw += chunk(b"IDAT", zlib.compress(b"\x00\xff\x00\x00\xff")) + chunk(b"IEND", b"")
    return base64.b64encode(raw).decode()


def user(text: str) -> Message:
    return Message.create("user", text)


def simple_view() -> list[Message]:
    return [user("Hello there")]


async def collect(provider: Provider, request: Request) -> list[StreamEvent]:
    return [event async for event in provider.stream(request)]


async def collect_error(provider: Provider, request: Request) -> tuple[list[StreamEvent], ProviderError]:
    events: list[StreamEvent] = []
    with pytest.raises(ProviderError) as caught:
        async for event in provider.stream(request):
            events.append(event)
    return events, caught.value


def text_of(events: list[StreamEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextChunk))


def stop_of(events: list[StreamEvent]) -> StopChunk:
    stops = [e for e in events if isinstance(e, StopChunk)]
    assert len(stops) == 1 and events[-1] is stops[0], events
    return stops[0]


def usage_of(events: list[StreamEvent]) -> Any:
    usages = [e.usage for e in events if isinstance(e, UsageChunk)]
    assert len(usages) == 1, events
    return usages[0]


def tool_calls_of(events: list[StreamEvent]) -> list[ToolCallChunk]:
    return [e for e in events if isinstance(e, ToolCallChunk)]


def after_tool_call(
    view: list[Message], call: ToolCallChunk, preface: str, result: str, is_error: bool = False
) -> list[Message]:
    """The view once the model's tool call and our tool result are committed."""
    return [
        *view,
        Message.create("assistant", [Text(preface), ToolCall(call.id, call.name, call.args)]),
        Message.create("tool", [ToolResult(call.id, result, is_error=is_error)]),
    ]


def image_message(text: str = "What is in this picture?") -> Message:
    return Message.create("user", [Text(text), Image("image/png", tiny_png())])
