"""One presenter: an engine event in words, the same for the chat, `-p` and the logs.

    line = describe(event)            # Description | None (None: the event is not told as a line)
    line.text, line.level, line.code, line.title, line.mark

The chat shows `text` as a notice (`title` its label, `code` its kind, `level` its colour);
`-p` prints `mark text` on stderr; the turn log writes `text`. The words are the chat's: what a
user reads in the TUI is what a script reads on stderr. Outside text in an event (a provider's
reason, a hook's output) is left as it came: each front end makes it safe where it prints it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import singledispatch

from app.model.events import (
    ApprovalRequested,
    CapLearned,
    Compaction,
    CompactionPhase,
    Event,
    FallbackAnswered,
    FallbackMoved,
    HookRun,
    HookStarted,
    McpServerChanged,
    MemoryDistilled,
    MemoryQueued,
    Notice,
    RecoveryStep,
    Rejection,
    Retry,
    ToolApproval,
    ToolCallFinished,
    ToolCallStarted,
)
from app.model.levels import ladder_label, method_label
from app.model.notice_facts import NoticeFact
from app.sizes import format_size

LEVEL_MARKS = {"info": "ℹ", "warn": "⚠", "error": "✖"}
TOOL_ARGS_CHARS = 160  # a tool call's arguments on one line, cut
HOOK_OUTPUT_CHARS = 200  # a failing hook's first line of output, cut


@dataclass(frozen=True)
class Description:
    """One event in words."""

    text: str
    level: str = "info"  # info | warn | error
    code: str = ""  # the notice's kind: recovery, retry, rejection, compaction, hook, tool, mcp, …
    title: str = ""  # the chat's label for it ("" : the code's)
    mark: str = ""  # a one-character sign for line output ("" : the level's)

    @property
    def line(self) -> str:
        """`mark title  text` for stderr and logs, as the chat shows it (its label, then the words)."""
        mark = self.mark or LEVEL_MARKS.get(self.level, "ℹ")
        return f"{mark} {self.title}  {self.text}" if self.title else f"{mark} {self.text}"


@singledispatch
def describe(event: Event | NoticeFact) -> Description | None:
    """`event` (or a notice's fact, worded by app.engine.notice_words) in words, or None when it is not told
    as a line (text deltas, sizes, usage…)."""
    return None


@describe.register
def _notice(event: Notice) -> Description:
    return Description(event.text, level=event.level, code=event.code)


@describe.register
def _recovery(event: RecoveryStep) -> Description:
    sizes = ""
    if event.bytes_before is not None and event.bytes_after is not None:
        sizes = f" ({format_size(event.bytes_before)} → {format_size(event.bytes_after)})"
    level = {"failed": "error", "exhausted": "error", "refused": "error", "not_smaller": "warn"}.get(
        event.outcome, "info"
    )
    text = (
        f"{ladder_label(event.level)} attempt {event.attempt}/{event.max_attempts}: "
        f"{event.outcome.replace('_', ' ')}{sizes}" + (f" — {event.reason}" if event.reason else "")
    )
    return Description(text, level=level, code="recovery", title="recovery", mark="⛑")


@describe.register
def _retry(event: Retry) -> Description:
    text = f"{event.kind}: retry {event.attempt}/{event.max_attempts} in {event.delay_s:.1f} s" + (
        f" — {event.reason}" if event.reason else ""
    )
    return Description(text, code="retry", title="retry", mark="↻")


@describe.register
def _rejection(event: Rejection) -> Description:
    size = f", {format_size(event.bytes)}" if event.bytes else ""
    status = f"{event.status} " if event.status else ""
    return Description(
        f"{status}{event.kind}{size}: {event.reason}" + (" — recovering" if event.recoverable else ""),
        level="warn" if event.recoverable else "error",
        code="rejection",
        title="rejected" if event.status is not None else "failed",
        mark="⚠",
    )


@describe.register
def _compaction(event: Compaction) -> Description:
    if event.outcome == "applied":
        archived = f", {len(event.archive_keys)} segment(s) archived" if event.archive_keys else ""
        return Description(
            f"{method_label(event.trigger, event.method)}: {format_size(event.bytes_before)} → "
            f"{format_size(event.bytes_after)}, {event.messages_before} → "
            f"{event.messages_after} messages{archived} (/rewind compact undoes it)",
            code="compaction",
            title=f"compacted ({event.trigger})",
            mark="📦",
        )
    return Description(
        f"{method_label(event.trigger, event.method)}: {event.outcome}",
        level="warn" if event.outcome == "failed" else "info",
        code="compaction",
        title=f"compaction ({event.trigger})",
        mark="📦",
    )


@describe.register
def _compaction_phase(event: CompactionPhase) -> Description:
    return Description(event.text, code="compaction", mark=" ")


@describe.register
def _hook(event: HookRun) -> Description | None:
    if event.decision == "ok":
        return None
    lines = event.output.strip().splitlines()
    detail = f" — {lines[0][:HOOK_OUTPUT_CHARS]}" if lines else ""
    return Description(
        f"{event.event} hook `{event.command}`: {event.decision}{detail}",
        level="warn" if event.decision in ("error", "timeout", "cancelled") else "info",
        code="hook",
        title="hook",
        mark="⚓",
    )


@describe.register
def _hook_started(event: HookStarted) -> None:
    return None  # shown by the status line and the Hooks panel while it runs, never as a line


@describe.register
def _tool_call(event: ToolCallStarted) -> Description:
    args = json.dumps(event.args, ensure_ascii=False, default=str)[:TOOL_ARGS_CHARS]
    return Description(f"{event.name} {args}", code="tool", mark="→")


@describe.register
def _approval_requested(event: ApprovalRequested) -> Description:
    return Description(
        f"{event.name} waits for your approval — {event.why}", level="warn", code="tool", mark="?"
    )


@describe.register
def _tool_approval(event: ToolApproval) -> Description | None:
    if event.decision != "denied":
        return None
    return Description(f"{event.name} denied — {event.reason}", level="warn", code="tool", mark="✖")


@describe.register
def _tool_result(event: ToolCallFinished) -> Description:
    return Description(
        f"{event.name}: {event.chars:,} chars",
        level="error" if event.is_error else "info",
        code="tool",
        mark="✖" if event.is_error else "✓",
    )


@describe.register
def _mcp_server(event: McpServerChanged) -> Description:
    if event.state == "ready":
        return Description(
            f"MCP server {event.name}: ready, {event.tools} tool{'' if event.tools == 1 else 's'}",
            code="mcp",
            mark="⚙",
        )
    return Description(
        f"MCP server {event.name}: {event.state}" + (f" — {event.reason}" if event.reason else ""),
        level="warn" if event.state in ("failed", "error") else "info",
        code="mcp",
        mark="⚙",
    )


@describe.register
def _cap_learned(event: CapLearned) -> Description:
    if event.assumed:
        return Description(
            f"assumed a cap of {format_size(event.cap_bytes)} for {event.endpoint} after a rejection "
            f"of unknown size",
            level="warn",
            code="cap",
        )
    rejected = f" from a rejection of {format_size(event.rejected_bytes)}" if event.rejected_bytes else ""
    return Description(
        f"learned a cap of {format_size(event.cap_bytes)} for {event.endpoint}{rejected}",
        level="warn",
        code="cap",
    )


@describe.register
def _fallback_moved(event: FallbackMoved) -> Description:
    partial = " — the partial answer is kept and continued there" if event.after_partial else ""
    return Description(
        f"{event.reason} → trying {event.to_route}{partial}",
        level="warn",
        code="fallback",
        title="fallback",
        mark="⇢",
    )


@describe.register
def _fallback_answered(event: FallbackAnswered) -> Description:
    return Description(event.text, code="fallback", title="fallback", mark="⇢")


@describe.register
def _memory_queued(event: MemoryQueued) -> Description:
    what = event.reason.split(":", 1)[0] or "the compaction"
    return Description(
        f"queued {event.messages} message{'s' if event.messages != 1 else ''} ({format_size(event.bytes)}) "
        f"for the memory worker before the {what} rewrites the view",
        code="memory",
        title="memory",
        mark="🧠",
    )


@describe.register
def _memory_distilled(event: MemoryDistilled) -> Description | None:
    if not event.facts:
        return None
    count = f"{len(event.facts)} fact{'s' if len(event.facts) != 1 else ''}"
    if event.mode == "auto":
        text = f"kept {count} in {event.path} (part of every request's system prompt)"
    else:
        text = f"{count} to review ({event.pending} waiting) — /memory review accepts, edits or rejects them"
    return Description(text, code="memory", title="memory", mark="🧠")
