"""`app.engine.api` as a front end without a screen drives it (`bulkhead -p`, `probe --content`, and next an ACP
agent and a recovery proxy): a real session on the built-in lab model (or the lab server behind its ModSecurity
profile), a real SQLite store, nothing but `SessionApi` — opened without starting, the opening notices first,
the workspace's trust questions, nobody to answer approvals, the memory queue read on demand, the session's
own commands, `/blocked`'s four methods, and a caller cancelled mid-turn."""

from __future__ import annotations

import asyncio
import sqlite3

import pytest

from app.config import Settings
from app.engine.api import SessionApi, open_session
from tests.engine.conftest import route_for
from tests.engine.test_content_block import SQL
from tests.engine.test_session_api import _until


def _workspace(tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    return workspace


async def test_opened_without_starting_it_says_its_opening_notices_first_then_starts(tmp_path):
    workspace = _workspace(tmp_path)
    events: list = []
    first = await open_session(Settings(memory="off"), workspace=workspace)
    try:
        assert (await first.submit("hello")).outcome == "answered"
        first_id = first.info().id
    finally:
        await first.close()

    session = await open_session(
        Settings(memory="off"),
        workspace=workspace,
        continue_=True,
        fork=True,
        start=False,
        on_event=events.append,
    )
    try:
        opened = session.opening_notices()
        assert opened.lab and "built-in lab model" in opened.route[0]
        assert [n for n in opened.session if n.startswith(f"forked session {first_id} into ")]
        info = session.info()
        assert info.resumed and info.id != first_id and info.in_view == 2  # the copy holds the conversation
        assert not any(e.type == "view" for e in events)  # nothing started yet
        await session.start()
        assert [e.reason for e in events if e.type == "view"] == ["start"]
    finally:
        await session.close()


async def test_with_nobody_to_answer_a_call_that_needs_approval_is_denied_at_once_and_says_how(tmp_path):
    workspace = _workspace(tmp_path)
    events: list = []
    session = await open_session(
        Settings(memory="off"), workspace=workspace, answers_approvals=False, on_event=events.append
    )
    try:
        result = await session.submit("!shell touch asked.txt")  # returns: nothing waits for an answer
        assert result.outcome == "answered" and session.pending_approvals() == ()
        assert not (workspace / "asked.txt").exists()
        assert not any(e.type == "approval_requested" for e in events)
        decision = next(e for e in events if e.type == "tool_approval")
        assert decision.decision == "denied"
        told = next(e for e in events if e.type == "tool_result")
        assert told.is_error and "no terminal to ask" in told.preview and "--yes" in told.preview
    finally:
        await session.close()


async def test_the_workspace_files_are_asked_about_and_a_yes_puts_their_allow_rules_in_force(tmp_path):
    from app.workspace_gateways import WORKSPACE_FILE

    workspace = _workspace(tmp_path)
    (workspace / ".bulkhead").mkdir()
    (workspace / ".bulkhead" / "settings.toml").write_text('[permissions]\nallow = ["Bash(echo:*)"]\n')
    (workspace / WORKSPACE_FILE).write_text(
        'format = "bulkhead-gateways"\nversion = 1\n[gateways."anthropic https://gw.example.com"]\n'
        "cap_bytes = 65536\n"
    )
    events: list = []
    session = await open_session(Settings(memory="off"), workspace=workspace, on_event=events.append)
    asked: list = []

    async def rules(files) -> str | None:
        asked.append([(str(f.relative), tuple(f.allow)) for f in files])
        return "allow"

    async def gateways(found) -> str | None:
        asked.append(found.describe())
        return None  # not now

    try:
        held = [r.rule for r in session.permissions().rules if r.kind == "held"]
        assert held == ["Bash(echo:*)"]  # from the repository: not in force before the yes
        await session.confirm_workspace_files(rules, gateways)
        assert asked == [
            [(".bulkhead/settings.toml", ("Bash(echo:*)",))],
            ["anthropic https://gw.example.com: cap 64.0 KB"],
        ]
        assert ("allow", "Bash(echo:*)") in [(r.kind, r.rule) for r in session.permissions().rules]
        result = await session.submit("!shell echo allowed-by-the-file")
        assert result.outcome == "answered" and not any(e.type == "approval_requested" for e in events)
        assert next(e for e in events if e.type == "tool_approval").decision == "auto"
        assert session.has_mcp() is False
        await session.start_mcp(allow_project=True, wait=False)  # no server configured: nothing to start
    finally:
        await session.close()


async def test_the_sessions_own_commands_rename_compact_and_undo_the_compaction(tmp_path):
    session = await open_session(Settings(memory="off"), workspace=_workspace(tmp_path))
    try:
        assert session.info().in_view == 0 and session.undo_compaction() is False
        for size in ("12KB", "14KB", "16KB"):
            assert (await session.submit(f"!big {size}")).outcome == "answered"
        assert session.info().in_view == 6
        assert session.rename("  the parser\n") == "the parser"
        assert session.info().title == "the parser"
        with pytest.raises(ValueError):
            session.rename("   ")
        compacted = await session.compact()
        assert compacted.ran and compacted.changed and compacted.bytes_after < compacted.bytes_before
        assert session.report().predicted_bytes < compacted.bytes_before
        assert session.undo_compaction() is True
        assert session.info().in_view == 6 and session.undo_compaction() is False
    finally:
        await session.close()


async def test_without_background_memory_the_queue_is_read_when_asked(tmp_path, isolated_home):
    events: list = []
    session = await open_session(
        Settings(memory="suggest"),
        workspace=_workspace(tmp_path),
        background_memory=False,
        on_event=events.append,
    )
    try:
        for i in range(3):
            assert (await session.submit(f"remember: rule {i} of the house\n!big 12KB")).outcome == "answered"
        await session.compact()
        assert any(e.type == "memory_queued" for e in events)
        db = sqlite3.connect(isolated_home / "bulkhead.db")
        try:
            queued = "SELECT COUNT(*) FROM memory_queue WHERE state = 'queued'"
            assert db.execute(queued).fetchone()[0] >= 1
            await session.read_queued_memory()
            assert db.execute(queued).fetchone()[0] == 0
            pending = {row[0] for row in db.execute("SELECT text FROM memory_facts WHERE state = 'pending'")}
        finally:
            db.close()
        assert "rule 0 of the house" in pending
        assert [f for e in events if e.type == "memory_distilled" for f in e.facts]
    finally:
        await session.close()


async def test_a_caller_cancelled_mid_turn_goes_on_only_once_the_turn_has_wound_down(tmp_path):
    """Ctrl+C in `-p` cancels the task awaiting `submit`: the turn ends (its tool stopped, `TurnFinished`
    said) before the caller's cancellation goes on to close the session."""
    events: list = []
    session = await open_session(Settings(memory="off", approval="never-ask"), workspace=_workspace(tmp_path))
    session.subscribe(events.append)
    try:
        turn = asyncio.create_task(session.submit("!shell sleep 30"))
        await _until(lambda: any(e.type == "tool_call" for e in events), "the tool call")
        turn.cancel()
        with pytest.raises(asyncio.CancelledError):
            await turn
        assert [e.outcome for e in events if e.type == "turn_finished"] == ["cancelled"]
    finally:
        await session.close()
    assert session.info().turn == 1


async def test_the_blocked_methods_find_the_refused_text_and_withhold_it(tmp_path, lab, monkeypatch):
    from app.engine.api.blocked import offline_unavailable

    lab.configure(gateway="modsecurity")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-FAKE-test-key")
    workspace = _workspace(tmp_path)
    (workspace / "db.py").write_text(SQL)
    settings = Settings(
        routes={"t": route_for("anthropic", lab.url)}, default_route="t", memory="off", retry_base_delay=0.01
    )
    session: SessionApi = await open_session(settings, workspace=workspace, answers_approvals=False)
    try:
        assert (await session.submit("hello")).outcome == "answered"
        assert (await session.submit("!read db.py")).outcome == "failed"  # the gateway refuses it
        plan = session.blocked_plan()
        assert plan.max_probes > 0 and plan.question.endswith("Go on?")
        if not offline_unavailable():
            sent = len(lab.requests())
            offline = await session.find_offline(paranoia=1)
            assert offline.offline and offline.probes == 0 and offline.finding is not None
            assert offline.paranoia == 1 and len(lab.requests()) == sent  # judged here: nothing sent
        seen: list[tuple[int, str]] = []
        report = await session.find_blocked(lambda number, what, verdict: seen.append((number, verdict)))
        assert report.finding is not None and "'1'='1" in report.finding.span
        assert [n for n, _ in seen] == list(range(1, report.probes + 1))
        assert report.finding.part.label == "turn 2, tool result of read_file db.py"
        outcome = session.withhold(report.finding)
        assert outcome.applied and outcome.take_back is None
        assert (await session.submit("what now?")).outcome == "answered"  # the gateway lets it through now
    finally:
        await session.close()
