"""One presenter: `describe(event)` words an event once, for the chat, `-p` and the turn log."""

from __future__ import annotations

import subprocess
import sys

from app.commands import oneshot
from app.engine.describe import describe
from app.engine.turn import describe_event
from app.model.events import (
    ApprovalRequested,
    CapLearned,
    Compaction,
    HookRun,
    McpServerChanged,
    Notice,
    RecoveryStep,
    Rejection,
    Retry,
    TextDelta,
    ToolApproval,
    ToolCallFinished,
    UsageRecorded,
)


def test_recovery_rejection_retry_compaction_in_words():
    step = describe(
        RecoveryStep(1, 1, 3, 422_400, 430_000, "not_smaller", "waf_block", "no smaller candidate")
    )
    assert step.text == (
        "ladder L1 (repair) attempt 1/3: not smaller (412.5 KB → 419.9 KB) — no smaller candidate"
    )
    assert (step.level, step.code, step.title) == ("warn", "recovery", "recovery")
    rejected = describe(Rejection("waf_block", 422_400, "Rejected by a WAF", 403, recoverable=True))
    assert rejected.text == "403 waf_block, 412.5 KB: Rejected by a WAF — recovering"
    assert (rejected.level, rejected.title) == ("warn", "rejected")
    dropped = describe(Rejection("connection_drop", None, "the connection was dropped"))
    assert (dropped.text, dropped.level, dropped.title) == (
        "connection_drop: the connection was dropped",
        "error",
        "failed",
    )
    assert describe(Retry("rate_limit", 1, 3, 2.0, "429")).text == "rate_limit: retry 1/3 in 2.0 s — 429"
    applied = describe(
        Compaction("auto", "summary", "applied", 4096, 1024, 30, 11, level=2, archive_keys=("k",))
    )
    assert applied.text == (
        "summary: 4.0 KB → 1.0 KB, 30 → 11 messages, 1 segment(s) archived (/rewind compact undoes it)"
    )
    assert applied.title == "compacted (auto)"
    # the ladder's L2 keeps the last 10 messages; a planned compaction's level 2 is the summary: never both "L2"
    recovered = describe(Compaction("recovery", "L2", "applied", 4096, 1024, 30, 11, level=2))
    assert recovered.text.startswith("ladder L2 (last 10): 4.0 KB → 1.0 KB")
    nuclear = describe(Compaction("preflight", "L3", "applied", 4096, 1024, 30, 5, level=3))
    assert nuclear.text.startswith("last 4: 4.0 KB → 1.0 KB")
    assert describe(Compaction("manual", "summary", "failed", 1, 1, 1, 1)).level == "warn"


def test_what_is_not_a_line_is_none():
    assert describe(TextDelta("hi")) is None
    assert describe(UsageRecorded(10, 2)) is None
    assert describe(HookRun("Stop", "*", "./ok.sh", 1.0, 0, "ok")) is None
    assert describe(ToolApproval("c1", "shell", "approved")) is None
    assert describe(HookRun("Stop", "*", "./stop.sh", 1.0, 1, "error", "boom\nmore")).text == (
        "Stop hook `./stop.sh`: error — boom"
    )


def test_line_carries_a_mark():
    assert describe(Notice("careful", level="warn")).line == "⚠ careful"
    assert describe(ToolCallFinished("c1", "grep", False, "", 1200)).line == "✓ grep: 1,200 chars"
    asked = describe(ApprovalRequested("c1", "shell", {"command": "ls"}, "writes outside: ls"))
    assert (asked.line, asked.level) == ("? shell waits for your approval — writes outside: ls", "warn")
    assert describe(McpServerChanged("docs", "ready", tools=3)).line == "⚙ MCP server docs: ready, 3 tools"
    assert describe(McpServerChanged("docs", "ready", tools=1)).line == "⚙ MCP server docs: ready, 1 tool"
    assert (
        "assumed a cap of 4.0 MB"
        in describe(CapLearned(4 * 1024 * 1024, None, "lab", "?", assumed=True)).text
    )


def test_the_turn_log_and_p_use_the_same_words(capsys):
    event = Retry("overloaded", 2, 4, 1.5)
    words = describe(event).text
    assert describe_event(event) == f"retry: {words}"
    oneshot.text_printer(event)
    assert capsys.readouterr().err.strip() == f"↻ retry  {words}"  # the chat's label, then its words
    oneshot.text_printer(Compaction("auto", "L1", "applied", 10, 5, 3, 2))  # phases tell it in -p
    oneshot.text_printer(CapLearned(1000, 1300, "lab", "413"))  # its notice tells it
    assert capsys.readouterr().err == ""


def test_the_presenter_and_slash_parsing_need_no_textual():
    code = (
        "import sys, app.engine.describe, app.ui.slash, app.ui.actions; "
        "assert 'textual' not in sys.modules, sorted(m for m in sys.modules if m.startswith('textual'))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
