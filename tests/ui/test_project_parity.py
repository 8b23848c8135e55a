"""Pilot tests of issue 17's everyday habits in the TUI, against the lab: project instructions and the
floor breakdown, `#` / `/memory` / `/init`, remembered approvals, `/undo`, `/rewind`, `/permissions`,
custom commands and images."""

from __future__ import annotations

import json
import tomllib
from datetime import UTC
from pathlib import Path

import pytest

from app.sizes import format_size
from app.ui.headless import ready, settle, until
from app.ui.palette import applicable_titles
from app.ui.screens.help import HelpScreen
from app.ui.screens.permissions import PermissionsScreen
from app.ui.screens.rewind import RewindScreen
from app.ui.slash import complete_slash
from app.ui.widgets.inspector import Inspector
from tests.ui.conftest import lab_settings
from tests.ui.test_app import SIZE, approval_for, make_app, send, submit
from tests.unit.test_images import png

MARKER = "AGENTS-MARKER-in-the-tui-42"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    return folder


async def test_agents_md_reaches_the_request_and_the_payload_panel_breaks_the_floor_down(lab, ws):
    (ws / "AGENTS.md").write_text(f"# House rules\n{MARKER}\n")
    app = make_app(lab_settings(lab), ws, inspector=Inspector(clock=lambda: 0.0, tz=UTC))
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await send(pilot, "hello")
        assert MARKER in lab.requests()[-1]["system_tail"]
        payload = app.inspector.payload
        parts = {part.label: part.bytes for part in payload.floor}
        floor = app.session.engine.floor_sizes()
        assert parts == {part.label: part.bytes for part in floor.parts}
        assert f"instructions {format_size(parts['instructions'])}" in payload.floor_label
        assert payload.floor_label.startswith(f"Floor {format_size(floor.total_bytes)}: system prompt ")
        shown = str(payload.query_one("#payload-floor").render())
        assert shown == payload.floor_label
        assert app.chat.notices("instructions") and "AGENTS.md" in app.chat.notices("instructions")[0].text


async def test_a_hash_line_and_memory_append_to_agents_md(lab, ws):
    app = make_app(lab_settings(lab), ws)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await submit(pilot, "# Tests run with `make check`")
        await until(pilot, lambda: app.chat.notices("memory"), "the memory notice")
        assert (ws / "AGENTS.md").read_text() == "- Tests run with `make check`\n"
        assert not app.session.engine.session.master  # nothing was sent to the model
        await send(pilot, "/memory")
        report = app.chat.items[-1].copy_text()
        assert "AGENTS.md" in report and "of the system prompt" in report
        await send(pilot, "hi")
        assert "make check" in lab.requests()[-1]["system_tail"]


async def test_init_writes_agents_md_through_an_approval_and_undo_takes_it_back(lab, ws):
    (ws / "Makefile").write_text("test:\n\tpytest\n")
    app = make_app(lab_settings(lab, approval="auto-read"), ws)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await submit(pilot, "/init")
        await until(pilot, lambda: app.chat.pending_approval() is not None, "the write_file approval")
        app.chat.focus()
        await pilot.press("y")
        await settle(pilot)
        assert "- test: `make test`" in (ws / "AGENTS.md").read_text()
        assert (
            "make test" in app.session.engine.system
        )  # loaded into the system prompt at the end of the turn
        await send(pilot, "/undo")
        assert not (ws / "AGENTS.md").exists()
        assert "removed AGENTS.md" in app.chat.notices("undo")[-1].text


async def test_always_for_the_session_and_for_the_project(lab, ws):
    app = make_app(lab_settings(lab, approval="auto-read"), ws)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        block = await approval_for(pilot, "!shell echo one")
        assert block.remember == "Bash(echo one)"
        assert "a / p: also allow Bash(echo one)" in str(block.query_one(".approval-why").render())
        await pilot.press("a")
        await settle(pilot)
        assert block.decision == "approved"
        await send(pilot, "!shell echo one")  # no approval this time
        assert app.chat.tool_blocks()[-1].decision == "auto"
        assert "Bash(echo one)" in app.chat.tool_blocks()[-1].reason

        block = await approval_for(pilot, "!shell echo two")
        await pilot.click(block.query_one(".always-project"))
        await settle(pilot)
        saved = tomllib.loads((ws / ".bulkhead" / "settings.toml").read_text())
        assert saved["permissions"]["allow"] == ["Bash(echo two)"]
        assert "saved in" in app.chat.notices("permissions")[-1].text


async def test_undo_restores_an_edited_file(lab, ws):
    target = ws / "app.py"
    target.write_bytes(b"print('v1')\n")
    target.chmod(0o640)
    app = make_app(lab_settings(lab, approval="auto-edit"), ws)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        assert "files: undo the last turn's changes" not in applicable_titles(app)
        await send(pilot, "!edit app.py v1 v2")
        assert target.read_bytes() == b"print('v2')\n"
        assert "files: undo the last turn's changes" in applicable_titles(app)
        await send(pilot, "/undo")
        assert target.read_bytes() == b"print('v1')\n" and target.stat().st_mode & 0o777 == 0o640
        assert app.chat.notices("undo")[-1].text == "undid the file changes of turn 1: restored app.py"


async def test_rewind_picks_a_prompt_and_restores_the_view_and_files(lab, ws):
    notes = ws / "notes.md"
    notes.write_text("v0")
    app = make_app(lab_settings(lab, approval="auto-edit"), ws)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await send(pilot, "first question")
        await send(pilot, "!write notes.md v1")
        await send(pilot, "!write notes.md v2")
        master = list(app.session.engine.session.master)

        await submit(pilot, "/rewind")
        await until(pilot, lambda: isinstance(app.screen, RewindScreen), "the rewind picker")
        screen = app.screen
        assert [m.text for m, _changed in screen.points] == [
            "!write notes.md v2",
            "!write notes.md v1",
            "first question",
        ]
        await pilot.press("down")  # the second newest: "!write notes.md v1"
        await pilot.press("f")  # conversation and files
        await until(pilot, lambda: app.chat.notices("rewind"), "the rewind")
        await settle(pilot)

        assert notes.read_text() == "v0"
        assert app.prompt.text == "!write notes.md v1"  # back in the prompt, to edit and send
        users = [item.text for item in app.chat.items if item.kind == "user"]
        assert users == ["first question"]
        assert [m.text for m in app.session.engine.session.view.messages if m.role == "user"] == [
            "first question"
        ]
        assert app.session.engine.session.master == master  # the log keeps everything


async def test_permissions_view_and_help_list_the_rules(lab, ws):
    (ws / ".claude").mkdir()
    (ws / ".claude" / "settings.json").write_text(
        json.dumps({"permissions": {"allow": ["Bash(npm test:*)"], "deny": ["Read(./.env)"]}})
    )
    app = make_app(lab_settings(lab), ws)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        from app.ui.screens.rules_trust import RulesTrustScreen

        # the repository's file: its allow rule waits for a yes (issue 37), its deny rule is in force already
        await until(pilot, lambda: isinstance(app.screen, RulesTrustScreen), "the question about the rules")
        await pilot.press("y")
        await until(pilot, lambda: not app.session.engine.permissions.pending_files(), "the answer")
        await submit(pilot, "/permissions")
        await until(pilot, lambda: isinstance(app.screen, PermissionsScreen), "the permissions view")
        table = app.screen.query_one("#permissions-table")
        rows = [[str(cell) for cell in table.get_row_at(i)] for i in range(table.row_count)]
        assert rows == [
            ["deny", "Read(./.env)", ".claude/settings.json"],
            ["allow", "Bash(npm test:*)", ".claude/settings.json"],
        ]
        await pilot.press("escape")
        await pilot.press("f1")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen), "help")
        assert "**deny** `Read(./.env)` — .claude/settings.json" in app.screen.markdown


async def test_custom_commands_complete_show_in_help_and_palette_and_run(lab, ws):
    commands = ws / ".claude" / "commands"
    commands.mkdir(parents=True)
    (commands / "explain.md").write_text(
        "---\ndescription: Explain a file\nargument-hint: PATH\n---\nExplain $ARGUMENTS to a newcomer.\n"
    )
    (commands / "evil\x1b[31m.md").write_text(
        "x"
    )  # a name a terminal would interpret: skipped, shown escaped
    app = make_app(lab_settings(lab), ws)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        assert [c.name for c in app.custom_commands] == ["explain"]
        warning = app.chat.notices("commands")[0].text
        assert "\\x1b[31m" in warning and "\x1b" not in warning
        assert complete_slash("/expl", extra=app.custom_completions()) == [
            ("/explain", "PATH — Explain a file (.claude/commands)")
        ]
        assert "command: /explain" in applicable_titles(app)
        await send(pilot, "/explain app/cli.py")
        assert app.session.engine.session.master[0].text == "Explain app/cli.py to a newcomer.\n"
        assert "You said: “Explain app/cli.py to a newcomer.”" in app.chat.last_answer().raw
        await pilot.press("f1")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen), "help")
        assert "`/explain PATH` — Explain a file" in app.screen.markdown


async def test_an_image_mention_is_attached_and_said(lab, ws):
    (ws / "shot.png").write_bytes(png(32, 32))
    app = make_app(lab_settings(lab), ws)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await send(pilot, "what is in @shot.png?")
        notice = app.chat.notices("image")[0].text
        assert notice.startswith("attached @shot.png as an image (image/png") and "as base64" in notice
        assert lab.requests()[-1]["bytes"] > len(png(32, 32))
