"""Microcompact: old tool results become previews, then one line — no model call, lossless.

Seed numbers (Settings): a tool result at least `microcompact_truncate_turns` (2) turns old and
over `microcompact_truncate_min_chars` (3,000) chars becomes head 2,000 + tail 500 with a marker;
at least `microcompact_summarize_turns` (4) turns old and over
`microcompact_summarize_min_chars` (1,000) chars it becomes one line,
`[Old tool result cleared: L lines, C chars, TYPE]` (the seed's em dash is a colon: see app.engine.prompts) + marker. A preview that later becomes one
line carries its marker forward. Recall output and verbatim messages are never touched.
"""

from __future__ import annotations

from app.engine.compaction.context import (
    Archiver,
    Messages,
    PassContext,
    PassResult,
    Report,
    derive,
    is_protected,
    unchanged,
    utf8_len,
)
from app.engine.compaction.cut import content_type, one_line, preview
from app.model.archive import markers_in
from app.model.messages import Message, ToolResult
from app.model.textcut import line_count
from app.sizes import format_size


def call_names(messages: Messages) -> dict[str, str]:
    """call id -> tool name, for every tool call in the view."""
    return {call.id: call.name for m in messages if m.role == "assistant" for call in m.tool_calls}


def original_text(content: str, ctx: PassContext, archiver: Archiver) -> str:
    """The full original of a stub or preview, when one of its markers resolves; else `content`."""
    for key in markers_in(content):
        found = archiver.get(key) or ctx.lookup(key)
        if found is not None:
            return found
    return content


def cleared_line(original: str, kind: str) -> str:
    return f"[Old tool result cleared: {line_count(original):,} lines, {len(original):,} chars, {kind}]"


def microcompact(messages: Messages, ctx: PassContext) -> PassResult:
    settings = ctx.settings
    names = call_names(messages)
    archiver = Archiver(ctx, "microcompact")
    out: list[Message] = []
    truncated = summarized = freed = 0
    for message in messages:
        age = ctx.turn - message.meta.turn
        if message.role != "tool" or is_protected(message) or age < settings.microcompact_truncate_turns:
            out.append(message)
            continue
        parts = []
        changed = False
        for part in message.parts:
            new_content = None
            summarize = False
            if isinstance(part, ToolResult):
                size = len(part.content)
                summarize = (
                    age >= settings.microcompact_summarize_turns
                    and size > settings.microcompact_summarize_min_chars
                )
                if summarize or size > settings.microcompact_truncate_min_chars:
                    keys = archiver.stash(part.content, message)
                    if keys is not None and summarize:
                        original = original_text(part.content, ctx, archiver)
                        kind = names.get(part.call_id) or content_type(original)
                        new_content = one_line(cleared_line(original, kind), keys)
                    elif keys is not None:
                        new_content = preview(
                            part.content,
                            0,
                            keys,
                            head=settings.microcompact_head_chars,
                            tail=settings.microcompact_tail_chars,
                        )
            if (
                not isinstance(part, ToolResult)
                or new_content is None
                or len(new_content) >= len(part.content)
            ):
                parts.append(part)
                continue
            if summarize:
                summarized += 1
            else:
                truncated += 1
            freed += utf8_len(part.content) - utf8_len(new_content)
            parts.append(ToolResult(part.call_id, new_content, part.is_error))
            changed = True
        out.append(derive(message, ctx, parts) if changed else message)
    if not (truncated or summarized):
        return unchanged(messages, "microcompact")
    line = f"🗜 microcompact: {truncated} truncated, {summarized} summarized, {format_size(freed)} freed"
    return PassResult(
        tuple(out),
        archiver.entries,
        Report("microcompact", line, True, {"truncated": truncated, "summarized": summarized}, freed),
    )
