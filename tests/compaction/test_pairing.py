"""Pairing repair and the user-first rule."""

from __future__ import annotations

from compaction_helpers import Builder, big_text, check_view, ctx_for

from app.engine.compaction.pairing import (
    MISSING_RESULT,
    ensure_starts_with_user,
    pairing_problems,
    repair_pairing,
    starts_with_user,
)
from app.engine.prompts import DROPPED_NOTICE
from app.model.archive import archive_key, marker
from app.model.messages import ToolCall


def test_valid_view_is_untouched():
    b = Builder()
    b.system()
    b.user("x")
    b.tool("shell", {"command": "ls"}, "a b c")
    b.assistant("done")
    assert pairing_problems(b.view) == []
    assert not repair_pairing(b.view, ctx_for(b.view)).changed


def test_orphan_results_are_dropped_and_archived():
    b = Builder()
    b.system()
    b.user("x")
    orphan = b.result("call_gone", "orphan output")
    b.assistant("done")
    assert pairing_problems(b.view)
    out = repair_pairing(b.view, ctx_for(b.view))
    assert orphan not in out.messages and pairing_problems(out.messages) == []
    assert [(e.content, e.reason, e.source_ids) for e in out.entries] == [
        ("orphan output", "recovery", (orphan.id,))
    ]
    assert "1 orphan results dropped" in out.report.line


def test_calls_without_results_get_a_synthetic_error_result():
    b = Builder()
    b.system()
    b.user("x")
    c1, c2 = ToolCall("c1", "shell", {"command": "a"}), ToolCall("c2", "shell", {"command": "b"})
    b.assistant("two", [c1, c2])
    b.result("c1", "ok")
    b.user("next")
    out = repair_pairing(b.view, ctx_for(b.view))
    synthetic = out.messages[4]
    assert synthetic.role == "tool"
    [result] = synthetic.tool_results
    assert (result.call_id, result.content, result.is_error) == ("c2", MISSING_RESULT, True)
    assert MISSING_RESULT == "[tool result missing: dropped during compaction]"
    assert pairing_problems(out.messages) == []


def test_verbatim_result_without_its_call_becomes_a_user_message():
    b = Builder()
    b.system()
    b.user("x")
    content = big_text(3_000, "recalled")
    recalled = b.result("gone", content, verbatim=True)
    b.assistant("thanks")
    out = repair_pairing(b.view, ctx_for(b.view))
    kept = out.messages[2]
    assert kept.role == "user" and kept.meta.preserve_verbatim
    assert content in [p.text for p in kept.parts]
    assert kept.meta.source_ids == (recalled.id,)
    assert out.entries == []
    assert pairing_problems(out.messages) == []


def test_verbatim_orphan_inside_a_group_moves_after_the_group():
    b = Builder()
    b.system()
    b.user("x")
    b.assistant("two", [ToolCall("c1", "shell", {}), ToolCall("c2", "shell", {})])
    b.result("c1", "one")
    b.result("gone", "recalled text", verbatim=True)
    b.result("c2", "two")
    out = repair_pairing(b.view, ctx_for(b.view))
    assert [m.role for m in out.messages] == ["system", "user", "assistant", "tool", "tool", "user"]
    assert pairing_problems(out.messages) == []


def test_view_starts_with_a_user_message_after_the_system_messages():
    b = Builder()
    b.system()
    b.system("second system")
    lead = b.assistant("a leftover answer " + big_text(500))
    b.user("real start")
    b.assistant("ok")
    assert not starts_with_user(b.view)
    out = ensure_starts_with_user(b.view, ctx_for(b.view))
    assert starts_with_user(out.messages)
    assert [m.role for m in out.messages][:3] == ["system", "system", "user"]
    notice = out.messages[2]
    [entry] = out.entries
    assert notice.text == DROPPED_NOTICE.format(count=1, markers=marker(entry.key))
    assert notice.meta.archive_keys == (entry.key,) and notice.meta.source_ids == (lead.id,)
    assert lead.text in entry.content
    check_view(b.view, b.view, out.messages, out.entries, {})


def test_leading_orphans_with_markers_are_carried():
    prior_content = "archived earlier"
    key = archive_key(prior_content)
    b = Builder()
    b.system()
    b.assistant(f"see {marker(key)}")
    b.user("go")
    out = ensure_starts_with_user(b.view, ctx_for(b.view, prior={key: prior_content}))
    assert key in out.messages[1].meta.archive_keys and marker(key) in out.messages[1].text
    check_view(b.view, b.view, out.messages, out.entries, {key: prior_content})
