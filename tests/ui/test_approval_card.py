"""Edits are reviewed before they happen (issue 40, item 3), from the real command line.

The TUI is built from a parsed argv as `bulkhead` builds it (nothing configured: the in-process lab, whose
model obeys `!edit PATH OLD NEW` and `!write PATH TEXT`). The approval card of an edit shows the coloured
diff (a new file: its first lines) before anything is written; `d` denies and sends one line back to the
model; Shift+Tab and `/approval` change the approval mode in the session.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Static

from app.cli import build_parser
from app.ui.headless import ready, settle, until
from app.ui.run import build_app

SIZE = (160, 45)
SOURCE = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"


def tui(monkeypatch: pytest.MonkeyPatch, folder: Path, *argv: str):
    monkeypatch.chdir(folder)
    return build_app(build_parser().parse_args(list(argv)), cursor_blink=False, keymap={})


async def ask(pilot, text: str):
    app = pilot.app
    app.prompt.set_text(text)
    await pilot.press("enter")
    await until(pilot, lambda: app.chat.pending_approval() is not None, "the approval card")
    await pilot.pause()
    return app.chat.pending_approval()


def card_preview(block) -> Static:
    return block.query_one(".approval-preview", Static)


def spans_of(text, fragment: str) -> set[str]:
    """The styles drawn over the line holding `fragment`."""
    start = text.plain.index(fragment)
    return {str(span.style) for span in text.spans if span.start <= start < span.end}


async def test_an_edit_card_shows_the_coloured_diff_before_anything_is_written(tmp_path, monkeypatch):
    (tmp_path / "calc.py").write_text(SOURCE)
    app = tui(monkeypatch, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        block = await ask(pilot, '!edit calc.py "return a - b" "return b - a"')
        preview = card_preview(block)
        assert preview.display and block.preview.summary == "calc.py: +1 −1 lines"
        shown = block._preview_shown()
        assert "-    return a - b" in shown.plain and "+    return b - a" in shown.plain
        removed, added = spans_of(shown, "-    return a - b"), spans_of(shown, "+    return b - a")
        assert removed and added and removed != added  # told apart by colour
        assert (tmp_path / "calc.py").read_text() == SOURCE  # nothing written while it waits
        await pilot.press("y")
        await settle(pilot)
        assert "return b - a" in (tmp_path / "calc.py").read_text()
        result = block._body_shown()  # the diff after it ran is coloured too
        assert spans_of(result, "+    return b - a") != spans_of(result, "-    return a - b")


async def test_d_denies_and_tells_the_model_why(tmp_path, monkeypatch):
    (tmp_path / "calc.py").write_text(SOURCE)
    app = tui(monkeypatch, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        block = await ask(pilot, '!edit calc.py "return a - b" "return b - a"')
        await pilot.press("d")
        await pilot.pause()
        assert app.focused.has_class("deny-reason")  # a one-line box in the card has the keyboard
        await pilot.press("escape")  # back to the card, still waiting (Esc does not cancel the turn here)
        assert block.pending and app.busy
        await pilot.press("d", *"keep", "space", *"sub", "enter")
        await settle(pilot)
        assert block.decision == "denied" and (tmp_path / "calc.py").read_text() == SOURCE
        results = [m for m in app.session.engine.session.master if m.role == "tool"]
        assert "The user denied this edit_file call and said: keep sub" in results[-1].parts[0].content
        assert app.focused is app.prompt


async def test_shift_tab_and_slash_approval_change_the_mode_in_the_session(tmp_path, monkeypatch):
    (tmp_path / "calc.py").write_text(SOURCE)
    app = tui(monkeypatch, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        assert app.session.engine.settings.approval == "auto-read"
        assert app.prompt.border_subtitle == "approval: auto-read · Shift+Tab"
        await pilot.press("shift+tab")
        assert app.session.engine.settings.approval == "auto-edit"
        assert app.prompt.border_subtitle == "approval: auto-edit · Shift+Tab"
        app.prompt.set_text('!edit calc.py "return a - b" "return b - a"')  # auto-edit: no card
        await pilot.press("enter")
        await settle(pilot)
        assert "return b - a" in (tmp_path / "calc.py").read_text()
        app.prompt.set_text("/approval ask")
        await pilot.press("enter")
        await until(pilot, lambda: app.session.engine.settings.approval == "ask", "the mode")
        block = await ask(pilot, "!read calc.py")  # ask: even a read asks now
        assert block.tool_name == "read_file"
        await pilot.press("y")
        await settle(pilot)
        await pilot.press("shift+tab", "shift+tab")  # ask → auto-read → auto-edit
        assert app.session.engine.settings.approval == "auto-edit"


def test_one_shot_shows_the_diff_and_takes_a_reason_on_the_terminal(tmp_path):
    """-p asks on the controlling terminal: the diff first; an answer other than y / n is a denial whose
    words the model gets."""
    from tests.reliability.helpers.terminal import run_bulkhead

    (tmp_path / "calc.py").write_text(SOURCE)
    repo = str(Path(__file__).resolve().parents[2])
    done = run_bulkhead(
        ["-p", '!edit calc.py "return a - b" "return b - a"', "--json"],
        answers=["keep sub as it is"],
        cwd=tmp_path,
        env={"PYTHONPATH": repo},
    )
    tty = done.tty.decode("utf-8", "replace")
    assert "calc.py: +1 −1 lines" in tty and "-    return a - b" in tty and "+    return b - a" in tty
    assert done.questions == 1 and (tmp_path / "calc.py").read_text() == SOURCE
    assert "The user denied this edit_file call and said: keep sub as it is" in done.out


async def test_always_is_offered_only_where_it_takes_effect(tmp_path, monkeypatch):
    """Under an explicit ask rule, a / p would write an allow rule the ask rule overrides: not offered."""
    import os

    Path(os.environ["BULKHEAD_CONFIG"]).write_text('[permissions]\nask = ["Bash(echo *)"]\n')
    app = tui(monkeypatch, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        block = await ask(pilot, "!shell echo hi")
        why = str(block.query_one(".approval-why", Static).render())
        assert "no a / p (always allow): the ask rule Bash(echo *)" in why and "ask wins over allow" in why
        assert not any(b.display for b in block.query(".always-session, .always-project"))
        assert "a" not in app.screen.active_bindings and "p" not in app.screen.active_bindings
        await pilot.press("y")
        await settle(pilot)
        # a command no rule covers offers them, with the rule it keeps
        block = await ask(pilot, "!shell pwd")
        assert block.remember == "Bash(pwd)" and all(
            b.display for b in block.query(".always-session, .always-project")
        )
        await pilot.press("a")
        await settle(pilot)
        assert ("allow", "Bash(pwd)", "this session") in app.session.engine.permissions.listing()
