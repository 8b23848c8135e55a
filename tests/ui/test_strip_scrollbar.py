"""The chat's scrollbar (`StripScrollBar`): what Textual's draws, from lines kept while nothing they show changes."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.geometry import Region
from textual.widgets import Static

from app.ui.widgets.strip_scrollbar import StripScrollBar, StripScrollbars

TEXT = "\n".join(f"line {n}" for n in range(400))


class StripScroll(StripScrollbars, VerticalScroll):
    pass


class Host(App):
    CSS = "VerticalScroll { width: 30; height: 20; }"

    def compose(self) -> ComposeResult:
        with Horizontal():
            with StripScroll(id="strip"):
                yield Static(TEXT)
            with VerticalScroll(id="textual"):
                yield Static(TEXT)


def drawn(bar) -> list[tuple[str, object]]:
    """The bar's cells as the screen gets them: (text, style) of every segment, line by line."""
    width, height = bar.size
    return [
        (segment.text, segment.style)
        for strip in bar.render_lines(Region(0, 0, width, height))
        for segment in strip
    ]


async def test_the_strip_scrollbar_draws_what_textuals_draws_at_every_position() -> None:
    app = Host()
    async with app.run_test(size=(80, 24)) as pilot:
        ours, theirs = app.query_one("#strip"), app.query_one("#textual")
        assert isinstance(ours.vertical_scrollbar, StripScrollBar)
        assert type(theirs.vertical_scrollbar) is not StripScrollBar
        for y in (0, 1, 7, 133, 250, 379, 380, 10_000):
            for view in (ours, theirs):
                view.scroll_to(y=y, animate=False, immediate=True)
            await pilot.pause()
            assert ours.scroll_y == theirs.scroll_y
            assert ours.vertical_scrollbar.size == theirs.vertical_scrollbar.size
            assert drawn(ours.vertical_scrollbar) == drawn(theirs.vertical_scrollbar), y


async def test_the_lines_are_kept_until_the_thumb_moves_and_equal_lines_are_one_strip() -> None:
    app = Host()
    async with app.run_test(size=(80, 24)) as pilot:
        view = app.query_one("#strip")
        view.scroll_to(y=100, animate=False, immediate=True)
        await pilot.pause()
        bar = view.vertical_scrollbar
        whole = Region(0, 0, *bar.size)
        first = bar.render_lines(whole)
        again = bar.render_lines(whole)
        assert all(a is b for a, b in zip(first, again, strict=True))  # nothing changed: the same lines
        assert len({id(strip) for strip in first}) <= 5  # track above, thumb ends, thumb, track below
        width = bar.size.width
        assert bar.render_lines(Region(0, 3, width, 4)) == first[3:7]  # the rows asked for
        assert [s.text for s in bar.render_lines(Region(1, 3, 1, 4))] == [s.text[1:] for s in first[3:7]]
        view.scroll_to(y=300, animate=False, immediate=True)
        await pilot.pause()
        moved = bar.render_lines(whole)
        assert [(s.text, list(s)) for s in moved] != [(s.text, list(s)) for s in first]
