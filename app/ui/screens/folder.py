"""A session of another folder is being resumed: in which folder do its tools run? (the screen's result)

its   — the session's own folder (the app moves there: tools, @ files, commands, rules)
here  — the folder bulkhead was started in (the session belongs to it from now on)
None  — back (Esc): the session in use goes on; at start, a new session here
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from app.model.session_folders import shown_folder
from app.textsafe import display_line

FolderChoice = Literal["its", "here"]


class FolderScreen(ModalScreen[FolderChoice | None]):
    """Ask where a resumed session of another folder runs its tools."""

    HELP = """\
## A session of another folder

Its tools (shell, edits, reads), `@` files, your commands and the project's rules work in one folder:

- **o**: its own folder — bulkhead moves there for this session
- **h**: here — the folder bulkhead was started in; the session belongs to it from now on
- **Esc**: back — the session in use goes on (at start: a new session here)
"""
    BINDINGS = [
        Binding("o", "choose('its')", "Its folder", id="folder.its"),
        Binding("h", "choose('here')", "Here", id="folder.here"),
        Binding("escape", "choose(None)", "Back", id="folder.back"),
    ]

    def __init__(
        self, session_id: str, title: str, its_folder: str, here: Path, *, back_label: str = "Back"
    ) -> None:
        """`back_label`: what Esc does — "Back" (the session in use goes on), or a new session here at start."""
        super().__init__()
        self.back_label = back_label
        self.session_id = session_id
        self.session_title = title
        self.its_folder = its_folder
        self.here = here
        self.its_exists = Path(its_folder).is_dir()

    def compose(self) -> ComposeResult:
        title = f" “{display_line(self.session_title)[:60]}”" if self.session_title else ""
        its = display_line(shown_folder(self.its_folder, 60))
        here = display_line(shown_folder(str(self.here), 60))
        gone = "" if self.its_exists else f"\n{its} does not exist any more: its tools can run here only."
        with Vertical(id="folder-dialog"):
            yield Static("A session of another folder", id="folder-title", markup=False)
            yield Static(
                f"Session {self.session_id}{title} was started in {its}. Where do its tools (shell, edits, "
                f"reads), @ files, commands and project rules work?{gone}",
                id="folder-body",
                markup=False,
            )
            with Vertical(id="folder-buttons"):
                yield Button(
                    f"Its folder, {its} (o)",
                    id="its",
                    variant="primary",
                    disabled=not self.its_exists,
                    compact=True,
                )
                yield Button(f"Here, {here} (h)", id="here", compact=True)
                yield Button(f"{self.back_label} (Esc)", id="back", compact=True)

    def on_mount(self) -> None:
        self.query_one("#its" if self.its_exists else "#here", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.action_choose(None if event.button.id == "back" else event.button.id)

    def action_choose(self, choice: str | None) -> None:
        if choice == "its" and not self.its_exists:
            self.app.bell()
            return
        self.dismiss(choice)  # type: ignore[arg-type]
