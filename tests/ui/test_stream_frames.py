"""What a frame costs while an answer streams: only what changed is drawn again (counted, never timed).

Textual redraws the bounding box of a frame's dirty regions, and a widget whose region changed, or that
asked for a repaint, draws all of its visible lines again. These tests count scrollbar repaints, lines
drawn by the answer view and renders outside the chat while text streams in.
"""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.widgets import DataTable, Static

from app.ui.widgets.steady_scrollbars import SteadyDataTable

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
        repaints = 0
        original = scrollbar.refresh

        def counted(*args, **kwargs):
            nonlocal repaints
            repaints += 1
            return original(*args, **kwargs)

        scrollbar.refresh = counted  # type: ignore[method-assign]
        grower = app.query_one("#grower", Static)
        for n in range(2, 8):  # six layouts of the screen that change nothing of the table's
            grower.update("\n".join(["line"] * n))
            await pilot.pause()
        return repaints, app


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
