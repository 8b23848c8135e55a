"""Dedup repeated reads: a file read again supersedes the earlier copies it covers.

When a later `read_file` of the same path (normalised) covers the same or a wider line range,
each earlier read becomes a one-line stub (archived first); a narrower later read never
replaces a wider earlier one; the newest read stays verbatim; recall output is never touched.
A read that failed (an error result) supersedes nothing. Likewise a read-only tool called
again with the same arguments (`ctx.repeatable_tools`: MCP tools marked `readOnlyHint`)
supersedes its earlier results.
"""

from __future__ import annotations

import json
import math
import posixpath
from dataclasses import dataclass
from typing import Any

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
from app.engine.compaction.cut import one_line
from app.model.messages import ToolCall, ToolResult
from app.sizes import format_size

READ_TOOLS = frozenset({"read_file"})


@dataclass(frozen=True)
class ReadRange:
    path: str
    start: float  # first line (the tool's `offset`; absent = 0)
    end: float  # one past the last line (`offset + limit`; no limit = end of file)
    kind: str = "read"  # read (a file read) | call (a read-only tool's call: name and arguments)

    def covers(self, other: ReadRange) -> bool:
        return self.path == other.path and self.start <= other.start and self.end >= other.end

    def describe(self) -> str:
        if self.start == 0 and math.isinf(self.end):
            return "whole file"
        if math.isinf(self.end):
            return f"from line {int(self.start):,}"
        return f"lines {int(self.start):,}–{int(self.end):,}"


def normalise_path(path: str) -> str:
    text = str(path).strip().replace("\\", "/")
    if not text:
        return ""
    normal = posixpath.normpath(text)
    return normal[2:] if normal.startswith("./") else normal


def _number(value: Any) -> int | None:
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def read_range(call: ToolCall) -> ReadRange | None:
    """The file and line range a read call asked for, or None when it is not a readable read."""
    if call.name not in READ_TOOLS:
        return None
    path = call.args.get("path", call.args.get("file_path"))
    if not isinstance(path, str) or not path.strip():
        return None
    offset = _number(call.args.get("offset"))
    limit = _number(call.args.get("limit"))
    if (call.args.get("offset") not in (None, "") and offset is None) or (
        call.args.get("limit") not in (None, "") and limit is None
    ):
        return None  # arguments we cannot read: never dedup on a guess
    start = max(0, offset or 0)
    end = math.inf if limit is None or limit <= 0 else start + limit
    return ReadRange(normalise_path(path), start, end)


def _repeat_range(call: ToolCall, repeatable: frozenset[str]) -> ReadRange | None:
    """An identical call of a read-only tool as a 'range' that only an identical later call covers."""
    if call.name not in repeatable:
        return None
    try:
        key = json.dumps(dict(call.args), sort_keys=True, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return None
    return ReadRange(f"{call.name} {key}", 0, math.inf, kind="call")


def dedup_reads(messages: Messages, ctx: PassContext) -> PassResult:
    ranges: dict[str, ReadRange] = {}
    for message in messages:
        if message.role == "assistant":
            for call in message.tool_calls:
                found = read_range(call) or _repeat_range(call, ctx.repeatable_tools)
                if found is not None:
                    ranges[call.id] = found
    if not ranges:
        return unchanged(messages, "dedup")

    # every read result in view order: (message index, part index, range, error?, protected?)
    reads: list[tuple[int, int, ReadRange, bool, bool]] = []
    for mi, message in enumerate(messages):
        if message.role != "tool":
            continue
        for pi, part in enumerate(message.parts):
            if isinstance(part, ToolResult) and part.call_id in ranges:
                reads.append((mi, pi, ranges[part.call_id], part.is_error, is_protected(message)))

    superseded: dict[int, dict[int, ReadRange]] = {}
    by_path: dict[str, list[tuple[int, int, ReadRange, bool, bool]]] = {}
    for read in reads:
        by_path.setdefault(read[2].path, []).append(read)
    for group in by_path.values():
        for index, (mi, pi, rng, error, protected) in enumerate(group):
            if error or protected:
                continue
            if any(not later[3] and later[2].covers(rng) for later in group[index + 1 :]):
                superseded.setdefault(mi, {})[pi] = rng
    if not superseded:
        return unchanged(messages, "dedup")

    archiver = Archiver(ctx, "dedup")
    out = list(messages)
    stubbed = freed = 0
    for mi, parts_to_stub in superseded.items():
        message = messages[mi]
        parts = list(message.parts)
        changed = False
        for pi, rng in parts_to_stub.items():
            part = parts[pi]
            if not isinstance(part, ToolResult):  # the ranges name tool results only
                continue
            summary = (
                f"[Earlier read of {rng.path} ({rng.describe()}) superseded by a later read]"
                if rng.kind == "read"
                else f"[Earlier result of {rng.path[:200]} superseded by a later identical call]"
            )
            if len(summary) + 60 >= len(part.content):
                continue  # already a stub, or too small to be worth one
            keys = archiver.stash(part.content, message)
            if keys is None:
                continue
            new_content = one_line(summary, keys)
            if len(new_content) >= len(part.content):
                continue
            freed += utf8_len(part.content) - utf8_len(new_content)
            parts[pi] = ToolResult(part.call_id, new_content, part.is_error)
            stubbed += 1
            changed = True
        if changed:
            out[mi] = derive(message, ctx, parts)
    if not stubbed:
        return unchanged(messages, "dedup")
    line = f"🗜 dedup: {stubbed} repeated reads stubbed, {format_size(freed)} freed"
    return PassResult(tuple(out), archiver.entries, Report("dedup", line, True, {"stubbed": stubbed}, freed))
