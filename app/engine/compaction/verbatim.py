"""Verbatim messages: what the model asked to keep whole (recall output), and the quarter rule.

`preserve_verbatim` messages are kept out of any summary and dropped segment and re-appended
right after it (a tool result whose call is gone becomes a user message, so pairing repair never
deletes it); they are never cut. But they may hold at most a quarter of the budget: past that,
the oldest are archived again, stubbed with a marker and lose the flag — so compaction always
converges.
"""

from __future__ import annotations

from collections.abc import Sequence

from app.engine.compaction.context import (
    Archiver,
    Messages,
    PassContext,
    PassResult,
    Report,
    content_bytes,
    derive,
    part_string,
    unchanged,
)
from app.engine.compaction.cut import one_line
from app.engine.compaction.segment import as_user_message
from app.model.messages import Message, Text, ToolResult
from app.model.textcut import line_count
from app.sizes import format_size

VERBATIM_SHARE = 4  # verbatim messages may hold at most 1/4 of the budget
REAPPEND_HEADER = "[Recalled content, kept verbatim]"


def is_verbatim(message: Message) -> bool:
    return message.meta.preserve_verbatim


def verbatim_budget(ctx: PassContext, budget_bytes: int | None = None) -> int | None:
    budget = budget_bytes if budget_bytes is not None else ctx.target_bytes
    return None if budget is None else budget // VERBATIM_SHARE


def restub_verbatim(message: Message, ctx: PassContext, archiver: Archiver) -> Message | None:
    """`message` archived again and stubbed (flag dropped), or None when it cannot be archived."""
    parts = []
    for part in message.parts:
        text = part_string(part)
        if len(text) <= 200 or not isinstance(part, Text | ToolResult):
            parts.append(part)
            continue
        keys = archiver.stash(text, message)
        if keys is None:
            return None
        line = one_line(
            f"[Recalled content moved back to the archive: {line_count(text):,} lines, {len(text):,} chars]",
            keys,
        )
        parts.append(
            ToolResult(part.call_id, line, part.is_error) if isinstance(part, ToolResult) else Text(line)
        )
    return derive(message, ctx, parts, preserve_verbatim=False, origin="stub")


def limit_verbatim(
    messages: Messages, ctx: PassContext, *, budget_bytes: int | None = None, reason: str = "recovery"
) -> PassResult:
    """The quarter rule: re-archive the oldest verbatim messages until they hold ≤ ¼ of the budget."""
    allowance = verbatim_budget(ctx, budget_bytes)
    if allowance is None:
        return unchanged(messages, "verbatim")
    total = sum(content_bytes(m) for m in messages if is_verbatim(m))
    if total <= allowance:
        return unchanged(messages, "verbatim")
    archiver = Archiver(ctx, reason)
    out = list(messages)
    restubbed = freed = 0
    for index, message in enumerate(messages):
        if total <= allowance:
            break
        if not is_verbatim(message):
            continue
        new = restub_verbatim(message, ctx, archiver)
        if new is None:
            continue
        saved = content_bytes(message) - content_bytes(new)
        total -= content_bytes(message)
        freed += saved
        out[index] = new
        restubbed += 1
    if not restubbed:
        return unchanged(messages, "verbatim")
    line = (
        f"📌 verbatim: {restubbed} recalled messages archived again (over ¼ of the budget, "
        f"{format_size(allowance)}), {format_size(freed)} freed"
    )
    return PassResult(
        tuple(out), archiver.entries, Report("verbatim", line, True, {"rearchived": restubbed}, freed)
    )


def split_verbatim(segment: Sequence[Message]) -> tuple[list[Message], list[Message]]:
    """(verbatim messages, the rest) of a segment about to be summarized or dropped."""
    keep = [m for m in segment if is_verbatim(m)]
    rest = [m for m in segment if not is_verbatim(m)]
    return keep, rest


def reappendable(messages: Sequence[Message], ctx: PassContext) -> list[Message]:
    """Verbatim messages ready to follow a summary or notice: tool results become user messages."""
    return [as_user_message(m, ctx, REAPPEND_HEADER) for m in messages]
