"""Tool-result budgets: 20,000 per result, 200,000 per turn, halved at L1, spill files."""

from __future__ import annotations

import dataclasses
import os
import stat

from compaction_helpers import Builder, big_text, check_view, ctx_for

from app.config import Settings
from app.engine.compaction.budget import enforce_budgets
from app.model.archive import archive_key, markers_in
from app.tools.budget import spill_path_for


def one_result(size: int):
    b = Builder()
    b.system()
    b.user("go")
    _, r = b.tool("shell", {"command": "make"}, big_text(size, "out"))
    b.assistant("done")
    return b, r


def test_per_result_limit_keeps_head_and_tail_and_archives():
    b, r = one_result(20_001)
    out = enforce_budgets(b.view, ctx_for(b.view))
    content = out.messages[3].tool_results[0].content
    original = r.tool_results[0].content
    assert len(content) <= 20_000
    assert content[:10_000] == original[:10_000]
    assert markers_in(content) == [archive_key(original)]
    assert [e.reason for e in out.entries] == ["budget"]
    check_view(b.view, b.view, out.messages, out.entries, {})


def test_at_the_limit_nothing_changes():
    b, _ = one_result(20_000)
    assert not enforce_budgets(b.view, ctx_for(b.view)).changed


def test_budget_scale_halves_the_limits():
    b, _ = one_result(15_000)
    ctx = ctx_for(b.view)
    assert not enforce_budgets(b.view, ctx).changed
    out = enforce_budgets(b.view, dataclasses.replace(ctx, budget_scale=0.5))
    assert len(out.messages[3].tool_results[0].content) <= 10_000
    assert "over 10,000 chars" in out.report.line


def test_spill_file_named_in_the_preview(tmp_path):
    b, r = one_result(30_000)
    out = enforce_budgets(b.view, dataclasses.replace(ctx_for(b.view), session_folder=tmp_path))
    content = out.messages[3].tool_results[0].content
    original = r.tool_results[0].content
    path = spill_path_for("shell", original, tmp_path)  # the same file the tool itself would write
    assert f"full output saved to {path}" in content
    assert path.read_text(encoding="utf-8") == original
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert out.report.counts["spilled"] == 1


def test_turn_budget_cuts_the_largest_results_first():
    b = Builder()
    b.system()
    b.user("many")
    _, big = b.tool("shell", {"command": "a"}, big_text(150_000, "a"))
    _, mid = b.tool("shell", {"command": "b"}, big_text(60_000, "b"))
    _, small = b.tool("shell", {"command": "c"}, big_text(10_000, "c"))
    b.assistant("done")
    b.user("next turn")
    _, other = b.tool("shell", {"command": "d"}, big_text(150_000, "d"))
    b.assistant("done")
    settings = Settings(result_max_chars=10**9)
    out = enforce_budgets(b.view, ctx_for(b.view, settings=settings))
    by_source = {m.meta.source_ids[0] if m.meta.source_ids else m.id: m for m in out.messages}
    assert by_source[mid.id] is mid and by_source[small.id] is small and by_source[other.id] is other
    cut = by_source[big.id].tool_results[0].content
    assert 120_000 <= len(cut) <= 130_000  # fair share: 200,000 - 60,000 - 10,000
    turn_total = sum(len(by_source[m.id].tool_results[0].content) for m in (big, mid, small))
    assert turn_total <= 200_000
    assert out.report.counts["per_turn"] == 1
    check_view(b.view, b.view, out.messages, out.entries, {})


def test_verbatim_results_are_not_cut():
    b = Builder()
    b.system()
    b.user("recall")
    b.tool("recall", {"keys": "ccr:0123456789abcdef"}, big_text(50_000, "r"), verbatim=True)
    assert not enforce_budgets(b.view, ctx_for(b.view)).changed
