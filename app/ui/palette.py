"""The command palette's bulkhead commands: the actions that apply now, titled "area: verb".

The palette reads a small host (the app; `PaletteHost`): the action table decides what applies,
the host runs what is picked.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, Protocol

from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.markup import escape

from app.config import Settings
from app.textsafe import display_line
from app.ui.actions import ACTIONS


class PaletteHost(Protocol):
    """What the palette needs of the app."""

    session: Any  # app.engine.api.ui_session.UiSession | None
    settings: Settings
    custom_commands: Sequence[Any]  # app.engine.api.custom_commands.CustomCommand

    @property
    def busy(self) -> bool: ...

    def run_command(self, action_id: str, arg: str = "", *, typed: bool = False) -> bool: ...

    def prefill_prompt(self, text: str) -> None: ...

    def run_custom(self, command: Any, arguments: str) -> bool: ...

    def panel_names(self) -> tuple[str, ...]: ...


def palette_hits(app: PaletteHost) -> list[tuple[str, str, Callable[[], Any]]]:
    """(title, help, callback) for every command the palette offers now."""
    hits: list[tuple[str, str, Callable[[], Any]]] = []
    for action in ACTIONS:
        if not action.applies(app):
            continue
        if action.id == "model":
            hits.append((action.title, action.help, partial(app.run_command, "model", "")))
            current = app.session.info().route if app.session else ""
            for name in sorted(app.settings.routes):
                if name != current:
                    hits.append(
                        (
                            f"model: switch to {name}",
                            f"Continue this session on route {name}",
                            partial(app.run_command, "model", name),
                        )
                    )
            continue
        if action.id == "panel":
            for number, name in enumerate(app.panel_names(), start=1):
                hits.append(
                    (
                        f"panel: {name}",
                        f"Show the {name} panel and give it the keyboard (Alt+{number})",
                        partial(app.run_command, "panel", name),
                    )
                )
            continue
        if action.needs_arg:
            hits.append(
                (action.title, action.help, partial(app.prefill_prompt, action.usage.split()[0] + " "))
            )
        else:
            hits.append((action.title, action.help, partial(app.run_command, action.id, "")))
    if app.session is not None and not app.busy:
        for command in app.custom_commands:
            takes_arguments = command.argument_hint or "$ARGUMENTS" in command.body or "$1" in command.body
            run = (
                partial(app.prefill_prompt, command.slash + " ")
                if takes_arguments
                else partial(app.run_custom, command, "")
            )
            # the palette reads help as markup: a description from a file is escaped (names cannot hold "[")
            hits.append((f"command: {command.slash}", escape(display_line(command.description)), run))
    return hits


def applicable_titles(app: PaletteHost) -> list[str]:
    """The palette's titles right now (for tests and the help screen)."""
    return [title for title, _help, _callback in palette_hits(app)]


class BulkheadCommands(Provider):
    """The palette's bulkhead commands: only those that apply now, titled "area: verb"."""

    async def discover(self) -> Hits:
        for title, help_, callback in palette_hits(self.app):  # type: ignore[arg-type]
            yield DiscoveryHit(title, callback, help=help_)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, help_, callback in palette_hits(self.app):  # type: ignore[arg-type]
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), callback, help=help_)
