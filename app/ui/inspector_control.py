"""Showing, hiding and widening the inspector, and moving between its panels (Alt+1…7, Ctrl+T).

A terminal narrower than `NARROW_COLUMNS` starts with the inspector hidden (F2 shows it); one
narrower than `INSPECTOR_MIN_COLUMNS` cannot show it beside the chat, and says so.
"""

from __future__ import annotations

import contextlib

from textual import events
from textual.css.query import NoMatches

from app.ui.app_host import AppMixin
from app.ui.focus_rules import focus_in
from app.ui.widgets.inspector import PANEL_NAMES

NARROW_COLUMNS = 110  # a terminal narrower than this starts with the inspector hidden (F2 shows it)
INSPECTOR_MIN_COLUMNS = 80  # the chat and the inspector need 40 columns each (styles/app.tcss min-width)


class InspectorControl(AppMixin):
    """Mixed into `BulkheadApp`: the inspector's place on the screen and its panel keys."""

    _narrow: bool | None = None  # which side of NARROW_COLUMNS the terminal was last on

    def on_resize(self, event: events.Resize) -> None:
        """Crossing NARROW_COLUMNS hides or shows the inspector; in between, F2 decides."""
        narrow = event.size.width < NARROW_COLUMNS
        if narrow == self._narrow:
            return
        first = self._narrow is None
        self._narrow = narrow
        if narrow:
            self._hide_inspector()
        else:
            self.remove_class("-hide-inspector")
        if narrow and first:
            self.notify(
                f"The terminal is {event.size.width} columns wide: the inspector is hidden to give the "
                f"chat room — F2 shows it.",
                timeout=6,
            )

    def _show_inspector(self) -> bool:
        """Show the inspector, or say why it cannot be shown here (a terminal too narrow for both panes)."""
        width, height = self.size
        if width < INSPECTOR_MIN_COLUMNS:
            self.notify(
                f"The terminal is {width}×{height}: the inspector needs {INSPECTOR_MIN_COLUMNS} columns beside "
                f"the chat — widen the terminal to see it (/cost and /context show its numbers here).",
                severity="warning",
                timeout=6,
            )
            return False
        self.remove_class("-hide-inspector")
        return True

    def _hide_inspector(self) -> None:
        """Hide the inspector; the keyboard goes back to the prompt if one of its panels had it (the focused
        area is always one you can see)."""
        if focus_in(self.inspector, self):
            with contextlib.suppress(NoMatches):
                self.screen.set_focus(self.prompt)
        self.add_class("-hide-inspector")

    def action_toggle_inspector(self) -> None:
        if self.has_class("-hide-inspector"):
            self._show_inspector()
        else:
            self._hide_inspector()

    def action_widen_inspector(self) -> None:
        if not self._show_inspector():
            return
        self.toggle_class("-wide-inspector")
        self.inspector.wide = self.has_class("-wide-inspector")

    def panel_names(self) -> tuple[str, ...]:
        """The inspector's panels, in the order of their keys (Alt+1 … Alt+7)."""
        return PANEL_NAMES

    def action_panel(self, number: int) -> None:
        names = self.panel_names()
        if not 1 <= number <= len(names) or not self._show_inspector():
            return
        self.inspector.show_panel(names[number - 1])

    def action_next_panel(self) -> None:
        """Ctrl+T: the panel after the focused one (the first when none is focused)."""
        names = self.panel_names()
        panels = self.inspector.panels
        focused = self.focused
        current = next(
            (
                index
                for index, name in enumerate(names)
                if focused is not None
                and name in panels
                and (focused is panels[name] or panels[name] in focused.ancestors)
            ),
            -1,
        )
        self.action_panel((current + 1) % len(names) + 1)
