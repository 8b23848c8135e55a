"""The L2 summary: render_segment, the quality gate, the pass (one retry), guided instructions."""

from __future__ import annotations

import re

import pytest
from compaction_helpers import Builder, big_text, check_view, ctx_for, fake_summarizer, run

from app.config import Settings
from app.engine.compaction.quality import quality_gate, summary_floor
from app.engine.compaction.render import name_call, render_segment, summarizer_budget
from app.engine.compaction.summarize import summarize_pass
from app.model.archive import archive_key, marker, markers_in
from app.model.messages import Message, Text, ToolCall
from app.model.prompts import SUMMARY_HEADER, SUMMARY_SYSTEM

GOOD = (
    "The user asked to fix the parser in app/parse.py; the assistant ran the tests (→ shell: pytest), "
    "found an off-by-one error and fixed it. Next: update the changelog."
)


# -- render_segment ----------------------------------------------------------------------------------


def test_summarizer_budget_is_half_the_window_with_a_floor():
    assert summarizer_budget(100_000, 20_000) == 200_000  # 100k tokens × 4 / 2
    assert summarizer_budget(5_000, 20_000) == 20_000


def test_render_fits_the_budget_and_gives_every_message_a_fair_share():
    b = Builder()
    b.user("short question")
    b.assistant(big_text(100_000, "huge"))
    for i in range(5):
        b.user(f"small {i}")
    out = render_segment(b.view, 20_000, lambda k: None)
    assert len(out) <= 20_000
    for i in range(5):
        assert f"small {i}" in out
    assert "short question" in out
    assert len(out) >= 19_000  # the huge message takes what the small ones leave


def test_over_long_messages_keep_head_and_tail_three_to_one():
    text = "".join(f"{i:06d}\n" for i in range(20_000))  # 140,000 chars, every line unique
    b = Builder()
    b.assistant(text)
    out = render_segment(b.view, 20_000, lambda k: None)
    body = out.split("\n", 1)[1]
    head, tail = re.split(r"\n\[… [\d,]+ chars, cut …\]\n", body)
    assert text.startswith(head) and text.endswith(tail)
    assert 2.9 <= len(head) / len(tail) <= 3.1


def test_stubs_are_restored_where_the_original_fits():
    small_original, big_original = big_text(900, "small-orig"), big_text(60_000, "big-orig")
    archive = {archive_key(small_original): small_original, archive_key(big_original): big_original}
    b = Builder()
    b.user("go")
    b.tool("shell", {"command": "cat small"}, "x")
    b.tool("shell", {"command": "cat big"}, "y")
    view = list(b.view)
    view[2] = view[2].derive(
        [
            type(view[2].parts[0])(
                view[2].tool_results[0].call_id,
                f"[Old tool result cleared — 20 lines, 900 chars, shell] "
                f"[full content recoverable via @recall {marker(archive_key(small_original))}]",
            )
        ],
        origin="stub",
    )
    view[4] = view[4].derive(
        [
            type(view[4].parts[0])(
                view[4].tool_results[0].call_id,
                f"[Old tool result cleared — 900 lines, 60,000 chars, shell] "
                f"[full content recoverable via @recall {marker(archive_key(big_original))}]",
            )
        ],
        origin="stub",
    )
    out = render_segment(view, 20_000, archive.get)
    assert small_original in out  # fits its share: restored
    assert big_original[:1000] not in out and "60,000 chars, shell" in out  # too big: the stub stays


def test_tool_calls_are_named():
    assert name_call(ToolCall("1", "shell", {"command": "ls -la"})) == "→ shell: ls -la"
    assert (
        name_call(ToolCall("2", "read_file", {"path": "a.py", "offset": 10, "limit": 50}))
        == "→ read_file: a.py (lines 10–60)"
    )
    assert name_call(ToolCall("3", "grep", {"pattern": "def ", "path": "app"})) == "→ grep: def in app"
    b = Builder()
    b.user("list")
    b.tool("shell", {"command": "ls -la"}, "a\nb")
    assert "→ shell: ls -la" in render_segment(b.view, 20_000, lambda k: None)
    assert "[Tool result: shell" in render_segment(b.view, 20_000, lambda k: None)


# -- quality gate -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        "I can't help with that.",
        "I cannot help summarize this conversation.",
        "I’m sorry, but I can’t do that.",
        "As an AI, I do not keep records of conversations, but here is what I can say.",
        "Sorry, I am unable to summarize this.",
        "I won't summarize private data.",
        "Here it is: as an AI language model I cannot summarize content like this " + "x" * 200,
    ],
)
def test_refusals_are_rejected(answer):
    ok, reason = quality_gate(answer, 10_000)
    assert not ok and reason.startswith("refusal")


def test_a_summary_quoting_the_user_is_not_a_refusal():
    summary = (
        "The user is debugging the build. " * 5 + 'They wrote: "I can\'t get the linker to work"; '
        "the assistant found a missing flag. " * 3
    )
    assert quality_gate(summary, 10_000) == (True, "ok")


def test_too_short_floor_scales_with_the_segment_and_is_capped_at_80():
    assert summary_floor(400) == 20
    assert quality_gate("x" * 19, 400)[0] is False
    assert quality_gate("x" * 20, 400) == (True, "ok")
    assert summary_floor(1_000_000) == 80
    ok, reason = quality_gate("y" * 79, 1_000_000)
    assert not ok and "too short" in reason and "floor 80" in reason
    assert quality_gate("y" * 80, 1_000_000) == (True, "ok")
    assert summary_floor(1_000_000, cap=120) == 120
    assert quality_gate("", 100)[0] is False


# -- the pass -----------------------------------------------------------------------------------------


def session(turns: int = 8) -> Builder:
    b = Builder()
    b.system()
    for i in range(turns):
        b.user(f"question {i}")
        b.tool("shell", {"command": f"make step{i}"}, big_text(2_000, f"o{i}"))
        b.assistant(f"answer {i}")
    return b


def test_summary_replaces_the_older_segment():
    b = session()
    calls = []
    ctx = ctx_for(b.view)
    out = run(summarize_pass(b.view, ctx, summarizer=fake_summarizer(GOOD, calls), window_tokens=50_000))
    assert out.report.ok and out.report.counts["calls"] == 1
    non_system = [m for m in b.view if m.role != "system"]
    summary = out.messages[1]
    assert out.messages[0] is b.view[0]
    assert summary.role == "user" and summary.meta.origin == "summary"
    assert summary.text.startswith(SUMMARY_HEADER + "\n" + GOOD)
    [entry] = [e for e in out.entries if e.reason == "summary"]
    assert summary.meta.archive_keys[0] == entry.key and marker(entry.key) in summary.text
    # the last 6 would start inside a tool group: the cut moves back to the call (7 kept)
    assert list(out.messages[2:]) == non_system[-7:]
    assert non_system[-7].tool_calls
    assert set(entry.source_ids) == {m.id for m in non_system[:-7]}
    system, text = calls[0]
    assert system == SUMMARY_SYSTEM
    assert "→ shell: make step0" in text
    check_view(b.view, b.view, out.messages, out.entries, {})


def test_verbatim_messages_stay_out_and_follow_the_summary():
    b = session(2)
    recalled = big_text(1_500, "recalled")
    b.user("recall")
    b.tool("recall", {"keys": "ccr:0123456789abcdef"}, recalled, verbatim=True)
    for i in range(4):
        b.user(f"more {i}")
        b.assistant("ok")
    calls = []
    out = run(
        summarize_pass(b.view, ctx_for(b.view), summarizer=fake_summarizer(GOOD, calls), window_tokens=50_000)
    )
    assert out.messages[1].meta.origin == "summary"
    after = out.messages[2]
    assert after.role == "user" and after.meta.preserve_verbatim and recalled in [p.text for p in after.parts]
    assert recalled not in calls[0][1]
    check_view(b.view, b.view, out.messages, out.entries, {})


def test_guided_instructions_reach_the_summarizer():
    b = session()
    calls = []
    run(
        summarize_pass(
            b.view,
            ctx_for(b.view),
            summarizer=fake_summarizer(GOOD, calls),
            instructions="keep every file path",
            window_tokens=50_000,
        )
    )
    assert "keep every file path" in calls[0][1]


def test_one_retry_after_a_rejected_answer():
    answers = iter(["I can't help with that.", GOOD])
    seen = []

    async def summarizer(system, text):
        seen.append(text)
        return next(answers)

    b = session()
    out = run(summarize_pass(b.view, ctx_for(b.view), summarizer=summarizer, window_tokens=50_000))
    assert out.report.ok and out.report.counts["calls"] == 2
    assert "previous answer was rejected: refusal" in seen[1]


def test_two_rejections_report_failure_and_change_nothing():
    b = session()
    calls = []
    out = run(
        summarize_pass(b.view, ctx_for(b.view), summarizer=fake_summarizer("ok", calls), window_tokens=50_000)
    )
    assert not out.report.ok and len(calls) == 2 and out.report.counts["calls"] == 2
    assert out.messages == b.view and out.entries == []
    assert "too short" in out.report.detail


def test_a_summarizer_error_counts_as_a_failed_attempt():
    async def broken(system, text):
        raise RuntimeError("gateway said no")

    b = session()
    out = run(summarize_pass(b.view, ctx_for(b.view), summarizer=broken, window_tokens=50_000))
    assert not out.report.ok and "gateway said no" in out.report.detail


def test_invented_markers_are_defanged_and_real_ones_kept():
    b = session()
    fake = "0123456789abcdef"
    real_text = b.messages[3].tool_results[0].content
    real = archive_key(real_text)
    answer = GOOD + f" See {marker(fake)} and {marker(real)}."
    out = run(
        summarize_pass(
            b.view,
            ctx_for(b.view, prior={real: real_text}),
            summarizer=fake_summarizer(answer),
            window_tokens=50_000,
        )
    )
    text = out.messages[1].text
    assert marker(fake) not in text and f"ccr:{fake}" in text
    assert marker(real) in text
    assert set(markers_in(text)) <= set(out.messages[1].meta.archive_keys)


def test_nothing_to_summarize():
    b = session(1)
    out = run(summarize_pass(b.view, ctx_for(b.view), summarizer=fake_summarizer(GOOD), window_tokens=50_000))
    assert not out.report.ok and out.report.counts["calls"] == 0


def test_summary_keep_messages_setting():
    b = session()
    out = run(
        summarize_pass(
            b.view,
            ctx_for(b.view, settings=Settings(summary_keep_messages=2)),
            summarizer=fake_summarizer(GOOD),
            window_tokens=50_000,
        )
    )
    # system + summary + the last 2, moved back to the call whose result is among them
    assert [m.role for m in out.messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert isinstance(out.messages[1].parts[0], Text) and isinstance(out.messages[1], Message)
