"""What `Recovery` and `Compactor` need from the engine: two narrow protocols instead of the whole `Engine`.

`Engine` satisfies both (mypy checks it where it builds them); a test can hand either a small fake. Each lists
only what its client reads or calls, so a change to the engine that breaks them shows up here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from app.config import Route, Settings
    from app.engine.compaction.context import PassContext
    from app.engine.compaction.summarize import ContextEngine
    from app.engine.failures import Failure
    from app.engine.hooks import HookRunner
    from app.engine.native import NativeContext
    from app.engine.payload import CapInfo, FloorSizes
    from app.engine.sender import Sender
    from app.engine.session import Session
    from app.model.events import Event, ViewChanged
    from app.providers.base import Provider, ToolSpec
    from app.state import State


class CompactionHost(Protocol):
    """The engine as the compactor and the recovery ladder both see it: session, settings, events, view."""

    settings: Settings
    session: Session
    hooks: HookRunner

    def emit(self, event: Event) -> None: ...

    def view_changed(self, reason: str = "") -> ViewChanged: ...

    def pass_context(self, turn: int, max_tokens: int, *, target_bytes: int | None) -> PassContext: ...


class CompactorHost(CompactionHost, Protocol):
    """What `Compactor` uses besides the shared part: the output budget, native compaction, the summarizer."""

    max_tokens: int
    native: NativeContext
    provider: Provider
    sender: Sender
    state: State

    @property
    def context_window(self) -> int: ...

    def route_cap(self, route: Route) -> CapInfo: ...

    def summarizer(self) -> tuple[Provider, Sender]: ...

    def summarizer_window(self) -> int: ...

    def context_engine(self) -> ContextEngine | None: ...


class RecoveryHost(CompactionHost, Protocol):
    """What `Recovery` uses besides the shared part: the route, its provider and sender, caps and the window."""

    route: Route
    provider: Provider
    sender: Sender
    state: State
    system: str

    @property
    def tools(self) -> tuple[ToolSpec, ...]: ...

    @property
    def context_window(self) -> int: ...

    @property
    def bytes_per_token(self) -> float: ...

    def usable_window_tokens(self) -> int: ...

    def cap_info(self) -> CapInfo: ...

    def floor_sizes(self) -> FloorSizes: ...

    def keep_partial(self, text: str, turn: int, failure: Failure | None) -> None: ...
