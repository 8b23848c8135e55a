"""A long session's chat mounts what is on screen: resume draws a window, older items page in as the user
scrolls up, /find (Ctrl+F) finds text in items that were never drawn and brings them into view."""

from __future__ import annotations

import asyncio
import gc
import weakref

from textual import events
from textual.widgets import Static

from app.engine.bootstrap import open_engine
from app.engine.session import Session
from app.engine.turn import Engine
from app.model.messages import Message, ToolCall, ToolResult
from app.store import Store
from app.ui.chat_items import NoticeItem, ToolBlock, UserItem
from app.ui.headless import ready, until
from app.ui.textual_ext.collector import GC_FULL_EVERY
from app.ui.widgets.payload import PayloadPanel
from tests.ui.conftest import lab_settings
from tests.ui.fake_session import FakeSession, app_on
from tests.ui.test_app import SIZE, make_app, submit

PROMPTS = 400  # × (prompt, answer with a tool call, tool result, closing answer): 1,600 messages, 1,200 items


def long_session(tmp_path) -> str:
    store = Store()
    session = Session.create(store, route="lab", provider="lab", model="lab-1", workspace=str(tmp_path))
    for i in range(PROMPTS):
        session.append(Message.create("user", f"prompt number {i}: look at module {i}", turn=i + 1))
        call = ToolCall(f"call_{i}", "read_file", {"path": f"app/module_{i}.py"})
        session.append(Message.create("assistant", [call], turn=i + 1))
        session.append(
            Message.create(
                "tool", [ToolResult(call.id, f"contents of module {i} — marker-{i}-end")], turn=i + 1
            )
        )
        session.append(Message.create("assistant", f"answer number {i}: module {i} is fine", turn=i + 1))
    store.close()
    return session.id


def users(app) -> list[str]:
    return [i.text for i in app.chat.items if isinstance(i, UserItem)]


def on_screen(app, item) -> bool:
    chat = app.chat
    top = chat.scroll_y
    return item.virtual_region.y < top + chat.size.height and item.virtual_region.bottom > top


async def resumed_and_focused(pilot):
    """The chat of a resumed session once its window is mounted, focused (keys go to it)."""
    await ready(pilot)
    chat = pilot.app.chat
    await until(pilot, lambda: not chat.filling, "the resumed window")
    chat.focus()
    await pilot.pause()
    return chat


async def page_up_until_older_items_go_in(pilot, chat) -> None:
    """PageUp up to the top of what is drawn, until the page before it has come in."""
    older = chat.older_count
    for _ in range(30):
        if chat.older_count < older:
            break
        await pilot.press("pageup")
        await pilot.pause()
    await until(pilot, lambda: chat.older_count < older, "a page of older items")


async def test_resume_draws_a_window_and_pages_older_items_in_up_to_the_first(lab, tmp_path):
    session_id = long_session(tmp_path)
    settings = lab_settings(lab, chat_window_items=40)
    app = make_app(settings, tmp_path, resume=session_id)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        chat = app.chat
        history = [i for i in chat.items if not isinstance(i, NoticeItem)]
        # O(visible), not 1,200: the items that fill `chat_window_screens` (2) screens, 40 at most
        assert 10 <= len(history) <= 40
        assert sum(i.outer_size.height for i in history) >= chat.size.height
        drawn = len(history)
        assert chat.older_count == 3 * PROMPTS - drawn
        total = chat.older_count + len(chat.items)  # the history and the resume notice
        assert users(app)[-1] == f"prompt number {PROMPTS - 1}: look at module {PROMPTS - 1}"
        assert "earlier items are not shown yet" in str(chat._pruned_marker.render())
        chat.focus()
        await pilot.pause()
        await page_up_until_older_items_go_in(pilot, chat)
        await until(pilot, lambda: chat.older_count <= 3 * PROMPTS - drawn - 10, "a page of older items")
        assert chat.scroll_y > 0  # what was on screen stays there: the page went in above it
        for _ in range(100):  # Home: the top of what is drawn, and the page before it comes in
            if chat.older_count == 0 and chat.scroll_y <= 0:
                break
            await pilot.press("home")
            await pilot.pause()
        assert chat.older_count == 0 and chat._pruned_marker is None
        assert users(app)[0] == "prompt number 0: look at module 0"
        # the window stays bounded: what paged in at the top took as many of the newest off the bottom
        assert len(chat.items) <= 2 * 40 and chat.newer_count == total - len(chat.items)
        assert "later items" in str(chat._newer_marker.render())
        assert not chat.follow
        # the tool blocks paged in keep their results
        first_block = next(i for i in chat.items if isinstance(i, ToolBlock))
        assert first_block.done and "marker-0-end" in first_block.copy_text()
        # folded as its header says (▸): one row drawn by the block itself, no widget in it; unfolded, the
        # header and the body (with the result) are widgets
        assert first_block.has_class("-collapsed") and first_block.outer_size.height == 1
        assert not first_block.children
        header = str(first_block.render())
        assert header == "▸ ✓ read_file app/module_0.py  — 35 chars"
        row = app.screen.get_widget_at(first_block.region.x + 2, first_block.region.y)[0]
        assert row is first_block  # what the row shows is the block's own drawing
        first_block.toggle()
        await pilot.pause()
        body = first_block.query_one(".tool-body", Static)
        assert body.display and "marker-0-end" in str(body.render()) and first_block.outer_size.height > 1
        shown = first_block.query_one(".tool-header", Static)
        assert str(shown.render()) == "▾" + header[1:]
        first_block.toggle()  # folded again: the body stays mounted, hidden
        await pilot.pause()
        assert not body.display and first_block.outer_size.height == 1
        assert str(shown.render()) == header
        # a click on a folded block's row unfolds it, as a click on a header widget does
        other = next(
            i for i in chat.items if isinstance(i, ToolBlock) and not i.children and on_screen(app, i)
        )
        await pilot.click(other, offset=(4, 0))
        await pilot.pause()
        assert not other.collapsed and other.query_one(".tool-body", Static).display
        # scrolling down pages the later items back in, and the oldest leave the top; the view stays put
        newer = chat.newer_count
        for _ in range(60):
            if chat.newer_count < newer and chat.older_count > 0:
                break
            await pilot.press("pagedown")
            await pilot.pause()
        assert chat.newer_count < newer and chat.older_count > 0
        assert len(chat.items) <= 2 * 40
        shown = [i for i in chat.items if on_screen(app, i)]
        assert shown and chat.scroll_y > 0
        # End: the latest again, followed
        await pilot.press("end")
        await until(pilot, lambda: chat.newer_count == 0 and chat.follow, "the latest")
        assert users(app)[-1] == f"prompt number {PROMPTS - 1}: look at module {PROMPTS - 1}"
        await app.action_quit()


async def test_quick_pageups_each_move_a_page_also_while_older_items_page_in(lab, tmp_path):
    """Three PageUps sent faster than frames are drawn move the view three pages: each scrolls at once
    (Textual's scrolls after the next frame, from where the view is then: all three went to one place).
    The third meets the top of what is mounted; the rows it could not go are scrolled once the older page
    is in, and the item that was at the top of the view keeps its place on the page, not the view."""
    session_id = long_session(tmp_path)
    app = make_app(lab_settings(lab, chat_window_screens=3), tmp_path, resume=session_id)
    async with app.run_test(size=SIZE) as pilot:
        chat = await resumed_and_focused(pilot)
        page = chat.scrollable_content_region.height
        assert chat.scroll_y > 2 * page - 5  # about three screens mounted, the view at the end
        reference = next(i for i in chat.items if on_screen(app, i) and i.virtual_region.y >= chat.scroll_y)
        view_y = reference.virtual_region.y - chat.scroll_y  # its row in the view
        older = chat.older_count
        for _ in range(3):  # one after the other, no frame between them
            app.post_message(events.Key("pageup", None))
        await until(pilot, lambda: chat.older_count < older, "the older page")
        await pilot.pause()
        await pilot.pause()
        assert reference.is_attached and not chat.follow
        moved = reference.virtual_region.y - chat.scroll_y - view_y
        assert moved == 3 * page, (moved, page)  # three pages, not one
        assert chat._owed_rows == 0
        app.post_message(events.Key("pagedown", None))
        await pilot.pause()
        assert reference.virtual_region.y - chat.scroll_y - view_y == 2 * page
        await app.action_quit()


async def test_paging_back_frees_the_items_it_takes_off_without_the_collector(lab, tmp_path):
    """Items that leave the window are freed by reference counting as they go, with the collector off (a
    removed Textual widget is a reference cycle: each waited for a full collection, 100-170 ms each while
    paging; see `Doomed`); one still held elsewhere has dropped the lines it drew."""
    session_id = long_session(tmp_path)
    app = make_app(lab_settings(lab, chat_window_items=40), tmp_path, resume=session_id)
    async with app.run_test(size=SIZE) as pilot:
        chat = await resumed_and_focused(pilot)
        assert gc.get_threshold()[2] == GC_FULL_EVERY
        drawn = [item for item in chat.items if on_screen(app, item)]
        assert drawn and all(item._styles_cache._cache for item in drawn)  # they drew lines
        lines = [node._styles_cache for item in drawn for node in item.walk_children(with_self=True)]
        nodes = [weakref.ref(node) for item in drawn for node in item.walk_children(with_self=True)]
        del drawn
        gc.collect()
        gc.disable()
        try:
            for _ in range(40):
                if any(ref() is None for ref in nodes):
                    break
                await pilot.press("pageup")
                await pilot.pause()
            freed = [ref() is None for ref in nodes]
            assert any(freed), "paging back took the newest items off, and they were freed at once"
            held = [cache for cache, ref in zip(lines, nodes, strict=True) if ref() and not ref().is_attached]
            assert all(not cache._cache for cache in held)
        finally:
            gc.enable()
        assert gc.get_threshold()[2] == GC_FULL_EVERY  # reading back needs no other collector settings
        await app.action_quit()


async def test_resume_mounts_what_fills_the_view_then_the_window_after_the_first_frame(tmp_path):
    """The first frame of a resumed session costs one screen of items; the rest of the window
    (`chat_window_screens`, 2) is mounted right after it, above, while the view stays at the end."""
    session_id = long_session(tmp_path)
    store = Store()
    messages = Session.load(store, session_id).master
    store.close()
    app = app_on(FakeSession(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        chat = app.chat
        before = len(chat.items)  # the start notices
        await chat.render_history(messages)
        first = len(chat.items) - before
        rows, width = chat._screen()
        assert 1 <= first <= rows // 2  # about a screen of items (each at least two rows), not the window
        await until(pilot, lambda: len(chat.items) - before > first, "the rest of the window")
        await pilot.pause()
        window = chat.items[before:]
        drawn = sum(i.outer_size.height + 1 for i in window)  # heights and margins
        assert drawn >= chat.window_rows - rows  # about two screens, the second above the first
        assert len(window) < 2 * first + 10 and chat.older_count == 3 * PROMPTS - len(window)
        assert chat.follow and chat.at_bottom()  # the latest stays in view while the window fills above it
        assert users(app)[-1] == f"prompt number {PROMPTS - 1}: look at module {PROMPTS - 1}"
        await app.action_quit()


async def test_the_sdk_import_waits_until_the_resumed_window_is_drawn(lab, tmp_path, monkeypatch):
    """The SDK's import (a second of CPU in a thread) would share the GIL with drawing the history: it starts
    once the resumed window is mounted, not while the session loads."""
    seen: list[tuple[str, bool, int]] = []
    monkeypatch.setattr(
        "app.ui.engine_link.prewarm_in_background",
        lambda provider, then=None, first=None: seen.append(
            (provider, app.chat.filling, len(app.chat.items))
        ),
    )
    app = make_app(lab_settings(lab), tmp_path, resume=long_session(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await until(pilot, lambda: seen, "the SDK import")
        await pilot.pause()
        provider, filling, mounted = seen[0]
        assert provider == "lab" and not filling
        assert mounted == len(app.chat.items) > 20  # the whole window (two screens) was in before it
        await app.action_quit()


async def test_a_session_that_kept_its_size_resumes_without_measuring_and_is_measured_once_drawn(
    lab, tmp_path, monkeypatch
):
    """A session closed by bulkhead kept its next request's exact size: the Payload panel shows it as the
    session opens, no message translated for the route; they are translated in the SDK import's thread once
    the window is drawn, and the first measure on the loop finds them all."""
    settings = lab_settings(lab)
    session_id = long_session(tmp_path)
    engine, _choice, _resumed = open_engine(settings, resume=session_id, workspace=tmp_path)
    exact = engine.context_report().predicted_bytes
    await engine.close()  # the size kept, as at every quit and turn's end

    warms: list = []
    monkeypatch.setattr(
        "app.ui.engine_link.prewarm_in_background", lambda provider, then=None, first=None: warms.append(then)
    )
    app = make_app(settings, tmp_path, resume=session_id)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await until(pilot, lambda: warms, "the SDK import")
        provider = app.session.engine.provider
        assert provider.serialized_messages == 0  # nothing translated to open it
        assert app.inspector.query_one(PayloadPanel).predicted_bytes == exact
        assert warms[0] is not None
        await asyncio.to_thread(warms[0])
        view = app.session.engine.session.view.messages
        assert provider.serialized_messages == len(view)
        assert app.session.engine.measure(view) == exact and provider.serialized_messages == len(view)
        await app.action_quit()


async def test_a_resume_draws_its_start_in_one_frame_and_the_window_after_the_engine(
    lab, tmp_path, monkeypatch
):
    """The history on screen and the start's notices arrive in one frame (none with half of them), and the
    rest of the window, off the screen, is mounted only once the engine has started (a slow start here:
    SessionStart hooks can take a while)."""
    frames: list[tuple[int, bool]] = []  # (items, the resume notice among them) of each frame drawn
    filled: list[bool] = []  # whether the engine was ready when the window's rest went in
    start = Engine.start

    async def slow_start(engine, **kwargs):
        await asyncio.sleep(0.3)
        await start(engine, **kwargs)

    monkeypatch.setattr(Engine, "start", slow_start)
    app = make_app(lab_settings(lab), tmp_path, resume=long_session(tmp_path))
    display = app._display

    def drawn(screen, renderable):
        if renderable is not None and screen is app.screen:
            items = app.chat.items
            frames.append((len(items), any(getattr(i, "code", "") == "resume" for i in items)))
        return display(screen, renderable)

    app._display = drawn
    async with app.run_test(size=SIZE) as pilot:
        chat = app.chat
        fill = chat._fill_window

        async def fill_window():
            if chat.older_count and not filled:
                filled.append(app.engine_ready.is_set())
            await fill()

        chat._fill_window = fill_window
        await resumed_and_focused(pilot)
        history = [(n, notice) for n, notice in frames if n > 1]  # more than the lab's own notice
        assert history and all(notice for _n, notice in history)  # never the history without its notices
        assert filled == [True]
        first = history[0][0]
        assert first < len(chat.items)  # the first frame had what fills the view; the window came after
        await app.action_quit()


async def test_a_resumed_history_is_drawn_at_its_end_and_its_final_width_from_the_first_frame(lab, tmp_path):
    """A resumed history taller than the view: its first frame shows the end, with the scrollbar beside it
    (not the top of what was mounted at full width, then all of it re-wrapped one column narrower and
    scrolled down in the next frame). After /clear an empty chat has no scrollbar."""
    frames: list[tuple[float, float, bool, dict[int, int]]] = []
    app = make_app(lab_settings(lab), tmp_path, resume=long_session(tmp_path))
    display = app._display

    def drawn(screen, renderable):
        chat = app.chat
        if renderable is not None and screen is app.screen and chat.older_count:
            widths = {id(item): item.size.width for item in chat.items}
            frames.append((chat.scroll_y, chat.max_scroll_y, chat.show_vertical_scrollbar, widths))
        return display(screen, renderable)

    app._display = drawn
    async with app.run_test(size=SIZE) as pilot:
        chat = await resumed_and_focused(pilot)
        scroll_y, max_scroll_y, scrollbar, first = frames[0]
        assert max_scroll_y > 0 and scroll_y == max_scroll_y and scrollbar  # the end, and its scrollbar
        for *_, widths in frames[1:]:
            assert all(widths[key] == width for key, width in first.items() if key in widths)
        app.prompt.focus()
        await submit(pilot, "/clear")  # a new session: its notices only
        await until(pilot, lambda: not users(app) and not chat.older_count, "the cleared chat")
        await ready(pilot)
        await pilot.pause()
        assert chat.max_scroll_y == 0 and not chat.show_vertical_scrollbar
        await app.action_quit()


async def test_a_search_before_the_engine_has_started_ends_the_resumed_windows_fill(
    lab, tmp_path, monkeypatch
):
    """/find brings an old item into view (a window of its own) while the engine is still starting: the
    resumed window's rest, due after the start, is not mounted into it (nor beside what the search took off)."""
    start = Engine.start
    searched = asyncio.Event()

    async def slow_start(engine, **kwargs):
        await searched.wait()
        await start(engine, **kwargs)

    monkeypatch.setattr(Engine, "start", slow_start)
    app = make_app(lab_settings(lab), tmp_path, resume=long_session(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        chat = app.chat
        await until(pilot, lambda: chat.notices("resume"), "the resumed history and its notices")
        assert chat.filling  # the window's rest waits for the engine
        said = await chat.find("marker-5-end")
        assert said.startswith("“marker-5-end”: match 1 of 1") and not chat.filling  # a window of its own
        searched.set()
        await ready(pilot)
        await pilot.pause()
        blocks = [i.call_id for i in chat.items if isinstance(i, ToolBlock)]
        assert len(blocks) == len(set(blocks)) and not chat.filling  # nothing mounted twice, no fill after
        found = next(i for i in chat.items if isinstance(i, ToolBlock) and i.call_id == "call_5")
        assert on_screen(app, found)
        await app.action_quit()


async def test_a_resumed_partial_answer_shows_its_mark_and_a_whole_one_has_none(lab, tmp_path):
    store = Store()
    session = Session.create(store, route="lab", provider="lab", model="lab-1", workspace=str(tmp_path))
    session.append(Message.create("user", "first question", turn=1))
    session.append(Message.create("assistant", "a whole answer", turn=1))
    session.append(Message.create("user", "second question", turn=2))
    session.append(Message.create("assistant", "an answer cut", turn=2, partial=True))
    store.close()
    app = make_app(lab_settings(lab), tmp_path, resume=session.id)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        whole, cut = app.chat.answers()
        assert not whole.partial and not whole.query(".partial-mark")
        mark = cut.query_one(".partial-mark", Static)
        assert cut.has_class("-partial") and mark.display and "cut short" in str(mark.render())
        await app.action_quit()


async def test_resume_draws_rows_not_items_so_long_answers_cost_what_fills_the_screen(lab, tmp_path):
    """Items are drawn until about three screens of rows are filled: 30 answers of 300 lines each resume with
    the last one to three drawn, not `chat_window_items` (60) of them; scrolling up pages in about a screen."""
    store = Store()
    session = Session.create(store, route="lab", provider="lab", model="lab-1", workspace=str(tmp_path))
    for i in range(30):
        session.append(Message.create("user", f"question {i}", turn=i + 1))
        body = "\n".join(f"answer {i} line {n}: some words to read" for n in range(300))
        session.append(Message.create("assistant", body, turn=i + 1))
    store.close()
    app = make_app(lab_settings(lab), tmp_path, resume=session.id)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        chat = app.chat
        history = [i for i in chat.items if not isinstance(i, NoticeItem)]
        assert 1 <= len(history) <= 3 and chat.older_count == 60 - len(history)
        assert "answer 29 line 299" in history[-1].copy_text()
        older = chat.older_count
        chat.focus()
        await pilot.pause()
        for _ in range(40):
            if chat.older_count < older:
                break
            await pilot.press("pageup")
            await pilot.pause()
        # a page is about a screen of rows: here a few items (an answer draws in slices, so its height is known
        # only once drawn and the next page may follow), never `chat_window_items` // 3 (20) of them
        assert older - 10 <= chat.older_count < older
        await app.action_quit()


async def test_find_reaches_an_item_never_drawn_and_end_returns_to_the_latest(lab, tmp_path):
    session_id = long_session(tmp_path)
    settings = lab_settings(lab, chat_window_items=40)
    app = make_app(settings, tmp_path, resume=session_id)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        chat = app.chat
        assert not any("marker-7-end" in i.copy_text() for i in chat.items)
        await pilot.press("ctrl+f")
        assert app.prompt.text == "/find " and app.prompt.has_focus
        await submit(pilot, "/find MARKER-7-END")  # case does not matter
        await until(pilot, lambda: any(i.has_class("-found") for i in chat.items), "the match")
        found = next(i for i in chat.items if i.has_class("-found"))
        assert isinstance(found, ToolBlock) and "marker-7-end" in found.copy_text()
        assert chat.current_item() is found
        await until(pilot, lambda: on_screen(app, found), "the match on screen")
        # a window around the match (about `chat_window_screens` screens of rows), not everything
        assert len(chat.items) <= chat.max_mounted and chat.newer_count > 0
        # the same query again: the next older match; a query found nowhere says so
        await submit(pilot, "/find answer number")
        await until(pilot, lambda: chat.find_query == "answer number", "the second find")
        newest = next(i for i in chat.items if i.has_class("-found"))
        assert f"answer number {PROMPTS - 1}:" in newest.copy_text()
        said = await chat.find("answer number")
        assert "match 2 of" in said
        said = await chat.find("no such words anywhere")
        assert "not in this conversation" in said
        # End: the latest window again, following
        chat.focus()
        await pilot.press("end")
        await until(pilot, lambda: chat.newer_count == 0 and chat.follow, "the latest")
        assert users(app)[-1] == f"prompt number {PROMPTS - 1}: look at module {PROMPTS - 1}"
        await app.action_quit()


async def test_a_live_session_past_the_budget_keeps_pruned_items_findable(tmp_path, monkeypatch):
    monkeypatch.setattr("app.ui.chat.RENDER_BUDGET", 30)
    monkeypatch.setattr("app.ui.chat.PRUNE_TO", 20)
    app = app_on(FakeSession(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        for n in range(45):
            await app.chat.add_notice(f"note {n}.", code="bulk")
        assert len(app.chat.items) <= 30 and app.chat.older_count >= 15
        said = await app.chat.find("note 3.")
        assert "match 1 of 1" in said
        found = next(i for i in app.chat.items if i.has_class("-found"))
        assert found.copy_text() == "note 3."
        await app.action_quit()


async def test_a_resumed_session_says_so_under_its_history_and_older_pages_go_in_above_the_history(
    lab, tmp_path
):
    """The start's notices ("resumed …", a route's) are shown where they happened, after the history; paging
    back brings older items in at the top, never between them and the history."""
    session_id = long_session(tmp_path)
    app = make_app(lab_settings(lab, chat_window_items=40), tmp_path, resume=session_id)
    async with app.run_test(size=SIZE) as pilot:
        chat = await resumed_and_focused(pilot)

        def notices_after_the_history() -> bool:
            kinds = [isinstance(item, NoticeItem) for item in chat.items]
            return kinds[0] is False and kinds == sorted(kinds) and any(kinds)

        assert chat.notices("resume")
        assert notices_after_the_history()
        await page_up_until_older_items_go_in(pilot, chat)
        assert notices_after_the_history()
        assert users(app)[0] != f"prompt number {PROMPTS - 1}: look at module {PROMPTS - 1}"


async def closed_by_bulkhead(settings, session_id: str, tmp_path) -> str:
    """The session opened and closed by an engine, as bulkhead leaves it: its view's size kept, which a resume
    reports without decoding the view (a session without it decodes everything to measure it)."""
    engine, _choice, _resumed = open_engine(settings, resume=session_id, workspace=tmp_path)
    engine.context_report()
    await engine.close()
    return session_id


async def test_a_long_session_opens_from_its_end_and_its_older_items_follow_once_it_is_drawn(
    lab, tmp_path, monkeypatch
):
    """Resuming decodes the last messages only (app.session.engine.head_later): the engine's open, its start, the first
    frames and the keys' checks never decode the older ones. They are decoded in a thread once the session is
    drawn and join the chat's entries: the marker then counts them, /find reaches the first turn."""
    waiting: list[bool] = []
    held: list = []  # the decoding, held back as a slow disk would: /find comes first

    def prewarm(provider, then=None, first=None):
        waiting.append(app.session.engine.session.head_waiting)
        held.append(first)

    monkeypatch.setattr("app.ui.engine_link.prewarm_in_background", prewarm)
    session_id = await closed_by_bulkhead(lab_settings(lab), long_session(tmp_path), tmp_path)
    store = Store()
    whole = Session.load(store, session_id)
    store.close()
    app = make_app(lab_settings(lab), tmp_path, resume=session_id)
    async with app.run_test(size=SIZE) as pilot:
        chat = await resumed_and_focused(pilot)
        await until(pilot, lambda: held, "the head's decoding")
        assert waiting == [True]  # nothing before it decoded the older messages
        assert "↑ earlier items are not shown yet" in str(chat._pruned_marker.render())  # more to come
        finding = asyncio.create_task(chat.find("marker-0-end"))  # the first tool result
        await pilot.pause()
        assert not finding.done()  # /find waits for the older items
        await asyncio.to_thread(held[0])  # in a thread, as the SDK import's runs it
        said = await finding
        assert said.startswith("“marker-0-end”: match 1 of 1")
        await pilot.pause()
        assert "prompt number 0: look at module 0" in users(app)
        session = app.session.engine.session
        assert not session.head_waiting and session.master == whole.master
        assert chat.older_count + len(chat.items) + chat.newer_count > 3 * PROMPTS  # every item of it
        await pilot.press("end")
        await until(pilot, lambda: chat.newer_count == 0 and chat.follow, "the latest")
        assert f"↑ {chat.older_count:,} earlier items" in str(chat._pruned_marker.render())
        await app.action_quit()


async def test_a_damaged_older_row_is_a_stub_and_the_session_goes_on(lab, tmp_path):
    """A damaged row among the older messages (issue 37, item 14): the session opens from its end all the
    same, the row reads as a stub that says so, nothing else is lost, and the next turn is answered."""
    session_id = await closed_by_bulkhead(lab_settings(lab), long_session(tmp_path), tmp_path)
    store = Store()
    with store._lock:  # a row of the head damaged
        store._conn.execute(
            "UPDATE messages SET parts = '[{' WHERE session_id = ? AND seq = 2", (session_id,)
        )
        store._conn.commit()
    store.close()
    app = make_app(lab_settings(lab), tmp_path, resume=session_id)
    async with app.run_test(size=SIZE) as pilot:
        chat = await resumed_and_focused(pilot)
        await until(pilot, lambda: chat._older_coming is None, "the head's decoding to end")
        assert not [n for n in chat.notices("session") if n.level == "error"]
        stub = app.session.engine.session.master[2]
        assert "could not be read from the database" in stub.text
        assert users(app)[-1] == f"prompt number {PROMPTS - 1}: look at module {PROMPTS - 1}"
        errors = len([n for n in chat.notices() if n.level == "error"])
        app.prompt.focus()
        await submit(pilot, "one more question")
        await until(pilot, lambda: not app.busy, "the turn's end")
        assert len([n for n in chat.notices() if n.level == "error"]) == errors
        assert "one more question" in app.session.engine.session.master[-1].text or any(
            "one more question" in m.text for m in app.session.engine.session.master[-3:]
        )
        assert app.is_running
        await app.action_quit()
