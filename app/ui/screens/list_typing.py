"""A letter typed on a picker's list goes on into its search box (the sessions screen, the model picker)."""

from __future__ import annotations

from textual import events
from textual.widgets import Input


def typed_into(box: Input, event: events.Key, *, besides: str = "") -> bool:
    """Add the character `event` typed to `box`'s text and move there (True); False for any other key and for a
    character of `besides`. `box` must not select its text on focus (`select_on_focus=False`), or the next
    letter would replace this one ("nginx" searched for "ginx")."""
    char = event.character
    if not char or len(char) != 1 or not char.isprintable() or char in besides:
        return False
    box.focus()
    box.value += char
    box.cursor_position = len(box.value)
    event.stop()
    return True
