"""SVG snapshots of the inspector's main states (pytest-textual-snapshot).

Deterministic: fixed terminal sizes, a fixed clock in UTC, no blinking cursor, animations off
(the compaction spinner shows a still dot), request ids and archive contents fixed, workers
awaited — never a sleep. Update after an intended change with `--snapshot-update` and look at
the SVGs in `__snapshots__/test_panel_snapshots/`.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from app.model.events import (
    CapLearned,
    Compaction,
    CompactionPhase,
    HookRun,
    RecoveryStep,
    Rejection,
    RequestStarted,
    TurnStarted,
    UsageRecorded,
)
from tests.ui.test_panels import (
    WAF_EVIDENCE,
    WAF_REASON,
    InspectorApp,
    finished,
    make_engine,
    record_waf_story,
    seed_archive,
    settle,
    view,
)

NARROW = (68, 60)  # the inspector as it sits beside the chat: ~42% of a 160-column terminal
WIDE = (130, 46)


def learned_cap(engine) -> None:
    engine.state.learn_cap(
        engine.route.endpoint_id,
        316_800,
        rejected_bytes=422_400,
        kind="waf_block",
        reason=WAF_REASON,
        now=datetime(2026, 1, 1, 14, 1, 38, tzinfo=UTC),
    )


def test_empty_inspector_before_the_engine(snap_compare):
    assert snap_compare(InspectorApp(), terminal_size=NARROW)


def test_recovered_from_a_waf_block(snap_compare, tmp_path):
    """The gauge on the learned cap, the ladder recovered at L2, the Requests tab on the WAF 403: evidence, why."""
    engine = make_engine(tmp_path)
    record_waf_story(engine)
    learned_cap(engine)
    app = InspectorApp(engine)

    async def run_before(pilot) -> None:
        await settle(pilot)
        inspector = app.inspector
        inspector.dispatch(view(300_000, None, "none", tokens=75_000))
        inspector.dispatch(TurnStarted(turn=3, prompt="go on"))
        inspector.dispatch(RequestStarted("r-0001", "lab", "chat", 300_000))
        inspector.dispatch(finished("r-0001", 300_000, latency=812.0))
        inspector.dispatch(RequestStarted("r-0002", "lab", "chat", 422_400))
        inspector.dispatch(finished("r-0002", 422_400, 403, "waf_block", reason=WAF_REASON, latency=95.0))
        inspector.dispatch(Rejection("waf_block", 422_400, WAF_REASON, 403, tuple(WAF_EVIDENCE), True, True))
        inspector.dispatch(CapLearned(316_800, 422_400, "lab default", WAF_REASON))
        inspector.dispatch(
            RecoveryStep(
                1,
                1,
                3,
                422_400,
                430_000,
                "not_smaller",
                "waf_block",
                "L1 candidate (419.9 KB) is not smaller than the rejected request; not sent",
            )
        )
        inspector.dispatch(
            RecoveryStep(2, 2, 3, 422_400, 120_000, "sending", "waf_block", "L2: 30 → 11 messages")
        )
        inspector.dispatch(RequestStarted("r-0003", "lab", "chat", 120_000, attempt=2, level=2))
        inspector.dispatch(finished("r-0003", 120_000, level=2, latency=640.0))
        inspector.dispatch(
            RecoveryStep(2, 2, 3, 422_400, 120_000, "succeeded", "waf_block", "recovered at L2")
        )
        inspector.dispatch(
            Compaction(
                "recovery", "L2", "applied", 422_400, 120_000, 30, 11, level=2, archive_keys=("d" * 16,)
            )
        )
        # the engine's ViewChanged says where the cap came from (the panels never ask the engine)
        inspector.dispatch(
            replace(view(122_880, 316_800, "learned", tokens=30_720), cap_detail=engine.cap_detail())
        )
        await settle(pilot)
        inspector.show_panel("requests")
        await pilot.pause()
        inspector.requests.table.move_cursor(row=1)
        await settle(pilot)

    assert snap_compare(app, terminal_size=NARROW, run_before=run_before)
    engine.session.store.close()


def test_payload_over_the_cap_and_ladder_exhausted(snap_compare):
    app = InspectorApp(initial_tab="compaction")

    async def run_before(pilot) -> None:
        inspector = app.inspector
        inspector.dispatch(view(2_000_000, 1_048_576, "configured", tokens=190_000))
        for n, (size, kind) in enumerate(
            [
                (600_000, None),
                (900_000, None),
                (1_300_000, "payload_too_large"),
                (1_000_000, "payload_too_large"),
                (700_000, "payload_too_large"),
                (80_000, "rate_limit"),
                (650_000, None),
            ]
        ):
            inspector.dispatch(finished(f"r{n}", size, 413 if kind else 200, kind))
        inspector.dispatch(
            Rejection(
                "payload_too_large",
                1_300_000,
                "Request body too large (nginx): 413 Payload Too Large (HTML page)",
                413,
                ("status 413",),
                True,
                True,
            )
        )
        for attempt, size in ((1, 1_150_000), (2, 990_000)):
            inspector.dispatch(
                RecoveryStep(
                    attempt, attempt, 3, 1_300_000, size, "sending", "payload_too_large", f"L{attempt}"
                )
            )
            inspector.dispatch(finished(f"a{attempt}", size, 413, "payload_too_large", level=attempt))
        inspector.dispatch(
            RecoveryStep(
                3,
                3,
                3,
                1_300_000,
                None,
                "exhausted",
                "payload_too_large",
                "Request body too large (nginx): 413 Payload Too Large (HTML page)",
            )
        )
        await settle(pilot)

    assert snap_compare(app, terminal_size=NARROW, run_before=run_before)


def test_compaction_running(snap_compare):
    app = InspectorApp(initial_tab="compaction")

    async def run_before(pilot) -> None:
        inspector = app.inspector
        inspector.dispatch(view(3_900_000, 5_242_880, "configured", tokens=980_000, window=1_000_000))
        inspector.dispatch(
            CompactionPhase("preflight", "start", "📦 Compacting history (23 msgs, 4.2 MB → target 2.0 MB)")
        )
        inspector.dispatch(
            CompactionPhase("preflight", "trim", "🧹 Trim: microcompact, dedup, budgets (no LLM)…")
        )
        inspector.dispatch(
            CompactionPhase("preflight", "summarize", "🧠 Summarizing old messages… (Esc cancels)")
        )
        await settle(pilot)

    assert snap_compare(app, terminal_size=NARROW, run_before=run_before)


def test_compaction_done_with_history(snap_compare):
    app = InspectorApp(initial_tab="compaction")

    async def run_before(pilot) -> None:
        inspector = app.inspector
        inspector.dispatch(
            Compaction("auto", "trim", "applied", 900_000, 610_000, 40, 40, archive_keys=("a" * 16,))
        )
        for phase, text in (
            ("start", "📦 Compacting history (23 msgs, 4.2 MB → target 2.0 MB)"),
            ("trim", "🧹 Trim: microcompact, dedup, budgets (no LLM)…"),
            ("summarize", "🧠 Summarizing old messages… (Esc cancels)"),
            ("summary_applied", "✓ Summary applied (23 → 9 msgs, 4.2 MB → 1.8 MB)"),
            ("done", "✓ Compacted (23 → 9 msgs, 4.2 MB → 1.8 MB)"),
        ):
            inspector.dispatch(CompactionPhase("preflight", phase, text))
        inspector.dispatch(
            Compaction(
                "preflight",
                "summary",
                "applied",
                4_404_019,
                1_887_437,
                23,
                9,
                level=2,
                archive_keys=("b" * 16, "c" * 16),
            )
        )
        await settle(pilot)

    assert snap_compare(app, terminal_size=NARROW, run_before=run_before)


def test_archive_browser_with_preview(snap_compare, tmp_path):
    engine = make_engine(tmp_path)
    seed_archive(engine.session)
    app = InspectorApp(engine)

    async def run_before(pilot) -> None:
        await settle(pilot)
        app.inspector.dispatch(view(2_048, None, "none", tokens=512))
        app.inspector.show_panel("archive")
        await pilot.pause()
        await pilot.press("down")
        await settle(pilot)

    assert snap_compare(app, terminal_size=NARROW, run_before=run_before)
    engine.session.store.close()


def test_archive_search(snap_compare, tmp_path):
    engine = make_engine(tmp_path)
    seed_archive(engine.session)
    app = InspectorApp(engine, initial_tab="archive")

    async def run_before(pilot) -> None:
        await settle(pilot)
        app.inspector.dispatch(view(2_048, None, "none", tokens=512))
        app.inspector.archive.search.value = "waf"
        await settle(pilot)

    assert snap_compare(app, terminal_size=NARROW, run_before=run_before)
    engine.session.store.close()


def test_wide_inspector_with_hooks(snap_compare):
    app = InspectorApp(initial_tab="hooks")

    async def run_before(pilot) -> None:
        inspector = app.inspector
        inspector.wide = True
        inspector.dispatch(view(700_000, 3_145_728, "configured", tokens=175_000))
        inspector.dispatch(HookRun("SessionStart", "*", "./hooks/start.sh", 12.4, 0, "ok"))
        inspector.dispatch(HookRun("UserPromptSubmit", "*", "python3 hooks/redact_prompt.py", 31.0, 0, "ok"))
        inspector.dispatch(
            HookRun(
                "PreToolUse",
                "Bash",
                "python3 hooks/guard.py --strict",
                48.0,
                2,
                "block",
                output="rm -rf outside the workspace is not allowed",
            )
        )
        inspector.dispatch(
            HookRun("PostToolUse", "*", "./hooks/log.sh", 3.0, 1, "error", output="log dir missing")
        )
        inspector.dispatch(HookRun("PreCompact", "*", "./hooks/slow.sh", 60_000.0, None, "timeout"))
        inspector.dispatch(RequestStarted("r1", "lab", "chat", 700_000))
        inspector.dispatch(UsageRecorded(175_000, 2_400, 120_000, 8_000, 0.1234))
        inspector.dispatch(UsageRecorded(40_000, 1_200, 0, 0, 0.0210, purpose="summary"))
        await settle(pilot)

    assert snap_compare(app, terminal_size=WIDE, run_before=run_before)


def test_cost_panel(snap_compare, tmp_path):
    engine = make_engine(tmp_path)
    counters = engine.session.counters
    counters.requests, counters.failed_requests, counters.retries = 14, 3, 2
    counters.input_tokens, counters.output_tokens = 412_345, 9_876
    counters.cache_read_tokens, counters.cache_write_tokens = 300_000, 40_000
    counters.cost_usd, counters.unpriced_requests = 1.2345, 0
    counters.summarizer_calls, counters.summarizer_input_tokens = 2, 61_000
    counters.summarizer_output_tokens, counters.summarizer_cost_usd = 2_100, 0.0456
    counters.add_compaction("preflight", 2, 2_400_000)
    counters.add_compaction("auto", 0, 150_000)
    counters.add_compaction("recovery", 3, 300_000)
    counters.add_rejection("waf_block")
    counters.add_rejection("payload_too_large")
    counters.add_rejection("rate_limit")
    counters.recoveries_ok, counters.recoveries_failed = 1, 1
    app = InspectorApp(engine, initial_tab="cost")

    async def run_before(pilot) -> None:
        await settle(pilot)
        app.inspector.dispatch(view(122_880, 316_800, "learned", tokens=30_720))
        app.inspector.dispatch(
            Rejection("waf_block", 422_400, WAF_REASON, 403, tuple(WAF_EVIDENCE), True, True)
        )
        await settle(pilot)

    assert snap_compare(app, terminal_size=NARROW, run_before=run_before)
    engine.session.store.close()
