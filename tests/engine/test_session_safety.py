"""Sessions keep to themselves (issue 14): the model recalls only its own session's archive; a prompt
whose turn was killed is not replayed merged into the next one."""

from __future__ import annotations

import asyncio

import pytest

from app.engine.session import Session
from app.model.archive import ArchiveEntry, archive_key
from app.model.messages import Message, ToolResult
from app.model.prompts import INTERRUPTED_TURN

OTHER_SECRET = "the other project's design notes: launch codes 0000"


async def test_the_models_recall_reads_only_this_sessions_archive(make_harness):
    h = make_harness()
    other = Session.create(h.session.store, route="t", provider="anthropic", model="m")
    key = archive_key(OTHER_SECRET)
    other.archive([ArchiveEntry(key=key, content=OTHER_SECRET, reason="L2", source_ids=("m_x",))])
    mine = "this session's own archived text"
    h.session.archive([ArchiveEntry(key=archive_key(mine), content=mine, reason="L2", source_ids=("m_y",))])

    result = await h.engine.submit(f"!recall {key} {archive_key(mine)}")

    assert result.outcome == "answered"
    tool_results = [
        p for m in h.session.master if m.role == "tool" for p in m.parts if isinstance(p, ToolResult)
    ]
    recalled = tool_results[-1].content
    assert OTHER_SECRET not in recalled and "not found in the archive" in recalled
    assert mine in recalled


async def test_the_user_may_still_recall_another_sessions_segment_by_hand(make_harness):
    h = make_harness()
    other = Session.create(h.session.store, route="t", provider="anthropic", model="m")
    key = archive_key(OTHER_SECRET)
    other.archive([ArchiveEntry(key=key, content=OTHER_SECRET, reason="L2", source_ids=("m_x",))])

    message = h.engine.recall_into_view(key)  # `/recall KEY`, typed by the user

    assert message is not None and OTHER_SECRET in message.text


async def test_a_prompt_left_by_a_crash_is_not_carried_out_with_the_next_one(make_harness, lab, tmp_path):
    h = make_harness()
    workspace = h.engine.workspace
    # bulkhead was killed right after committing this prompt, before any answer
    h.session.append(Message.create("user", "!shell touch crashed-turn.txt", turn=1))

    result = await h.engine.submit("hello again")

    assert result.outcome == "answered"
    assert not (workspace / "crashed-turn.txt").exists(), "the dead turn's command ran with the new prompt"
    assert "calling shell" not in result.text and "hello again" in result.text
    roles = [m.role for m in h.session.view.messages]
    assert roles[:3] == ["user", "assistant", "user"]
    assert (
        h.session.view.messages[1].meta.origin == "notice" and "No answer" in h.session.view.messages[1].text
    )
    sent = h.session.store.list_requests(h.session.id)[-1]["body_preview"]
    assert "No answer" in sent and "hello again" in sent


async def test_a_prompt_cancelled_with_esc_is_not_carried_out_with_the_next_one(make_harness, lab):
    h = make_harness()
    workspace = h.engine.workspace
    lab.configure(faults="timeout@1")  # the first request hangs until Esc
    task = asyncio.ensure_future(h.engine.submit("!shell touch cancelled-turn.txt"))
    await wait_for_request(lab)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    lab.configure(faults=None)

    result = await h.engine.submit("something else")

    assert result.outcome == "answered"
    assert not (workspace / "cancelled-turn.txt").exists()
    assert "calling shell" not in result.text


async def wait_for_request(lab, limit: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit
    while not lab.requests():
        assert loop.time() < deadline, "the lab never received the request"
        await asyncio.sleep(0.01)


async def allow(name, args, why):
    return True


def no_reply_notes(h) -> list:
    return [m for m in h.session.view.messages if m.text == INTERRUPTED_TURN]


async def test_a_prompt_after_undo_is_not_told_the_last_request_got_no_reply(make_harness):
    """/undo leaves the model a note (a user message from bulkhead); the next prompt is no answer to
    a failed request: no 'got no reply' line is added (issue 40)."""
    h = make_harness(approver=allow)
    await h.engine.submit("!write notes.md draft 1")
    await h.engine.submit("!edit notes.md 'draft 1' 'draft 2'")
    await h.engine.undo()
    assert (h.engine.workspace / "notes.md").read_text() == "draft 1"

    result = await h.engine.submit("what now?")

    assert result.outcome == "answered"
    assert no_reply_notes(h) == []
    assert not [e for e in h.of_type("notice") if e.code == "interrupted"]


async def test_a_prompt_after_rewinding_next_to_a_summary_is_not_told_it_got_no_reply(make_harness):
    """A compacted view starts with bulkhead's summary (a user message); /rewind with files to the first
    prompt after it leaves the summary last. The next prompt adds no 'got no reply' line."""
    h = make_harness(approver=allow)
    for i in range(4):
        await h.engine.submit(f"!write notes.md draft {i}")
    await h.engine.compact()
    view = h.session.view.messages
    prompts = [m for m in view if m.role == "user" and m.meta.origin == "user"]
    assert view[0].role == "user" and view[0].meta.origin != "user" and prompts
    await h.engine.rewind_to(prompts[0].id, files=True)
    assert h.session.view.messages[-1].role == "user"  # the summary, last
    assert (h.engine.workspace / "notes.md").read_text() == "draft 2"

    result = await h.engine.submit("start again from here")

    assert result.outcome == "answered"
    assert no_reply_notes(h) == []
