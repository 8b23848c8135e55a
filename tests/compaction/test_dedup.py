"""Dedup of repeated reads: same or wider supersedes, narrower never does, newest stays verbatim."""

from __future__ import annotations

import re

from compaction_helpers import Builder, big_text, check_view, ctx_for

from app.engine.compaction.dedup import dedup_reads, normalise_path
from app.model.archive import archive_key, markers_in


def reads(*specs, verbatim_recall: bool = False):
    """specs: (path, offset, limit[, is_error]) per read, one turn each."""
    b = Builder()
    b.system()
    results = []
    for i, spec in enumerate(specs):
        path, offset, limit, *rest = spec
        b.user(f"read {i}")
        _, r = b.read(path, big_text(4_000, f"v{i}"), offset, limit, is_error=bool(rest and rest[0]))
        results.append(r)
        b.assistant("read it")
    if verbatim_recall:
        b.user("recall it")
        b.tool("recall", {"keys": ["ccr:0123456789abcdef"]}, big_text(4_000, "recalled"), verbatim=True)
    return b, results


def contents(view):
    return [m.tool_results[0].content for m in view if m.tool_results]


def test_same_range_earlier_becomes_a_stub_newest_stays():
    b, results = reads(("app/x.py", None, None), ("app/x.py", None, None), ("app/x.py", None, None))
    out = dedup_reads(b.view, ctx_for(b.view))
    first, second, third = contents(out.messages)
    for stub, result in ((first, results[0]), (second, results[1])):
        original = result.tool_results[0].content
        assert re.match(
            r"^\[Earlier read of app/x\.py \(whole file\) superseded by a later read\] "
            r"\[full content recoverable via @recall \[\[ccr:[0-9a-f]{16}\]\]\]$",
            stub,
        )
        assert markers_in(stub) == [archive_key(original)]
    assert third == results[2].tool_results[0].content
    assert {e.reason for e in out.entries} == {"dedup"}
    assert out.report.counts == {"stubbed": 2}
    check_view(b.view, b.view, out.messages, out.entries, {})


def test_wider_later_read_supersedes_a_narrower_earlier_one():
    b, results = reads(("app/x.py", 10, 20), ("app/x.py", 0, 100))
    first, second = contents(dedup_reads(b.view, ctx_for(b.view)).messages)
    assert first.startswith("[Earlier read of app/x.py (lines 10–30)")
    assert second == results[1].tool_results[0].content


def test_narrower_later_read_never_replaces_a_wider_earlier_one():
    b, _ = reads(("app/x.py", None, None), ("app/x.py", 10, 20))
    assert not dedup_reads(b.view, ctx_for(b.view)).changed
    b, _ = reads(("app/x.py", 0, 100), ("app/x.py", 50, 100))  # overlapping, not covering
    assert not dedup_reads(b.view, ctx_for(b.view)).changed


def test_paths_are_normalised():
    assert normalise_path("./app/../app/x.py") == "app/x.py"
    b, _ = reads(("./app/x.py", None, None), ("app//x.py", None, None))
    first, _second = contents(dedup_reads(b.view, ctx_for(b.view)).messages)
    assert first.startswith("[Earlier read of app/x.py")


def test_a_failed_read_supersedes_nothing_and_other_files_are_separate():
    b, _ = reads(("app/x.py", None, None), ("app/x.py", None, None, True), ("app/y.py", None, None))
    assert not dedup_reads(b.view, ctx_for(b.view)).changed


def test_recall_output_is_never_touched():
    b, _ = reads(("app/x.py", None, None), verbatim_recall=True)
    b.user("again")
    b.read("app/x.py", big_text(4_000, "again"))
    out = dedup_reads(b.view, ctx_for(b.view))
    recalled = [m for m in out.messages if m.meta.preserve_verbatim]
    assert len(recalled) == 1 and recalled[0] in b.view
    assert out.report.counts == {"stubbed": 1}


def test_a_read_only_mcp_tool_called_again_with_the_same_arguments_supersedes_its_earlier_result():
    from dataclasses import replace

    b = Builder()
    b.system()
    for i, query in enumerate(("okapi", "okapi", "zebra")):
        b.user(f"search {i}")
        b.tool("mcp__docs__search", {"query": query}, big_text(4_000, f"r{i}"))
        b.assistant("found it")
    ctx = replace(ctx_for(b.view), repeatable_tools=frozenset({"mcp__docs__search"}))
    first, second, third = contents(dedup_reads(b.view, ctx).messages)
    assert first.startswith(
        '[Earlier result of mcp__docs__search {"query": "okapi"} superseded by a later identical call]'
    ) and markers_in(first)
    assert second == big_text(4_000, "r1") and third == big_text(
        4_000, "r2"
    )  # newest and different args stay
    untouched = dedup_reads(b.view, ctx_for(b.view))  # not known to be read-only: nothing is superseded
    assert not untouched.changed
