"""Where the keyboard goes, so that it never traps you.

- A printable key typed on the main screen while the focus is outside a text field goes to the prompt —
  unless a key of the focused area claims it *now* (the approval's y / n / a / p / d while a tool call
  waits; a panel's own letter, should one have any). The chat and the panels use Alt / Ctrl keys for
  their commands, so a message typed after Ctrl+O, Alt+3 or a recall lands, whole, in the prompt.
- Esc returns to the prompt from anywhere (and cancels what runs, as before).
- The focused area is always visible: hiding the inspector (F2, a terminal grown narrow) while one of
  its panels has the keyboard gives it back to the prompt.

The app calls these; they read the app's focus and bindings only.
"""

from __future__ import annotations

from typing import Any

from textual import events
from textual.widgets import Input, TextArea

TEXT_FIELDS = (Input, TextArea)


def on_main_screen(app: Any) -> bool:
    """No modal screen (help, sessions, palette, a question) is on top of the chat."""
    return len(app.screen_stack) == 1


def goes_to_prompt(app: Any, event: events.Key) -> bool:
    """Should this key be typed into the prompt rather than handled where the focus is?"""
    if not event.is_printable or not on_main_screen(app):
        return False
    focused = app.focused
    if isinstance(focused, TEXT_FIELDS):
        return False  # a text field types its own keys (the prompt, a panel's search box)
    claimed = app.screen.active_bindings.get(event.key)
    return claimed is None or not claimed.enabled


def focus_in(widget: Any, app: Any) -> bool:
    """The focused widget is `widget` or inside it."""
    focused = app.focused
    return focused is not None and (focused is widget or widget in focused.ancestors)


def visible(widget: Any) -> bool:
    """`widget` and every container it is in are displayed, and it takes room on the screen."""
    node = widget
    while node is not None and hasattr(node, "display"):
        if not node.display or not node.visible:
            return False
        node = node.parent
    return widget.region.width > 0 and widget.region.height > 0
