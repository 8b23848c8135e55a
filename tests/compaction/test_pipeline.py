"""The planned pipeline: cheapest first, summary with one retry then L3, cancel, skipped, phases."""

from __future__ import annotations

import asyncio
import dataclasses
import re

from compaction_helpers import Builder, big_text, check_view, ctx_for, fake_summarizer, run

from app.config import Settings
from app.engine.compaction.pipeline import recovery_candidate, run_pipeline

GOOD = (
    "The user asked for a sequence of build steps; each step ran make and produced logs in out/. "
    "All passed. Next: release."
)


def session(turns: int = 12, result_size: int = 6_000) -> Builder:
    b = Builder()
    b.system()
    for i in range(turns):
        b.user(f"step {i}")
        b.tool("shell", {"command": f"make step{i}"}, big_text(result_size, f"log{i}"))
        b.assistant(f"step {i} done " + big_text(300, f"a{i}"))
    return b


def pipeline(view, *, target=None, turn=None, **kw):
    ctx = ctx_for(view, target=target, turn=turn)
    kw.setdefault("trigger", "auto")
    kw.setdefault("window_tokens", 50_000)
    return run(run_pipeline(view, ctx, **kw)), ctx


def test_nothing_to_do_is_skipped():
    b = session(2, 500)
    phases = []
    result, _ = pipeline(
        b.view, target=10**9, summarizer=fake_summarizer(GOOD), on_phase=lambda k, t: phases.append(k)
    )
    assert not result.changed and result.outcome == "skipped"
    assert result.messages == b.view and result.entries == [] and result.method == "none"
    assert result.reached_target and not result.cancelled
    assert phases == ["start", "trim", "done"]


def test_trims_alone_reach_the_target_without_calling_the_summarizer():
    b = session()
    calls = []
    ctx0 = ctx_for(b.view)
    result, ctx = pipeline(
        b.view, target=int(ctx0.measure(b.view) * 0.6), summarizer=fake_summarizer(GOOD, calls)
    )
    assert result.changed and result.method == "trim" and result.level == 0
    assert calls == [] and result.reached_target
    assert any(r.name == "microcompact" and r.changed for r in result.reports)
    check_view(b.view, b.view, result.messages, result.entries, {})


def test_summary_applied_with_the_seed_phase_texts():
    b = session()
    texts = []
    ctx0 = ctx_for(b.view)
    target = 22_000  # the trims leave ~33 KB; the summary brings it to ~18 KB
    result, ctx = pipeline(
        b.view, target=target, summarizer=fake_summarizer(GOOD), on_phase=lambda k, t: texts.append(t)
    )
    assert result.method == "summary" and result.level == 2, [r.line for r in result.reports]
    assert result.reached_target and not result.summary_missed and result.summary_calls == 1
    assert re.fullmatch(r"📦 Compacting history \(\d+ msgs, [\d.]+ KB → target [\d.]+ KB\)", texts[0])
    assert texts[1] == "🧹 Trim: microcompact, dedup, budgets (no LLM)…"
    assert texts[2] == "🧠 Summarizing old messages… (Esc cancels)"
    assert re.fullmatch(r"✓ Summary applied \(\d+ → \d+ msgs, [\d.]+ KB → [\d.]+ KB\)", texts[3])
    assert ctx0.measure(result.messages) <= target
    check_view(b.view, b.view, result.messages, result.entries, {})


def test_two_rejections_fall_back_to_l3():
    b = session()
    calls = []
    result, ctx = pipeline(
        b.view, target=9_000, summarizer=fake_summarizer("I cannot help with that.", calls)
    )
    assert len(calls) == 2
    assert result.method == "L3" and result.level == 3 and result.summary_missed
    assert any(r.name == "summary" and not r.ok for r in result.reports)
    assert any(r.name == "nuclear" and r.changed for r in result.reports)
    check_view(b.view, b.view, result.messages, result.entries, {})


def test_a_summary_that_misses_the_target_goes_on_to_l3_and_is_flagged():
    b = session()
    result, ctx = pipeline(b.view, target=2_500, summarizer=fake_summarizer(GOOD))
    assert result.summary_missed and result.method == "L3"
    assert [r.name for r in result.reports if r.changed][-1] in ("nuclear", "shrink")
    check_view(b.view, b.view, result.messages, result.entries, {})


def test_skip_summary_and_no_summarizer_go_straight_to_l3():
    b = session()
    calls = []
    result, _ = pipeline(b.view, target=9_000, summarizer=fake_summarizer(GOOD, calls), skip_summary=True)
    assert calls == [] and result.method == "L3" and not result.summary_missed
    result, _ = pipeline(b.view, target=9_000)
    assert result.method == "L3"
    check_view(b.view, b.view, result.messages, result.entries, {})


def test_guided_compact_summarizes_with_the_instructions_even_when_it_fits():
    b = session(10, 500)
    calls = []
    result, _ = pipeline(
        b.view,
        trigger="manual",
        target=10**9,
        summarizer=fake_summarizer(GOOD, calls),
        instructions="focus on the failing tests",
    )
    assert result.method == "summary"
    assert "focus on the failing tests" in calls[0][1]


def test_cancel_during_the_summary_returns_the_original():
    b = session()
    cancel = asyncio.Event()
    phases = []

    async def slow(system, text):
        cancel.set()  # the user presses Esc while the summarizer is working
        await asyncio.Event().wait()
        return GOOD

    result, _ = pipeline(
        b.view, target=9_000, summarizer=slow, cancel=cancel, on_phase=lambda k, t: phases.append(k)
    )
    assert result.cancelled and not result.changed
    assert result.messages == b.view and result.entries == []
    assert phases[-1] == "cancelled"


def test_a_cancelled_summarizer_task_returns_the_original():
    b = session()

    async def cancelled(system, text):
        raise asyncio.CancelledError

    result, _ = pipeline(b.view, target=9_000, summarizer=cancelled)
    assert result.cancelled and result.messages == b.view and result.entries == []


def test_cancel_before_start():
    b = session()
    cancel = asyncio.Event()
    cancel.set()
    result, _ = pipeline(b.view, target=9_000, cancel=cancel, summarizer=fake_summarizer(GOOD))
    assert result.cancelled and result.messages == b.view


def test_the_caller_can_cancel_the_pipeline_task():
    b = session()
    started = asyncio.Event()

    async def waits(system, text):
        started.set()
        await asyncio.Event().wait()
        return GOOD

    async def scenario():
        task = asyncio.ensure_future(
            run_pipeline(
                b.view, ctx_for(b.view, target=9_000), trigger="auto", summarizer=waits, window_tokens=50_000
            )
        )
        await started.wait()
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            return "cancelled"
        return "finished"

    assert run(scenario()) == "cancelled"


def test_broken_phase_listener_does_not_break_compaction():
    b = session()

    def listener(key, text):
        raise RuntimeError("ui went away")

    result, _ = pipeline(b.view, target=9_000, summarizer=fake_summarizer(GOOD), on_phase=listener)
    assert result.changed


# -- recovery candidates ------------------------------------------------------------------------------


def test_l1_halves_budgets_and_cuts_long_assistant_messages():
    b = Builder()
    b.system()
    b.user("go")
    b.tool("shell", {"command": "x"}, big_text(15_000, "r"))
    b.assistant(big_text(6_000, "long"))
    ctx = ctx_for(b.view)
    out = recovery_candidate(1, b.view, ctx)
    assert len(out.messages[3].tool_results[0].content) <= 10_000
    assert len(out.messages[4].text) <= 5_000
    assert {e.reason for e in out.entries} == {"budget", "L1"}
    assert ctx.budget_scale == 1.0  # the caller's context is not changed
    check_view(b.view, b.view, out.messages, out.entries, {})


def test_l2_and_l3_candidates():
    b = session(8, 2_000)
    ctx = ctx_for(b.view, target=6_000)
    l2 = recovery_candidate(2, b.view, ctx)
    assert len([m for m in l2.messages if m.role != "system"]) <= 12
    l3 = recovery_candidate(3, b.view, ctx)
    assert ctx.measure(l3.messages) <= 6_000
    for out in (l2, l3):
        check_view(b.view, b.view, out.messages, out.entries, {})


def test_settings_numbers_are_honoured():
    b = session(8, 2_000)
    ctx = dataclasses.replace(ctx_for(b.view), settings=Settings(emergency_keep_messages=3))
    l2 = recovery_candidate(2, b.view, ctx)
    assert [m.role for m in l2.messages] == ["system", "user", "assistant", "tool", "assistant"]
