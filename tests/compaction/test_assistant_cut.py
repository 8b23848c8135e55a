"""L1: assistant messages over 5,000 chars → head ¾ + tail, archived with a marker."""

from __future__ import annotations

from compaction_helpers import Builder, big_text, check_view, ctx_for

from app.engine.compaction.assistant_cut import cut_long_assistant
from app.model.archive import archive_key, markers_in


def test_cut_over_5000_chars():
    b = Builder()
    b.system()
    b.user("explain")
    long = b.assistant(big_text(5_001, "essay"))
    out = cut_long_assistant(b.view, ctx_for(b.view))
    text = out.messages[2].text
    original = long.text
    assert len(text) <= 5_000
    gap = text.index("\n[… ")
    tail_start = text.index(" …]\n") + len(" …]\n")
    tail = text[tail_start : text.index("\n[full content recoverable")]
    assert text[:gap] == original[:gap] and original.endswith(tail)
    assert 2.5 <= gap / len(tail) <= 3.5  # head ¾, tail ¼
    assert markers_in(text) == [archive_key(original)]
    assert [(e.reason, e.content) for e in out.entries] == [("L1", original)]
    check_view(b.view, b.view, out.messages, out.entries, {})


def test_5000_chars_and_user_messages_are_left_alone():
    b = Builder()
    b.system()
    b.user(big_text(9_000))
    b.assistant(big_text(5_000))
    assert not cut_long_assistant(b.view, ctx_for(b.view)).changed
