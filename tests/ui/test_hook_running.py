"""A hanging UserPromptSubmit hook (issue 37, item 18): the status names it, the Hooks panel lists it as running,
Esc stops it and says so, and the prompt comes back to the box."""

from __future__ import annotations

import os
from pathlib import Path

from app.config import HookSpec
from app.ui.headless import ready, until
from tests.ui.conftest import lab_settings
from tests.ui.test_app import SIZE, make_app


async def test_esc_stops_a_hanging_prompt_hook_and_says_what_it_did(lab, tmp_path: Path):
    pid_file = tmp_path / "hook.pid"
    hook = tmp_path / "slow.sh"
    hook.write_text(f"#!/bin/sh\necho $$ > {pid_file}\nexec sleep 300\n")
    hook.chmod(0o755)
    settings = lab_settings(lab, hooks=(HookSpec("UserPromptSubmit", str(hook)),))
    app = make_app(settings, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        app.prompt.set_text("a prompt the hook holds")
        await pilot.press("enter")
        await until(
            pilot, lambda: app.prompt_box.busy_text.startswith("running the UserPromptSubmit hook"), "status"
        )
        await until(pilot, pid_file.exists, "the hook running")
        panel = app.inspector.hooks
        await until(
            pilot, lambda: any(r.output.startswith("running") for r in panel.newest_first), "a running row"
        )

        await pilot.press("escape")

        await until(pilot, lambda: not app.busy, "the turn to stop")
        await until(pilot, lambda: app.chat.notices("hook"), "the notice")
        said = app.chat.notices("hook")[-1].text
        assert "cancelled" in said and "the prompt was not sent" in said
        assert app.prompt.text == "a prompt the hook holds"
        pid = int(pid_file.read_text())
        await until(pilot, lambda: not _alive(pid), "the hook killed")
        assert [r.decision for r in panel.newest_first][:1] == ["cancelled"]
        await app.action_quit()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(")")[-1].split()[0] not in ("Z", "X")
    except OSError:
        return False
