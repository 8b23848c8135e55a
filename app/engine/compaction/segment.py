"""Dropping a run of messages: archive it as one entry and name it with a notice.

The archived copy is the full text of every message (text, tool calls with their arguments,
tool results, image data) — nothing is cut. Markers inside the segment (stubs of earlier
compactions, previews, summaries) are defanged in the copy and carried forward, as real
markers, by the notice that replaces the segment.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from app.engine.compaction.context import Archiver, PassContext, args_text, message_keys
from app.engine.prompts import PAYLOAD_NOTICE_PREFIXES
from app.model.archive import ArchiveEntry, defang_markers, marker
from app.model.messages import Image, Message, Native, Text, ToolCall, ToolResult


def render_message_full(message: Message) -> str:
    """One message, whole, as plain text (the archived form of a dropped message)."""
    header = f"--- {message.role} (turn {message.meta.turn}, {message.meta.origin}) ---"
    chunks = [header]
    for part in message.parts:
        if isinstance(part, Text):
            chunks.append(part.text)
        elif isinstance(part, ToolCall):
            chunks.append(f"→ {part.name} [{part.id}] {args_text(part)}")
        elif isinstance(part, ToolResult):
            flag = " error" if part.is_error else ""
            chunks.append(f"[tool result{flag} for {part.call_id}]\n{part.content}")
        elif isinstance(part, Image):
            chunks.append(f"[image {part.media_type} base64]\n{part.data}")
        elif isinstance(part, Native):
            chunks.append(f"[{part.api} {part.kind}]" + (f"\n{part.readable}" if part.readable else ""))
    return "\n".join(chunks)


def render_full(messages: Iterable[Message]) -> str:
    return defang_markers("\n\n".join(render_message_full(m) for m in messages))


def segment_sources(messages: Iterable[Message], ctx: PassContext) -> tuple[str, ...]:
    ids: list[str] = []
    for message in messages:
        ids.extend(ctx.master_ids(message))
    return tuple(dict.fromkeys(ids))


def carried_keys(messages: Iterable[Message]) -> list[str]:
    keys: list[str] = []
    for message in messages:
        keys.extend(message_keys(message))
    return list(dict.fromkeys(keys))


def archive_segment(messages: Sequence[Message], archiver: Archiver) -> tuple[ArchiveEntry, list[str]] | None:
    """Archive `messages` as one entry; returns (entry, carried keys), or None if it is too large."""
    entry = archiver.stash_segment(render_full(messages), segment_sources(messages, archiver.ctx))
    if entry is None:
        return None
    return entry, carried_keys(messages)


def notice_message(text: str, keys: Sequence[str], sources: Sequence[str], turn: int) -> Message:
    return Message.create(
        "user",
        text,
        origin="notice",
        archive_keys=tuple(dict.fromkeys(keys)),
        source_ids=tuple(sources),
        turn=turn,
    )


def markers_text(keys: Sequence[str]) -> str:
    return " ".join(marker(k) for k in dict.fromkeys(keys))


def is_payload_notice(message: Message) -> bool:
    """The once-per-session payload notice: kept in view when older messages are dropped."""
    return message.role == "user" and message.text.startswith(PAYLOAD_NOTICE_PREFIXES)


def as_user_message(message: Message, ctx: PassContext, header: str = "") -> Message:
    """A tool message turned into a user message (its results as text), so no pairing repair drops it.

    Used for verbatim recall output re-appended without its call: each result's content stays
    one whole Text part, byte for byte.
    """
    if message.role == "user":
        return message
    parts: list[Text] = []
    if header:
        parts.append(Text(header + "\n"))
    for part in message.parts:
        if isinstance(part, ToolResult):
            parts.append(Text(part.content))
        elif isinstance(part, Text):
            parts.append(Text(part.text))
    keys = tuple(dict.fromkeys(message.meta.archive_keys + message_keys(message)))
    return message.derive(parts, role="user", source_ids=ctx.master_ids(message), archive_keys=keys)
