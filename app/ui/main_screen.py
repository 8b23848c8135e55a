"""The main screen: the top bar, the chat and the prompt on the left, the inspector on the right.

    bulkhead · route (model) · title              ← #topbar
    ┌ #chat-column ─────────────┐ ┌ #inspector ┐
    │ Chat, ↓ new output hint   │ │ panels     │
    │ PromptBox                 │ │            │
    └───────────────────────────┘ └────────────┘
    KeyFooter (Textual's Footer, mounted again only when its keys change)

The app's default screen (`BulkheadApp.get_default_screen`); help, sessions and pickers open above it.
Its styles are `styles/app.tcss` (the app's stylesheet, which the other screens share).
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from textual.actions import SkipAction
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.timer import Timer
from textual.widgets import Static

from app.ui.chat import Chat
from app.ui.prompt import PromptBox, PromptHistory
from app.ui.textual_ext.frames import frame_timer, frames_hold
from app.ui.textual_ext.full_map import compositor
from app.ui.textual_ext.layout_requests import ListsEveryChild
from app.ui.widgets.inspector import Inspector
from app.ui.widgets.key_footer import KeyFooter

NEW_OUTPUT_HINT = "↓ new output below — End (in the chat) or Alt+↓ jumps to it and follows"


class MainScreen(ListsEveryChild):
    """Chat beside the inspector; the hint for output below the fold; the prompt."""

    def __init__(self, *, history: PromptHistory, workspace: Path, inspector: Inspector) -> None:
        super().__init__(id="_default")
        self._compositor = compositor()  # one arrangement per layout (`app.ui.textual_ext.full_map`)
        self.history = history
        self.workspace = workspace
        self.inspector = inspector
        self._frames: Timer | None = None

    @property
    def _update_timer(self) -> Timer:
        """Textual's screen draws on a fixed 60 Hz grid; this one draws a change at once (`app.ui.textual_ext.frames`)."""
        if self._frames is None:
            self._frames = frame_timer(self) if frames_hold() else super()._update_timer
        return self._frames

    def compose(self) -> ComposeResult:
        yield Static("bulkhead · opening the session…", id="topbar", markup=False)
        with Horizontal(id="main"):
            with Vertical(id="chat-column"):
                yield Chat(id="chat")
                yield Static(NEW_OUTPUT_HINT, id="new-output", markup=False)
                yield PromptBox(history=self.history, workspace=Path(self.workspace), id="prompt-box")
            yield self.inspector
        yield KeyFooter(id="footer")

    def on_mount(self) -> None:
        for selector in ("#new-output", "#completions", "#busy"):
            self.query_one(selector).display = False
        self.app.main_screen_mounted()  # type: ignore[attr-defined]  # BulkheadApp's; screens see App[Any]

    def on_prompt_area_scroll_chat(self, event) -> None:
        """PageUp / PageDown / Home / End typed in the prompt when its text does not need them."""
        chat = self.query_one("#chat", Chat)
        with contextlib.suppress(SkipAction):  # nothing to scroll
            getattr(chat, f"action_{event.action}")()

    def on_chat_leave_chat(self) -> None:
        with contextlib.suppress(NoMatches):
            self.query_one("#prompt").focus()

    def on_chat_new_output_below(self, event: Chat.NewOutputBelow) -> None:
        with contextlib.suppress(NoMatches):
            self.query_one("#new-output").display = event.below

    def on_click(self, event) -> None:
        widget = getattr(event, "widget", None)
        if widget is not None and widget.id == "new-output":
            self.query_one("#chat", Chat).action_jump_latest()
