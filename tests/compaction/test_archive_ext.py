"""archive.py additions: defanging, suffixes, format_recall."""

from __future__ import annotations

from app.model.archive import (
    MARKER_RE,
    archive_key,
    defang_markers,
    make_entry,
    marker,
    parse_recall_keys,
    recall_suffix,
    strip_markers,
    stub_text,
)

K1, K2 = "0123456789abcdef", "fedcba9876543210"


def test_defang_keeps_a_recallable_key_but_no_marker():
    text = f"see {marker(K1)} and {marker(K2)}"
    out = defang_markers(text)
    assert not MARKER_RE.search(out)
    assert out == f"see ccr:{K1} and ccr:{K2}"
    assert parse_recall_keys(out) == [K1, K2]
    assert make_entry(text, "L2") is None
    assert make_entry(out, "L2") is not None


def test_strip_markers_removes_stub_suffixes():
    stub = stub_text("[Old tool result cleared — 3 lines, 40 chars, shell]", [K1, K2])
    assert strip_markers(stub) == "[Old tool result cleared — 3 lines, 40 chars, shell]"
    assert strip_markers(f"x {marker(K1)} y") == f"x ccr:{K1} y"


def test_recall_suffix_names_every_key_once():
    assert recall_suffix([]) == ""
    assert recall_suffix([K1, K1, K2]) == f"[full content recoverable via @recall {marker(K1)} {marker(K2)}]"
    # same wording as stub_text for one key
    assert stub_text("x", [K1]) == "x " + recall_suffix([K1])


def test_format_recall_one_key_is_the_content_alone():
    from app.model.archive import format_recall

    content = "line 1\nline 2 ✓\n"
    assert format_recall({archive_key(content): content}) == content


def test_format_recall_sections_and_missing_keys():
    from app.model.archive import format_recall

    out = format_recall({K1: "alpha", K2: None})
    assert f"=== ccr:{K1} (5 chars) ===\nalpha" in out
    assert f"ccr:{K2}: not found" in out
    assert not MARKER_RE.search(out)  # recall output can itself be archived again
    assert "No archived content" in format_recall({K1: None})
    assert "No archive key" in format_recall({})
