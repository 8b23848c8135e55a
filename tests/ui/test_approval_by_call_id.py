"""An approval lands on the tool block of its own call (issue 43): the TUI answers the engine by call id.

One answer of the lab model makes two `shell` calls that both need approval. Each card sits on the block
of the call it asks about; answering one never answers the other; a denial's reason reaches its own call.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from app.cli import build_parser
from app.ui.headless import ready, settle, until
from app.ui.run import build_app

SIZE = (160, 45)


def tui(monkeypatch: pytest.MonkeyPatch, folder: Path, *argv: str):
    monkeypatch.chdir(folder)
    return build_app(build_parser().parse_args(list(argv)), cursor_blink=False, keymap={})


async def test_two_calls_of_one_tool_each_get_their_own_card(tmp_path, monkeypatch):
    app = tui(monkeypatch, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        app.prompt.set_text("!shell echo first > one.txt\n!shell echo second > two.txt")
        await pilot.press("enter")
        await until(pilot, lambda: app.chat.pending_approval() is not None, "the first card")
        first, second_or_none = app.chat.tool_blocks()[0], app.chat.tool_blocks()[1:]
        assert app.chat.pending_approval() is first and "one.txt" in first.args["command"]
        await pilot.press("y")
        await until(pilot, lambda: len(app.chat.tool_blocks()) == 2, "the second call's block")
        await until(pilot, lambda: app.chat.pending_approval() is not None, "the second card")
        second = app.chat.tool_blocks()[1]
        assert not second_or_none and "two.txt" in second.args["command"]
        assert app.chat.pending_approval() is second and not first.pending
        await pilot.press("d")
        await pilot.pause()
        await pilot.press(*"not that one")
        await pilot.press("enter")
        await settle(pilot)
        await until(pilot, lambda: app.activity == "", "the turn's end")
        assert first.decision == "approved" and (tmp_path / "one.txt").read_text() == "first\n"
        assert second.decision == "denied" and "not that one" in second.reason
        assert not (tmp_path / "two.txt").exists()


async def test_an_image_outside_the_workspace_is_asked_in_a_block_of_its_own(tmp_path, monkeypatch):
    """A question about no tool call of the model's (its id made up by the engine) still shows a card."""
    from tests.unit.test_images import png

    work = tmp_path / "work"
    work.mkdir()
    outside = tmp_path / "private.png"
    outside.write_bytes(png())
    app = tui(monkeypatch, work)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        app.prompt.set_text(f"look at {outside}")
        await pilot.press("enter")
        await until(pilot, lambda: app.chat.pending_approval() is not None, "the image's card")
        block = app.chat.pending_approval()
        assert block.asked_only and block.tool_name == "read_file" and "outside the workspace" in block._why
        await pilot.press("n")
        await until(pilot, lambda: app.activity == "", "the turn's end")
        await settle(pilot)
        assert block.decision == "denied" and not block.pending
        assert "denied" in block._header().plain and "running" not in block._header().plain
        assert any("not attached" in str(n.text) for n in app.chat.notices("image"))
