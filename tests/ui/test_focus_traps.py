"""The keyboard never traps you (issue 40, item 2), from the real command line.

Each trap a day of use found is replayed with the keys a user pressed, in the TUI built from a parsed
argv as `bulkhead` builds it (`app.ui.run.build_app`), on a scripted session (`tests/ui/fake_session.py`:
the subject is the keyboard, not the engine; the archive recall runs on the real one). The rules:
printable keys typed anywhere but a text field go to the prompt; Esc from anywhere returns to the prompt;
the focused area is always one you can see; PageUp / PageDown / Home / End scroll the chat from the
prompt when its own text does not need them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from app.cli import build_parser
from app.ui.chat_items import AssistantItem, UserItem
from app.ui.focus_rules import visible
from app.ui.headless import ready, settle, until
from app.ui.prompt import PromptArea
from app.ui.run import build_app
from tests.ui.fake_session import FakeSession, tool_call
from tests.ui.test_panels import seed_archive

SIZE = (160, 45)


@pytest.fixture(autouse=True)
def no_system_clipboard(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("app.ui.copying.system_copy", lambda text: (None, ""))


def tui(monkeypatch: pytest.MonkeyPatch, folder: Path, *argv: str, fake: FakeSession | None = None):
    """The TUI `bulkhead ARGV` builds in `folder`, on `fake` (a scripted session) when given."""
    monkeypatch.chdir(folder)
    options = {} if fake is None else {"open_session": fake.open}
    return build_app(build_parser().parse_args(list(argv)), cursor_blink=False, keymap={}, **options)


def fake_tui(monkeypatch: pytest.MonkeyPatch, folder: Path, **fake_options):
    """`tui` on a new `FakeSession(folder, **fake_options)`."""
    return tui(monkeypatch, folder, fake=FakeSession(folder, **fake_options))


async def type_text(pilot, text: str) -> None:
    await pilot.press(*[{" ": "space", "/": "slash", "!": "exclamation_mark"}.get(c, c) for c in text])


def focus_is_on_screen(app) -> bool:
    return app.focused is not None and visible(app.focused)


async def test_esc_on_a_pending_approval_cancels_and_the_next_message_reaches_the_prompt(
    tmp_path, monkeypatch
):
    shell = tool_call("c-echo", "shell", {"command": "echo hi"})
    app = fake_tui(monkeypatch, tmp_path, script={"!shell echo hi": shell})
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        app.prompt.set_text("!shell echo hi")
        await pilot.press("enter")
        await until(pilot, lambda: app.chat.pending_approval() is not None, "the approval")
        assert app.focused is app.chat  # the card has the keyboard while it waits
        await pilot.press("escape")
        await settle(pilot)
        assert app.chat.tool_blocks()[-1].decision == "cancelled"
        assert isinstance(app.focused, PromptArea) and focus_is_on_screen(app)
        await type_text(pilot, "next message")
        await pilot.press("enter")
        await settle(pilot)
        assert [i.text for i in app.chat.items if isinstance(i, UserItem)][-1] == "next message"


async def test_tab_with_nothing_to_complete_stays_in_the_prompt_and_esc_comes_back_from_a_panel(
    tmp_path, monkeypatch
):
    app = fake_tui(monkeypatch, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await type_text(pilot, "hello")
        await pilot.press("tab")
        assert app.focused is app.prompt and app.prompt.text == "hello"
        await pilot.press("alt+4")  # a panel has the keyboard (the Requests table)
        assert app.inspector in app.focused.ancestors and focus_is_on_screen(app)
        await pilot.press("escape")
        assert app.focused is app.prompt and app.prompt.text == "hello"


@pytest.mark.parametrize("panel", [3, 4, 5, 6, 7])
async def test_typing_after_a_panel_key_lands_in_the_prompt(tmp_path, monkeypatch, panel):
    app = fake_tui(monkeypatch, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press(f"alt+{panel}")
        await pilot.pause()
        assert app.focused is not app.prompt and focus_is_on_screen(app)
        await type_text(pilot, "/compact keep the parser notes")
        assert app.focused is app.prompt and app.prompt.text == "/compact keep the parser notes"
        assert app.inspector.archive.search.value == ""


async def test_after_an_archive_recall_typing_goes_to_the_prompt(tmp_path, monkeypatch):
    app = tui(monkeypatch, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        keys = seed_archive(app.session.engine.session)
        panel = app.inspector.archive
        await pilot.press("alt+4")
        panel.reload()
        await until(pilot, lambda: panel.row_keys == keys[::-1], "the archive rows")
        app.inspector.show_panel("archive")
        await pilot.pause()
        assert app.focused is panel.table
        await pilot.press("enter")  # recall the selected segment
        await until(
            pilot, lambda: app.session.engine.session.master[-1].meta.origin == "recall", "the recall"
        )
        await type_text(pilot, "/compact now")
        assert app.prompt.text == "/compact now" and panel.search.value == ""


async def test_after_ctrl_o_letters_are_typed_not_taken_for_chat_keys(tmp_path, monkeypatch):
    app = fake_tui(monkeypatch, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await app.chat.add(AssistantItem("look:\n\n```python\nprint('hi')\n```\n"))
        await pilot.press("ctrl+o")
        assert app.focused is app.chat and focus_is_on_screen(app)
        await type_text(pilot, "big green cat")  # b copied a code block, g jumped, c copied
        assert app.prompt.text == "big green cat" and app.focused is app.prompt
        assert app.last_copy is None
        # the chat's own keys are not letters: Alt+C / Ctrl+C copy the message under the cursor, Alt+K a block
        await pilot.press("ctrl+o", "alt+k")
        await until(pilot, lambda: app.clipboard == "print('hi')", "the code block copy")
        app.prompt.set_text("")
        await pilot.press("ctrl+o", "ctrl+c")
        await until(pilot, lambda: app.clipboard.startswith("look:"), "the message copy")
        await pilot.press("escape")
        assert app.focused is app.prompt


async def test_hiding_the_inspector_gives_the_keyboard_back_to_the_prompt(tmp_path, monkeypatch):
    app = fake_tui(monkeypatch, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press("alt+5")
        assert app.inspector in app.focused.ancestors
        await pilot.press("f2")
        await pilot.pause()
        assert app.has_class("-hide-inspector") and app.focused is app.prompt and focus_is_on_screen(app)
        await pilot.press("alt+5")  # shows it again, with the panel focused
        await pilot.pause()
        assert not app.has_class("-hide-inspector") and focus_is_on_screen(app)
        await pilot.resize_terminal(100, 30)  # narrow: the inspector hides itself
        await pilot.pause()
        assert app.has_class("-hide-inspector") and app.focused is app.prompt


async def test_page_keys_scroll_the_chat_from_the_prompt(tmp_path, monkeypatch):
    app = fake_tui(monkeypatch, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        for n in range(4):
            await app.chat.add(AssistantItem("\n\n".join(f"answer {n} paragraph {p}" for p in range(20))))
        await until(pilot, lambda: app.chat.max_scroll_y > 40, "a chat taller than the view")
        await settle(pilot)  # the items' heights settled: the end no longer moves down
        await until(pilot, app.chat.at_bottom, "the end")
        await pilot.press("pageup")
        assert not app.chat.at_bottom() and app.focused is app.prompt  # a page up from the end, read now
        await pilot.press("home")  # an empty prompt has no line to go along: the chat's top
        assert app.chat.scroll_y == 0
        await pilot.press("end")
        await until(pilot, app.chat.at_bottom, "the latest again")
        # a prompt with text keeps Home / End for its line
        await type_text(pilot, "abc")
        await pilot.press("home")
        assert app.prompt.cursor_location == (0, 0) and app.chat.at_bottom()
        await pilot.press("pagedown")  # the text is all in view: the chat takes it (already at its end)
        assert app.prompt.text == "abc"
