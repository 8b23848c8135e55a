"""Scroll views whose scrollbars are repainted when they change, not at every layout of the screen.

Textual's `ScrollView` (a `DataTable`, a `TextArea`) keeps its own virtual size — the table's or the
text's dimensions — while the compositor hands every widget the size of its region as the virtual
size. The two differ whenever the content is wider or taller than the widget, and `ScrollView` reads
the difference as a change: at every layout of the screen, anywhere on it, it updates and repaints its
scrollbars. While an answer streams the screen is laid out twenty times a second, so the requests
table's horizontal scrollbar (one line in the inspector) was dirty in every frame — and Textual redraws
the bounding box of a frame's dirty regions, so one line in the inspector plus the chat made every
widget on the screen render again, twenty times a second.

`SteadyScrollbars` does the scrollbar update only when something it depends on changed: the widget's
size, its own virtual size, the container size the compositor gives it, or its styles.
"""

from __future__ import annotations

from functools import cache

from textual.css.styles import RenderStyles
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.widgets import DataTable

from app.ui.textual_ext import gate


def reliance() -> list[str]:
    """What `SteadyScrollbars` relies on that this Textual lacks ([] = holds)."""
    return gate.missing_attributes(ScrollView, ["_size_updated"]) + gate.missing_attributes(
        RenderStyles, ["_cache_key"]
    )


@cache
def steady_holds() -> bool:
    return gate.holds("steady_scrollbars", reliance())


class SteadyScrollbars:
    """Mix into a `ScrollView` subclass (first in the bases): no scrollbar repaint at a layout that
    changed nothing of the widget's."""

    _steady_key: tuple | None = None

    def _size_updated(
        self, size: Size, virtual_size: Size, container_size: Size, layout: bool = True
    ) -> bool:
        if not steady_holds():
            return super()._size_updated(size, virtual_size, container_size, layout)  # type: ignore[misc]
        key = (size, self.virtual_size, container_size, self.styles._cache_key)  # type: ignore[attr-defined]
        if key == self._steady_key:
            # What ScrollView._size_updated returns when nothing changed (it sends no Resize then).
            return self._container_size != container_size  # type: ignore[attr-defined]
        self._steady_key = key
        return super()._size_updated(size, virtual_size, container_size, layout)  # type: ignore[misc]


class SteadyDataTable(SteadyScrollbars, DataTable):
    """A `DataTable` with steady scrollbars (the inspector's tables: on screen while answers stream)."""
