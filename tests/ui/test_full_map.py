"""A layout arranges the screen once (`FullMapCompositor`), and still knows where every widget is after it, and
what it arranged is not left in a reference cycle; the main screen uses it, with the chat's `StripScrollBar` and lines that make their caches on first use."""

from __future__ import annotations

import gc
import sys

from textual._compositor import Compositor
from textual.app import App, ComposeResult
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.strip import Strip
from textual.widgets import Static

import app.ui.app as app_module
from app.ui.headless import ready
from app.ui.textual_ext.full_map import FullMapCompositor
from app.ui.textual_ext.strip_caches import make_strip_caches_lazy
from app.ui.widgets.strip_scrollbar import StripScrollBar
from tests.ui.conftest import lab_settings
from tests.ui.test_app import make_app


class Rows(Screen):
    def __init__(self, compositor: Compositor) -> None:
        super().__init__()
        self._compositor = compositor

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="rows"):
            for n in range(60):
                yield Static(f"row {n}", id=f"row-{n}")


class Host(App):
    def __init__(self, compositor: Compositor) -> None:
        super().__init__()
        self.compositor = compositor

    def on_mount(self) -> None:
        self.push_screen(Rows(self.compositor))


def count_arrangements(compositor: Compositor) -> list[str]:
    """What the compositor does: "layout" for each layout, "every widget" for each arrangement of them all."""
    made: list[str] = []
    arrange, reflow = compositor._arrange_root, compositor.reflow

    def counted_arrange(root, size, visible_only=True):
        if not visible_only:
            made.append("every widget")
        return arrange(root, size, visible_only)

    def counted_reflow(parent, size):
        made.append("layout")
        return reflow(parent, size)

    compositor._arrange_root = counted_arrange  # type: ignore[method-assign]
    compositor.reflow = counted_reflow  # type: ignore[method-assign]
    return made


async def layout_with_an_off_screen_widget_repainted(compositor: Compositor) -> tuple[list[str], App]:
    app = Host(compositor)
    async with app.run_test(size=(40, 12)) as pilot:
        await pilot.pause()
        made = count_arrangements(compositor)
        app.screen.query_one("#row-50", Static).update("row 50, repainted off screen")
        await app.screen.query_one("#rows").mount(Static("a new row", id="row-new"))
        await pilot.pause()
        assert app.screen.query_one("#row-new").virtual_region.y == 60  # laid out: below the 60 rows
        assert app.screen.query_one("#row-50").virtual_region.y == 50
        return made, app


async def test_a_layout_after_an_off_screen_repaint_arranges_every_widget_once() -> None:
    made, _app = await layout_with_an_off_screen_widget_repainted(FullMapCompositor())
    assert made.count("layout") >= 1
    assert made.count("every widget") == made.count("layout")


async def test_textuals_compositor_arranged_them_twice() -> None:
    """What `FullMapCompositor` fixes (a canary: when Textual stops doing this, drop the subclass)."""
    made, _app = await layout_with_an_off_screen_widget_repainted(Compositor())
    assert made.count("layout") >= 1
    assert made.count("every widget") == 2 * made.count("layout")


async def held_after_an_arrangement(compositor: Compositor) -> int:
    """References to a widget left behind by an arrangement of the whole screen whose result is dropped."""
    app = Host(compositor)
    async with app.run_test(size=(40, 12)) as pilot:
        await pilot.pause()
        row = app.screen.query_one("#row-30")
        gc.disable()
        try:
            before = sys.getrefcount(row)
            compositor._arrange_root(app.screen, app.screen.size, visible_only=False)
            after = sys.getrefcount(row)
        finally:
            gc.enable()
        return after - before


async def test_an_arrangement_leaves_nothing_holding_the_widgets_it_placed() -> None:
    """A widget taken off the screen is freed when the next layout's map replaces the one holding it."""
    assert await held_after_an_arrangement(FullMapCompositor()) == 0


async def test_textuals_arrangement_left_its_map_in_a_reference_cycle() -> None:
    """The canary: Textual's `_arrange_root` returns the map its recursive closure holds; dropped, the map
    (and every widget on it) waits for a collection."""
    assert await held_after_an_arrangement(Compositor()) >= 1


async def test_the_main_screen_lays_out_with_it_and_draws_with_lazy_lines_and_the_strip_scrollbar(
    lab, tmp_path, monkeypatch
):
    calls: list[bool] = []

    def recorded() -> bool:  # the flag on Strip is process-wide: another test may have set it already
        calls.append(make_strip_caches_lazy())
        return calls[-1]

    monkeypatch.setattr(app_module, "make_strip_caches_lazy", recorded)
    app = make_app(lab_settings(lab), tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        assert isinstance(app.screen._compositor, FullMapCompositor)
        assert isinstance(app.chat.vertical_scrollbar, StripScrollBar)
        assert calls == [True]
        assert getattr(Strip, "_bulkhead_lazy_caches", False)
