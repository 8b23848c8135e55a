"""The neutral conversation every wire format is parsed into, the lab model's reply, and the token estimate.

Token estimate (documented for users of the lab): **tokens = ceil(UTF-8 bytes / 4) of the contents** —
system text, text blocks, tool-use inputs (compact JSON, plus the tool name), tool-result text and tool
definitions (name, description, JSON schema). The JSON envelope around them is not counted, so the
figure is what a provider would bill as input, not the size of the request body. Output tokens are
estimated the same way from the characters the lab model writes (chars / 4).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

TEXT, TOOL_USE, TOOL_RESULT, OTHER = "text", "tool_use", "tool_result", "other"
END_TURN, TOOL_USE_STOP, MAX_TOKENS = "end_turn", "tool_use", "max_tokens"


def estimate_tokens(nbytes: int) -> int:
    """ceil(bytes / 4): the lab's token estimate for `nbytes` of content."""
    return math.ceil(max(0, nbytes) / 4)


def compact_json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, sort_keys=True)


@dataclass(frozen=True)
class Block:
    """One piece of a message: text, a tool call, a tool result or something the lab only counts."""

    kind: str
    text: str = ""
    name: str = ""
    id: str = ""
    input: Mapping[str, Any] | None = None
    is_error: bool = False


@dataclass(frozen=True)
class Turn:
    role: str  # "user" | "assistant"
    blocks: tuple[Block, ...]

    @property
    def text(self) -> str:
        return "\n".join(b.text for b in self.blocks if b.kind == TEXT)

    @property
    def tool_results(self) -> tuple[Block, ...]:
        return tuple(b for b in self.blocks if b.kind == TOOL_RESULT)

    @property
    def tool_uses(self) -> tuple[Block, ...]:
        return tuple(b for b in self.blocks if b.kind == TOOL_USE)


@dataclass(frozen=True)
class Segment:
    """A unit of the prompt prefix, in the order the provider reads it (tools, system, messages).

    `digest` identifies its content for the prompt-cache simulation; `breakpoint` marks a cache
    breakpoint after it (`cache_control` / `cachePoint`, or a message end for OpenAI's automatic cache).
    """

    digest: bytes
    nbytes: int
    breakpoint: bool = False


def segment(kind: str, content: str, *, breakpoint: bool = False) -> Segment:
    data = content.encode("utf-8")
    return Segment(hashlib.sha256(kind.encode() + b"\0" + data).digest(), len(data), breakpoint)


@dataclass(frozen=True)
class Conversation:
    """What a model request asked for, independent of the wire format it came in."""

    wire: str
    model: str
    system: str = ""
    turns: tuple[Turn, ...] = ()
    tools: tuple[str, ...] = ()
    max_tokens: int | None = None
    stream: bool = False
    body_bytes: int = 0
    message_count: int = 0
    segments: tuple[Segment, ...] = field(default=(), repr=False)
    options: Mapping[str, Any] = field(default_factory=dict, repr=False)  # wire-specific flags

    @property
    def content_bytes(self) -> int:
        return sum(s.nbytes for s in self.segments)

    @property
    def input_tokens(self) -> int:
        return max(1, estimate_tokens(self.content_bytes))

    @property
    def last_user(self) -> Turn | None:
        for turn in reversed(self.turns):
            if turn.role == "user":
                return turn
        return None


@dataclass(frozen=True)
class Reply:
    """What the lab model answers: text and tool-call blocks, a neutral stop reason, output tokens."""

    blocks: tuple[Block, ...]
    stop_reason: str
    output_tokens: int

    @property
    def text(self) -> str:
        return "".join(b.text for b in self.blocks if b.kind == TEXT)


@dataclass(frozen=True)
class Usage:
    """Input-side accounting of one request: every input token, and how many were read/written from cache."""

    input_tokens: int
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def uncached_input_tokens(self) -> int:
        """Anthropic's and Bedrock's `input_tokens`: what was neither read from nor written to the cache."""
        return max(0, self.input_tokens - self.cache_read_tokens - self.cache_write_tokens)


class WireError(ValueError):
    """A request the provider would reject as invalid (400): the message, and OpenAI's param/code."""

    def __init__(self, message: str, *, param: str | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.message, self.param, self.code = message, param, code


def text_pieces(text: str) -> list[str]:
    """How a text is split into stream deltas: small pieces for short answers, at most 64 for long ones."""
    if not text:
        return []
    size = max(24, min(16_384, -(-len(text) // 64)))
    return [text[i : i + size] for i in range(0, len(text), size)]


def json_pieces(value: Mapping[str, Any] | None) -> list[str]:
    """A tool input as compact JSON, split in up to three partial-JSON deltas."""
    data = json.dumps(value or {}, separators=(",", ":"), ensure_ascii=False)
    size = max(1, -(-len(data) // 3))
    return [data[i : i + size] for i in range(0, len(data), size)]
