"""A request's record in the inspector (`ReportLines`): wrapped to the width, styled as before, drawn line by line."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.containers import VerticalScroll
from textual.selection import Selection

from app.ui.headless import until
from app.ui.widgets.report_lines import ReportLines

REPORT = "\n".join(
    [
        "Request r_1 · route lab · chat · attempt 0 · L0",
        "Why: Rejected by the gateway (HTTP 413)",
        "Body preview:",
        *(f'  "line {n}": "{"x" * (n % 90)}",' for n in range(180)),
        "[bold]not markup[/bold] \x1b is shown as it is",
    ]
)


class Host(App):
    CSS = "VerticalScroll { width: 64; height: 12; }"

    def __init__(self, body) -> None:
        super().__init__()
        self.body = body

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield self.body


def count_lines(widget) -> list[int]:
    """Count the lines the widget is asked to draw (the compositor asks for the ones on screen)."""
    calls = [0]
    original = widget.render_line

    def counted(y):
        calls[0] += 1
        return original(y)

    widget.render_line = counted
    return calls


async def test_an_update_draws_the_lines_on_screen_not_the_whole_report():
    view = ReportLines("No requests yet.", id="body")
    async with Host(view).run_test(size=(80, 20)) as pilot:
        await pilot.pause()
        drawn = count_lines(view)
        view.update(REPORT)
        await until(pilot, lambda: view.virtual_region.height > 180, "the report laid out")
        await pilot.pause()
        assert 0 < drawn[0] <= 2 * 12  # the rows of the 12-row view, not ~200 rows
        rows = [row.plain for row in view._wrapped(view.size.width)]
        assert len(rows) > 183  # long lines wrapped to the 62-cell width (64 less the scrollbar)
        assert max(len(row) for row in rows) <= view.size.width


async def test_the_report_is_drawn_as_the_static_it_replaced_drew_it_titles_bold_the_explanation_in_italics():
    """The same styles as before (the panel snapshots, unchanged, hold the wrapping and the colours)."""
    view = ReportLines(id="lines")
    async with Host(view).run_test(size=(80, 20)) as pilot:
        view.update(REPORT)
        await pilot.pause()
        lines = [view.render_line(y) for y in range(3)]
    assert lines[0].text.rstrip() == REPORT.split("\n")[0]
    assert all(s.style is not None and s.style.bold for s in lines[0] if s.text.strip())
    why = [s for s in lines[1] if s.text.strip()]
    assert why[0].text == "Why: " and why[0].style.bold
    assert why[1].style.italic and not why[1].style.bold
    assert all(s.style is not None and s.style.bold for s in lines[2] if s.text.strip())  # "Body preview:"


async def test_text_from_outside_is_shown_not_interpreted_and_selection_copies_what_is_drawn():
    view = ReportLines(id="body")
    async with Host(view).run_test(size=(80, 20)) as pilot:
        view.update(REPORT)
        await pilot.pause()
        text, end = view.get_selection(Selection(None, None))
        assert end == "\n"
        assert "[bold]not markup[/bold]" in text and text.split("\n")[0] == REPORT.split("\n")[0]
        assert "\x1b" not in text  # a control character is shown as a stand-in, never sent to the terminal
        view.update("plain hint\nsecond line:", styled=False)
        await pilot.pause()
        assert all(not (s.style and s.style.bold) for s in view.render_line(0) if s.text.strip())
