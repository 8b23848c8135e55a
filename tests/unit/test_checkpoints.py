"""The checkpoint store: what a snapshot keeps, how undo chooses, and what survives a crash."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from app.engine.checkpoints import CheckpointError, Checkpoints, describe


@pytest.fixture
def store(tmp_path: Path) -> Checkpoints:
    return Checkpoints(tmp_path / "session", max_bytes=1024)


def test_snapshots_keep_bytes_once_and_the_index_is_private(store: Checkpoints, tmp_path: Path) -> None:
    a, b = tmp_path / "a.bin", tmp_path / "b.bin"
    a.write_bytes(b"\x00\xffsame")
    b.write_bytes(b"\x00\xffsame")
    store.snapshot(a, turn=1, call_id="c1")
    store.snapshot(b, turn=1, call_id="c2")
    assert len(list(store.blobs.iterdir())) == 1
    assert stat.S_IMODE(store.index.stat().st_mode) == 0o600
    assert stat.S_IMODE(store.folder.stat().st_mode) == 0o700


def test_a_file_over_the_limit_is_refused_with_the_key_named(store: Checkpoints, tmp_path: Path) -> None:
    big = tmp_path / "big.log"
    big.write_bytes(b"x" * 2048)
    with pytest.raises(CheckpointError, match="checkpoint_max_bytes"):
        store.snapshot(big, turn=1, call_id="c")


def test_folders_and_devices_are_not_snapshotted(store: Checkpoints, tmp_path: Path) -> None:
    assert store.snapshot(tmp_path, turn=1, call_id="c") is None
    assert store.active() == []


def test_undo_uses_the_first_snapshot_of_the_turn(store: Checkpoints, tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    path.write_text("before")
    store.snapshot(path, turn=2, call_id="c1")
    path.write_text("middle")
    store.snapshot(path, turn=2, call_id="c2")
    path.write_text("after")
    turn, results = store.undo_last_turn()
    assert turn == 2 and path.read_text() == "before"
    assert describe(results, tmp_path) == "restored f.txt"


def test_a_symlink_stays_a_symlink(store: Checkpoints, tmp_path: Path) -> None:
    real = tmp_path / "real.txt"
    real.write_text("v1")
    link = tmp_path / "link.txt"
    link.symlink_to(real)
    store.snapshot(link, turn=1, call_id="c")
    link.write_text("v2")
    store.undo_last_turn()
    assert link.is_symlink() and real.read_text() == "v1"


def test_a_line_cut_by_a_crash_is_skipped(store: Checkpoints, tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    path.write_text("v1")
    store.snapshot(path, turn=1, call_id="c")
    with store.index.open("a") as handle:
        handle.write('{"kind": "snapshot", "id": "cut')
    path.write_text("v2")
    assert store.undo_last_turn()[0] == 1 and path.read_text() == "v1"


def test_a_file_changed_back_by_hand_is_reported_unchanged(store: Checkpoints, tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    path.write_text("v1")
    os.chmod(path, 0o640)
    store.snapshot(path, turn=1, call_id="c")
    _turn, results = store.undo_last_turn()
    assert [r.action for r in results] == ["unchanged"]
