"""Fast typing loses nothing: a burst of keys with no pauses (as a terminal delivers a fast typist or
a paste without bracketed-paste) lands in order, Enter takes exactly what was typed before it, and
what is typed before the session is ready is kept and sent when it is."""

from __future__ import annotations

import threading

from textual import events

from app.ui.headless import ready, settle, until
from tests.ui.conftest import lab_settings
from tests.ui.test_app import make_app

SIZE = (160, 45)
KEY_CHARACTERS = {"enter": "\r", "ctrl+j": "\n", "backspace": "\x7f", "space": " "}


def burst(app, *keys: str) -> None:
    """Post every key at once, with no pause for the app to handle any of them in between."""
    for key in keys:
        for name in [key] if key in KEY_CHARACTERS or "+" in key or len(key) == 1 else list(key):
            character = KEY_CHARACTERS.get(name, name if len(name) == 1 else None)
            app.post_message(events.Key(name, character))


async def test_a_burst_with_newlines_and_backspace_keeps_every_character_in_order(lab, tmp_path):
    app = make_app(lab_settings(lab), tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        burst(app, "one", "ctrl+j", "two", "ctrl+j", "three", "ctrl+j", "abc", "backspace", "d")
        await until(pilot, lambda: app.prompt.text.endswith("abd"), "the burst to land")
        assert app.prompt.text == "one\ntwo\nthree\nabd"


async def test_first_enter_second_sends_first_and_keeps_second_in_the_prompt(lab, tmp_path):
    app = make_app(lab_settings(lab), tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        burst(app, "first", "enter", "second")
        await until(pilot, lambda: len(app.session.engine.session.master) >= 2, "the first message's turn")
        await settle(pilot)
        assert app.session.engine.session.master[0].text == "first"
        assert app.prompt.text == "second"  # the start of the next message, not lost
        burst(app, "enter")
        await until(pilot, lambda: len(app.session.engine.session.master) >= 4, "the second message's turn")
        await settle(pilot)
        assert [m.text for m in app.session.engine.session.master if m.role == "user"] == ["first", "second"]


async def test_a_message_sent_while_the_session_opens_waits_and_is_sent_when_it_is_ready(
    lab, tmp_path, monkeypatch
):
    from app.engine import bootstrap

    release = threading.Event()
    real_open = bootstrap.open_engine

    def slow_open(*args, **kwargs):
        release.wait(60)
        return real_open(*args, **kwargs)

    monkeypatch.setattr(bootstrap, "open_engine", slow_open)
    app = make_app(lab_settings(lab), tmp_path)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: app.focused is app.prompt, "the first frame")
            burst(app, "typed at the first frame", "enter")
            await until(pilot, lambda: app.prompt_box.waiting, "the opening line")
            assert "opening the session" in app.prompt_box.waiting
            assert app.query_one("#busy").display and app.prompt.text == ""
            release.set()
            await ready(pilot)
            await until(pilot, lambda: app.session.engine.session.master, "the waiting message to be sent")
            await settle(pilot)
            assert app.session.engine.session.master[0].text == "typed at the first frame"
            assert not app.prompt_box.waiting and not app.query_one("#busy").display
    finally:
        release.set()


async def test_keys_typed_before_the_prompt_has_the_focus_are_replayed_and_enter_sends(lab, tmp_path):
    """Typed while bulkhead starts: the keys reach the app before any widget has the focus, and an
    Enter typed before the terminal left line mode arrives as a line feed (Ctrl+J)."""
    app = make_app(lab_settings(lab), tmp_path)
    burst(app, "early", "ctrl+j")  # queued before the app runs: handled before the prompt has the focus
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await until(pilot, lambda: app.session.engine.session.master, "the early message to be sent")
        await settle(pilot)
        assert app.session.engine.session.master[0].text == "early"
        assert app.prompt.text == ""


async def test_backslash_enter_is_a_newline_in_every_terminal(lab, tmp_path):
    app = make_app(lab_settings(lab), tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press("a", "backslash", "enter", "b")
        assert app.prompt.text == "a\nb"
        assert not app.session.engine.session.master  # nothing was sent
        await pilot.press("alt+enter", "c", "shift+enter", "d")
        assert app.prompt.text == "a\nb\nc\nd"
