"""What a frame costs while an answer streams: only what changed is drawn again (counted, never timed).

Textual redraws the bounding box of a frame's dirty regions, and a widget whose region changed, or that
asked for a repaint, draws all of its visible lines again. These tests count scrollbar repaints, lines
drawn by the answer view and renders outside the chat while text streams in.
"""

from __future__ import annotations

import asyncio
import threading

from textual.app import App, ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.widgets import DataTable, Static

from app.model.events import AnswerFinished, TextDelta
from app.ui import startup
from app.ui.chat import Chat
from app.ui.headless import until
from app.ui.markdown import painter, parser
from app.ui.markdown.widget import AnswerView
from app.ui.textual_ext.quiet_resize import QuietResize
from app.ui.textual_ext.steady_scrollbars import SteadyDataTable


def count_calls(obj: object, name: str) -> list[int]:
    """Wrap `obj.name` so each call is counted; the count is the list's one item."""
    calls = [0]
    original = getattr(obj, name)

    def counted(*args, **kwargs):
        calls[0] += 1
        return original(*args, **kwargs)

    setattr(obj, name, counted)
    return calls


def markdown_text(chars: int) -> str:
    """A coding answer's Markdown: headings, paragraphs, lists and fenced code."""
    blocks: list[str] = []
    n = 0
    while sum(len(block) + 2 for block in blocks) < chars:
        n += 1
        blocks.append(f"## Step {n}: the `payload_{n}` module")
        blocks.append(
            f"Step {n} measures every message **once** and caches the size, so the cost stays flat. " * 2
        )
        blocks.append("\n".join(f"- item {n}.{i}: keep it under {i * 128} bytes" for i in range(1, 4)))
        blocks.append(
            "```python\n" + "\n".join(f"def handler_{n}_{i}():\n    return {i}" for i in range(3)) + "\n```"
        )
    return "\n\n".join(blocks)[:chars]


WIDE = [f"column number {n}" for n in range(12)]  # far wider than the table: a horizontal scrollbar


class TableHost(App):
    CSS = "DataTable { height: 5; width: 40; } #grower { height: auto; }"

    def __init__(self, table: DataTable) -> None:
        super().__init__()
        self.table = table

    def compose(self) -> ComposeResult:
        yield Static("one line", id="grower")
        yield self.table

    def on_mount(self) -> None:
        for label in WIDE:
            self.table.add_column(label, key=label)
        self.table.add_row(*(f"value {n}" for n in range(len(WIDE))))


async def _scrollbar_repaints_while_another_widget_grows(table: DataTable) -> tuple[int, TableHost]:
    app = TableHost(table)
    async with app.run_test(size=(80, 20)) as pilot:
        await pilot.pause()
        assert table.show_horizontal_scrollbar
        scrollbar = table.horizontal_scrollbar
        repaints = count_calls(scrollbar, "refresh")
        grower = app.query_one("#grower", Static)
        for n in range(2, 8):  # six layouts of the screen that change nothing of the table's
            grower.update("\n".join(["line"] * n))
            await pilot.pause()
        return repaints[0], app


async def test_a_wide_table_does_not_repaint_its_scrollbar_at_every_layout_of_the_screen():
    plain, _ = await _scrollbar_repaints_while_another_widget_grows(DataTable())
    steady, _ = await _scrollbar_repaints_while_another_widget_grows(SteadyDataTable())
    assert plain >= 6  # Textual's ScrollView: one repaint per layout (what made every frame redraw all)
    assert steady == 0


async def test_a_steady_table_still_updates_its_scrollbar_when_the_table_changes():
    table = SteadyDataTable()
    app = TableHost(table)
    async with app.run_test(size=(80, 20)) as pilot:
        await pilot.pause()
        width = table.horizontal_scrollbar.window_virtual_size
        table.add_column("a much wider column " * 3, key="wider")
        await pilot.pause()
        assert table.horizontal_scrollbar.window_virtual_size > width
        for n in range(6):
            table.add_row(*(f"row {n}" for _ in range(len(WIDE) + 1)))
        await pilot.pause()
        assert table.show_vertical_scrollbar
        assert table.vertical_scrollbar.window_virtual_size == table.virtual_size.height
        table.styles.width = 120  # its size changes: the scrollbar follows
        await pilot.pause()
        assert table.horizontal_scrollbar.window_size == table.size.width - table.scrollbar_size_vertical


class AnswerHost(App):
    """An answer streaming in a scrolling pane, as in the chat (narrow, so it soon outgrows the view)."""

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield AnswerView(streaming=True)


async def _stream_into(pilot, view: AnswerView, text: str, piece: int) -> None:
    for start in range(0, len(text), piece):
        view.append(text[start : start + piece])
        await pilot.pause()
        await until(pilot, lambda: not view._draw_pending() and not view._ingest_pending, "the slice")


def _screen_text(app: App) -> list[str]:
    return [strip.text for strip in app.screen._compositor.render_strips()]


async def test_a_streamed_flush_repaints_the_lines_that_changed_not_the_whole_answer():
    app = AnswerHost()
    async with app.run_test(size=(70, 30)) as pilot:
        view = app.query_one(AnswerView)
        drawn = count_calls(view, "render_line")
        appends = 40
        text = markdown_text(appends * 150)
        await _stream_into(pilot, view, text, 150)
        visible = app.query_one(VerticalScroll).size.height
        assert view.size.height > 3 * visible  # it outgrew the view long ago
        # Repainting every visible line at every append would draw ≥ appends × visible lines; only the
        # open block's lines and the new ones are drawn again.
        assert drawn[0] < appends * visible / 3, (drawn[0], appends * visible)


async def test_what_a_partial_repaint_shows_is_what_a_full_repaint_shows():
    app = AnswerHost()
    async with app.run_test(size=(70, 30)) as pilot:
        view = app.query_one(AnswerView)
        pane = app.query_one(VerticalScroll)
        text = markdown_text(5_000)
        for start in range(0, len(text), 90):
            view.append(text[start : start + 90])
            pane.scroll_end(animate=False, immediate=True)
            await pilot.pause()
        await until(pilot, lambda: not view._draw_pending() and not view._ingest_pending, "the stream drawn")
        pane.scroll_home(animate=False, immediate=True)  # lines drawn long ago, from the cache
        await pilot.pause()
        for y in range(0, pane.max_scroll_y + 1, pane.size.height // 2):
            pane.scroll_to(y=y, animate=False, immediate=True)
            await pilot.pause()
            cached = _screen_text(app)
            view.refresh()  # everything drawn again
            await pilot.pause()
            assert _screen_text(app) == cached, f"at scroll {y}"
        view.finish()  # the last block becomes final: drawn again where it changed
        await until(pilot, lambda: view.rendered, "the answer settled")
        pane.scroll_end(animate=False, immediate=True)
        await pilot.pause()
        cached = _screen_text(app)
        view.refresh()
        await pilot.pause()
        assert _screen_text(app) == cached


class QuietItem(QuietResize, Vertical):
    DEFAULT_CSS = "QuietItem { height: auto; padding: 0 1 1 1; border-bottom: solid red; }"


class QuietPane(QuietResize, VerticalScroll):
    pass


class QuietBody(QuietResize, Static):
    """Stands for the answer view, which takes its own growth quietly."""


class PlainItem(Vertical):
    DEFAULT_CSS = QuietItem.DEFAULT_CSS.replace("QuietItem", "PlainItem")


class GrowHost(App):
    def __init__(self, pane: VerticalScroll, item: Vertical, body: Static) -> None:
        super().__init__()
        self.pane, self.item, self.body = pane, item, body

    def compose(self) -> ComposeResult:
        with self.pane:
            yield Static("above")
            with self.item:
                yield self.body


async def _layouts_while_growing(
    pane: VerticalScroll, item: Vertical, body: Static
) -> tuple[int, list[str], list[str]]:
    app = GrowHost(pane, item, body)
    async with app.run_test(size=(60, 20)) as pilot:
        await pilot.pause()
        compositor = app.screen._compositor
        layouts = count_calls(compositor, "reflow")
        for n in range(1, 31):  # it soon outgrows the pane, anchored to the end as the chat is
            body.update("\n".join(f"line {k}" for k in range(n * 2)))
            pane.anchor()
            await pilot.pause()
        shown = _screen_text(app)
        for widget in (pane, item):
            widget.refresh()
        await pilot.pause()
        return layouts[0], shown, _screen_text(app)


async def test_a_growing_item_costs_one_layout_per_growth_and_draws_what_a_full_repaint_draws():
    plain, plain_shown, _ = await _layouts_while_growing(VerticalScroll(), PlainItem(), Static())
    quiet, shown, repainted = await _layouts_while_growing(QuietPane(), QuietItem(), QuietBody())
    assert shown == repainted  # the rows kept from the cache are the rows a full repaint draws
    assert shown == plain_shown  # and the same as Textual's own containers draw
    assert plain >= 55  # Textual's: a second layout after each growth (the virtual size reactive)
    assert quiet <= 35, (plain, quiet)


def no_lexer_used_yet(monkeypatch) -> None:
    """A process in which no Pygments lexer has been used (the set is shared by the parser and the painter)."""
    monkeypatch.setattr(parser, "LEXERS_READY", {"text"})
    monkeypatch.setattr(painter, "LEXERS_READY", parser.LEXERS_READY)


def fence_threads(monkeypatch) -> list[str]:
    """The name of the thread each fenced block is drawn in, in order."""
    threads: list[str] = []
    original = painter.Painter._fence

    def recorded(self, token, width, base):
        threads.append(threading.current_thread().name)
        return original(self, token, width, base)

    monkeypatch.setattr(painter.Painter, "_fence", recorded)
    return threads


async def test_code_in_a_language_not_highlighted_yet_is_drawn_in_a_thread_once(monkeypatch):
    """A lexer's first use compiles its rules (45 ms for Python): not on the event loop, mid-stream."""
    no_lexer_used_yet(monkeypatch)
    threads = fence_threads(monkeypatch)
    app = AnswerHost()
    async with app.run_test(size=(70, 30)) as pilot:
        view = app.query_one(AnswerView)
        await _stream_into(
            pilot, view, "Some code:\n\n```python\ndef f():\n    return 1\n```\n\nAfter.\n", 200
        )
        await until(pilot, lambda: not view._jobs, "the thread's drawing")
        assert threads and threads[0] != threading.main_thread().name  # the first Python block: a thread
        assert "python" in parser.LEXERS_READY
        threads.clear()
        await _stream_into(pilot, view, "More:\n\n```python\nx = 2\n```\n\nEnd.\n", 200)
        assert threads and set(threads) == {threading.main_thread().name}  # warm now: drawn on the loop
        assert "x = 2" in view.rendered_text()


async def test_a_language_warmed_at_start_up_is_drawn_on_the_loop_from_its_first_block_under_any_of_its_names(
    monkeypatch,
):
    """The SDK's import thread compiles the lexers answers use most: their first block does not stop the answer."""
    no_lexer_used_yet(monkeypatch)
    startup.prewarm_sdk("no-sdk-for-this-provider")
    assert {
        "python",
        "py",
        "python3",
        "bash",
        "sh",
        "json",
        "js",
        "ts",
        "diff",
        "yaml",
        "toml",
    } <= parser.LEXERS_READY
    threads = fence_threads(monkeypatch)
    app = AnswerHost()
    async with app.run_test(size=(70, 30)) as pilot:
        view = app.query_one(AnswerView)
        await _stream_into(pilot, view, "Some code:\n\n```py\ndef f():\n    return 1\n```\n\nAfter.\n", 200)
        assert threads and set(threads) == {threading.main_thread().name}
        assert "return 1" in view.rendered_text()


def test_the_lexers_are_warmed_also_when_the_sdk_was_imported_already(monkeypatch):
    """A prompt sent at once imports the SDK before the import thread starts: the lexers still get warmed."""
    no_lexer_used_yet(monkeypatch)
    monkeypatch.setitem(startup.SDK_MODULES, "lab", "json")  # a module imported already
    thread = startup.prewarm_in_background("lab")
    assert thread is not None
    thread.join(60)
    assert painter.lexers_warm()
    assert startup.prewarm_in_background("lab") is None  # nothing left to do


def test_what_comes_before_and_after_the_import_runs_in_its_thread_around_it(monkeypatch):
    """`first` (a long session's older messages decoded) runs in the import's thread before the import and its
    `gc.freeze`, `then` (the resumed view measured, `Engine.warm_sizes`) once they are done — and both in a thread
    of their own when there is nothing left to import."""
    order: list[tuple[str, str]] = []
    monkeypatch.setitem(startup.SDK_MODULES, "lab", "bulkhead_no_such_sdk")
    monkeypatch.setattr(startup.importlib, "import_module", lambda name: order.append(("import", name)))
    monkeypatch.setattr(startup, "warm_lexers", lambda: order.append(("lexers", "")))
    monkeypatch.setattr(startup.gc, "freeze", lambda: order.append(("freeze", "")))
    monkeypatch.setattr(startup.gc, "get_freeze_count", lambda: 0)

    def first() -> None:
        order.append(("first", threading.current_thread().name))

    def then() -> None:
        order.append(("then", threading.current_thread().name))

    thread = startup.prewarm_in_background("lab", then=then, first=first)
    assert thread is not None
    thread.join(30)
    assert [step for step, _ in order] == ["first", "import", "lexers", "freeze", "then"]
    assert order[0][1] == order[-1][1] == thread.name != threading.main_thread().name

    order.clear()
    monkeypatch.setitem(startup.SDK_MODULES, "lab", "json")  # imported already
    monkeypatch.setattr(startup, "lexers_warm", lambda: True)
    thread = startup.prewarm_in_background("lab", then=then, first=first)
    assert thread is not None
    thread.join(30)
    assert order == [("first", thread.name), ("freeze", ""), ("then", thread.name)]


class ChatHost(App):
    def compose(self) -> ComposeResult:
        yield Chat(id="chat")


async def test_streamed_text_is_appended_on_a_steady_beat_that_stops_when_the_text_does():
    app = ChatHost()
    async with app.run_test(size=(80, 24)) as pilot:
        chat = app.query_one(Chat)
        for n in range(200):  # a burst: far more deltas than beats
            await chat.handle(TextDelta(f"word{n} "))
        answer = chat.last_answer()
        assert answer is not None
        appends = count_calls(answer.view, "append")
        await until(pilot, lambda: "word199" in answer.view.text, "the burst appended")
        assert appends[0] == 1  # coalesced into one append
        await until(pilot, lambda: chat._flush_timer is None, "the beat to stop")  # a quiet beat stops it
        # Text keeps coming: each delta arrives while the one before is drawn (from the append itself, so no beat
        # can go quiet in between on a loaded machine) and the same beat appends it, not a timer set after each.
        more = [f"again{n} " for n in range(3)]
        beats: list[object] = []
        counted = answer.view.append

        def append_then_more(*args, **kwargs):
            beats.append(chat._flush_timer)
            if more:
                asyncio.get_running_loop().create_task(chat.handle(TextDelta(more.pop(0))))
            return counted(*args, **kwargs)

        answer.view.append = append_then_more
        await chat.handle(TextDelta("more "))
        beat = chat._flush_timer
        assert beat is not None  # the next delta starts it again
        await until(pilot, lambda: appends[0] == 5, "four appends")
        assert beats == [beat] * 4
        await chat.handle(AnswerFinished("m1", "end_turn"))
        assert chat._flush_timer is None and appends[0] == 5 and answer.view.text.endswith("again2 ")
