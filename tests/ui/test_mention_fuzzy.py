"""Fuzzy `@` completion in the prompt: the workspace's files listed in a worker (git's view: nothing
ignored), matched as you type, listed again after a turn that may have made files."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from app.ui.headless import ready, settle, until
from tests.ui.conftest import lab_settings
from tests.ui.test_app import SIZE, make_app, submit

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def workspace(root: Path) -> Path:
    for relative in (
        "app/cli.py",
        "app/client.py",
        "app/ui/app.py",
        "README.md",
        "app/__pycache__/cli.cpython-311.pyc",
        "app/__pycache__/app.cpython-311.pyc",
    ):
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x = 1\n")
    (root / ".gitignore").write_text("__pycache__/\n")
    return root


@needs_git
async def test_at_is_fuzzy_and_never_offers_ignored_files(lab, tmp_path):
    root = workspace(tmp_path / "ws")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    app = make_app(lab_settings(lab), root)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press(*"look at @clipy")  # typed before the first listing is done
        await until(
            pilot,
            lambda: app.prompt.completions and app.prompt.completions[0][0] == "@app/cli.py",
            "the fuzzy list once the files are listed",
        )
        assert "files (git)" in app.prompt.files_status
        await pilot.press("tab")
        assert app.prompt.text == "look at @app/cli.py "
        app.prompt.set_text("")
        await pilot.press(*"@pyc")  # the compiled files' names match, but git ignores them
        assert not [w for w, _ in app.prompt.completions if "__pycache__" in w]
        assert "Tab completes" in str(app.query_one("#completions").render())


async def test_files_made_by_a_turn_are_offered_next(lab, tmp_path):
    root = workspace(tmp_path / "ws")
    app = make_app(lab_settings(lab, approval="never-ask"), root)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press("@")
        await until(pilot, lambda: app.prompt.file_matcher is not None, "the workspace's files")
        first = app.prompt.file_matcher
        app.prompt.set_text("")
        await submit(pilot, "!write notes/fresh_module.py hello")
        await settle(pilot)
        assert (root / "notes" / "fresh_module.py").exists()
        await pilot.press(*"@freshmod")
        await until(pilot, lambda: app.prompt.file_matcher is not first, "the files listed again")
        await until(
            pilot,
            lambda: app.prompt.completions and app.prompt.completions[0][0] == "@notes/fresh_module.py",
            "the new file offered",
        )
