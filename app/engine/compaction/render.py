"""The older segment as the summarizer reads it, within a budget and within the route's cap.

- `render_segment`: every message gets a fair share of the budget (half the summarizer's window in chars,
  `summarizer_budget`), over-long ones keep head and tail 3:1, stubs are restored from the archive where the
  original fits the share, native tool calls are named (`→ shell: ls -la`, `name_call`).
- `fit_rendering`: re-rendered smaller until the request carrying it fits the route's byte cap.

The L2 summary (app.engine.compaction.summarize) and the memory worker (app.engine.memory.worker) read it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

from app.engine.compaction.context import part_string
from app.engine.compaction.cut import water_cap
from app.engine.compaction.dedup import read_range
from app.engine.compaction.microcompact import call_names
from app.model.archive import markers_in
from app.model.messages import Image, Message, Native, Text, ToolCall, ToolResult

CHARS_PER_TOKEN = 4
ARG_PREVIEW_CHARS = 160
FIT_ROUNDS = 6  # re-renderings to bring the summary request under the cap (each one scales the budget down)
FIT_MARGIN = 0.98  # a little under the exact ratio: rendering is per message and rounds


def summarizer_budget(window_tokens: int, floor_chars: int) -> int:
    """Half the summarizer's window, in chars (tokens × 4 / 2), never under the floor."""
    return max(floor_chars, int(window_tokens) * CHARS_PER_TOKEN // 2)


def _short(value: object, limit: int = ARG_PREVIEW_CHARS) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def name_call(call: ToolCall) -> str:
    """`→ shell: ls -la`, `→ read_file: app/x.py (lines 10–60)` — what the summary can list."""
    args = dict(call.args)
    if call.name == "shell" and "command" in args:
        detail = _short(args["command"])
    elif call.name == "read_file":
        rng = read_range(call)
        detail = _short(args.get("path", "")) + (f" ({rng.describe()})" if rng else "")
    elif call.name in ("write_file", "edit_file") and "path" in args:
        detail = _short(args["path"])
        content = args.get("content", args.get("new", args.get("new_string")))
        if isinstance(content, str):
            detail += f" ({len(content):,} chars)"
    elif call.name == "grep" and "pattern" in args:
        detail = _short(args["pattern"]) + (f" in {_short(args['path'])}" if args.get("path") else "")
    elif call.name == "recall":
        detail = _short(args.get("keys", args))
    elif len(args) == 1:
        detail = _short(next(iter(args.values())))
    else:
        detail = _short(args) if args else ""
    return f"→ {call.name}: {detail}" if detail else f"→ {call.name}"


def _header(message: Message, names: dict[str, str]) -> str:
    if message.role == "tool":
        ids = [p.call_id for p in message.tool_results]
        tools = ", ".join(dict.fromkeys(names.get(i, "tool") for i in ids)) or "tool"
        error = " (error)" if any(p.is_error for p in message.tool_results) else ""
        return f"[Tool result: {tools}{error} · turn {message.meta.turn}]"
    label = {"user": "User", "assistant": "Assistant", "system": "System"}.get(message.role, message.role)
    if message.meta.origin in ("summary", "notice"):
        label += f" ({message.meta.origin})"
    return f"[{label} · turn {message.meta.turn}]"


def _piece(part: object) -> str:
    if isinstance(part, Text):
        return part.text
    if isinstance(part, ToolResult):
        return part.content
    if isinstance(part, ToolCall):
        return name_call(part)
    if isinstance(part, Image):
        return f"[image {part.media_type}, {len(part.data):,} base64 chars]"
    if isinstance(part, Native):
        return part.readable  # a provider's readable compaction summary; opaque items say nothing
    return ""


def _restored_piece(part: object, lookup: Callable[[str], str | None]) -> str | None:
    """The archived original a stub part stands for (its first marker), if the archive has it."""
    text = part_string(part) if isinstance(part, Text | ToolResult) else ""
    keys = markers_in(text)
    if not keys:
        return None
    try:
        return lookup(keys[0])
    except Exception:
        return None


def _fit(text: str, cap: int) -> str:
    """`text` within `cap` chars, head and tail 3:1 around a gap line."""
    if len(text) <= cap:
        return text
    gap = f"\n[… {len(text):,} chars, cut …]\n"
    room = cap - len(gap)
    if room <= 8:
        return text[: max(0, cap)]
    head = room * 3 // 4
    tail = room - head
    return text[:head] + gap + text[len(text) - tail :]


def render_segment(
    messages: Sequence[Message], budget_chars: int, archive_lookup: Callable[[str], str | None]
) -> str:
    """The segment as the summarizer reads it, at most `budget_chars` long (when headers fit)."""
    if not messages:
        return ""
    names = call_names(tuple(messages))
    headers = [_header(m, names) for m in messages]
    bodies = ["\n".join(_piece(p) for p in m.parts) for m in messages]
    restored: list[str | None] = [None] * len(messages)
    for index, message in enumerate(messages):
        if message.meta.origin != "stub":
            continue
        pieces = []
        any_restored = False
        for part in message.parts:
            original = _restored_piece(part, archive_lookup)
            pieces.append(original if original is not None else _piece(part))
            any_restored = any_restored or original is not None
        if any_restored:
            restored[index] = "\n".join(pieces)
    overhead = sum(len(h) + 1 for h in headers) + 2 * (len(messages) - 1)
    available = max(0, budget_chars - overhead)
    # The fair share if every stub were restored: an original within it is restored (it will not be cut).
    share = water_cap(
        [len(r) if r is not None else len(b) for r, b in zip(restored, bodies, strict=True)], available
    )
    for index, original in enumerate(restored):
        if original is not None and len(original) <= share:
            bodies[index] = original
    cap = water_cap([len(b) for b in bodies], available)
    return "\n\n".join(f"{h}\n{_fit(b, cap)}" for h, b in zip(headers, bodies, strict=True))


def fit_rendering(
    messages: Sequence[Message],
    budget_chars: int,
    archive_lookup: Callable[[str], str | None],
    *,
    request_text: Callable[[str], str],
    request_bytes: Callable[[str], int],
    cap: int | None,
    min_chars: int,
) -> str | None:
    """The segment rendered within `budget_chars` and so that the request carrying it (`request_text` of the
    rendering, measured exactly by `request_bytes`) fits `cap`; None when it only fits under `min_chars`."""
    rendered = render_segment(messages, budget_chars, archive_lookup)
    if not cap:
        return rendered
    floor_chars = min(min_chars, len(rendered))
    overhead = request_bytes(request_text(""))
    for _ in range(FIT_ROUNDS):
        size = request_bytes(request_text(rendered))
        if size <= cap:
            return rendered
        room = cap - overhead
        if room <= 0:
            return None
        budget = int(len(rendered) * room / max(1, size - overhead) * FIT_MARGIN)
        if budget < floor_chars or budget >= len(rendered):
            return None
        rendered = render_segment(messages, budget, archive_lookup)
    return None
