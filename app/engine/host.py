"""What the engine's parts need from the engine: narrow protocols instead of the whole `Engine`.

`Recovery`, `Compactor`, `NativeContext` and the parts `Engine` is made of (the tool runner, the budget, history,
the MCP link, the turn loop) each see the engine through one protocol here; `Engine` satisfies them all (mypy
checks it where it builds them) and a test can hand any of them a small fake. Each lists only what its client
reads or calls, so a change to the engine that breaks them shows up here. No part imports `app.engine.turn` or
another part (the import contracts in pyproject.toml).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from app.config import Route, Settings
    from app.engine.checkpoints import Checkpoints, Snapshot
    from app.engine.compaction.context import PassContext
    from app.engine.compaction.pipeline import PipelineResult
    from app.engine.compaction.summarize import ContextEngine
    from app.engine.failures import Failure
    from app.engine.hooks import HookRunner
    from app.engine.instructions import Instructions
    from app.engine.memory.worker import MemoryWorker
    from app.engine.payload import CapInfo, FloorSizes
    from app.engine.permissions import Permissions
    from app.engine.retry import RetryPolicy
    from app.engine.sender import RequestFailed, Sender, StreamResult
    from app.engine.session import Session
    from app.mcp.deferral import DeferralPlan
    from app.mcp.manager import McpManager
    from app.mcp.toolset import McpToolset
    from app.model.events import CompactionTrigger, Event, ViewChanged
    from app.model.messages import Image, Message, ToolCall
    from app.model.tools import ToolSpec
    from app.providers.base import Provider
    from app.state import State
    from app.tools.budget import TurnBudget


# -- the parts as the other parts see them (each lists what its callers use; the classes satisfy them) ---------
class Call(Protocol):
    """A tool call: the model's (`ToolCallChunk`) or an `@mention`'s (`ToolCall`)."""

    @property
    def id(self) -> str: ...

    @property
    def name(self) -> str: ...

    @property
    def args(self) -> Mapping[str, Any]: ...


class CompactorPart(Protocol):
    """`app.engine.compactor.Compactor` as history, the turn loop and chat_fit call it."""

    async def run(
        self,
        *,
        trigger: CompactionTrigger,
        target_bytes: int | None,
        instructions: str | None = None,
        cancel: asyncio.Event | None = None,
    ) -> PipelineResult | None: ...


class RecoveryPart(Protocol):
    """`app.engine.recovery.Recovery` as the turn loop calls it: the ladder after a payload rejection."""

    async def recover(self, failed: RequestFailed, *, max_tokens: int, turn: int) -> StreamResult: ...


class FallbackPart(Protocol):
    """`app.engine.fallback.FallbackChain` as the turn loop, the lifecycle and the route link use it."""

    def turn_started(self) -> None: ...

    async def request(self, turn: int, max_tokens: int) -> StreamResult: ...

    def take_partials(self) -> list[str]: ...

    async def reset(self, route: Route, provider: Provider, old: Provider | None = None) -> None: ...

    async def aclose(self) -> None: ...


class NativePart(Protocol):
    """`app.engine.native.NativeContext` (provider-native context management) as the other parts use it."""

    @property
    def enabled(self) -> bool: ...

    @property
    def supported(self) -> bool: ...

    def threshold(self) -> int | None: ...

    def prepare(self) -> None: ...

    def skip_calibration(self, result: StreamResult) -> bool: ...

    async def after_answer(self, result: StreamResult, answer: Message) -> None: ...

    async def compact(
        self, trigger: CompactionTrigger, instructions: str | None, cancel: asyncio.Event | None = None
    ) -> PipelineResult | None: ...


# -- the engine as each part sees it ---------------------------------------------------------------------------
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
    provider: Provider
    sender: Sender
    state: State

    @property
    def native(self) -> NativePart: ...

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


class ToolHost(Protocol):
    """What the tool runner (app.engine.tool_runner) reads: the rules, the hooks, the workspace, checkpoints."""

    settings: Settings
    session: Session
    workspace: Path
    permissions: Permissions
    hooks: HookRunner
    mcp_tools: McpToolset | None
    route: Route
    checkpoints: Checkpoints
    tool_cancel: asyncio.Event
    turn_running: int

    def emit(self, event: Event) -> None: ...

    def mark_instructions_changed(self) -> None: ...


class HistoryHost(Protocol):
    """What the history commands (app.engine.history) use: the session, checkpoints, the compactor, sizes."""

    settings: Settings
    session: Session
    workspace: Path
    checkpoints: Checkpoints
    memory: MemoryWorker
    lock: asyncio.Lock

    @property
    def compactor(self) -> CompactorPart: ...

    @property
    def bytes_per_token(self) -> float: ...

    def usable_window_tokens(self) -> int: ...

    def measure(self, messages: Sequence[Message], max_tokens: int | None = None) -> int: ...

    def emit(self, event: Event) -> None: ...

    def view_changed(self, reason: str = "") -> ViewChanged: ...

    def load_instructions(self) -> Instructions: ...

    async def approve_restores(self, snapshots: Sequence[Snapshot], command: str) -> set[str]: ...


class McpHost(Protocol):
    """What the MCP link (app.engine.mcp_link) reads: the servers, the request's base, the budgets."""

    settings: Settings
    route: Route
    provider: Provider
    system: str
    builtin_tools: tuple[ToolSpec, ...]
    max_tokens: int
    mcp: McpManager | None
    mcp_tools: McpToolset | None
    budget_epoch: int
    closing: bool

    @property
    def bytes_per_token(self) -> float: ...

    def usable_window_tokens(self) -> int: ...

    def cap_info(self) -> CapInfo: ...

    def emit(self, event: Event) -> None: ...

    def view_changed(self, reason: str = "") -> ViewChanged: ...


class NativeHost(CompactionHost, Protocol):
    """What provider-native context management (app.engine.native) uses besides the shared part."""

    provider: Provider
    sender: Sender
    state: State
    system: str
    max_tokens: int

    @property
    def tools(self) -> tuple[ToolSpec, ...]: ...

    @property
    def bytes_per_token(self) -> float: ...

    def usable_window_tokens(self) -> int: ...

    def cap_info(self) -> CapInfo: ...

    def measure(self, messages: Sequence[Message], max_tokens: int | None = None) -> int: ...


class BudgetHost(Protocol):
    """What the budget (app.engine.budget) reads: the route and its provider, the request's base, the session."""

    settings: Settings
    session: Session
    state: State
    route: Route
    provider: Provider
    system: str
    base_system: str
    instructions: Instructions
    builtin_tools: tuple[ToolSpec, ...]
    max_tokens: int
    catalog_window: int
    budget_epoch: int
    mcp: McpManager | None

    @property
    def native(self) -> NativePart: ...

    @property
    def tools(self) -> tuple[ToolSpec, ...]: ...

    def mcp_plan(self) -> DeferralPlan | None: ...

    def emit(self, event: Event) -> None: ...

    def view_changed(self, reason: str = "") -> ViewChanged: ...


class RequestHost(NativeHost, Protocol):
    """What fitting a request under the cap (app.engine.chat_fit) and resending it without a refused beta
    (app.engine.betas) use besides provider-native compaction's part."""

    @property
    def native(self) -> NativePart: ...

    @property
    def compactor(self) -> CompactorPart: ...

    def floor_sizes(self) -> FloorSizes: ...


class LoopHost(RequestHost, Protocol):
    """What the turn loop (app.engine.turn_loop) uses: everything a turn touches, through the other parts."""

    lock: asyncio.Lock
    memory: MemoryWorker
    model_output_cap: int
    tool_cancel: asyncio.Event
    turn_running: int

    @property
    def fallback(self) -> FallbackPart: ...

    @property
    def recovery(self) -> RecoveryPart: ...

    @property
    def context_window(self) -> int: ...

    def keep_view_size(self) -> None: ...

    def calibrate(self, result: StreamResult) -> None: ...

    def load_instructions(self) -> Instructions: ...

    def announce_instructions(self) -> None: ...

    def take_instructions_changed(self) -> bool: ...

    def mentions(self, prompt: str) -> list[ToolCall]: ...

    async def prompt_images(self, typed: str) -> list[Image]: ...

    async def run_tools(
        self, calls: Sequence[Call], turn: int, budget: TurnBudget, *, by_user: bool = False
    ) -> None: ...

    async def await_mcp(self) -> None: ...


class LifecycleHost(Protocol):
    """What the start and the close (app.engine.lifecycle) use."""

    session: Session
    state: State
    workspace: Path
    route: Route
    provider: Provider
    hooks: HookRunner
    permissions: Permissions
    instructions: Instructions
    mcp: McpManager | None
    memory: MemoryWorker
    closing: bool

    @property
    def fallback(self) -> FallbackPart: ...

    def emit(self, event: Event) -> None: ...

    def view_changed(self, reason: str = "", *, predicted: int | None = None) -> ViewChanged: ...

    def floor_sizes(self) -> FloorSizes: ...

    def keep_view_size(self) -> None: ...

    def start_bytes(self) -> int | None: ...


class RouteHost(Protocol):
    """What the route link (app.engine.route_link) reads and sets: the route and what derives from it."""

    settings: Settings
    session: Session
    state: State
    hooks: HookRunner
    lock: asyncio.Lock
    retry_policy: RetryPolicy
    sleep: Callable[[float], Awaitable[None]]
    route: Route
    provider: Provider
    sender: Sender
    model_output_cap: int
    max_tokens: int
    catalog_window: int

    @property
    def fallback(self) -> FallbackPart: ...

    @property
    def context_window(self) -> int: ...

    def cap_info(self) -> CapInfo: ...

    def route_cap(self, route: Route) -> CapInfo: ...

    def floor_sizes(self) -> FloorSizes: ...

    def route_changed(self) -> None: ...

    def emit(self, event: Event) -> None: ...

    def view_changed(self, reason: str = "") -> ViewChanged: ...
