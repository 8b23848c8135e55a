"""L1: long assistant messages are cut to `assistant_cut_chars` (5,000): head ¾ + tail, archived."""

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
from app.engine.compaction.cut import preview, water_cap
from app.model.messages import Part, Text
from app.sizes import format_size


def cut_long_assistant(messages: Messages, ctx: PassContext, *, reason: str = "L1") -> PassResult:
    limit = ctx.settings.assistant_cut_chars
    archiver = Archiver(ctx, reason)
    out = []
    cut = freed = 0
    for message in messages:
        sizes = [len(p.text) for p in message.parts if isinstance(p, Text)]
        if message.role != "assistant" or is_protected(message) or sum(sizes) <= limit:
            out.append(message)
            continue
        cap = water_cap(sizes, limit)
        parts: list[Part] = []
        changed = False
        for part in message.parts:
            if isinstance(part, Text) and len(part.text) > cap:
                keys = archiver.stash(part.text, message)
                if keys is not None:
                    new_text = preview(part.text, cap, keys, head_ratio=0.75)
                    if len(new_text) < len(part.text):
                        freed += utf8_len(part.text) - utf8_len(new_text)
                        parts.append(Text(new_text))
                        changed = True
                        continue
            parts.append(part)
        if changed:
            cut += 1
            out.append(derive(message, ctx, parts))
        else:
            out.append(message)
    if not cut:
        return unchanged(messages, "assistant_cut")
    line = f"✂ L1: {cut} assistant messages cut to {limit:,} chars, {format_size(freed)} freed"
    return PassResult(tuple(out), archiver.entries, Report("assistant_cut", line, True, {"cut": cut}, freed))
