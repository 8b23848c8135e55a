"""What the App's mixins (`EngineLink`, `TurnControl`, `FileMentions`, `InspectorControl`, `Copying`) use of
`BulkheadApp` besides Textual's `App`: a Protocol, so mypy checks each mixin against the app it is mixed
into without seeing the app itself.

    class EngineLink(AppMixin): ...      # at run time AppMixin is `object`: nothing changes

`AppMixin` is, for mypy only, Textual's `App` with `AppHost`; `BulkheadApp` implements every member.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from textual.app import App
    from textual.widget import Widget

    from app.config import Settings
    from app.engine.api.ui_session import UiSession
    from app.model.events import ApprovalRequested
    from app.state import State
    from app.ui.chat import Chat
    from app.ui.prompt import PromptArea, PromptBox, PromptHistory
    from app.ui.widgets.inspector import Inspector


class AppHost(Protocol):
    """The members of `BulkheadApp` (app/ui/app.py) its mixins use."""

    # what it was started with
    settings: Settings
    state: State
    store: Any  # app.store.Store, once opened (the session's records)
    workspace: Path
    started_in: Path
    route_name: str | None
    model_override: str | None
    resume: str | None
    continue_: bool
    ask_workspace: bool
    ready_notices: tuple[str, ...]
    clock: Callable[[], float]
    open_session: Callable[..., Any] | None

    # the session and what runs
    session: UiSession | None
    activity: Any  # reactive[str]: "" | turn | compact | probe | blocked
    engine_ready: asyncio.Event
    open_error: str
    folder_notice: str
    files_stale: bool
    compact_cancel: asyncio.Event | None
    custom_commands: list[Any]
    history: PromptHistory
    _waiting: list[str]
    _approvals: dict[str, asyncio.Future[Any]]
    _command_problems: list[str]
    _quitting: bool

    @property
    def chat(self) -> Chat: ...

    @property
    def prompt(self) -> PromptArea: ...

    @property
    def prompt_box(self) -> PromptBox: ...

    @property
    def inspector(self) -> Inspector: ...

    @property
    def busy(self) -> bool: ...

    @property
    def quitting(self) -> bool: ...

    def _q(self, selector: str, expect_type: type[Widget] = ...) -> Any: ...

    def submit_initial_command(self) -> None: ...

    def prefill_prompt(self, text: str) -> None: ...

    def update_topbar(self) -> None: ...

    # of the mixins, used by another
    def send_waiting(self) -> None: ...

    def return_waiting(self) -> None: ...

    def refresh_custom_commands(self) -> list[str]: ...

    def approval_requested(self, event: ApprovalRequested) -> None: ...

    def drop_approvals(self) -> None: ...

    def copy(self, text: str, what: str) -> None: ...


if TYPE_CHECKING:

    class AppMixin(AppHost, App[int]):
        """mypy's view of a mixin of `BulkheadApp`: Textual's App with `AppHost`."""

else:
    AppMixin = object
