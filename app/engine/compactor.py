"""Running a planned compaction: triggers, the summarizer call, hooks, commit, receipt, events.

The passes themselves are pure (`app.engine.compaction`); this module does the side
effects in order: PreCompact (may block auto/manual), the pipeline (live phase events,
Esc cancels), one transactional commit of the new view with its archive entries, the
receipt, the counters, PostCompact — or, when nothing changed, PostCompact `skipped`
and no new view.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

from app.engine.compaction.pipeline import PipelineResult, run_pipeline
from app.engine.notice_words import notice
from app.engine.receipts import make_receipt
from app.engine.summary_routes import summary_routes
from app.model.events import (
    Compaction,
    CompactionOutcome,
    CompactionPhase,
    CompactionStage,
    CompactionTrigger,
)
from app.model.notice_facts.compaction import CompactionHookBlocked, CompactionNotSaved, SummaryNoRoom

if TYPE_CHECKING:
    from app.engine.host import CompactorHost

HOOK_TRIGGERS = {"auto": "auto", "preflight": "auto", "manual": "manual", "recovery": "recovery"}


class Compactor:
    def __init__(self, engine: CompactorHost) -> None:
        self.engine = engine

    async def run(
        self,
        *,
        trigger: CompactionTrigger,
        target_bytes: int | None,
        instructions: str | None = None,
        cancel: asyncio.Event | None = None,
    ) -> PipelineResult | None:
        """Compact the active view toward `target_bytes`. Returns None when a hook blocked it."""
        engine, session, settings = self.engine, self.engine.session, self.engine.settings
        hook_trigger = HOOK_TRIGGERS.get(trigger, "auto")
        verdict = await engine.hooks.pre_compact(hook_trigger, instructions or "")
        if verdict.blocked:
            engine.emit(notice(CompactionHookBlocked(reason=verdict.reason)))
            return None
        if trigger != "recovery" and engine.native.supported:  # context_engine = "provider": ask it first
            native = await engine.native.compact(trigger, instructions, cancel)
            over_cap = (
                trigger == "preflight"
                and target_bytes is not None
                and native is not None
                and native.bytes_after > target_bytes
            )
            if native is not None and not over_cap:
                return native
            # not done, or still over a byte cap's target: the local pipeline runs on top
        started = time.monotonic()
        turn = session.turn
        max_tokens = engine.max_tokens
        ctx = engine.pass_context(turn, max_tokens, target_bytes=target_bytes)
        skips_left = int(session.flags.get("summary_skips_left", 0))
        skip_summary = skips_left > 0 and trigger != "manual"
        if skip_summary:
            session.set_flag("summary_skips_left", skips_left - 1)
        before = session.view.messages

        def on_phase(key: CompactionStage, text: str) -> None:
            engine.emit(CompactionPhase(trigger=trigger, phase=key, text=text))

        summarizer_window = engine.summarizer_window()
        routes = summary_routes(engine)
        result = await run_pipeline(
            before,
            ctx,
            trigger=trigger,
            summarizer=routes[0].ask,
            instructions=instructions,
            window_tokens=summarizer_window,
            skip_summary=skip_summary,
            on_phase=on_phase,
            cancel=cancel,
            context_engine=engine.context_engine(),
            summary_routes=routes,
        )
        for report in result.reports:
            if report.name == "summary" and report.counts.get("no_room"):
                engine.emit(
                    notice(
                        SummaryNoRoom(keep_messages=settings.nuclear_keep_messages, explanation=report.detail)
                    )
                )
        named: dict[str, Any] = {"engine": result.engine} if result.engine else {}
        elapsed = time.monotonic() - started
        keys = [e.key for e in result.entries]
        sizes = {
            "bytes_before": result.bytes_before,
            "bytes_after": result.bytes_after,
            "messages_before": len(before),
            "messages_after": len(result.messages),
        }
        if result.cancelled or not result.changed:
            outcome: CompactionOutcome = "skipped"
            session.write_receipt(
                make_receipt(
                    trigger=trigger,
                    method=result.method,
                    level=result.level,
                    messages_before=len(before),
                    messages_after=len(before),
                    bytes_before=result.bytes_before,
                    bytes_after=result.bytes_before,
                    outcome=outcome,
                    elapsed_seconds=elapsed,
                    session_id=session.id,
                    reason="cancelled" if result.cancelled else "nothing to compact",
                    **named,
                ),
            )
            await engine.hooks.post_compact(hook_trigger, outcome, sizes, [])
            engine.emit(
                Compaction(
                    trigger=trigger,
                    method=result.method,
                    outcome=outcome,
                    bytes_before=result.bytes_before,
                    bytes_after=result.bytes_before,
                    messages_before=len(before),
                    messages_after=len(before),
                    engine=result.engine,
                )
            )
            return result
        await session.drain()  # a view commit reads the database: our appends first, off the loop
        try:
            view = session.commit_view(result.messages, result.entries, reason=f"{trigger}:{result.method}")
        except Exception as exc:  # the store refused: the old view stays, say so
            engine.emit(notice(CompactionNotSaved(by_provider=False, error=str(exc))))
            await engine.hooks.post_compact(hook_trigger, "failed", sizes, keys)
            return result
        if result.summary_missed:
            session.set_flag("summary_skips_left", settings.summary_skip_after_miss)
        session.counters.add_compaction(trigger, result.level, result.bytes_before - result.bytes_after)
        session.save_counters()
        session.write_receipt(
            make_receipt(
                trigger=trigger,
                method=result.method,
                level=result.level,
                messages_before=len(before),
                messages_after=len(result.messages),
                bytes_before=result.bytes_before,
                bytes_after=result.bytes_after,
                provider_bytes_before=result.bytes_before,
                provider_bytes_after=result.bytes_after,
                outcome="applied",
                elapsed_seconds=elapsed,
                archive_keys=keys,
                session_id=session.id,
                **named,
            ),
        )
        await engine.hooks.post_compact(hook_trigger, "applied", sizes, keys)
        engine.emit(
            Compaction(
                trigger=trigger,
                method=result.method,
                outcome="applied",
                bytes_before=result.bytes_before,
                bytes_after=result.bytes_after,
                messages_before=len(before),
                messages_after=len(result.messages),
                level=result.level,
                archive_keys=tuple(keys),
                view_id=view.id,
                engine=result.engine,
            )
        )
        engine.view_changed(f"compaction:{trigger}")
        return result
