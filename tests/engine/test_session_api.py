"""`app.engine.api`: a front end drives a real session (the built-in lab model) through `SessionApi` alone —
approvals answered by tool call id, the event stream, cancel, and the queries panels read."""

from __future__ import annotations

import asyncio

import pytest

from app.config import Settings
from app.engine.api import EngineSession, SessionApi, open_session


async def _open(tmp_path, events: list, **settings) -> SessionApi:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    settings.setdefault("memory", "off")
    return await open_session(Settings(**settings), workspace=workspace, on_event=events.append)


async def _until(predicate, what: str) -> None:
    for _ in range(2000):
        if predicate():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what}")


async def test_an_approval_is_answered_by_the_call_id_of_its_tool_call(tmp_path):
    events: list = []
    session = await _open(tmp_path, events)
    assert isinstance(session, SessionApi) and isinstance(session, EngineSession)
    try:
        turn = asyncio.create_task(session.submit("!shell echo approved-by-id > marker.txt"))
        await _until(lambda: any(e.type == "approval_requested" for e in events), "the approval")
        asked = next(e for e in events if e.type == "approval_requested")
        started = next(e for e in events if e.type == "tool_call")
        assert asked.call_id == started.call_id and asked.name == "shell"
        assert "echo approved-by-id" in asked.why and asked.remember.startswith("Bash(")
        assert [p.call_id for p in session.pending_approvals()] == [asked.call_id]

        assert session.approve("not-" + asked.call_id, True) is False  # another call's id answers nothing
        assert not turn.done()
        with pytest.raises(ValueError, match="approval answer"):
            session.approve(asked.call_id, "sometimes")  # type: ignore[arg-type]
        assert session.approve(asked.call_id, "once") is True
        result = await turn

        assert result.outcome == "answered"
        assert (tmp_path / "ws" / "marker.txt").read_text().strip() == "approved-by-id"
        decision = next(e for e in events if e.type == "tool_approval")
        assert decision.call_id == asked.call_id and decision.decision == "approved"
        assert session.pending_approvals() == () and session.approve(asked.call_id, True) is False
    finally:
        await session.close()


async def test_a_denied_call_does_not_run_and_cancel_ends_a_turn_waiting_for_approval(tmp_path):
    events: list = []
    session = await _open(tmp_path, events)
    try:
        turn = asyncio.create_task(session.submit("!shell touch denied.txt"))
        await _until(lambda: session.pending_approvals(), "the first approval")
        session.approve(session.pending_approvals()[0].call_id, False)
        assert (await turn).outcome == "answered"
        assert not (tmp_path / "ws" / "denied.txt").exists()

        turn = asyncio.create_task(session.submit("!shell touch cancelled.txt"))
        await _until(lambda: session.pending_approvals(), "the second approval")
        assert session.cancel() is True
        result = await turn
        assert result.outcome == "cancelled"
        assert session.pending_approvals() == () and session.cancel() is False
        assert not (tmp_path / "ws" / "cancelled.txt").exists()
        assert [e.outcome for e in events if e.type == "turn_finished"][-1] == "cancelled"
    finally:
        await session.close()


async def test_the_queries_a_panel_reads(tmp_path):
    events: list = []
    session = await _open(tmp_path, events, permissions={"deny": ("Bash(rm:*)",)})
    try:
        commands = tmp_path / "ws" / ".bulkhead" / "commands"
        commands.mkdir(parents=True)
        (commands / "review.md").write_text("---\ndescription: review the diff\n---\nReview $ARGUMENTS\n")
        info = session.info()
        assert info.route == "lab" and not info.read_only and info.turn == 0
        assert [e.reason for e in events if e.type == "view"] == ["start"]  # on_event saw the start

        result = await session.submit("!echo hello there.")
        assert result.outcome == "answered" and result.text == "hello there."
        report = session.report()
        assert report.messages_in_view == 2 and report.predicted_bytes > 0
        points = await session.rewind_points()
        assert [(p.prompt, p.turn, p.files_changed) for p in points] == [("!echo hello there.", 1, 0)]
        assert session.info().turn == 1

        permissions = session.permissions()
        assert ("deny", "Bash(rm:*)") in [(r.kind, r.rule) for r in permissions.rules]
        assert permissions.approval == Settings().approval

        assert [(c.name, c.description) for c in await session.custom_commands()] == [
            ("review", "review the diff")
        ]
        assert await session.custom_commands(reserved=["review"]) == ()
        page = await session.archive_page()
        assert page.items == () and not page.full

        rewound = await session.rewind_to(points[0].message_id, files=False)
        assert rewound.prompt == "!echo hello there." and rewound.restored == ()
        assert session.report().messages_in_view == 0
        assert await session.undo() == ()
        assert session.recall("not a key") is False
    finally:
        await session.close()


async def test_a_denial_with_a_reason_tells_the_model_why(tmp_path):
    events: list = []
    session = await _open(tmp_path, events)
    try:
        turn = asyncio.create_task(session.submit("!shell touch nope.txt"))
        await _until(lambda: session.pending_approvals(), "the approval")
        call_id = session.pending_approvals()[0].call_id
        assert session.approve(call_id, "deny", reason="not in this folder") is True
        assert (await turn).outcome == "answered"
        assert not (tmp_path / "ws" / "nope.txt").exists()
        result = next(e for e in events if e.type == "tool_result" and e.call_id == call_id)
        assert result.is_error and "not in this folder" in result.preview
    finally:
        await session.close()


async def test_the_tuis_session_starts_when_asked_and_says_why_its_commands_cannot_run(tmp_path):
    """`open_ui_session` opens without starting (the TUI starts it once its history is drawn); `why_not`
    answers the conditions of the TUI's commands from the session itself."""
    from app.engine.api.ui_session import EngineUiSession, UiSession, open_ui_session

    workspace = tmp_path / "ws"
    workspace.mkdir()
    events: list = []
    session = await open_ui_session(Settings(memory="off"), workspace=workspace, on_event=events.append)
    assert isinstance(session, EngineUiSession) and isinstance(session, UiSession)
    try:
        assert not any(e.type == "view" for e in events)  # not started: no start report yet
        await session.start()
        assert any(e.type == "view" and e.reason == "start" for e in events)
        assert session.why_not("compact") == "nothing to compact yet"
        assert session.why_not("retry") == "nothing to retry yet"
        assert session.why_not("rewind_to") == "no prompt to go back to yet"
        assert session.why_not("undo").startswith("no file change to undo")
        assert session.why_not("cap_reset") == "no learned cap to forget"
        await session.submit("hello")
        assert session.why_not("compact") == "" and session.why_not("rewind_to") == ""
        assert session.prompt_committed("hello") and not session.prompt_committed("never sent")
        assert [m.text for m in session.history() if m.role == "user"] == ["hello"]
        assert session.info().messages == 2 and session.opening_notices().lab
        with pytest.raises(ValueError, match="no condition named"):
            session.why_not("fly")
    finally:
        await session.close()
