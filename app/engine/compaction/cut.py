"""Cutting content: previews with a recall suffix, fair allowances, whole-message caps.

Every cut goes through an `Archiver` first (archive before every cut); a cut whose content
cannot be archived (too large) is not made.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from app.engine.compaction.context import Archiver, PassContext, args_text, derive
from app.model.archive import has_marker, recall_suffix, strip_markers
from app.model.messages import Image, Message, Text, ToolCall, ToolResult

# The smallest allowance a cut may leave for text around its gap line and recall suffix.
MIN_CUT_CHARS = 240


def gap_line(removed: int, note: str = "") -> str:
    return f"\n[… {removed:,} chars not shown{'; ' + note if note else ''} …]\n"


def preview(
    text: str,
    max_chars: int,
    keys: Sequence[str] = (),
    *,
    head_ratio: float = 0.75,
    head: int | None = None,
    tail: int | None = None,
    note: str = "",
) -> str:
    """`text` as head + gap line + tail + recall suffix, at most about `max_chars` long.

    With `head`/`tail` given (microcompact's 2,000 + 500) those are kept exactly; otherwise the
    allowance left after the gap line and the suffix is split `head_ratio` : rest. Markers inside
    `text` are defanged in the body; `keys` (which must include them) are named in the suffix.
    """
    body = strip_markers(text) if has_marker(text) else text
    suffix = ("\n" + recall_suffix(keys)) if keys else ""
    if head is None or tail is None:
        reserve = len(gap_line(len(body), note)) + len(suffix)
        room = max(0, max_chars - reserve)
        head = int(room * head_ratio)
        tail = room - head
    if head + tail >= len(body):
        return body + suffix
    removed = len(body) - head - tail
    return body[:head] + gap_line(removed, note) + (body[len(body) - tail :] if tail else "") + suffix


def one_line(summary: str, keys: Sequence[str]) -> str:
    suffix = recall_suffix(keys)
    return f"{summary} {suffix}" if suffix else summary


def water_cap(sizes: Sequence[int], budget: int) -> int:
    """The largest cap c with sum(min(s, c)) <= budget (every item gets a fair share of `budget`)."""
    if sum(sizes) <= budget:
        return max(sizes, default=0)
    ordered = sorted(sizes)
    remaining = budget
    count = len(ordered)
    for index, size in enumerate(ordered):
        share = remaining // (count - index)
        if size > share:
            return max(0, share)
        remaining -= size
    return ordered[-1]


def content_type(text: str) -> str:
    """A rough content type for a tool result whose tool is unknown."""
    stripped = text.lstrip()[:200].lower()
    if stripped.startswith(("{", "[")):
        try:
            json.loads(text)
            return "json"
        except ValueError:
            pass
    if stripped.startswith(("<!doctype html", "<html")):
        return "html"
    if stripped.startswith("<?xml"):
        return "xml"
    if "\x00" in text[:4096]:
        return "binary"
    return "text"


def part_size(part: Any) -> int:
    if isinstance(part, Text):
        return len(part.text)
    if isinstance(part, ToolResult):
        return len(part.content)
    if isinstance(part, ToolCall):
        return len(args_text(part))
    if isinstance(part, Image):
        return len(part.data)
    return 0


def cut_part(part: Any, allowance: int, message: Message, archiver: Archiver) -> Any | None:
    """`part` cut to about `allowance` chars, archived first; None when it cannot (or need not) be cut."""
    allowance = max(allowance, MIN_CUT_CHARS)
    if part_size(part) <= allowance:
        return None
    if isinstance(part, Text):
        keys = archiver.stash(part.text, message)
        return None if keys is None else Text(preview(part.text, allowance, keys))
    if isinstance(part, ToolResult):
        keys = archiver.stash(part.content, message)
        if keys is None:
            return None
        return ToolResult(part.call_id, preview(part.content, allowance, keys), part.is_error)
    if isinstance(part, Image):
        keys = archiver.stash(part.data, message)
        if keys is None:
            return None
        return Text(one_line(f"[image {part.media_type} removed, {len(part.data):,} base64 chars]", keys))
    if isinstance(part, ToolCall):
        return _cut_call(part, allowance, message, archiver)
    return None


def _cut_call(call: ToolCall, allowance: int, message: Message, archiver: Archiver) -> ToolCall | None:
    """A tool call whose long string arguments are cut (the call already ran; its shape stays)."""
    args = dict(call.args)
    long_keys = [k for k, v in args.items() if isinstance(v, str) and len(v) > MIN_CUT_CHARS]
    if not long_keys:
        return None
    keys = archiver.stash(args_text(call), message)
    if keys is None:
        return None
    fixed = len(args_text(call)) - sum(len(args[k]) for k in long_keys)
    share = max(MIN_CUT_CHARS, (allowance - fixed) // len(long_keys))
    for name in long_keys:
        args[name] = preview(args[name], share, keys)
    return ToolCall(call.id, call.name, args)


def cut_message(message: Message, max_chars: int, ctx: PassContext, archiver: Archiver) -> Message | None:
    """`message` with its parts cut so the whole carries about `max_chars`; None when nothing was cut.

    Parts share `max_chars` fairly (small parts stay whole, the largest are cut first).
    """
    sizes = [part_size(p) for p in message.parts]
    if sum(sizes) <= max_chars:
        return None
    cap = water_cap(sizes, max_chars)
    parts: list[Any] = []
    cut_any = False
    for part, size in zip(message.parts, sizes, strict=True):
        new = cut_part(part, cap, message, archiver) if size > cap else None
        if new is None or part_size(new) >= size:
            parts.append(part)
        else:
            parts.append(new)
            cut_any = True
    if not cut_any:
        return None
    return derive(message, ctx, parts)
