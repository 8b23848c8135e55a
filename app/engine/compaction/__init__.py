"""Planned compaction: pure passes from a view to a new view plus archive entries and a report.

ctx = PassContext(settings=..., turn=session.turn, measure=..., target_bytes=...,
                  archive_lookup=..., is_master=session.is_master, session_folder=session.folder)
result = await run_pipeline(view.messages, ctx, trigger="auto", summarizer=..., window_tokens=...)
if result.changed: session.commit_view(result.messages, result.entries, reason=...)

candidate = recovery_candidate(level, view.messages, ctx)   # the recovery ladder, L1..L3
"""

from app.engine.compaction.assistant_cut import cut_long_assistant
from app.engine.compaction.budget import enforce_budgets
from app.engine.compaction.context import JsonMeasure, PassContext, PassResult, Report
from app.engine.compaction.dedup import dedup_reads
from app.engine.compaction.microcompact import microcompact
from app.engine.compaction.pairing import ensure_starts_with_user, pairing_problems, repair_pairing
from app.engine.compaction.pipeline import (
    ChainResult,
    PipelineResult,
    recovery_candidate,
    run_passes,
    run_pipeline,
)
from app.engine.compaction.quality import quality_gate
from app.engine.compaction.render import render_segment
from app.engine.compaction.summarize import summarize_pass
from app.engine.compaction.truncate import keep_recent, nuclear, shrink_to_fit
from app.engine.compaction.verbatim import limit_verbatim

__all__ = [
    "ChainResult",
    "JsonMeasure",
    "PassContext",
    "PassResult",
    "PipelineResult",
    "Report",
    "cut_long_assistant",
    "dedup_reads",
    "enforce_budgets",
    "ensure_starts_with_user",
    "keep_recent",
    "limit_verbatim",
    "microcompact",
    "nuclear",
    "pairing_problems",
    "quality_gate",
    "recovery_candidate",
    "render_segment",
    "repair_pairing",
    "run_passes",
    "run_pipeline",
    "shrink_to_fit",
    "summarize_pass",
]
