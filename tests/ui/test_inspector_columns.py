"""The inspector's tables show the columns that fit its width, whole (issue 40: at 160 and 100 columns the
Requests table ran off the panel's edge and cut the route, the purpose, a failure kind); the least important
go first, the choice is made again on a resize, and Enter opens the whole record."""

from __future__ import annotations

from textual.geometry import Region

from app.ui.headless import ready, until
from app.ui.widgets.fit_columns import Column, ColumnFit, table_width
from app.ui.widgets.record_screen import RecordScreen
from tests.ui.conftest import lab_settings
from tests.ui.test_app import make_app, send

KEY_COLUMNS = ("status", "kind", "predicted")  # beside a 160-column chat; beside 100, status and kind


def table_lines(table) -> list[str]:
    width, height = table.size
    return [strip.text for strip in table.render_lines(Region(0, 0, width, height))]


async def rejected_then_recovered(pilot, lab) -> None:
    """A 413 from the lab's nginx, then the recovered resend: a row with a long failure kind."""
    lab.configure(gateway="nginx", cap="48KB")
    await send(pilot, "!big 60KB")
    await send(pilot, "and again")


async def show_requests(pilot):
    """The Requests panel shown, its cursor on the rejected request (the table is 4 rows high at 30 lines)."""
    app = pilot.app
    app.action_panel(5)  # Requests
    panel = app.inspector.requests
    table = panel.table
    await until(pilot, lambda: table.size.width > 0 and table.row_count > 0, "the Requests table")
    row = next(i for i, key in enumerate(table.rows) if panel.records[key.value]["status"] == 413)
    table.move_cursor(row=row, animate=False)
    await pilot.pause()
    return panel


def assert_whole(panel, key_columns=KEY_COLUMNS) -> None:
    """Every shown column fits the table's width; the key columns are shown and their values not cut."""
    table = panel.table
    shown = panel.fit.shown
    assert all(key in shown for key in key_columns), shown
    assert sum(column.get_render_width(table) for column in table.columns.values()) <= table_width(table)
    assert table.virtual_size.width <= table.size.width  # nothing to scroll sideways to
    lines = table_lines(table)
    header = lines[0]
    for key in shown:
        label = str(table.columns[key].label)
        assert label in header, (label, header)
    rejected = next(line for line in lines if "413" in line)
    assert "payload_too_large" in rejected and "…" not in rejected


async def test_requests_at_160_columns_show_what_fits_whole_and_enter_opens_the_record(lab, tmp_path):
    app = make_app(lab_settings(lab), tmp_path)
    async with app.run_test(size=(160, 45)) as pilot:
        await ready(pilot)
        await rejected_then_recovered(pilot, lab)
        panel = await show_requests(pilot)
        assert_whole(panel)
        wide = set(panel.fit.shown)
        assert {"time", "actual"} <= wide and "route" not in wide  # the route is in the record

        panel.table.focus()
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, RecordScreen), "the whole record")
        text = app.screen.text
        assert "payload_too_large" in text and "route lab" in text and "413" in text
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, RecordScreen), "the record to close")

        await pilot.resize_terminal(100, 30)  # the same session, narrower: chosen again
        await pilot.pause()
        if not app.inspector.display:  # hidden by default that narrow: F2 shows it
            await pilot.press("f2")
        await until(pilot, lambda: len(panel.fit.shown) < len(wide), "fewer columns after the resize")
        await show_requests(pilot)
        assert_whole(panel, ("status", "kind"))


async def test_requests_at_100_columns_keep_the_key_columns_whole(lab, tmp_path):
    app = make_app(lab_settings(lab), tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot)
        await rejected_then_recovered(pilot, lab)
        panel = await show_requests(pilot)
        assert_whole(panel, ("status", "kind"))
        hidden = panel.fit.hidden_labels
        assert hidden and "route" in hidden
        hint = str(panel.query_one("#requests-hint").render())
        assert hint.startswith("hidden: ") and "route" in hint and "enter: whole record" in hint


def test_the_least_important_column_goes_first_and_a_narrow_one_still_fits():
    fit = ColumnFit([Column("time", "time", 2), Column("status", "status", 0), Column("route", "route", 3)])
    fit.measure({"time": "12:00:00", "status": "413", "route": "a-very-long-route-name"})
    assert not fit.choose(80) and fit.shown == ("time", "status", "route")  # all of them, as before
    assert fit.choose(20) and fit.shown == ("time", "status")  # route (rank 3) went first
    assert fit.hidden_labels == ["route"]
    assert fit.choose(9) and fit.shown == ("status",)
    assert not fit.choose(9)  # the same width: nothing changed
    assert fit.choose(3) is False and fit.shown == ("status",)  # never an empty table


async def test_hooks_in_a_narrow_inspector_keep_event_and_decision_and_enter_opens_the_run():
    from app.model.events import HookRun
    from tests.ui.test_panels import InspectorApp

    command = "./hooks/check-the-whole-repository-before-any-tool-runs.sh --strict"
    app = InspectorApp()
    async with app.run_test(size=(40, 40)) as pilot:
        inspector = app.inspector
        inspector.dispatch(HookRun("PreToolUse", "shell", command, 1234.0, 2, "block", "no: tests fail"))
        panel = inspector.show_panel("hooks")
        await until(pilot, lambda: panel.table.size.width > 0 and panel.fit.width is not None, "the table")
        await pilot.pause()
        table = panel.table
        assert {"n", "event", "decision", "exit"} <= set(panel.fit.shown) and "command" not in panel.fit.shown
        assert table.virtual_size.width <= table.size.width
        row = table_lines(table)[1]
        assert "PreToolUse" in row and "block" in row

        table.focus()
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, RecordScreen), "the whole run")
        assert command in app.screen.text and "no: tests fail" in app.screen.text
        await pilot.press("alt+c")
        await until(pilot, lambda: app.copies, "the copy")
        assert command in app.copies[-1]
