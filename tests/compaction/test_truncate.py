"""L2 keep-recent (10), L3 nuclear (4 × 4,000 chars), shrink-to-fit and the quarter rule."""

from __future__ import annotations

import re

from compaction_helpers import Builder, big_text, check_view, ctx_for

from app.config import Settings
from app.engine.compaction.pairing import pairing_problems
from app.engine.compaction.truncate import keep_recent, nuclear, shrink_to_fit
from app.engine.compaction.verbatim import limit_verbatim
from app.engine.prompts import COMPACTED_NOTICE, DROPPED_NOTICE
from app.model.archive import archive_key, marker, markers_in
from app.model.messages import Text


def chat(turns: int, size: int = 200) -> Builder:
    b = Builder()
    b.system()
    for i in range(turns):
        b.user(f"question {i} " + big_text(size, f"q{i}"))
        b.assistant(f"answer {i} " + big_text(size, f"a{i}"))
    return b


def test_keep_recent_keeps_system_and_the_last_10():
    b = chat(15)
    out = keep_recent(b.view, ctx_for(b.view))
    non_system = [m for m in b.view if m.role != "system"]
    assert out.messages[0] is b.view[0]
    assert list(out.messages[2:]) == non_system[-10:]
    notice = out.messages[1]
    [entry] = out.entries
    assert notice.role == "user" and notice.meta.origin == "notice"
    assert notice.text == DROPPED_NOTICE.format(count=20, markers=marker(entry.key))
    assert entry.reason == "L2"
    assert set(entry.source_ids) == {m.id for m in non_system[:20]}
    for m in non_system[:20]:
        assert m.text in entry.content
    check_view(b.view, b.view, out.messages, out.entries, {})


def test_keep_recent_never_splits_a_tool_group_and_keeps_verbatim():
    b = chat(6)
    recalled_text = big_text(800, "recalled")
    b.user("recall")
    _, recalled = b.tool("recall", {"keys": "ccr:0123456789abcdef"}, recalled_text, verbatim=True)
    b.user("use them")
    b.assistant("parallel", [])
    b.messages.pop()
    from app.model.messages import ToolCall

    calls = [ToolCall(f"c{i}", "shell", {"command": f"echo {i}"}) for i in range(4)]
    b.assistant("parallel", calls)
    for c in calls:
        b.result(c.id, "out " + c.id)
    b.user("thanks")
    b.assistant("done")
    settings = Settings(emergency_keep_messages=5)
    out = keep_recent(b.view, ctx_for(b.view, settings=settings))
    assert pairing_problems(out.messages) == []
    kept_roles = [m.role for m in out.messages]
    assert kept_roles[-7:] == ["assistant", "tool", "tool", "tool", "tool", "user", "assistant"]
    reappended = [m for m in out.messages if m.meta.preserve_verbatim]
    assert len(reappended) == 1 and reappended[0].role == "user"
    assert recalled_text in [p.text for p in reappended[0].parts]
    assert reappended[0].meta.source_ids == (recalled.id,)
    check_view(b.view, b.view, out.messages, out.entries, {})


def test_keep_recent_with_few_messages_changes_nothing():
    b = chat(3)
    assert not keep_recent(b.view, ctx_for(b.view)).changed


def test_nuclear_keeps_the_last_4_capped_at_4000_chars():
    b = chat(6, size=9_000)
    out = nuclear(b.view, ctx_for(b.view))
    non_system = [m for m in b.view if m.role != "system"]
    assert out.messages[0] is b.view[0]
    notice = out.messages[1]
    assert notice.text.startswith(COMPACTED_NOTICE)
    kept = out.messages[2:]
    assert [m.meta.source_ids for m in kept] == [(m.id,) for m in non_system[-4:]]
    for new, old in zip(kept, non_system[-4:], strict=True):
        assert len(new.text) <= 4_000
        assert archive_key(old.text) in markers_in(new.text)
    segment_entry = next(e for e in out.entries if e.key == notice.meta.archive_keys[0])
    assert segment_entry.reason == "L3"
    assert {e.reason for e in out.entries} == {"L3"}
    assert {e.content for e in out.entries} >= {m.text for m in non_system[-4:]}  # archived before the cut
    assert re.search(r"\[full content recoverable via @recall \[\[ccr:[0-9a-f]{16}\]\]\]$", notice.text)
    check_view(b.view, b.view, out.messages, out.entries, {})


def test_nuclear_keeps_verbatim_whole():
    b = chat(2)
    content = big_text(9_000, "keep me")
    b.user("recall")
    b.tool("recall", {"keys": "ccr:0123456789abcdef"}, content, verbatim=True)
    out = nuclear(b.view, ctx_for(b.view))
    assert any(
        m.meta.preserve_verbatim and content in [p.content for p in m.tool_results] for m in out.messages
    )


def test_shrink_cuts_the_largest_first_and_never_the_system():
    b = Builder()
    b.system("S" * 30_000)
    b.user("a " + big_text(60_000, "big"))
    b.assistant("b " + big_text(20_000, "mid"))
    b.user("c " + big_text(5_000, "small"))
    view = b.view
    ctx = ctx_for(view)
    size = ctx.measure(view)
    target = size - 30_000  # cutting only the largest is enough
    out = shrink_to_fit(view, ctx_for(view, target=target))
    assert out.report.ok and ctx.measure(out.messages) <= target
    assert out.messages[0] is view[0]
    assert out.messages[2] is view[2] and out.messages[3] is view[3]
    assert out.messages[1] is not view[1]
    assert [e.reason for e in out.entries] == ["shrink"]
    check_view(view, view, out.messages, out.entries, {})


def test_shrink_reaches_tight_targets_by_cutting_several():
    b = Builder()
    b.system()
    for i in range(4):
        b.user(big_text(30_000, f"u{i}"))
        b.assistant(big_text(30_000, f"a{i}"))
    view = b.view
    out = shrink_to_fit(view, ctx_for(view, target=40_000))
    assert out.report.ok and ctx_for(view).measure(out.messages) <= 40_000
    check_view(view, view, out.messages, out.entries, {})


def test_shrink_terminates_and_reports_when_it_cannot_fit():
    b = Builder()
    b.system("S" * 50_000)
    b.user(big_text(10_000))
    out = shrink_to_fit(b.view, ctx_for(b.view, target=20_000))
    assert not out.report.ok
    assert "cannot shrink below" in out.report.detail
    assert out.messages[0] is b.view[0]


def test_shrink_leaves_verbatim_alone_under_a_quarter():
    b = Builder()
    b.system()
    b.user("go")
    b.tool("recall", {"keys": "ccr:0123456789abcdef"}, big_text(5_000, "r"), verbatim=True)
    b.user(big_text(50_000, "big"))
    out = shrink_to_fit(b.view, ctx_for(b.view, target=30_000))
    assert out.messages[3] is b.view[3]


def test_quarter_rule_rearchives_the_oldest_verbatim_first():
    b = Builder()
    b.system()
    contents = [("x" * 99 + "\n") * 100 for _ in range(3)]
    contents = [f"{i}" + c for i, c in enumerate(contents)]
    for i, content in enumerate(contents):
        b.user(f"recall {i}")
        b.tool("recall", {"keys": f"ccr:{i:016x}"}, content, verbatim=True)
    view = b.view
    out = limit_verbatim(view, ctx_for(view, target=44_000))  # a quarter: 11,000 (each holds 10,001)
    verbatim = [m for m in out.messages if m.meta.preserve_verbatim]
    assert [m.tool_results[0].content for m in verbatim] == [contents[2]]
    stubs = [m for m in out.messages if m.meta.origin == "stub"]
    assert len(stubs) == 2 and not any(m.meta.preserve_verbatim for m in stubs)
    for stub, content in zip(stubs, contents[:2], strict=True):
        assert markers_in(stub.tool_results[0].content) == [archive_key(content)]
    assert {e.content for e in out.entries} == set(contents[:2])
    check_view(view, view, out.messages, out.entries, {}, verbatim_may_move=True)


def test_shrink_applies_the_quarter_rule_so_it_converges():
    b = Builder()
    b.system()
    b.user("go")
    b.tool("recall", {"keys": "ccr:0123456789abcdef"}, big_text(40_000, "r"), verbatim=True)
    out = shrink_to_fit(b.view, ctx_for(b.view, target=20_000))
    assert out.report.ok
    assert not any(m.meta.preserve_verbatim for m in out.messages)


def test_nuclear_notice_carries_markers_of_dropped_stubs():
    b = chat(6)
    original = b.messages[3].text
    key = archive_key(original)
    stub = b.messages[3].derive(
        [Text(f"[stub] [full content recoverable via @recall {marker(key)}]")],
        origin="stub",
        archive_keys=(key,),
    )
    view = tuple(stub if m is b.messages[3] else m for m in b.view)
    out = nuclear(view, ctx_for(b.view, prior={key: original}))
    assert marker(key) in out.messages[1].text
    check_view(b.view, view, out.messages, out.entries, {key: original})


def test_l2_and_l3_keep_the_latest_summary_in_view():
    b = chat(8)
    summary = b.messages[1].derive(
        "[Summary of earlier conversation]\nall about parsers " * 3,
        origin="summary",
        source_ids=(b.messages[1].id,),
    )
    view = (b.view[0], summary) + b.view[2:]
    prior = {archive_key(b.messages[1].text): b.messages[1].text}  # what the summary stands for
    for step in (keep_recent, nuclear):
        out = step(view, ctx_for(b.view, prior=prior))
        assert out.messages[1].meta.origin == "notice"
        assert out.messages[2] is summary
        check_view(b.view, view, out.messages, out.entries, prior)
