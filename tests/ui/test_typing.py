"""Fast typing loses nothing: a burst of keys with no pauses (as a terminal delivers a fast typist or
a paste without bracketed-paste) lands in order, Enter takes exactly what was typed before it, and
what is typed before the session is ready is kept and sent when it is. The subject is the prompt: the app
runs on a scripted session (`tests/ui/fake_session.py`) and the test reads what it sent (`fake.intents`)."""

from __future__ import annotations

import asyncio

from textual import events

from app.ui.headless import ready, settle, until
from tests.ui.fake_session import FakeSession, app_on

SIZE = (160, 45)
KEY_CHARACTERS = {"enter": "\r", "ctrl+j": "\n", "backspace": "\x7f", "space": " "}


def sent(fake: FakeSession) -> list[str]:
    """The prompts the app sent to the session, in order."""
    return [intent[1] for intent in fake.intents if intent[0] == "submit"]


def burst(app, *keys: str) -> None:
    """Post every key at once, with no pause for the app to handle any of them in between."""
    for key in keys:
        for name in [key] if key in KEY_CHARACTERS or "+" in key or len(key) == 1 else list(key):
            character = KEY_CHARACTERS.get(name, name if len(name) == 1 else None)
            app.post_message(events.Key(name, character))


async def test_a_burst_with_newlines_and_backspace_keeps_every_character_in_order(tmp_path):
    app = app_on(FakeSession(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        burst(app, "one", "ctrl+j", "two", "ctrl+j", "three", "ctrl+j", "abc", "backspace", "d")
        await until(pilot, lambda: app.prompt.text.endswith("abd"), "the burst to land")
        assert app.prompt.text == "one\ntwo\nthree\nabd"


async def test_first_enter_second_sends_first_and_keeps_second_in_the_prompt(tmp_path):
    fake = FakeSession(tmp_path)
    app = app_on(fake)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        burst(app, "first", "enter", "second")
        await until(pilot, lambda: sent(fake), "the first message's turn")
        await settle(pilot)
        assert sent(fake) == ["first"]
        assert app.prompt.text == "second"  # the start of the next message, not lost
        burst(app, "enter")
        await until(pilot, lambda: len(sent(fake)) >= 2, "the second message's turn")
        await settle(pilot)
        assert sent(fake) == ["first", "second"]


async def test_a_message_sent_while_the_session_opens_waits_and_is_sent_when_it_is_ready(tmp_path):
    fake = FakeSession(tmp_path)
    release = asyncio.Event()

    async def slow_open(settings, **options):
        await release.wait()  # the session takes its time to open
        return await fake.open(settings, **options)

    app = app_on(fake, open_session=slow_open)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.focused is app.prompt, "the first frame")
        burst(app, "typed at the first frame", "enter")
        await until(pilot, lambda: app.prompt_box.waiting, "the opening line")
        assert "opening the session" in app.prompt_box.waiting
        assert app.query_one("#busy").display and app.prompt.text == "" and not fake.intents
        release.set()
        await ready(pilot)
        await until(pilot, lambda: sent(fake), "the waiting message to be sent")
        await settle(pilot)
        assert sent(fake) == ["typed at the first frame"]
        assert not app.prompt_box.waiting and not app.query_one("#busy").display


async def test_keys_typed_before_the_prompt_has_the_focus_are_replayed_and_enter_sends(tmp_path):
    """Typed while bulkhead starts: the keys reach the app before any widget has the focus, and an
    Enter typed before the terminal left line mode arrives as a line feed (Ctrl+J)."""
    fake = FakeSession(tmp_path)
    app = app_on(fake)
    burst(app, "early", "ctrl+j")  # queued before the app runs: handled before the prompt has the focus
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await until(pilot, lambda: sent(fake), "the early message to be sent")
        await settle(pilot)
        assert sent(fake) == ["early"]
        assert app.prompt.text == ""


async def test_backslash_enter_is_a_newline_in_every_terminal(tmp_path):
    fake = FakeSession(tmp_path)
    app = app_on(fake)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press("a", "backslash", "enter", "b")
        assert app.prompt.text == "a\nb"
        assert not sent(fake)  # nothing was sent
        await pilot.press("alt+enter", "c", "shift+enter", "d")
        assert app.prompt.text == "a\nb\nc\nd"
