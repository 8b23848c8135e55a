"""The TUI through its front door, on a scripted session (`tests/ui/fake_session.py`, issue 43).

No lab, no engine: the app opens a `FakeSession` as it opens a real one and drives it through the same
`UiSession` calls. Each test asserts on the events the app received (Textual's `message_hook`, harlequin's
style) and the intents it posted to the session (`fake.intents`). The real-engine tests that check the
integration stay where they were (`test_approval_by_call_id.py`, `test_approval_card.py`, `test_app.py`).
"""

from __future__ import annotations

import asyncio

from app.engine.api.ui_session import UiSession
from app.model.events import RequestFinished, RequestStarted, ToolCallStarted
from app.ui.app import BulkheadApp
from app.ui.headless import ready, settle, until
from app.ui.messages import EngineEvent
from app.ui.turns import ApprovalAsked
from tests.ui.fake_session import Ask, FakeSession, say, tool_call

SIZE = (160, 45)


def fake_app(settings, tmp_path, fake: FakeSession) -> tuple[BulkheadApp, list]:
    """The app on `fake`, and the list every message it processes lands in."""
    app = BulkheadApp(settings, workspace=tmp_path, cursor_blink=False, keymap={}, open_session=fake.open)
    return app, []


def received(messages: list, kind: type) -> list:
    """The engine events of `kind` the app received, in order."""
    return [m.event for m in messages if isinstance(m, EngineEvent) and isinstance(m.event, kind)]


async def card_for(pilot, prompt: str):
    """Send `prompt`; the tool block whose approval card it brings, once the card is drawn."""
    app = pilot.app
    app.prompt.set_text(prompt)
    await pilot.press("enter")
    await until(pilot, lambda: app.chat.pending_approval() is not None, "the approval card")
    await pilot.pause()
    return app.chat.pending_approval()


async def test_the_fake_is_a_ui_session(tmp_path):
    assert isinstance(FakeSession(tmp_path), UiSession)


async def test_a_prompt_goes_to_the_session_and_its_answer_streams_into_the_chat(tmp_path):
    from app.config import load_settings
    from app.model.events import TextDelta

    fake = FakeSession(tmp_path, script={"hello there": say("Hi! You said hello there.")})
    app, messages = fake_app(load_settings(), tmp_path, fake)
    async with app.run_test(size=SIZE, message_hook=messages.append) as pilot:
        await ready(pilot)
        assert fake.intents[:2] == [("set_fallback_asker",), ("start",)]
        app.prompt.set_text("hello there")
        await pilot.press("enter")
        await settle(pilot)
        assert ("submit", "hello there") in fake.intents
        answer = app.chat.answers()[-1]
        assert answer.raw == "Hi! You said hello there." and not answer.streaming and not answer.partial
        assert "".join(e.text for e in received(messages, TextDelta)) == "Hi! You said hello there."
        assert any(getattr(item, "text", None) == "hello there" for item in app.chat.items)


async def test_two_waiting_calls_of_one_tool_are_answered_each_on_its_own_block(tmp_path):
    """Moved from test_approval_by_call_id.py: two `shell` calls asked at once; the first call's card is on
    the first block, not the newest `shell` block; answering one leaves the other waiting; each answer goes
    to the session by its own call id (a denial with its reason)."""
    from app.config import load_settings

    fake = FakeSession(tmp_path)
    app, messages = fake_app(load_settings(), tmp_path, fake)
    async with app.run_test(size=SIZE, message_hook=messages.append) as pilot:
        await ready(pilot)
        chat = app.chat
        for call_id, command in (("call-one", "echo one"), ("call-two", "echo two")):
            fake.emit(ToolCallStarted(call_id=call_id, name="shell", args={"command": command}))
        await until(pilot, lambda: len(chat.tool_blocks()) == 2, "both blocks")
        first, second = chat.tool_blocks()
        asked_first = asyncio.ensure_future(fake._ask(Ask("call-one", "shell", {"command": "echo one"})))
        await until(pilot, lambda: chat.pending_approval() is not None, "the first card")
        assert first.pending and not second.pending  # on its own block, not the newest shell block
        asked_second = asyncio.ensure_future(fake._ask(Ask("call-two", "shell", {"command": "echo two"})))
        await until(pilot, lambda: second.pending, "the second card")
        assert first.pending
        await pilot.press("y")  # the newest card: the second call's
        await asyncio.wait_for(asked_second, 10)
        assert fake.answered("call-two") == ("once", "") and fake.answered("call-one") is None
        await pilot.pause()
        assert first.pending and not asked_first.done() and second.decision == "approved"
        await pilot.press("d")
        await pilot.pause()
        await pilot.press(*"too noisy")
        await pilot.press("enter")
        await asyncio.wait_for(asked_first, 10)
        assert fake.answered("call-one") == ("deny", "too noisy")
        await until(pilot, lambda: first.decision == "denied", "the denial on the first block")
        assert "too noisy" in first.reason and second.decision == "approved"
        asked = [m.call_id for m in messages if isinstance(m, ApprovalAsked)]
        assert asked == ["call-one", "call-two"]  # one card per call, by id


async def test_a_new_file_card_shows_its_first_lines(tmp_path):
    """Moved from test_approval_card.py: the card of a new file shows its first lines before anything is
    written; `n` denies it, and the session hears "deny" for that call."""
    from app.config import load_settings

    args = {"path": "notes.md", "content": "first line of the notes"}
    fake = FakeSession(tmp_path, script={"write it": tool_call("c-write", "write_file", args)})
    app, _messages = fake_app(load_settings(), tmp_path, fake)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        block = await card_for(pilot, "write it")
        assert block.preview.new_file and "notes.md: a new file, 1 line (" in block.preview.summary
        assert "first line of the notes" in block._preview_shown().plain
        await pilot.press("n")
        await settle(pilot)
        assert fake.answered("c-write") == ("deny", "")
        assert block.decision == "denied" and not block.pending


async def test_always_for_this_session_names_the_rule_it_keeps(tmp_path):
    """The card offers the rule the session says "always" keeps, and answers "session" by call id."""
    from app.config import load_settings

    script = {"run it": tool_call("c-ls", "shell", {"command": "ls"}, remember="Bash(ls)")}
    fake = FakeSession(tmp_path, script=script)
    app, _messages = fake_app(load_settings(), tmp_path, fake)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        block = await card_for(pilot, "run it")
        assert "Bash(ls)" in block.remember
        await pilot.press("a")
        await settle(pilot)
        assert fake.answered("c-ls") == ("session", "")
        assert block.decision == "approved"


async def test_esc_while_a_card_waits_cancels_the_turn_and_takes_the_card_away(tmp_path):
    from app.config import load_settings

    fake = FakeSession(tmp_path, script={"go": tool_call("c-rm", "shell", {"command": "rm -rf build"})})
    app, _messages = fake_app(load_settings(), tmp_path, fake)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        block = await card_for(pilot, "go")
        await pilot.press("escape")
        await until(pilot, lambda: app.activity == "", "the turn's end")
        await until(pilot, lambda: app.chat.pending_approval() is None, "the card taken away")
        assert ("interrupt_tools",) in fake.intents
        assert fake.answered("c-rm") == ("deny", "") and not fake.pending_approvals()
        assert not block.pending


async def test_the_inspector_gets_the_sessions_events(tmp_path):
    """The Requests panel shows a request from its events alone (the fake has no store)."""
    from app.config import load_settings

    started = RequestStarted("r_fake1", "fake", "chat", 2048, started_at=1_700_000_000.0)
    finished = RequestFinished(
        "r_fake1", "fake", "chat", 2048, 2048, 413, 12.5, kind="payload_too_large", started_at=1_700_000_000.0
    )
    fake = FakeSession(tmp_path, script={"big": [started, finished, *say("refused")]})
    app, messages = fake_app(load_settings(), tmp_path, fake)
    async with app.run_test(size=SIZE, message_hook=messages.append) as pilot:
        await ready(pilot)
        app.prompt.set_text("big")
        await pilot.press("enter")
        await settle(pilot)
        assert received(messages, RequestFinished) == [finished]
        requests = app.inspector.requests
        await until(pilot, lambda: requests.table.row_count == 1, "the request's row")
        assert "r_fake1" in requests.records and requests.records["r_fake1"]["status"] == 413


async def test_slash_commands_post_their_intents_to_the_session(tmp_path):
    from app.config import load_settings

    fake = FakeSession(tmp_path)
    app, _messages = fake_app(load_settings(), tmp_path, fake)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        for typed in ("/compact keep the plan", "/approval auto-edit", "/cap 1mb"):
            app.prompt.set_text(typed)
            await pilot.press("enter")
            await settle(pilot)
        assert ("compact", "keep the plan") in fake.intents
        assert ("set_approval", "auto-edit") in fake.intents
        assert ("set_cap", 1024 * 1024) in fake.intents and ("view_changed", "cap") in fake.intents
        assert "approval: auto-edit" in str(app.prompt.border_subtitle)
        await app.action_quit()
    assert fake.closed == "exit"


async def test_a_card_without_always_says_why_and_binds_no_a_or_p(tmp_path):
    """`ApprovalRequested.why_not` (why "always" is not offered) reaches the card; a / p are not bound."""
    from textual.widgets import Static

    from app.config import load_settings

    why_not = "the ask rule Bash(echo *) covers it — ask wins over allow"
    fake = FakeSession(
        tmp_path, script={"echo": tool_call("c-echo", "shell", {"command": "echo hi"}, why_not=why_not)}
    )
    app, _messages = fake_app(load_settings(), tmp_path, fake)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        block = await card_for(pilot, "echo")
        why = str(block.query_one(".approval-why", Static).render())
        assert f"no a / p (always allow): {why_not}" in why
        assert "a" not in app.screen.active_bindings and "p" not in app.screen.active_bindings
        await pilot.press("y")
        await settle(pilot)
        assert fake.answered("c-echo") == ("once", "")
