"""A scrollbar drawn from lines it keeps while its position, size and colours stay the same.

Textual's `ScrollBar` renders a Rich renderable (`ScrollBarRender`) through the whole widget pipeline: a
Rich render to segments, a `Strip` per line, then the styles cache's per-line composition. Its position
changes whenever the view scrolls, which repaints every line of it: in the chat, 48 lines in a frame of
a PageUp (~7 ms of a ~28 ms frame), and ~26 lines in most frames of a streaming answer (~1.4 ms of ~9).

`StripScrollBar` draws the same vertical bar (`ScrollBarRender.render_bar`: the same glyphs, colours and mouse
actions) straight into strips, one segment a line, and keeps them until something they show changes;
the app's line filters are applied as the styles cache would. `StripScrollbars` makes a container
use it for its vertical scrollbar.
"""

from __future__ import annotations

from rich.color import Color
from rich.segment import Segment
from rich.style import Style
from textual.geometry import Region
from textual.scrollbar import ScrollBar, ScrollBarRender
from textual.strip import Strip
from textual.widget import Widget

DEFAULT_BACK = Color.parse("#555555")  # the colours `ScrollBarRender` falls back to without a style's
DEFAULT_BAR = Color.parse("bright_magenta")


class StripScrollBar(ScrollBar):
    """A vertical scrollbar whose lines are built once per position, size and style (a horizontal one is
    drawn as Textual draws it)."""

    _strips_key: tuple | None = None
    _strips: list[Strip]

    def render_lines(self, crop: Region) -> list[Strip]:
        if not self.vertical:
            return super().render_lines(crop)  # Textual's own pipeline
        bar = self.render()
        if not isinstance(bar, ScrollBarRender):
            return super().render_lines(crop)
        width, height = self.size
        key = (width, height, bar.virtual_size, bar.window_size, bar.position, bar.style, self.visual_style)
        if key != self._strips_key:
            self._strips = self._build(bar, width, height)
            self._strips_key = key
        strips = self._strips[crop.y : crop.bottom]
        if crop.column_span != (0, width):
            strips = [strip.crop(crop.x, crop.right) for strip in strips]
        filters = self.get_line_filters()
        if filters:
            background = self.background_colors[1]
            for line_filter in filters:
                strips = [strip.apply_filter(line_filter, background) for strip in strips]
        return strips

    def _build(self, bar: ScrollBarRender, width: int, height: int) -> list[Strip]:
        """The bar's lines as `ScrollBarRender.__rich_console__` yields them for a `width`×`height` region:
        one segment a line, `width` cells wide; the lines that show the same segment are one strip (a bar
        has at most five different lines: above and below the thumb, the thumb and its two ends)."""
        style = bar.style if isinstance(bar.style, Style) else Style.parse(str(bar.style))
        segments = bar.render_bar(
            size=height,
            virtual_size=bar.virtual_size,
            window_size=bar.window_size,
            position=bar.position,
            thickness=width,
            vertical=True,
            back_color=style.bgcolor or DEFAULT_BACK,
            bar_color=style.color or DEFAULT_BAR,
        ).segments
        base = self.visual_style.rich_style  # what Textual's pipeline lays under the bar's own styles
        made: dict[Segment, Strip] = {}
        for segment in segments[:height]:
            if segment not in made:
                made[segment] = Strip([Segment(segment.text, base + segment.style)], width)
        return [made[segment] for segment in segments[:height]]


class StripScrollbars:
    """Mix into a scrolling container (first in the bases): its vertical scrollbar is a `StripScrollBar`.

    Replaces Textual's `Widget.vertical_scrollbar` property, which makes the bar on first use (the same
    steps: hidden until the layout shows it, started as a child of the container)."""

    _vertical_scrollbar: ScrollBar | None

    @property
    def vertical_scrollbar(self) -> ScrollBar:
        widget: Widget = self  # type: ignore[assignment]
        if self._vertical_scrollbar is None:
            bar = StripScrollBar(vertical=True, name="vertical", thickness=widget.scrollbar_size_vertical)
            bar.display = False
            self._vertical_scrollbar = bar
            widget.app._start_widget(widget, bar)
        return self._vertical_scrollbar
