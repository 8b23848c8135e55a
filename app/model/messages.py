"""Messages: immutable, with typed parts. The master log and every view are made of these.

A message never changes after it is created. A compaction that shortens one creates a
new *derived* message (new id, `meta.origin` of `stub`/`summary`/`notice`/`recall`,
`meta.source_ids` naming what it stands for, `meta.archive_keys` naming the archive
entries that hold the original). Provider adapters cache serialized sizes by message
id, which is only sound because of this immutability.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

Role = Literal["system", "user", "assistant", "tool"]
Origin = Literal["user", "model", "tool", "notice", "summary", "stub", "recall", "system", "mention"]
ROLES = ("system", "user", "assistant", "tool")


@dataclass(frozen=True, slots=True)
class Text:
    text: str


@dataclass(frozen=True, slots=True)
class ToolCall:
    id: str
    name: str
    # Compared but not hashed (a dict is unhashable): messages stay usable in sets and as keys.
    args: Mapping[str, Any] = field(default_factory=dict, hash=False)


@dataclass(frozen=True, slots=True)
class ToolResult:
    call_id: str
    content: str
    is_error: bool = False
    # Deferred tools this result loads (a tool_search answer): Anthropic gets `tool_reference`
    # blocks for them when the request defers those tools; every other reader sees `content`.
    references: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Image:
    media_type: str
    data: str  # base64, as every provider wants it


COMPACTION_SUMMARY_HEADER = "[summary of the earlier conversation]\n"  # a readable compaction sent as text


@dataclass(frozen=True, slots=True)
class Native:
    """A provider's own item, replayed to that provider verbatim and to no other.

    `api` names the wire it belongs to (`anthropic`, `openai-responses`); `item` is the block or
    item exactly as the provider returned it: an Anthropic `compaction` block, an OpenAI Responses
    `reasoning` item (encrypted content, `store=false`) or `compaction` item. Other adapters skip
    it, except that a compaction whose summary is readable (`item["content"]`) is sent as text.
    """

    api: str
    item: Mapping[str, Any] = field(default_factory=dict, hash=False)

    @property
    def kind(self) -> str:
        return str(self.item.get("type", ""))

    @property
    def is_compaction(self) -> bool:
        return self.kind == "compaction"

    @property
    def readable(self) -> str:
        """The human-readable part: an Anthropic compaction summary; "" for opaque items."""
        content = self.item.get("content")
        return content if isinstance(content, str) else ""


Part = Text | ToolCall | ToolResult | Image | Native


@dataclass(frozen=True, slots=True)
class Meta:
    turn: int = 0
    created_at: float = 0.0
    partial: bool = False
    preserve_verbatim: bool = False
    origin: Origin = "user"
    archive_keys: tuple[str, ...] = ()
    source_ids: tuple[str, ...] = ()


_counter = 0


def new_id(prefix: str = "m") -> str:
    """Sortable, unique ids: milliseconds, a process-local counter and randomness."""
    global _counter
    _counter = (_counter + 1) % 0xFFFF
    return f"{prefix}_{int(time.time() * 1000):011x}{_counter:04x}{os.urandom(3).hex()}"


@dataclass(frozen=True, slots=True)
class Message:
    id: str
    role: Role
    parts: tuple[Part, ...]
    meta: Meta = Meta()

    # -- construction ---------------------------------------------------------------------------
    @classmethod
    def create(
        cls, role: Role, parts: Iterable[Part] | str, *, message_id: str | None = None, **meta: Any
    ) -> Message:
        """A new message; `message_id` when the id was chosen beforehand (an answer's draft names it)."""
        if isinstance(parts, str):
            parts = (Text(parts),)
        meta.setdefault("created_at", time.time())
        meta.setdefault("origin", _default_origin(role))
        return cls(id=message_id or new_id(), role=role, parts=tuple(parts), meta=Meta(**meta))

    def derive(
        self, parts: Iterable[Part] | str | None = None, *, role: Role | None = None, **meta: Any
    ) -> Message:
        """A new message standing for this one (new id), e.g. a stub or a preview."""
        if isinstance(parts, str):
            parts = (Text(parts),)
        meta.setdefault("source_ids", self.meta.source_ids or (self.id,))
        meta.setdefault("created_at", time.time())
        return Message(
            id=new_id(),
            role=role or self.role,
            parts=tuple(self.parts if parts is None else parts),
            meta=replace(self.meta, **meta),
        )

    # -- reading ---------------------------------------------------------------------------------
    @property
    def text(self) -> str:
        return "".join(p.text for p in self.parts if isinstance(p, Text))

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        return tuple(p for p in self.parts if isinstance(p, ToolCall))

    @property
    def tool_results(self) -> tuple[ToolResult, ...]:
        return tuple(p for p in self.parts if isinstance(p, ToolResult))

    @property
    def is_system(self) -> bool:
        return self.role == "system"

    def char_size(self) -> int:
        """Characters the message carries: text, tool arguments and results, image data."""
        total = 0
        for part in self.parts:
            if isinstance(part, Text):
                total += len(part.text)
            elif isinstance(part, ToolResult):
                total += len(part.content)
            elif isinstance(part, ToolCall):
                total += len(part.name) + len(json.dumps(part.args, ensure_ascii=False))
            elif isinstance(part, Image):
                total += len(part.data)
            elif isinstance(part, Native):
                total += len(json.dumps(dict(part.item), ensure_ascii=False))
        return total

    @property
    def natives(self) -> tuple[Native, ...]:
        return tuple(p for p in self.parts if isinstance(p, Native))

    @property
    def compaction(self) -> Native | None:
        """The provider compaction this message carries (the last one), if any."""
        found = [p for p in self.parts if isinstance(p, Native) and p.is_compaction]
        return found[-1] if found else None

    def all_text(self) -> str:
        """Every human-readable string in the message (text, results, arguments) for searches."""
        chunks: list[str] = []
        for part in self.parts:
            if isinstance(part, Text):
                chunks.append(part.text)
            elif isinstance(part, ToolResult):
                chunks.append(part.content)
            elif isinstance(part, ToolCall):
                chunks.append(json.dumps(part.args, ensure_ascii=False))
            elif isinstance(part, Native) and part.readable:
                chunks.append(part.readable)
        return "\n".join(chunks)

    # -- persistence ---------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "role": self.role,
            "parts": [part_to_dict(p) for p in self.parts],
            "meta": meta_to_dict(self.meta),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Message:
        return cls(
            id=data["id"],
            role=data["role"],
            parts=tuple(part_from_dict(p) for p in data["parts"]),
            meta=meta_from_dict(data.get("meta", {})),
        )


_DEFAULT_ORIGINS: dict[str, Origin] = {
    "user": "user",
    "assistant": "model",
    "tool": "tool",
    "system": "system",
}


def _default_origin(role: str) -> Origin:
    return _DEFAULT_ORIGINS[role]


def part_to_dict(part: Part) -> dict[str, Any]:
    if isinstance(part, Text):
        return {"type": "text", "text": part.text}
    if isinstance(part, ToolCall):
        return {"type": "tool_call", "id": part.id, "name": part.name, "args": dict(part.args)}
    if isinstance(part, ToolResult):
        data = {
            "type": "tool_result",
            "call_id": part.call_id,
            "content": part.content,
            "is_error": part.is_error,
        }
        if part.references:
            data["references"] = list(part.references)
        return data
    if isinstance(part, Image):
        return {"type": "image", "media_type": part.media_type, "data": part.data}
    if isinstance(part, Native):
        return {"type": "native", "api": part.api, "item": dict(part.item)}
    raise TypeError(f"not a message part: {part!r}")


def part_from_dict(data: Mapping[str, Any]) -> Part:
    kind = data.get("type")
    if kind == "text":
        return Text(data["text"])
    if kind == "tool_call":
        return ToolCall(data["id"], data["name"], dict(data.get("args") or {}))
    if kind == "tool_result":
        return ToolResult(
            data["call_id"],
            data["content"],
            bool(data.get("is_error", False)),
            tuple(data.get("references") or ()),
        )
    if kind == "image":
        return Image(data["media_type"], data["data"])
    if kind == "native":
        return Native(str(data.get("api", "")), dict(data.get("item") or {}))
    raise ValueError(f"unknown message part type {kind!r}")


def meta_to_dict(meta: Meta) -> dict[str, Any]:
    out: dict[str, Any] = {"turn": meta.turn, "created_at": meta.created_at, "origin": meta.origin}
    if meta.partial:
        out["partial"] = True
    if meta.preserve_verbatim:
        out["preserve_verbatim"] = True
    if meta.archive_keys:
        out["archive_keys"] = list(meta.archive_keys)
    if meta.source_ids:
        out["source_ids"] = list(meta.source_ids)
    return out


def meta_from_dict(data: Mapping[str, Any]) -> Meta:
    return Meta(
        turn=int(data.get("turn", 0)),
        created_at=float(data.get("created_at", 0.0)),
        partial=bool(data.get("partial", False)),
        preserve_verbatim=bool(data.get("preserve_verbatim", False)),
        origin=data.get("origin", "user"),
        archive_keys=tuple(data.get("archive_keys", ())),
        source_ids=tuple(data.get("source_ids", ())),
    )


@dataclass(frozen=True, slots=True)
class View:
    """What the provider is sent: an ordered tuple of master or derived messages."""

    id: str
    messages: tuple[Message, ...]
    parent_id: str | None = None
    reason: str = "initial"
    created_at: float = 0.0

    def with_messages(self, messages: Iterable[Message], reason: str) -> View:
        return View(
            id=new_id("v"), messages=tuple(messages), parent_id=self.id, reason=reason, created_at=time.time()
        )

    def __len__(self) -> int:
        return len(self.messages)
