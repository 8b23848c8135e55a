"""The footer of keys: Textual's, mounted again only when the keys it shows change."""

from __future__ import annotations

from typing import Any

from textual.widgets import Footer


class KeyFooter(Footer):
    """Textual's `Footer` mounts every key again, and so lays out the whole screen, each time the bindings are
    refreshed — a turn's start and end, an approval, a focus moving — whether or not a key changed. In a resumed
    session of thousands of messages that layout held the first streamed token (and the key typed with it)
    for ~40 ms. This one is mounted again only when the keys it would show differ from those it shows."""

    _shown: tuple[Any, ...] | None = None

    def _keys(self) -> tuple[Any, ...]:
        """What `Footer.compose` draws from: the screen's active bindings (each with whether it is enabled and
        its tooltip) and the footer's own options."""
        active = self.screen.active_bindings.values()
        bindings = tuple((binding, enabled, tooltip) for _node, binding, enabled, tooltip in active)
        return bindings, self.compact, self.show_command_palette

    async def recompose(self) -> None:
        keys = self._keys() if self.is_attached else None
        if keys is not None and keys == self._shown and self.children:
            return
        self._shown = keys
        await super().recompose()
