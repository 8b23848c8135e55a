"""`--shrink`: rewrite a request that is over the cap so that it fits — the same way every time.

A pure function of the body and the target size. Three passes, each only when the previous one did not
fit, each cheapest and least visible first:

1. tool results *after* the last `cache_control` breakpoint become stubs, oldest first;
2. then tool results before it, oldest first (the provider's cached prefix is rebuilt once);
3. then whole turns are dropped from the front, up to a user turn that starts fresh, so every
   `tool_use` keeps its `tool_result` (and every function call its output) — kept or dropped together.

A stub names the content's archive key (`[[ccr:KEY]]`, the first 16 hex digits of its SHA-256) and
nothing that changes between requests, and the choice is oldest-first: the stubs of one request are
again, byte for byte, the stubs of the next, and the prefix the provider caches is stable after one
rebuild. Signed `thinking`/`redacted_thinking` blocks, OpenAI `reasoning` items (encrypted content),
`compaction` items and Anthropic `compaction` blocks are never edited: they stay, or go whole with their
turn (a compaction block or item is never dropped). System prompts, instructions and tool definitions
are never touched. The originals go to the local archive (`entries`). Anything unexpected — not JSON,
no messages, nothing that fits — returns a `NotShrunk` and the original goes up unchanged (fails open).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from app.model.archive import ArchiveEntry, make_entry, marker, markers_in
from app.proxy.wire import Wire
from app.sizes import format_size

STUB_MIN_BYTES = 1024  # a tool result smaller than this is never worth a stub
ARCHIVE_REASON = "shrink"


@dataclass(frozen=True)
class Shrunk:
    body: bytes
    entries: tuple[ArchiveEntry, ...]
    stubbed: int
    dropped: int  # messages (or items) dropped whole
    before: int
    touched_cached_prefix: bool  # something before the last cache_control breakpoint changed

    @property
    def note(self) -> str:
        parts = []
        if self.stubbed:
            parts.append(f"{self.stubbed} tool result{'s' if self.stubbed != 1 else ''} stubbed")
        if self.dropped:
            parts.append(f"{self.dropped} earlier message{'s' if self.dropped != 1 else ''} dropped")
        prefix = " (cached prefix rebuilt)" if self.touched_cached_prefix else ""
        return (
            f"shrunk {format_size(self.before)} → {format_size(len(self.body))}: {', '.join(parts)}{prefix}"
        )


@dataclass(frozen=True)
class NotShrunk:
    reason: str


def stub_text(content: str) -> str:
    """The stub for a tool result: stable for the same content, whatever request it is in."""
    data = content.encode("utf-8", "surrogatepass")
    entry = make_entry(content, ARCHIVE_REASON)
    key = entry.key if entry else ""
    lines = content.count("\n") + 1
    return (
        f"[bulkhead proxy: this tool result ({len(data):,} bytes, {lines:,} lines) was withheld to fit the "
        f"network gateway's body cap; run the tool again if you need it. Archived on this machine as "
        f"{marker(key)}]"
    )


def dump(value: Any) -> bytes:
    """The serialisation of a rewritten body (compact, UTF-8): deterministic, so equal content gives equal
    bytes in every request."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def shrink(body: bytes, wire: Wire, target: int) -> Shrunk | NotShrunk:
    """`body` rewritten to at most `target` bytes, or why not. Never raises."""
    try:
        return _shrink(body, wire, target)
    except Exception as exc:  # fails open: the caller sends the original
        return NotShrunk(f"could not shrink ({type(exc).__name__}: {str(exc)[:120]})")


@dataclass
class _Slot:
    """One tool result that may become a stub: where its content lives, and its position."""

    holder: dict[str, Any]
    key: str  # "content" (Anthropic, chat) or "output" (Responses)
    position: tuple[int, int]  # (message/item index, block index)


def _shrink(body: bytes, wire: Wire, target: int) -> Shrunk | NotShrunk:
    if wire not in (Wire.ANTHROPIC, Wire.OPENAI_CHAT, Wire.OPENAI_RESPONSES):
        return NotShrunk(f"{wire} requests are never rewritten")
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return NotShrunk("the body is not JSON")
    if not isinstance(data, dict):
        return NotShrunk("the body is not a JSON object")
    list_key = "input" if wire is Wire.OPENAI_RESPONSES else "messages"
    turns = data.get(list_key)
    if not isinstance(turns, list) or not turns:
        return NotShrunk(f"the body has no {list_key} list")
    size = len(dump(data))
    before = len(body)
    if size <= target:  # re-serialising alone fits (a client that pretty-prints)
        return Shrunk(dump(data), (), 0, 0, before, False)
    slots = _slots(wire, turns)
    breakpoint_at = _last_breakpoint(turns) if wire is Wire.ANTHROPIC else None
    after = [s for s in slots if breakpoint_at is None or s.position > breakpoint_at]
    cached = [s for s in slots if breakpoint_at is not None and s.position <= breakpoint_at]
    entries: dict[str, ArchiveEntry] = {}
    stubbed = 0
    touched = False
    for group, in_cached_prefix in ((after, False), (cached, True)):
        for slot in group:
            if size <= target:
                break
            value = slot.holder[slot.key]
            text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
            entry = make_entry(text, ARCHIVE_REASON)
            if entry is None:  # holds a marker (a stub already) or too large to archive: left as it is
                continue
            stub = stub_text(text)
            saved = len(dump(value)) - len(dump(stub))
            if saved <= 0:
                continue
            slot.holder[slot.key] = stub
            entries[entry.key] = entry
            size -= saved
            stubbed += 1
            touched = touched or in_cached_prefix
    dropped = 0
    if size > target:
        original = json.loads(body)[list_key]  # what dropped turns said before any stub: archived whole
        result = _drop_turns(wire, data, list_key, original, target, entries)
        if result is None:
            return NotShrunk(
                f"even with every tool result stubbed and old turns dropped it stays over {format_size(target)}"
            )
        dropped = result
        touched = touched or breakpoint_at is not None
    out = dump(data)
    if len(out) > target:  # the arithmetic above is exact; this guards a bug, and fails open
        return NotShrunk(f"the rewritten body is {len(out):,} bytes, over {target:,}")
    return Shrunk(out, tuple(entries.values()), stubbed, dropped, before, touched)


def _slots(wire: Wire, turns: list[Any]) -> list[_Slot]:
    """Every tool result that could become a stub, oldest first, larger than STUB_MIN_BYTES."""
    found: list[_Slot] = []
    for index, turn in enumerate(turns):
        if not isinstance(turn, dict):
            continue
        if wire is Wire.ANTHROPIC:
            content = turn.get("content")
            if turn.get("role") != "user" or not isinstance(content, list):
                continue
            for position, block in enumerate(content):
                if isinstance(block, dict) and block.get("type") == "tool_result" and "content" in block:
                    found.append(_Slot(block, "content", (index, position)))
        elif wire is Wire.OPENAI_CHAT:
            if turn.get("role") == "tool" and "content" in turn:
                found.append(_Slot(turn, "content", (index, 0)))
        elif turn.get("type") in ("function_call_output", "custom_tool_call_output") and "output" in turn:
            found.append(_Slot(turn, "output", (index, 0)))
    return [s for s in found if len(dump(s.holder[s.key])) >= STUB_MIN_BYTES]


def _last_breakpoint(turns: list[Any]) -> tuple[int, int] | None:
    """Where the last `cache_control` mark in the messages is (message index, block index)."""
    last: tuple[int, int] | None = None
    for index, turn in enumerate(turns):
        if not isinstance(turn, dict):
            continue
        content = turn.get("content")
        if isinstance(content, list):
            for position, block in enumerate(content):
                if isinstance(block, dict) and block.get("cache_control"):
                    last = (index, position)
        if turn.get("cache_control"):
            last = (index, 10**9)
    return last


def _fresh_user_turn(wire: Wire, turn: Any) -> bool:
    """A user turn that answers no tool call: history can be cut just before it."""
    if not isinstance(turn, dict):
        return False
    if wire is Wire.OPENAI_RESPONSES:
        return turn.get("type", "message") == "message" and turn.get("role") == "user"
    if turn.get("role") != "user":
        return False
    content = turn.get("content")
    return not (
        isinstance(content, list)
        and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
    )


def _kept_always(wire: Wire, turn: Any) -> bool:
    """System and developer messages, compaction blocks and items: never dropped."""
    if not isinstance(turn, dict):
        return True
    if turn.get("role") in ("system", "developer") or turn.get("type") == "compaction":
        return True
    content = turn.get("content")
    return isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "compaction" for b in content
    )


def _drop_turns(
    wire: Wire,
    data: dict[str, Any],
    list_key: str,
    original: list[Any],
    target: int,
    entries: dict[str, ArchiveEntry],
) -> int | None:
    """Drop the fewest whole turns from the front so the body fits; a notice (a user message naming the
    archive key of what went) takes their place. The number of messages dropped, or None."""
    turns: list[Any] = data[list_key]
    first_compaction = next((i for i, t in enumerate(turns) if _is_compaction(t)), None)
    cuts = [  # never past a compaction: what comes before one is what it summarised
        i
        for i, turn in enumerate(turns)
        if i > 0 and _fresh_user_turn(wire, turn) and (first_compaction is None or i <= first_compaction)
    ]
    for cut in cuts:
        dropped = [t for t in turns[:cut] if not _kept_always(wire, t)]
        if not dropped:
            continue
        kept_before = [t for t in turns[:cut] if _kept_always(wire, t)]
        text = json.dumps([t for t in original[:cut] if not _kept_always(wire, t)], ensure_ascii=False)
        entry = make_entry(text, ARCHIVE_REASON)
        keys = [entry.key] if entry else markers_in(text)
        notice_text = (
            f"[bulkhead proxy: {len(dropped)} earlier message{'s' if len(dropped) != 1 else ''} of this "
            f"conversation were withheld to fit the network gateway's body cap. Archived on this machine as "
            f"{' '.join(marker(k) for k in keys)}]"
        )
        notice = (
            {"type": "message", "role": "user", "content": notice_text}
            if wire is Wire.OPENAI_RESPONSES
            else {"role": "user", "content": notice_text}
        )
        candidate = [*kept_before, notice, *turns[cut:]]
        if len(dump({**data, list_key: candidate})) <= target:
            data[list_key] = candidate
            if entry is not None:
                entries[entry.key] = entry
            return len(dropped)
    return None


def _is_compaction(turn: Any) -> bool:
    if not isinstance(turn, dict):
        return False
    if turn.get("type") == "compaction":
        return True
    content = turn.get("content")
    return isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "compaction" for b in content
    )
