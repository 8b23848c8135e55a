"""The turn loop, and the Engine both front ends drive.

    engine = Engine(settings, session, route, provider, state=State(), approver=...)
    await engine.start()
    result = await engine.submit("fix the failing test")

A turn: UserPromptSubmit hook → the user message joins the master log → at each boundary
the preflight (byte cap, context window) may compact → the request is built from the
active view, sent and streamed → tool calls run (hooks, approvals) and their results are
appended → repeat until the model stops; an answer cut at max_tokens is continued with
doubled max_tokens (at most `max_token_escalations` times). A recoverable provider
failure before any visible output goes to the recovery ladder; after visible output the
partial answer is kept, marked partial, and nothing is retried.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import random
import sqlite3
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.config import Route, Settings
from app.engine.betas import retry_without_betas
from app.engine.cap_guard import OverCap, configured_cap, route_cap
from app.engine.chat_fit import fit_under_cap
from app.engine.checkpoints import Checkpoints, Restored
from app.engine.compaction.context import PassContext
from app.engine.compactor import Compactor
from app.engine.context_report import ContextReport
from app.engine.describe import describe
from app.engine.failures import PAYLOAD_KINDS, Failure
from app.engine.fallback import FallbackChain
from app.engine.hooks import HookResult, HookRunner
from app.engine.instructions import INSTRUCTION_NAMES, Instructions, join_system
from app.engine.memory.worker import MemoryWorker
from app.engine.native import NativeContext, edit_totals
from app.engine.payload import (
    CapInfo,
    FloorSizes,
    calibrate,
    floor_breakdown,
    heaviest_servers,
    preflight,
)
from app.engine.permissions import Permissions
from app.engine.profile_evidence import (
    StreamQuirks,
    apply_profile,
    confirm_workspace_gateways,
    endpoint_lines,
    on_failure,
    workspace_gateway_notices,
)
from app.engine.prompts import CONTINUATION, INTERRUPTED_TURN, SYSTEM_PROMPT
from app.engine.recovery import Recovery, TurnFailed
from app.engine.resets import SizeEvidence
from app.engine.retry import RetryPolicy
from app.engine.sender import RequestFailed, Sender, StreamResult, leftover_drafts
from app.engine.session import Session
from app.engine.user_rules import build_rules
from app.engine.view_size import SIZE_FLAG, size_key, stored_size
from app.engine.workspace_rules import confirm_rule_files, load_permissions
from app.engine.workspace_rules import start_notices as rule_start_notices
from app.model.events import (
    AnswerFinished,
    Event,
    McpServerChanged,
    Notice,
    Rejection,
    ToolApproval,
    ToolCallFinished,
    ToolCallStarted,
    TurnFinished,
    TurnOutcome,
    TurnStarted,
    ViewChanged,
)
from app.model.messages import Image, Message, Native, Text, ToolCall, ToolResult, new_id
from app.providers.base import Provider, Request, ToolSpec, make_provider
from app.providers.catalog import model_limits
from app.sizes import format_size
from app.state import State
from app.textsafe import display_line

if TYPE_CHECKING:
    from app.engine.always_allow import AskedBy
    from app.mcp.deferral import DeferralPlan
    from app.mcp.manager import McpManager
    from app.tools.base import ToolOutcome

MAX_TOOL_ROUNDS = 50  # tool round trips in one turn before bulkhead stops and asks the user
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

# (tool name, args, why it asks) -> True / "once", "session", "project" (allow; the last two remember
# an allow rule) or False / "deny", or an app.tools.approval.Denial (no, and what to tell the model)
Approver = Callable[[str, dict, str], Awaitable[Any]]


@dataclass(frozen=True)
class TurnResult:
    outcome: str  # answered | failed | partial | blocked | cancelled
    text: str = ""
    error: str = ""
    failure: Failure | None = None


ANSWER_SEPARATOR = "\n\n"  # between the assistant messages of one turn (text, tool calls, more text)


def join_answers(texts: Sequence[str]) -> str:
    """The turn's answer: its assistant messages' texts, apart (a message with no text is skipped; one
    message is returned as it is)."""
    parts = [text for text in texts if text.strip()]
    if len(parts) <= 1:
        return parts[0] if parts else "".join(texts)
    return ANSWER_SEPARATOR.join(text.strip("\n") for text in parts)


class Engine:
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
        from app.engine.tool_choice import offered_tools

        self.settings = settings
        self.session = session
        if not session.read_only:
            session.start_writer()  # its disk writes leave the event loop (app.engine.writer); close() drains
        self.state = state or State()
        self.approver = approver
        self.always = (
            None  # while an approval waits: what "always" may keep (app.engine.always_allow.AlwaysOffer)
        )
        self.sleep = sleep
        self.workspace = Path(workspace or settings.workspace or session.workspace or Path.cwd()).expanduser()
        self.base_system = session.system_prompt or SYSTEM_PROMPT
        self.instructions = Instructions("")
        self.system = self.base_system  # + the project instructions, once loaded (load_instructions)
        self.builtin_tools: tuple[ToolSpec, ...] = tuple(
            offered_tools(settings, route) if tools is None else tools
        )
        self._tools_cache: tuple[object, tuple[ToolSpec, ...]] | None = None
        self._view_bytes: tuple[tuple, int] | None = (
            None  # the view's last known size, with what it was made of
        )
        self._size_was_kept = False  # the report took the view's size kept with the session (warm_sizes)
        self._started = False
        self._cap_detail_memo: tuple[tuple, str] | None = None  # (endpoint, cap) → its words (cap_detail)
        self.mcp = mcp
        self.mcp_tools = None
        if mcp is not None:
            from app.mcp.toolset import McpToolset

            self.mcp_tools = McpToolset(mcp, settings, flags=session.flags, set_flag=session.set_flag)
            mcp.subscribe(self._mcp_changed)
        self.hooks = hooks or HookRunner(
            settings.hooks,
            session_id=session.id,
            transcript_path=session.transcript_path,
            cwd=self.workspace,
            on_run=self.emit,
            on_start=self.emit,
            before_run=functools.partial(session.drain, quiet=True),  # a hook reads transcript_path
        )
        self.retry_policy = RetryPolicy.from_settings(settings, rng)
        self.recovery = Recovery(self)
        self.compactor: Compactor = Compactor(self)
        self.native: NativeContext = NativeContext(self)
        self.tool_cancel = asyncio.Event()
        self.checkpoints = Checkpoints(session.folder, max_bytes=settings.checkpoint_max_bytes)
        self._turn_running = session.turn
        self._instructions_changed = False
        self._lock = asyncio.Lock()
        self._closing = False
        self._use_route(route, provider)
        self.fallback = FallbackChain(self)  # app.engine.fallback: the next route when this one cannot answer
        self.memory = MemoryWorker(
            self
        )  # app.engine.memory: facts distilled; compactions queue what they drop
        self.load_instructions()
        self.permissions: Permissions = load_permissions(settings, self.workspace, self.state)

    def _use_route(self, route: Route, provider: Provider) -> None:
        """Derive everything that depends on the route: limits, the sender, cached sizes."""
        self.route = route
        self.provider = provider
        limits = model_limits(route.provider, route.model)
        # A configured max_output_tokens (the route's, else an explicit global one) wins over the catalog's
        # guess: for a model the catalog does not know, it is also the ceiling of the escalations.
        configured = route.max_output_tokens or (
            self.settings.max_output_tokens if "max_output_tokens" in self.settings.sources else None
        )
        cap = limits.max_output_tokens
        if configured and (limits.source == "default" or configured > cap):
            cap = configured
        self.model_output_cap = cap
        self.max_tokens = min(configured or self.settings.max_output_tokens, cap)
        self._catalog_window = route.context_window or self.settings.context_window or limits.context_window
        self.sender = self._make_sender(provider, route.name)
        apply_profile(provider, self.state)  # betas this endpoint refused are not sent again
        self._summarizer: tuple[Provider, Sender] | None = None
        self._floor_cache: tuple[tuple[ToolSpec, ...], str, FloorSizes] | None = None
        self._plan_memo: tuple[tuple, DeferralPlan] | None = None
        self._budget_epoch = getattr(self, "_budget_epoch", 0) + 1
        self.native.prepare()  # the provider's compaction threshold depends on the route's window and cap

    async def switch_route(self, route: Route, provider: Provider) -> None:
        """`/model ROUTE`: continue this session on another route (the old provider is closed)."""
        async with self._lock:
            old = self.provider
            self._use_route(route, provider)
            self.session.set_route(route.name, route.provider, route.model)
            await self.fallback.reset(route, provider, old)
        with contextlib.suppress(Exception):
            await old.aclose()
        self.emit(Notice(f"now using route {route.name} ({route.provider} · {route.model})", code="route"))
        self.view_changed("route")

    # -- events ---------------------------------------------------------------------------------
    def emit(self, event: Event) -> None:
        if event.type == "cap_learned":
            self._budget_epoch += 1  # the MCP share of the cap moved
        if event.type in STORED_EVENTS:
            self.session.record_event(event)
        else:
            self.session.emit(event)

    # -- limits -----------------------------------------------------------------------------------
    @property
    def context_window(self) -> int:
        learned = self.session.flags.get("learned_window")
        return min(self._catalog_window, int(learned)) if learned else self._catalog_window

    def usable_window_tokens(self) -> int:
        return max(1024, self.context_window - self.max_tokens)

    @property
    def bytes_per_token(self) -> float:
        return float(self.session.flags.get("bytes_per_token", 4.0))

    def configured_cap(self) -> tuple[int | None, str]:
        return configured_cap(self.settings, self.route)

    def cap_info(self) -> CapInfo:
        return self.route_cap(self.route)

    def route_cap(self, route: Route) -> CapInfo:
        """The effective byte cap of `route` (the session's, or the summarizer's); the cap assumed after a
        rejection of unknown size belongs to the session's route."""
        assumed = self.session.flags.get("assumed_cap") if route.name == self.route.name else None
        return route_cap(self.settings, self.state, route, assumed=assumed)

    def cap_detail(self, cap: CapInfo | None = None) -> str:
        """Where the cap in force came from, in words; a learned cap adds the rejection's reason.

        Reads state.toml only when the cap changes (the answer is kept per cap)."""
        cap = cap or self.cap_info()
        key = (self.route.endpoint_id, cap.bytes, cap.source, cap.detail)
        if self._cap_detail_memo is not None and self._cap_detail_memo[0] == key:
            return self._cap_detail_memo[1]
        detail = cap.detail
        if cap.source == "learned" and detail:
            learned = self.state.learned_cap(self.route.endpoint_id)
            if learned is not None and learned.reason:
                detail += f" ({learned.reason.split(':')[0].strip()})"
        self._cap_detail_memo = (key, detail)
        return detail

    def measure(self, messages: Sequence[Message], max_tokens: int | None = None) -> int:
        size = self.provider.measure(
            tuple(messages), self.system, self.tools, max_tokens=max_tokens or self.max_tokens
        )
        if messages is self.session.view.messages and max_tokens in (None, self.max_tokens):
            self._view_bytes = (self._measured(), size)
        return size

    def _size_key(self) -> str:
        return size_key(self.provider, self.system, self.tools, self.max_tokens, self.session.view_ids())

    def _known_view_bytes(self) -> int | None:
        """The view's last measured (or kept) size, if nothing it was measured from has changed since."""
        if self._view_bytes is None:
            return None
        made_of, size = self._view_bytes
        return size if all(a is b for a, b in zip(made_of, self._measured(), strict=True)) else None

    def keep_view_size(self) -> None:
        """Keep the view's last exact size with the session (app.engine.view_size), if it is still the
        view's: the next resume reports it without measuring every message again."""
        size = self._known_view_bytes()
        if size is None or self.session.read_only:
            return  # the view, the prompt, the tools or the route changed since: the next open measures
        kept = {"key": self._size_key(), "bytes": size}
        if self.session.flags.get(SIZE_FLAG) != kept:
            self.session.set_flag(SIZE_FLAG, kept)

    def warm_sizes(self) -> Callable[[], None] | None:
        """Measuring the view, to run in a thread once the start is drawn — when the session
        opened with its kept size (`keep_view_size`), its messages were never translated for the route, and
        the first request would do it on the event loop (the adapters' caches take concurrent measures).
        None when the open measured the view (nothing to warm)."""
        if not self._size_was_kept:
            return None
        self._size_was_kept = False
        session, provider, system, tools, max_tokens = (
            self.session,
            self.provider,
            self.system,
            self.tools,
            self.max_tokens,
        )

        def warm() -> None:
            with contextlib.suppress(Exception):  # the first request measures again, and says what is wrong
                # (a session opened from its end decodes its head here, if nothing did before)
                provider.measure(session.view.messages, system, tools, max_tokens=max_tokens)

        return warm

    # -- tools (built-in + MCP, deferred when they crowd the payload) -----------------------------
    @property
    def tools(self) -> tuple[ToolSpec, ...]:
        """What every request declares: the built-in tools, then the MCP part of the deferral plan.

        The same tuple (and ToolSpec objects) until the plan changes, so the providers' caches hold."""
        plan = self.mcp_plan()
        if plan is None:
            return self.builtin_tools
        if self._tools_cache is None or self._tools_cache[0] is not plan:
            self._tools_cache = (plan, self.builtin_tools + plan.specs)
        return self._tools_cache[1]

    def _tool_bytes(self, specs: Sequence[ToolSpec]) -> int:
        """Exact bytes `specs` add to a request of this route (built into an empty request and measured)."""
        base = self.provider.measure((), self.system, self.builtin_tools, max_tokens=self.max_tokens)
        with_specs = self.provider.measure(
            (), self.system, self.builtin_tools + tuple(specs), max_tokens=self.max_tokens
        )
        return with_specs - base

    def mcp_budgets(self) -> tuple[int, int | None]:
        """(share of the effective cap, share of the byte cap alone) that MCP definitions may take."""
        ratio = self.settings.mcp_defer_ratio
        cap = self.cap_info().bytes
        window_bytes = int(self.usable_window_tokens() * self.bytes_per_token)
        effective = min(cap, window_bytes) if cap else window_bytes
        share = int(ratio * effective) // 1024 * 1024  # in whole KiB: calibration nudges do not re-plan
        return share, (int(ratio * cap) if cap else None)

    def mcp_plan(self) -> DeferralPlan | None:
        """How MCP tools are sent now (app.mcp.deferral); None without MCP.

        Re-planned when the servers' tools, the loaded tools or the budgets may have changed: the
        budgets are read again after every view change and every learned cap (`_budget_epoch`)."""
        if self.mcp_tools is None or self.mcp is None:
            return None
        key = (self._budget_epoch, self.mcp.generation, self.mcp_tools.loaded)
        if self._plan_memo is not None and self._plan_memo[0] == key:
            return self._plan_memo[1]
        budget, byte_budget = self.mcp_budgets()
        native = self.route.provider == "anthropic"
        plan = self.mcp_tools.plan(
            budget_bytes=budget,
            byte_budget=byte_budget,
            native_possible=native,
            measure=self._tool_bytes,
            key=(self.route.name, id(self.provider), self.system),
        )
        self._plan_memo = (key, plan)
        return plan

    def floor_sizes(self) -> FloorSizes:
        """The non-compactable base — system prompt, project instructions, tool definitions (built-in and
        MCP) — in exact request bytes: requests with no messages, built with and without each part."""
        tools, system = self.tools, self.system
        cached = self._floor_cache
        if cached is None or cached[0] is not tools or cached[1] != system:
            measure, max_tokens = self.provider.measure, self.max_tokens
            empty = measure((), "", (), max_tokens=max_tokens)
            base = measure((), self.base_system, (), max_tokens=max_tokens)
            instructed = measure(
                (), join_system(self.base_system, self.instructions.text), (), max_tokens=max_tokens
            )
            bare = measure((), system, (), max_tokens=max_tokens)
            builtin = measure((), system, self.builtin_tools, max_tokens=max_tokens)
            total = measure((), system, tools, max_tokens=max_tokens)
            plan = self.mcp_plan()
            servers = tuple(plan.per_server.items()) if plan is not None else ()
            parts = floor_breakdown(
                system_bytes=base - empty,
                instructions_bytes=max(0, instructed - base),
                memory_bytes=max(0, bare - instructed),
                builtin_tools_bytes=builtin - bare,
                mcp_tools_bytes=total - builtin,
                mcp_servers=dict(servers),
            )
            sizes = FloorSizes(
                system_bytes=base - empty,
                instructions_bytes=max(0, instructed - base),
                tools_bytes=total - bare,
                total_bytes=total,
                mcp_bytes=total - builtin,
                parts=tuple(parts),
                mcp_servers=servers,
            )
            cached = self._floor_cache = (tools, system, sizes)
        return cached[2]

    # -- MCP ----------------------------------------------------------------------------------------
    async def start_mcp(self, *, ask=None, allow_project: bool = False) -> None:
        """Start the MCP servers in the background (front ends call this after their first frame).

        `ask(specs)` asks about a workspace's `.mcp.json` servers ("allow" | "deny" | None);
        `allow_project` starts them without asking or remembering (`-p --yes`)."""
        if self.mcp is None:
            return
        for note in self.mcp.notes:
            self.emit(Notice(note, level="warn", code="mcp"))
        await self.mcp.start(ask=ask, allow_project=allow_project)
        pending = [s for s in self.mcp.statuses() if s.state == "pending"]
        if pending:
            names = ", ".join(s.name for s in pending)
            self.emit(
                Notice(
                    f"MCP servers from this workspace's .mcp.json are not started: {names} — "
                    f"/mcp restart NAME (or `bulkhead mcp approve`) allows one",
                    level="warn",
                    code="mcp",
                )
            )

    async def confirm_workspace_rules(self, ask=None) -> str | None:
        """Ask (`ask(files)` → "allow" | "deny" | None) about the workspace's rule files whose allow rules
        wait for approval (`app.engine.workspace_rules`); front ends call it after their first frame."""
        return await confirm_rule_files(self.permissions, ask, self.emit)

    async def confirm_workspace_gateways(self, ask=None) -> str | None:
        """Ask (`ask(gateways_file)` → "allow" | "deny" | None) about the workspace's `.bulkhead/gateways.toml`
        when it waits for an answer (`app.engine.profile_evidence`); front ends call it after their first frame."""
        return await confirm_workspace_gateways(self, ask)

    def _mcp_changed(self, connection) -> None:
        if self._closing:  # servers stopping at exit: nothing to tell
            return
        status = connection.status()
        self.emit(
            McpServerChanged(
                name=status.name,
                state=status.state.value,
                reason=status.reason,
                stderr_tail=status.stderr_tail,
                tools=len(status.tools),
                transport=status.transport,
                source=status.source,
                log_path=status.log_path,
            )
        )
        if status.state.value in ("failed", "crashed"):
            from app.textsafe import display_line

            # the reason and the stderr lines come from the server: shown escaped, never as they are
            verb = "did not start" if status.state.value == "failed" else "stopped working"
            tail = ""
            if status.stderr_tail:
                tail = " — last stderr lines:\n" + "\n".join(
                    f"  {display_line(line)}" for line in status.stderr_tail
                )
            self.emit(
                Notice(
                    f"MCP server {status.name} {verb}: {display_line(status.reason)}. The session goes on "
                    f"without its tools; /mcp restart {status.name} tries again.{tail}",
                    level="warn",
                    code="mcp",
                )
            )
        if status.state.value in ("ready", "failed", "crashed", "stopped"):
            with contextlib.suppress(Exception):
                self.view_changed("mcp")

    def context_engine(self):
        """The external summarizer of `context_engine = "mcp:NAME"` (app.engine.compaction.summarize), or None."""
        name = self.settings.context_engine
        if not name.startswith("mcp:"):
            return None
        from app.engine.compaction.summarize import ContextEngine
        from app.mcp.context_engine import McpContextEngine

        writer = McpContextEngine(
            self.mcp, name.removeprefix("mcp:"), timeout=self.settings.mcp_compact_timeout
        )
        return ContextEngine(name, writer, timeout=self.settings.mcp_compact_timeout)

    async def _await_mcp(self) -> None:
        """Before a turn's first request: let starting MCP servers finish (each bounded by its timeout)."""
        if self.mcp is None or not self.mcp.starting():
            return
        self.emit(
            Notice(
                f"waiting for MCP servers to start: {', '.join(self.mcp.starting())} "
                f"(at most {self.settings.mcp_startup_timeout:g} s; Esc cancels)",
                code="mcp_wait",
            )
        )
        await self.mcp.wait_settled()

    def load_instructions(self) -> Instructions:
        """(Re)read AGENTS.md / CLAUDE.md into the system prompt (at start, after /memory and /init)."""
        from app.engine.instructions import load_instructions

        self.instructions = load_instructions(self.workspace, max_bytes=self.settings.instructions_max_bytes)
        self.system = join_system(
            join_system(self.base_system, self.instructions.text), self.memory.prompt_section()
        )
        self._floor_cache = None
        return self.instructions

    def _announce_instructions(self) -> None:
        """One notice naming the instruction files in the system prompt, and one per problem (a refused
        import, the size cut)."""
        loaded = self.instructions
        if loaded.files:

            def name(file) -> str:
                shown = display_line(file.shown or file.path.name)
                return {"global": f"global {shown}", "import": f"{shown} (imported)"}.get(file.scope, shown)

            listed = ", ".join(f"{name(f)} {format_size(f.bytes)}" for f in loaded.files)
            in_request = dict((p.label, p.bytes) for p in self.floor_sizes().parts).get(
                "instructions", loaded.bytes
            )
            self.emit(
                Notice(
                    f"project instructions in the system prompt: {listed} — "
                    f"{format_size(in_request)} of every request",
                    code="instructions",
                )
            )
        for problem in loaded.problems:
            self.emit(Notice(display_line(problem), level="warn", code="instructions"))

    def pass_context(self, turn: int, max_tokens: int, *, target_bytes: int | None) -> PassContext:
        store, session = self.session.store, self.session

        def lookup(key: str) -> str | None:
            entry = store.archive_get(key, session.id, strict=True)
            return entry.content if entry else None

        return PassContext(
            settings=self.settings,
            turn=turn,
            budget_scale=float(session.flags.get("budget_scale", 1.0)),
            session_folder=session.folder,
            archive_lookup=lookup,
            measure=lambda messages: self.measure(messages, max_tokens),
            target_bytes=target_bytes,
            is_master=session.is_master,
            repeatable_tools=self.mcp.read_only_tools() if self.mcp is not None else frozenset(),
        )

    def view_changed(self, reason: str = "", *, predicted: int | None = None) -> ViewChanged:
        """Tell the panels about the next request; `predicted`: its size, when just measured."""
        self._budget_epoch += 1
        cap = self.cap_info()
        if predicted is None:
            predicted = self.measure(self.session.view.messages)
        floor = self.floor_sizes()
        plan = self.mcp_plan()
        settings = self.settings
        event = ViewChanged(
            view_id=self.session.view_id(),
            messages=self.session.view_len(),
            predicted_bytes=predicted,
            effective_cap=cap.bytes,
            cap_source=cap.source,
            context_tokens=int(predicted / self.bytes_per_token),
            context_window=self.context_window,
            reason=reason,
            floor=floor.parts,
            floor_bytes=floor.total_bytes,
            cap_detail=self.cap_detail(cap),
            preflight_ratio=settings.preflight_ratio,
            compact_threshold=settings.compact_threshold,
            no_cap_warn_bytes=settings.no_cap_warn_bytes,
            mcp_deferred_from=plan.full_bytes if plan is not None and plan.deferred else None,
            gateway_profile=endpoint_lines(self.state, self.route.endpoint_id),
        )
        self.emit(event)
        return event

    # -- providers --------------------------------------------------------------------------------
    def _make_sender(self, provider: Provider, route_name: str) -> Sender:
        return Sender(
            self.session,
            provider,
            route=route_name,
            emit=self.emit,
            retry_policy=self.retry_policy,
            drop_threshold=self.settings.drop_payload_min_bytes,
            on_rejection=self._on_rejection,
            sleep=self.sleep,
            size_evidence=self._size_evidence(provider.route),
            user_rules=build_rules(self.settings.classifier_rules),
            floor_bytes=(lambda: self.floor_sizes().total_bytes) if provider is self.provider else None,
            cap=functools.partial(self.route_cap, provider.route),
            on_stream=StreamQuirks(self.state, provider.route.endpoint_id),
        )

    def _size_evidence(self, route: Route) -> SizeEvidence:
        """What this route's endpoint has shown about body sizes: a remembered payload cap is a refusal, and this
        session's own requests on the route say what it took before (a resumed session, a `-c -p` run, judges a
        reset with the same evidence as the session that is still open — for every SDK)."""
        evidence = SizeEvidence()
        learned = self.state.learned_cap(route.endpoint_id)
        if learned is not None and learned.kind in PAYLOAD_KINDS and learned.rejected_bytes:
            evidence.refused(learned.rejected_bytes)
        try:
            accepted, refused = self.session.store.route_sizes(self.session.id, route.name, route.provider)
        except Exception:  # noqa: BLE001 - evidence is a help, never a reason to fail a turn
            accepted, refused = None, None
        evidence.accepted(accepted)
        evidence.refused(refused)
        return evidence

    def summarizer(self) -> tuple[Provider, Sender]:
        """The summarizer route's provider (compact_model, else the session's) and a sender for it."""
        if self._summarizer is None:
            name = self.settings.compact_model
            if name and name != self.route.name:
                from app.secrets import get_api_key

                route = self.settings.route(name)
                provider = make_provider(
                    route, self.settings, get_api_key(route.provider, route.api_key_env).value
                )
                self._summarizer = (provider, self._make_sender(provider, route.name))
            else:
                self._summarizer = (self.provider, self.sender)
        return self._summarizer

    def summarizer_window(self) -> int:
        provider, _ = self.summarizer()
        if provider is self.provider:
            return self.context_window
        return (
            provider.route.context_window
            or model_limits(provider.route.provider, provider.route.model).context_window
        )

    async def _on_rejection(self, failure: Failure, request: Request) -> None:
        self.emit(
            Rejection(
                kind=failure.kind,
                bytes=failure.rejected_bytes or request.actual_bytes,
                reason=failure.reason,
                status=failure.status,
                evidence=tuple(failure.evidence),
                payload_related=failure.payload_related,
                recoverable=failure.recoverable,
                cause=failure.cause,
                incident_id=failure.incident_id,
            )
        )
        route = self.route if request.route == self.route.name else self.settings.routes.get(request.route)
        if route is not None:  # what the refusal shows about the endpoint goes to its profile
            on_failure(self.state, route.endpoint_id, failure)
        await self.hooks.request_rejected(
            failure.kind,
            list(failure.evidence),
            failure.rejected_bytes or request.actual_bytes,
            self.cap_info().bytes,
        )

    # -- lifecycle --------------------------------------------------------------------------------
    async def start(self, *, resumed: bool = False) -> None:
        """Fire SessionStart and keep any answer a crash left half-written (marked partial)."""
        with contextlib.suppress(OSError):
            self.state.migrate()  # e.g. forget caps an older bulkhead learned from a 431
        self._purge_content_cap()
        from app.state import take_damage_notices

        for sentence in take_damage_notices():  # a damaged state.toml was put aside: said once
            self.emit(Notice(display_line(sentence), level="warn", code="state"))
        drafts = [] if self.session.read_only else leftover_drafts(self.session.folder)
        for message_id, path in drafts:
            with contextlib.suppress(OSError):
                text = path.read_text(encoding="utf-8")
                # A crash between committing an answer and deleting its draft leaves a draft already kept.
                if text.strip() and not self.session.is_master_id(message_id):
                    self.session.append(
                        Message.create(
                            "assistant", text, message_id=message_id, turn=self.session.turn, partial=True
                        )
                    )
                    self.emit(
                        Notice(
                            "The previous answer was cut off by a crash; what arrived is kept, "
                            "marked partial.",
                            level="warn",
                            code="partial",
                        )
                    )
                # after the partial answer is committed: in order, on the session's writer
                self.session.writer.submit(
                    functools.partial(_unlink_quietly, path), what="draft", required=False
                )
        await self.session.drain()
        await self.hooks.session_start("resume" if resumed else "startup")
        self._announce_instructions()
        for problem in self.permissions.problems:
            self.emit(Notice(display_line(problem), level="warn", code="permissions"))
        for level, text in workspace_gateway_notices(self):  # a team's .bulkhead/gateways.toml, on trust
            self.emit(Notice(display_line(text), level=level, code="gateways"))
        for notice in rule_start_notices(self.permissions):
            self.emit(notice)
        self.view_changed("start", predicted=self._start_bytes())
        self.memory.after_turn()  # a segment a crash left queued is read now, in the background (the TUI)

    def _purge_content_cap(self) -> None:
        """Forget this endpoint's cap when an older bulkhead learned it from a content block (issue 36)."""
        from app.engine.cap_purge import purge_stale_cap

        route = self.route
        try:
            said = purge_stale_cap(
                self.state,
                self.session.store,
                route.endpoint_id,
                url_prefix=route.endpoint_url if route.provider == "bedrock" else route.base_url,
                floor_bytes=self.floor_sizes().total_bytes,
            )
        except (OSError, sqlite3.Error):
            return
        if said:
            self.emit(Notice(said, level="info", code="cap_forgotten"))

    async def close(self, reason: str = "exit") -> None:
        """End the session here: SessionEnd, MCP and the provider closed, every queued write on disk (a held
        failure is raised, after the lease is released), the lease released."""
        try:
            with contextlib.suppress(Exception):  # a size not kept is measured at the next open
                self.keep_view_size()
            await self.hooks.session_end(reason)
            self._closing = True
            if self.mcp is not None:
                with contextlib.suppress(Exception):
                    await self.mcp.close()
            with contextlib.suppress(Exception):
                await self.memory.close()
            with contextlib.suppress(Exception):
                await self.fallback.aclose()
            with contextlib.suppress(Exception):
                await self.provider.aclose()
        finally:
            try:
                await self.session.stop_writer()  # nothing queued is dropped; writes go inline from here
            finally:
                self.session.release_lease()  # another bulkhead may write it now
                if reason in ("exit", "clear", "resume") and not self.session.read_only:
                    from app.engine.empty_sessions import forget_if_empty

                    forget_if_empty(self.session)  # nothing in it: not kept (issue 40)

    # -- turns ------------------------------------------------------------------------------------
    async def submit(
        self, prompt: str, images: Sequence[Image] = (), *, typed: str | None = None
    ) -> TurnResult:
        """Run one user turn to its end. Never raises for provider failures: see TurnResult.

        `typed`: the part of `prompt` the user typed, the only text whose `@paths` are attached
        (`bulkhead -p` passes its argument: text piped in is data, never a mention). None: all of it.
        """
        async with self._lock:
            verdict = await self.hooks.user_prompt_submit(prompt)
            if verdict.blocked:
                self.emit(
                    Notice(
                        f"Prompt blocked by a UserPromptSubmit hook: {verdict.reason}",
                        level="warn",
                        code="hook_block",
                    )
                )
                return TurnResult("blocked", error=verdict.reason)
            self._close_interrupted_turn()
            turn = self.session.turn + 1
            typed_text = prompt if typed is None else typed
            parts: list = [Text(prompt), *images, *(await self._prompt_images(typed_text))]
            if verdict.additional_context:
                parts.append(Text(f"\n\n[hook context]\n{verdict.additional_context}"))
            self.session.append(Message.create("user", parts, turn=turn))
            self.emit(TurnStarted(turn=turn, prompt=prompt))
            result = await self._run_turn(turn, mentions=self._mentions(typed_text))
            await self.session.drain()  # the turn is on disk when it is over (raises a held failure)
            return result

    def _close_interrupted_turn(self) -> None:
        """A turn killed before the model answered (Esc, a crash) leaves its prompt last in the view; the
        next prompt would be sent merged with it, and the model would carry out both. Say it got no answer."""
        view = self.session.view.messages
        last = next((m for m in reversed(view) if m.role != "system"), None)
        if last is None or last.role == "assistant":
            return
        self.session.append(
            Message.create("assistant", INTERRUPTED_TURN, turn=self.session.turn, origin="notice")
        )
        self.emit(
            Notice(
                "the previous request got no answer (it was interrupted); the model is told so, and "
                "your new prompt is sent on its own",
                code="interrupted",
            )
        )

    async def retry(self) -> TurnResult:
        """`/retry`: ask again for the last answer — failed, partial or complete — from the current view.

        A failed turn is sent again as it stands; a partial answer is dropped from the view and asked
        for again; a complete one is regenerated from the prompt that asked for it (the view goes back
        to just after that prompt and its @attachments, so tools run again). The master log keeps
        every earlier answer."""
        async with self._lock:
            view = self.session.view.messages
            if not view:
                return TurnResult("failed", error="nothing to retry yet")
            last = view[-1]
            await self.session.drain()  # commit_view reads the database: our appends first, off the loop
            if last.role == "assistant" and last.meta.partial:
                self.session.commit_view(view[:-1], [], reason="retry")
            elif last.role == "assistant":
                cut = retry_point(view)
                if cut is None:
                    return TurnResult("failed", error="no prompt of yours in the view to ask again")
                self.session.commit_view(view[:cut], [], reason="retry")
                self.emit(
                    Notice(
                        "asking again for the last answer (the previous one stays in the session's log)",
                        code="retry",
                    )
                )
            turn = self.session.turn
            self.emit(TurnStarted(turn=turn, prompt="/retry"))
            result = await self._run_turn(turn)
            await self.session.drain()
            return result

    def _mentions(self, prompt: str) -> list[ToolCall]:
        """The prompt's `@paths` as the read_file / list_dir calls that attach them."""
        from app.engine.images import is_image_file
        from app.engine.mentions import find_mentions

        limit = self.settings.max_mentions
        if limit <= 0 or "@" not in prompt:  # 0 turns mentions off
            return []
        found, extra = find_mentions(prompt, self.workspace, limit)
        found = [
            m for m in found if m.is_dir or not is_image_file(self.workspace / os.path.expanduser(m.path))
        ]
        if extra:
            self.emit(
                Notice(
                    f"only the first {limit} @mentions are attached ({extra} more left out; "
                    f"max_mentions in config.toml)",
                    level="warn",
                    code="mention",
                )
            )
        return [ToolCall(new_id("tm"), mention.tool, {"path": mention.path}) for mention in found]

    async def _prompt_images(self, typed: str) -> list[Image]:
        """The images the typed prompt names, through the read gate (`app.engine.prompt_images`)."""
        from app.engine.prompt_images import attach_prompt_images

        async def ask(name: str, args: dict, why: str) -> str:
            return (await self._ask(name, args, why))[0]  # an outside image: asked each time, no "always"

        return await attach_prompt_images(self, typed, ask, can_ask=self.approver is not None)

    async def _run_turn(self, turn: int, mentions: Sequence[ToolCall] = ()) -> TurnResult:
        self.fallback.turn_started()  # on the chain's first route again, unless fallback_sticky
        await self.memory.yield_to_turn()  # no background memory read competes with the turn's requests
        max_tokens = self.max_tokens
        escalations = 0
        answer: list[str] = []  # one entry per assistant message; a continuation extends the last one
        continuing = False
        self._turn_running = turn  # the turn file changes are checkpointed under
        self.tool_cancel.clear()
        from app.tools.budget import TurnBudget

        budget = TurnBudget(
            max(1, int(self.settings.turn_budget_chars * float(self.session.flags.get("budget_scale", 1.0))))
        )
        stop_hook_active = False
        try:
            await self._await_mcp()
            if mentions:  # attached as if the model had read them, before it answers
                self.session.append(Message.create("assistant", list(mentions), turn=turn, origin="mention"))
                await self._run_tools(mentions, turn, budget, by_user=True)
            for _round in range(MAX_TOOL_ROUNDS):
                await self._boundary(turn, max_tokens)
                result = await self.fallback.request(turn, max_tokens)  # along the fallback chain if need be
                max_tokens = min(max_tokens, self.model_output_cap)  # the route that answered may allow less
                if partials := self.fallback.take_partials():  # kept from a route that failed mid-answer
                    answer.extend(partials)
                    continuing = True
                if continuing and answer:
                    answer[-1] += result.text
                else:
                    answer.append(result.text)
                continuing = False
                cut = result.stop_reason == "max_tokens" and not result.tool_calls
                can_escalate = (
                    escalations < self.settings.max_token_escalations and max_tokens < self.model_output_cap
                )
                message = self._commit_answer(result, turn, partial=cut and not can_escalate)
                await self.native.after_answer(result, message)
                if result.tool_calls:
                    await self._run_tools(result.tool_calls, turn, budget)
                    continue
                if cut and can_escalate:
                    escalations += 1
                    max_tokens = min(max_tokens * 2, self.model_output_cap)
                    self.emit(
                        Notice(
                            f"answer cut at the token limit — continuing with max_tokens {max_tokens:,} "
                            f"({escalations}/{self.settings.max_token_escalations})",
                            code="escalation",
                        )
                    )
                    self.session.append(Message.create("user", CONTINUATION, turn=turn, origin="notice"))
                    continuing = True
                    continue
                if cut:
                    self.emit(
                        Notice(
                            f"answer cut at the token limit{' again' if escalations else ''}; it is kept, marked "
                            f"partial",
                            level="warn",
                            code="partial",
                        )
                    )
                self.emit(AnswerFinished(message_id=message.id, stop_reason=result.stop_reason, partial=cut))
                verdict = await self.hooks.stop(stop_hook_active)
                if verdict.additional_context and not stop_hook_active:
                    # A Stop hook said "not done yet" (Claude Code's decision: block): one more round.
                    stop_hook_active = True
                    self.session.append(
                        Message.create(
                            "user", f"[Stop hook] {verdict.additional_context}", turn=turn, origin="notice"
                        )
                    )
                    continue
                break
            else:
                self.emit(
                    Notice(
                        f"stopped after {MAX_TOOL_ROUNDS} tool rounds in one turn; say how to continue",
                        level="warn",
                        code="tool_rounds",
                    )
                )
            self.emit(TurnFinished(turn=turn, outcome="answered"))
            return TurnResult("answered", join_answers(answer))
        except TurnFailed as failed:
            self.emit(Notice(failed.message, level="error", code="turn_failed"))
            outcome: TurnOutcome = "partial" if failed.visible else "failed"
            self.emit(TurnFinished(turn=turn, outcome=outcome, error=failed.message))
            return TurnResult(outcome, join_answers(answer), failed.message, failed.failure)
        except asyncio.CancelledError:
            if self.sender.streamed_text:
                self.keep_partial(self.sender.streamed_text, turn, None)
            self.emit(TurnFinished(turn=turn, outcome="cancelled"))
            raise
        finally:
            if self._instructions_changed:
                self._instructions_changed = False
                self.load_instructions()
                self._announce_instructions()
            self.view_changed("turn")
            with contextlib.suppress(Exception):
                self.keep_view_size()
            self.memory.after_turn()  # the memory worker reads a few turns behind, in the background

    async def _boundary(self, turn: int, max_tokens: int) -> None:
        """Before each request: compact against the byte cap or the window, or warn once."""
        self.native.prepare()
        predicted = self.measure(self.session.view.messages, max_tokens)
        decision = preflight(
            predicted,
            self.cap_info(),
            settings=self.settings,
            context_window=self.context_window,
            max_output_tokens=max_tokens,
            bytes_per_token=self.bytes_per_token,
            warned_no_cap=bool(self.session.flags.get("no_cap_warned")),
        )
        if decision.action == "warn":
            self.session.set_flag("no_cap_warned", True)
            self.emit(Notice(decision.message, level="warn", code="no_cap_warning"))
        elif decision.action == "compact":
            sizes = self.floor_sizes()
            floor = sizes.total_bytes
            if decision.target_bytes is not None and floor >= decision.target_bytes:
                from app.engine.payload import FLOOR_LABELS, describe_floor

                shown = [part for part in sizes.parts if part.label in FLOOR_LABELS]
                biggest = max(shown, key=lambda part: part.bytes).label if shown else "system prompt"
                servers = heaviest_servers(dict(sizes.mcp_servers))
                heavy = f"; the heaviest {servers}" if servers else ""
                self.emit(
                    Notice(
                        f"{decision.message.split(' — ')[0]} — but the request base alone "
                        f"({format_size(floor)}: {describe_floor(sizes.parts)}{heavy}) is above the "
                        f"compaction target ({format_size(decision.target_bytes)}): compacting history "
                        f"cannot help; reduce the biggest part, {biggest}",
                        level="warn",
                        code="floor",
                    )
                )
                return
            self.emit(Notice(decision.message, code="preflight"))
            await self.compactor.run(trigger=decision.trigger, target_bytes=decision.target_bytes)

    async def _request(self, turn: int, max_tokens: int) -> StreamResult:
        request = self.provider.build(
            self.session.view.messages, self.system, self.tools, max_tokens=max_tokens
        )
        try:
            try:
                result = await self.sender.send(request)
            except OverCap as over:  # never sent: compact until it fits (or the turn says why it cannot)
                request = await fit_under_cap(self, over, max_tokens)
                result = await self.sender.send(request)
            except RequestFailed as failed:  # a gateway that refuses or strips a beta: once more without it
                retried = await retry_without_betas(self, failed, request, max_tokens)
                if retried is None:
                    raise
                request, result = retried
        except OverCap as over:
            raise TurnFailed(f"Not sent: {over.message}.") from over
        except RequestFailed as failed:
            if failed.partial_text:
                self.keep_partial(failed.partial_text, turn, failed.failure)
                raise TurnFailed(
                    f"{failed.failure.reason} — the answer so far is kept, marked partial; "
                    f"/retry to ask again",
                    failed.failure,
                    visible=True,
                ) from failed
            if failed.failure.cause == "content":  # recorded in the endpoint's profile at the rejection
                from app.engine.content_words import content_block_message

                raise TurnFailed(
                    content_block_message(failed.failure, session_id=self.session.id), failed.failure
                ) from failed
            if failed.failure.recoverable:
                result = await self.recovery.recover(failed, max_tokens=max_tokens, turn=turn)
            elif (repaired := await self._without_images(failed, max_tokens)) is not None:
                result = repaired
            elif failed.failure.transient:  # the sender's retries ran out
                from app.engine.failures import give_up_advice

                retries = self.sender.retry_policy.max_attempts
                tried = (
                    f"still failing after {retries} {'retry' if retries == 1 else 'retries'}"
                    if retries
                    else "not retried (retry_max_attempts = 0)"
                )
                raise TurnFailed(
                    f"{failed.failure.reason} — {tried}: {give_up_advice(failed.failure, request.url)}",
                    failed.failure,
                ) from failed
            else:
                from app.engine.failures import describe_action

                action = describe_action(failed.failure).removeprefix("fail: ")
                raise TurnFailed(f"{failed.failure.reason} — {action}", failed.failure) from failed
        self._calibrate(result)
        return result

    async def _without_images(self, failed: RequestFailed, max_tokens: int) -> StreamResult | None:
        """A 400 about an image with images in the view: stub them (`app.engine.image_repair`), say so, and
        send once more. None when it does not apply; raises the new failure if the retry fails too."""
        from app.engine.image_repair import names_an_image, stub_images

        said = " ".join([str(failed.error), failed.failure.reason, *failed.failure.evidence])
        if not names_an_image(failed.error.status, said):
            return None
        messages, count = stub_images(self.session.view.messages)
        if not count:
            return None
        await self.session.drain()
        self.session.commit_view(messages, [], reason="image_repair")
        self.emit(
            Notice(
                f"the provider could not read {'an image' if count == 1 else f'{count} images'} in the "
                f"conversation ({display_line(failed.failure.reason)}); replaced by a stub in the view (the log "
                f"keeps the original) and sent again",
                level="warn",
                code="image",
            )
        )
        self.view_changed("image_repair")
        request = self.provider.build(
            self.session.view.messages, self.system, self.tools, max_tokens=max_tokens
        )
        try:
            return await self.sender.send(request)
        except RequestFailed as again:
            raise TurnFailed(
                f"{again.failure.reason} — even with the images removed", again.failure
            ) from again

    def _calibrate(self, result: StreamResult) -> None:
        if self.native.skip_calibration(result):
            return  # the provider read less than was sent: usage says nothing about bytes per token
        if result.usage and result.request.purpose == "chat":
            updated = calibrate(
                self.bytes_per_token, result.request.predicted_bytes, result.usage.input_tokens
            )
            if abs(updated - self.bytes_per_token) > 0.01:
                self.session.set_flag("bytes_per_token", round(updated, 3))

    def _commit_answer(self, result: StreamResult, turn: int, *, partial: bool) -> Message:
        parts: list = [Native(n.api, n.item) for n in result.natives]
        parts += [Text(result.text)] if result.text else []
        parts += [ToolCall(c.id, c.name, c.args) for c in result.tool_calls]
        if not parts:
            parts = [Text("")]
        message = self.session.append(
            Message.create(
                "assistant", parts, message_id=self.sender.draft.message_id, turn=turn, partial=partial
            )
        )
        self.sender.draft.clear()
        return message

    def keep_partial(self, text: str, turn: int, failure: Failure | None) -> None:
        """Keep what became visible of a failed answer, marked partial (never retried)."""
        self.session.append(
            Message.create(
                "assistant", text, message_id=self.sender.draft.message_id, turn=turn, partial=True
            )
        )
        self.sender.draft.clear()
        self.sender.forget_streamed_text()

    # -- tools ------------------------------------------------------------------------------------
    async def _run_tools(self, calls, turn: int, budget, *, by_user: bool = False) -> None:
        """Run the model's tool calls in order: PreToolUse hook, approval, the tool, PostToolUse hook.

        `by_user`: the user's own `@mentions` — no hooks, and no approval prompt inside the workspace.
        """
        from app.engine.withhold import WITHHELD_REASON, WITHHELD_RECALL
        from app.tools.base import ToolContext
        from app.tools.budget import spill_folder

        store, session = self.session.store, self.session

        def recall(key: str) -> str | None:  # the model recalls this session's archive only
            entry = store.archive_get(key, session.id, strict=True)
            if (
                entry is not None and entry.reason == WITHHELD_REASON
            ):  # local-only: never re-sent by the model
                return WITHHELD_RECALL
            return entry.content if entry else None

        scale = float(session.flags.get("budget_scale", 1.0))
        result_max = max(1, int(self.settings.result_max_chars * scale))
        read_roots = [spill_folder(session.folder)]  # the payload notice sends the model back to spill files
        credential_names = tuple(r.api_key_env for r in self.settings.routes.values() if r.api_key_env)
        for call in calls:
            args = dict(call.args)
            ctx = ToolContext(
                workspace=self.workspace,
                session_folder=session.folder,
                result_max_chars=budget.limit(result_max),
                recall=recall,
                cancel=self.tool_cancel,
                shell_env_passthrough=self.settings.shell_env_passthrough,
                credential_env_names=credential_names,
                read_denied=self.permissions.denies_read,
            )
            self.emit(ToolCallStarted(call_id=call.id, name=call.name, args=args))
            if by_user:
                outcome = await self._attach_mention(call, args, ctx)
                after = HookResult()
            else:
                outcome, args = await self._run_guarded(call, args, ctx, read_roots)
                if outcome.is_error:
                    after = await self.hooks.post_tool_use_failure(
                        call.name, args, outcome.content[:2000], outcome.content[:500]
                    )
                else:
                    after = await self.hooks.post_tool_use(call.name, args, outcome.content[:2000])
            budget.charge(outcome)
            content = outcome.content
            if after.additional_context:  # Claude Code feeds a PostToolUse hook's reason back to the model
                content += f"\n\n[hook] {after.additional_context}"
            origin = "recall" if call.name == "recall" and not outcome.is_error else "tool"
            result = ToolResult(call.id, content, outcome.is_error, outcome.references)
            self.session.append(
                Message.create(
                    "tool",
                    [result, *outcome.images],
                    turn=turn,
                    origin=origin,
                    preserve_verbatim=outcome.preserve_verbatim and not outcome.is_error,
                )
            )
            self.emit(
                ToolCallFinished(
                    call_id=call.id,
                    name=call.name,
                    is_error=outcome.is_error,
                    preview=content[:500],
                    chars=outcome.chars_total,
                    spill_path=str(outcome.spill_path) if outcome.spill_path else None,
                )
            )

    async def _attach_mention(self, call, args: dict, ctx) -> ToolOutcome:
        """The user's `@path`: attached without asking inside the workspace; a path outside it asks,
        like any read there (refused, and said so, when there is nobody to ask)."""
        from app.tools.approval import denied_outcome, outside_workspace
        from app.tools.registry import run_tool

        ruling = self.permissions.check(call.name, args)
        if ruling.kind == "deny":  # your own Read deny rule holds for your own @mention too
            self.emit(ToolApproval(call_id=call.id, name=call.name, decision="denied", reason=ruling.reason))
            return denied_outcome(call.name, ruling.reason, by="rule")
        outside = outside_workspace(call.name, args, self.workspace)
        if not outside:
            self.emit(
                ToolApproval(
                    call_id=call.id, name=call.name, decision="auto", reason="attached by you with @"
                )
            )
            return await run_tool(call.name, args, ctx)
        why = f"@{args.get('path', '')} is outside the workspace ({outside[0]})"
        approved = (
            await self._ask(call.name, args, f"{why}: attach it?", self._offer(call.name, args, "mention"))
        )[0] != "deny"
        self.emit(
            ToolApproval(
                call_id=call.id, name=call.name, decision="approved" if approved else "denied", reason=why
            )
        )
        if approved:
            return await run_tool(call.name, args, ctx)
        if self.approver is None:
            self.emit(
                Notice(
                    f"{why}: not attached — there is no terminal to ask. Run bulkhead in a terminal to be "
                    f"asked, pass --yes, or copy the file into the workspace.",
                    level="warn",
                    code="mention",
                )
            )
            return denied_outcome(call.name, why, by="no_terminal")
        return denied_outcome(call.name, why)

    async def _run_guarded(self, call, args: dict, ctx, read_roots) -> tuple[ToolOutcome, dict]:
        """One model tool call through the PreToolUse hook, the permission rules and the approval mode:
        (outcome, the input it ran with — a hook's `updatedInput` may have replaced it).

        Order: a deny rule wins; then a hook's or a rule's "ask"; then a hook's or a rule's "allow"
        (for a path outside the workspace only a rule that names it); then the approval mode."""
        from app.tools.approval import (
            always_asks,
            denied_outcome,
            describe_call,
            landing_places,
            needs_approval,
            outside_workspace,
        )

        verdict = await self.hooks.pre_tool_use(call.name, args)
        if verdict.blocked:
            self.emit(
                ToolApproval(
                    call_id=call.id,
                    name=call.name,
                    decision="denied",
                    reason=f"blocked by hook: {verdict.reason}",
                )
            )
            return denied_outcome(call.name, verdict.reason, by="hook"), args
        if verdict.updated_input is not None and verdict.updated_input != args:
            args = dict(verdict.updated_input)
            self.emit(
                Notice(
                    text=f"A PreToolUse hook changed the input of {call.name}: now "
                    f"{describe_call(call.name, args, self.workspace)}",
                    code="hook_input",
                )
            )
        ruling = self.permissions.check(call.name, args)
        if ruling.kind == "deny":
            self.emit(ToolApproval(call_id=call.id, name=call.name, decision="denied", reason=ruling.reason))
            return denied_outcome(call.name, ruling.reason, by="rule"), args
        if self.mcp_tools is not None and self.mcp_tools.handles(call.name):
            ask, why = self.mcp_tools.needs_approval(call.name, self.settings.approval)
        else:
            ask, why = needs_approval(
                call.name, args, self.settings.approval, self.workspace, extra_read_roots=read_roots
            )
        outside = bool(outside_workspace(call.name, args, self.workspace, read_roots))
        asked_by: AskedBy = "mode"
        forced = always_asks(call.name, args, self.workspace)  # protected files, redirections it cannot name
        if verdict.permission == "ask":
            asked_by = "hook"
            ask, why = True, why or "a PreToolUse hook asked for confirmation"
        elif ruling.kind == "ask":
            ask, why, asked_by = True, ruling.reason, "rule"
        elif verdict.permission == "allow" and not outside and not forced:
            ask, why = False, "allowed by a PreToolUse hook"
        elif (
            ruling.kind == "allow"
            and not forced
            and (not outside or (ruling.rule is not None and ruling.rule.names_paths))
        ):
            ask, why = False, ruling.reason
        if ask and ruling.held is not None:  # say what would have allowed it, and how to make it so
            why += (
                f" — {ruling.held.source} allows it ({ruling.held.text}), but its allow rules are not "
                f"approved: `bulkhead permissions approve` puts them in force"
            )
        if not ask:
            self.emit(ToolApproval(call_id=call.id, name=call.name, decision="auto", reason=why))
            return await self._run_tool(call.id, call.name, args, ctx), args
        offer = self._offer(call.name, args, asked_by, outside=outside, ask_rule=ruling.rule, forced=forced)
        where_before = landing_places(call.name, args, self.workspace)
        answer, said = await self._ask(
            call.name, args, f"{why}: {describe_call(call.name, args, self.workspace)}", offer
        )
        moved = where_before != landing_places(call.name, args, self.workspace) and answer != "deny"
        # a link was swapped in while the user was deciding: what was approved is not what would run
        if moved:
            answer = "deny"
            why = (
                f"{why} — the path now resolves somewhere else than when it was approved (a link changed); "
                f"not run"
            )
        if answer in ("session", "project") and offer.rule:
            self._remember(offer.rule, answer)
        approved = answer != "deny"
        self.emit(
            ToolApproval(
                call_id=call.id,
                name=call.name,
                decision="approved" if approved else "denied",
                reason=f"{why} — you told the model: {said}" if said else why,
            )
        )
        if approved:
            return await self._run_tool(call.id, call.name, args, ctx), args
        return denied_outcome(call.name, why, by="user" if self.approver else "no_terminal", said=said), args

    async def _run_tool(self, call_id: str, name: str, args: dict, ctx) -> ToolOutcome:
        """Run a tool the user (or a rule) let through. Before a file tool changes a file, its bytes
        and mode are checkpointed (a separate step before the write: `/undo`, `/rewind`)."""
        from app.engine.checkpoints import CheckpointError
        from app.engine.tool_choice import not_offered
        from app.tools.approval import target_paths
        from app.tools.base import ToolOutcome
        from app.tools.registry import EDIT_TOOLS, run_tool

        snapshot = None
        paths = target_paths(name, args, self.workspace) if name in EDIT_TOOLS else []
        if paths:
            try:
                snapshot = await asyncio.to_thread(
                    self.checkpoints.snapshot, paths[0], turn=self._turn_running, call_id=call_id
                )
            except CheckpointError as exc:
                self.emit(
                    Notice(
                        f"{display_line(str(exc))}; /undo will not restore it",
                        level="warn",
                        code="checkpoint",
                    )
                )
        if self.mcp_tools is not None and self.mcp_tools.handles(name):
            outcome = await self.mcp_tools.run(
                name, args, ctx
            )  # an MCP tool (or tool_search), through its server
        elif (refusal := not_offered(name, self.settings, self.route)) is not None:
            outcome = ToolOutcome(content=refusal, is_error=True)
        else:
            outcome = await run_tool(name, args, ctx)
        if snapshot is not None:
            with contextlib.suppress(OSError):
                await asyncio.to_thread(self.checkpoints.forget_if_unchanged, snapshot)
        if paths and paths[0].name in INSTRUCTION_NAMES and not outcome.is_error:
            self._instructions_changed = True  # reloaded when the turn ends (/init writes AGENTS.md)
        return outcome

    def set_approval(self, mode: str) -> None:
        """The approval mode from the next tool call on (`/approval`, Shift+Tab), for this run of the session."""
        from app.config import APPROVAL_MODES

        if mode not in APPROVAL_MODES:
            raise ValueError(f"{mode!r} is not an approval mode: {', '.join(APPROVAL_MODES)}")
        self.settings = self.settings.with_overrides(approval=mode)

    def _offer(
        self,
        name: str,
        args: dict,
        asked_by: AskedBy,
        *,
        outside: bool = False,
        ask_rule=None,
        forced: str = "",
    ):
        """What this approval may offer as "always" (`app.engine.always_allow`): the rule, or why not."""
        from app.engine.always_allow import always_offer

        return always_offer(
            self.permissions,
            name,
            args,
            self.workspace,
            asked_by=asked_by,
            outside=outside,
            ask_rule=ask_rule,
            forced=forced,
        )

    def _remember(self, rule: str, scope: str) -> None:
        """ "Always" in an approval: the allow rule it offered, for the session or the project."""
        if scope == "session":
            self.permissions.add_session_rule(rule)
            self.emit(
                Notice(f"allowed for the rest of this session: {display_line(rule)}", code="permissions")
            )
            return
        try:
            path = self.permissions.save_project_rule(rule)
        except OSError as exc:
            self.permissions.add_session_rule(rule)
            self.emit(
                Notice(
                    f"{display_line(str(exc))} — allowed for this session only",
                    level="warn",
                    code="permissions",
                )
            )
            return
        self.emit(
            Notice(
                f"allowed in this project from now on: {display_line(rule)} (saved in {path})",
                code="permissions",
            )
        )

    async def _ask(self, name: str, args: dict, why: str, offer=None) -> tuple[str, str]:
        """(the user's answer, what they told the model): "once", "session", "project" (allow) or "deny", and
        the reason of a denial given one (`app.tools.approval.Denial`, else ""). An approver may answer
        True / False (yes / no), one of those words, or a Denial. `offer` (`always_allow.AlwaysOffer`) is
        what "always" may keep — the approver reads it as `engine.always` while it asks; "session" or
        "project" without one is a plain yes."""
        from app.tools.approval import Denial

        if self.approver is None:
            return "deny", ""
        self.always = offer
        try:
            answer = await self.approver(name, args, why)
        except asyncio.CancelledError:
            raise
        except Exception:  # noqa: BLE001 - a broken prompt means "no"
            return "deny", ""
        finally:
            self.always = None
        if isinstance(answer, Denial):
            return "deny", answer.said
        if answer in ("session", "project") and (offer is None or not offer.rule):
            return "once", ""
        if answer in ("once", "session", "project", "deny"):
            return str(answer), ""
        return ("once" if answer is True else "deny"), ""

    # -- user commands ----------------------------------------------------------------------------
    async def compact(self, instructions: str | None = None, cancel: asyncio.Event | None = None):
        """`/compact [instructions]`: a guided summary of the older history."""
        async with self._lock:
            target = int(
                min(
                    self.measure(self.session.view.messages) * 0.5,
                    self.settings.compact_target * self.usable_window_tokens() * self.bytes_per_token,
                )
            )
            result = await self.compactor.run(
                trigger="manual", target_bytes=target, instructions=instructions, cancel=cancel
            )
            await self.session.drain()  # its receipt, counters and events are on disk when it is over
            self.memory.after_turn()  # what the compaction queued is read now, in the background
            return result

    def rewind(self) -> bool:
        """`/rewind compact`: back to the view before the last compaction (messages since are kept)."""
        restored = self.session.rewind()
        if restored is None:
            self.emit(Notice("nothing to rewind: no compaction in this session", code="rewind"))
            return False
        self.emit(
            Notice(f"restored the view before the last compaction ({len(restored)} messages)", code="rewind")
        )
        self.view_changed("rewind")
        return True

    async def undo(self) -> list[Restored]:
        """`/undo`: the files changed by the last turn that changed any go back to how they were before
        it (exact bytes and mode; a file it created is removed). The model is told, in the conversation."""
        from app.engine.checkpoints import describe

        async with self._lock:
            turn, snapshots = await asyncio.to_thread(self.checkpoints.last_turn_snapshots)
            approved = await self._approve_restores(snapshots, "/undo")
            results = await asyncio.to_thread(
                self.checkpoints.restore, snapshots, self.workspace, approved=approved
            )
            if turn is None:
                self.emit(
                    Notice(
                        "nothing to undo: no file was changed by write_file or edit_file in this session "
                        "(shell commands are not checkpointed)",
                        code="undo",
                    )
                )
                return []
            said = describe(results, self.workspace)
            self.emit(Notice(f"undid the file changes of turn {turn}: {display_line(said)}", code="undo"))
            self.session.append(
                Message.create(
                    "user",
                    f"[bulkhead] The user undid the file changes of turn {turn} ({said}). Those files are "
                    f"now as they were before that turn.",
                    turn=self.session.turn,
                    origin="notice",
                )
            )
            self.view_changed("undo")
            await self.session.drain()
            return results

    async def _approve_restores(self, snapshots, command: str) -> set[str]:
        """The files a restore would now write (or remove) outside the workspace — a link put in their place
        since — each asked about like a write there; the paths the user allowed."""
        escaping = await asyncio.to_thread(self.checkpoints.escaping, snapshots, self.workspace)
        approved: set[str] = set()
        for path, real in escaping.items():
            why = f"{command} would restore {path}, which now leads outside the workspace ({real})"
            if (await self._ask("write_file", {"path": str(real), "content": ""}, why))[0] != "deny":
                approved.add(path)
        return approved

    def rewind_points(self) -> list[tuple[Message, int]]:
        """The session's prompts, oldest first, each with how many files changed since (for `/rewind`)."""
        changed = self.checkpoints.active()
        return [
            (message, len({c.path for c in changed if c.turn >= message.meta.turn}))
            for message in self.session.master
            if message.role == "user" and message.meta.origin == "user"
        ]

    def view_before(self, message_id: str) -> list[Message]:
        """The conversation just before prompt `message_id`: the newest view holding it, cut there."""
        for view in reversed(self.session.views):
            ids = [m.id for m in view.messages]
            if message_id in ids:
                return list(view.messages[: ids.index(message_id)])
        return []

    async def rewind_to(self, message_id: str, *, files: bool) -> tuple[Message, list[Restored]]:
        """`/rewind`: the conversation as it was just before prompt `message_id` — a new view (the master
        log keeps everything; `/rewind compact` pops it again) — and, with `files`, every file changed
        since back as it was. Returns the prompt (to edit and send again) and what was restored."""
        from app.engine.checkpoints import describe

        async with self._lock:
            prompt = next((m for m in self.session.master if m.id == message_id), None)
            if prompt is None or prompt.role != "user":
                raise ValueError(f"no prompt {message_id!r} in this session")
            kept = self.view_before(message_id)
            await self.session.drain()  # commit_view reads the database: our appends first, off the loop
            self.session.commit_view(kept, [], reason="rewind")
            restored = []
            if files:
                snapshots = await asyncio.to_thread(self.checkpoints.snapshots_since, prompt.meta.turn)
                approved = await self._approve_restores(snapshots, "/rewind")
                restored = await asyncio.to_thread(
                    self.checkpoints.restore, snapshots, self.workspace, approved=approved
                )
            where = f"turn {prompt.meta.turn}"
            self.emit(
                Notice(
                    f"rewound the conversation to just before your prompt of {where} ({len(kept)} messages "
                    f"in view; the full log is kept — /rewind compact goes back)"
                    + (
                        f"; files: {display_line(describe(restored, self.workspace))}"
                        if restored
                        else "; files left as they are"
                        if not files
                        else "; no file had changed since"
                    ),
                    code="rewind",
                )
            )
            self.view_changed("rewind")
            await self.session.drain()
            return prompt, restored

    def remember(self, text: str) -> Path:
        """`/memory TEXT` and a `#` line: append to the project's instructions file, then reload it."""
        from app.engine.instructions import append_memory, memory_file

        path = memory_file(self.workspace)
        append_memory(path, text)
        self.load_instructions()
        self.emit(
            Notice(
                f"remembered in {display_line(str(path))}: {display_line(' '.join(text.split()))}",
                code="memory",
            )
        )
        self.view_changed("instructions")
        return path

    def recall_into_view(self, key_text: str) -> Message | None:
        """`/recall KEY` (and Enter in the archive browser): put archived content back, as the recall tool would."""
        from app.model.archive import format_recall, parse_recall_keys

        keys = parse_recall_keys(key_text)
        if not keys:
            self.emit(
                Notice(
                    f"{key_text!r} names no archive key (16 hex digits, e.g. <<ccr:3f2a9c0d1e4b5a67>>)",
                    level="warn",
                    code="recall",
                )
            )
            return None
        found = {}
        for key in keys:
            entry = self.session.store.archive_get(key, self.session.id)
            found[key] = entry.content if entry else None
        if not any(v is not None for v in found.values()):
            self.emit(Notice(f"no archived segment {', '.join(keys)}", level="warn", code="recall"))
            return None
        text = format_recall(found)
        message = self.session.append(
            Message.create(
                "user",
                f"[recalled by the user]\n{text}",
                turn=self.session.turn,
                origin="recall",
                preserve_verbatim=True,
            )
        )
        self.view_changed("recall")
        return message

    def reset_cap(self) -> bool:
        forgotten = self.state.forget_cap(self.route.endpoint_id)
        if self.session.flags.get("assumed_cap"):
            self.session.set_flag("assumed_cap", None)
            forgotten = True
        self.emit(Notice("learned cap forgotten" if forgotten else "no learned cap to forget", code="cap"))
        self.view_changed("cap")
        return forgotten

    def _measured(self) -> tuple:
        """What a measure of the view depends on, as objects (compared by identity)."""
        return (self.session.view_ref(), self.system, self.tools, self.provider, self.max_tokens)

    def _start_bytes(self) -> int | None:
        """The report's figure when the session opened, if nothing it was measured from has changed since:
        opening a session reports (off the event loop), then starts — a long view is measured once."""
        self._started = True
        return self._known_view_bytes()

    def context_report(self) -> ContextReport:
        """What `/context` and the Payload panel show about the next request."""
        cap = self.cap_info()
        session = self.session
        predicted = None
        if not self._started:  # opening: the size kept with the session, if it is this view's
            predicted = stored_size(session.flags, self._size_key())
            self._size_was_kept = predicted is not None
        if predicted is None:
            predicted = self.measure(session.view.messages)
        else:
            self._view_bytes = (self._measured(), predicted)
        floor = self.floor_sizes()
        return ContextReport(
            messages_in_view=session.view_len(),
            messages_in_master=session.master_len(),
            predicted_bytes=predicted,
            effective_cap=cap.bytes,
            cap_source=cap.source,
            cap_detail=self.cap_detail(cap),
            context_window=self.context_window,
            estimated_tokens=int(predicted / self.bytes_per_token),
            bytes_per_token=self.bytes_per_token,
            views_stacked=session.views_len(),
            floor_bytes=floor.total_bytes,
            floor_parts=tuple(floor.parts),
            context_engine=self.settings.context_engine,
            native_compaction=getattr(self.provider, "native_compaction", "") if self.native.enabled else "",
            compact_threshold=self.native.threshold() or 0,
            provider_edits=edit_totals(self.session.flags),
            gateway_profile=endpoint_lines(self.state, self.route.endpoint_id),
        )


def _unlink_quietly(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()


def retry_point(view: Sequence[Message]) -> int | None:
    """Where the view is cut to regenerate its last answer: just after the user's last prompt and the
    @attachments that came with it (None when the view holds no prompt of the user's)."""
    prompt = next(
        (i for i in range(len(view) - 1, -1, -1) if view[i].role == "user" and view[i].meta.origin == "user"),
        None,
    )
    if prompt is None:
        return None
    cut = prompt + 1
    if cut < len(view) and view[cut].role == "assistant" and view[cut].meta.origin == "mention":
        cut += 1
        while cut < len(view) and view[cut].role == "tool":
            cut += 1
    return cut


def describe_event(event: Event) -> str:
    """One line for stderr / logs: the presenter's words (`app.engine.describe`), else the event's fields."""
    description = describe(event)
    if description is not None:
        return f"{event.type}: {description.text}"
    data = event.to_json()
    data.pop("type", None)
    return f"{event.type}: " + json.dumps(data, ensure_ascii=False, default=str)[:300]
