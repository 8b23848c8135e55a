"""`/undo` and `/rewind` never write or delete through a link out of the workspace unasked, and write
atomically (issue 37, item 11)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from app.engine.checkpoints import Checkpoints


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    return folder


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    return folder


@pytest.fixture
def store(tmp_path: Path) -> Checkpoints:
    return Checkpoints(tmp_path / "session", max_bytes=1 << 20)


def test_a_file_replaced_by_a_link_out_is_not_restored_through_it(store, ws, outside) -> None:
    victim = outside / ".bashrc"
    victim.write_text("# mine\n")
    path = ws / "notes.txt"
    path.write_text("v1\n")
    store.snapshot(path, turn=1, call_id="c")
    path.unlink()
    path.symlink_to(victim)  # the model (a shell command) swapped a link in since

    turn, snapshots = store.last_turn_snapshots()
    assert store.escaping(snapshots, ws) == {str(path): victim}
    [result] = store.restore(snapshots, ws)

    assert victim.read_text() == "# mine\n"
    assert result.action == "skipped" and "outside the workspace" in result.detail


def test_with_the_users_yes_it_is_restored_there_atomically(store, ws, outside) -> None:
    victim = outside / "data.txt"
    victim.write_text("original\n")
    path = ws / "data.txt"
    path.symlink_to(victim)
    store.snapshot(path, turn=1, call_id="c")  # a link to outside that the user approved writing through
    victim.write_text("changed by the model\n")
    inode = victim.stat().st_ino

    _turn, snapshots = store.last_turn_snapshots()
    [result] = store.restore(snapshots, ws, approved=[str(path)])

    assert result.action == "restored" and victim.read_text() == "original\n"
    assert victim.stat().st_ino != inode  # a new file renamed over it: never half-written
    assert path.is_symlink()


def test_removing_a_created_file_never_follows_a_folder_link(store, ws, outside) -> None:
    (outside / "new.txt").write_text("someone else's file\n")
    created = ws / "build" / "new.txt"
    created.parent.mkdir()
    store.snapshot(created, turn=1, call_id="c")  # did not exist: /undo removes it
    created.write_text("made by the model\n")
    created.unlink()
    created.parent.rmdir()
    (ws / "build").symlink_to(outside)  # the folder is now a link out

    _turn, snapshots = store.last_turn_snapshots()
    [result] = store.restore(snapshots, ws)

    assert (outside / "new.txt").read_text() == "someone else's file\n"
    assert result.action == "skipped"


def test_a_created_file_that_became_a_link_is_removed_as_a_link(store, ws, outside) -> None:
    target = outside / "keep.txt"
    target.write_text("keep\n")
    created = ws / "made.txt"
    store.snapshot(created, turn=1, call_id="c")
    created.symlink_to(target)

    _turn, snapshots = store.last_turn_snapshots()
    [result] = store.restore(snapshots, ws)

    assert result.action == "removed" and not created.is_symlink() and target.read_text() == "keep\n"


def test_an_ordinary_restore_is_atomic(store, ws) -> None:
    path = ws / "a.txt"
    path.write_text("before\n")
    os.chmod(path, 0o640)
    store.snapshot(path, turn=1, call_id="c")
    path.write_text("after\n")
    inode = path.stat().st_ino

    _turn, results = store.undo_last_turn(ws)

    assert results[0].action == "restored" and path.read_text() == "before\n"
    assert path.stat().st_ino != inode and (path.stat().st_mode & 0o777) == 0o640
