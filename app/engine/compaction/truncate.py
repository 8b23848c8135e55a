"""Keep-recent (L2), nuclear (L3) and shrink-to-fit: the truncating passes of the recovery ladder.

- `keep_recent` (L2): system messages + the last `emergency_keep_messages` (10) non-system
  messages; the dropped segment is archived as one entry and named by a notice (a user message
  with its marker) right after the system messages.
- `nuclear` (L3): system messages + the last `nuclear_keep_messages` (4), each capped at
  `nuclear_message_chars` (4,000; archived before the cut), the dropped segment archived and
  the seed's compacted notice injected with its marker.
- `shrink_to_fit`: the largest non-system messages are cut first until the view measures at
  most `ctx.target_bytes`.

The cut never separates a tool call from its results: when the boundary falls inside a tool
group it moves back to the assistant message that made the calls (a few more messages kept).
Verbatim messages, the payload notice and the latest summary in a dropped segment are kept,
re-appended after the notice (shrink may still cut the summary, never the verbatim ones); verbatim messages are never capped nor shrunk, unless they hold over a quarter of the
budget (then the oldest are archived again — `verbatim.limit_verbatim`).
"""

from __future__ import annotations

from collections.abc import Sequence

from app.engine.compaction.context import (
    Archiver,
    Messages,
    PassContext,
    PassResult,
    Report,
    merge_entries,
    same_view,
    unchanged,
)
from app.engine.compaction.cut import MIN_CUT_CHARS, cut_message, part_size, water_cap
from app.engine.compaction.pairing import ensure_starts_with_user, repair_pairing
from app.engine.compaction.segment import (
    archive_segment,
    is_payload_notice,
    markers_text,
    notice_message,
    segment_sources,
)
from app.engine.compaction.verbatim import is_verbatim, limit_verbatim, reappendable
from app.model.archive import ArchiveEntry
from app.model.messages import Message
from app.model.prompts import COMPACTED_NOTICE, DROPPED_NOTICE
from app.sizes import format_size

SHRINK_MAX_ROUNDS = 24
SHRINK_FLOOR_CHARS = MIN_CUT_CHARS + 200  # a message this small is not shrunk further


def tail_boundary(non_system: Sequence[Message], keep: int) -> int:
    """Index in `non_system` where the kept tail starts: the last `keep`, never inside a tool group."""
    if len(non_system) <= keep:
        return 0
    boundary = len(non_system) - keep
    while boundary > 0 and non_system[boundary].role == "tool":
        boundary -= 1
    return boundary


def is_pinned(message: Message) -> bool:
    """Messages a dropped segment leaves in view: verbatim recall output and the payload notice."""
    return is_verbatim(message) or is_payload_notice(message)


def _finish(
    messages: Messages, entries: list[ArchiveEntry], ctx: PassContext, reason: str
) -> tuple[Messages, list[ArchiveEntry]]:
    """Quarter rule, then the safety net: valid pairing and a user message first."""
    for step in (
        lambda v: limit_verbatim(v, ctx, reason=reason),
        lambda v: repair_pairing(v, ctx, reason=reason),
        lambda v: ensure_starts_with_user(v, ctx, reason=reason),
    ):
        result = step(messages)
        if result.changed:
            messages = result.messages
            entries = merge_entries(entries, result.entries)
    return messages, entries


def _drop_older(
    messages: Messages, ctx: PassContext, keep: int, reason: str, notice_text: str
) -> tuple[list[Message], list[Message], list[Message], Archiver, int] | None:
    """Split the view; archive the dropped part. None when nothing can be dropped.

    Returns (head: systems + notice + pinned, kept tail, dropped messages, archiver, dropped count).
    """
    systems = [m for m in messages if m.role == "system"]
    non_system = [m for m in messages if m.role != "system"]
    boundary = tail_boundary(non_system, keep)
    if boundary == 0:
        return None
    dropped, kept = non_system[:boundary], non_system[boundary:]
    summaries = [m for m in dropped if m.meta.origin == "summary"]
    latest_summary = summaries[-1] if summaries else None  # the notice should not hide the summary
    pinned = [m for m in dropped if is_pinned(m) or m is latest_summary]
    gone = [m for m in dropped if not (is_pinned(m) or m is latest_summary)]
    archiver = Archiver(ctx, reason)
    head: list[Message] = list(systems)
    if gone:
        archived = archive_segment(gone, archiver)
        if archived is None:  # too large to store: it cannot be dropped
            return None
        entry, carried = archived
        keys = [entry.key, *carried]
        text = notice_text.format(count=len(gone), markers=markers_text(keys))
        head.append(notice_message(text, keys, segment_sources(gone, ctx), gone[-1].meta.turn))
    head.extend(reappendable(pinned, ctx))
    return head, kept, gone, archiver, len(gone)


def keep_recent(messages: Messages, ctx: PassContext, *, reason: str = "L2") -> PassResult:
    keep = ctx.settings.emergency_keep_messages
    split = _drop_older(messages, ctx, keep, reason, DROPPED_NOTICE)
    if split is None:
        view, entries = _finish(tuple(messages), [], ctx, reason)
        if same_view(view, messages):
            return unchanged(messages, "keep_recent")
        return PassResult(view, entries, Report("keep_recent", "↪ view repaired (ladder L2)", True))
    head, kept, _gone, archiver, count = split
    view, entries = _finish(tuple(head + kept), archiver.entries, ctx, reason)
    freed = max(0, ctx.measure(tuple(messages)) - ctx.measure(view))
    line = (
        f"✂ ladder L2: kept the last {len(kept)} messages, {count} older archived, {format_size(freed)} freed"
    )
    return PassResult(
        view, entries, Report("keep_recent", line, True, {"dropped": count, "kept": len(kept)}, freed)
    )


def nuclear(messages: Messages, ctx: PassContext, *, reason: str = "L3") -> PassResult:
    settings = ctx.settings
    compacted = COMPACTED_NOTICE + " [full content recoverable via @recall {markers}]"
    split = _drop_older(messages, ctx, settings.nuclear_keep_messages, reason, compacted)
    if split is None:
        systems = [m for m in messages if m.role == "system"]
        head, kept, count = systems, [m for m in messages if m.role != "system"], 0
        archiver = Archiver(ctx, reason)
    else:
        head, kept, _gone, archiver, count = split
    capped = 0
    new_kept: list[Message] = []
    for message in kept:
        if is_pinned(message) or message.meta.origin == "notice":
            new_kept.append(message)
            continue
        cut = cut_message(message, settings.nuclear_message_chars, ctx, archiver)
        if cut is None:
            new_kept.append(message)
        else:
            new_kept.append(cut)
            capped += 1
    candidate = tuple(head + new_kept)
    if not count and not capped:
        view, entries = _finish(tuple(messages), [], ctx, reason)
        if same_view(view, messages):
            return unchanged(messages, "nuclear")
        return PassResult(view, entries, Report("nuclear", "↪ view repaired (last messages only)", True))
    view, entries = _finish(candidate, archiver.entries, ctx, reason)
    freed = max(0, ctx.measure(tuple(messages)) - ctx.measure(view))
    line = (
        f"✂ kept only the last {len(kept)} messages (each ≤ {settings.nuclear_message_chars:,} chars, "
        f"{capped} capped), {count} older archived"
    )
    return PassResult(
        view, entries, Report("nuclear", line, True, {"dropped": count, "capped": capped}, freed)
    )


def shrink_to_fit(messages: Messages, ctx: PassContext, *, reason: str = "shrink") -> PassResult:
    """Cut the largest non-system messages first until `measure(view) <= ctx.target_bytes`.

    Always terminates: each round cuts every candidate above a fair cap, and stops when the view
    fits, when nothing is left to cut, or when a round does not make the view smaller. A view that
    cannot reach the target comes back with `report.ok = False` and the reason.
    """
    target = ctx.target_bytes
    if target is None:
        return unchanged(messages, "shrink")
    start = ctx.measure(tuple(messages))
    if start <= target:
        return unchanged(messages, "shrink")
    view, entries = tuple(messages), []
    quarter = limit_verbatim(view, ctx, reason=reason)
    if quarter.changed:
        view, entries = quarter.messages, list(quarter.entries)
    archiver = Archiver(ctx, reason)
    size = ctx.measure(view)
    shrunk: set[int] = set()
    for _ in range(SHRINK_MAX_ROUNDS):
        if size <= target:
            break
        candidates = [
            (i, sum(part_size(p) for p in m.parts))
            for i, m in enumerate(view)
            if m.role != "system" and not is_verbatim(m) and m.meta.origin != "notice"
        ]
        candidates = [(i, s) for i, s in candidates if s > SHRINK_FLOOR_CHARS]
        if not candidates:
            break
        total = sum(s for _, s in candidates)
        cap = max(SHRINK_FLOOR_CHARS, water_cap([s for _, s in candidates], max(0, total - (size - target))))
        new_view = list(view)
        cut_any = False
        for index, chars in candidates:
            if chars <= cap:
                continue
            cut = cut_message(view[index], cap, ctx, archiver)
            if cut is not None:
                new_view[index] = cut
                shrunk.add(index)
                cut_any = True
        if not cut_any:
            break
        new_size = ctx.measure(tuple(new_view))
        if new_size >= size:
            break
        view, size = tuple(new_view), new_size
    entries = merge_entries(entries, archiver.entries)
    if same_view(view, messages):
        return PassResult(
            tuple(messages),
            [],
            Report(
                "shrink",
                "",
                False,
                ok=False,
                detail=f"cannot shrink below {format_size(size)} (target {format_size(target)})",
            ),
        )
    reached = size <= target
    line = f"✂ shrink: {len(shrunk)} messages cut, {format_size(start)} → {format_size(size)}" + (
        "" if reached else f" (target {format_size(target)} not reached)"
    )
    detail = "" if reached else f"cannot shrink below {format_size(size)} (target {format_size(target)})"
    return PassResult(
        view,
        entries,
        Report("shrink", line, True, {"cut": len(shrunk)}, max(0, start - size), ok=reached, detail=detail),
    )
