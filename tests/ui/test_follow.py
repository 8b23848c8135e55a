"""The chat follows the conversation: the newest output stays in view while the user has not
scrolled up, an approval always comes into view with its keys in the footer, and the end of an
answer is on screen when it ends — at the size a user's terminal has (160×45). The subject is the chat:
the app runs on a scripted session (`tests/ui/fake_session.py`) whose answers are the lab's texts."""

from __future__ import annotations

from textual.widgets import Footer
from textual.widgets._footer import FooterKey

from app.lab.model import filler
from app.ui.chat_items import AssistantItem
from app.ui.headless import ready, settle, until
from tests.ui.fake_session import FakeSession, app_on, say, tool_call
from tests.ui.test_app import approval_for, send

SIZE = (160, 45)


def big(size: int) -> list:
    """What the lab answers to `!big SIZE`: `size` bytes of its filler lines, streamed."""
    return say(filler(size), pieces=max(1, size // 4096))


def visible_in_chat(chat, widget) -> bool:
    """The widget's whole region lies inside the chat's visible content region."""
    return chat.content_region.contains_region(widget.region)


async def five_turns(pilot) -> None:
    for n in range(1, 6):
        await send(pilot, f"hello number {n}, tell me about the thing")


async def test_after_five_turns_a_shell_approval_is_in_view_focused_with_y_n_in_the_footer(tmp_path):
    app = app_on(
        FakeSession(tmp_path, script={"!shell ls -la": tool_call("c-ls", "shell", {"command": "ls -la"})})
    )
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await five_turns(pilot)
        block = await approval_for(pilot, "!shell ls -la")
        chat = app.chat
        bar = block.query_one(".approval-bar")
        await until(pilot, lambda: visible_in_chat(chat, bar), "the Approve/Deny row in view")
        assert visible_in_chat(chat, block.query_one(".approve")) and visible_in_chat(
            chat, block.query_one(".deny")
        )
        assert app.focused is chat and chat.follow
        shown = {
            key: active
            for key, active in app.screen.active_bindings.items()
            if active.binding.show and active.enabled
        }
        assert shown["y"].binding.description == "Approve" and shown["n"].binding.description == "Deny"
        assert "waiting for your approval of shell" in app.prompt_box.busy_text
        footer = app.query_one(Footer)
        await until(
            pilot,
            lambda: {"Approve", "Deny"} <= {k.description for k in footer.query(FooterKey)},
            "y Approve / n Deny in the footer",
        )
        await pilot.press("y")
        await settle(pilot)
        assert block.decision == "approved" and app.focused is app.prompt
        assert "y" not in {
            key
            for key, active in app.screen.active_bindings.items()
            if active.binding.show and active.enabled
        }  # gone once answered


async def test_the_end_of_a_40kb_answer_is_in_view_when_it_ends(tmp_path):
    app = app_on(FakeSession(tmp_path, script={"!big 40KB": big(40 * 1024)}))
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await five_turns(pilot)
        await send(pilot, "!big 40KB")
        chat = app.chat
        answer = chat.last_answer()
        assert answer.rendered and "Lab filler line 000640" in answer.raw
        await until(pilot, lambda: chat.scroll_y == chat.max_scroll_y, "the chat at its end")
        assert chat.follow and not chat.new_below
        assert answer.region.bottom <= chat.content_region.bottom  # its last line is on screen
        assert answer.region.bottom > chat.content_region.y


async def test_growth_the_chat_is_not_told_about_is_still_followed(tmp_path):
    """An answer that grows on its own (a block drawn later, in a thread) stays followed: following
    is done at layout time, not by a scroll after each append."""
    app = app_on(FakeSession(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        chat = app.chat
        for n in range(40):  # a conversation taller than the view, followed
            await chat.add_notice(f"earlier line {n}")
        item = AssistantItem(streaming=True)
        await chat.add(item)
        await until(pilot, lambda: chat.max_scroll_y > 0 and chat.scroll_y == chat.max_scroll_y, "the end")
        await item.write("".join(f"grown line {n}\n\n" for n in range(200)))  # not through the chat
        await until(pilot, lambda: chat.max_scroll_y > 300, "the answer to grow")
        await until(pilot, lambda: chat.scroll_y == chat.max_scroll_y, "the chat to follow the growth")
        assert item.region.bottom <= chat.content_region.bottom


async def test_scrolled_up_the_chat_stays_put_and_says_new_output_is_below(tmp_path):
    app = app_on(FakeSession(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        chat = app.chat
        for n in range(60):
            await chat.add_notice(f"line {n}")
        await pilot.pause()
        assert chat.follow
        chat.scroll_relative(y=-10, animate=False)  # what the wheel, the scrollbar and PageUp do
        await until(pilot, lambda: not chat.follow, "following to stop when the user scrolls up")
        where = chat.scroll_y
        item = AssistantItem("".join(f"more {n}\n\n" for n in range(50)))
        await chat.add(item)
        marker = app.query_one("#new-output")
        await until(pilot, lambda: marker.display, "the new-output marker")
        assert str(marker.render()).startswith("↓ new output")
        assert chat.scroll_y == where  # the reader was not moved
        await pilot.press("alt+down")  # jump to the latest and follow again
        await until(
            pilot,
            lambda: chat.follow and chat.scroll_y == chat.max_scroll_y and not marker.display,
            "the jump to the end",
        )


async def test_a_short_conversation_that_outgrows_the_view_unannounced_is_followed(tmp_path):
    """Shorter than the view it starts at the top; once an untold growth makes it taller, it follows."""
    app = app_on(FakeSession(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        chat = app.chat
        item = AssistantItem(streaming=True)
        await chat.add(item)
        await pilot.pause()
        assert chat.max_scroll_y == 0 and chat.scroll_y == 0  # short: at the top, not pinned to the bottom
        await item.write("".join(f"grown line {n}\n\n" for n in range(200)))  # not through the chat
        await until(
            pilot,
            lambda: chat.max_scroll_y > 300 and chat.scroll_y == chat.max_scroll_y,
            "the chat to follow the growth",
        )


async def test_page_up_stops_following_and_new_output_is_marked(tmp_path):
    app = app_on(FakeSession(tmp_path, script={"!big 8KB": big(8 * 1024)}))
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await send(pilot, "!big 8KB")
        chat = app.chat
        await until(pilot, lambda: chat.max_scroll_y > 0 and chat.scroll_y == chat.max_scroll_y, "the end")
        await pilot.press("ctrl+o", "pageup")
        await until(pilot, lambda: not chat.follow and chat.scroll_y < chat.max_scroll_y, "the page up")
        where = chat.scroll_y
        await pilot.press("escape")
        await send(pilot, "and more")
        marker = app.query_one("#new-output")
        await until(pilot, lambda: marker.display, "the new-output marker")
        assert chat.scroll_y == where


async def test_page_up_in_a_chat_with_nothing_to_scroll_keeps_following(tmp_path):
    """PageUp where the conversation fits the view moves nothing, and the chat keeps following: the next
    answer that outgrows the view is still shown to its end (a guard: the chat re-follows a view that is at
    its end, so this holds whether or not PageUp itself stops following)."""
    app = app_on(FakeSession(tmp_path, script={"!big 8KB": big(8 * 1024)}))
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        chat = app.chat
        await pilot.press("ctrl+o", "pageup", "pageup")
        await pilot.pause()
        assert app.focused is chat and chat.max_scroll_y == 0 and chat.follow
        await pilot.press("escape")
        await send(pilot, "!big 8KB")
        await until(pilot, lambda: chat.max_scroll_y > 0 and chat.scroll_y == chat.max_scroll_y, "the end")
        assert chat.follow
