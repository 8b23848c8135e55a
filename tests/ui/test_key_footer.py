"""The footer of keys is mounted again only when its keys change: a turn's start and end refresh the
bindings without changing a key (Textual's Footer mounted every key again, and laid out the whole screen,
each time); a key that appears or goes (y / n while a tool call waits) is shown. On a scripted session
(`tests/ui/fake_session.py`): the subject is the footer."""

from __future__ import annotations

from textual.widgets._footer import FooterKey

from app.ui.headless import ready, settle, until
from app.ui.widgets.key_footer import KeyFooter
from tests.ui.fake_session import FakeSession, app_on, tool_call
from tests.ui.test_app import SIZE, approval_for, send


def descriptions(footer: KeyFooter) -> set[str]:
    return {key.description for key in footer.query(FooterKey)}


async def test_the_footer_keeps_its_keys_when_they_do_not_change_and_shows_them_when_they_do(tmp_path):
    fake = FakeSession(tmp_path, script={"!shell ls -la": tool_call("c-ls", "shell", {"command": "ls -la"})})
    app = app_on(fake)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        footer = app.query_one(KeyFooter)
        await until(pilot, lambda: "Quit" in descriptions(footer), "the footer's keys")
        keys = list(footer.query(FooterKey))
        await send(pilot, "hello there")  # the bindings are refreshed as the turn starts and ends
        app.refresh_bindings()
        await pilot.pause()
        assert [id(key) for key in footer.query(FooterKey)] == [id(key) for key in keys]  # not mounted again

        block = await approval_for(pilot, "!shell ls -la")
        await until(pilot, lambda: {"Approve", "Deny"} <= descriptions(footer), "y Approve / n Deny")
        await pilot.press("y")
        await settle(pilot)
        await until(pilot, lambda: not {"Approve", "Deny"} & descriptions(footer), "y / n gone once answered")
        assert block.decision == "approved"
        assert "Quit" in descriptions(footer)
        await app.action_quit()
