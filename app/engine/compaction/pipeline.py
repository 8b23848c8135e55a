"""The planned compaction pipeline and the recovery ladder's candidates.

Planned (`run_pipeline`), cheapest first, stopping as soon as the view fits `ctx.target_bytes`:

1. trim — microcompact, dedup of repeated reads, tool-result budgets (no model call);
2. summary (L2 planned) — unless `skip_summary` or no summarizer; one retry on a rejected answer;
3. L3 — nuclear + shrink-to-fit, when the summary was rejected twice or did not reach the target
   (or was not tried and the view is still over).

The pipeline is pure with respect to the session: it returns the new view and the archive
entries; the caller commits them together (or not at all), fires PreCompact/PostCompact, writes
the receipt, emits the events and keeps the skip-twice state (`summary_missed`). Cancelling
(the `cancel` event, or the summarizer's task cancelled) returns the original messages and no
entries. A run that changes nothing returns `changed=False` (outcome "skipped").

Recovery (`recovery_candidate`): the candidate view of one ladder level (DESIGN.md §6); the
caller measures the rebuilt request and sends it only if it is smaller than the rejected one.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from app.engine.compaction.assistant_cut import cut_long_assistant
from app.engine.compaction.budget import enforce_budgets
from app.engine.compaction.context import Messages, PassContext, PassResult, Report, merge_entries, same_view
from app.engine.compaction.dedup import dedup_reads
from app.engine.compaction.microcompact import microcompact
from app.engine.compaction.pairing import ensure_starts_with_user, repair_pairing
from app.engine.compaction.summarize import ContextEngine, Summarizer, SummaryRoute, summarize_pass
from app.engine.compaction.truncate import keep_recent, nuclear, shrink_to_fit
from app.model.archive import ArchiveEntry
from app.model.events import CompactionStage, CompactionTrigger
from app.model.messages import Message
from app.sizes import format_size

Pass = Callable[[Messages, PassContext], PassResult]
PhaseCallback = Callable[[CompactionStage, str], None]

# Phase keys given to `on_phase(key, text)`, in the order they can occur.
PHASES: tuple[CompactionStage, ...] = (
    "start",
    "trim",
    "summarize",
    "engine_fallback",
    "summary_applied",
    "summary_rejected",
    "nuclear",
    "done",
    "cancelled",
)

TRIM_PASSES: tuple[Pass, ...] = (
    microcompact,
    dedup_reads,
    enforce_budgets,
    repair_pairing,
    ensure_starts_with_user,
)
L3_PASSES: tuple[Pass, ...] = (repair_pairing, nuclear, shrink_to_fit)
L1_BUDGET_SCALE = 0.5


@dataclass(frozen=True)
class ChainResult:
    messages: Messages
    entries: list[ArchiveEntry]
    reports: list[Report]

    @property
    def changed(self) -> bool:
        return any(r.changed for r in self.reports)


@dataclass(frozen=True)
class PipelineResult:
    messages: Messages
    entries: list[ArchiveEntry]
    reports: list[Report]
    method: str  # none | trim | summary | L3
    level: int  # 0 trim (or nothing), 2 summary, 3 L3
    changed: bool
    summary_missed: bool  # a summary was asked for and the view still did not fit (skip-twice rule)
    reached_target: bool
    cancelled: bool
    bytes_before: int = 0
    bytes_after: int = 0
    summary_calls: int = 0
    phases: list[tuple[CompactionStage, str]] = field(default_factory=list)
    engine: str = ""  # who wrote the summary, when one was asked for: "local", "mcp:NAME", or a fallback

    @property
    def outcome(self) -> str:
        """What PostCompact and the receipt say: applied | skipped."""
        return "applied" if self.changed else "skipped"


def run_passes(messages: Sequence[Message], ctx: PassContext, passes: Sequence[Pass]) -> ChainResult:
    """Apply `passes` in order; each can look up the entries made before it (restores, originals)."""
    view = tuple(messages)
    made: list[ArchiveEntry] = []
    reports: list[Report] = []
    for step in passes:
        result = step(view, ctx.with_entries(made))
        reports.append(result.report)
        if result.changed:
            view = result.messages
            made = merge_entries(made, result.entries)
    return ChainResult(view, made, reports)


def recovery_candidate(level: int, messages: Sequence[Message], ctx: PassContext) -> ChainResult:
    """The candidate view for recovery level 1, 2 or 3 (DESIGN.md §6).

    L1: pairing repair, tool-result budgets at half (`budget_scale` × 0.5 unless the context is
    already scaled), assistant messages over 5,000 chars cut, user message first.
    L2: pairing repair, system + the last 10 non-system messages, the rest archived behind a notice.
    L3: pairing repair, system + the last 4 (each ≤ 4,000 chars), then shrink to `ctx.target_bytes`.
    """
    if level == 1:
        scaled = ctx if ctx.budget_scale < 1.0 else replace(ctx, budget_scale=L1_BUDGET_SCALE)
        passes: tuple[Pass, ...] = (
            lambda v, c: repair_pairing(v, c, reason="L1"),
            enforce_budgets,
            cut_long_assistant,
            lambda v, c: ensure_starts_with_user(v, c, reason="L1"),
        )
        return run_passes(messages, scaled, passes)
    if level == 2:
        return run_passes(messages, ctx, (lambda v, c: repair_pairing(v, c, reason="L2"), keep_recent))
    if level == 3:
        return run_passes(
            messages, ctx, (lambda v, c: repair_pairing(v, c, reason="L3"), nuclear, shrink_to_fit)
        )
    raise ValueError(f"recovery levels are 1, 2 and 3, not {level!r}")


class _Cancelled(Exception):
    pass


async def _await_unless_cancelled(task: asyncio.Task[PassResult], cancel: asyncio.Event | None) -> PassResult:
    """The task's result; `_Cancelled` when `cancel` is set first or the task was cancelled."""
    waiter = asyncio.ensure_future(cancel.wait()) if cancel is not None else None
    try:
        waitables = {task} if waiter is None else {task, waiter}
        done, _ = await asyncio.wait(waitables, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        task.cancel()
        if waiter is not None:
            waiter.cancel()
        raise
    if waiter is not None and not waiter.done():
        waiter.cancel()
    if task not in done:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
        raise _Cancelled
    if task.cancelled():
        raise _Cancelled
    return task.result()


def _size(n: int | None) -> str:
    return format_size(n)


async def run_pipeline(
    messages: Sequence[Message],
    ctx: PassContext,
    *,
    trigger: CompactionTrigger,
    summarizer: Summarizer | None = None,
    instructions: str | None = None,
    window_tokens: int,
    skip_summary: bool = False,
    on_phase: PhaseCallback | None = None,
    cancel: asyncio.Event | None = None,
    force_summary: bool | None = None,
    context_engine: ContextEngine | None = None,
    summary_routes: Sequence[SummaryRoute] = (),
) -> PipelineResult:
    """Compact `messages` toward `ctx.target_bytes`, cheapest first (see the module docstring).

    `trigger` is auto | manual | preflight | recovery | budget (only "manual" changes behaviour:
    a manual `/compact` summarizes even when the trims already fit, unless `force_summary` says
    otherwise). `window_tokens` is the summarizer's context window (its input is budgeted to half);
    `summary_routes` bound the summary request by each route's byte cap too (`summarize_pass`).
    """
    original = tuple(messages)
    target = ctx.target_bytes
    phases: list[tuple[CompactionStage, str]] = []
    reports: list[Report] = []

    def phase(key: CompactionStage, text: str) -> None:
        phases.append((key, text))
        if on_phase is not None:
            with contextlib.suppress(Exception):  # a broken listener never breaks a compaction
                on_phase(key, text)

    def measure(view: Messages) -> int:
        return ctx.measure(view)

    before = measure(original)

    def cancelled() -> PipelineResult:
        phase("cancelled", "✗ Compaction cancelled — history left as it was")
        return PipelineResult(
            messages=original,
            entries=[],
            reports=reports,
            method="none",
            level=0,
            changed=False,
            summary_missed=False,
            reached_target=target is None or before <= target,
            cancelled=True,
            bytes_before=before,
            bytes_after=before,
            summary_calls=summary_calls,
            phases=phases,
        )

    summary_calls = 0
    engine = ""
    goal = f" → target {_size(target)}" if target is not None else ""
    phase("start", f"📦 Compacting history ({len(original)} msgs, {_size(before)}{goal})")
    if cancel is not None and cancel.is_set():
        return cancelled()

    phase("trim", "🧹 Trim: microcompact, dedup, budgets (no LLM)…")
    trimmed = run_passes(original, ctx, TRIM_PASSES)
    reports.extend(trimmed.reports)
    view, entries = trimmed.messages, trimmed.entries
    size = measure(view)
    fits = target is None or size <= target
    method, level = ("trim", 0) if trimmed.changed else ("none", 0)

    manual = force_summary if force_summary is not None else trigger == "manual"
    summary_failed = summary_missed = False
    if (not fits or manual) and summarizer is not None and not skip_summary:
        if cancel is not None and cancel.is_set():
            return cancelled()
        via = f" via {context_engine.name}" if context_engine is not None else ""
        phase("summarize", f"🧠 Summarizing old messages{via}… (Esc cancels)")
        task = asyncio.ensure_future(
            summarize_pass(
                view,
                ctx.with_entries(entries),
                summarizer=summarizer,
                instructions=instructions,
                window_tokens=window_tokens,
                context_engine=context_engine,
                routes=summary_routes,
            )
        )
        try:
            result = await _await_unless_cancelled(task, cancel)
        except _Cancelled:
            return cancelled()
        reports.append(result.report)
        summary_calls = int(result.report.counts.get("calls", 0))
        engine = result.report.engine
        if engine.startswith("local (fallback"):
            phase(
                "engine_fallback",
                f"↩ {engine.removeprefix('local (fallback: ').rstrip(')')} — "
                f"the built-in summarizer writes this summary",
            )
        if result.report.ok:
            count_before = len(view)
            view, entries = result.messages, merge_entries(entries, result.entries)
            size = measure(view)
            fits = target is None or size <= target
            summary_missed = not fits
            method, level = "summary", 2
            by = f" by {engine}" if engine and engine != "local" and not engine.startswith("local (") else ""
            if result.report.route:
                by += f" on route {result.report.route}"
            phase(
                "summary_applied",
                f"✓ Summary applied{by} ({count_before} → {len(view)} msgs, {_size(before)} → {_size(size)})",
            )
        elif result.report.counts.get("no_room"):
            summary_failed = summary_missed = True
            phase(
                "summary_rejected",
                f"✗ No room for a summary under the byte cap ({result.report.detail}) — falling back to the "
                f"last {ctx.settings.nuclear_keep_messages} messages",
            )
        elif summary_calls:
            summary_failed = summary_missed = True
            phase(
                "summary_rejected",
                f"✗ Summary rejected ({result.report.detail}) — falling back to the last "
                f"{ctx.settings.nuclear_keep_messages} messages",
            )

    if (target is not None and not fits) or summary_failed:
        if cancel is not None and cancel.is_set():
            return cancelled()
        keep = ctx.settings.nuclear_keep_messages
        phase("nuclear", f"🔻 Last {keep}: keeping only the last {keep} messages, shrinking to fit…")
        nuked = run_passes(view, ctx.with_entries(entries), L3_PASSES)
        reports.extend(nuked.reports)
        if nuked.changed:
            view, entries = nuked.messages, merge_entries(entries, nuked.entries)
            size = measure(view)
            method, level = "L3", 3

    changed = not same_view(view, original)
    if not changed:
        view, entries, method, level = original, [], "none", 0
        size = before
    reached = target is None or size <= target
    if changed:
        phase(
            "done",
            f"✓ Compacted ({len(original)} → {len(view)} msgs, {_size(before)} → {_size(size)})"
            + ("" if reached else f" — still over the target {_size(target)}"),
        )
    else:
        phase("done", "✓ Nothing to compact")
    return PipelineResult(
        messages=view,
        entries=entries,
        reports=reports,
        method=method,
        level=level,
        changed=changed,
        summary_missed=summary_missed,
        reached_target=reached,
        cancelled=False,
        bytes_before=before,
        bytes_after=size,
        summary_calls=summary_calls,
        phases=phases,
        engine=engine,
    )
