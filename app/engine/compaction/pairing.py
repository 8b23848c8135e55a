"""Tool-call pairing and the user-first rule — what every provider insists on.

Valid pairing (the strictest provider's rule, Anthropic's): an assistant message with tool
calls is followed immediately by tool messages that answer each of its calls exactly once;
a tool message appears only there. After the system messages the view starts with a user
message.
"""

from __future__ import annotations

from app.engine.compaction.context import (
    Archiver,
    Messages,
    PassContext,
    PassResult,
    Report,
    content_bytes,
    derive,
    is_protected,
    part_string,
    unchanged,
    utf8_len,
)
from app.engine.compaction.segment import (
    archive_segment,
    as_user_message,
    markers_text,
    notice_message,
    segment_sources,
)
from app.engine.prompts import DROPPED_NOTICE
from app.model.archive import has_marker
from app.model.messages import Message, Part, ToolCall, ToolResult

MISSING_RESULT = "[tool result missing: dropped during compaction]"
ORPHAN_HEADER = "[Tool output kept without its call]"
CONTINUES_NOTICE = "[Conversation continues from earlier context.]"


def pairing_problems(messages: Messages) -> list[str]:
    """Everything wrong with the view's tool pairing (empty when valid)."""
    problems: list[str] = []
    pending: dict[str, ToolCall] | None = None
    for index, message in enumerate(messages):
        if message.role == "tool":
            if pending is None:
                problems.append(f"message {index}: tool message outside a tool-call group")
                continue
            for part in message.parts:
                if isinstance(part, ToolResult):
                    if part.call_id not in pending:
                        problems.append(
                            f"message {index}: result for unknown or answered call {part.call_id}"
                        )
                    else:
                        del pending[part.call_id]
            continue
        if pending:
            problems.append(f"message {index}: calls without results: {', '.join(pending)}")
        pending = None
        if any(isinstance(p, ToolResult) for p in message.parts):
            problems.append(f"message {index}: tool result in a {message.role} message")
        if message.role == "assistant" and message.tool_calls:
            pending = {c.id: c for c in message.tool_calls}
            if len(pending) != len(message.tool_calls):
                problems.append(f"message {index}: duplicate tool call ids")
        elif message.tool_calls:
            problems.append(f"message {index}: tool call in a {message.role} message")
    if pending:
        problems.append(f"end of view: calls without results: {', '.join(pending)}")
    return problems


def starts_with_user(messages: Messages) -> bool:
    first = next((m for m in messages if m.role != "system"), None)
    return first is None or first.role == "user"


def synthetic_result(call: ToolCall, owner: Message) -> Message:
    return Message.create(
        "tool", [ToolResult(call.id, MISSING_RESULT, is_error=True)], origin="notice", turn=owner.meta.turn
    )


def repair_pairing(messages: Messages, ctx: PassContext, *, reason: str = "recovery") -> PassResult:
    """Drop orphan tool results (archived), add synthetic error results for calls without one.

    An orphan that is verbatim recall output, holds markers, or is too large to archive is not
    dropped: it becomes a user message placed right after the tool-call group it interrupted.
    """
    archiver = Archiver(ctx, reason)
    out: list[Message] = []
    deferred: list[Message] = []
    pending: dict[str, ToolCall] | None = None
    owner: Message | None = None
    dropped = converted = added = freed = 0

    def close_group() -> None:
        nonlocal pending, added
        if pending and owner is not None:
            for call in pending.values():
                out.append(synthetic_result(call, owner))
                added += 1
        pending = None
        out.extend(deferred)
        deferred.clear()

    for message in messages:
        if message.role != "tool":
            close_group()
            out.append(message)
            if message.role == "assistant" and message.tool_calls:
                pending = {c.id: c for c in message.tool_calls}
                owner = message
            continue
        keep: list[Part] = []
        orphans: list[Part] = []
        for part in message.parts:
            if pending is not None and isinstance(part, ToolResult) and part.call_id in pending:
                keep.append(part)
                del pending[part.call_id]
            elif pending is not None and not isinstance(part, ToolResult):
                keep.append(part)
            else:
                orphans.append(part)
        if not orphans:
            out.append(message)
            continue
        target = deferred if pending is not None else out
        if keep:
            out.append(derive(message, ctx, keep, origin=message.meta.origin))
        orphan_message = derive(message, ctx, orphans, origin=message.meta.origin) if keep else message
        texts = [part_string(p) for p in orphans]
        if is_protected(message) or any(has_marker(t) for t in texts):
            target.append(as_user_message(orphan_message, ctx, ORPHAN_HEADER))
            converted += 1
            continue
        stashed = [archiver.stash(t, message) for t in texts]
        if any(keys is None for keys in stashed):
            target.append(as_user_message(orphan_message, ctx, ORPHAN_HEADER))
            converted += 1
            continue
        dropped += len(orphans)
        freed += sum(utf8_len(t) for t in texts)
    close_group()

    if not (dropped or converted or added):
        return unchanged(messages, "pairing")
    bits = [
        f"{dropped} orphan results dropped" if dropped else "",
        f"{converted} kept as user messages" if converted else "",
        f"{added} synthetic results added" if added else "",
    ]
    line = "🔧 pairing: " + ", ".join(b for b in bits if b)
    return PassResult(
        tuple(out),
        archiver.entries,
        Report(
            "pairing", line, True, {"dropped": dropped, "converted": converted, "synthetic": added}, freed
        ),
    )


def ensure_starts_with_user(messages: Messages, ctx: PassContext, *, reason: str = "recovery") -> PassResult:
    """After the system messages the view starts with a user message.

    Leading assistant/tool messages (up to the first user message) are archived as one entry,
    dropped, and named by a notice (a user message carrying the entry's marker and every marker
    they held). Verbatim recall output among them is kept, as user messages, after the notice.
    """
    first = next((i for i, m in enumerate(messages) if m.role != "system"), None)
    if first is None or messages[first].role == "user":
        return unchanged(messages, "start")
    run_end = next((i for i in range(first, len(messages)) if messages[i].role == "user"), len(messages))
    run = [m for m in messages[first:run_end] if m.role != "system"]
    systems_inside = [m for m in messages[first:run_end] if m.role == "system"]
    kept = [as_user_message(m, ctx, ORPHAN_HEADER) for m in run if is_protected(m)]
    gone = [m for m in run if not is_protected(m)]
    archiver = Archiver(ctx, reason)
    out: list[Message] = list(messages[:first]) + systems_inside
    if gone:
        archived = archive_segment(gone, archiver)
        if archived is None:  # too large to archive, so it cannot be dropped: open with a notice instead
            note = Message.create("user", CONTINUES_NOTICE, origin="notice", turn=run[0].meta.turn)
            view = tuple(messages[:first]) + (note,) + tuple(messages[first:])
            return PassResult(view, [], Report("start", "↪ view opens with a notice", True, {"dropped": 0}))
        entry, carried = archived
        archived_keys = [entry.key, *carried]
        text = DROPPED_NOTICE.format(count=len(gone), markers=markers_text(archived_keys))
        out.append(notice_message(text, archived_keys, segment_sources(gone, ctx), gone[-1].meta.turn))
    out.extend(kept)
    out.extend(messages[run_end:])
    freed = sum(content_bytes(m) for m in gone)
    line = f"↪ view starts with a user message: {len(gone)} leading messages archived"
    return PassResult(
        tuple(out),
        archiver.entries,
        Report("start", line, True, {"dropped": len(gone), "kept_verbatim": len(kept)}, freed),
    )
