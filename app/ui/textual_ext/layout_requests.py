"""A screen that tells each container which of its children asked for a layout — all of them.

The chat uses Textual's `stream` layout, which reuses the placements of the previous layout for every
child up to the first one the screen lists as having asked for a layout (`Screen._layout_widgets`). The
screen builds that list as a `Layout` message climbs from the widget that asked through its ancestors
with an automatic size. Textual 8.2 adds a child to its container's list only when the child is not
itself a container already listed — and the message has just listed it one step below. So when an
answer's view grew, its item (the chat's child) was listed under the item but never under the chat: the
chat's layout reused the item's old placement (the caption's single row, with the answer below it out of
view, and the chat's end above it) whenever another child of the chat had also asked. That was the empty
"assistant" block of issue 40 (2 of ~30 long answers; `tests/ui/test_stream_stress.py` finds it).

`ListsEveryChild._on_layout` is Textual's handler with the membership checked in the container's own list.
"""

from __future__ import annotations

from functools import cache

from textual import messages
from textual.dom import DOMNode
from textual.screen import Screen
from textual.widget import Widget

from app.ui.textual_ext import gate


def reliance() -> list[str]:
    """What `ListsEveryChild` relies on that this Textual's screen lacks ([] = holds)."""
    missing = gate.missing_attributes(Screen, ["_on_layout", "check_idle"])
    return missing + gate.missing_attributes(Screen(), ["_layout_widgets", "_layout_required"])


@cache
def layout_holds() -> bool:
    """Checked once; off, Textual's own handler runs (and the empty-block bug of issue 40 may return)."""
    return gate.holds("layout_requests", reliance())


class ListsEveryChild(Screen):
    """Mix in before `Screen`: `Layout` messages list every widget that asked under each container."""

    async def _on_layout(self, message: messages.Layout) -> None:
        if not layout_holds():
            await super()._on_layout(message)
            return
        message.stop()
        message.prevent_default()  # Textual's own handler (which skips a listed container) does not run
        layout_required = False
        widget: DOMNode = message.widget
        for ancestor in message.widget.ancestors:
            if not isinstance(ancestor, Widget):
                break
            asked = self._layout_widgets.setdefault(ancestor, set())
            if widget not in asked:
                asked.add(widget)  # type: ignore[arg-type]  # a widget: it has a widget for a parent
                layout_required = True
            if not ancestor.styles.auto_dimensions:
                break
            widget = ancestor
        if layout_required and not self._layout_required:
            self._layout_required = True
            self.check_idle()
