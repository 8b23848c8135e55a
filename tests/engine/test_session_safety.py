"""Sessions keep to themselves (issue 14): the model recalls only its own session's archive; a prompt
whose turn was killed is not replayed merged into the next one."""

from __future__ import annotations

from app.engine.archive import ArchiveEntry, archive_key
from app.engine.messages import ToolResult
from app.engine.session import Session

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
    tool_results = [p for m in h.session.master if m.role == "tool" for p in m.parts if isinstance(p, ToolResult)]
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
