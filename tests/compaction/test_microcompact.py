"""Microcompact: 2 / 4 turns, 3,000 / 1,000 chars, head 2,000 + tail 500, the one-line format."""

from __future__ import annotations

import re

from compaction_helpers import Builder, big_text, check_view, ctx_for

from app.engine.compaction.context import merge_entries
from app.engine.compaction.microcompact import microcompact
from app.engine.compaction.truncate import nuclear
from app.model.archive import archive_key, marker, markers_in

ONE_LINE = re.compile(
    r"^\[Old tool result cleared: ([\d,]+) lines, ([\d,]+) chars, (\w+)\] "
    r"\[full content recoverable via @recall \[\[ccr:([0-9a-f]{16})\]\]\]$"
)


def session(size: int, *, tool: str = "shell", verbatim: bool = False):
    b = Builder()
    b.system()
    b.user("run it")
    _, result = b.tool(tool, {"command": "cat big.log"}, big_text(size, "log"), verbatim=verbatim)
    b.assistant("done")
    return b, result


def test_young_results_are_untouched():
    b, _ = session(50_000)
    for age in (0, 1):
        assert not microcompact(b.view, ctx_for(b.view, turn=1 + age)).changed


def test_preview_at_two_turns_over_3000_chars():
    b, result = session(3_001)
    out = microcompact(b.view, ctx_for(b.view, turn=3))
    assert out.changed
    new = out.messages[3]
    content = new.tool_results[0].content
    original = result.tool_results[0].content
    assert content.startswith(original[:2000])
    assert not content.startswith(original[:2001])
    body = content[: content.index("\n[full content recoverable")]
    assert body.endswith(original[-500:])
    assert not body.endswith(original[-501:])
    key = archive_key(original)
    assert markers_in(content) == [key]
    assert new.meta.archive_keys == (key,)
    assert new.meta.source_ids == (result.id,)
    assert new.meta.origin == "stub"
    assert new.tool_results[0].call_id == result.tool_results[0].call_id
    [entry] = out.entries
    assert (entry.key, entry.content, entry.reason, entry.source_ids) == (
        key,
        original,
        "microcompact",
        (result.id,),
    )
    assert re.match(r"🗜 microcompact: 1 truncated, 0 summarized, [\d.]+ (B|KB) freed$", out.report.line)


def test_exactly_3000_chars_is_not_truncated():
    b, _ = session(3_000)
    assert not microcompact(b.view, ctx_for(b.view, turn=3)).changed


def test_one_line_at_four_turns_over_1000_chars():
    b, result = session(1_001)
    out = microcompact(b.view, ctx_for(b.view, turn=5))
    content = out.messages[3].tool_results[0].content
    match = ONE_LINE.match(content)
    assert match, content
    original = result.tool_results[0].content
    assert match.group(1) == f"{original.count(chr(10)) + (0 if original.endswith(chr(10)) else 1):,}"
    assert match.group(2) == "1,001"
    assert match.group(3) == "shell"
    assert match.group(4) == archive_key(original)
    assert out.report.counts == {"truncated": 0, "summarized": 1}


def test_exactly_1000_chars_is_not_summarized_and_three_turns_is_not_four():
    b, _ = session(1_000)
    assert not microcompact(b.view, ctx_for(b.view, turn=9)).changed
    b, _ = session(1_500)
    assert not microcompact(b.view, ctx_for(b.view, turn=4)).changed  # age 3, under 3,000


def test_type_is_the_content_type_when_the_tool_is_unknown():
    b, result = session(1_200)
    orphan_view = tuple(m for m in b.view if not m.tool_calls)  # the call is not in view
    json_result = result.derive(
        [type(result.parts[0])(result.tool_results[0].call_id, '{"items": [' + "1," * 600 + "1]}")]
    )
    view = tuple(json_result if m.id == result.id else m for m in orphan_view)
    out = microcompact(view, ctx_for(view, turn=5))
    assert ", json]" in out.messages[2].tool_results[0].content


def test_recall_output_and_verbatim_are_never_touched():
    b, _ = session(50_000, tool="recall", verbatim=True)
    assert not microcompact(b.view, ctx_for(b.view, turn=20)).changed


def test_idempotent():
    b, _ = session(10_000)
    ctx = ctx_for(b.view, turn=3)
    once = microcompact(b.view, ctx)
    assert not microcompact(once.messages, ctx.with_entries(once.entries)).changed


def test_markers_carry_forward_preview_then_one_line_then_l3():
    b, result = session(8_000)
    for i in range(6):  # later turns, so the old result ends up dropped by L3
        b.user(f"next {i}")
        b.assistant("fine")
    master = b.view
    original = result.tool_results[0].content
    key = archive_key(original)

    preview = microcompact(master, ctx_for(master, turn=3))
    [content] = [m.tool_results[0].content for m in preview.messages if m.tool_results]
    assert markers_in(content) == [key] and len(content) > 2_500

    ctx = ctx_for(master, turn=7).with_entries(preview.entries)
    line = microcompact(preview.messages, ctx)
    [content] = [m.tool_results[0].content for m in line.messages if m.tool_results]
    match = ONE_LINE.match(content)
    assert match and match.group(4) == key
    assert match.group(2) == "8,000"  # counted on the original, restored through the archive
    assert line.entries == []  # a preview holds a marker: it is never archived itself

    entries = merge_entries(preview.entries, line.entries)
    l3 = nuclear(line.messages, ctx.with_entries(entries))
    entries = merge_entries(entries, l3.entries)
    assert all(not m.tool_results for m in l3.messages)
    notice = l3.messages[1]
    assert notice.meta.origin == "notice" and marker(key) in notice.text and key in notice.meta.archive_keys
    check_view(master, line.messages, l3.messages, entries, {})


def test_input_is_not_mutated():
    b, _ = session(10_000)
    before = [m.to_dict() for m in b.view]
    microcompact(b.view, ctx_for(b.view, turn=9))
    assert [m.to_dict() for m in b.view] == before
