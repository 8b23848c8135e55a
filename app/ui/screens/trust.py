"""The trust-on-first-use question, one dialog for everything a workspace brings: what it is, what it
would do (shown escaped: it came from the repository), and y / n / Esc. Each kind of item is a small
subclass (`mcp_trust`, `rules_trust`, `gateways_trust`) that says its title, its intro and its lines.
The result is "allow", "deny" or None (not now: asked again next session).
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from app.textsafe import display_line


class TrustScreen(ModalScreen[str | None]):
    KEYS = "y allow (remembered) · n don't (remembered) · Esc not now"

    def __init__(self, specs, path: str) -> None:
        super().__init__()
        self.specs = list(specs)
        self.path = path

    def title_text(self) -> str:
        raise NotImplementedError

    def intro(self) -> str:
        raise NotImplementedError

    def lines(self) -> list[tuple[str, str]]:
        """(text, CSS class) per line of the body; the text is made safe here."""
        raise NotImplementedError

    def compose(self) -> ComposeResult:
        with Vertical(id="mcp-trust-dialog"):
            yield Static(display_line(self.title_text()), id="mcp-trust-title", markup=False)
            with VerticalScroll(id="mcp-trust-body"):
                yield Static(self.intro(), markup=False)
                for text, classes in self.lines():
                    yield Static(display_line(text), markup=False, classes=classes)
            yield Static(self.KEYS, id="mcp-trust-keys", markup=False)

    def action_answer(self, answer: str) -> None:
        self.dismiss(answer or None)
