"""The Engine both front ends drive (through `app.engine.api`), composed of parts.

    engine = Engine(settings, session, route, provider, state=State(), approver=...)
    await engine.start()
    result = await engine.submit("fix the failing test")

Each part sees the engine only through a protocol of `app.engine.host`: the turn loop (`turn_loop`), the budget
(`budget`: window, caps, sizes, floor, calibration, reports), the tool runner (`tool_runner`: hooks, rules,
approvals by call id, checkpoints, mentions, images), history (`history`: compact, rewind, undo, memory,
recall) and the MCP link (`mcp_link`). The engine keeps the route and its sender, the session's lifecycle and
the events; every other method here hands over to a part (the names front ends call stay on `Engine`). What it is
assembled from besides its parts (workspace, built-in tools, MCP toolset, hook runner) is made in `assembly`.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from app.config import Route, Settings
from app.engine.assembly import builtin_tools, hook_runner, mcp_toolset, workspace_of
from app.engine.budget import Budget
from app.engine.checkpoints import Checkpoints, Restored
from app.engine.compaction.context import PassContext
from app.engine.compactor import Compactor
from app.engine.context_report import ContextReport
from app.engine.describe import describe
from app.engine.failures import Failure
from app.engine.fallback import FallbackChain
from app.engine.history import History
from app.engine.hooks import HookRunner
from app.engine.instructions import Instructions, join_system
from app.engine.lifecycle import Lifecycle
from app.engine.mcp_link import McpLink
from app.engine.memory.worker import MemoryWorker
from app.engine.native import NativeContext
from app.engine.payload import (
    CapInfo,
    FloorSizes,
)
from app.engine.permissions import Permissions
from app.engine.profile_evidence import (
    confirm_workspace_gateways,
)
from app.engine.records import TurnResult
from app.engine.recovery import Recovery
from app.engine.retry import RetryPolicy
from app.engine.route_link import RouteLink
from app.engine.sender import Sender, StreamResult
from app.engine.session import Session
from app.engine.tool_runner import Approver, ToolRunner
from app.engine.turn_loop import ANSWER_SEPARATOR, MAX_TOOL_ROUNDS, TurnLoop, join_answers, retry_point
from app.engine.workspace_rules import confirm_rule_files, load_permissions
from app.model.events import (
    Event,
    ViewChanged,
)
from app.model.messages import Image, Message, ToolCall
from app.model.prompts import SYSTEM_PROMPT
from app.model.tools import ToolSpec
from app.providers.base import Provider
from app.state import State

if TYPE_CHECKING:
    from app.engine.always_allow import AlwaysOffer
    from app.engine.checkpoints import Snapshot
    from app.engine.compaction.pipeline import PipelineResult
    from app.engine.compaction.summarize import ContextEngine
    from app.engine.host import Call
    from app.engine.profile_evidence import AskGateways
    from app.engine.workspace_rules import AskRules
    from app.mcp.deferral import DeferralPlan
    from app.mcp.manager import Ask as McpAsk
    from app.mcp.manager import McpManager
    from app.mcp.toolset import McpToolset
    from app.tools.budget import TurnBudget

# Events kept in the store, so a resumed session's inspector can show them again.
STORED_EVENTS = frozenset(
    {
        "rejection",
        "cap_learned",
        "recovery",
        "compaction",
        "hook",
        "notice",
        "provider_edits",
        "fallback",
        "fallback_answered",
        "memory_queued",
        "memory_distilled",
    }
)


class Engine:
    # set by the route link (app.engine.route_link) from the route in use
    route: Route
    provider: Provider
    sender: Sender
    model_output_cap: int
    max_tokens: int
    catalog_window: int

    def __init__(
        self,
        settings: Settings,
        session: Session,
        route: Route,
        provider: Provider,
        *,
        state: State | None = None,
        approver: Approver | None = None,
        hooks: HookRunner | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        rng: random.Random | None = None,
        tools: Sequence[ToolSpec] | None = None,
        workspace: Path | None = None,
        mcp: McpManager | None = None,
    ) -> None:
        self.settings = settings
        self.session = session
        if not session.read_only:
            session.start_writer()  # its disk writes leave the event loop (app.engine.writer); close() drains
        self.state = state or State()
        self.sleep = sleep
        self.workspace = workspace_of(settings, session, workspace)
        self.base_system = session.system_prompt or SYSTEM_PROMPT
        self.instructions = Instructions("")
        self.system = self.base_system  # + the project instructions, once loaded (load_instructions)
        self.builtin_tools: tuple[ToolSpec, ...] = builtin_tools(settings, route, tools)
        self.mcp = mcp
        self.mcp_tools: McpToolset | None = mcp_toolset(mcp, settings, session)
        self.budget_epoch = 0  # moves whenever the MCP share of the cap may have (views, caps, routes)
        self.budget: Budget = Budget(self)  # window, caps, sizes, floor, calibration, reports
        self.mcp_link: McpLink = McpLink(self)  # MCP tools in requests, the servers, context_engine
        if mcp is not None:
            mcp.subscribe(self.mcp_link.changed)
        self.hooks: HookRunner = hooks or hook_runner(settings, session, self.workspace, self.emit)
        self.retry_policy = RetryPolicy.from_settings(settings, rng)
        self.recovery: Recovery = Recovery(self)
        self.compactor: Compactor = Compactor(self)
        self.native: NativeContext = NativeContext(self)
        self.tool_cancel = asyncio.Event()
        # the parts (each sees the engine through a protocol of app.engine.host)
        self.runner: ToolRunner = ToolRunner(self, approver)  # hooks, rules, approvals, checkpoints
        self.history: History = History(self)  # /compact, /rewind, /undo, /memory, /recall
        self.loop: TurnLoop = TurnLoop(self)  # a prompt run to its answer
        self.lifecycle: Lifecycle = Lifecycle(self)  # the start and the close
        self.checkpoints = Checkpoints(session.folder, max_bytes=settings.checkpoint_max_bytes)
        self.turn_running = session.turn
        self._instructions_changed = False
        self.lock = asyncio.Lock()
        self.closing = False
        self.routes: RouteLink = RouteLink(self)  # the route, its limits, sender and summarizer; /model
        self._use_route(route, provider)
        self.fallback: FallbackChain = FallbackChain(self)  # the next route when this one cannot answer
        self.memory = MemoryWorker(
            self
        )  # app.engine.memory: facts distilled; compactions queue what they drop
        self.load_instructions()
        self.permissions: Permissions = load_permissions(settings, self.workspace, self.state)

    # -- events ---------------------------------------------------------------------------------
    def emit(self, event: Event) -> None:
        if event.type == "cap_learned":
            self.budget_epoch += 1  # the MCP share of the cap moved
        if event.type in STORED_EVENTS:
            self.session.record_event(event)
        else:
            self.session.emit(event)

    async def confirm_workspace_rules(self, ask: AskRules | None = None) -> str | None:
        """Ask (`ask(files)` → allow | deny | None) about rule files awaiting approval, after the first frame."""
        return await confirm_rule_files(self.permissions, ask, self.emit)

    async def confirm_workspace_gateways(self, ask: AskGateways | None = None) -> str | None:
        """Ask (`ask(file)` → allow | deny | None) about `.bulkhead/gateways.toml`, after the first frame."""
        return await confirm_workspace_gateways(self, ask)

    def load_instructions(self) -> Instructions:
        """(Re)read AGENTS.md / CLAUDE.md into the system prompt (at start, after /memory and /init)."""
        from app.engine.instructions import load_instructions

        self.instructions = load_instructions(self.workspace, max_bytes=self.settings.instructions_max_bytes)
        self.system = join_system(
            join_system(self.base_system, self.instructions.text), self.memory.prompt_section()
        )
        self.budget.forget_floor()
        return self.instructions

    def pass_context(self, turn: int, max_tokens: int, *, target_bytes: int | None) -> PassContext:
        return self.budget.pass_context(turn, max_tokens, target_bytes=target_bytes)

    # -- tools (app.engine.tool_runner) ----------------------------------------------------------------
    def mark_instructions_changed(self) -> None:
        self._instructions_changed = True  # reloaded when the turn ends (/init writes AGENTS.md)

    def take_instructions_changed(self) -> bool:
        changed, self._instructions_changed = self._instructions_changed, False
        return changed

    def mentions(self, prompt: str) -> list[ToolCall]:
        return self.runner.mentions(prompt)

    async def prompt_images(self, typed: str) -> list[Image]:
        return await self.runner.prompt_images(typed)

    async def run_tools(
        self, calls: Sequence[Call], turn: int, budget: TurnBudget, *, by_user: bool = False
    ) -> None:
        await self.runner.run_tools(calls, turn, budget, by_user=by_user)

    @property
    def approver(self) -> Approver | None:
        return self.runner.approver

    @property
    def can_ask(self) -> bool:
        return self.runner.can_ask

    @property
    def always(self) -> AlwaysOffer | None:  # while an approval waits: what its "always" may keep
        return self.runner.always

    def set_approval(self, mode: str) -> None:  # from the next tool call on, for this run of the session
        self.settings = self.settings.with_approval(mode)

    # -- turns (app.engine.turn_loop) ---------------------------------------------------------------------
    async def submit(
        self, prompt: str, images: Sequence[Image] = (), *, typed: str | None = None
    ) -> TurnResult:
        """Run one user turn to its end. Never raises for provider failures: see TurnResult.

        `typed`: the part of `prompt` the user typed, the only text whose `@paths` are attached
        (`bulkhead -p` passes its argument: text piped in is data, never a mention). None: all of it."""
        return await self.loop.submit(prompt, images, typed=typed)

    async def retry(self) -> TurnResult:
        """`/retry`: ask again for the last answer — failed, partial or complete — from the current view."""
        return await self.loop.retry()

    async def _request(self, turn: int, max_tokens: int) -> StreamResult:
        return await self.loop.request(turn, max_tokens)  # the fallback chain sends through this

    async def _boundary(self, turn: int, max_tokens: int) -> None:
        await self.loop.boundary(turn, max_tokens)

    def keep_partial(self, text: str, turn: int, failure: Failure | None) -> None:
        """Keep what became visible of a failed answer, marked partial (never retried)."""
        self.loop.keep_partial(text, turn, failure)

    async def await_mcp(self) -> None:
        await self.mcp_link.await_ready()

    def calibrate(self, result: StreamResult) -> None:
        self.budget.calibrate(result)

    # -- the route (app.engine.route_link) ----------------------------------------------------------------
    def _use_route(self, route: Route, provider: Provider) -> None:
        """Derive everything that depends on the route: limits, the sender, cached sizes."""
        self.routes.use(route, provider)

    def route_changed(self) -> None:
        self.budget.forget_floor()
        self.mcp_link.forget_plan()
        self.budget_epoch += 1
        self.native.prepare()  # the provider's compaction threshold depends on the route's window and cap

    async def switch_route(self, route: Route, provider: Provider) -> None:
        """`/model ROUTE`: continue this session on another route (the old provider is closed)."""
        await self.routes.switch(route, provider)

    def _make_sender(self, provider: Provider, route_name: str) -> Sender:
        return self.routes.make_sender(provider, route_name)

    def summarizer(self) -> tuple[Provider, Sender]:
        """The summarizer route's provider (compact_model, else the session's) and a sender for it."""
        return self.routes.summarizer()

    def summarizer_window(self) -> int:
        return self.routes.summarizer_window()

    # -- lifecycle (app.engine.lifecycle) ---------------------------------------------------------------
    async def start(self, *, resumed: bool = False) -> None:
        """Fire SessionStart and keep any answer a crash left half-written (marked partial)."""
        await self.lifecycle.start(resumed=resumed)

    async def close(self, reason: str = "exit") -> None:
        """End the session here: every queued write on disk, the lease released (`app.engine.lifecycle`)."""
        await self.lifecycle.close(reason)

    def announce_instructions(self) -> None:
        self.lifecycle.announce_instructions()

    def start_bytes(self) -> int | None:
        return self.budget.start_bytes()

    # -- limits and sizes (app.engine.budget) ------------------------------------------------------------
    @property
    def context_window(self) -> int:
        return self.budget.context_window

    def usable_window_tokens(self) -> int:
        return self.budget.usable_window_tokens()

    @property
    def bytes_per_token(self) -> float:
        return self.budget.bytes_per_token

    def configured_cap(self) -> tuple[int | None, str]:
        return self.budget.configured_cap()

    def cap_info(self) -> CapInfo:
        return self.budget.cap_info()

    def route_cap(self, route: Route) -> CapInfo:
        return self.budget.route_cap(route)

    def cap_detail(self, cap: CapInfo | None = None) -> str:
        return self.budget.cap_detail(cap)

    def measure(self, messages: Sequence[Message], max_tokens: int | None = None) -> int:
        return self.budget.measure(messages, max_tokens)

    def keep_view_size(self) -> None:
        self.budget.keep_view_size()

    def warm_sizes(self) -> Callable[[], None] | None:
        return self.budget.warm_sizes()

    def floor_sizes(self) -> FloorSizes:
        return self.budget.floor_sizes()

    def view_changed(self, reason: str = "", *, predicted: int | None = None) -> ViewChanged:
        """Tell the panels about the next request; `predicted`: its size, when just measured."""
        return self.budget.view_changed(reason, predicted=predicted)

    def reset_cap(self) -> bool:
        return self.budget.reset_cap()

    def context_report(self) -> ContextReport:
        """What `/context` and the Payload panel show about the next request."""
        return self.budget.context_report()

    # -- MCP (app.engine.mcp_link) ----------------------------------------------------------------------
    @property
    def tools(self) -> tuple[ToolSpec, ...]:
        """What every request declares: the built-in tools, then the MCP part of the deferral plan."""
        return self.mcp_link.tools

    def mcp_budgets(self) -> tuple[int, int | None]:
        return self.mcp_link.budgets()

    def mcp_plan(self) -> DeferralPlan | None:
        return self.mcp_link.plan()

    async def start_mcp(self, *, ask: McpAsk | None = None, allow_project: bool = False) -> None:
        """Start the MCP servers in the background (front ends call this after their first frame)."""
        await self.mcp_link.start(ask=ask, allow_project=allow_project)

    def context_engine(self) -> ContextEngine | None:
        return self.mcp_link.context_engine()

    # -- user commands (app.engine.history) ------------------------------------------------------------
    async def approve_restores(self, snapshots: Sequence[Snapshot], command: str) -> set[str]:
        return await self.runner.approve_restores(snapshots, command)

    async def compact(
        self, instructions: str | None = None, cancel: asyncio.Event | None = None
    ) -> PipelineResult | None:
        """`/compact [instructions]`: a guided summary of the older history."""
        return await self.history.compact(instructions, cancel)

    def rewind(self) -> bool:
        return self.history.rewind()

    async def undo(self) -> list[Restored]:
        return await self.history.undo()

    def rewind_points(self) -> list[tuple[Message, int]]:
        return self.history.rewind_points()

    def view_before(self, message_id: str) -> list[Message]:
        return self.history.view_before(message_id)

    async def rewind_to(self, message_id: str, *, files: bool) -> tuple[Message, list[Restored]]:
        return await self.history.rewind_to(message_id, files=files)

    def remember(self, text: str) -> Path:
        return self.history.remember(text)

    def recall_into_view(self, key_text: str) -> Message | None:
        return self.history.recall_into_view(key_text)


def describe_event(event: Event) -> str:
    """One line for stderr / logs: the presenter's words (`app.engine.describe`), else the event's fields."""
    description = describe(event)
    if description is not None:
        return f"{event.type}: {description.text}"
    data = event.to_json()
    data.pop("type", None)
    return f"{event.type}: " + json.dumps(data, ensure_ascii=False, default=str)[:300]


__all__ = ["ANSWER_SEPARATOR", "MAX_TOOL_ROUNDS", "Engine", "describe_event", "join_answers", "retry_point"]
