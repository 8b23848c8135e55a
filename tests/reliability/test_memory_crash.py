"""Issue 41: the memory queue survives SIGKILL — every segment a compaction took out of the view is in the memory
worker's durable queue (or was already read), 0 lost.

Each round runs `python3 -m app -p PROMPT --continue --json` as a user does (BULKHEAD_HOME in tmp, the embedded lab,
`max_payload = "24KB"` and answers of 11–14 KB, so every round compacts before its request). Every prompt carries a
`remember: fact-N` line. Rounds are killed at random points, three ways:

- at the failpoint `memory.queued` (`BULKHEAD_FAILPOINTS`, app/engine/failpoints.py): SIGKILL right after the
  segment's queue transaction committed and before the view commit — the window the issue names;
- at `memory.committed`: right after the view commit, before anything else (receipt, events, the answer);
- by this test, SIGKILL at a random line of the child's `--json` output (before the compaction, during the answer,
  while `-p` reads the queue before exiting), or no kill.

After every round the database must be intact and, for every compaction view change it holds (a view whose
reason is a compaction and its parent), every master message the parent had and the child does not is in
`memory_queue` (or at or below `memory_progress`). At the end one clean round reads what is queued, and every
`remember:` line that ever reached the master log is a fact in the journal or still in the active view.
`BULKHEAD_MEMORY_CRASH_KILLS=200` runs longer.
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from tests.reliability.test_crash import RUN_DEADLINE_S, _integrity_problems, _run_and_maybe_kill

KILLS = int(os.environ.get("BULKHEAD_MEMORY_CRASH_KILLS", "30"))
BETWEEN = max(1, KILLS // 3)  # kills in the window between the queue's commit and the view's, at the least
MAX_RUNS = KILLS * 4 + 20  # a loop that reaches it is not killing anything
SEED = int(os.environ.get("BULKHEAD_MEMORY_CRASH_SEED", "41"))
APP = [sys.executable, "-m", "app"]
COMPACTION_REASONS = ("auto", "preflight", "manual", "recovery", "provider", "provider-edit")


@dataclass
class Report:
    runs: int = 0
    kills: int = 0
    killed_between: int = 0  # at memory.queued: queued, the view not committed
    killed_after_commit: int = 0
    killed_at_random: int = 0
    segments_checked: int = 0
    messages_checked: int = 0
    lost: int = 0
    problems: list[str] = field(default_factory=list)
    lost_ids: set[str] = field(default_factory=set)

    def __str__(self) -> str:
        return (
            f"memory crash: {self.kills} kills in {self.runs} runs — between queue and commit "
            f"{self.killed_between}, right after the commit {self.killed_after_commit}, at random "
            f"{self.killed_at_random}; {self.segments_checked} compactions checked ({self.messages_checked} messages "
            f"that left the view); lost {self.lost}; problems {len(self.problems)}"
        )


def _check_segments(db: Path, report: Report) -> tuple[int, int]:
    """Every master message a compaction took out of the view is queued or was read: (segments, messages)."""
    conn = sqlite3.connect(db, timeout=30)
    segments = messages = 0
    try:
        for (session_id,) in conn.execute("SELECT id FROM sessions"):
            queued: set[str] = set()
            for (ids,) in conn.execute(
                "SELECT message_ids FROM memory_queue WHERE session_id = ?", (session_id,)
            ):
                queued.update(json.loads(ids))
            row = conn.execute(
                "SELECT distilled_seq FROM memory_progress WHERE session_id = ?", (session_id,)
            ).fetchone()
            read_up_to = row[0] if row else -1
            master = {
                mid: (seq, json.loads(meta).get("origin", ""), role)
                for mid, seq, meta, role in conn.execute(
                    "SELECT id, seq, meta, role FROM messages WHERE session_id = ? AND seq IS NOT NULL",
                    (session_id,),
                )
            }
            views = conn.execute(
                "SELECT id, parent_id, reason FROM views WHERE session_id = ? ORDER BY created_at",
                (session_id,),
            ).fetchall()
            entries = {
                view_id: {
                    mid
                    for (mid,) in conn.execute(
                        "SELECT message_id FROM view_entries WHERE view_id = ?", (view_id,)
                    )
                }
                for view_id, _parent, _reason in views
            }
            for view_id, parent, reason in views:
                if (
                    parent is None
                    or parent not in entries
                    or reason.split(":", 1)[0] not in COMPACTION_REASONS
                ):
                    continue
                segments += 1
                left = [
                    mid
                    for mid in entries[parent] - entries[view_id]
                    if mid in master
                    and master[mid][1] not in ("notice", "summary", "stub")
                    and master[mid][2] != "system"
                ]
                for mid in left:
                    messages += 1
                    if mid not in queued and master[mid][0] > read_up_to and mid not in report.lost_ids:
                        report.lost_ids.add(mid)
                        report.lost += 1
                        report.problems.append(f"LOST: {mid} left the view at {view_id} ({reason}) unqueued")
    finally:
        conn.close()
    return segments, messages


def _queued_not_committed(db: Path) -> bool:
    """The newest queue entry names messages that are all still in the active view (the kill came between)."""
    conn = sqlite3.connect(db, timeout=30)
    try:
        row = conn.execute(
            "SELECT session_id, message_ids FROM memory_queue ORDER BY id DESC LIMIT 1"
        ).fetchone()
        if row is None:
            return False
        active = {
            mid
            for (mid,) in conn.execute(
                "SELECT e.message_id FROM view_entries e JOIN views v ON v.id = e.view_id "
                "WHERE v.session_id = ? AND v.state = 'active'",
                (row[0],),
            )
        }
        return set(json.loads(row[1])) <= active
    finally:
        conn.close()


def _receipt_order_problems(home: Path) -> list[str]:
    """In every session's receipts, a memory `view committed` line follows its `memory: queued` line."""
    problems = []
    for path in home.glob("sessions/*/compaction.jsonl"):
        seen_queued: set[int] = set()
        for line in path.read_text().splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue  # a line cut by the kill
            if record.get("method") != "memory":
                continue
            if record["event"].startswith("memory: queued"):
                seen_queued.add(record["queue_id"])
            elif record["event"] == "view committed" and record["queue_id"] not in seen_queued:
                problems.append(f"{path}: view committed before its memory queue line ({record})")
    return problems


def test_sigkill_between_queueing_and_the_view_commit_loses_no_segment(tmp_path, isolated_home):
    rng = random.Random(SEED)
    home = isolated_home
    db = home / "bulkhead.db"
    Path(os.environ["BULKHEAD_CONFIG"]).write_text('max_payload = "24KB"\nmemory = "suggest"\n')
    workspace = tmp_path / "ws"
    workspace.mkdir()
    report = Report()
    facts_said: list[str] = []

    number = 0
    while report.kills < KILLS or report.killed_between < BETWEEN:
        number += 1
        assert number <= MAX_RUNS, (
            f"{number} runs for {report.kills} kills: nothing is being killed — {report}"
        )
        fact = f"fact-{number:03d} {rng.randint(0, 10**6)}"
        facts_said.append(fact)
        prompt = (
            f"remember: {fact}\n!big {rng.choice((11, 12, 14))}KB"  # over the pre-flight line every round
        )
        roll = rng.random()
        env = {}
        kill_at = 10**9
        if roll < 0.5:  # reached only in a round whose compaction has something unread to queue (about half)
            env["BULKHEAD_FAILPOINTS"] = "memory.queued"
        elif roll < 0.7:
            env["BULKHEAD_FAILPOINTS"] = "memory.committed"
        elif roll < 0.95:
            kill_at = rng.randint(1, 40)
        stderr_path = tmp_path / f"stderr-{number}.txt"
        args = APP + ["-p", prompt, "--continue", "--json"]
        if env:
            done = subprocess.run(
                args,
                cwd=workspace,
                env={**os.environ, **env},
                capture_output=True,
                text=True,
                timeout=RUN_DEADLINE_S,
            )
            stderr_path.write_text(done.stderr)
            killed = done.returncode == -9
            if killed and env["BULKHEAD_FAILPOINTS"] == "memory.queued":
                report.killed_between += 1
                if not _queued_not_committed(db):
                    report.problems.append(f"run {number}: killed at memory.queued but the view had moved")
            elif killed:
                report.killed_after_commit += 1
        else:
            run = _run_and_maybe_kill(
                args, cwd=workspace, home=home, kill_at=kill_at, count_lines=True, stderr_path=stderr_path
            )
            killed = run.killed
            report.killed_at_random += killed
        report.runs += 1
        report.kills += killed
        stderr = stderr_path.read_text(errors="replace")
        assert "Traceback" not in stderr, stderr[-1600:]
        report.problems += [f"after run {number}: {p}" for p in _integrity_problems(home)]
        segments, messages = _check_segments(db, report)
        report.segments_checked, report.messages_checked = segments, messages

    # One clean round: it resumes, compacts if need be, and reads everything still queued before it exits.
    final = subprocess.run(
        APP + ["-p", "are we whole?", "--continue", "--json"],
        cwd=workspace,
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=RUN_DEADLINE_S,
    )
    assert final.returncode == 0, final.stderr[-1600:]
    report.problems += _integrity_problems(home)
    report.segments_checked, report.messages_checked = _check_segments(db, report)
    report.problems += _receipt_order_problems(home)

    conn = sqlite3.connect(db)
    try:
        waiting = conn.execute("SELECT COUNT(*) FROM memory_queue WHERE state = 'queued'").fetchone()[0]
        facts = {row[0] for row in conn.execute("SELECT text FROM memory_facts")}
        master_text = "\n".join(
            row[0] for row in conn.execute("SELECT parts FROM messages WHERE seq IS NOT NULL")
        )
        active_text = "\n".join(
            row[0]
            for row in conn.execute(
                "SELECT m.parts FROM view_entries e JOIN views v ON v.id = e.view_id JOIN messages m ON m.id = e.message_id "
                "WHERE v.state = 'active'"
            )
        )
    finally:
        conn.close()
    reached_log = [f for f in facts_said if f"remember: {f}" in master_text]
    for fact in reached_log:
        if fact not in facts and f"remember: {fact}" not in active_text:
            report.lost += 1
            report.problems.append(f"LOST: `remember: {fact}` left the view and is in no fact")
    print(report)
    print(f"  facts in the journal {len(facts)}, `remember:` lines that reached the log {len(reached_log)}")
    assert waiting == 0, f"{waiting} queued segments were not read by the clean round"
    assert report.kills >= KILLS and report.killed_between >= BETWEEN, report
    assert report.segments_checked >= 10, report
    assert report.lost == 0 and not report.problems, "\n".join([str(report), *report.problems[:20]])
