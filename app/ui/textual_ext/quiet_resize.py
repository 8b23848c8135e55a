"""Containers that grow without repainting every line and without asking for a second layout.

When a layout gives a widget a new height or virtual size, Textual (1) repaints every line of the widget
and (2) sets its `virtual_size` reactive, which repaints it again and asks for one more layout of the
screen. While an answer streams, every flush makes the answer, its chat item and the chat taller: each
flush cost two layouts and a full redraw of the chat's own lines, of the item's and of every line of
the answer on screen. The second layout changes nothing (the sizes came from the first).

`QuietResize` takes a change of height or virtual size at the same width quietly: it repaints only the
rows that can differ (from the bottom gutter of the shorter height down; a widget that knows better
overrides `_repaint_resized`, as the answer view repaints from its first changed row), updates the
scrollbars of a scrolling container, and sets the virtual size without the reactive's repaint and layout.
"""

from __future__ import annotations

from functools import cache

from textual.geometry import Region, Size
from textual.widget import Widget

from app.ui.textual_ext import gate

WIDGET_PRIVATES = ("_size", "_container_size", "_layout_required", "_layout_updates")
WIDGET_METHODS = ("_size_updated", "_set_dirty", "_scroll_update", "_clear_arrangement_cache", "set_reactive")


def reliance() -> list[str]:
    """What `QuietResize` and `measure_again` rely on that this Textual's widget lacks ([] = holds)."""
    return gate.missing_attributes(Widget, WIDGET_METHODS) + gate.missing_attributes(
        Widget(), WIDGET_PRIVATES
    )


@cache
def quiet_holds() -> bool:
    """Checked once; off, widgets resize as Textual does (two layouts and a full repaint per change)."""
    return gate.holds("quiet_resize", reliance())


class QuietResize:
    """Mix into a widget (first in the bases)."""

    def _repaint_resized(self, old: Size, size: Size) -> None:
        """Repaint what a change of height at the same width can change: the rows from the bottom gutter
        (padding, border) of the shorter height down; those above are drawn as they were."""
        widget: Widget = self  # type: ignore[assignment]
        top = max(0, min(old.height, size.height) - widget.styles.gutter.bottom)
        rows = Region(0, top, size.width, max(old.height, size.height) - top)
        widget._set_dirty(rows.translate(-widget.content_offset))  # _set_dirty takes content rows

    def _size_updated(
        self, size: Size, virtual_size: Size, container_size: Size, layout: bool = True
    ) -> bool:
        widget: Widget = self  # type: ignore[assignment]
        if not quiet_holds():
            return super()._size_updated(size, virtual_size, container_size, layout)  # type: ignore[misc]
        old = widget._size
        if (
            not layout  # the scroll fast path: Textual's own handling
            or not old.width
            or old.width != size.width
            or container_size.width != widget._container_size.width
            or (
                old == size
                and virtual_size == widget.virtual_size
                and container_size == widget._container_size
            )
        ):
            return super()._size_updated(size, virtual_size, container_size, layout)  # type: ignore[misc]
        if old.height != size.height:
            self._repaint_resized(old, size)
        widget._size = size
        widget._container_size = container_size
        widget.set_reactive(Widget.virtual_size, virtual_size)
        if widget.is_scrollable:
            widget._scroll_update(virtual_size)
        return True


def measure_again(widget: Widget) -> None:
    """`widget.refresh(layout=True)` for a widget whose content height has just changed, that also forgets
    every measure of it taken before the change.

    Textual keys a widget's measured size (its box model cache) on a counter that `refresh(layout=True)`
    bumps only when no layout request is pending. A streamed answer asks for a layout, a layout runs before
    Textual has handled the request (another widget's), measures the answer at its height then and caches
    it, the answer grows, asks again — and the counter stays: the next layout sizes its chat item from the
    cached, older height while the answer itself gets its new one. The item kept the caption's single row
    with the text below it, out of view, and the chat's end stopped above it (issue 40: an empty
    "assistant" block, 2 of ~30 long answers; the stress test in tests/ui/test_stream_stress.py found it).
    Bumping the counter with every change keeps a stale measure from ever being found. (Textual 8.2.)
    Nothing is repainted here (`refresh()` without regions would mark every line): the caller repaints
    what changed."""
    if not quiet_holds():
        widget.refresh(layout=True, repaint=False)
        return
    if widget._layout_required:
        widget._layout_updates += 1  # refresh below will not: a request is pending
    forget_measures(widget)
    widget.refresh(layout=True, repaint=False)


def forget_measures(widget: Widget) -> None:
    """Forget the measures that hold `widget`'s old height: its containers' arrangements and sizes, up to
    the first that does not size itself by its content (the chat) — as Textual does only when it handles
    the layout request. A layout that runs before then (another widget's) measures the item around an
    answer anew instead of from an arrangement made for the answer's old height."""
    if not quiet_holds():
        return
    for ancestor in widget.ancestors:
        if not isinstance(ancestor, Widget):
            break
        ancestor._clear_arrangement_cache()
        ancestor._layout_updates += 1
        if not ancestor.styles.auto_dimensions:
            break
