"""Checkpoints, `/undo` and `/rewind` through real turns: exact bytes and mode come back, the master log
keeps everything."""

from __future__ import annotations

import os
import stat

import pytest

from app.engine.checkpoints import Checkpoints

ORIGINAL = b"line one\r\nline two \xe2\x9c\x93\nno newline at the end"


async def allow(name, args, why):
    return True


def mode(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
async def test_undo_after_edit_file_restores_exact_bytes_and_mode(make_harness, provider):
    h = make_harness(provider, approver=allow)
    target = h.engine.workspace / "script.sh"
    target.write_bytes(ORIGINAL)
    os.chmod(target, 0o751)

    result = await h.engine.submit("!edit script.sh 'line two' 'LINE 2'")

    assert result.outcome == "answered"
    assert b"LINE 2" in target.read_bytes()
    master_before = [m.id for m in h.session.master]

    restored = await h.engine.undo()

    assert [r.action for r in restored] == ["restored"]
    assert target.read_bytes() == ORIGINAL and mode(target) == 0o751
    undo = [e.text for e in h.of_type("notice") if e.code == "undo"][-1]
    assert undo == "undid the file changes of turn 1: restored script.sh"
    # the log keeps the edit; the model is told what the user did
    assert [m.id for m in h.session.master][: len(master_before)] == master_before
    told = h.session.master[-1]
    assert (
        told.role == "user"
        and told.meta.origin == "notice"
        and "undid the file changes of turn 1" in told.text
    )
    assert await h.engine.undo() == []  # nothing left to undo
    assert [e.text for e in h.of_type("notice") if e.code == "undo"][-1].startswith("nothing to undo")


async def test_undo_removes_a_file_the_turn_created_and_only_touches_the_last_turn(make_harness):
    h = make_harness(approver=allow)
    first = h.engine.workspace / "first.txt"
    first.write_text("v1")
    await h.engine.submit("!write first.txt v2")
    await h.engine.submit("!write created.txt fresh\n!write first.txt v3")

    restored = await h.engine.undo()

    assert sorted(r.action for r in restored) == ["removed", "restored"]
    assert not (h.engine.workspace / "created.txt").exists()
    assert first.read_text() == "v2"  # as before the last turn, not the first
    await h.engine.undo()
    assert first.read_text() == "v1"


async def test_a_failed_edit_leaves_nothing_to_undo(make_harness):
    h = make_harness(approver=allow)
    (h.engine.workspace / "a.txt").write_text("alpha")
    await h.engine.submit("!edit a.txt missing replacement")
    assert h.session.master[2].tool_results[0].is_error
    assert Checkpoints(h.session.folder, max_bytes=1 << 20).active() == []


async def test_rewind_restores_the_view_and_the_files_and_keeps_the_master_log(make_harness):
    h = make_harness(approver=allow)
    notes = h.engine.workspace / "notes.md"
    notes.write_text("draft 0\n")
    os.chmod(notes, 0o600)
    await h.engine.submit("first question")
    await h.engine.submit("!write notes.md draft 1")
    await h.engine.submit("!write notes.md draft 2\n!write extra.md more")
    master_before = list(h.session.master)
    points = h.engine.rewind_points()
    assert [p.text.splitlines()[0] for p, _changed in points] == [
        "first question",
        "!write notes.md draft 1",
        "!write notes.md draft 2",
    ]
    assert [changed for _p, changed in points] == [2, 2, 2]

    prompt, restored = await h.engine.rewind_to(points[1][0].id, files=True)

    assert prompt.text == "!write notes.md draft 1"
    view = h.session.view.messages
    assert [m.text for m in view if m.role == "user"] == ["first question"]
    assert view == tuple(master_before[:2])  # exactly the conversation before that prompt
    assert notes.read_text() == "draft 0\n" and mode(notes) == 0o600
    assert not (h.engine.workspace / "extra.md").exists()
    assert sorted(r.action for r in restored) == ["removed", "restored"]
    assert h.session.master == master_before  # the master log still holds everything
    stored = h.session.store.load_master(h.session.id)
    assert [m.id for m in stored] == [m.id for m in master_before]
    assert h.engine.rewind_points()[1][1] == 0  # nothing changed since any more

    # a new turn continues from the rewound view; /rewind compact would bring the old one back
    await h.engine.submit("second try")
    assert [m.text for m in h.session.view.messages if m.role == "user"] == ["first question", "second try"]


async def test_rewind_without_files_leaves_them(make_harness):
    h = make_harness(approver=allow)
    await h.engine.submit("!write kept.md written")
    prompt_id = h.engine.rewind_points()[0][0].id
    _prompt, restored = await h.engine.rewind_to(prompt_id, files=False)
    assert restored == [] and (h.engine.workspace / "kept.md").read_text() == "written"
    assert len(h.session.view) == 0
    assert "files left as they are" in [e.text for e in h.of_type("notice") if e.code == "rewind"][-1]


# -- issue 37, item 11 and 19: links swapped in ----------------------------------------------------------------
async def test_undo_asks_before_restoring_through_a_link_out_of_the_workspace(make_harness, tmp_path):
    asked = []

    async def answer(name, args, why):
        asked.append(why)
        return not why.startswith("/undo")  # yes to the write, no to the restore through the link

    h = make_harness(approver=answer)
    victim = tmp_path / "victim.txt"
    victim.write_text("someone else's\n")
    notes = h.engine.workspace / "notes.txt"
    notes.write_text("v1\n")
    await h.engine.submit("!write notes.txt v2")
    notes.unlink()
    notes.symlink_to(victim)

    results = await h.engine.undo()

    assert victim.read_text() == "someone else's\n"
    assert [r.action for r in results] == ["skipped"]
    assert any(why.startswith("/undo would restore") and str(victim) in why for why in asked)


async def test_a_link_swapped_in_while_the_user_decides_is_not_written_through(make_harness, tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("someone else's\n")

    async def swap_then_yes(name, args, why):
        target = h.engine.workspace / "inside.txt"
        target.unlink()
        target.symlink_to(victim)  # between the question and the write
        return True

    h = make_harness(approver=swap_then_yes)
    (h.engine.workspace / "inside.txt").write_text("mine\n")

    await h.engine.submit("!write inside.txt overwritten")

    assert victim.read_text() == "someone else's\n"
    result = [r for m in h.session.master for r in m.tool_results][0]
    assert result.is_error and "resolves somewhere else than when it was approved" in result.content
