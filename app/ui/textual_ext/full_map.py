"""A layout that keeps the map of every widget it has just built.

Textual's compositor keeps two maps: the widgets on screen and, built when something asks where an
off-screen widget is, every widget. A layout (`Compositor.reflow`) builds the map of every widget — but
when a widget off the screen was to be repainted (`update_widgets`: paging mounts items above the view,
the inspector's hidden panels), the map is marked stale first and stays marked: the first question
after the layout (Textual asks it itself, for each resized widget's size) arranged the whole screen a
second time, with the same result. Paging back through a long session: 710 whole-screen arrangements
for 354 layouts (the second of each mostly from the arrangement caches, ~3 ms).

`FullMapCompositor` clears the mark when its layout has built the map; anything that changes after
marks it again as before (the next `update_widgets`, a scroll's partial layout).

It also hands out copies of each arrangement's map and widget set, and empties Textual's own: those are
held by the arrangement's recursive closure (`add_widget`, a reference cycle) until a collection reaches
it, and an arrangement allocates enough for that closure to outlive a young collection or two — so a
widget taken off the chat, with all it held, often waited for a full collection however it was released
(see `app.ui.textual_ext.collector.Doomed`).
"""

from __future__ import annotations

import inspect

from textual._compositor import Compositor, CompositorMap, ReflowResult
from textual.geometry import Size
from textual.widget import Widget

from app.ui.textual_ext import gate


def reliance() -> list[str]:
    """What `FullMapCompositor` relies on that this Textual's compositor lacks ([] = holds)."""
    missing = gate.missing_attributes(Compositor, ["reflow", "_arrange_root"])
    if not missing:
        if list(inspect.signature(Compositor._arrange_root).parameters) != [
            "self",
            "root",
            "size",
            "visible_only",
        ]:
            missing.append("Compositor._arrange_root takes other arguments")
        if not hasattr(Compositor(), "_full_map_invalidated"):
            missing.append("Compositor._full_map_invalidated")
    return missing


def compositor() -> Compositor:
    """The main screen's compositor: a `FullMapCompositor`, or Textual's own when the patch does not hold."""
    return FullMapCompositor() if gate.holds("full_map", reliance()) else Compositor()


class FullMapCompositor(Compositor):
    """Textual's compositor whose layout leaves its map of every widget current (the main screen's)."""

    def reflow(self, parent: Widget, size: Size) -> ReflowResult:
        result = super().reflow(parent, size)
        self._full_map_invalidated = False  # the map just built holds every widget where it is now
        return result

    def _arrange_root(
        self, root: Widget, size: Size, visible_only: bool = True
    ) -> tuple[CompositorMap, set[Widget]]:
        arranged, widgets = super()._arrange_root(root, size, visible_only)
        kept = dict(arranged), set(widgets)
        arranged.clear()  # what the closure's cycle holds: nothing now
        widgets.clear()
        return kept
