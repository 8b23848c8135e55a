"""Copying for the app: OSC 52 at once, the system clipboard in a thread, then one honest toast."""

from __future__ import annotations

from textual import work

from app.ui.app_host import AppMixin
from app.ui.clipboard import CopyResult, system_copy


class Copying(AppMixin):
    """Mixed into `BulkheadApp`: `copy(text, what)`, and the copy requests of the chat and the panels."""

    last_copy: CopyResult | None = None

    def copy(self, text: str, what: str) -> None:
        osc52 = False
        error = ""
        try:
            self.copy_to_clipboard(text)
            osc52 = not self.is_headless
        except Exception as exc:
            error = str(exc)
        self._system_copy(text, what, osc52, error)

    @work(thread=True, group="clipboard", exit_on_error=False, name="clipboard")
    def _system_copy(self, text: str, what: str, osc52: bool, error: str) -> None:
        tool, tool_error = system_copy(text)
        result = CopyResult(osc52=osc52, system_tool=tool, error=tool_error or error)
        self.call_from_thread(self._copied, result, what)

    def _copied(self, result: CopyResult, what: str) -> None:
        self.last_copy = result
        self.notify(
            result.describe(what), title="copy", severity="information" if result.ok else "error", timeout=6
        )

    def on_chat_copy_item(self, event) -> None:
        self.copy(event.text, event.what)

    def on_copy_requested(self, message) -> None:
        self.copy(message.text, message.what or "the text")
