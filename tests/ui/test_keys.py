"""Keys that real terminals send: what Textual's reader makes of the bytes xterm, tmux, GNOME Terminal,
Windows Terminal and VS Code send (the reader is the judge), and, for every default binding, that each
of its keys reaches its action. The bindings are the UI's own: the app runs on a scripted session
(`tests/ui/fake_session.py`), no engine."""

from __future__ import annotations

import pytest
from textual._xterm_parser import XTermParser
from textual.actions import parse
from textual.binding import Binding

from app.ui.app import BulkheadApp
from app.ui.chat import Chat
from app.ui.headless import ready, until
from app.ui.palette import applicable_titles
from app.ui.prompt import PromptArea
from app.ui.screens.help import HelpScreen
from app.ui.textual_ext import terminal_keys
from tests.ui.fake_session import FakeSession, app_on

SIZE = (160, 45)

# What an xterm-style terminal (xterm, tmux, GNOME Terminal, Windows Terminal, VS Code) sends for a key.
XTERM_BYTES = {
    "enter": "\r",
    "ctrl+j": "\n",
    "alt+enter": "\x1b\r",
    "escape": "\x1b",
    "tab": "\t",
    "ctrl+c": "\x03",
    "ctrl+o": "\x0f",
    "ctrl+p": "\x10",
    "ctrl+q": "\x11",
    "ctrl+t": "\x14",
    "ctrl+backslash": "\x1c",
    "alt+h": "\x1bh",
    "alt+w": "\x1bw",
    "alt+s": "\x1bs",
    "f1": "\x1bOP",
    "f2": "\x1bOQ",
    "f3": "\x1bOR",
    "f5": "\x1b[15~",
    "f6": "\x1b[17~",
    "alt+down": "\x1b[1;3B",
    "ctrl+end": "\x1b[1;5F",
    "end": "\x1b[F",
    "home": "\x1b[H",
    **{f"alt+{n}": f"\x1b{n}" for n in range(1, 8)},
}


def read_keys(data: str) -> list[str]:
    parser = XTermParser()
    events = [*parser.feed(data), *parser.feed("")]
    return [event.key for event in events if hasattr(event, "key")]


@pytest.mark.parametrize("key", sorted(XTERM_BYTES))
def test_the_reader_turns_what_the_terminal_sends_into_the_key(key):
    terminal_keys.install()
    assert read_keys(XTERM_BYTES[key]) == [key]


def test_alt_enter_and_alt_digits_read_as_alt_keys_within_typing():
    terminal_keys.install()
    assert read_keys("one\x1b\rtwo") == ["o", "n", "e", "alt+enter", "t", "w", "o"]  # not Enter: nothing sent
    assert read_keys("\x1b3\x1b4") == ["alt+3", "alt+4"]  # not £ ¢


# -- every default binding reaches its action ---------------------------------------------------------------
def _bindings(owner: type) -> list[Binding]:
    return [b for b in owner.BINDINGS if isinstance(b, Binding) and b.id]


DEFAULTS = (
    [("app", b) for b in _bindings(BulkheadApp)]
    + [("chat", b) for b in _bindings(Chat)]
    + [("prompt", b) for b in _bindings(PromptArea)]
)


@pytest.mark.parametrize(("where", "binding"), DEFAULTS, ids=[b.id for _, b in DEFAULTS])
async def test_each_key_of_a_default_binding_reaches_its_action(tmp_path, where, binding):
    app = app_on(FakeSession(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        node = {"app": app, "chat": app.chat, "prompt": app.prompt}[where]
        _namespace, name, parameters = parse(binding.action)
        calls: list[tuple] = []
        setattr(node, f"action_{name}", lambda *args: calls.append(args))
        if where == "chat":
            node.check_action = lambda action, parameters: True  # y / n apply only while an approval waits
        if binding.id == "app.blocked":
            app.content_blocked = True  # F8 applies only after a content block
        for key in binding.key.split(","):
            (app.chat if where == "chat" else app.prompt).focus()
            await pilot.pause()
            calls.clear()
            await pilot.press(key)
            await until(pilot, lambda: calls, f"{key} to reach {binding.action}", timeout=10)
            assert calls == [parameters], key


# -- panels -------------------------------------------------------------------------------------------------
async def test_ctrl_t_steps_through_the_panels_and_the_palette_names_each(tmp_path):
    from app.ui.widgets.inspector import PANEL_NAMES, Inspector

    app = app_on(FakeSession(tmp_path), inspector=Inspector(clock=lambda: 0.0))
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        inspector = app.inspector

        def focused_panel() -> str:
            focused = app.focused
            return next(
                (
                    name
                    for name, panel in inspector.panels.items()
                    if focused is not None and (focused is panel or panel in focused.ancestors)
                ),
                "",
            )

        seen = []
        for _ in PANEL_NAMES:
            await pilot.press("ctrl+t")
            await until(pilot, lambda: focused_panel() and focused_panel() not in seen[-1:], "the next panel")
            seen.append(focused_panel())
        assert seen == list(PANEL_NAMES)
        titles = applicable_titles(app)
        assert [t for t in titles if t.startswith("panel: ")] == [f"panel: {name}" for name in PANEL_NAMES]
        app.prompt.focus()
        app.run_command("panel", "requests")
        await until(
            pilot,
            lambda: inspector.active_tab == "requests" and focused_panel() == "requests",
            "the requests panel",
        )
        await pilot.press("ctrl+o")
        assert app.focused is app.chat


async def test_f1_says_where_a_key_does_not_arrive(tmp_path):
    app = app_on(FakeSession(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press("f1")
        assert isinstance(app.screen, HelpScreen)
        text = app.screen.markdown
        assert "`ctrl+t`" in text and "app.next_panel" in text
        assert "`f1`: VS Code keeps F1" in text and "`alt+enter`: Windows Terminal keeps Alt+Enter" in text
        assert "xterm, tmux, GNOME Terminal, iTerm2, Windows Terminal and the VS Code terminal" in text
        assert "`\\` + Enter is a newline everywhere" in text


async def test_f6_moves_to_the_chat_from_the_prompt(tmp_path):
    app = app_on(FakeSession(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        app.prompt.set_text("some text")
        await pilot.press("f6")
        assert app.focused is app.chat and app.prompt.text == "some text"
